"""doctor's pure rules (ascendtune.core.doctor) and its fact gathering (ascendtune.host.facts)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.doctor import (
    HOST_CHECK_IDS,
    HOST_RULES,
    Ancestor,
    Check,
    DoctorInput,
    HostFacts,
    PlanFacts,
    ThreadFacts,
    WorkerFacts,
    exit_code,
    host_checks,
    redact_command,
    same_job,
    summary,
    worker_checks,
)
from ascendtune.core.doctor.host_rules import declared_reads
from ascendtune.host.facts import doctor_paths, gather_host_facts
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from ascendtune.host.workers import find_workers
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI
from tests.support.doctor_hosts import tuned, unbound_threads, vllm_threads, worker

SPEC_IDS = (
    "cpu_governor",
    "numa_balancing",
    "swappiness",
    "sched_migration_cost",
    "thp",
    "irqbalance",
    "cgroup_cpuset",
    "cap_sys_nice",
    "npu_smi",
    "numactl",
    "migratepages",
    "arch",
)


def empty_facts(
    governors: dict[int, str] | None = None, cap_eff: int | None = None, **kw: object
) -> HostFacts:
    """Facts of a host where no declared file exists (governors and CapEff given as the files
    that say them)."""
    files: dict[str, str | None] = {p: None for p in declared_reads() if "[" not in p}
    for cpu, gov in (governors or {}).items():
        files[f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"] = gov + "\n"
    if cap_eff is not None:
        files["proc/self/status"] = f"CapEff:\t{cap_eff:016x}\n"
    base: dict[str, object] = dict(
        root="/x",
        live=False,
        files=files,
        irqbalance_pids=None,
        cgroup_version=None,
        cgroup_cpuset=None,
        tools=None,
        arch=None,
        env=None,
    )
    base.update(kw)
    return HostFacts(**base)  # type: ignore[arg-type]


def test_spec_check_ids_all_present_in_order() -> None:
    assert [i for i in HOST_CHECK_IDS if i in SPEC_IDS] == list(SPEC_IDS)
    assert len(set(HOST_CHECK_IDS)) == len(HOST_CHECK_IDS)
    assert all(r.expected for r in HOST_RULES)


def test_nothing_known_is_all_skips_without_fixes() -> None:
    inp = DoctorInput(empty_facts(), None, "no host", PlanFacts(error="no host"))
    checks = host_checks(inp)
    assert {c.status for c in checks} == {"skip"}
    assert all(c.fix is None and c.detail for c in checks)
    assert exit_code(checks) == 0


def test_governor_single_bad_cpu_fails() -> None:
    govs = dict.fromkeys(range(8), "performance") | {3: "schedutil"}
    inp = DoctorInput(empty_facts(governors=govs), None, None, PlanFacts())
    c = host_checks(inp)[0]
    assert c.id == "cpu_governor" and c.status == "fail"
    assert c.value == "performance on 0-2,4-7; schedutil on 3"


def test_locale_variants() -> None:
    def status(env: dict[str, str]) -> str:
        inp = DoctorInput(empty_facts(env=env), None, None, PlanFacts())
        return next(c for c in host_checks(inp) if c.id == "locale").status

    assert status({}) == "ok"
    assert status({"LANG": "en_US.UTF-8"}) == "ok"
    assert status({"LANG": "zh_CN.UTF-8", "LC_ALL": "C.UTF-8"}) == "ok"  # LC_ALL wins
    assert status({"LC_ALL": "de_DE.UTF-8"}) == "warn"


def test_capability_bit_23() -> None:
    def status(cap: int) -> str:
        inp = DoctorInput(empty_facts(cap_eff=cap), None, None, PlanFacts())
        return next(c for c in host_checks(inp) if c.id == "cap_sys_nice").status

    assert status(1 << 23) == "ok"
    assert status((1 << 41) - 1 - (1 << 23)) == "warn"


def test_redact_command() -> None:
    argv = ["vllm", "serve", "m", "--api-key", "abc", "--hf-token=xyz", "--port", "8000"]
    assert redact_command(argv) == "vllm serve m --api-key *** --hf-token=*** --port 8000"
    assert redact_command(["x" * 300]).endswith("…")
    assert len(redact_command(["x" * 300])) == 160


def w(pid: int, **kw: object) -> WorkerFacts:
    return WorkerFacts(pid=pid, devices=(0,), found_by=("fd",), **kw)  # type: ignore[arg-type]


def test_same_job() -> None:
    engine = Ancestor(300, "VLLMEngineCore")
    api = Ancestor(200, "vllm")
    shell = Ancestor(77, "bash")
    # TP ranks: one EngineCore parent
    assert same_job(w(1, ancestors=(engine, api)), w(2, ancestors=(engine, api))) is True
    # DP x TP: different EngineCores, one API server
    e2 = Ancestor(301, "VLLMEngineCore")
    assert same_job(w(1, ancestors=(engine, api)), w(2, ancestors=(e2, api))) is True
    # two services started from one shell
    a2 = Ancestor(201, "vllm")
    assert same_job(w(1, ancestors=(api, shell)), w(2, ancestors=(a2, shell))) is False
    # other sessions or cgroups: never one job
    assert (
        same_job(w(1, session=1, ancestors=(engine,)), w(2, session=2, ancestors=(engine,)))
        is False
    )
    assert same_job(w(1, cgroup="/a"), w(2, cgroup="/b")) is False
    assert same_job(w(1), w(2)) is None
    # rank 0 is the parent of the others (old single-controller layout)
    assert same_job(w(200, ancestors=(shell,)), w(2, ancestors=(Ancestor(200, "python3"), shell)))


@given(
    cpuset=st.frozensets(st.integers(0, 31), min_size=1),
    masks=st.lists(st.frozensets(st.integers(0, 31), min_size=1), min_size=1, max_size=6),
)
def test_worker_fails_exactly_when_every_thread_is_unbound(
    cpuset: frozenset[int], masks: list[frozenset[int]]
) -> None:
    threads = tuple(ThreadFacts(100 + i, f"t{i}", m) for i, m in enumerate(masks))
    worker = WorkerFacts(100, (0,), ("fd",), threads=threads, cpuset=cpuset)
    inp = DoctorInput(empty_facts(), None, None, PlanFacts(error="none"))
    [check] = worker_checks([worker], inp, "")
    all_unbound = all(m >= cpuset for m in masks)
    assert (check.status == "fail") == all_unbound
    assert check.data["threads_unbound"] == sum(1 for m in masks if m >= cpuset)
    assert check.data["cpus"] == format_cpulist(frozenset().union(*masks))


@given(st.lists(st.sampled_from(["ok", "warn", "fail", "skip"]), max_size=8))
def test_exit_code_and_summary(stats: list[str]) -> None:
    checks = [Check(f"c{i}", s, None, None, None, "host") for i, s in enumerate(stats)]  # type: ignore[arg-type]
    assert exit_code(checks) == (1 if "fail" in stats else 0)
    assert sum(summary(checks).values()) == len(stats)


# ---- facts --------------------------------------------------------------------------------------


def test_stat_with_spaces_and_parentheses_in_comm(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    worker(sysroot, 4000, 4, vllm_threads(4000, "2-21", "22", "23"), session=42)
    sysroot.file("proc/4000/stat", "4000 (a (b) c) S 100 4000 42 0 -1 4194560 1 0\n")
    root = DirRoot(sysroot.root)
    [wf] = find_workers(root, read_host(root))
    assert wf.session == 42 and wf.ancestors[0] == Ancestor(100, "vllm")
    assert wf.devices == (4,) and wf.comm == "VLLMWorker"
    assert [t.name for t in wf.threads][-2:] == ["acl_thread", "release_thread"]


def test_nvidia_worker_found_by_device_file(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-7").allowed("0-7")
    sysroot.proc(
        10, comm="python", cpus_allowed="0-7", fds={4: "/dev/nvidia3", 5: "/dev/nvidiactl"}
    )
    [wf] = find_workers(DirRoot(sysroot.root), None)
    assert wf.vendor == "nvidia" and wf.devices == (3,) and wf.device_files == ("/dev/nvidia3",)


def test_gather_host_facts_reads_meta_tools_and_env(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    facts = gather_host_facts(DirRoot(sysroot.root))
    assert facts.tools is not None and facts.tools["numactl"] == "/usr/bin/numactl"
    assert facts.env == {"LANG": "en_US.UTF-8"}
    assert facts.arch == "aarch64" and facts.cgroup_version == 2
    assert facts.cap_eff is not None and facts.cap_eff >> 23 & 1
    assert facts.os_ids == ("openeuler",) and facts.uid == 0
    assert len(facts.governors) == 192 and facts.irqbalance_pids == ()


def test_live_facts_do_not_crash() -> None:
    root = DirRoot("/", live=True)
    facts = gather_host_facts(root)
    assert facts.live and facts.tools is not None and set(facts.tools) >= {"numactl", "taskset"}
    assert facts.irqbalance_pids is not None
    paths = doctor_paths(root)
    assert "proc/self/status" in paths
    assert all(not p.startswith("/") for p in paths)


# ---- doctor_paths: a capture of exactly these paths replays the report -------------------------

# what `read_host` reads (SPEC section 2), which a snapshot captures anyway
SPEC_TREES = ("sys/devices/system/cpu", "sys/devices/system/node", "sys/bus/pci", "commands")


def _copy(src: Path, dst: Path, rel: str) -> None:
    s, d = src / rel, dst / rel
    d.parent.mkdir(parents=True, exist_ok=True)
    if s.is_symlink():
        if not d.is_symlink():
            os.symlink(os.readlink(s), d)
    elif s.is_dir():
        shutil.copytree(s, d, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copyfile(s, d)


def _doctor(root: Path) -> dict[str, object]:
    res = CLI("doctor", "--sysroot", str(root), "--json")
    assert res.exit_code in (0, 1), res.output
    doc = schemas.loads("doctor", res.stdout)
    doc.pop("root")
    doc.pop("host")  # where it was read: the copy lies elsewhere by design
    return doc  # type: ignore[no-any-return]


def test_doctor_paths_capture_replays_the_report(tmp_path: Path) -> None:
    b = tuned(SysrootBuilder(tmp_path / "host"))
    worker(b, 4000, 4, vllm_threads(4000, "2-9", "10", "11"), session=4000, parent=(400, "vllm"))
    worker(b, 5000, 5, vllm_threads(5000, "8-19", "20", "21"), session=5000, parent=(500, "vllm"))
    worker(b, 7000, 0, unbound_threads(7000, "0-191"), session=7000)
    b.file("proc/4000/cgroup", "0::/svc/a\n").file(
        "sys/fs/cgroup/svc/a/cpuset.cpus.effective", "0-23\n"
    )
    b.proc(1312, comm="irqbalance")
    b.proc(9999, comm="sshd", fds={0: "/dev/null"})  # not doctor's business
    root = DirRoot(b.root)
    paths = doctor_paths(root, read_host(root))
    assert "proc/1312/comm" in paths and not any(p.startswith("proc/9999") for p in paths)
    assert "proc/4000/fd/20" in paths and "proc/4000/fd/3" not in paths
    assert "proc/4000/task/4010/comm" in paths and "proc/400/stat" in paths
    assert "sys/fs/cgroup/svc/a/cpuset.cpus.effective" in paths
    assert "proc/sys/vm/swappiness" in paths and "meta.json" in paths
    assert "sys/devices/system/cpu/cpu7/cpufreq/scaling_governor" in paths
    assert len(paths) == len(set(paths))

    copy = tmp_path / "capture"
    for rel in (*SPEC_TREES, *paths):
        _copy(b.root, copy, rel)
    assert _doctor(copy) == _doctor(b.root)


def test_doctor_paths_reads_the_npu_smi_table_itself(sysroot: SysrootBuilder) -> None:
    # a worker npu-smi lists whose open files this user may not read (no fd links)
    from tests.support.hosts import a2_npu_smi_info

    tuned(sysroot, governors=False)
    sysroot.command("npu-smi_info", a2_npu_smi_info((4, 4000, "VLLMWorker")))
    sysroot.proc(4000, comm="VLLMWorker", cpus_allowed="2-21")
    paths = doctor_paths(DirRoot(sysroot.root))
    assert "proc/4000/status" in paths and "proc/4000/task/4000/status" in paths
