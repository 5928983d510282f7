"""Build the Host model from a Root: the one reader for live hosts and captured sysroots.

It reads sysfs and proc, runs each registered vendor's commands (ascendtune.core.vendors)
through the Root and hands their texts to the vendor, which joins them into Accelerators.
What it reads is exactly SPEC.md section 2; `ascendtune snapshot` writes the same paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, ParseError
from ascendtune.core.model import Cpu, Host, NumaNode, PciDevice, Soc, Vendor
from ascendtune.core.vendors import (
    Command,
    VendorInput,
    VendorProfile,
    VendorReading,
    profiles,
)
from ascendtune.core.vendors import links_json as links_json  # cli/topo.py imports it from here
from ascendtune.core.vendors.nvidia import NVML_FILE
from ascendtune.host import pci
from ascendtune.host.roots import Folder, Root

if TYPE_CHECKING:
    from ascendtune.core.cgroup import Cpuset

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"


def _cpulist_file(root: Root, rel: str) -> CpuSet | None:
    text = root.read_text(rel)
    if text is None:
        return None
    return parse_cpulist(text, source=rel)


def read_status_list(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def read_cpus(root: Root) -> tuple[CpuSet, CpuSet, dict[int, tuple[int, int, CpuSet, CpuSet]]]:
    """(online, present, each online CPU's (socket, core, siblings, last-level cache)): the
    facts read_host makes each Cpu of, once it knows the nodes."""
    online = _cpulist_file(root, f"{CPU_DIR}/online")
    if online is None:
        raise MissingError(
            f"{root.describe()}: {CPU_DIR}/online is missing",
            "a sysroot needs at least the list of online CPUs",
        )
    if not online:
        raise InvalidInput(f"{root.describe()}: {CPU_DIR}/online lists no CPU")
    # `possible` often lists hotplug slots that never come online: offline means present - online
    present_file = _cpulist_file(root, f"{CPU_DIR}/present")
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    if possible:
        # the kernel never has a CPU outside `possible`: such a host was edited or garbled
        for name, listed in (("online", online), ("present", present_file or frozenset())):
            outside = listed - possible
            if outside:
                raise InvalidInput(
                    f"{root.describe()}: {CPU_DIR}/{name} lists CPUs {format_cpulist(outside)} "
                    f"outside {CPU_DIR}/possible ({format_cpulist(possible)})",
                    "the CPU files contradict each other; capture the host again",
                )
    present = (present_file or frozenset()) | online
    cpus: dict[int, tuple[int, int, CpuSet, CpuSet]] = {}
    # A core's siblings and a cache's CPU list are facts every CPU sharing them repeats: each is
    # read once. A CPU listed in an earlier CPU's thread_siblings_list (with a core_id) is on
    # that core, socket and sibling set; one listed in an earlier CPU's last-level cache
    # shares that cache. On a 4,096-CPU host that is 7 reads in 8 saved.
    parsed: dict[str, CpuSet] = {}
    core_of: dict[int, tuple[int, int, CpuSet]] = {}
    llc_of: dict[int, CpuSet] = {}
    # a sysroot folder is opened once and each CPU's folder from it: its files are read
    # relative to it, with no walk from the top per file
    with root.folder(CPU_DIR) as cpu_dir:
        for c in sorted(online):
            known = core_of.get(c)
            llc = llc_of.get(c)
            if known is not None and llc is not None:
                cpus[c] = (*known, llc)
                continue
            if known is not None:
                sock, core, siblings = known
            else:
                sock, core, siblings, shared = _topology(cpu_dir, c, parsed)
                if shared:
                    known = (sock, core, siblings)
                    for s in siblings:  # no dict made per core to update from
                        core_of[s] = known
            if llc is None:
                with cpu_dir.folder(f"cpu{c}") as here:
                    llc = _llc(here, parsed)
                if c in llc:
                    llc_of.update(dict.fromkeys(llc, llc))
            cpus[c] = (sock, core, siblings if c in siblings else siblings | {c}, llc)
    return online, present, cpus


_TOPOLOGY = ("physical_package_id", "core_id", "thread_siblings_list")


def _topology(cpu_dir: Folder, c: int, parsed: dict[str, CpuSet]) -> tuple[int, int, CpuSet, bool]:
    """CPU c's (socket, core, siblings) from the cpu folder, and whether they hold for each of
    the siblings too (a sibling list naming c, and a core_id)."""
    sock_text, core_text, sib_text = cpu_dir.read_texts(_TOPOLOGY, f"cpu{c}/topology")
    sock = _int(sock_text, 0)
    read_core = _int_or_none(core_text)
    core = c if read_core is None else read_core
    if not sib_text:
        return sock, core, frozenset({c}), False
    siblings = _parse_once(
        parsed, sib_text, lambda: f"{CPU_DIR}/cpu{c}/topology/thread_siblings_list"
    )
    return sock, core, siblings, read_core is not None and c in siblings


def _parse_once(parsed: dict[str, CpuSet], text: str, source: Callable[[], str]) -> CpuSet:
    """text as a CPU list, parsed once per distinct text; source names its file, made only
    when the text is parsed (not a string built per core)."""
    got = parsed.get(text)
    if got is None:
        got = parsed[text] = parse_cpulist(text, source=source())
    return got


def read_llc(root: Root, cpu: int, parsed: dict[str, CpuSet] | None = None) -> CpuSet:
    """CPUs sharing cpu's highest-level data/unified cache (an L3 "core complex"), or empty.

    parsed: CPU lists already parsed, by text (read_cpus shares one across CPUs)."""
    with root.folder(f"{CPU_DIR}/cpu{cpu}") as here:
        return _llc(here, {} if parsed is None else parsed)


def _llc(here: Folder, memo: dict[str, CpuSet]) -> CpuSet:
    """read_llc of the CPU whose folder is here."""
    best_level, best = -1, frozenset[int]()
    with here.folder("cache") as cache:
        for entry in cache.listdir() or []:
            if not (entry.startswith("index") and entry[5:].isdigit() and entry[5:].isascii()):
                continue
            with cache.folder(entry) as index:
                # an instruction cache, or one below the best so far, needs no further read
                kind = (index.read_text("type") or "").strip()
                if kind not in ("Unified", "Data"):
                    continue
                level = _int(index.read_text("level"), -1)
                if level <= best_level:
                    continue
                shared = index.read_text("shared_cpu_list")
                if shared:
                    try:
                        best_level, best = (
                            level,
                            _parse_once(memo, shared, lambda: f"{index.rel}/shared_cpu_list"),
                        )
                    except ParseError:
                        continue
    return best


def _int(text: str | None, default: int) -> int:
    got = _int_or_none(text)
    return default if got is None else got


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


# at most 18 digits (an exabyte in kB): a longer number is not a reading, and int() of
# thousands of digits is refused by Python itself
_MEM = re.compile(r"Node\s+\d+\s+MemTotal:\s+(\d{1,18})\s*kB")


def read_nodes(root: Root, online: CpuSet, notes: list[str] | None = None) -> tuple[NumaNode, ...]:
    """The NUMA nodes; contradictions (a CPU on two nodes, a CPU the host does not have) are
    InvalidInput. Where the node view cannot be read, one node 0 holding every CPU is assumed
    and a note in `notes` says it is a guess."""
    entries = root.listdir(NODE_DIR)
    if entries is None:
        if notes is not None and "node" in (root.listdir(NODE_DIR.rsplit("/", 1)[0]) or []):
            notes.append(
                f"{NODE_DIR} cannot be read: the NUMA nodes are unknown, and every CPU is "
                "shown on one node 0 as a guess"
            )
        return (NumaNode(id=0, cpus=online, mem_mib=None, guessed=True),)
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    present = _cpulist_file(root, f"{CPU_DIR}/present")
    # without possible/present an offline CPU cannot be told from one that does not exist
    known = (
        None
        if possible is None and present is None
        else (possible or frozenset()) | (present or frozenset()) | online
    )
    nodes: list[NumaNode] = []
    owner: dict[int, int] = {}
    for entry in entries:
        m = re.fullmatch(r"node(\d+)", entry)
        if not m:
            continue
        nid = int(m.group(1))
        listed = _cpulist_file(root, f"{NODE_DIR}/{entry}/cpulist")
        if listed is None:
            if notes is not None and root.listdir(f"{NODE_DIR}/{entry}") is None:
                notes.append(f"{NODE_DIR}/{entry} cannot be read: its CPUs are unknown")
            listed = frozenset()
        unknown = listed - known if known is not None else frozenset()
        if unknown and known is not None:
            raise InvalidInput(
                f"{root.describe()}: {NODE_DIR}/{entry}/cpulist names CPUs "
                f"{format_cpulist(unknown)} this host does not have "
                f"(CPUs possible: {format_cpulist(known)})",
                "the NUMA map contradicts the CPU list; capture the host again",
            )
        shared = sorted(c for c in listed if c in owner)
        if shared:
            other = owner[shared[0]]
            both = frozenset(c for c in shared if owner[c] == other)
            raise InvalidInput(
                f"{root.describe()}: node{other} and node{nid} both list CPUs "
                f"{format_cpulist(both)}: a CPU belongs to one NUMA node",
                "the NUMA map contradicts itself; capture the host again",
            )
        owner.update(dict.fromkeys(listed, nid))
        meminfo = root.read_text(f"{NODE_DIR}/{entry}/meminfo")
        mem_mib: int | None = None
        if meminfo is not None:
            mm = _MEM.search(meminfo)
            if mm:
                mem_mib = int(mm.group(1)) // 1024
        nodes.append(NumaNode(id=nid, cpus=listed & online, mem_mib=mem_mib))
    if not nodes:
        if notes is not None and entries:
            notes.append(
                f"{NODE_DIR} holds no nodeN folder: every CPU is shown on node 0 as a guess"
            )
        return (NumaNode(id=0, cpus=online, mem_mib=None, guessed=True),)
    return tuple(sorted(nodes, key=lambda n: n.id))


def read_allowed(
    root: Root, online: CpuSet, present: CpuSet
) -> tuple[CpuSet, frozenset[int] | None, bool, Cpuset | None]:
    """(allowed CPUs, allowed memory nodes, whether from proc/self/status, the cgroup cpuset):
    the status mask narrowed to the cgroup cpuset when both are known."""
    from ascendtune.host.cgroup import resolve_cpuset

    cgroup = resolve_cpuset(root)
    status = root.read_text("proc/self/status")
    if status is None:
        return online, None, False, cgroup
    raw = read_status_list(status, "Cpus_allowed_list")
    if raw is None:
        return online, None, False, cgroup
    allowed = parse_cpulist(raw, source="proc/self/status Cpus_allowed_list")
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    if possible is not None or root.read_text(f"{CPU_DIR}/present") is not None:
        # a task's mask may name offline CPUs, but never CPUs the kernel cannot have
        known = (possible or frozenset()) | present
        unknown = allowed - known
        if unknown:
            raise InvalidInput(
                f"{root.describe()}: Cpus_allowed_list names CPUs {format_cpulist(unknown)} "
                f"that this host does not have (CPUs possible: {format_cpulist(known)})"
            )
    mems_raw = read_status_list(status, "Mems_allowed_list")
    mems = parse_cpulist(mems_raw, source="Mems_allowed_list") if mems_raw else None
    if not allowed & online:
        raise InvalidInput(
            f"{root.describe()}: Cpus_allowed_list {format_cpulist(allowed)} holds no online CPU "
            f"(online: {format_cpulist(online)})"
        )
    if cgroup is not None:
        # live, the kernel keeps the mask inside the cpuset; a sysroot may disagree
        if not allowed & online & cgroup.cpus:
            raise InvalidInput(
                f"{root.describe()}: Cpus_allowed_list {format_cpulist(allowed)} and the cgroup "
                f"cpuset {format_cpulist(cgroup.cpus)} ({cgroup.file}) share no online CPU",
                "capture the host again with `ascendtune snapshot`",
            )
        allowed &= cgroup.cpus
    return allowed & online, mems, True, cgroup


def read_meta(root: Root) -> dict[str, object]:
    text = root.read_text("meta.json")
    if text is None:
        return {}
    from ascendtune.core.text import loads_bounded

    # bounded: a meta.json nested thousands deep is bad input (exit 5), not a RecursionError
    data = loads_bounded(text, source=f"{root.describe()}: meta.json")
    return data if isinstance(data, dict) else {}


def read_pci(root: Root, *, udev: bool = True) -> tuple[PciDevice, ...]:
    """The accelerators on the PCI bus; live through pyudev unless udev=False (sysfs files: the
    same devices without their device nodes, and no pyudev to load, about 9 ms)."""
    if root.live and udev:
        devices = pci.live_pci()
        if devices is not None:
            return devices
    return pci.pci_from_sysfs(root)


class _Tools:
    """Runs (or replays) the vendor tools once each; a failure is a note, never parsed."""

    def __init__(self, root: Root, notes: list[str]) -> None:
        self.root = root
        self.notes = notes
        self.found: set[str] = set()
        self.errors: list[str] = []
        self.hung: set[str] = set()

    def text(self, command: Command) -> str | None:
        argv, tool = list(command.argv), command.tool
        if tool in self.hung:
            return None  # one timeout is enough: do not wait out the others
        out = self.root.command(argv, command.fallbacks)
        if out is None:
            return None
        self.found.add(tool)
        if out.ok:
            return out.text
        cmd = " ".join(argv)
        first = (out.error or "failed").splitlines()[0].removeprefix(f"{cmd}: ")
        self.errors.append(f"{cmd}: {first}")
        same = [
            n for n in self.notes if n.startswith(f"`{tool}") and n.endswith(f"({first}); left out")
        ]
        if same:  # the same failure for every subcommand: one note names them all
            self.notes[self.notes.index(same[0])] = same[0].replace(
                "` failed", f"`, `{cmd}` failed", 1
            )
        else:
            self.notes.append(f"`{cmd}` failed ({first}); left out")
        if out.timed_out:
            self.hung.add(tool)
        return None


def _live_nvml() -> dict[str, Any] | None:
    from ascendtune.host import nvml

    lib = nvml.load()
    return nvml.capture(lib) if lib is not None else None


# Documents a live host gets from a library rather than a command (profile.documents)
_LIVE_DOCUMENTS = {NVML_FILE: _live_nvml}


def read_document(root: Root, rel: str) -> dict[str, Any] | None:
    """A vendor's JSON document: asked live (through its library), replayed from a snapshot."""
    if root.live:
        ask = _LIVE_DOCUMENTS.get(rel)
        return ask() if ask is not None else None
    text = root.read_text(rel)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"not JSON: {e.msg}", source=rel, line=e.lineno) from None
    return doc if isinstance(doc, dict) else None


def read_nvml(root: Root) -> dict[str, Any] | None:
    """NVML's view (GPU index, name, bus id; processes): asked live, replayed from a snapshot."""
    return read_document(root, NVML_FILE)


def _read_vendor(
    root: Root,
    p: VendorProfile,
    tools: _Tools,
    pci_devices: tuple[PciDevice, ...],
    nodes: tuple[NumaNode, ...],
    allowed: frozenset[int],
    meta: Mapping[str, object],
    workers_only: bool = False,
) -> VendorReading:
    """Run one vendor's commands through the root and hand their texts to its profile
    (workers_only: not those that print links only)."""
    texts = {c.argv: tools.text(c) for c in p.commands if not (workers_only and c.links_only)}
    mine = tuple(d for d in pci_devices if d.vendor_id == p.pci_vendor_id)
    # a document is only worth asking for when the PCI bus shows the vendor's devices
    documents = {rel: read_document(root, rel) for rel in p.documents} if mine else {}
    return p.read(
        VendorInput(
            texts=texts,
            pci=mine,
            nodes=nodes,
            allowed=allowed,
            tool_found=p.tool in tools.found,
            documents=documents,
            runtime_soc=lambda: runtime_soc(root, meta),
        )
    )


def read_host(root: Root, *, workers_only: bool = False) -> Host:
    """The host's model. workers_only: what finding the workers and their devices needs,
    for `bind --workers --plan`, which plans nothing here: no vendor command that prints links
    only (npu-smi's topology, a tool run: the Host has no links nor the affinity they carry)
    and the PCI bus from sysfs (no device nodes)."""
    notes: list[str] = []
    online, present, facts = read_cpus(root)
    nodes = read_nodes(root, online, notes)
    node_of = {c: n.id for n in nodes for c in n.cpus}
    # a core's siblings and a cache's CPUs are one set shared by every CPU on them: each set is
    # narrowed to the online CPUs once; each Cpu is made once, here
    within: dict[CpuSet, CpuSet] = {}
    cpus: dict[int, Cpu] = {}
    for c, (sock, core, read_siblings, read_llc_set) in facts.items():
        siblings = within.get(read_siblings)
        if siblings is None:
            # all online (nearly always): the set read is kept, not copied (2,048 sets fewer
            # at 4,096 CPUs for the collector to count)
            within[read_siblings] = siblings = (
                read_siblings if read_siblings <= online else read_siblings & online
            )
        llc = within.get(read_llc_set)
        if llc is None:
            llc = within[read_llc_set] = read_llc_set & online
        cpus[c] = Cpu(
            c,
            sock,
            core,
            siblings if c in siblings else siblings | {c},
            node_of.get(c),
            llc,
        )
    allowed, mems, from_status, cgroup = read_allowed(root, online, present)
    meta = read_meta(root)
    pci_devices = read_pci(root, udev=not workers_only)

    tools = _Tools(root, notes)
    readings: dict[Vendor, VendorReading] = {}
    for p in profiles():
        reading = _read_vendor(root, p, tools, pci_devices, nodes, allowed, meta, workers_only)
        notes.extend(reading.notes)
        readings[p.vendor] = reading
    # links come from the host's vendor: the first (registry order) that found devices
    home = next((r for r in readings.values() if r.accelerators), None)

    arch = meta.get("arch")
    if arch is None and root.live:
        import platform

        arch = platform.machine()
    hostname = meta.get("hostname")
    if hostname is None and root.live:
        from ascendtune.host.identity import live_hostname

        hostname = live_hostname()
    return Host(
        cpus_online=online,
        cpus=cpus,
        cpus_allowed=allowed,
        mems_allowed=mems,
        numa_nodes=nodes,
        accelerators=tuple(a for r in readings.values() for a in r.accelerators),
        links={a: dict(row) for a, row in home.links.items()} if home else {},
        processes=tuple(pr for r in readings.values() for pr in r.processes),
        cpus_present=present,
        allowed_from_status=from_status,
        topo_supported=next(
            (r.topo_supported for r in readings.values() if r.topo_supported is not None), None
        ),
        arch=_str(arch),
        hostname=_str(hostname),
        notes=tuple(notes),
        soc_detected=next((r.soc for r in readings.values() if r.soc is not None), None),
        tool_errors=tuple(tools.errors),
        npu_map_rows=next((r.map_rows for r in readings.values() if r.map_rows), ()),
        npu_procs_by_chip=next(
            (r.procs_by_chip for r in readings.values() if r.procs_by_chip is not None), None
        ),
        cgroup_cpuset=cgroup.cpus if cgroup is not None else None,
        cgroup_cpuset_file=cgroup.file if cgroup is not None else None,
        tools={
            t: (readings[p.vendor].tool_version if t == p.tool else None)
            or _str(meta.get(f"{t.replace('-', '_')}_version"))
            for p in profiles()
            for t in p.tools
            if t in tools.found
        },
    )


def runtime_soc(root: Root, meta: Mapping[str, object]) -> Soc | None:
    """torch_npu's SoC family when chip names do not tell (live), or what a snapshot recorded."""
    if not root.live:
        value = meta.get("soc_runtime")
        return next((s for s in Soc if s.value == value), None)
    from ascendtune.host.socinfo import runtime_soc as ask

    return ask()


def _str(v: object) -> str | None:
    return None if v is None else str(v)
