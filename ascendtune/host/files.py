"""Files a user names on the command line (--file, --env-file, --plan): read safely, bounded.

Regular files only (a FIFO would hang us, a device would never end), at most a few MiB, text
that is UTF-8; every failure is one error of the project's hierarchy with the SPEC exit code:
absent 3, permission denied 4, not a regular file / too large / not text 5.
"""

from __future__ import annotations

import os
import stat
from typing import Literal, overload

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied

MAX_USER_FILE_BYTES = 4 << 20


@overload
def read_user_file(path: str, *, what: str, cap: int = ..., binary: Literal[True]) -> bytes: ...
@overload
def read_user_file(
    path: str, *, what: str, cap: int = ..., binary: Literal[False] = ...
) -> str: ...
def read_user_file(
    path: str, *, what: str, cap: int = MAX_USER_FILE_BYTES, binary: bool = False
) -> str | bytes:
    """The content of the regular file at path (text unless binary), at most cap bytes.

    `what` names the file in errors ("--file", "--plan", "--env-file").
    """
    from ascendtune.host.roots.base import mib, read_capped

    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat below refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise MissingError(f"{what} {path} does not exist", "check the path") from None
    except PermissionError:
        raise PermissionDenied(
            f"{what} {path}: permission denied", "read it as its owner, or fix its permissions"
        ) from None
    except IsADirectoryError:
        raise InvalidInput(f"{what} {path} is a folder, not a file") from None
    except OSError as e:
        raise InvalidInput(f"{what} {path} cannot be opened: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = (
                "a folder"
                if stat.S_ISDIR(mode)
                else "a FIFO"
                if stat.S_ISFIFO(mode)
                else "a device"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket"
                if stat.S_ISSOCK(mode)
                else "not a regular file"
            )
            raise InvalidInput(f"{what} {path} is {kind}, not a regular file")
        os.set_blocking(fd, True)
        try:
            data = read_capped(fd, cap, f"{what} {path}")
        except PermissionError:
            raise PermissionDenied(f"{what} {path}: permission denied") from None
        except OSError as e:
            raise InvalidInput(f"{what} {path} cannot be read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if binary:
        return data
    return decode_text(data, f"{what} {path}", cap_text=mib(cap))


def decode_text(data: bytes, label: str, *, cap_text: str = "") -> str:
    """UTF-8 text from data; a binary file (NUL bytes, bad UTF-8) is InvalidInput."""
    if b"\0" in data:
        raise InvalidInput(f"{label} is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(
            f"{label} is not UTF-8 text (byte {e.start}: {data[e.start : e.start + 1]!r})"
        ) from None


def read_plan_json(path: str) -> object:
    """The JSON document of a plan file (`ascendtune plan --json > FILE`), read and parsed safely."""
    from ascendtune.core.text import loads_bounded

    text = read_user_file(path, what="plan", binary=False)
    return loads_bounded(
        text,
        source=path,
        hint="a plan file is not JSON like this: write it with `ascendtune plan --json > FILE`",
    )


def read_stdin_text(what: str, cap: int = MAX_USER_FILE_BYTES) -> str:
    """Standard input (`--file -`, a config piped in) as text, at most cap bytes."""
    import sys

    from ascendtune.host.roots import read_capped

    try:
        data = read_capped(sys.stdin.buffer.fileno(), cap, f"{what} (standard input)")
    except (AttributeError, OSError, ValueError):
        # no real descriptor (an embedding, a test runner): read the text stream, bounded
        text = sys.stdin.read(cap + 1)
        if len(text) > cap:
            raise InvalidInput(f"{what} (standard input) is larger than the limit") from None
        return text
    return decode_text(data, f"{what} (standard input)")
