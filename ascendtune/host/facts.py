"""Gather what `doctor` judges: kernel knobs, cgroup and capabilities, tools, the NPU
interrupts and their affinity, and the running NPU workers with their threads' masks, all read
through a Root (live `/` or a sysroot).

`doctor_paths` lists the same reads as paths, so `snapshot` captures exactly what doctor needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from ascendtune.core import vendors
from ascendtune.core.cgroup import parse_proc_cgroup
from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.doctor import (
    TOOLS,
    Ancestor,
    FileValue,
    HostFacts,
    ThreadFacts,
    WorkerFacts,
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
from ascendtune.host.reader import read_host, read_meta, read_status_list
from ascendtune.host.roots import Root

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


def _pids(root: Root) -> list[int] | None:
    entries = root.listdir("proc")
    if entries is None:
        return None
    return sorted(int(e) for e in entries if (e.isascii() and e.isdigit()))


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


def _status_int(status: str | None, key: str, base: int = 10) -> int | None:
    if status is None:
        return None
    raw = read_status_list(status, key)
    if not raw:
        return None
    try:
        return int(raw.split()[0], base)
    except ValueError:
        return None


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


def proc_scanned(root: Root, meta: Mapping[str, object] | None = None) -> bool:
    """Whether root shows the host's processes: always live; in a sysroot, when `snapshot`
    recorded `"proc_scanned": true` in meta.json (it captures only the processes doctor reads,
    so an absent process there means absent on the host)."""
    if root.live:
        return True
    return bool((meta if meta is not None else _meta(root)).get("proc_scanned"))


Held = list[tuple[vendors.VendorProfile, int, str]]


class ProcessScan(NamedTuple):
    """One pass over proc/: what doctor reads of every process, each read once.

    pids: the PID folders, sorted (None: no process list under this root). irqbalance: the
    PIDs whose comm is irqbalance (None when not read, or the root records no process scan).
    held: PID -> the accelerator device files it holds open (processes holding none left out).
    """

    pids: list[int] | None
    irqbalance: tuple[int, ...] | None
    held: dict[int, Held]


def scan_processes(root: Root, *, irqbalance: bool = True, devices: bool = True) -> ProcessScan:
    """Read proc/PID/comm (irqbalance) and the targets of proc/PID/fd (devices) of every
    process in one pass; a process holding no accelerator device file costs nothing more."""
    pids = _pids(root)
    if pids is None:
        return ProcessScan(None, None, {})
    want_comm = irqbalance and proc_scanned(root)
    if not want_comm and not devices:
        return ProcessScan(pids, None, {})
    if devices:
        names = [str(p) for p in pids]
        rows = root.read_children("proc", names, "comm" if want_comm else None, "fd")
    else:
        rows = [(root.read_text(f"proc/{p}/comm"), None) for p in pids]
    # most open files are sockets, pipes and plain files: only /dev/<device_file>... can match
    wanted = tuple(f"/dev/{p.device_file}" for p in vendors.profiles())
    irq: list[int] = []
    held: dict[int, Held] = {}
    for pid, (comm, targets) in zip(pids, rows, strict=True):
        if comm is not None and comm.strip() == "irqbalance":
            irq.append(pid)
        if targets and any(t.startswith(wanted) for t in targets):
            got = _held_devices(targets, wanted)
            if got:
                held[pid] = got
    return ProcessScan(pids, tuple(irq) if want_comm else None, held)


def _meta(root: Root) -> dict[str, object]:
    try:
        return read_meta(root)
    except AscendtuneError:
        return {}


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
    meta = _meta(root)
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
        cap_eff=_status_int(status, "CapEff", 16),
        tools=tools,
        arch=_arch(root, meta),
        env=_env(root, meta),
        os_ids=_os_ids(root),
        uid=_status_int(status, "Uid"),
        cgroup_cpuset_file=own.file if own is not None else None,
        interrupts=interrupts,
        irq_affinity=irq_aff,
        msi_irqs=msi,
        tuned=_tuned(root, tools),
        tuned_profile=profile.strip() or None if profile is not None else None,
        irqbalance_config=next((p for p in IRQBALANCE_CONFIGS if root.exists(p)), None),
    )


# ---- workers ------------------------------------------------------------------------------------


def _held_devices(targets: list[str], wanted: tuple[str, ...]) -> Held:
    """(vendor, N, path) of every accelerator device file (/dev/davinciN, /dev/nvidiaN) among
    a process's open files (targets): one per device a worker uses; control nodes
    (davinci_manager, nvidiactl) are not. wanted: the /dev/<device_file> prefixes."""
    out: Held = []
    for target in targets:
        if not target.startswith(wanted):
            continue
        hit = vendors.by_device_file(target)
        if hit and not any(path == target for _, _, path in out):
            out.append((hit[0], hit[1], target))
    return out


def _stat(root: Root, pid: int) -> tuple[str, int, int] | None:
    """(comm, ppid, session) from proc/PID/stat; comm may hold spaces and parentheses."""
    text = root.read_text(f"proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    head, _, tail = text.rpartition(")")
    comm = head.partition("(")[2]
    fields = tail.split()
    try:
        return comm, int(fields[1]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _ancestors(root: Root, ppid: int, depth: int = 2) -> tuple[Ancestor, ...]:
    out: list[Ancestor] = []
    pid = ppid
    while pid > 0 and len(out) < depth:
        st = _stat(root, pid)
        comm = st[0] if st else (root.read_text(f"proc/{pid}/comm") or "?").strip()
        out.append(Ancestor(pid, comm))
        if st is None:
            break
        pid = st[1]
    return tuple(out)


def _threads(root: Root, pid: int) -> tuple[ThreadFacts, ...]:
    tids = root.listdir(f"proc/{pid}/task")
    if tids is None:
        tids = [str(pid)]
        paths = {pid: f"proc/{pid}"}
    else:
        paths = {int(t): f"proc/{pid}/task/{t}" for t in tids if (t.isascii() and t.isdigit())}
    out: list[ThreadFacts] = []
    for tid, base in sorted(paths.items()):
        status = root.read_text(f"{base}/status")
        raw = read_status_list(status, "Cpus_allowed_list") if status else None
        if raw is None:
            continue  # exited since the listing, or unreadable
        try:
            cpus = parse_cpulist(raw, source=f"{base}/status")
        except ParseError:
            continue
        name = root.read_text(f"{base}/comm") or read_status_list(status or "", "Name") or ""
        out.append(ThreadFacts(tid, name.strip(), cpus))
    return tuple(out)


def _cmdline(root: Root, pid: int) -> tuple[str, ...]:
    text = root.read_text(f"proc/{pid}/cmdline")
    if not text:
        return ()
    return tuple(a for a in text.split("\0") if a)


@dataclass
class _Found:
    devices: list[int] = field(default_factory=list)
    by: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    vendor: str = ""


def _worker_pids(root: Root, host: Host | None, scan: ProcessScan) -> dict[int, _Found]:
    """Every PID that holds an accelerator: from the vendor tool's process table and from
    proc/*/fd."""
    found: dict[int, _Found] = {}
    home = vendors.vendor_of(host)
    devices = home.accelerators(host) if host is not None else ()
    for p in host.processes if host is not None else ():
        entry = found.setdefault(p.pid, _Found(vendor=home.vendor.value))
        dev = next(
            (
                a.logical_id
                for a in devices
                if a.npu_id == p.npu_id and (a.chip_id or 0) == (p.chip_id or 0)
            ),
            p.npu_id,
        )
        entry.devices.append(dev)
        if home.processes_from not in entry.by:
            entry.by.append(home.processes_from)
    for pid, held in scan.held.items():
        entry = found.setdefault(pid, _Found())
        for prof, n, path in held:
            entry.vendor = prof.vendor.value
            entry.devices.append(prof.logical_of_device_file(host, n) if host else n)
            entry.files.append(path)
        entry.by.append("fd")
    return found


def find_workers(
    root: Root, host: Host | None, scan: ProcessScan | None = None
) -> list[WorkerFacts]:
    """The accelerator workers visible through root, with their threads' masks (scan: the pass
    over proc/ of this root, read here when not given)."""
    if scan is None:
        scan = scan_processes(root, irqbalance=False)
    workers: list[WorkerFacts] = []
    for pid, entry in sorted(_worker_pids(root, host, scan).items()):
        devices = tuple(sorted(set(entry.devices)))
        by = tuple(entry.by)
        files = tuple(sorted(set(entry.files)))
        status = root.read_text(f"proc/{pid}/status")
        if status is None and root.listdir(f"proc/{pid}") is None:
            workers.append(WorkerFacts(pid, devices, by, present=False, vendor=entry.vendor))
            continue
        st = _stat(root, pid)
        comm = (root.read_text(f"proc/{pid}/comm") or "").strip() or (st[0] if st else None)
        cgroup_text = root.read_text(f"proc/{pid}/cgroup")
        workers.append(
            WorkerFacts(
                pid=pid,
                devices=devices,
                found_by=by,
                vendor=entry.vendor,
                comm=comm,
                command=_cmdline(root, pid),
                uid=_status_int(status, "Uid"),
                session=st[2] if st else None,
                ancestors=_ancestors(root, st[1]) if st else (),
                cgroup=_cgroup_key(cgroup_text),
                cpuset=cpuset.cpus if (cpuset := resolve_cpuset(root, pid)) is not None else None,
                threads=_threads(root, pid),
                device_files=files,
            )
        )
    return workers


def _cgroup_key(text: str | None) -> str | None:
    """The cgroup a process is in (v2 path, else the v1 cpuset path): one service, one cgroup."""
    entries = parse_proc_cgroup(text or "")
    v2 = next((e.path for e in entries if e.unified), None)
    return v2 or next((e.path for e in reversed(entries) if "cpuset" in e.controllers), None)


def scanned_note(root: Root, host: Host | None, scan: ProcessScan | None = None) -> str:
    """Where the worker search looked, for the row that says none was found."""
    pids = scan.pids if scan is not None else _pids(root)
    table = (
        "npu-smi's process table is empty"
        if host is not None and host.npu_smi_found
        else "no npu-smi process table"
    )
    if pids is None:
        procs = "no process list under this root (proc/)"
    elif not proc_scanned(root):
        procs = "this sysroot records no process scan (meta.json has no proc_scanned)"
    else:
        files = " and ".join(f"/dev/{p.device_file}N" for p in vendors.profiles())
        procs = f"{len(pids)} processes' open files scanned for {files}"
    return f"{table}; {procs}"


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
