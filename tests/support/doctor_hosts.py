"""Doctor scenarios: an Atlas 800I A2 tuned as the vLLM-Ascend guide asks or left at its
defaults, vLLM workers holding NPUs, and `doctor --json` on them (tests/cli/test_doctor*.py,
tests/core/test_doctor_rules.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ascendtune.synth.spec import Status
from ascendtune.synth.standard import atlas_800i_a2
from ascendtune.synth.text import status_text
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI
from tests.support.hosts import A2_BUS
from tests.support.irqhosts import plan_irq_cpus, write_npu_irqs

TOOLS_ALL = {
    "npu-smi": "/usr/local/sbin/npu-smi",
    "numactl": "/usr/bin/numactl",
    "migratepages": "/usr/bin/migratepages",
    "taskset": "/usr/bin/taskset",
}


A2_BDF = {n: f"0000:{bus.lower()}:00.0" for n, bus in A2_BUS.items()}


CAP_ALL = "000001ffffffffff"


CAP_NO_NICE = "000001ffff7fffff"  # bit 23 (CAP_SYS_NICE) cleared


SWAPS_ACTIVE = (
    "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
    "/swap.img                               file\t\t8388604\t\t0\t\t-2\n"
)


SWAPS_NONE = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


def doctor_json(b: SysrootBuilder, *extra: str) -> tuple[int, dict[str, Any]]:
    res = CLI("doctor", "--sysroot", str(b.root), "--json", *extra)
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, schemas.loads("doctor", res.stdout)


def rows(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in doc["checks"]}


def statuses(doc: Mapping[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in doc["checks"]}


def self_status(cpus: str = "0-191", cap: str = CAP_ALL, uid: int = 0) -> str:
    return status_text(Status("ascendtune", cpus, uid=uid, caps=cap, mems="0-7"))


def atlas_a2(b: SysrootBuilder, *, cpuset: str) -> SysrootBuilder:
    """tests.support.hosts.atlas_a2 without per-CPU topology files (doctor does not read SMT; a slow
    filesystem makes every file count)."""
    return b.spec(replace(atlas_800i_a2(allowed=cpuset, topology=False), meta=None))


def tuned(b: SysrootBuilder, *, cpuset: str = "0-191", governors: bool = True) -> SysrootBuilder:
    """An Atlas 800I A2 tuned as the vLLM-Ascend guide asks (governors=False: no cpufreq files,
    for worker tests, which do not look at them)."""
    atlas_a2(b, cpuset=cpuset)
    for c in range(192 if governors else 0):
        b.file(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor", "performance\n")
    b.file("proc/sys/kernel/numa_balancing", "0\n")
    b.file("proc/sys/vm/swappiness", "0\n")
    b.file("proc/swaps", SWAPS_ACTIVE)
    b.file("proc/sys/kernel/sched_migration_cost_ns", "50000\n")
    b.file("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n")
    b.file("proc/self/status", self_status(cpuset))
    b.file("proc/self/cgroup", "0::/\n")
    b.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n")
    b.file("sys/fs/cgroup/cpuset.cpus.effective", cpuset + "\n")
    b.file("etc/os-release", 'NAME="openEuler"\nID="openEuler"\nVERSION_ID="22.03"\n')
    b.meta(
        arch="aarch64",
        hostname="a2",
        tools=TOOLS_ALL,
        env={"LANG": "en_US.UTF-8"},
        proc_scanned=True,
    )
    # the NPU interrupts where vLLM-Ascend pins them (the plan's IRQ CPUs of each rank)
    write_npu_irqs(b, A2_BDF, 192, plan_irq_cpus(b))
    return b


def worker(
    b: SysrootBuilder,
    pid: int,
    npu: int,
    threads: dict[int, tuple[str, str]],
    *,
    session: int,
    parent: tuple[int, str] = (100, "vllm"),
    uid: int = 0,
) -> None:
    """A vLLM worker holding /dev/davinci{npu}, with its parent and session in proc/PID/stat."""
    ppid, pcomm = parent
    b.proc(
        pid,
        comm="VLLMWorker",
        cmdline=["python3", "-m", "vllm.entrypoints.openai.api_server", "--api-key", "s3cret"],
        uid=uid,
        cpus_allowed=threads[pid][1],
        threads=threads,
        fds={3: "/dev/davinci_manager", 20: f"/dev/davinci{npu}", 21: "/dev/devmm_svm"},
    )
    b.file(f"proc/{pid}/stat", f"{pid} (VLLMWorker) S {ppid} {pid} {session} 0 -1 4194560 1 0\n")
    b.file(f"proc/{ppid}/stat", f"{ppid} ({pcomm}) S 1 {ppid} {session} 0 -1 4194560 1 0\n")
    b.file(f"proc/{ppid}/comm", pcomm + "\n")


def vllm_threads(
    pid: int, main: str, acl: str, release: str, extra: int = 3
) -> dict[int, tuple[str, str]]:
    """Threads as vLLM-Ascend leaves them: all on main, acl_thread and release_thread apart."""
    threads = {pid: ("VLLMWorker", main)}
    for i in range(1, extra + 1):
        threads[pid + i] = (f"python3-{i}", main)
    threads[pid + 10] = ("acl_thread", acl)
    threads[pid + 11] = ("release_thread", release)
    return threads


def unbound_threads(pid: int, cpus: str, n: int = 5) -> dict[int, tuple[str, str]]:
    return {pid + i: ("VLLMWorker" if i == 0 else f"worker-{i}", cpus) for i in range(n)}


def untuned(b: SysrootBuilder) -> SysrootBuilder:
    tuned(b, cpuset="0-29")  # uneven: 24 CPUs on node 0, 6 on node 1
    for c in range(192):
        gov = "powersave" if c < 96 else "performance"
        b.file(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor", gov + "\n")
    b.file("proc/sys/kernel/numa_balancing", "1\n")
    b.file("proc/sys/vm/swappiness", "60\n")
    b.file("proc/sys/kernel/sched_migration_cost_ns", "500000\n")
    b.file("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    b.file("proc/self/status", self_status("0-29", cap=CAP_NO_NICE))
    b.proc(1312, comm="irqbalance", cmdline=["/usr/sbin/irqbalance", "--foreground"])
    (b.root / "commands" / "npu-smi_info.txt").unlink()
    (b.root / "commands" / "npu-smi_info_-m.txt").unlink()
    (b.root / "commands" / "npu-smi_info_-t_topo.txt").unlink()
    b.file("etc/os-release", 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n')
    b.meta(
        arch="x86_64",
        tools=dict.fromkeys(TOOLS_ALL),
        env={"LANG": "zh_CN.UTF-8"},
        proc_scanned=True,
    )
    return b
