"""What every command's report tells a front end when the command ends (the CLI's exit status,
`ascendtune.api`'s raise-or-return): one shape, so "problems found" reaches the exit status one
way for every command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ascendtune.core.errors import AscendtuneError


class Outcome(Protocol):
    @property
    def exit_code(self) -> int:
        """SPEC section 4: 0 nothing wrong found, 1 problems found, else `error`'s code."""
        ...

    @property
    def error(self) -> AscendtuneError | None:
        """The error the command ends with after its output (one stderr line); None when it ends
        quietly (exit 0, or 1 with the problems in the output itself)."""
        ...
