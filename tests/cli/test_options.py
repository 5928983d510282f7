"""Option wiring: numeric ranges are usage errors (one line, exit 2), check-config spells the
parallel sizes as plan does, bind takes taskset's -p PID and -c CPULIST, --pid completes the
workers' PIDs, and bind's summary says when the target was stopped or lost threads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ascendtune.cli.app import app
from tests.support.cli import Cli

ENV_FILE = str(Path(__file__).parents[1] / "fixtures" / "check_config" / "empty.env")


def script(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed entry point (main() turns click's usage errors into one line)."""
    import os

    return subprocess.run(
        [sys.executable, "-m", "ascendtune", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
        check=False,
    )


def one_usage_line(r: Any) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ascendtune: error: ")
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["check-config", "{}", "--tp", "0"],
        ["check-config", "{}", "--tp", "-1"],
        ["check-config", "{}", "-dp", "0"],
        ["check-config", "{}", "--pipeline-parallel-size", "-1"],
        ["check-config", "{}", "--pid", "0"],
        ["plan", "--demo", "atlas-800i-a2", "--ranks", "0"],
        ["bind", "--ranks", "0", "--pid", "1"],
        ["bind", "--pid", "0"],
        ["bind", "-p", "-3"],
        ["bind", "--workers", "--watch", "--interval", "0"],
        ["bind", "--workers", "--watch", "--interval", "-1"],
        ["bind", "--pid", "1", "--max-passes", "0"],
        ["watch", "--pid", "0"],
    ],
)
def test_numeric_ranges_are_usage_errors(args: list[str]) -> None:
    line = one_usage_line(script(*args))
    assert "is not in the range" in line


def test_check_config_spells_parallel_sizes_as_plan_does(cli: Cli) -> None:
    cfg = '{"enable_fused_mc2": 1}'
    base = ["check-config", cfg, "--arch", "aarch64", "--env-file", ENV_FILE, "--json"]
    docs = [
        cli(*base, *f).stdout
        for f in (["--tp", "4"], ["-tp", "4"], ["--tensor-parallel-size", "4"])
    ]
    assert docs[0] == docs[1] == docs[2] and docs[0]
    r = cli(*base, "--target", "auto")
    assert r.exit_code in (0, 1), r.output
    assert cli(*base).stdout == r.stdout  # auto and no --target mean the same


def test_help_names_what_goes_there(cli: Cli) -> None:
    bind = cli("bind", "--help").stdout
    for spelled in ("-p, --pid PID", "-c, --cpus CPULIST", "--rank RANK", "--max-passes N"):
        assert spelled in bind, spelled
    cc = cli("check-config", "--help").stdout
    for spelled in ("-tp, --tensor-parallel-size", "--tp N", "--target VERSION", "--pid PID"):
        assert spelled in " ".join(cc.split()).replace("--tp N", "--tp N"), spelled
    assert "--emit FORM" in cli("plan", "--help").stdout


@pytest.fixture
def sleeper() -> Any:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield p
    p.kill()
    p.wait()


def test_bind_takes_tasksets_short_options(sleeper: Any, cli: Cli) -> None:
    r = cli("bind", "-p", str(sleeper.pid), "-c", "0", "--dry-run")
    assert r.exit_code == 0, r.output
    assert f"process {sleeper.pid}" in r.stdout and "→ CPUs 0 " in r.stdout


def test_pid_completes_worker_pids(monkeypatch: pytest.MonkeyPatch) -> None:
    from ascendtune.app import hosts
    from ascendtune.cli import common

    monkeypatch.setattr(hosts, "worker_pids", lambda: [(4242, "vllm"), (517, "python3")])
    assert common.complete_pid("4") == [("4242", "vllm")]
    # wired on every --pid (the one common.pid_option declares), through click's completion
    import click
    import typer.main

    for name in ("bind", "watch", "check-config"):
        cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
        opt = next(p for p in cmd.params if "--pid" in p.opts)
        assert opt._custom_shell_complete is not None, name
        items = opt.shell_complete(click.Context(cmd), "")
        assert [(i.value, i.help) for i in items] == [("4242", "vllm"), ("517", "python3")], name


def test_worker_pids_never_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from ascendtune.app import hosts
    from ascendtune.host import workers

    def broken(*_: object) -> None:
        raise OSError("no proc")

    monkeypatch.setattr(workers, "find_workers", broken)
    assert hosts.worker_pids() == []
