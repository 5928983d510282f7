"""One error hierarchy; the CLI maps each class to an exit code (SPEC.md section 4)."""

from __future__ import annotations

# a defect of ascendtune itself (SPEC.md section 4: sysexits EX_SOFTWARE)
INTERNAL_ERROR_EXIT = 70
# standard output cannot be written (a full disk, /dev/full, an I/O error): sysexits EX_IOERR,
# neither "problems found" nor a defect of ours
OUTPUT_ERROR_EXIT = 74


class AscendtuneError(Exception):
    """Base of every error the tool reports as one line on stderr."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"

    def reworded(self, prefix: str) -> AscendtuneError:
        """The same error (class, exit code, hint) with prefix before its message: what a
        caller adds to say where it happened. No subclass constructor is called, so a class
        with its own arguments (ParseError's source and line) rewords like any other."""
        import copy

        new = copy.copy(self)
        new.message = prefix + self.message
        new.args = (new.message,)
        return new


class ProblemsFound(AscendtuneError):
    """The command ran, and found problems (exit 1)."""

    exit_code = 1


class UsageError(AscendtuneError):
    """Bad options or arguments (exit 2)."""

    exit_code = 2


class MissingError(AscendtuneError):
    """What the command needs is absent on this host: a tool, a file, a PID (exit 3)."""

    exit_code = 3


class PermissionDenied(AscendtuneError):
    """The kernel refused (exit 4)."""

    exit_code = 4


class InvalidInput(AscendtuneError):
    """Input that cannot be used: malformed text, impossible CPU sets (exit 5)."""

    exit_code = 5


class ParseError(InvalidInput):
    """A tool's output, or a file, did not have the expected shape."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = ""
        if source:
            where = source + (f" line {line}" if line is not None else "") + ": "
        super().__init__(where + message, hint)
        self.source = source
        self.line = line


class OutputLost(AscendtuneError):
    """Standard output refused a write (not a closed pipe, which ends quietly): what the command
    printed is incomplete, and nothing it did is undone by that (exit 74)."""

    exit_code = OUTPUT_ERROR_EXIT

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"cannot write to standard output: {reason}",
            "the output is incomplete; a change the command made stays made",
        )


class PlanError(InvalidInput):
    """A plan cannot be made on this host (too few CPUs, cpuset disjoint from affinity)."""
