"""The running processes as doctor and `bind --workers` see them: one pass over proc/ (each
process's comm and open files read once), and the accelerator workers it finds (from open device
files and the vendor tool's process table), with their threads' masks, all through a Root."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from ascendtune.core import vendors
from ascendtune.core.cgroup import parse_proc_cgroup
from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import AscendtuneError, ParseError
from ascendtune.core.parsers.procstatus import status_int
from ascendtune.core.workerfacts import Ancestor, ThreadFacts, WorkerFacts
from ascendtune.host.cgroup import resolve_cpuset
from ascendtune.host.reader import read_meta, read_status_list
from ascendtune.host.roots import Root

if TYPE_CHECKING:
    from ascendtune.core.model import Host


def pids_of(root: Root) -> list[int] | None:
    entries = root.listdir("proc")
    if entries is None:
        return None
    return sorted(int(e) for e in entries if (e.isascii() and e.isdigit()))


def proc_scanned(root: Root, meta: Mapping[str, object] | None = None) -> bool:
    """Whether root shows the host's processes: always live; in a sysroot, when `snapshot`
    recorded `"proc_scanned": true` in meta.json (it captures only the processes doctor reads,
    so an absent process there means absent on the host)."""
    if root.live:
        return True
    return bool((meta if meta is not None else meta_of(root)).get("proc_scanned"))


Held = list[tuple[vendors.VendorProfile, int, str]]
IRQBALANCE = "irqbalance"  # its comm


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
    pids = pids_of(root)
    if pids is None:
        return ProcessScan(None, None, {})
    want_comm = irqbalance and proc_scanned(root)
    if not want_comm and not devices:
        return ProcessScan(pids, None, {})
    if devices:
        names = [str(p) for p in pids]
        # only the comm that is "irqbalance" is of use: a shorter file is left unread
        comm_file = "comm" if want_comm else None
        rows = root.read_children("proc", names, comm_file, "fd", skip_below=len(IRQBALANCE))
    else:
        rows = [(root.read_text(f"proc/{p}/comm"), None) for p in pids]
    # most open files are sockets, pipes and plain files: only /dev/<device_file>... can match
    wanted = tuple(f"/dev/{p.device_file}" for p in vendors.profiles())
    irq: list[int] = []
    held: dict[int, Held] = {}
    for pid, (comm, targets) in zip(pids, rows, strict=True):
        if comm and comm.strip() == IRQBALANCE:
            irq.append(pid)
        if targets:
            for t in targets:
                if t.startswith(wanted):
                    got = _held_devices(targets, wanted)
                    if got:
                        held[pid] = got
                    break
    return ProcessScan(pids, tuple(irq) if want_comm else None, held)


def meta_of(root: Root) -> dict[str, object]:
    """meta.json of root; empty when absent or unreadable."""
    try:
        return read_meta(root)
    except AscendtuneError:
        return {}


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


def _ancestors(
    root: Root,
    ppid: int,
    depth: int = 2,
    stats: dict[int, tuple[str, int, int] | None] | None = None,
) -> tuple[Ancestor, ...]:
    """stats: each ancestor's _stat, kept across the workers of one find_workers (they share
    their parents: 16 workers, 30 reads of the same two stat files, about 0.4 ms)."""
    stats = {} if stats is None else stats
    out: list[Ancestor] = []
    pid = ppid
    while pid > 0 and len(out) < depth:
        if pid not in stats:
            stats[pid] = _stat(root, pid)
        st = stats[pid]
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
    # each thread's status and comm in one batch, side by side (a 5,000-thread worker: 10,000
    # reads through the root's batch path, each thread's folder reached once, not a call
    # chain per file); threads mostly share one mask, parsed once
    rows = sorted(paths.items())
    texts = root.read_files([f"{base}/{f}" for _, base in rows for f in ("status", "comm")])
    masks: dict[str, CpuSet | None] = {}
    out: list[ThreadFacts] = []
    for i, (tid, base) in enumerate(rows):
        status = texts[2 * i]
        raw = read_status_list(status, "Cpus_allowed_list") if status else None
        if raw is None:
            continue  # exited since the listing, or unreadable
        if raw in masks:
            cpus = masks[raw]
        else:
            try:
                cpus = masks[raw] = parse_cpulist(raw, source=f"{base}/status")
            except ParseError:
                cpus = masks[raw] = None
        if cpus is None:
            continue
        name = texts[2 * i + 1] or read_status_list(status or "", "Name") or ""
        out.append(ThreadFacts(tid, name.strip(), cpus))
    return tuple(out)


def threads_of(root: Root, pid: int) -> tuple[ThreadFacts, ...] | None:
    """Every thread of PID as root shows it (name and mask); None when root has no such
    process (a dry run of `bind --pid` on a captured host plans against these)."""
    if root.listdir(f"proc/{pid}") is None and root.read_text(f"proc/{pid}/status") is None:
        return None
    return _threads(root, pid)


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
    root: Root, host: Host | None, scan: ProcessScan | None = None, *, threads: bool = True
) -> list[WorkerFacts]:
    """The accelerator workers visible through root, with their threads' masks (scan: the pass
    over proc/ of this root, read here when not given). threads=False leaves every worker's
    threads unread (()): deciding what is a worker and which device it drives needs none of
    them, and a bind reads each thread's mask itself (16 workers x 500 threads: about 16,000
    reads of status and comm saved)."""
    if scan is None:
        scan = scan_processes(root, irqbalance=False)
    workers: list[WorkerFacts] = []
    stats: dict[int, tuple[str, int, int] | None] = {}  # the ancestors' (_ancestors)
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
                uid=status_int(status, "Uid"),
                session=st[2] if st else None,
                ancestors=_ancestors(root, st[1], stats=stats) if st else (),
                cgroup=_cgroup_key(cgroup_text),
                cpuset=cpuset.cpus if (cpuset := resolve_cpuset(root, pid)) is not None else None,
                threads=_threads(root, pid) if threads else (),
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
    pids = scan.pids if scan is not None else pids_of(root)
    tables = [p.tool for p in vendors.profiles() if p.processes_from == p.tool]
    table = "; ".join(
        f"{t}'s process table is empty" if host is not None and t in host.tools
        else f"no {t} process table"
        for t in tables
    )  # fmt: skip
    if pids is None:
        procs = "no process list under this root (proc/)"
    elif not proc_scanned(root):
        procs = "this sysroot records no process scan (meta.json has no proc_scanned)"
    else:
        files = " and ".join(f"/dev/{p.device_file}N" for p in vendors.profiles())
        procs = f"{len(pids)} processes' open files scanned for {files}"
    return f"{table}; {procs}" if table else procs
