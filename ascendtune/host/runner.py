"""The only place that runs programs: no shell, LC_ALL=C, always a timeout.

The tool runs of one call share one `Deadline` (so two hanging tools cost one timeout, not two;
a long-running command such as `bind --workers --watch` starts a new one every pass through
Root.renew_tool_budget, so a budget never outlives the call it was made for); each
program runs in its own session and the whole process group is killed when it overruns, so a
hung tool's own children do not live on. Output is bounded: a tool that prints more than
MAX_OUTPUT_BYTES is stopped like one that hangs.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 15.0
MAX_OUTPUT_BYTES = 8 << 20


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(Exception):
    pass


class Deadline:
    """One time budget shared by several tool runs (monotonic clock)."""

    def __init__(self, seconds: float = DEFAULT_TIMEOUT_S) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()


def c_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    if extra:
        env.update(extra)
    return env


def which(name: str, fallbacks: tuple[str, ...] = ()) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for path in fallbacks:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def run(
    argv: list[str],
    timeout: float = DEFAULT_TIMEOUT_S,
    *,
    deadline: Deadline | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> Completed:
    """Run argv (argv[0] an absolute path or a PATH name) and return its text output.

    The run ends at `timeout` seconds or at the shared deadline, whichever comes first. Raises
    FileNotFoundError when the program is missing and CommandTimeout when it hangs (or prints
    more than max_output bytes); either way its whole process group is killed.
    """
    limit = timeout if deadline is None else min(timeout, deadline.remaining())
    if limit <= 0:
        budget = deadline.seconds if deadline is not None else timeout
        raise CommandTimeout(f"{argv[0]} not run: the {budget:g} s budget for tools is spent")
    end = time.monotonic() + limit
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=c_env(),
        start_new_session=True,  # its own process group: killpg reaches its children
    )
    assert proc.stdout is not None and proc.stderr is not None
    bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    sel = selectors.DefaultSelector()
    try:
        for fd in bufs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        exited_at: float | None = None
        while sel.get_map():
            now = time.monotonic()
            if now >= end:
                _kill_group(proc)
                raise CommandTimeout(f"{argv[0]} did not answer within {limit:g} s")
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            elif exited_at is not None and now - exited_at > 0.5:
                # the tool is done; a child it left behind still holds the pipe open
                break
            for key, _ev in sel.select(min(end - now, 0.1)):
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    continue
                buf = bufs[fd]
                if len(buf) + len(chunk) > max_output:
                    _kill_group(proc)
                    raise CommandTimeout(
                        f"{argv[0]} printed more than {max_output >> 20} MiB (the limit)"
                    )
                buf += chunk
        try:
            rc = proc.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise CommandTimeout(f"{argv[0]} did not answer within {limit:g} s") from None
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
    stdout, stderr = (bytes(b).decode("utf-8", errors="replace") for b in bufs.values())
    return Completed(tuple(argv), rc, stdout, stderr)
