"""The console script's streams and signals (cli/streams.py), as a user's shell meets them: a
closed pipe, a full disk, a closed stdout or stdin, an ASCII-only encoding, SIGTERM/SIGHUP to a
watch writing to a file or to a terminal, and `COLUMNS=0` on a terminal (issue 27 item 6)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.children import Spawn

TOP = Path(__file__).resolve().parents[2]
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("ASCENDTUNE_")},
    "PYTHONPATH": str(TOP),
}
ASCENDTUNE = [sys.executable, "-m", "ascendtune"]


@pytest.fixture(autouse=True)
def _sighup_default() -> Iterator[None]:
    """These tests are about SIGHUP's default disposition: under `nohup` (SIGHUP ignored,
    which every child inherits) the ascendtune started here would never see one."""
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, old)


def run(
    *args: str, env: dict[str, str] | None = None, stdout: object = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [*ASCENDTUNE, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**ENV, **(env or {})},
        cwd=TOP,
        check=False,
    )


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("topo", "--help")])
def test_a_closed_pipe_after_help_or_version_exits_0_quietly(args: tuple[str, ...]) -> None:
    # `ascendtune --help | head -0`: Typer's own handler made it exit 1, "problems found"
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.run(
        [*ASCENDTUNE, *args],
        stdout=write_end,
        stderr=subprocess.PIPE,
        check=False,
        env=ENV,
        cwd=TOP,
        timeout=120,
    )
    os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode() == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ("topo", "--demo", "atlas-800i-a2"),
        ("plan", "--demo", "atlas-800i-a2", "--json"),
        ("--help",),
        ("--version",),
        ("doctor", "--help"),
    ],
)
def test_a_full_stdout_is_one_line_and_74_not_an_internal_error(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        res = run(*args, stdout=full)
    line = one_line(res.stderr)
    assert res.returncode == 74, res.stderr
    assert line.startswith("ascendtune: error: cannot write to standard output: "), line
    assert "internal error" not in line
    assert "unbound" not in line  # a bind that was done is not said to have failed


def test_a_closed_stdout_fails_only_when_written_to() -> None:
    # `ascendtune topo >&-`: stdout is None in Python; the first write is one line, exit 74
    res = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *ASCENDTUNE, "topo", "--demo", "atlas-800i-a2"],
        stderr=subprocess.PIPE,
        check=False,
        text=True,
        env=ENV,
        cwd=TOP,
        timeout=120,
    )
    assert res.returncode == 74, res.stderr
    assert "standard output" in one_line(res.stderr)


@pytest.mark.parametrize(
    "args", [("log", "-"), ("check-config", "-"), ("check-config", "--file", "-")]
)
def test_a_closed_stdin_is_invalid_input_in_one_line(args: tuple[str, ...]) -> None:
    res = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *ASCENDTUNE, *args],
        capture_output=True,
        check=False,
        text=True,
        env=ENV,
        cwd=TOP,
        timeout=120,
    )
    line = one_line(res.stderr)
    assert "internal error" not in line
    assert res.returncode in (3, 5), res.stderr
    assert "standard input" in line or "-" in line


def test_an_ascii_only_stdout_gets_escapes_not_a_traceback() -> None:
    # a finding quotes a value (and marks it with a non-ASCII sign): `\u2192`, not a crash
    res = run(
        "check-config", '{"enable_cpu_binding": "\u00e9\u2192"}', env={"PYTHONIOENCODING": "ascii"}
    )
    assert res.returncode in (0, 1), res.stderr
    assert res.stderr == ""
    assert "\\u2192" in res.stdout or "\\xe9" in res.stdout


def _samples(path: Path) -> int:
    return path.read_text(errors="replace").count("ascendtune watch ·")


def test_sigterm_to_a_watch_into_a_file_keeps_every_sample(spawn: Spawn, tmp_path: Path) -> None:
    # `timeout 3 ascendtune watch ... > f` left f empty: SIGTERM killed it before any flush
    pid = spawn()
    out = tmp_path / "watch.txt"
    with out.open("w") as f:
        proc = subprocess.Popen(
            [*ASCENDTUNE, "watch", "--pid", str(pid), "--cpus", "0", "--interval", "0.1"],
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=TOP,
        )
        deadline = time.monotonic() + 60
        while _samples(out) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        seen = _samples(out)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert seen >= 3, err  # each sample reached the file as it was taken
    assert proc.returncode == 0, err  # a watch that is told to stop ends as Ctrl-C ends it
    assert "Traceback" not in err
    assert _samples(out) >= seen


def _pty_run(args: list[str], env: dict[str, str], until: bytes | None, then: int | None) -> bytes:
    """Run args on a new terminal; once `until` has been printed, send signal `then`; return
    everything the terminal received."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        args, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=TOP, close_fds=True
    )
    os.close(follower)
    got = b""
    sent = False
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the process has ended
                break
            if not chunk:
                break
            got += chunk
        if not sent and then is not None and until is not None and until in got:
            time.sleep(0.3)
            proc.send_signal(then)
            sent = True
        if proc.poll() is not None and not ready:
            break
    proc.kill()
    proc.wait(timeout=10)
    os.close(leader)
    return got


HIDE, SHOW = b"\x1b[?25l", b"\x1b[?25h"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_a_live_watch_shows_the_cursor_again(spawn: Spawn, signum: int) -> None:
    pid = spawn()
    got = _pty_run(
        [*ASCENDTUNE, "watch", "--pid", str(pid), "--cpus", "0", "--interval", "0.1"],
        {**ENV, "TERM": "xterm", "COLUMNS": "120", "LINES": "40"},
        until=HIDE,
        then=signum,
    )
    assert HIDE in got, got[-300:]
    assert SHOW in got[got.rindex(HIDE) :], got[-300:]
    assert b"Traceback" not in got


def test_columns_0_on_a_terminal_still_prints() -> None:
    got = _pty_run(
        [*ASCENDTUNE, "topo", "--demo", "atlas-800i-a2"],
        {**ENV, "TERM": "xterm", "COLUMNS": "0", "NO_COLOR": "1"},
        until=None,
        then=None,
    )
    assert b"NUMA" in got or b"numa" in got, got[:300]


def test_ctrl_c_during_start_up_is_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the campaign's find: SIGINT while main() was still importing its stream guards
    from ascendtune.cli import app as cli_app

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "_main", interrupted)
    with pytest.raises(SystemExit) as stop:
        cli_app.main()
    assert stop.value.code == 130
    assert capsys.readouterr().err == "ascendtune: interrupted\n"


# a signal that lands where Typer, not the command, catches it, or inside a finalizer
_STOP_WHILE_BUILDING = """
import os, signal, time, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a parent may have ignored it
from ascendtune.cli import app
real = app.build_command
def build(name):
    os.kill(os.getpid(), signal.{sig})
    time.sleep(5)
    return real(name)
app.build_command = build
sys.argv = ["ascendtune", "topo", "--demo", "atlas-800i-a2"]
app.main()
"""

_STOP_IN_A_FINALIZER = """
import os, signal, time, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a parent may have ignored it
from ascendtune.cli import app
real = app.build_command
class Dies:
    def __del__(self):
        os.kill(os.getpid(), signal.{sig})
        time.sleep(0.5)
def build(name):
    Dies()
    time.sleep(5)
    return real(name)
app.build_command = build
sys.argv = ["ascendtune", "topo", "--demo", "atlas-800i-a2"]
app.main()
"""


@pytest.mark.parametrize("script", [_STOP_WHILE_BUILDING, _STOP_IN_A_FINALIZER])
@pytest.mark.parametrize(
    ("sig", "code", "line"),
    [
        ("SIGTERM", 143, "ascendtune: stopped"),
        ("SIGHUP", 129, "ascendtune: stopped"),
        ("SIGINT", 130, "ascendtune: interrupted"),
    ],
)
def test_a_signal_typer_or_a_finalizer_catches_still_stops_with_128_plus_its_number(
    script: str, sig: str, code: int, line: str
) -> None:
    # the campaign's find: a SIGHUP while Typer built the command was a silent exit 130, and one
    # inside a weakref callback printed "Exception ignored" with a traceback and was lost
    proc = subprocess.run(
        [sys.executable, "-c", script.format(sig=sig)],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=TOP,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert one_line(proc.stderr) == line
    assert "Exception ignored" not in proc.stderr
    assert proc.stdout == ""


def test_a_signal_landing_inside_the_finalizer_hook_is_delivered_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # seen on a loaded CI: the hook's sending thread fired while the hook was still running (held
    # up past the thread's 10 ms); that second signal was swallowed and the tool ran on (exit 0)
    from ascendtune.cli import streams

    sent: list[int] = []

    def deliver_later(signum: int) -> None:
        sent.append(signum)
        if len(sent) == 1:
            raise streams.Stopped(signal.SIGTERM)  # the thread's signal, landing right here

    monkeypatch.setattr(streams, "_deliver_later", deliver_later)
    seen: list[object] = []
    hook = streams._unraisable(seen.append)
    hook(types.SimpleNamespace(exc_value=streams.Stopped(signal.SIGHUP)))
    assert sent == [signal.SIGHUP, signal.SIGTERM]
    assert seen == []
