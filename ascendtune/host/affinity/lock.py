"""One binder at a time: an advisory lock per target process (keyed by PID and start time, so a
reused PID is another key) and one per host for `bind --workers`, so two ascendtune binders never
fight over the same masks. The lock file holds its owner's PID and command line, which the one
refused names.

Locks live in /run/ascendtune when writable, else $XDG_RUNTIME_DIR/ascendtune, else a folder of
this user's in the temporary directory; ASCENDTUNE_LOCK_DIR overrides all three (tests keep
their locks apart from another suite's this way). flock is released by the kernel when its
holder exits, however it exits: no stale lock survives a killed binder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import NamedTuple

from ascendtune.core.bindplan import BindTarget
from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.errors import ParseError, ProblemsFound
from ascendtune.host.affinity.masks import PROC, stat_fields

LOCK_DIR_ENV = "ASCENDTUNE_LOCK_DIR"
HOLDER_MAX = 300  # characters of the holder's command line kept in the lock file


class LockHeld(ProblemsFound):
    """Another binder holds the lock (exit 1: nothing was changed, the other binder acts)."""


def _candidates() -> tuple[list[str], str | None]:
    given = os.environ.get(LOCK_DIR_ENV)
    candidates = [given] if given else []
    if not given:
        candidates.append("/run/ascendtune")
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg:
            candidates.append(os.path.join(xdg, "ascendtune"))
        import tempfile  # only here: bind's start-up does without it

        candidates.append(os.path.join(tempfile.gettempdir(), f"ascendtune-{os.getuid()}"))
    return candidates, given


def _ours(path: str, given: str | None) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    # a folder of this user's (or root's) only: another user's could hand us its files
    mine = st.st_uid in (os.getuid(), 0) or path == given
    return mine and os.path.isdir(path)


def lock_dir() -> str:
    """Where lock files go (created 0700 when missing)."""
    candidates, given = _candidates()
    for path in candidates:
        with contextlib.suppress(OSError):
            os.makedirs(path, mode=0o700, exist_ok=True)
        if _ours(path, given) and os.access(path, os.W_OK | os.X_OK):
            return path
    raise ProblemsFound(
        f"no writable folder for the binder's lock (tried {', '.join(candidates)})",
        f"set {LOCK_DIR_ENV} to a folder this user may write",
    )


def start_time(pid: int, proc: str = PROC) -> str:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the
    PID, what tells this process from a later one that reuses its PID; "" when unreadable."""
    fields = stat_fields(pid, proc)
    return fields[19] if fields is not None and len(fields) > 19 else ""


def _own_command() -> str:
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return "?"
    text = " ".join(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)
    return text[:HOLDER_MAX] or "?"


def holder_of(path: str) -> str:
    """Who holds the lock at path, in words: "PID 123 (ascendtune bind ...)"."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            # the first line: what follows it is a longer holder's left over (held)
            line = f.read(HOLDER_MAX + 32).partition("\n")[0]
            pid, _, command = line.strip().partition(" ")
    except OSError:
        return "another process"
    if not pid.isdigit():
        return "another process"
    return f"PID {pid} ({command or '?'})"


@contextlib.contextmanager
def held(name: str, what: str) -> Iterator[str]:
    """Hold the lock `name` (a file name in lock_dir()) for the block, or raise LockHeld naming
    its holder. `what`: what the lock guards, for the message. Yields the lock file's path."""
    path = os.path.join(lock_dir(), name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from ascendtune.core.redact import redact_text

            who = redact_text(holder_of(path))
            raise LockHeld(
                f"{what} is being bound by another ascendtune: {who} holds {path}; "
                "nothing was changed",
                "wait for it to finish, or stop it (two binders on one process undo each "
                "other's masks)",
            ) from None
        # written over the last holder's line, then cut to its length: a truncation to
        # the length the file already has is no journal write (ftruncate to 0 first: 130 us
        # more per lock on ext4, 2 ms for 16 workers); holder_of reads up to the newline
        line = f"{os.getpid()} {_own_command()}\n".encode()
        os.pwrite(fd, line, 0)
        os.ftruncate(fd, len(line))
        yield path
    finally:
        os.close(fd)  # releases the lock; the file stays for the next binder


def process_lock(pid: int, proc: str = PROC) -> contextlib.AbstractContextManager[str]:
    """The lock of one target process (PID and start time)."""
    return held(f"pid-{pid}-{start_time(pid, proc) or 'x'}.lock", f"process {pid}")


def workers_lock() -> contextlib.AbstractContextManager[str]:
    """The lock of this host's workers: one `bind --workers` (or `--workers --watch`) at a time."""
    return held("workers.lock", "this host's workers")


# ---- what ascendtune wrote: a record beside the lock ---------------------------------------
#
# A bind that changed a process's masks leaves `pid-PID-START.bound` (JSON: its target, by
# roles or not, when): `watch` reads it to name ascendtune as the binder of a mask it wrote,
# which the kernel alone cannot tell. One per process bound, like the lock files.


def _record_name(pid: int, started: str) -> str:
    return f"pid-{pid}-{started or 'x'}.bound"


def write_record(
    pid: int, target: BindTarget, *, use_roles: bool, by: str, proc: str = PROC
) -> None:
    """Say that this ascendtune just wrote `target` to process pid's threads; never fails
    the bind it follows (a folder that cannot be written loses only the record)."""
    import json
    import time

    doc = {
        "pid": pid,
        "start_time": start_time(pid, proc),
        "monotonic": time.monotonic(),
        "time": time.time(),
        "by": by,
        "cpus": format_cpulist(target.cpus),
        "roles": {k: format_cpulist(v) for k, v in target.roles.items()},
        "use_roles": use_roles,
    }
    try:
        path = os.path.join(lock_dir(), _record_name(pid, str(doc["start_time"])))
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        try:
            os.write(fd, json.dumps(doc).encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except (OSError, ProblemsFound):
        return


class BindRecord(NamedTuple):
    target: BindTarget
    use_roles: bool
    monotonic: float
    by: str


def read_record(pid: int, started: str) -> BindRecord | None:
    """What ascendtune last wrote to process pid (started at `started`, stat field 22), from
    the record its bind left; None when none is found (no folder is created to look)."""
    import json

    candidates, given = _candidates()
    name = _record_name(pid, started)
    for folder in candidates:
        if not _ours(folder, given):
            continue
        try:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            raw = os.read(fd, 1 << 16)
        except OSError:
            continue
        finally:
            os.close(fd)
        try:
            doc = json.loads(raw)
            target = BindTarget(
                parse_cpulist(doc["cpus"]),
                {k: parse_cpulist(v) for k, v in doc["roles"].items()},
            )
            return BindRecord(
                target, bool(doc["use_roles"]), float(doc["monotonic"]), str(doc["by"])
            )
        except (ValueError, KeyError, TypeError, AttributeError, ParseError):
            return None
    return None
