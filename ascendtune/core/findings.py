"""A finding: one thing a command has to tell an operator, with structure front ends can use.

`code` is stable (scripts match on it); `ranks` or `keys` name what it is about; `message` says
what is wrong in words and `hint` what to do. Planner, doctor notes and `log` share this shape;
check-config's findings (vllm_config.model.Finding) carry the same keys plus its own.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

Severity = Literal["error", "warning", "info"]


class Finding(NamedTuple):
    code: str
    severity: Severity
    message: str
    hint: str = ""
    ranks: tuple[int, ...] = ()
    keys: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "ranks": list(self.ranks),
            "keys": list(self.keys),
            "message": self.message,
            "hint": self.hint,
        }
