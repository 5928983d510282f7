"""Gather what `doctor`'s host rules judge: kernel knobs, cgroup and capabilities, tools, the NPU
interrupts and their affinity, all read through a Root (live `/` or a sysroot); the workers come
from ascendtune.host.workers.

`doctor_paths` lists the same reads as paths, so `snapshot` captures exactly what doctor needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from ascendtune.core import vendors
from ascendtune.core.doctor import (
    TOOLS,
    FileValue,
    HostFacts,
)
from ascendtune.core.errors import AscendtuneError, ParseError
from ascendtune.core.model import Host
from ascendtune.core.parsers.interrupts import (
    NPU_IRQ_NAMES,
    affinity_paths,
    irqs_to_read,
    msi_irq_numbers,
    parse_interrupts,
)
from ascendtune.host import vllm_detect
from ascendtune.host.cgroup import cgroup_version, cpuset_paths, resolve_cpuset
from ascendtune.host.reader import read_host
from ascendtune.host.roots import Root
from ascendtune.host.workers import ProcessScan, meta_of, status_int

# worker discovery lives in host.workers; these names stay importable here for the application
# layer's doctor and worker_pids, which have not moved to it yet
from ascendtune.host.workers import find_workers as find_workers
from ascendtune.host.workers import scan_processes as scan_processes
from ascendtune.host.workers import scanned_note as scanned_note

CPU_DIR = "sys/devices/system/cpu"
NUMA_BALANCING = "proc/sys/kernel/numa_balancing"
SWAPPINESS = "proc/sys/vm/swappiness"
SWAPS = "proc/swaps"
SCHED_MIGRATION = "proc/sys/kernel/sched_migration_cost_ns"
SCHED_MIGRATION_DEBUGFS = "sys/kernel/debug/sched/migration_cost_ns"  # kernels >= 5.13
THP = "sys/kernel/mm/transparent_hugepage/enabled"
SELF_STATUS = "proc/self/status"
SELF_CGROUP = "proc/self/cgroup"
CGROUP2_MARK = "sys/fs/cgroup/cgroup.controllers"
CGROUP2_CPUSET = "cpuset.cpus.effective"
CGROUP1_CPUSET_DIR = "sys/fs/cgroup/cpuset"
CGROUP1_CPUSET = "cpuset.effective_cpus"
OS_RELEASE = "etc/os-release"
META = "meta.json"
INTERRUPTS = "proc/interrupts"
PCI_DIR = "sys/bus/pci/devices"
HUAWEI_VENDOR = "0x19e5"
TUNED_PROFILE = "etc/tuned/active_profile"
TUNED_DIR = "usr/lib/tuned"
# RHEL / openEuler, then Debian / Ubuntu
IRQBALANCE_CONFIGS = ("etc/sysconfig/irqbalance", "etc/default/irqbalance")

# Fixed files doctor reads (per-CPU governors, processes and cgroup files come on top).
KNOB_PATHS = (
    NUMA_BALANCING,
    SWAPPINESS,
    SWAPS,
    SCHED_MIGRATION,
    SCHED_MIGRATION_DEBUGFS,
    THP,
    SELF_STATUS,
    SELF_CGROUP,
    CGROUP2_MARK,
    f"sys/fs/cgroup/{CGROUP2_CPUSET}",
    f"{CGROUP1_CPUSET_DIR}/{CGROUP1_CPUSET}",
    OS_RELEASE,
    META,
    INTERRUPTS,
    TUNED_PROFILE,
    *IRQBALANCE_CONFIGS,
)
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")


# ---- the host -----------------------------------------------------------------------------------


def _governors(root: Root) -> dict[int, str]:
    out: dict[int, str] = {}
    for entry in root.listdir(CPU_DIR) or []:
        m = re.fullmatch(r"cpu(\d+)", entry)
        if not m:
            continue
        text = root.read_text(f"{CPU_DIR}/{entry}/cpufreq/scaling_governor")
        if text is not None and text.strip():
            out[int(m.group(1))] = text.strip()
    return out


def tools_of(root: Root, meta: Mapping[str, object]) -> dict[str, str | None] | None:
    recorded = meta.get("tools")
    if isinstance(recorded, dict):
        return {k: (str(v) if v else None) for k, v in recorded.items() if isinstance(k, str)}
    if not root.live:
        return None
    from ascendtune.host import runner

    out: dict[str, str | None] = {}
    vendor_fallbacks = {t: p.fallbacks(t) for p in vendors.profiles() for t in p.tools}
    for name in TOOLS:
        out[name] = runner.which(name, vendor_fallbacks.get(name) or (f"/usr/sbin/{name}",))
    return out


def _env(root: Root, meta: Mapping[str, object]) -> dict[str, str] | None:
    recorded = meta.get("env")
    if isinstance(recorded, dict):
        return {k: str(v) for k, v in recorded.items() if isinstance(k, str) and v is not None}
    if not root.live:
        return None
    return {k: os.environ[k] for k in LOCALE_VARS if os.environ.get(k)}


def _arch(root: Root, meta: Mapping[str, object]) -> str | None:
    arch = meta.get("arch")
    if arch is None and root.live:
        import platform

        return platform.machine() or None
    return None if arch is None else str(arch)


def _os_ids(root: Root) -> tuple[str, ...]:
    text = root.read_text(OS_RELEASE)
    if text is None:
        return ()
    ids: list[str] = []
    for line in text.splitlines():
        key, _, val = line.partition("=")
        if key.strip() in ("ID", "ID_LIKE"):
            ids += val.strip().strip('"').lower().split()
    return tuple(ids)


def _npu_msi_dirs(root: Root) -> dict[str, str]:
    """Huawei PCI address -> its msi_irqs folder, where the folder is readable."""
    out: dict[str, str] = {}
    for bdf in root.listdir(PCI_DIR) or []:
        vendor = (root.read_text(f"{PCI_DIR}/{bdf}/vendor") or "").strip().lower()
        if vendor == HUAWEI_VENDOR and root.listdir(f"{PCI_DIR}/{bdf}/msi_irqs") is not None:
            out[bdf.lower()] = f"{PCI_DIR}/{bdf}/msi_irqs"
    return out


def _npu_irq_numbers(text: str | None) -> list[int]:
    """The IRQs whose affinity doctor reads: the NPU SQ/CQ lines of proc/interrupts."""
    if text is None:
        return []
    try:
        return irqs_to_read(parse_interrupts(text, source=INTERRUPTS, keep=NPU_IRQ_NAMES))
    except ParseError:
        return []


def _irq_facts(
    root: Root, text: str | None
) -> tuple[dict[int, tuple[str | None, str | None]], dict[str, frozenset[int]]]:
    aff: dict[int, tuple[str | None, str | None]] = {}
    for irq in _npu_irq_numbers(text):
        list_path, mask_path = affinity_paths(irq)
        lt = root.read_text(list_path)
        aff[irq] = (lt, root.read_text(mask_path) if lt is None else None)
    msi = {bdf: msi_irq_numbers(root.listdir(d) or []) for bdf, d in _npu_msi_dirs(root).items()}
    return aff, msi


def _tuned(root: Root, tools: Mapping[str, str | None] | None) -> bool | None:
    if tools is not None and tools.get("tuned-adm"):
        return True
    if root.read_text(TUNED_PROFILE) is not None or root.listdir(TUNED_DIR) is not None:
        return True
    if tools is not None and "tuned-adm" in tools:
        return False
    return None if not root.live else False


def gather_host_facts(root: Root, scan: ProcessScan | None = None) -> HostFacts:
    """scan: the pass over proc/ of this root (scan_processes with irqbalance), read here when
    not given."""
    if scan is None:
        scan = scan_processes(root, devices=False)
    meta = meta_of(root)
    status = root.read_text(SELF_STATUS)
    migration = FileValue(SCHED_MIGRATION, root.read_text(SCHED_MIGRATION))
    if migration.text is None:
        debugfs = root.read_text(SCHED_MIGRATION_DEBUGFS)
        if debugfs is not None:
            migration = FileValue(SCHED_MIGRATION_DEBUGFS, debugfs)
    own = resolve_cpuset(root)
    tools = tools_of(root, meta)
    interrupts = root.read_text(INTERRUPTS)
    irq_aff, msi = _irq_facts(root, interrupts)
    profile = root.read_text(TUNED_PROFILE)
    return HostFacts(
        root=root.describe(),
        live=root.live,
        governors=_governors(root),
        numa_balancing=FileValue(NUMA_BALANCING, root.read_text(NUMA_BALANCING)),
        swappiness=FileValue(SWAPPINESS, root.read_text(SWAPPINESS)),
        swaps=root.read_text(SWAPS),
        sched_migration_cost=migration,
        thp=FileValue(THP, root.read_text(THP)),
        irqbalance_pids=scan.irqbalance,
        cgroup_version=own.version if own is not None else cgroup_version(root),
        cgroup_cpuset=own.cpus if own is not None else None,
        cap_eff=status_int(status, "CapEff", 16),
        tools=tools,
        arch=_arch(root, meta),
        env=_env(root, meta),
        os_ids=_os_ids(root),
        uid=status_int(status, "Uid"),
        cgroup_cpuset_file=own.file if own is not None else None,
        interrupts=interrupts,
        irq_affinity=irq_aff,
        msi_irqs=msi,
        tuned=_tuned(root, tools),
        tuned_profile=profile.strip() or None if profile is not None else None,
        irqbalance_config=next((p for p in IRQBALANCE_CONFIGS if root.exists(p)), None),
    )


# ---- what snapshot must capture -----------------------------------------------------------------


def _existing(root: Root, paths: Iterable[str | None]) -> list[str]:
    return [p for p in paths if p and root.read_text(p) is not None]


def doctor_paths(root: Root, host: Host | None = None) -> list[str]:
    """Every path, relative to root, that `doctor` reads on this host and that exists.

    Files (knobs, per-CPU governors, proc/self/{status,cgroup,mountinfo}, etc/os-release, the
    cpuset files the cgroup resolver used, irqbalance's proc/PID/comm, proc/interrupts with
    proc/irq/N/smp_affinity_list (or smp_affinity) of the NPU SQ/CQ interrupts, each Huawei
    device's msi_irqs/N entries, the tuned profile and irqbalance config) and, for each worker,
    proc/PID/{status,comm,cmdline,stat,cgroup}, proc/PID/task/TID/{status,comm}, its parents'
    proc/PPID/{stat,comm} and the cpuset files its cgroup resolved to. Entries under proc/PID/fd/ are symbolic links (to
    /dev/davinciN): capture them as links. The SPEC section 2 files `read_host` needs are not
    repeated here. Workers come from open device files and from the npu-smi process table of
    `host`; without `host` it is read here (on a live root that runs npu-smi again).
    """
    if host is None:
        try:
            host = read_host(root)
        except AscendtuneError:
            host = None
    paths: list[str] = []
    paths += _existing(root, KNOB_PATHS)
    for entry in root.listdir(CPU_DIR) or []:
        if re.fullmatch(r"cpu\d+", entry):
            paths += _existing(root, [f"{CPU_DIR}/{entry}/cpufreq/scaling_governor"])
    paths += cpuset_paths(root)
    scan = scan_processes(root)
    paths += [f"proc/{p}/comm" for p in scan.irqbalance or ()]
    for irq in _npu_irq_numbers(root.read_text(INTERRUPTS)):
        paths += _existing(root, affinity_paths(irq))
    for d in _npu_msi_dirs(root).values():
        paths += _existing(root, [f"{d}/{e}" for e in root.listdir(d) or []])
    for w in find_workers(root, host, scan):
        if not w.present:
            continue
        base = f"proc/{w.pid}"
        paths += _existing(
            root, [f"{base}/{f}" for f in ("status", "comm", "cmdline", "stat", "cgroup")]
        )
        for fd in root.listdir(f"{base}/fd") or []:
            target = root.readlink(f"{base}/fd/{fd}")
            if target is not None and vendors.by_device_file(target):
                paths.append(f"{base}/fd/{fd}")
        for tid in root.listdir(f"{base}/task") or []:
            paths += _existing(root, [f"{base}/task/{tid}/status", f"{base}/task/{tid}/comm"])
        for a in w.ancestors:
            paths += _existing(root, [f"proc/{a.pid}/stat", f"proc/{a.pid}/comm"])
        paths += cpuset_paths(root, w.pid)
        paths += vllm_detect.detect_paths(root, w.pid)  # which vLLM-Ascend it runs
    return list(dict.fromkeys(paths))
