"""The Host a reader should see in a rendered spec, built in memory (no files, no parsing).

tests/synth/test_spec_roundtrip.py checks that `expected_host(spec)` equals
`ascendtune.host.reader.read_host` of the rendered sysroot, so tests and benchmarks may plan
on the in-memory Host and know it is the one the tool would read. Covered: CPUs, topology,
caches, nodes, the cpuset, meta.json's arch and hostname, and Ascend NPUs from npu-smi (with
sysfs PCI devices) on hosts whose facts agree (no reader notes), and NVIDIA GPUs seen on the
PCI bus only (no nvidia-smi output). A GPU whose numa_node names a CPU-less node is placed on
the node of its CPUs, as the reader places it; the reader's note about it is not modelled."""

from __future__ import annotations

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.model import (
    Accelerator,
    AccelProcess,
    Cpu,
    Host,
    NumaNode,
    Soc,
    Source,
    Vendor,
    soc_of_names,
)
from ascendtune.synth.spec import Cells, HostSpec, NpuSmi, Pci
from ascendtune.synth.text import info_m

# PCI device ids of Ascend families (sysfs `device`), for names that do not tell (Ascend910)
SOC_OF_DEVICE_ID = {"0xd802": Soc.A2, "0xd803": Soc.A3, "0xd500": Soc.P310, "0xd806": Soc.A5}


def _set(value: Cells | None) -> CpuSet:
    if value is None:
        return frozenset()
    return parse_cpulist(value) if isinstance(value, str) else frozenset(value)


def expected_host(spec: HostSpec) -> Host:
    if spec.nvidia_smi is not None:
        raise NotImplementedError("expected_host covers GPUs seen on the PCI bus only")
    online = spec.cpus.online
    present = spec.cpus.all
    nodes = tuple(
        NumaNode(n.id, n.cpus & online, None if n.mem_kb is None else n.mem_kb // 1024)
        for n in sorted(spec.nodes, key=lambda n: n.id)
    ) or (NumaNode(0, online, None),)
    node_of = {c: n.id for n in nodes for c in n.cpus}
    threads = {t.cpu: t for t in spec.cpus.threads}
    llc = {c: g & online for g in spec.cpus.llc for c in g}
    cpus = {}
    for c in sorted(online):
        t = threads.get(c)
        socket, core = (0, c) if t is None else (t.socket, c if t.core is None else t.core)
        siblings = (t.siblings & online if t is not None else frozenset()) | {c}
        cpus[c] = Cpu(c, socket, core, siblings, node_of.get(c), llc.get(c, frozenset()))
    if spec.self_proc is not None:
        allowed = _set(spec.self_proc.cpus) & online
        mems_set = _set(spec.self_proc.mems) if spec.self_proc.mems is not None else None
        mems = mems_set or None
    else:
        allowed, mems = online, None
    meta = spec.meta or {}
    smi = spec.npu_smi
    npus = _npus(smi, spec.pci, nodes) if smi is not None else ()
    gpus = _gpus(spec.pci, nodes)
    links: dict[int, dict[int, str]] = {}
    if smi is not None and smi.topo is None and smi.topo_file and npus:
        ids = [a.logical_id for a in npus]
        fn = smi.link if callable(smi.link) else (lambda a, b, name=smi.link: name)
        links = {a: {b: fn(a, b) for b in ids if b != a} for a in ids}
    soc = None
    if npus:
        names = [a.name for a in npus]
        if smi is not None and smi.map:
            names += [
                c.name if c.name.startswith("Ascend") else f"Ascend {c.name}" for c in smi.chips
            ]
            names += ["Mcu"] if smi.logic_col else []
        soc = soc_of_names(names)
        if soc in (Soc.A1, Soc.UNKNOWN):
            by_pci = {
                SOC_OF_DEVICE_ID[p.device]
                for p in spec.pci
                if p.vendor == HUAWEI and is_accelerator(p) and p.device in SOC_OF_DEVICE_ID
            }
            if len(by_pci) == 1:
                soc = by_pci.pop()
            elif soc is Soc.A1 and len({a.npu_id for a in npus}) < len(npus):
                soc = Soc.A3
    by_npu_id = smi is not None and smi.npu_id_procs
    host = Host(
        online,
        cpus,
        allowed,
        mems,
        nodes,
        accelerators=npus + gpus,
        links=links,
        processes=tuple(
            AccelProcess(
                p.npu_id, None if by_npu_id else p.chip_id, p.pid, p.name, float(p.mem_mib)
            )
            for p in (smi.processes if smi is not None and smi.info else ())
        ),
        cpus_present=present,
        allowed_from_status=spec.self_proc is not None,
        # the vendor tools the reader ran, with the version each printed
        tools={"npu-smi": smi.version if smi.info else None} if smi is not None else {},
        topo_supported=None if smi is None or not smi.topo_file else smi.topo is None,
        arch=_str(meta.get("arch")),
        hostname=_str(meta.get("hostname")),
        soc_detected=soc,
        npu_map_rows=_map_rows(smi) if smi is not None and smi.map and npus else (),
        npu_procs_by_chip=None if smi is None or not smi.info else not smi.npu_id_procs,
    )
    return host


def _map_rows(smi: NpuSmi) -> tuple[tuple[str, ...], ...]:
    """`npu-smi info -m` split by position, as Host.npu_map_rows holds it."""
    from ascendtune.core.vendors.ascend import positional_rows

    return positional_rows(
        info_m(smi.chips, logic_col=smi.logic_col, phy_col=smi.phy_col, slot_col=smi.slot_col)
    )


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _npus(
    smi: NpuSmi, pci: tuple[Pci, ...], nodes: tuple[NumaNode, ...]
) -> tuple[Accelerator, ...]:
    """What npu-smi's three views and sysfs say of each chip, joined as a reader joins them."""
    by_bus = {p.bdf.lower(): p for p in pci if p.vendor == HUAWEI and is_accelerator(p)}
    out = []
    for c in sorted(smi.chips, key=lambda c: c.logical_id):
        bus = c.bus.lower() if smi.info else None
        dev = by_bus.get(bus) if bus else None
        tool = _set(c.affinity) if smi.topo is None and c.affinity is not None else None
        tool = tool or None
        local = _set(dev.local_cpus) if dev is not None else frozenset()
        src: Source | None
        if tool is not None:
            aff, src = tool, Source.NPU_SMI
        elif local:
            aff, src = local, Source.SYSFS
        else:
            aff, src = frozenset(), None
        numa: int | None
        nsrc: Source | None = None
        if dev is not None and dev.numa_node >= 0:
            numa, nsrc = dev.numa_node, Source.SYSFS
        else:
            numa = _single_node(aff, nodes)
            nsrc = src if numa is not None else None
        out.append(
            Accelerator(
                Vendor.HUAWEI,
                c.logical_id,
                c.npu_id,
                c.chip_id,
                c.name,
                bus,
                numa,
                aff,
                src,
                tool_affinity=tool,
                numa_source=nsrc,
                health=c.health if smi.info else None,
                driver=dev.driver if dev is not None else None,
            )
        )
    return tuple(out)


NVIDIA, HUAWEI = "0x10de", "0x19e5"
GENERIC_GPU_NAME = "NVIDIA GPU"
# Without a class file the reader tells accelerators by device id (ascendtune/host/pci.py);
# the round-trip property test keeps these in step with it.
NVIDIA_NOT_GPU = {"0x1af1", "0x22a3", "0x22a4"}  # NVSwitches
ASCEND_DEVICE_IDS = {"0xd100", "0xd105", "0xd500", "0xd801", "0xd802", "0xd803", "0xd806"}


def is_accelerator(p: Pci) -> bool:
    cls = (p.pci_class or "").lower()
    if p.vendor == HUAWEI:
        return cls.startswith("0x12") if cls else p.device in ASCEND_DEVICE_IDS
    if p.vendor == NVIDIA:
        return cls.startswith("0x03") if cls else p.device not in NVIDIA_NOT_GPU
    return False


def _single_node(cpus: CpuSet, nodes: tuple[NumaNode, ...]) -> int | None:
    hit = {n.id for n in nodes if n.cpus & cpus}
    return hit.pop() if len(hit) == 1 else None


def _gpus(pci: tuple[Pci, ...], nodes: tuple[NumaNode, ...]) -> tuple[Accelerator, ...]:
    """GPU index g is the g-th NVIDIA display-class device in bus order (nvidia-smi's order)."""
    devs = sorted(
        (p for p in pci if p.vendor == NVIDIA and is_accelerator(p)),
        key=lambda p: p.bdf.lower(),
    )
    cpu_nodes = {n.id for n in nodes if n.cpus}
    out = []
    for g, dev in enumerate(devs):
        aff = _set(dev.local_cpus)
        src = Source.SYSFS if aff else None
        numa: int | None
        nsrc: Source | None
        if dev.numa_node >= 0:
            numa, nsrc = dev.numa_node, Source.SYSFS
        else:
            numa = _single_node(aff, nodes) if aff else None
            nsrc = src if numa is not None else None
        if numa is not None and numa not in cpu_nodes and any(n.id == numa for n in nodes):
            home = _single_node(aff, nodes) if aff else None
            if home is not None:  # GPU memory exposed as a CPU-less node: bind by its CPUs
                numa, nsrc = home, src
        out.append(
            Accelerator(
                Vendor.NVIDIA,
                g,
                g,
                None,
                dev.name or GENERIC_GPU_NAME,
                dev.bdf.lower(),
                numa,
                aff,
                src,
                numa_source=nsrc,
                driver=dev.driver,
            )
        )
    return tuple(out)
