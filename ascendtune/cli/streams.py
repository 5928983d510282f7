"""The console script's standard streams and signals, set up once before a command runs.

- stdout is flushed at every line (a `watch` redirected to a file keeps each sample, even when
  `timeout` stops it) and never fails to encode (`PYTHONIOENCODING=ascii`: `\\u2192`, not a
  traceback);
- a write that stdout refuses (a full disk, /dev/full) is OutputLost, one line and exit 74,
  never "internal error", and never read as a thread left unbound;
- a closed stdout (`>&-`) fails only when something is written; a closed stdin (`<&-`) is one
  clear line when a command reads it (`log -`, `check-config --file -`);
- SIGTERM and SIGHUP unwind like Ctrl-C (Stopped): `finally` blocks run (a snapshot removes its
  temporary folder), a live display shows the cursor again, and buffered output is written.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Any

from ascendtune.core.errors import InvalidInput, OutputLost


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: stop as Ctrl-C would; the exit status is 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# the signals that stopped this run, in the order they came (Typer turns a KeyboardInterrupt
# raised while it builds or parses a command into a silent exit 130: cli/app.py reads this to
# say "stopped" and exit 128 + signum instead)
received: list[int] = []
_said: list[bool] = []


def mark_reported() -> None:
    """A command's own boundary said "interrupted"/"stopped" for the signal: not again."""
    _said.append(True)


def reported() -> bool:
    return bool(_said)


def _stop(signum: int, _frame: object) -> None:
    received.append(signum)
    raise Stopped(signum)


def _interrupt(signum: int, frame: object) -> None:
    received.append(signum)
    signal.default_int_handler(signum, frame)  # type: ignore[arg-type]


def _unraisable(hook: Any) -> Any:
    """A signal that lands in a finalizer (a weakref callback, a __del__) raises there, where
    Python prints "Exception ignored" with a traceback and drops it: print nothing and deliver the
    signal again, so the next ordinary line of the tool stops as it should."""

    def unraisable(info: Any) -> None:
        exc = info.exc_value
        if isinstance(exc, KeyboardInterrupt):
            signum = getattr(exc, "signum", signal.SIGINT)
            while True:
                try:
                    _deliver_later(signum)
                    return
                except KeyboardInterrupt as again:
                    # a signal inside this hook (the sending thread's own, when this one was
                    # held up longer than its 10 ms) is recorded and delivered again too
                    signum = getattr(again, "signum", signal.SIGINT)
        hook(info)

    return unraisable


def _deliver_later(signum: int) -> None:
    """Send signum again from a thread, once this hook has returned: raised here, inside the
    hook, it would be "Exception ignored in sys.unraisablehook" and lost again."""
    import os
    import threading
    import time

    def send() -> None:
        time.sleep(0.01)
        os.kill(os.getpid(), signum)

    threading.Thread(target=send, name="ascendtune-signal", daemon=True).start()


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise Stopped, SIGINT KeyboardInterrupt, each recorded in `received`;
    a signal already ignored (nohup) stays ignored."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _stop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _unraisable(sys.unraisablehook)


class GuardedStdout:
    """sys.stdout as the tool writes it: every method of the real stream, but a refused write
    or flush is OutputLost (a closed pipe stays BrokenPipeError: `| head` ends quietly)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text:  # click probes with "" (and swallows what that raises): write nothing
            return 0
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise self._closed() from None
        except OSError as e:
            raise self._lost(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise self._closed() from None
        except OSError as e:
            raise self._lost(e) from None

    def _closed(self) -> BrokenPipeError:
        """The reader has gone (`| head`): a BrokenPipeError with no errno, so Typer's own
        handler (which would exit 1, "problems found") lets it through to ours (exit 0)."""
        silence(self._stream)
        return BrokenPipeError()

    def _lost(self, e: OSError) -> OutputLost:
        """Said once: what is still buffered, and every later write, goes to /dev/null, so
        neither the last flush nor the interpreter's shutdown reports it again."""
        silence(self._stream)
        return OutputLost(e.strerror or str(e))


def silence(stream: Any) -> None:
    """Point stream's descriptor at /dev/null (the reader has gone, or the disk is full)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class ClosedStdout:
    """stdout when the tool was started with it closed (`>&-`): fine until written to."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OutputLost("it is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("standard output is closed")


class ClosedStdin:
    """stdin when the tool was started with it closed (`<&-`): reading it is invalid input."""

    encoding = "utf-8"

    @staticmethod
    def _refuse() -> InvalidInput:
        return InvalidInput(
            "standard input is closed: there is nothing to read",
            "pipe the text in, or give the file's path instead of -",
        )

    @property
    def buffer(self) -> Any:
        raise self._refuse()

    def read(self, *_a: object) -> str:
        raise self._refuse()

    def readline(self, *_a: object) -> str:
        raise self._refuse()

    def fileno(self) -> int:
        raise self._refuse()

    def isatty(self) -> bool:
        return False


def guard_streams() -> None:
    """Set up stdin, stdout and stderr for the console script (see the module's docstring)."""
    if sys.stdin is None:
        sys.stdin = ClosedStdin()  # type: ignore[assignment]
    if sys.stderr is None:  # `2>&-`: errors go nowhere, and the exit status still says them
        import os

        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (open for the life of the process)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")
    if sys.stdout is None:
        sys.stdout = ClosedStdout()  # type: ignore[assignment]
        return
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(OSError, ValueError):
            reconfigure(line_buffering=True)
    sys.stdout = GuardedStdout(sys.stdout)  # type: ignore[assignment]
