"""`ascendtune doctor` through the CLI on sysroot scenarios, and live on this machine."""

from __future__ import annotations

import pytest

from ascendtune.core.doctor import HOST_CHECK_IDS
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.doctor_hosts import (
    A2_BDF,
    SWAPS_NONE,
    doctor_json,
    rows,
    statuses,
    tuned,
    unbound_threads,
    untuned,
    vllm_threads,
    worker,
)
from tests.support.hosts import (
    A2_BUS,
    a2_npu_smi_info,
    npu_smi_info,
    npu_smi_m,
    npu_smi_topo,
)
from tests.support.irqhosts import plan_irq_cpus, write_npu_irqs

# ---- host checks --------------------------------------------------------------------------------


def test_tuned_host_passes(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    worker(sysroot, 4000, 4, vllm_threads(4000, "2-21", "22", "23"), session=4000)
    code, doc = doctor_json(sysroot)
    assert code == 0
    assert doc["schema_version"] == 1
    st = statuses(doc)
    irq_ids = [f"npu_irq:{n}" for n in range(8)]
    assert [c["id"] for c in doc["checks"] if c["section"] == "host"] == [
        *HOST_CHECK_IDS,
        *irq_ids,
    ]
    assert {i: st[i] for i in HOST_CHECK_IDS} == dict.fromkeys(HOST_CHECK_IDS, "ok")
    assert {i: st[i] for i in irq_ids} == dict.fromkeys(irq_ids, "ok")
    assert st["worker:4000"] == "ok"
    assert st["binders:4000"] == "ok"  # one binder (vLLM-Ascend), nothing in its way
    assert doc["summary"] == {"ok": len(HOST_CHECK_IDS) + 10, "warn": 0, "fail": 0, "skip": 0}
    r = rows(doc)
    assert r["cpu_governor"]["value"] == "performance on every CPU with cpufreq (192)"
    assert r["npu_smi"]["value"] == "npu-smi 24.1.rc1.b030"
    assert r["cgroup_cpuset"]["value"] == "cgroup v2, cpuset 0-191"
    assert all(c["fix"] is None for c in doc["checks"])


def test_untuned_host_every_check_flags_with_its_fix(sysroot: SysrootBuilder) -> None:
    untuned(sysroot)
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 1
    r = rows(doc)
    for cid in HOST_CHECK_IDS:
        assert r[cid]["status"] in ("warn", "fail"), (cid, r[cid])
        assert r[cid]["fix"], cid
    assert statuses(doc) == {
        "cpu_governor": "fail",
        "numa_balancing": "fail",
        "swappiness": "fail",
        "sched_migration_cost": "warn",
        "thp": "warn",
        "irqbalance": "warn",
        "cgroup_cpuset": "fail",  # no npu-smi affinity: global slicing, 30 CPUs for 8 NPUs
        "cap_sys_nice": "warn",
        "npu_smi": "fail",
        "numactl": "warn",
        "migratepages": "warn",
        "taskset": "fail",  # vLLM-Ascend binds with taskset: without it nothing is bound
        "arch": "warn",
        "locale": "warn",
        # no plan to compare the interrupts with (no npu-smi)
        **{f"npu_irq:{n}": "skip" for n in range(8)},
    }
    assert r["cpu_governor"]["value"] == "powersave on 0-95; performance on 96-191"
    assert r["cpu_governor"]["fix"] == (
        "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
    )
    assert r["numa_balancing"]["fix"] == "sysctl -w kernel.numa_balancing=0"
    assert r["swappiness"]["fix"] == "sysctl -w vm.swappiness=0"
    assert r["sched_migration_cost"]["fix"] == "sysctl -w kernel.sched_migration_cost_ns=50000"
    assert r["thp"]["value"] == "always"
    assert r["thp"]["fix"] == "echo never > /sys/kernel/mm/transparent_hugepage/enabled"
    assert r["irqbalance"]["value"] == "running (PID 1312)"
    assert r["irqbalance"]["fix"] == "systemctl stop irqbalance"
    assert "global slicing needs 40 CPUs" in r["cgroup_cpuset"]["detail"]
    assert r["numactl"]["fix"] == "apt-get install -y numactl"  # Ubuntu
    assert r["taskset"]["fix"] == "apt-get install -y util-linux"
    assert r["locale"]["value"] == "LANG=zh_CN.UTF-8"
    assert "#8251" in r["locale"]["detail"]
    assert doc["sections"] == ["host"]
    assert not [c for c in doc["checks"] if c["section"] == "workers"]


def test_untuned_report_groups_sections_and_ends_with_summary(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    untuned(sysroot)
    res = cli("doctor", "--sysroot", str(sysroot.root))
    assert res.exit_code == 1
    out = res.stdout
    assert out.index("Host") < out.index("Workers")
    assert "fix: sysctl -w kernel.numa_balancing=0" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("doctor (") and "6 fail" in last


def test_swappiness_without_swap_is_a_warning(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.file("proc/sys/vm/swappiness", "60\n").file("proc/swaps", SWAPS_NONE)
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 0
    assert statuses(doc)["swappiness"] == "warn"


def test_sched_migration_cost_in_debugfs(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    (sysroot.root / "proc/sys/kernel/sched_migration_cost_ns").unlink()
    sysroot.file("sys/kernel/debug/sched/migration_cost_ns", "500000\n")
    _, doc = doctor_json(sysroot, "--section", "host")
    r = rows(doc)["sched_migration_cost"]
    assert r["status"] == "warn" and r["value"] == "500000"
    assert r["fix"] == "echo 50000 > /sys/kernel/debug/sched/migration_cost_ns"


def test_uneven_cpuset_is_a_warning(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, cpuset="0-29")  # 24 CPUs on node 0, 6 on node 1
    write_npu_irqs(sysroot, A2_BDF, 192, plan_irq_cpus(sysroot, "--visible-devices", "4,5"))
    code, doc = doctor_json(sysroot, "--section", "host", "--visible-devices", "4,5")
    assert code == 0
    r = rows(doc)["cgroup_cpuset"]
    assert r["status"] == "warn"
    assert "node 0: 24, node 1: 6" in r["detail"]


def test_cgroup_v1_cpuset_of_own_cgroup(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, cpuset="0-47")
    (sysroot.root / "sys/fs/cgroup/cgroup.controllers").unlink()
    (sysroot.root / "sys/fs/cgroup/cpuset.cpus.effective").unlink()
    sysroot.file("proc/self/cgroup", "4:memory:/docker/abc\n3:cpuset:/docker/abc\n0::/\n")
    sysroot.file("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-191\n")
    sysroot.file("sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus", "0-47\n")
    _, doc = doctor_json(sysroot, "--section", "host", "--visible-devices", "4,5")
    r = rows(doc)["cgroup_cpuset"]
    assert r["status"] == "ok"
    assert r["value"] == "cgroup v1, cpuset 0-47 (48 of 192 online CPUs)"


# ---- workers ------------------------------------------------------------------------------------


def test_worker_bound_correctly_with_role_threads(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 4000, 4, vllm_threads(4000, "2-21", "22", "23"), session=4000)
    code, doc = doctor_json(sysroot, "--section", "workers")
    assert code == 0
    r = rows(doc)["worker:4000"]
    assert r["status"] == "ok" and r["fix"] is None
    assert r["expected"] == "vllm-ascend rank 4: main 2-21, acl 22, release 23 (node 0)"
    assert r["value"] == (
        "NPU 4 (VLLMWorker): 6 threads, on CPUs 2-23 (node 0); "
        "acl_thread on 22, release_thread on 23"
    )
    d = r["data"]
    assert d["matches_plan"] == "roles" and d["plan_rank"] == 4
    assert d["threads_total"] == 6 and d["threads_unbound"] == 0
    assert d["role_threads"]["acl_thread"] == [{"tid": 4010, "cpus": "22"}]
    assert d["masks"][0] == {"cpus": "2-21", "threads": 4}
    assert d["found_by"] == ["fd"] and d["device_files"] == ["/dev/davinci4"]
    assert "s3cret" not in d["command"] and "--api-key ***" in d["command"]
    assert doc["summary"]["fail"] == 0


def test_worker_on_vllm_plan_off_its_node_is_pointed_out(sysroot: SysrootBuilder) -> None:
    # NPU 5 is on node 0, but vLLM-Ascend gives the second NPU of the pair node 1 (24-47)
    tuned(sysroot, governors=False)
    worker(sysroot, 5000, 5, vllm_threads(5000, "26-45", "46", "47"), session=5000)
    code, doc = doctor_json(sysroot, "--section", "workers")
    assert code == 0
    r = rows(doc)["worker:5000"]
    assert r["status"] == "warn"
    assert r["data"]["matches_plan"] == "roles"
    assert "away from its NPU on node 0" in r["detail"]
    assert "vLLM-Ascend's own plan" in r["detail"]
    assert r["fix"] == "ascendtune bind --rank 5 --pid 5000 --policy numa-local"


def test_worker_with_all_threads_unbound_fails_with_bind_command(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 7000, 0, unbound_threads(7000, "0-191"), session=7000)
    code, doc = doctor_json(sysroot, "--section", "workers")
    assert code == 1
    r = rows(doc)["worker:7000"]
    assert r["status"] == "fail"
    assert r["fix"] == "ascendtune bind --rank 0 --pid 7000"
    assert "bound to nothing" in r["detail"]
    assert r["data"]["threads_unbound"] == 5 and r["data"]["matches_plan"] is None


def test_bind_command_repeats_plan_options(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 7000, 6, unbound_threads(7000, "0-191"), session=7000)
    _, doc = doctor_json(
        sysroot, "--section", "workers", "--policy", "numa-local", "--visible-devices", "6,7"
    )
    r = rows(doc)["worker:7000"]
    assert (
        r["fix"] == "ascendtune bind --rank 0 --pid 7000 --policy numa-local --visible-devices 6,7"
    )
    assert doc["policy"] == "numa-local"


def test_worker_partly_unbound_and_off_plan(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    threads = vllm_threads(4000, "2-21", "22", "23")
    threads[4005] = ("late-thread", "0-191")
    worker(sysroot, 4000, 4, threads, session=4000)
    worker(sysroot, 6000, 6, unbound_threads(6000, "50-71"), session=6000)
    _, doc = doctor_json(sysroot, "--section", "workers")
    r = rows(doc)
    assert r["worker:4000"]["status"] == "warn"
    assert "1 of 7 threads unbound (TIDs 4005)" in r["worker:4000"]["detail"]
    # bound to its node, but not as vLLM-Ascend would split it
    assert r["worker:6000"]["status"] == "warn"
    assert "not as the vllm-ascend plan" in r["worker:6000"]["detail"]
    assert r["worker:6000"]["fix"] == "ascendtune bind --rank 6 --pid 6000"


def test_two_services_on_one_numa_pair_overlap(sysroot: SysrootBuilder) -> None:
    # two independent services on NPUs 4 and 5 (one NUMA pair), each bound from its own cpuset
    tuned(sysroot, governors=False)
    worker(
        sysroot, 4000, 4, vllm_threads(4000, "2-9", "10", "11"), session=4000, parent=(400, "vllm")
    )
    worker(
        sysroot, 5000, 5, vllm_threads(5000, "8-19", "20", "21"), session=5000, parent=(500, "vllm")
    )
    code, doc = doctor_json(sysroot, "--section", "workers")
    assert code == 1
    r = rows(doc)
    ov = r["overlap:4000,5000"]
    assert ov["status"] == "fail"
    # "(different services)" alone did not say what made them two: the words say it
    assert ov["value"] == "PIDs 4000 and 5000 share CPUs 8-11 (two services: no common launcher)"
    assert ov["data"] == {
        "pids": [4000, 5000],
        "cpus": "8-11",
        "same_job": False,
        "kind": "different services",
    }
    assert "8600" in ov["detail"]
    # the vllm-ascend plan overlaps nothing for NPUs 4 and 5: bind both from it
    assert ov["fix"] == "ascendtune bind --rank 4 --pid 4000 && ascendtune bind --rank 5 --pid 5000"
    assert [c["id"] for c in doc["checks"]] == ["worker:4000", "worker:5000", "overlap:4000,5000"]


def test_two_ranks_of_one_job_overlap_is_reported_as_such(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    engine = (300, "VLLMEngineCore")
    worker(sysroot, 6000, 6, vllm_threads(6000, "50-69", "70", "71"), session=99, parent=engine)
    worker(sysroot, 6100, 7, vllm_threads(6100, "60-79", "80", "81"), session=99, parent=engine)
    _, doc = doctor_json(sysroot, "--section", "workers")
    ov = rows(doc)["overlap:6000,6100"]
    assert ov["status"] == "fail"
    assert ov["data"]["same_job"] is True and ov["data"]["kind"] == "ranks of one job"
    assert "two ranks of one job" in ov["detail"]


def test_two_services_started_from_one_shell_are_not_one_job(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 4000, 4, vllm_threads(4000, "2-9", "10", "11"), session=7, parent=(400, "vllm"))
    worker(
        sysroot, 5000, 5, vllm_threads(5000, "8-19", "20", "21"), session=7, parent=(500, "vllm")
    )
    # both API servers are children of one bash
    sysroot.file("proc/400/stat", "400 (vllm) S 77 400 7 0 -1 4194560 1 0\n")
    sysroot.file("proc/500/stat", "500 (vllm) S 77 500 7 0 -1 4194560 1 0\n")
    sysroot.file("proc/77/stat", "77 (bash) S 1 77 7 0 -1 4194560 1 0\n")
    _, doc = doctor_json(sysroot, "--section", "workers")
    assert rows(doc)["overlap:4000,5000"]["data"]["same_job"] is False


def test_unbound_pair_overlap_is_a_warning_pointing_at_the_worker(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 7000, 0, unbound_threads(7000, "0-191"), session=7000)
    worker(sysroot, 8000, 1, vllm_threads(8000, "170-189", "190", "191"), session=8000)
    _, doc = doctor_json(sysroot, "--section", "workers")
    ov = rows(doc)["overlap:7000,8000"]
    assert ov["status"] == "warn"
    assert "worker 7000 is unbound" in ov["detail"]


def test_worker_from_npu_smi_table_in_another_pid_namespace(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    sysroot.command("npu-smi_info", a2_npu_smi_info((5, 2290156, "VLLMEngineCore")))
    code, doc = doctor_json(sysroot, "--section", "workers")
    assert code == 0
    r = rows(doc)["worker:2290156"]
    assert r["status"] == "skip"
    assert r["data"]["found_by"] == ["npu-smi"] and r["data"]["devices"] == [5]
    assert "another PID namespace" in r["detail"]


def test_worker_found_by_npu_smi_and_fd_is_one_row(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    sysroot.command("npu-smi_info", a2_npu_smi_info((4, 4000, "VLLMWorker")))
    worker(sysroot, 4000, 4, vllm_threads(4000, "2-21", "22", "23"), session=4000)
    _, doc = doctor_json(sysroot, "--section", "workers")
    r = rows(doc)
    assert [c["id"] for c in doc["checks"]] == ["worker:4000"]
    assert r["worker:4000"]["data"]["found_by"] == ["npu-smi", "fd"]


def test_container_with_a_small_cpuset(sysroot: SysrootBuilder) -> None:
    # a container given NPUs 4 and 5 and CPUs 0-7: vLLM-Ascend's split leaves 4 CPUs per NPU
    b = tuned(sysroot, cpuset="0-7")
    b.command("npu-smi_info", npu_smi_info({4: "910B3", 5: "910B3"}, A2_BUS))
    b.command("npu-smi_info_-m", npu_smi_m([4, 5]))
    b.command("npu-smi_info_-t_topo", npu_smi_topo({4: "0-23", 5: "0-23"}))
    worker(b, 4000, 4, unbound_threads(4000, "0-7"), session=4000)
    # the 182b75ea reading (rank r takes the r-th busy NPU's pool); main-2026-09 looks NPU r up
    # in the container's numbering, finds none and skips binding instead
    code, doc = doctor_json(b, "--target", "main-2026-08")
    assert code == 1
    r = rows(doc)
    assert r["cgroup_cpuset"]["status"] == "fail"
    assert "insufficient" in r["cgroup_cpuset"]["detail"]
    assert r["cgroup_cpuset"]["value"] == "cgroup v2, cpuset 0-7 (8 of 192 online CPUs)"
    assert r["cgroup_cpuset"]["fix"].startswith("docker update --cpuset-cpus 0-23 ")
    w = r["worker:4000"]
    assert w["status"] == "fail"
    assert w["fix"] is None  # no plan fits, and binding to the whole cpuset changes nothing
    assert "no plan" not in (w["detail"] or "")
    assert doc["plan_error"] and doc["plan_mode"] is None


def test_worker_cpuset_from_its_cgroup(sysroot: SysrootBuilder) -> None:
    # the worker's container has cpuset 0-23: threads on all of it are unbound
    tuned(sysroot, governors=False)
    worker(sysroot, 4000, 4, unbound_threads(4000, "0-23"), session=4000)
    sysroot.file("proc/4000/cgroup", "0::/system.slice/docker-abc.scope\n")
    sysroot.file("sys/fs/cgroup/system.slice/docker-abc.scope/cpuset.cpus.effective", "0-23\n")
    _, doc = doctor_json(sysroot, "--section", "workers")
    r = rows(doc)["worker:4000"]
    assert r["status"] == "fail" and r["data"]["cpuset"] == "0-23"


# ---- bad input ----------------------------------------------------------------------------------


def test_sysroot_missing_half_its_files_gives_skips(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-7").allowed("0-7")
    sysroot.file("proc/sys/vm/swappiness", "10\n")
    sysroot.file("sys/kernel/mm/transparent_hugepage/enabled", "garbage\n")
    sysroot.file("proc/5/status", "Name:\tx\n")  # a process with no task dir, no fd
    code, doc = doctor_json(sysroot)
    assert code == 0
    st = statuses(doc)
    for cid in (
        "cpu_governor",
        "numa_balancing",
        "sched_migration_cost",
        "cap_sys_nice",
        "npu_smi",
        "numactl",
        "migratepages",
        "taskset",
        "arch",
        "locale",
        "irqbalance",
        "workers",
    ):
        assert st[cid] == "skip", cid
    r = rows(doc)
    assert r["numa_balancing"]["detail"].startswith("proc/sys/kernel/numa_balancing is missing")
    assert r["numactl"]["detail"] == "not recorded (meta.json has no tools.numactl)"
    assert st["swappiness"] == "warn"  # 10: low, not 0 or 1
    assert st["thp"] == "warn"


def test_sysroot_without_cpu_list_still_reports(sysroot: SysrootBuilder) -> None:
    sysroot.file("proc/sys/kernel/numa_balancing", "0\n")
    code, doc = doctor_json(sysroot)
    assert code == 0
    r = rows(doc)
    assert r["numa_balancing"]["status"] == "ok"
    assert r["cgroup_cpuset"]["status"] == "skip"
    assert "online is missing" in r["cgroup_cpuset"]["detail"]
    assert r["npu_smi"]["status"] == "skip"


def test_malformed_files_are_skips_not_crashes(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.file("proc/sys/vm/swappiness", "lots\n")
    sysroot.file("meta.json", "{not json")
    sysroot.file("proc/self/cgroup", "garbage")
    sysroot.file("sys/fs/cgroup/cpuset.cpus.effective", "x-y\n")
    worker(sysroot, 4000, 4, {4000: ("VLLMWorker", "2-21"), 4001: ("bad", "zz")}, session=1)
    sysroot.file("proc/4000/stat", "garbage")
    code, doc = doctor_json(sysroot)
    r = rows(doc)
    assert r["swappiness"]["status"] == "skip"
    assert r["worker:4000"]["data"]["threads_total"] == 1
    assert doc["hostname"] is None or isinstance(doc["hostname"], str)
    assert code in (0, 1)


def test_bad_options_are_usage_errors(sysroot: SysrootBuilder, cli: Cli) -> None:
    tuned(sysroot)
    res = cli("doctor", "--sysroot", str(sysroot.root), "--section", "gpus")
    assert res.exit_code == 2
    assert "--section gpus" in res.stderr
    res = cli("doctor", "--sysroot", str(sysroot.root), "--policy", "nope")
    assert res.exit_code == 2
    res = cli("doctor", "--sysroot", str(sysroot.root / "absent"))
    assert res.exit_code == 3


# ---- live ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("section", [None, "workers"])
def test_live_doctor_runs_and_reports_no_workers_as_skip(section: str | None, cli: Cli) -> None:
    args = ["doctor", "--json"] + (["--section", section] if section else [])
    res = cli(*args, env={"ASCENDTUNE_SYSROOT": ""})
    assert res.exit_code in (0, 1), res.output
    assert "Traceback" not in res.output
    doc = schemas.loads("doctor", res.stdout)
    assert doc["live"] is True
    workers = [c for c in doc["checks"] if c["section"] == "workers"]
    assert workers
    for c in workers:
        # this machine has no NPU: no worker, or only skips
        assert c["status"] == "skip" or c["id"].startswith(("worker:", "overlap:")), c
    if section is None:
        assert {c["id"] for c in doc["checks"]} >= set(HOST_CHECK_IDS)
        npu = rows(doc)["npu_smi"]
        assert npu["status"] in ("skip", "ok")


def test_live_report_renders(cli: Cli) -> None:
    res = cli("doctor", env={"ASCENDTUNE_SYSROOT": ""})
    assert res.exit_code in (0, 1), res.output
    assert res.stdout.strip().splitlines()[-1].startswith("doctor (this host): ")


def test_overlap_with_an_unbound_worker_fixes_only_that_worker(sysroot: SysrootBuilder) -> None:
    tuned(sysroot, governors=False)
    worker(sysroot, 7000, 0, unbound_threads(7000, "0-191"), session=7000)
    worker(sysroot, 8000, 6, vllm_threads(8000, "50-69", "70", "71"), session=8000)
    _, doc = doctor_json(sysroot, "--section", "workers")
    r = rows(doc)
    assert r["overlap:7000,8000"]["fix"] == "ascendtune bind --rank 0 --pid 7000"
    assert (
        r["worker:8000"]["expected"]
        == "vllm-ascend rank 6: main 50-69, acl 70, release 71 (node 2)"
    )
