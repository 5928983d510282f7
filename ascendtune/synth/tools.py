"""The output of the other programs vLLM-Ascend's binding runs on a host, rendered from a
HostSpec in their real formats: `lscpu`, `lscpu -e=CPU,NODE`, `lspci -s BDF -vvv`, and the
NPU interrupt lines of /proc/interrupts with each device's msi_irqs folder.

ascendtune itself reads none of these (it reads sysfs); the reference tier answers the
releases' own commands with them, so both see one host."""

from __future__ import annotations

from ascendtune.core.cpulist import format_cpulist
from ascendtune.synth.spec import HostSpec, Pci


def _node_cpus(spec: HostSpec) -> dict[int, list[int]]:
    """Each node's online CPUs (the kernel drops an offline CPU from its node's map)."""
    online = spec.cpus.online
    if not spec.nodes:
        return {0: sorted(online)}
    return {n.id: sorted(n.cpus & online) for n in sorted(spec.nodes, key=lambda n: n.id)}


def threads_per_core(spec: HostSpec) -> int:
    online = spec.cpus.online
    sizes = [len(t.siblings & online) for t in spec.cpus.threads if t.cpu in online]
    return max(sizes, default=1)


def lscpu(spec: HostSpec, arch: str = "aarch64") -> str:
    """`lscpu` as util-linux 2.37+ prints it with LC_ALL=C (sectioned, indented)."""
    allc = sorted(spec.cpus.all)
    online = sorted(spec.cpus.online)
    offline = sorted(set(allc) - set(online))
    tpc = threads_per_core(spec)
    sockets = len({t.socket for t in spec.cpus.threads}) or 1
    nodes = _node_cpus(spec)
    rows = [
        ("Architecture:", arch, 0),
        ("CPU op-mode(s):", "64-bit", 2),
        ("Byte Order:", "Little Endian", 2),
        ("CPU(s):", str(len(allc)), 0),
        ("On-line CPU(s) list:", format_cpulist(online), 2),
    ]
    if offline:
        rows.append(("Off-line CPU(s) list:", format_cpulist(offline), 2))
    rows += [
        ("Vendor ID:", "HiSilicon" if arch == "aarch64" else "GenuineIntel", 0),
        ("Model name:", "Kunpeng-920" if arch == "aarch64" else "Xeon", 2),
        ("Thread(s) per core:", str(tpc), 4),
        ("Core(s) per socket:", str(max(1, len(online) // tpc // sockets)), 4),
        ("Socket(s):", str(sockets), 4),
        ("NUMA:", "", 0),
        ("NUMA node(s):", str(len(nodes)), 2),
    ]
    rows += [(f"NUMA node{n} CPU(s):", format_cpulist(cs), 2) for n, cs in nodes.items()]
    return "".join(
        (" " * ind + key).ljust(33) + value + "\n" if value else " " * ind + key + "\n"
        for key, value, ind in rows
    )


def lscpu_e(spec: HostSpec) -> str:
    """`lscpu -e=CPU,NODE`: every present CPU; an offline one has no node ("-")."""
    node_of = {c: n for n, cs in _node_cpus(spec).items() for c in cs}
    out = ["CPU NODE"]
    for c in sorted(spec.cpus.all):
        node = node_of.get(c)
        out.append(f"{c:3d} {'-' if node is None else node:>4}")
    return "\n".join(out) + "\n"


def lspci_vvv(dev: Pci) -> str:
    """`lspci -s BDF -vvv` for one device: the lines a NUMA lookup reads (lspci prints
    "NUMA node" only when the kernel knows one)."""
    bdf = dev.bdf.lower()
    out = [
        f"{bdf[5:]} Processing accelerators: Huawei Technologies Co., Ltd. Device {dev.device[2:]} (rev 20)",
        "\tSubsystem: Huawei Technologies Co., Ltd. Device 0100",
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+",
        "\tLatency: 0, Cache Line Size: 32 bytes",
    ]
    if dev.numa_node >= 0:
        out.append(f"\tNUMA node: {dev.numa_node}")
    out += ["\tKernel driver in use: devdrv_device_driver", "\tKernel modules: drv_pcie_host", ""]
    return "\n".join(out) + "\n"


IRQ_BASE = 160
IRQS_PER_DEVICE = 8


def npu_irqs(buses: list[str]) -> tuple[str, dict[str, list[str]]]:
    """/proc/interrupts holding each NPU's sq_send_trigger_irq / cq_update_irq pair, and each
    device's msi_irqs listing (by lower-case bus id); buses in the order given."""
    head = "           CPU0       CPU1       \n"
    lines: list[str] = []
    dirs: dict[str, list[str]] = {}
    for k, bus in enumerate(buses):
        base = IRQ_BASE + k * IRQS_PER_DEVICE
        dirs[bus.lower()] = [str(base + i) for i in range(IRQS_PER_DEVICE)]
        for i in range(IRQS_PER_DEVICE):
            name = {2: "sq_send_trigger_irq", 3: "cq_update_irq"}.get(i, f"devdrv-msi-{i}")
            lines.append(
                f"{base + i:4d}:          0          0   ITS-MSI {base + i} Edge      {name}"
            )
    return head + "\n".join(lines) + "\n", dirs
