"""Gather what `doctor`'s host rules judge: kernel knobs, cgroup and capabilities, tools, the NPU
interrupts and their affinity, all read through a Root (live `/` or a sysroot); the workers come
from ascendtune.host.workers.

`doctor_paths` lists the same reads as paths, so `snapshot` captures exactly what doctor needs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from ascendtune.core import vendors
from ascendtune.core.doctor import HostFacts
from ascendtune.core.doctor.facts import CONTAINER_MARKS, INTERRUPTS, TUNED_PROFILE, is_pattern
from ascendtune.core.doctor.host_rules import declared_reads, doctor_tools
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
from ascendtune.host.workers import ProcessScan, find_workers, meta_of, scan_processes

PCI_DIR = "sys/bus/pci/devices"
TUNED_DIR = "usr/lib/tuned"
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")


# ---- the files the rules declare ----------------------------------------------------------------


def expand(root: Root, path: str) -> list[str]:
    """The paths under root a declared path stands for: itself, or a pattern's matches (a
    component with `*`, `?` or `[...]` is matched against its folder's listing)."""
    if not is_pattern(path):
        return [path]
    found = [""]
    for part in path.split("/"):
        if not is_pattern(part):
            found = [f"{f}/{part}" if f else part for f in found]
            continue
        grown = []
        for f in found:
            names = root.listdir(f or ".") or []
            grown += [f"{f}/{n}" if f else n for n in sorted(names) if fnmatchcase(n, part)]
        found = grown
    return found


def read_declared(root: Root, declared: Iterable[str]) -> dict[str, str | None]:
    """Each declared file's text (None: absent); a pattern's files only where present."""
    out: dict[str, str | None] = {}
    found = [(path, is_pattern(decl)) for decl in declared for path in expand(root, decl)]
    texts = root.read_files([path for path, _ in found])
    for (path, pattern), text in zip(found, texts, strict=True):
        if text is not None or not pattern:
            out[path] = text
    return out


# ---- the host -----------------------------------------------------------------------------------


def tools_of(root: Root, meta: Mapping[str, object]) -> dict[str, str | None] | None:
    recorded = meta.get("tools")
    if isinstance(recorded, dict):
        return {k: (str(v) if v else None) for k, v in recorded.items() if isinstance(k, str)}
    if not root.live:
        return None
    from ascendtune.host import runner

    out: dict[str, str | None] = {}
    vendor_fallbacks = {t: p.fallbacks(t) for p in vendors.profiles() for t in p.tools}
    for name in doctor_tools():
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


def _npu_msi_dirs(root: Root) -> dict[str, str]:
    """NPU PCI address -> its msi_irqs folder, where the folder is readable (the interrupts
    doctor checks are the Ascend driver's)."""
    out: dict[str, str] = {}
    npu = vendors.ASCEND.pci_vendor_id
    for bdf in root.listdir(PCI_DIR) or []:
        vendor = (root.read_text(f"{PCI_DIR}/{bdf}/vendor") or "").strip().lower()
        if vendor == npu and root.listdir(f"{PCI_DIR}/{bdf}/msi_irqs") is not None:
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


def npu_irq_facts(
    root: Root,
) -> tuple[str | None, dict[int, tuple[str | None, str | None]], dict[str, frozenset[int]]]:
    """What the `npu_irq` rows read, for a reader outside doctor (the k8s section's reserved
    CPUs): proc/interrupts, the NPU SQ/CQ interrupts' affinity texts, the msi_irqs listings."""
    text = root.read_text(INTERRUPTS)
    aff, msi = _irq_facts(root, text)
    return text, aff, msi


def _tuned(root: Root, tools: Mapping[str, str | None] | None, profile: str | None) -> bool | None:
    if tools is not None and tools.get("tuned-adm"):
        return True
    if profile is not None or root.listdir(TUNED_DIR) is not None:
        return True
    if tools is not None and "tuned-adm" in tools:
        return False
    return None if not root.live else False


_CONTAINER_CGROUP_WORDS = ("docker", "kubepods", "containerd", "libpod", "lxc")


def container_of(root: Root, meta: Mapping[str, object]) -> str | None:
    """What says this root is seen from inside a container, or None: meta.json's `container`
    (a demo's, or a snapshot's), a runtime's mark file, or a container runtime in the cgroup
    path of this process."""
    recorded = meta.get("container")
    if isinstance(recorded, str) and recorded:
        return recorded
    for mark in CONTAINER_MARKS:
        if root.read_text(mark) is not None:
            return f"/{mark} present"
    cgroup = root.read_text("proc/self/cgroup") or ""
    for word in _CONTAINER_CGROUP_WORDS:
        if word in cgroup:
            return f"proc/self/cgroup names {word}"
    return None


def gather_host_facts(root: Root, scan: ProcessScan | None = None) -> HostFacts:
    """scan: the pass over proc/ of this root (scan_processes with irqbalance), read here when
    not given."""
    if scan is None:
        scan = scan_processes(root, devices=False)
    meta = meta_of(root)
    own = resolve_cpuset(root)
    tools = tools_of(root, meta)
    files = read_declared(root, declared_reads())
    irq_aff, msi = _irq_facts(root, files.get(INTERRUPTS))
    return HostFacts(
        root=root.describe(),
        live=root.live,
        files=files,
        irqbalance_pids=scan.irqbalance,
        cgroup_version=own.version if own is not None else cgroup_version(root),
        cgroup_cpuset=own.cpus if own is not None else None,
        tools=tools,
        arch=_arch(root, meta),
        env=_env(root, meta),
        cgroup_cpuset_file=own.file if own is not None else None,
        irq_affinity=irq_aff,
        msi_irqs=msi,
        tuned=_tuned(root, tools, files.get(TUNED_PROFILE)),
        container=container_of(root, meta),
    )


# ---- what snapshot must capture -----------------------------------------------------------------


def _existing(root: Root, paths: Iterable[str | None]) -> list[str]:
    wanted = [p for p in paths if p]
    return [p for p, text in zip(wanted, root.read_files(wanted), strict=True) if text is not None]


def doctor_paths(root: Root, host: Host | None = None) -> list[str]:
    """Every path, relative to root, that `doctor` reads on this host and that exists.

    Files: every file the host rules declare (Rule.reads: knobs, per-CPU governors, etc/os-release,
    proc/self/status, proc/interrupts, the tuned profile, irqbalance's config, ...), the cpuset
    files the cgroup resolver used, irqbalance's proc/PID/comm, proc/irq/N/smp_affinity_list (or
    smp_affinity) of the NPU SQ/CQ interrupts, each Huawei device's msi_irqs/N entries; and, for
    each worker,
    proc/PID/{status,comm,cmdline,stat,cgroup}, proc/PID/task/TID/{status,comm}, its parents'
    proc/PPID/{stat,comm} and the cpuset files its cgroup resolved to. Entries under proc/PID/fd/ are symbolic links (to
    /dev/davinciN): capture them as links. The SPEC section 2 files `read_host` needs are not
    repeated here. Workers come from open device files and from the vendor tool's process table of
    `host`; without `host` it is read here (on a live root that runs the tool again).
    """
    if host is None:
        try:
            host = read_host(root)
        except AscendtuneError:
            host = None
    paths = [p for p, text in read_declared(root, declared_reads()).items() if text is not None]
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
        tasks = [f"{base}/task/{tid}" for tid in root.listdir(f"{base}/task") or []]
        paths += _existing(root, [f"{t}/{f}" for t in tasks for f in ("status", "comm")])
        for a in w.ancestors:
            paths += _existing(root, [f"proc/{a.pid}/stat", f"proc/{a.pid}/comm"])
        paths += cpuset_paths(root, w.pid)
        paths += vllm_detect.detect_paths(root, w.pid)  # which vLLM-Ascend it runs
        from ascendtune.host import binder_facts  # what its binder chain reads

        paths += binder_facts.paths(root, w.pid)
    return list(dict.fromkeys(paths))
