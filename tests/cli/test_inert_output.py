"""Strings from a host or a file reach the terminal inert: no escape byte, no Rich markup, no
right-to-left override or zero-width character.

A captured host whose hostname, kernel knob, npu-smi error and process names carry escape
sequences, overrides and markup, and a config whose key name does: every human renderer prints
them literally (markup shown as text, escape sequences and invisible characters shown escaped,
`\\x1b[2J`, `\\u202e`); JSON keeps the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer

from ascendtune.cli import common
from ascendtune.core.errors import InvalidInput
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2

ESC = "\x1b"
EVIL = "x\x1b[2J[bold]y"
ENV_FILE = str(Path(__file__).parents[1] / "fixtures" / "check_config" / "empty.env")


@pytest.fixture
def evil_host(tmp_path: Path) -> Path:
    root = tmp_path / "evil"
    b = atlas_a2(SysrootBuilder(root), topo=False)
    b.meta(hostname=EVIL, arch="aarch64")
    b.file("proc/sys/kernel/numa_balancing", "1\x1b]0;pwned\x07[red]\n")
    b.file("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\x1b[5m\n")
    # npu-smi's topology query failed with an error line full of escapes and markup
    b.file("commands/npu-smi_info_-t_topo.err", "npu-smi: \x1b[31mboom[/red] [bold]x\x1b[0m\n")
    b.proc(
        4242,
        comm="ev\x1b[1mil[i]\u202e",
        cmdline=["python3", "-m", "vllm\x1b[2J[bold]\u200b", "--x\u2066"],
    )
    return root


def assert_inert(r: Any) -> None:
    for stream in (r.stdout, r.stderr):
        assert ESC not in stream, stream
        assert "\x07" not in stream and "\x9b" not in stream, stream
        # nothing a terminal would not show as itself: controls, overrides, zero-width
        assert all(c.isprintable() or c in "\n" for c in stream), [
            c for c in stream if not c.isprintable() and c != "\n"
        ]


@pytest.mark.parametrize(
    "cmd",
    [
        ["topo"],
        ["plan"],
        ["plan", "--policy", "compare"],
        ["doctor"],
        ["doctor", "--section", "workers"],
        ["explain", "--sysroot"],
        ["bind", "--workers", "--dry-run"],
    ],
)
def test_host_strings_are_inert(evil_host: Path, cmd: list[str], cli: Cli) -> None:
    args = [*cmd, str(evil_host)] if cmd[-1] == "--sysroot" else [*cmd, "--sysroot", str(evil_host)]
    r = cli(*args)
    assert r.exit_code in (0, 1, 3, 4), r.output
    assert_inert(r)


def test_hostname_markup_prints_literally(evil_host: Path, cli: Cli) -> None:
    for cmd in (["topo"], ["plan"], ["doctor"]):
        r = cli(*cmd, "--sysroot", str(evil_host))
        assert_inert(r)
        assert "x\\x1b[2J[bold]y" in r.stdout, (cmd, r.stdout)


def test_tool_error_markup_prints_literally(evil_host: Path, cli: Cli) -> None:
    r = cli("doctor", "--sysroot", str(evil_host))
    assert_inert(r)
    assert "\\x1b[31mboom[/red] [bold]x\\x1b[0m" in r.stdout


def test_json_keeps_the_data(evil_host: Path, cli: Cli) -> None:
    r = cli("topo", "--json", "--sysroot", str(evil_host))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["hostname"] == EVIL
    assert ESC not in r.stdout  # json.dumps escapes it


def test_check_config_key_names_are_inert(cli: Cli) -> None:
    cfg = json.dumps({"ev\x1b[2Jil[bold]": 1, "enable_fused_mc2": 1})
    r = cli("check-config", cfg, "--arch", "aarch64", "--env-file", ENV_FILE)
    assert_inert(r)
    assert "il[bold]" in r.stdout + r.stderr


def test_log_lines_are_inert(tmp_path: Path, cli: Cli) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 01-01 00:00:00 [worker.py:1] ok\x1b[2J[bold]\n"
        "ERROR 01-01 00:00:01 [worker.py:2] bad \x1b]0;t\x07[red]x\n"
    )
    r = cli("log", str(log))
    assert_inert(r)


def test_internal_error_line_is_capped_and_inert(monkeypatch: pytest.MonkeyPatch, cli: Cli) -> None:
    from ascendtune.cli import common, topo

    def boom(*_: object, **__: object) -> None:
        raise ValueError("\x1b[2J[bold]" + "y" * 5000)

    monkeypatch.setattr(topo, "render_topo", boom)
    r = cli("topo", "--demo", "atlas-800i-a2")
    assert r.exit_code == 70  # a defect of ours (SPEC section 4)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ascendtune: internal error: ValueError: \\x1b[2J[bold]yyy")
    assert lines[0].endswith("(rerun with --debug for a traceback, and report it)")
    assert len(lines[0]) <= common.MAX_ERROR_LINE
    assert_inert(r)


def test_emoji_codes_from_a_host_print_as_text(tmp_path: Path, cli: Cli) -> None:
    from tests.support.builder import SysrootBuilder

    b = SysrootBuilder(tmp_path / "root")
    b.cpus("0-3").node(0, "0-3").meta(hostname=":smile:-node", arch="aarch64")
    res = cli("topo", "--sysroot", str(b.root))
    assert res.exit_code == 0, res.output
    assert ":smile:-node" in res.output and "\U0001f604" not in res.output


def test_a_hostile_hostname_does_not_reach_the_terminal_through_fail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exit_ = common.fail(InvalidInput("bad \x1b[2Jhost\x07 " + "y" * 100_000, "fix \x1b]0;t\x07it"))
    assert isinstance(exit_, typer.Exit) and exit_.exit_code == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert len(err) <= common.MAX_ERROR_LINE + 1 and "--debug" in err


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("enable_cpu\u200b_binding", "enable_cpu\\u200b_binding"),
        ("enable_cpu\x1b[0m_binding", "enable_cpu\\x1b[0m_binding"),
        ("enable\u202egnidnib_upc", "enable\\u202egnidnib_upc"),
    ],
)
def test_a_bad_key_is_shown_as_typed(key: str, shown: str, cli: Cli) -> None:
    # stripped or passed through, it would read "enable_cpu_binding is not a key ... did you
    # mean enable_cpu_binding?"
    cfg = json.dumps({key: True})
    r = cli("check-config", cfg, "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 1, r.output
    assert_inert(r)
    assert f"{shown} is not a" in r.stdout, r.stdout
    doc = json.loads(
        cli("check-config", cfg, "--arch", "aarch64", "--env-file", ENV_FILE, "--json").stdout
    )
    assert [key] in [f["keys"] for f in doc["findings"]]  # JSON keeps what was typed


def test_invisible_characters_from_a_host_are_shown(tmp_path: Path, cli: Cli) -> None:
    b = SysrootBuilder(tmp_path / "root")
    b.cpus("0-3").node(0, "0-3").meta(hostname="node\u202e1-\u200bx", arch="aarch64")
    r = cli("topo", "--sysroot", str(b.root))
    assert r.exit_code == 0, r.output
    assert_inert(r)
    assert "node\\u202e1-\\u200bx" in r.stdout, r.stdout


def test_log_overrides_are_shown(tmp_path: Path, cli: Cli) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 01-01 00:00:00 [worker.py:1] ok\u202e\u200b\n"
        "ERROR 01-01 00:00:01 [worker.py:2] (Worker_TP0 pid=1) Bind cpus failed: x\u2066y\n"
    )
    for extra in ([], ["--json"]):
        assert_inert(cli("log", str(log), *extra))


def test_usage_errors_show_what_was_typed() -> None:
    # the console script's own usage line (cli/app.py), as a user meets it
    import os
    import subprocess
    import sys

    top = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [sys.executable, "-m", "ascendtune", "topo", "--demo", "atlas-800i-a2",
         "--frobnicate\u202e\x1b[2J"],
        capture_output=True, text=True, timeout=120, cwd=top,
        env=dict(os.environ, PYTHONPATH=str(top)), check=False,
    )  # fmt: skip
    assert r.returncode == 2
    assert_inert(r)
    assert "--frobnicate\\u202e\\x1b[2J" in r.stderr, r.stderr
