"""`bind` and `doctor` on GPU hosts: a GPU plan written by `plan --json` and read back by
`bind --plan`, on this (small) machine's real processes; GPU workers found by /dev/nvidiaN."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.gpu_hosts import Gpu, write_gpus


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCENDTUNE_SYSROOT"):
        monkeypatch.delenv(name, raising=False)


def online_cpus() -> frozenset[int]:
    return parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())


@pytest.fixture
def child() -> Iterator[int]:
    """A process of our own to bind: bind tests act on real processes (SPEC.md section 2)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def dgx_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`ascendtune plan --demo dgx-h100 --policy exclusive --json > plan.json`"""
    res = CLI("plan", "--demo", "dgx-h100", "--policy", "exclusive", "--json")
    assert res.exit_code == 0, res.stderr
    path = tmp_path_factory.mktemp("dgx") / "plan.json"
    path.write_text(res.stdout)
    return path


def test_the_dgx_plan_file_is_a_gpu_plan(dgx_plan: Path) -> None:
    doc = schemas.loads("plan", dgx_plan.read_text())
    assert (doc["schema_version"], doc["vendor"], doc["policy"], doc["mode"]) == (
        1,
        "nvidia",
        "exclusive",
        "exclusive",
    )
    assert doc["ranks"][0]["cpus"] == "0-13,112-125"
    assert doc["ranks"][7]["cpus"] == "98-111,210-223"
    assert doc["ranks"][0]["roles"] == {
        "irq": "",
        "main": "0-13,112-125",
        "acl": "",
        "release": "",
    }
    assert doc["overlaps"] == [] and doc["idle_cpus"] == ""


def test_bind_a_224_cpu_plan_here_names_the_usable_cpus(
    dgx_plan: Path, child: int, cli: Cli
) -> None:
    wanted = parse_cpulist("0-13,112-125")
    online = online_cpus()
    if wanted <= online:
        pytest.skip("this machine has the DGX's CPUs: the plan would apply")
    before = os.sched_getaffinity(child)
    res = cli("bind", "--plan", str(dgx_plan), "--rank", "0", "--pid", str(child), "--dry-run")
    assert res.exit_code == 5 and res.stdout == ""
    [line] = res.stderr.strip().splitlines()
    may = format_cpulist(online & before)
    assert f"CPUs {format_cpulist(wanted - online)} are not online on this host" in line
    assert f"process {child} may use CPUs {may}" in line
    assert os.sched_getaffinity(child) == before, "a refused dry run changes nothing"


def test_bind_computing_the_dgx_plan_plans_against_the_demo_not_this_machine(
    child: int, cli: Cli
) -> None:
    # a dry run with --demo plans against the demo's processes (issue 26): this machine's PID is
    # not one of them, and is not read
    res = cli(
        "bind",
        *("--demo", "dgx-h100", "--policy", "exclusive", "--rank", "0"),
        *("--pid", str(child), "--dry-run"),
    )
    assert res.exit_code == 3 and f"process {child} is not in demo:dgx-h100" in res.stderr


def test_bind_plan_and_cpus_together_is_a_usage_error(dgx_plan: Path, child: int, cli: Cli) -> None:
    res = cli("bind", "--plan", str(dgx_plan), "--rank", "0", "--cpus", "0", "--pid", str(child))
    assert res.exit_code == 2 and "give --cpus LIST, or --rank R" in res.stderr


# ------------------------------------------------------------------------ a plan that fits here


@pytest.fixture
def here(tmp_path: Path) -> tuple[Path, list[int]]:
    """A GPU sysroot shaped like this machine: its first two usable CPUs on one node, a GPU
    for each; the exclusive plan gives GPU g the g-th CPU."""
    mine = sorted(os.sched_getaffinity(0) & online_cpus())[:2]
    if len(mine) < 2:
        pytest.skip("needs two usable CPUs")
    sb = SysrootBuilder(tmp_path / "root")
    cpulist = format_cpulist(mine)
    sb.cpus(cpulist, topology=False).node(0, cpulist)
    write_gpus(sb, [Gpu(0, cpulist), Gpu(0, cpulist)])
    res = CLI("plan", "--sysroot", str(sb.root), "--policy", "exclusive", "--json")
    assert res.exit_code == 0, res.stderr
    path = tmp_path / "plan.json"
    path.write_text(res.stdout)
    return path, mine


def bind_json(*args: str) -> tuple[int, dict[str, Any]]:
    res = CLI("bind", *args, "--json")
    return res.exit_code, schemas.loads("bind", res.stdout) if res.stdout else {}


def test_dry_run_of_a_gpu_plan_changes_nothing(here: tuple[Path, list[int]], child: int) -> None:
    plan, mine = here
    before = os.sched_getaffinity(child)
    code, doc = bind_json("--plan", str(plan), "--rank", "1", "--pid", str(child), "--dry-run")
    assert code == 0
    assert doc["dry_run"] is True and doc["cpus"] == str(mine[1]) and doc["rank"] == 1
    assert doc["threads_total"] == len(doc["threads"]) >= 1
    assert {t["target"] for t in doc["threads"]} == {str(mine[1])}
    assert {t["current"] for t in doc["threads"]} == {format_cpulist(before)}
    assert os.sched_getaffinity(child) == before


def test_bind_applies_a_gpu_plan(here: tuple[Path, list[int]], child: int, cli: Cli) -> None:
    plan, mine = here
    # the plan was computed from a sysroot: bind refuses it unless --force (issue 12)
    res = cli("bind", "--plan", str(plan), "--rank", "1", "--pid", str(child))
    assert res.exit_code == 2 and "was not made for this host" in res.stderr
    code, doc = bind_json("--plan", str(plan), "--rank", "1", "--pid", str(child), "--force")
    assert code == 0 and doc["verified"] is True
    assert doc["threads_bound"] == doc["threads_total"] and doc["threads_failed"] == []
    assert os.sched_getaffinity(child) == {mine[1]}


def test_bind_launches_a_command_on_a_gpu_rank(here: tuple[Path, list[int]]) -> None:
    plan, mine = here
    done = subprocess.run(
        [
            *(sys.executable, "-m", "ascendtune", "bind", "--plan", str(plan), "--rank", "0"),
            *("--force", "--quiet", "--", sys.executable, "-c"),
            "import os; print(sorted(os.sched_getaffinity(0)))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([mine[0]])


# ------------------------------------------------------------------------ doctor


def gpu_host_with_workers(sb: SysrootBuilder) -> SysrootBuilder:
    """2 nodes of 8 CPUs, 2 GPUs per node; worker 4242 holds GPU 0 unbound, worker 4343
    holds GPU 1 and sits on the CPUs the exclusive plan gives it."""
    sb.cpus("0-15", topology=False).node(0, "0-7").node(1, "8-15").allowed("0-15", "0-1")
    write_gpus(sb, [Gpu(g // 2, "0-7" if g < 2 else "8-15") for g in range(4)])
    sb.proc(
        4242,
        comm="python3",
        cmdline=["python3", "train.py", "--local-rank", "0"],
        cpus_allowed="0-15",
        fds={3: "/dev/nvidia0", 4: "/dev/nvidiactl", 5: "/dev/nvidia-uvm"},
    )
    sb.proc(4343, comm="python3", cpus_allowed="4-7", fds={3: "/dev/nvidia1"})
    return sb


def doctor_rows(sb: SysrootBuilder, *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    res = CLI("doctor", "--sysroot", str(sb.root), "--section", "workers", "--json", *args)
    doc = schemas.loads("doctor", res.stdout)
    return res.exit_code, {c["id"]: c for c in doc["checks"]}


def test_doctor_finds_gpu_workers_by_their_device_files(sysroot: SysrootBuilder) -> None:
    code, rows = doctor_rows(gpu_host_with_workers(sysroot))
    assert code == 1  # an unbound worker is a failure
    unbound = rows["worker:4242"]
    assert unbound["status"] == "fail"
    assert unbound["value"].startswith("GPU 0 (python3)")
    data = unbound["data"]
    # /dev/nvidiactl and /dev/nvidia-uvm are shared control nodes, not a GPU
    assert data["devices"] == [0] and data["device_files"] == ["/dev/nvidia0"]
    assert data["found_by"] == ["fd"] and data["device_numa_node"] == 0
    assert data["threads_unbound"] == 1
    assert unbound["fix"] is not None and unbound["fix"].startswith("ascendtune bind")
    assert rows["worker:4343"]["value"].startswith("GPU 1 (python3)")
    assert rows["worker:4343"]["status"] == "ok"
    assert rows["overlap:4242,4343"]["data"]["cpus"] == "4-7"


def test_doctor_compares_gpu_workers_with_a_gpu_policy(sysroot: SysrootBuilder) -> None:
    code, rows = doctor_rows(gpu_host_with_workers(sysroot), "--policy", "exclusive")
    assert code == 1
    assert rows["worker:4242"]["expected"] == "exclusive rank 0: CPUs 0-3 (node 0)"
    assert rows["worker:4242"]["fix"] == "ascendtune bind --rank 0 --pid 4242 --policy exclusive"
    bound = rows["worker:4343"]
    assert bound["status"] == "ok" and bound["expected"] == "exclusive rank 1: CPUs 4-7 (node 0)"
    assert bound["data"]["plan_rank"] == 1
