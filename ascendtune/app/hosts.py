"""Open the host a command reads (demo, sysroot or live) and read its model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.app.options import HostSource
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.model import Host
    from ascendtune.host.sysroot import Root


def open_root(source: HostSource) -> Root:
    """The root a read command looks through: a demo, a sysroot, or the live host."""
    from ascendtune.host import sysroot as sr

    if source.demo is not None and source.sysroot is not None:
        raise UsageError("give --demo or --sysroot, not both")
    if source.demo is None:
        return sr.open_root(source.sysroot)
    from ascendtune.host import demos

    return demos.open_demo(source.demo)


def read_host(root: Root) -> Host:
    from ascendtune.host.reader import read_host as _read

    return _read(root)


def load_host(source: HostSource) -> tuple[Root, Host]:
    root = open_root(source)
    return root, read_host(root)


def demo_names() -> list[tuple[str, str]]:
    """(name, description) of every embedded demo host."""
    from ascendtune.host import demos

    return demos.list_demos()
