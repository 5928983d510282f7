"""`ascendtune --help` stays light: no psutil, pyudev, torch_npu or ray at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.modules import modules_after

HEAVY = ("psutil", "pyudev", "torch_npu", "torch", "ray", "rich.table")


def test_help_imports_nothing_heavy() -> None:
    mods = modules_after(["--help"])
    assert not {m for m in mods if m.split(".")[0] in HEAVY[:5]}, "heavy module imported by --help"


def test_help_does_no_work_of_ours() -> None:
    """Root --help is Typer's own work on the command table: none of the commands' shared
    module (cli.common, which brings json) nor the host, app or core layers."""
    mods = modules_after(["--help"])
    ours = {m for m in mods if m.startswith("ascendtune.")}
    assert "ascendtune.cli.common" not in ours
    assert "ascendtune.core.vllm_log._scanc" not in ours  # log's compiled scan: loaded by log
    assert not {m for m in ours if m.split(".")[1] in ("host", "app")}, ours


def test_fleet_help_and_compare_need_no_ray(tmp_path: Path) -> None:
    assert "ray" not in {m.split(".")[0] for m in modules_after(["fleet", "--help"])}
    from tests.support.fleethosts import demo_copy

    paths = [str(demo_copy(tmp_path / n, n)) for n in ("a", "b")]
    mods = modules_after(["fleet", "compare", *paths, "--json"])
    assert "ray" not in {m.split(".")[0] for m in mods}


def test_topo_demo_needs_no_psutil_or_torch() -> None:
    mods = modules_after(["topo", "--demo", "atlas-800i-a2", "--json"])
    assert "psutil" not in mods and "torch_npu" not in mods and "torch" not in mods


def test_usage_errors_are_one_line() -> None:
    for args in (["snapshot"], ["plan", "--bogus"], ["plan", "--ranks", "x"]):
        done = subprocess.run(
            [sys.executable, "-m", "ascendtune", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert (
            len(lines) == 1 and lines[0].startswith("ascendtune: error: ") and "--help" in lines[0]
        )


@pytest.mark.parametrize("target", ["auto", "0.18.0"])
def test_plan_loads_no_config_table(target: str) -> None:
    """The registry is light; the check-config tables and rules load only for check-config."""
    mods = set(modules_after(["plan", "--demo", "atlas-800i-a2", "--target", target, "--json"]))
    assert "ascendtune.core.vllm_ascend.registry" in mods
    tables = {"ascendtune.core.vllm_ascend.tables", "ascendtune.core.vllm_config.rules"}
    assert not tables & mods


def test_topo_on_no_kubernetes_node_loads_no_kubelet_parser() -> None:
    """The demo host is no Kubernetes node: topo tells it from the kubelet's paths alone
    (core.k8s.paths), without the state and configuration parsers."""
    mods = set(modules_after(["topo", "--demo", "atlas-800i-a2", "--json"]))
    assert "ascendtune.core.k8s.paths" in mods
    assert not {"ascendtune.core.k8s.state", "ascendtune.core.k8s.config"} & mods


def test_doctor_without_workers_loads_no_redaction_nor_bind_targets() -> None:
    """core.redact compiles its patterns at import, core.bindplan defines five frozen
    dataclasses (about 7 ms): a doctor that finds no worker prints no command line and
    compares no rank with its plan, so loads neither (the demo host runs no worker)."""
    mods = set(modules_after(["doctor", "--demo", "atlas-800i-a2"]))
    assert "ascendtune.core.doctor.workers" in mods
    assert "ascendtune.core.redact" not in mods
    assert "ascendtune.core.bindplan" not in mods


def test_snapshot_loads_no_planner_engine_nor_rich(tmp_path: Path) -> None:
    """A snapshot gathers doctor's worker facts, whose records name a plan, but plans nothing:
    the planner's engine (every policy, the vLLM-Ascend table, the traces) is not imported;
    nor is Rich for its one plain line on stderr (printed as Rich would wrap it)."""
    rich_reads = ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    env = {k: v for k, v in os.environ.items() if k not in rich_reads}  # else Rich decides
    args = ["snapshot", str(tmp_path / "s.tar.gz"), "--demo", "atlas-800i-a2"]
    mods = modules_after(args, env)
    assert (tmp_path / "s.tar.gz").is_file()
    assert "ascendtune.core.planner.model" in mods
    assert "ascendtune.core.planner.engine" not in mods
    assert "rich" not in {m.split(".")[0] for m in mods}


def test_no_kubernetes_node_loads_no_kubelet_modules() -> None:
    """The demo host is no Kubernetes node: topo and doctor tell it from the kubelet's paths
    (host.k8s) and import neither app.k8s nor the kubelet's file readers."""
    k8s = {"ascendtune.app.k8s", "ascendtune.host.k8s.files"}
    for args in (["topo", "--demo", "atlas-800i-a2"], ["doctor", "--demo", "atlas-800i-a2"]):
        mods = set(modules_after(args))
        assert "ascendtune.host.k8s" in mods
        assert not k8s & mods, args


def test_plan_and_doctor_load_no_trace_nor_watch_parsers() -> None:
    """The planner's trace records (three dataclasses) are for `explain binding` only, and
    watch's per-thread records (core.parsers.procfs) for `watch`: doctor reads one status
    line (core.parsers.procstatus)."""
    for args in (["plan", "--demo", "atlas-800i-a2"], ["doctor", "--demo", "atlas-800i-a2"]):
        mods = set(modules_after(args))
        assert "ascendtune.core.planner.engine" in mods
        assert "ascendtune.core.planner.trace" not in mods, args
    assert "ascendtune.core.parsers.procfs" not in mods
    assert "ascendtune.core.parsers.procstatus" in mods
