"""The doctor report: a row per check, its status, the summary and the exit status."""

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skip")
SECTIONS = ("host", "workers", "binders")


class Check(NamedTuple):
    """One row of the doctor report."""

    id: str
    status: Status
    value: str | None
    expected: str | None
    fix: str | None
    section: str
    detail: str | None = None
    data: Mapping[str, Any] = MappingProxyType({})
    # the form of `fix` that survives a reboot (sysctl.d, kernel command line, tuned, config)
    fix_persistent: str | None = None
    # the fixes change the kernel or the host's services while this is a container: they run on
    # the host, not here
    fix_on_host: bool = False

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "value": self.value,
            "expected": self.expected,
            "fix": self.fix,
            "fix_persistent": self.fix_persistent,
            "fix_on_host": self.fix_on_host,
            "section": self.section,
            "detail": self.detail,
        }
        if self.data:
            doc["data"] = dict(self.data)
        return doc


def summary(checks: Sequence[Check]) -> dict[str, int]:
    return {s: sum(1 for c in checks if c.status == s) for s in STATUSES}


def exit_code(checks: Sequence[Check]) -> int:
    """SPEC.md section 4: 1 when any check failed, else 0."""
    return 1 if any(c.status == "fail" for c in checks) else 0


def join_ids(xs: Iterable[int]) -> str:
    """PIDs, TIDs or node ids as one comma-separated word."""
    return ",".join(map(str, xs))
