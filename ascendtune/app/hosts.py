"""Open the host a command reads (demo, sysroot or live) and read its model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.source import HostSource
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.model import Host
    from ascendtune.host.roots import Root


def open_root(source: HostSource) -> Root:
    """The root a read command looks through: a demo, a sysroot, or the live host."""
    from ascendtune.host import roots as sr

    if source.demo is not None and source.sysroot is not None:
        raise UsageError("give --demo or --sysroot, not both")
    if source.demo is None:
        return sr.open_root(source.sysroot)
    from ascendtune.host import demos

    return demos.open_demo(source.demo)


def read_host(root: Root) -> Host:
    from ascendtune.host.reader import read_host as _read

    return _read(root)


class Loaded(NamedTuple):
    """A host as a command reads it: the root, the model, and which host it is."""

    root: Root
    host: Host
    identity: dict[str, Any]


def identity(root: Root) -> dict[str, Any]:
    from ascendtune.host.identity import host_identity

    return host_identity(root)


def load(source: HostSource) -> Loaded:
    root = open_root(source)
    return Loaded(root, read_host(root), identity(root))


def demo_names() -> list[tuple[str, str]]:
    """(name, description) of every embedded demo host."""
    from ascendtune.host import demos

    return demos.list_demos()


def worker_pids() -> list[tuple[int, str]]:
    """(pid, name) of the accelerator workers on this host, for shell completion of --pid.

    Cheap and quiet: the live root only, found through their device files (no npu-smi run), and
    any error gives an empty list (a completion must never fail or print).
    """
    try:
        from ascendtune.host.roots import open_root as _open
        from ascendtune.host.workers import find_workers

        return [(w.pid, w.comm or "") for w in find_workers(_open(None), None) if w.present]
    except Exception:  # completion: whatever went wrong, offer nothing
        return []
