"""Exit codes at the console script: a closed pipe is not "problems found", every bad option
value is a usage error in one form, and `--debug` stands anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import Cli

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


# --- SPEC section 4, command by command: every row an input and the status it must give ------

NO_PID = "999999999"  # above any pid_max: never a process
MALFORMED_NPU_SMI = "garbage line\n"


def _host(tmp_path: Path, name: str, *edits: tuple[str, str | None]) -> str:
    """An Atlas A2 sysroot with files replaced (text) or turned into a file over a folder (None)."""
    from tests.support.builder import SysrootBuilder
    from tests.support.hosts import atlas_a2

    b = atlas_a2(SysrootBuilder(tmp_path / name))
    for rel, text in edits:
        p = b.root / rel
        if text is None:
            import shutil

            shutil.rmtree(p)
            p.write_text("not a folder\n")
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    return str(b.root)


# (args, status); "{HOST}" is a good A2 sysroot, "{BAD_SMI}" one whose npu-smi output is garbage,
# "{SYS_FILE}" one whose sys/ is a file, "{BIG_MEM}" one with a 5,000-digit MemTotal
TABLE: dict[str, list[tuple[tuple[str, ...], int]]] = {
    "topo": [
        (("--sysroot", "{HOST}"), 0),
        (("--sysroot", "{HOST}/nowhere"), 3),
        (("--sysroot", "{BAD_SMI}"), 5),
        (("--sysroot", "{SYS_FILE}"), 5),
        (("--sysroot", "{BIG_MEM}", "--json"), 0),
        (("--bogus",), 2),
    ],
    "plan": [
        (("--sysroot", "{HOST}"), 0),
        (("--sysroot", "{HOST}", "--reserve", "a"), 2),
        (("--sysroot", "{HOST}", "--ranks", "x"), 2),
        (("--sysroot", "{HOST}", "--ranks", "0"), 2),
        (("--sysroot", "{SYS_FILE}"), 5),
        (("--sysroot", "{BAD_SMI}"), 5),
    ],
    "bind": [
        (("--cpus", "a", "--pid", "1", "--dry-run"), 2),
        (("--cpus", "0-", "--pid", "1", "--dry-run"), 2),
        (("--pid", "x", "--cpus", "0"), 2),
        (("--pid", "0", "--cpus", "0"), 2),
        (("--workers", "--watch", "--interval", "nan"), 2),
        (("--workers", "--watch", "--interval", "inf"), 2),
        (("--workers", "--watch", "--interval", "1e308"), 2),
        (("--workers", "--watch", "--for", "nan"), 2),
        (("--workers", "--watch", "--for", "inf"), 2),
        (("--workers", "--watch", "--for", "1e308d"), 2),
        (("--max-passes", "0", "--pid", "1", "--cpus", "0"), 2),
        (("--pid", NO_PID, "--cpus", "0", "--dry-run"), 3),
    ],
    "watch": [
        (("--cpus", "a", "--pid", "1", "--once"), 2),
        (("--cpus", "0", "--pid", "1", "--interval", "nan", "--once"), 2),
        (("--cpus", "0", "--pid", "1", "--interval", "inf", "--once"), 2),
        (("--cpus", "0", "--pid", "1", "--interval", "1e308", "--once"), 2),
        (("--cpus", "0", "--pid", "1", "-n", "0"), 2),
        (("--cpus", "0", "--pid", NO_PID, "--once", "--interval", "0.05"), 3),
    ],
    "check-config": [
        (("{}",), 0),
        (("{",), 5),
        (('{"enable_cpu_binding": "yes"}', "--target", "nope"), 2),
        (("--file", "{HOST}/nowhere.json"), 3),
    ],
    "doctor": [
        (("--sysroot", "{HOST}", "--section", "x"), 2),
        (("--sysroot", "{SYS_FILE}"), 5),
        (("--sysroot", "{HOST}/nowhere"), 3),
    ],
    "snapshot": [
        (("--sysroot", "{HOST}", "{OUT}"), 0),
        (("--sysroot", "{BAD_SMI}", "{OUT}"), 5),
        (("--sysroot", "{SYS_FILE}", "{OUT}"), 5),
        (("--sysroot", "{BIG_MEM}", "{OUT}"), 0),
        (("--sysroot", "{HOST}", "{HOST}"), 5),
    ],
    "log": [
        (("{HOST}/nowhere.log",), 3),
    ],
    "fleet": [
        (("compare", "{HOST}/nowhere"), 3),
        (("topo", "--ray-address", "a" * 5000), 2),
        (("topo", "--ray-address", "1.2.3.4:99999999999999999999"), 2),
    ],
}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("hosts")
    meminfo = "sys/devices/system/node/node0/meminfo"
    return {
        "HOST": _host(base, "good"),
        "BAD_SMI": _host(base, "bad_smi", ("commands/npu-smi_info.txt", MALFORMED_NPU_SMI)),
        "SYS_FILE": _host(base, "sys_file", ("sys", None)),
        "BIG_MEM": _host(base, "big_mem", (meminfo, f"Node 0 MemTotal: {'9' * 5000} kB\n")),
    }


@pytest.mark.parametrize(
    ("command", "args", "status"),
    [(c, a, s) for c, rows in TABLE.items() for a, s in rows],
    ids=[f"{c}-{i}" for c, rows in TABLE.items() for i in range(len(rows))],
)
def test_every_command_follows_the_exit_status_table(
    cli: Cli,
    hosts: dict[str, str],
    tmp_path: Path,
    command: str,
    args: tuple[str, ...],
    status: int,
) -> None:
    names = {**hosts, "OUT": str(tmp_path / "out")}
    argv = [_fill(a, names) for a in args]
    r = cli(command, *argv)
    assert r.exit_code == status, (argv, r.exit_code, r.stderr[-400:])
    err = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    if status not in (0, 2):  # usage errors get their one-line form at the console script
        assert len(err) == 1 and err[0].startswith("ascendtune: error: "), r.stderr


def _fill(arg: str, names: dict[str, str]) -> str:
    for key, value in names.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def test_every_command_has_rows_in_the_table() -> None:
    from ascendtune.cli.commands import COMMANDS

    missing = set(COMMANDS) - set(TABLE) - {"explain", "agent"}
    assert not missing, missing


def test_an_unreadable_sysroot_folder_is_permission_denied(
    cli: Cli, hosts: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # as root every folder reads; the refusal a user meets is what os.access says
    real = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode, **kw: False if str(p) == hosts["HOST"] else real(p, mode, **kw),
    )
    for command in ("topo", "doctor", "plan"):
        r = cli(command, "--sysroot", hosts["HOST"])
        assert r.exit_code == 4, (command, r.stderr)
        assert "permission denied" in r.stderr


def test_a_snapshot_that_does_not_read_back_says_why(
    cli: Cli, hosts: dict[str, str], tmp_path: Path
) -> None:
    # "ParseError.__init__() takes 2 positional arguments but 3 were given": internal error 70
    r = cli("snapshot", "--sysroot", hosts["BAD_SMI"], str(tmp_path / "snap"))
    assert r.exit_code == 5, r.stderr
    assert "does not read back: npu-smi info line 1" in r.stderr
    assert not list(tmp_path.iterdir())  # nothing left behind
