"""Write a HostSpec as a sysroot (SPEC.md section 2): sysfs, /proc, commands/*.txt, meta.json.

Each `write_*` function adds one part to a Tree, so a test helper can write just that part."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.synth import text
from ascendtune.synth.spec import (
    Cells,
    Chip,
    Cpus,
    HostSpec,
    Knobs,
    Node,
    NpuSmi,
    NvidiaSmi,
    Pci,
    Process,
    SelfProc,
    Status,
    Thread,
)
from ascendtune.synth.tree import Tree

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"


def render(spec: HostSpec) -> Tree:
    """The sysroot of spec, in memory."""
    t = Tree()
    nr_cpus = len(spec.cpus.all)
    nr_nodes = len(spec.nodes) or 1
    write_cpus(t, spec.cpus)
    if spec.node_lists and spec.nodes:
        write_node_lists(t, spec.nodes)
    for node in spec.nodes:
        write_node(t, node)
    for dev in spec.pci:
        write_pci(t, dev, nr_cpus)
    if spec.knobs is not None:
        write_knobs(t, spec.knobs)
    if spec.self_proc is not None:
        write_self(t, spec.self_proc, nr_cpus, nr_nodes)
    for proc in spec.processes:
        write_process(t, proc, nr_cpus, nr_nodes)
    if spec.npu_smi is not None:
        write_npu_smi(t, spec.npu_smi)
    if spec.nvidia_smi is not None:
        write_nvidia_smi(t, spec.nvidia_smi)
    if spec.meta is not None:
        write_meta(t, spec.meta, indent=spec.meta_indent)
    for rel, body in spec.files.items():
        t.file(rel, body)
    return t


def write_cpus(t: Tree, cpus: Cpus) -> None:
    allc = cpus.all
    t.file(f"{CPU_DIR}/online", format_cpulist(cpus.online) + "\n")
    for name in ("possible", "present"):
        t.file(f"{CPU_DIR}/{name}", format_cpulist(allc) + "\n")
    write_threads(t, cpus.threads)
    if cpus.governor is not None:
        for c in sorted(allc):
            t.file(f"{CPU_DIR}/cpu{c}/cpufreq/scaling_governor", cpus.governor + "\n")
    write_caches(t, cpus.llc, l1=cpus.l1)


def write_caches(t: Tree, llc: Iterable[CpuSet], *, l1: bool = False) -> None:
    """Each group of CPUs shares an L3 (index3); with l1, every CPU also has its own L1d and
    L1i (index0, index1), which a reader must pass over for the L3."""
    for group in llc:
        for c in sorted(group):
            base = f"{CPU_DIR}/cpu{c}/cache/"
            caches = [(0, 1, "Data", str(c)), (1, 1, "Instruction", str(c))] if l1 else []
            for index, level, kind, shared in [*caches, (3, 3, "Unified", format_cpulist(group))]:
                t.file(base + f"index{index}/level", f"{level}\n")
                t.file(base + f"index{index}/type", f"{kind}\n")
                t.file(base + f"index{index}/shared_cpu_list", f"{shared}\n")


def write_threads(t: Tree, threads: Iterable[Thread]) -> None:
    for th in threads:
        base = f"{CPU_DIR}/cpu{th.cpu}/topology/"
        t.file(base + "physical_package_id", f"{th.socket}\n")
        if th.core is not None:
            t.file(base + "core_id", f"{th.core}\n")
        t.file(base + "thread_siblings_list", format_cpulist(th.siblings) + "\n")


def write_node_lists(t: Tree, nodes: tuple[Node, ...]) -> None:
    ids = [n.id for n in nodes]
    lists = {
        "online": ids,
        "possible": ids,
        "has_cpu": [n.id for n in nodes if n.cpus],
        "has_memory": [n.id for n in nodes if n.mem_kb],
    }
    for name, members in lists.items():
        t.file(f"{NODE_DIR}/{name}", format_cpulist(members) + "\n")


def write_node(t: Tree, node: Node) -> None:
    base = f"{NODE_DIR}/node{node.id}/"
    t.file(base + "cpulist", format_cpulist(node.cpus) + "\n")
    if node.mem_kb is not None:
        t.file(
            base + "meminfo", text.meminfo_text(node.id, node.mem_kb, node.free_kb, full=node.full)
        )


def write_pci(t: Tree, dev: Pci, nr_cpus: int) -> None:
    base = f"sys/bus/pci/devices/{dev.bdf.lower()}/"
    t.file(base + "vendor", dev.vendor + "\n")
    t.file(base + "device", dev.device + "\n")
    if dev.pci_class is not None:
        t.file(base + "class", dev.pci_class + "\n")
    t.file(base + "numa_node", f"{dev.numa_node}\n")
    t.file(base + "local_cpulist", text.cells(dev.local_cpus) + "\n")
    if dev.mask and not isinstance(dev.local_cpus, str):
        t.file(base + "local_cpus", text.bitmap(dev.local_cpus, nr_cpus) + "\n")
    if dev.driver:
        t.link(base + "driver", f"../../../../bus/pci/drivers/{dev.driver}")


def write_knobs(t: Tree, k: Knobs) -> None:
    values = {
        "proc/sys/kernel/numa_balancing": k.numa_balancing,
        "proc/sys/vm/swappiness": k.swappiness,
        "proc/sys/kernel/sched_migration_cost_ns": k.migration_cost_ns,
        "sys/kernel/mm/transparent_hugepage/enabled": k.thp,
        "sys/kernel/mm/transparent_hugepage/defrag": k.thp_defrag,
    }
    for rel, value in values.items():
        if value is not None:
            t.file(rel, f"{value}\n")


SELF_PID, SELF_PPID = 52117, 51980


def write_self(t: Tree, s: SelfProc, nr_cpus: int, nr_nodes: int) -> None:
    """The reading process itself (`ascendtune`), its cgroup and that cgroup's cpuset."""
    full = s.full  # a real kernel's self/status: pid, state and RSS of a running ascendtune
    status = Status(
        name="ascendtune",
        cpus=s.cpus,
        mems=s.mems,
        uid=0 if full else s.uid,
        caps=s.caps,
        seccomp=s.seccomp,
        nr_cpus=nr_cpus,
        nr_nodes=nr_nodes,
        full=full,
        pid=SELF_PID if full else None,
        tgid=SELF_PID if full else None,
        ppid=SELF_PPID if full else None,
        threads=1 if full else None,
        state="R (running)" if full else None,
        vm_rss_kb=41_216 if full else None,
    )
    t.file("proc/self/status", text.status_text(status))
    if s.cgroup is not None:
        t.file("proc/self/cgroup", f"0::{s.cgroup}\n")
        t.file("sys/fs/cgroup/cpuset.cpus.effective", text.cells(s.cpus) + "\n")
        if s.mems is not None:
            t.file("sys/fs/cgroup/cpuset.mems.effective", text.cells(s.mems) + "\n")


def write_process(t: Tree, p: Process, nr_cpus: int, nr_nodes: int) -> None:
    """A process: its main thread is tasks[0]; each task gets comm and status."""
    base = f"proc/{p.pid}/"
    t.file(base + "comm", p.comm + "\n")
    t.file(base + "cmdline", "\0".join(p.cmdline or (p.comm,)) + "\0")
    if p.environ:
        t.file(base + "environ", "".join(f"{k}={v}\0" for k, v in p.environ))

    def status(name: str, tid: int, cpus: Cells) -> str:
        return text.status_text(
            Status(
                name=name,
                cpus=cpus,
                pid=tid,
                tgid=p.pid,
                ppid=p.ppid,
                uid=p.uid,
                state="S (sleeping)" if p.full else None,
                threads=len(p.tasks) if p.full else None,
                mems=p.mems,
                caps=p.caps,
                seccomp=p.seccomp,
                vm_rss_kb=p.vm_rss_kb,
                nr_cpus=nr_cpus,
                nr_nodes=nr_nodes,
                full=p.full,
            )
        )

    t.file(base + "status", status(p.comm, p.pid, p.tasks[0].cpus))
    for task in p.tasks:
        tb = f"{base}task/{task.tid}/"
        t.file(tb + "comm", task.name + "\n")
        t.file(tb + "status", status(task.name, task.tid, task.cpus))
    for fd, target in p.fds.items():
        t.link(f"{base}fd/{fd}", target)


def command_path(name: str) -> str:
    """name as in SPEC: "npu-smi_info", "npu-smi_info_-m", "npu-smi_info_-t_topo", ..."""
    return f"commands/{name}.txt"


def write_npu_smi(t: Tree, smi: NpuSmi) -> None:
    if smi.info:
        t.file(command_path("npu-smi_info"), text.npu_smi_info(smi))
    if smi.map:
        t.file(
            command_path("npu-smi_info_-m"),
            text.info_m(
                smi.chips, logic_col=smi.logic_col, phy_col=smi.phy_col, slot_col=smi.slot_col
            ),
        )
    if smi.topo_file:
        body = smi.topo
        if body is None:
            body = text.topo(smi.chips, link=smi.link, label=smi.label, legend=smi.legend)
        t.file(command_path("npu-smi_info_-t_topo"), body)
    if smi.board:
        for c in smi.chips:
            t.file(command_path(board_name(c)), text.board(c))


def board_name(chip: Chip) -> str:
    return f"npu-smi_info_-t_board_-i_{chip.npu_id}_-c_{chip.chip_id}"


def write_nvidia_smi(t: Tree, smi: NvidiaSmi) -> None:
    t.file(command_path("nvidia-smi_topo_-m"), text.nvidia_topo(smi))


def write_meta(t: Tree, meta: Mapping[str, object], *, indent: int | None = 2) -> None:
    """meta.json as `ascendtune snapshot` writes it."""
    body = json.dumps(dict(meta), indent=indent, sort_keys=False)
    t.file("meta.json", body + ("\n" if indent is not None else ""))
