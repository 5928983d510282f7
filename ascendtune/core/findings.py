"""A finding: one thing a command has to tell an operator, with structure front ends can use.

`code` is stable (scripts match on it); `ranks` or `keys` name what it is about; `message` says
what is wrong in words and `hint` what to do; `rewrite` is a value the runtime replaces without
refusing to start, `needs` the facts a rule needed and did not get. The planner, `log` and
check-config share this one type; each command's document shows the keys its schema names
(PLAN_SHAPE, LOG_SHAPE, CONFIG_SHAPE).
"""

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

Severity = Literal["error", "warning", "info"]

# the keys of a finding in each command's JSON document, in order
PLAN_SHAPE = ("code", "severity", "ranks", "keys", "message", "hint")
LOG_SHAPE = ("code", "severity", "ranks", "message", "hint")
CONFIG_SHAPE = ("code", "severity", "keys", "message", "hint", "rewrite", "needs")


def show(value: Any) -> str:
    """A config value the way the user wrote it: JSON (true, "str", 1, null)."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


class Rewrite(NamedTuple):
    """A value the runtime replaces without refusing to start."""

    key: str
    before: Any
    after: Any
    because: str

    def render(self) -> str:
        return f"{self.key}: {show(self.before)} → {show(self.after)} (because {self.because})"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "from": self.before, "to": self.after, "because": self.because}


class Finding(NamedTuple):
    code: str
    severity: Severity
    message: str
    hint: str = ""
    ranks: tuple[int, ...] = ()
    keys: tuple[str, ...] = ()
    rewrite: Rewrite | None = None
    needs: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message

    def to_json(self, shape: Sequence[str] = PLAN_SHAPE) -> dict[str, Any]:
        """The finding as a document shows it: the keys of `shape`, in its order."""
        return {key: self._json_value(key) for key in shape}

    def _json_value(self, key: str) -> Any:
        if key == "rewrite":
            return self.rewrite.to_json() if self.rewrite is not None else None
        value = getattr(self, key)
        return list(value) if isinstance(value, tuple) else value
