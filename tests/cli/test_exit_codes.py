"""Exit codes at the console script: a closed pipe is not "problems found", every bad option
value is a usage error in one form, and `--debug` stands anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(TOP))


def script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ascendtune", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=TOP,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("topo", "--demo", "atlas-800i-a3"),
        ("plan", "--demo", "dgx-h100", "--policy", "compare"),
        ("doctor", "--demo", "container-a2-half"),
        ("topo", "--demo", "atlas-800i-a3", "--json"),
    ],
)
def test_a_closed_pipe_exits_0_quietly(args: tuple[str, ...]) -> None:
    # `ascendtune ... | head -1` when head has gone before the first write: the write fails
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ascendtune", *args],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env=ENV,
        cwd=TOP,
    )
    os.close(write_end)
    os.close(read_end)  # no reader: the child's writes meet a closed pipe
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err.decode() == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("plan", "--demo", "--policy", "bogus"), "--policy bogus: expected one of"),
        (("plan", "--demo", "--visible-devices", "a,b"), "--visible-devices: 'a' is not a number"),
        (("plan", "--demo", "--reserve", "x"), "--reserve: 'x' is not a CPU number"),
        (("plan", "--demo", "--busy", "q"), "--busy: 'q' is not a number"),
        (("plan", "--demo", "--ranks", "x"), "--ranks: 'x' is not a valid int"),
        (("plan", "--demo", "--emit", "yaml"), "--emit yaml: expected one of"),
        (("plan", "--demo", "--soc", "A9"), "--soc A9: expected one of"),
        (("doctor", "--demo", "--section", "x"), "--section x: expected one of"),
        (("doctor", "--demo", "--visible-devices", "1,x"), "--visible-devices: 'x' is not"),
    ],
)
def test_every_bad_option_value_exits_2_in_one_form(args: tuple[str, ...], says: str) -> None:
    res = script(*args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ascendtune: error: " + says), lines[0]
    assert lines[0].endswith(f"(see `ascendtune {args[0]} --help`)"), lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ("--debug", "plan", "--demo", "--policy", "bogus"),
        ("plan", "--debug", "--demo", "--policy", "bogus"),
        ("plan", "--demo", "--policy", "bogus", "--debug"),
    ],
)
def test_debug_anywhere(args: tuple[str, ...]) -> None:
    res = script(*args)
    assert res.returncode == 2
    assert "Traceback" in res.stderr  # --debug shows it, wherever it stands


def test_debug_after_double_dash_belongs_to_the_launched_command() -> None:
    from ascendtune.cli.app import debug_anywhere

    argv = ["bind", "--rank", "0", "--", "prog", "--debug"]
    assert debug_anywhere(argv) == argv
    assert debug_anywhere(["plan", "--debug"]) == ["--debug", "plan"]
