"""Who a PID is and whether it can be bound: its identity (read as psutil reads it), a process
rather than a thread, not a zombie, not dying, not stopped."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ascendtune.core.errors import InvalidInput, MissingError
from ascendtune.host.affinity.masks import PROC, Tasks, read_proc, stat_fields


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a PID is, for the report and the error lines (read as psutil reads it)."""

    name: str
    user: str | None
    cmdline: tuple[str, ...]
    status: str

    def to_json(self) -> dict[str, object]:
        from ascendtune.core.redact import redact_args

        return {
            "name": self.name,
            "user": self.user,
            "cmdline": redact_args(self.cmdline),
            "status": self.status,
        }


# /proc/PID/stat's state letter as psutil names it (what the report has always said)
PROC_STATUSES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "x": "dead",
    "K": "wake-kill",
    "W": "waking",
    "I": "idle",
    "P": "parked",
}


def process_identity(pid: int, proc: str = PROC) -> ProcessIdentity | None:
    """Name, owner, command line and state of pid; None when it cannot be seen.

    Read from /proc/PID/{stat,status,cmdline} the way psutil reads them (its name, username,
    cmdline and status, with what each gives when a read fails), without importing psutil
    (about 11 ms of a bind's start-up): a name cut to 15 characters is completed from the
    command line's first word, a uid with no passwd entry is named by its number."""
    enc, errs = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    try:
        # the leader's name and state, which psutil reads from the process-wide stat: the same
        # in the leader's own (see stat_fields), which does not sum every thread's CPU times
        stat = read_proc(f"{proc}/{pid}/task/{pid}/stat", 4096)
    except OSError:
        return None
    rpar = stat.rfind(b")")
    name = stat[stat.find(b"(") + 1 : rpar].decode(enc, errs)
    rest = stat[rpar + 2 :].split()
    status = PROC_STATUSES.get(rest[0].decode("ascii", "replace"), "?") if rest else "?"
    cmd: tuple[str, ...] = ()
    try:
        data = read_proc(f"{proc}/{pid}/cmdline", 1 << 20).decode(enc, errs)
    except OSError:
        data = ""
    if data:
        # NUL-separated, NUL-terminated; a process that rewrote its title may use spaces
        sep = "\x00" if data.endswith("\x00") else " "
        if data.endswith(sep):
            data = data[:-1]
        parts = data.split(sep)
        if sep == "\x00" and len(parts) == 1 and " " in data:
            parts = data.split(" ")
        cmd = tuple(parts)
    if len(name) >= 15 and cmd:
        longer = os.path.basename(cmd[0])
        if longer.startswith(name):
            name = longer
    user: str | None = None
    try:
        raw = read_proc(f"{proc}/{pid}/status", 1 << 16)
        at = raw.index(b"\nUid:")
        uid = int(raw[at + 5 : raw.index(b"\n", at + 1)].split()[0])
    except (OSError, ValueError, IndexError):
        pass
    else:
        import pwd

        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:  # a uid with no passwd entry (containers)
            user = str(uid)
    return ProcessIdentity(name=name, user=user, cmdline=cmd, status=status)


def require_process(pid: int, tasks: Tasks | None = None) -> None:
    """Raise MissingError (no such process) or InvalidInput (a thread id, not a process id)."""
    tasks = tasks or Tasks()
    tgid = tasks.tgid(pid)
    if tgid is None:
        raise MissingError(f"no process {pid} on this host", "check the PID with `ps -ef`")
    if tgid != pid:
        raise InvalidInput(
            f"{pid} is a thread of process {tgid}, not a process",
            f"bind the whole process with --pid {tgid}",
        )
    refuse_zombie(pid, tasks.proc)


def refuse_zombie(pid: int, proc: str) -> None:
    # the state from /proc/PID/task/PID/stat; the identity only to name a zombie
    fields = stat_fields(pid, proc)
    if fields and fields[0] == "Z":
        ident = process_identity(pid, proc)
        name = ident.name if ident is not None else str(pid)
        raise MissingError(
            f"process {pid} ({name}) has exited and waits to be reaped (zombie): "
            "there is nothing left to bind"
        )


PF_EXITING = 0x4  # task->flags bit set once a thread has started to exit
PF_KTHREAD = 0x00200000  # task->flags bit of a kernel thread


def refuse_kernel_thread(pid: int, proc: str = PROC) -> None:
    """Raise InvalidInput when pid is a kernel thread (kworker, kthreadd...): its mask is the
    kernel's business, never a binder's."""
    fields = stat_fields(pid, proc)
    try:
        kthread = fields is not None and bool(int(fields[6]) & PF_KTHREAD)
    except (IndexError, ValueError):
        kthread = False
    if kthread:
        ident = process_identity(pid, proc)
        name = ident.name if ident is not None else "?"
        raise InvalidInput(
            f"process {pid} ({name}) is a kernel thread: ascendtune binds user processes only",
            "give the PID of a worker (`ascendtune doctor --section workers` lists them)",
        )


SIGKILL_BIT = 1 << 8  # SIGKILL (9) in the SigPnd/ShdPnd masks


def process_dying(pid: int, proc: str = PROC) -> bool:
    """True when the process is gone, a zombie, already exiting, or has a SIGKILL pending.

    kill(SIGKILL) returns once the signal is queued on every thread; /proc/PID/stat still says
    "R" or "S" until the threads get to run, so the state alone lets a killed process pass as
    alive. The kernel queues SIGKILL on each thread (SigPnd) and sets PF_EXITING once one takes
    it: either shows the process is on its way out.
    """
    return dying_stopped(pid, proc)[0]


def process_stopped(pid: int, proc: str = PROC) -> bool:
    """True when the process is stopped (SIGSTOP, or under a tracer)."""
    fields = stat_fields(pid, proc)
    return fields is not None and bool(fields) and fields[0] in ("T", "t")


def dying_stopped(pid: int, proc: str, *, strict: bool = False) -> tuple[bool, bool]:
    """(process_dying, process_stopped) from one read of stat and, if needed, one of status.
    `strict`: an unreadable stat counts as dying, as Tasks.alive has it (bind_process's final
    check then needs no read of its own)."""
    fields = stat_fields(pid, proc)
    if fields is None or (fields and fields[0] in ("Z", "X", "x")):
        return True, False
    if strict and not fields:
        return True, True
    stopped = bool(fields) and fields[0] in ("T", "t")
    try:
        if int(fields[6]) & PF_EXITING:
            return True, stopped
    except (IndexError, ValueError):
        pass
    try:
        status = read_proc(f"{proc}/{pid}/status", 1 << 16)
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return True, stopped
    except OSError:
        return False, stopped  # unreadable (hidepid, a policy): the other checks have spoken
    for key in (b"\nSigPnd:", b"\nShdPnd:"):
        at = status.find(key)
        if at < 0:
            continue
        end = status.find(b"\n", at + 1)
        try:
            if int(status[at + len(key) : end if end >= 0 else None].strip(), 16) & SIGKILL_BIT:
                return True, stopped
        except ValueError:
            pass
    return False, stopped
