"""A share of a read done by a forked child on the second core, handed back over a pipe.

The child only runs its job (reads through the caller's Root) and writes the marshalled result
to its pipe, then os._exit; it never writes anything else. Whatever goes wrong with it (it
fails, dies, hangs past a bounded wait, or sends something that does not unmarshal) makes
result() None, and the caller reads that share itself: the output is the same either way.
The child is always reaped (killed first, by its PID, when still running).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

# the wait for a child past the parent's own share: at least this many seconds, or WAIT_FACTOR
# times what the parent's share took (a busy machine schedules the child late), whichever is more
WAIT_FLOOR_S = 5.0
WAIT_FACTOR = 4.0
# a pipe of 1 MiB (Linux's default maximum for a user) takes the result of a large share in
# one go: the child is done writing before the parent starts reading
_PIPE_BYTES = 1 << 20


def can_fork() -> bool:
    """Whether a child may be forked here: fork exists and no other thread runs (a thread's
    lock held at the fork would stay held in the child), counting the threads a library
    started outside Python too where /proc tells."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: Python's own count
        return True


class Child:
    """A forked child running job(); use as a context manager, so that it is reaped on every
    path (Ctrl-C in the parent included). With no job, or when can_fork() is false, no child
    is started and result() is None."""

    def __init__(self, job: Callable[[], Any] | None) -> None:
        self.pid = 0
        self._fd = -1
        self._started = time.monotonic()
        if job is None or not can_fork():
            return
        rfd, wfd = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no memory, too many processes: the parent reads it all
            os.close(rfd)
            os.close(wfd)
            return
        if pid == 0:  # the child: never returns
            _run_child(job, rfd, wfd)
        self.pid = pid
        os.close(wfd)
        self._fd = rfd

    def __enter__(self) -> Child:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end()

    def result(self) -> object | None:
        """The job's result, or None when there is no child, it failed, died, sent something
        that does not unmarshal, or is still running past the bounded wait (it is killed)."""
        if not self.pid:
            return None
        own = time.monotonic() - self._started
        deadline = time.monotonic() + max(WAIT_FLOOR_S, WAIT_FACTOR * own)
        chunks: list[bytes] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    return None  # hung: __exit__ kills it
                chunk = os.read(self._fd, _PIPE_BYTES)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            return None
        if self._reap(kill=False) != 0:
            return None  # killed, or failed after writing part of a result
        try:
            got: object = marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            return None
        return got

    def _reap(self, *, kill: bool) -> int | None:
        """The child's exit status once gone (killed first with kill); None when none is left."""
        pid, self.pid = self.pid, 0
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not pid:
            return None
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(pid, 0)  # EINTR is retried by Python (PEP 475)
        except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
            return None
        return os.waitstatus_to_exitcode(status)

    def _end(self) -> None:
        if self.pid:
            self._reap(kill=True)


def _run_child(job: Callable[[], Any], rfd: int, wfd: int) -> None:
    """The child's whole life: the job, its result written to the pipe, os._exit (no atexit,
    no stdio flushed, no parent's handler run). Status 0 only when all was written."""
    code = 1
    try:
        os.close(rfd)
        # Ctrl-C, a kill or a hang-up ends the child at once (the CLI's handlers would raise
        # into the job); the parent reads its share
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        # no collection in the child: a full one touches every object of the parent's heap,
        # copying its pages for nothing (the child lives for one share)
        import gc

        gc.disable()
        import fcntl

        if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux; a smaller pipe only means more round trips
            with contextlib.suppress(OSError):
                fcntl.fcntl(wfd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        view = memoryview(marshal.dumps(job()))
        while view:
            view = view[os.write(wfd, view) :]
        code = 0
    except BaseException:  # anything: the parent reads the share itself
        code = 1
    finally:
        os._exit(code)
