"""`ascendtune agent` through the CLI: one pass against a captured host (`--once --observe`), the
exposition promtool accepts, the refusal to bind from a captured host, the exit codes of bad
input, and a textfile for node_exporter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import prometheus as prom
from tests.support.cli import Cli


def series(text: str) -> dict[str, float]:
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^(\w+\{[^}]*\}|\w+) (\S+)$", text, flags=re.M)
    }


def test_once_against_a_captured_host_exports_its_workers_and_checks(cli: Cli) -> None:
    res = cli("agent", "--demo", "container-a2-half", "--observe", "--once")
    assert res.exit_code == 0, res.stderr
    got = series(res.stdout)
    lab = 'device="{d}",host="vllm-qwen-7f9c2d4b1e",pid="{p}",rank="{d}",service="vllm",target="v0.30.0rc2"'
    # doctor's demo rows: worker 3418790 bound (7 threads), 3418914 unbound
    assert got[f"ascendtune_worker_threads{{{lab.format(d=0, p=3418790)}}}"] == 7
    assert got[f"ascendtune_worker_threads_bound{{{lab.format(d=0, p=3418790)}}}"] == 7
    assert got[f"ascendtune_worker_threads_bound{{{lab.format(d=1, p=3418914)}}}"] == 0
    assert got['ascendtune_agent_plan_ok{host="vllm-qwen-7f9c2d4b1e"}'] == 1
    checks = [k for k, v in got.items() if k.startswith("ascendtune_doctor_check{") and v == 1]
    assert any('check="irqbalance"' in k for k in checks)
    # nothing sampled from this machine's /proc for a captured host
    assert not any(k.startswith("ascendtune_worker_cpu_seconds_total{") for k in got)
    assert re.search(r"^ts=\S+ level=info msg=plan ", res.stderr, flags=re.M)


@pytest.mark.skipif(not prom.HAVE, reason="promtool is not installed")
def test_promtool_accepts_the_exposition(cli: Cli) -> None:
    res = cli("agent", "--demo", "atlas-800i-a2", "--observe", "--once")
    assert res.exit_code == 0, res.stderr
    lint = prom.promtool("check", "metrics", stdin=res.stdout)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "ascendtune_npu_irq_on_plan" in res.stdout


def test_the_agent_never_binds_from_a_captured_host(cli: Cli) -> None:
    res = cli("agent", "--demo", "atlas-800i-a2", "--once")
    assert res.exit_code == 2
    assert "captured host: give --observe" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--listen", "nowhere"], 2, "expected ADDRESS:PORT"),
        (["--interval", "0"], 2, "expected more than 0"),
        (["--log-format", "xml"], 2, "expected one of logfmt, json"),
        (["--config", "/nonexistent/agent.toml"], 5, "cannot read it"),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(
    cli: Cli, args: list[str], code: int, says: str
) -> None:
    res = cli("agent", "--demo", "atlas-800i-a2", "--observe", *args)
    assert res.exit_code == code, res.stderr
    assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_textfile_for_node_exporter(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "ascendtune.prom"
    res = cli(
        "agent",
        "--demo",
        "container-a2-half",
        "--observe",
        "--once",
        "--textfile",
        str(out),
        "--log-format",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout == ""
    text = out.read_text()
    assert "# TYPE ascendtune_worker_threads gauge" in text
    assert series(text)['ascendtune_agent_plan_ok{host="vllm-qwen-7f9c2d4b1e"}'] == 1
    assert all(line.startswith('{"ts":') for line in res.stderr.splitlines())
    assert not list(tmp_path.glob("*.tmp"))
