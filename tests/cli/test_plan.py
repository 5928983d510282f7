"""`ascendtune plan` through the CLI: JSON keys (SPEC.md section 3), --emit lines, compare,
options, the device list from the environment, and exit codes for bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.planner_hosts import Hosts
from tests.support.planner_hosts import hosts_fixture as hosts_fixture  # the `hosts` fixture


@pytest.fixture
def a2(hosts: Hosts) -> str:
    return hosts.root("a2")


def plan_json(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = CLI("plan", *args, "--json", env=env)
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = schemas.loads_cli(["plan"], res.stdout)
    return doc


def test_json_keys_and_values(a2: str) -> None:
    doc = plan_json("--sysroot", a2)
    assert doc["schema_version"] == 1
    assert (doc["policy"], doc["mode"]) == ("vllm-ascend", "topo_affinity")
    r0, r1 = doc["ranks"][:2]
    assert {k: r0[k] for k in ("rank", "device", "logical_id", "cpus", "numa_nodes", "roles")} == {
        "rank": 0,
        "device": 0,
        "logical_id": 0,
        "cpus": "144-167",
        "numa_nodes": [6],
        "roles": {"irq": "144-145", "main": "146-165", "acl": "166", "release": "167"},
    }
    assert r0["vllm_log_line"] == (
        "NPU0: main=[" + " ".join(map(str, range(146, 166))) + "]  acl=[166]  release=[[167]]"
    )
    assert (r1["cpus"], r1["numa_nodes"], r1["device_numa_node"], r1["locality"]) == (
        "168-191",
        [7],
        6,
        0.0,
    )
    assert [r["cpus"] for r in doc["ranks"]] == [
        "144-167",
        "168-191",
        "96-119",
        "120-143",
        "0-23",
        "24-47",
        "48-71",
        "72-95",
    ]
    assert doc["overlaps"] == [] and doc["idle_cpus"] == ""
    assert any("ranks 1,3,5,7 run wholly off" in f["message"] for f in doc["findings"])


def test_json_better_policy_has_no_log_line(a2: str) -> None:
    doc = plan_json("--sysroot", a2, "--policy", "numa-local")
    assert doc["mode"] == "numa_local"
    assert "vllm_log_line" not in doc["ranks"][0]
    assert doc["ranks"][1]["cpus"] == "156-167" and doc["ranks"][1]["locality"] == 1.0


def test_table_and_better_line(a2: str, cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "plan: policy vllm-ascend, mode topo_affinity, SoC A2, 8 ranks" in out
    assert "144-167" in out and "146-165" in out
    assert "ranks 1,3,5,7 run wholly off their device's NUMA node" in out
    assert "better: --policy numa-local (mean locality 100% vs 50%)" in out
    assert res.stderr == ""


@pytest.mark.parametrize(
    ("emit", "lines"),
    [
        (
            "taskset",
            [
                "# one shell function per rank: `rank0 CMD ARGS` runs CMD on rank 0's CPUs "
                "(give --cmdline to get the commands themselves)",
                "# rank 0, NPU 0",
                'rank0() { taskset -c 144-167 "$@"; }',
                "# rank 1, NPU 1",
                'rank1() { taskset -c 168-191 "$@"; }',
            ],
        ),
        (
            "env",
            [
                "# for a launch script: ASCEND_RT_VISIBLE_DEVICES gives each rank its NPU, "
                'taskset -c "$ASCENDTUNE_CPUS_RANKn" / '
                'numactl --membind="$ASCENDTUNE_MEMBIND_RANKn" bind it',
                "export ASCEND_RT_VISIBLE_DEVICES=0,1",
                "# rank 0, NPU 0",
                "export ASCENDTUNE_CPUS_RANK0=144-167 ASCENDTUNE_MEMBIND_RANK0=6",
                "# rank 1, NPU 1",
                "export ASCENDTUNE_CPUS_RANK1=168-191 ASCENDTUNE_MEMBIND_RANK1=7",
            ],
        ),
        ("cpu-affinity-conf", ["export CPU_AFFINITY_CONF=1,npu0:144-167,npu1:168-191"]),
    ],
)
def test_emit(a2: str, emit: str, lines: list[str], cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2, "--ranks", "2", "--emit", emit)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == lines


def test_emit_numactl_binds_memory_to_the_device_node_or_prefers_it(a2: str, cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2, "--ranks", "2", "--emit", "numactl")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert 'rank0() { numactl --physcpubind=144-167 --membind=6 "$@"; }' in lines
    assert 'rank1_preferred() { numactl --physcpubind=168-191 --preferred=7 "$@"; }' in lines
    assert all(line.startswith("#") or "#" not in line for line in lines)


def test_emit_cpu_affinity_conf_notes_split_pool(hosts: Hosts, cli: Cli) -> None:
    res = cli(
        "plan",
        "--sysroot",
        hosts.root("a2-offline"),
        "--visible-devices",
        "4",
        "--policy",
        "numa-local",
        "--emit",
        "cpu-affinity-conf",
    )
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        "# rank 0: CPUs 0-4,6-12 are not one range; torch_npu takes a single a-b range, so only "
        "6-12 is given",
        "export CPU_AFFINITY_CONF=1,npu0:6-12",
    ]


def test_a_release_that_refuses_the_host_binds_no_rank(hosts: Hosts, cli: Cli) -> None:
    """An offline CPU makes vLLM-Ascend 0.15.0rc1 on fail (`lscpu -e` prints '-' as its
    node): every rank is skipped with that reason, no pool shown as if it were bound."""
    root = hosts.root("a2-offline")
    res = cli("plan", "--sysroot", root, "--visible-devices", "4,5", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert any(f["code"] == "offline_cpus" for f in doc["findings"])
    assert [r["cpus"] for r in doc["ranks"]] == ["", ""]
    assert all("offline" in r["binding_skipped"] for r in doc["ranks"])
    assert all(
        r["roles"] == {"irq": "", "main": "", "acl": "", "release": ""} for r in doc["ranks"]
    )
    human = cli("plan", "--sysroot", root, "--visible-devices", "4,5")
    assert "not bound" in human.stdout
    assert "better: --policy numa-local (binds 2 of 2 ranks where vLLM-Ascend binds 0" in (
        " ".join(human.stdout.split())
    )
    # nothing to emit: one line on stderr, exit 5, no line that binds to nothing
    emit = cli("plan", "--sysroot", root, "--visible-devices", "4,5", "--emit", "taskset")
    assert emit.exit_code == 5 and emit.stdout == ""
    assert "binds no rank on this host" in emit.stderr and "--policy numa-local" in emit.stderr


@pytest.mark.parametrize("form", ["taskset", "numactl", "systemd", "docker", "env"])
def test_emit_leaves_a_skipped_rank_as_a_comment(form: str, cli: Cli) -> None:
    """0.26.0rc1 on skip a rank whose NPU has no process in npu-smi's table: its lines are a
    comment, never a binding to no CPUs; the bound rank's lines are as always."""
    res = cli(
        *("plan", "--demo", "atlas-800i-a2", "--target", "v0.30.0rc2"),
        *("--visible-devices", "4,5", "--busy", "4", "--emit", form),
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("# rank 1, NPU 5: left unbound") and "no pool" in lines[0]
    assert "0-23" in res.stdout
    assert not any(x in res.stdout for x in ("-c  ", "-c ''", '=""', "physcpubind= ", "CPUS_RANK1"))
    if form == "env":
        assert "export ASCEND_RT_VISIBLE_DEVICES=4,5" in lines


def test_compare(a2: str, cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2, "--policy", "compare")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "vllm-ascend" in out and "numa-local" in out and "numa-slice" in out
    assert "168-191 (0%)" in out and "156-167 (100%)" in out
    assert "vllm-ascend: mode topo_affinity; 0 overlaps, 0 idle CPUs; 1 findings" in out
    assert "numa-local: mode numa_local; 0 overlaps, 96 idle CPUs" in out


def test_compare_json_reports_each_policy_or_its_error(hosts: Hosts, cli: Cli) -> None:
    root = hosts.root("a2-small")
    doc = plan_json("--sysroot", root, "--policy", "compare", "--ranks", "1", "--no-irq-reserve")
    pol = doc["policies"]
    assert set(pol) == {"vllm-ascend", "numa-local", "numa-slice"}
    # vLLM-Ascend: NPUs 0 and 1 (hidden, same affinity) split 144-151 into 4 + 4 CPUs
    assert "at least 5 CPUs" in pol["vllm-ascend"]["error"]
    assert pol["numa-local"]["ranks"][0]["cpus"] == "144-147"
    assert pol["numa-slice"]["ranks"][0]["cpus"] == "144-147"
    # with IRQ CPUs kept, no policy can plan: exit 5, one line per policy on stderr
    for extra in ([], ["--json"]):
        res = cli("plan", "--sysroot", root, "--policy", "compare", "--ranks", "1", *extra)
        assert res.exit_code == 5, res.output
        assert "no policy can plan" in res.stderr and "numa-slice:" in res.stderr


def test_reserve_and_no_irq_reserve(a2: str) -> None:
    doc = plan_json(
        "--sysroot", a2, "--policy", "numa-local", "--reserve", "144-145", "--no-irq-reserve"
    )
    assert doc["reserved"] == "144-145"
    r0 = doc["ranks"][0]
    assert r0["cpus"] == "146-156"
    assert r0["roles"] == {"irq": "", "main": "146-154", "acl": "155", "release": "156"}


def test_ranks(a2: str) -> None:
    doc = plan_json("--sysroot", a2, "--ranks", "3")
    assert [r["device"] for r in doc["ranks"]] == [0, 1, 2]
    assert doc["visible_devices"] == [0, 1, 2]


def test_visible_devices_from_environment(a2: str) -> None:
    # main-2026-08 (182b75ea) binds the r-th of the sorted list; main-2026-09 fixed it
    doc = plan_json(
        "--sysroot", a2, "--target", "main-2026-08", env={"ASCEND_RT_VISIBLE_DEVICES": "6,4"}
    )
    assert [(r["rank"], r["device"], r["pool_device"], r["cpus"]) for r in doc["ranks"]] == [
        (0, 6, 4, "0-23"),
        (1, 4, 6, "48-71"),
    ]
    assert any(
        "rank 0 runs on NPU 6 but is bound to NPU 4's CPUs" in f["message"] for f in doc["findings"]
    )
    # the option wins over the environment
    doc = plan_json(
        "--sysroot", a2, "--visible-devices", "2", env={"ASCEND_RT_VISIBLE_DEVICES": "6,4"}
    )
    assert [r["device"] for r in doc["ranks"]] == [2]


def test_cuda_visible_devices_is_ignored_on_ascend(a2: str) -> None:
    doc = plan_json("--sysroot", a2, env={"CUDA_VISIBLE_DEVICES": "3"})
    assert len(doc["ranks"]) == 8


def test_a3_container_json(hosts: Hosts) -> None:
    doc = plan_json("--sysroot", hosts.root("a3-half"), "--visible-devices", "0-7")
    assert doc["mode"] == "global_slice" and doc["soc"] == "A3"
    assert doc["ranks"][7]["cpus"] == "56-63" and doc["idle_cpus"] == "64-127"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--policy", "fastest"], 2, "--policy fastest: expected one of"),
        (["--emit", "yaml"], 2, "--emit yaml: expected one of"),
        (["--soc", "A9"], 2, "--soc A9: expected one of"),
        (
            ["--visible-devices", "a,b"],
            2,
            "'a' is not a number",
        ),  # a bad option value: usage (issue 16)
        (["--visible-devices", "9"], 5, "--visible-devices names device 9"),
        (["--ranks", "9"], 5, "between 1 and 8 ranks"),
        (["--reserve", "0-"], 2, "--reserve"),  # malformed: usage (issue 16)
        (["--reserve", "500"], 5, "not online"),
        (["--reserve", "0-191"], 5, "leaves no CPU"),
        (["--policy", "numa-local", "--visible-devices", "0,1", "--no-such"], 2, "No such option"),
    ],
)
def test_bad_input(a2: str, args: list[str], code: int, message: str, cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2, *args)
    assert res.exit_code == code, res.output
    assert message in res.stderr
    assert "Traceback" not in res.output


def test_bad_visible_devices_in_environment(a2: str, cli: Cli) -> None:
    res = cli("plan", "--sysroot", a2, env={"ASCEND_RT_VISIBLE_DEVICES": "0,x"})
    assert res.exit_code == 5
    assert "ASCEND_RT_VISIBLE_DEVICES" in res.stderr


def test_too_small_cpuset_exit_5(hosts: Hosts, cli: Cli) -> None:
    res = cli("plan", "--sysroot", hosts.root("a2-small"), "--visible-devices", "0,1")
    assert res.exit_code == 5
    assert res.stdout == ""
    err = res.stderr.strip()
    assert err.count("\n") == 0, "one line"
    assert err.startswith("ascendtune: error: The number of CPUs is insufficient.")
    assert "requires at least 5 CPUs: NPU 0's pool has 4 (144-147)" in err


def test_disjoint_cpuset_exit_5(hosts: Hosts, cli: Cli) -> None:
    res = cli("plan", "--sysroot", hosts.root("a2-disjoint"), "--visible-devices", "0")
    assert res.exit_code == 5
    assert "NPU 0 needs CPUs of its affinity 144-167, found none in the cpuset 0-23" in res.stderr


def test_a3_too_small_exit_5(hosts: Hosts, cli: Cli) -> None:
    res = cli("plan", "--sysroot", hosts.root("a3-small"))
    assert res.exit_code == 5
    assert "needs 80 CPUs" in res.stderr and "found 64" in res.stderr


def test_no_npu_exit_3(sysroot: SysrootBuilder, cli: Cli) -> None:
    sysroot.cpus("0-7").allowed("0-7")
    res = cli("plan", "--sysroot", str(sysroot.root))
    assert res.exit_code == 3
    assert "no accelerator found" in res.stderr
