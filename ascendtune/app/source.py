"""Where a command reads its host from (its own module: every read command needs it, and
nothing else of the options, at start-up)."""

from __future__ import annotations

from typing import NamedTuple


class HostSource(NamedTuple):
    """Where a host is read from: an embedded demo, a captured sysroot, or (neither) this host."""

    sysroot: str | None = None
    demo: str | None = None

    def describe(self) -> str:
        if self.demo is not None:
            return f"demo {self.demo}"
        if self.sysroot is not None:
            return f"sysroot {self.sysroot}"
        return "this host"


THIS_HOST = HostSource()  # neither a sysroot nor a demo: the live host
