"""Build sysroot trees (SPEC.md section 2) in a temporary folder for tests: a thin façade over
the synthetic-host kit (ascendtune.synth), which writes every file in its real format."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ascendtune.core.cpulist import parse_cpulist
from ascendtune.synth import render as r
from ascendtune.synth.spec import Cpus, HostSpec, Node, Pci, Process, SelfProc, Task, upper_half
from ascendtune.synth.tree import Tree, write_file, write_link


def _cpus(spec: str | Iterable[int]) -> frozenset[int]:
    return parse_cpulist(spec) if isinstance(spec, str) else frozenset(spec)


class SysrootBuilder:
    """Write a host's files under `root`; every method returns self so calls chain."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def tree(self, t: Tree) -> SysrootBuilder:
        t.write(self.root)
        return self

    def spec(self, spec: HostSpec) -> SysrootBuilder:
        """Write a whole host described by the kit's spec."""
        return self.tree(r.render(spec))

    def file(self, rel: str, text: str) -> SysrootBuilder:
        write_file(self.root, rel, text)
        return self

    def link(self, rel: str, target: str) -> SysrootBuilder:
        write_link(self.root, rel, target)
        return self

    def cpus(
        self,
        online: str | Iterable[int],
        *,
        present: str | Iterable[int] | None = None,
        smt: int = 1,
        sockets: int = 1,
        topology: bool = True,
    ) -> SysrootBuilder:
        """Online CPUs; with smt=2 CPU c and c + n/2 are siblings (upper-half numbering)."""
        on = _cpus(online)
        allc = _cpus(present) if present is not None else on
        threads = upper_half(allc, smt=smt, sockets=sockets) if topology else ()
        t = Tree()
        r.write_cpus(t, Cpus(on, present=allc, threads=threads))
        return self.tree(t)

    def node(
        self, node_id: int, cpus: str | Iterable[int], mem_mib: int | None = 65536
    ) -> SysrootBuilder:
        t = Tree()
        r.write_node(t, Node(node_id, _cpus(cpus), None if mem_mib is None else mem_mib * 1024))
        return self.tree(t)

    def nodes_even(
        self, count: int, cpus_per_node: int, mem_mib: int | None = 65536
    ) -> SysrootBuilder:
        for i in range(count):
            self.node(i, range(i * cpus_per_node, (i + 1) * cpus_per_node), mem_mib)
        return self

    def allowed(self, cpus: str, mems: str = "0") -> SysrootBuilder:
        t = Tree()
        r.write_self(t, SelfProc(cpus, mems), 0, 0)
        return self.tree(t)

    def pci(
        self,
        bdf: str,
        *,
        vendor: str = "0x19e5",
        device: str = "0xd802",
        numa_node: int = -1,
        local_cpulist: str = "",
        driver: str | None = None,
    ) -> SysrootBuilder:
        t = Tree()
        dev = Pci(bdf, vendor, device, numa_node=numa_node, local_cpus=local_cpulist, driver=driver)
        r.write_pci(t, dev, 0)
        return self.tree(t)

    def command(self, name: str, text: str) -> SysrootBuilder:
        """name as in SPEC: "npu-smi_info", "npu-smi_info_-m", "npu-smi_info_-t_topo", ..."""
        return self.file(r.command_path(name), text)

    def meta(self, **kw: object) -> SysrootBuilder:
        t = Tree()
        r.write_meta(t, kw, indent=None)
        return self.tree(t)

    def proc(
        self,
        pid: int,
        *,
        comm: str = "python3",
        cmdline: list[str] | None = None,
        uid: int = 0,
        cpus_allowed: str = "",
        threads: dict[int, tuple[str, str]] | None = None,
        fds: dict[int, str] | None = None,
    ) -> SysrootBuilder:
        """A process: threads maps tid -> (name, Cpus_allowed_list); fds maps fd -> link target."""
        tasks = [Task(pid, comm, cpus_allowed)]  # the process status shows cpus_allowed
        tasks += [Task(tid, name, mask) for tid, (name, mask) in (threads or {}).items()]
        t = Tree()
        proc = Process(
            pid, comm, tuple(tasks), cmdline=tuple(cmdline or [comm]), uid=uid, fds=fds or {}
        )
        r.write_process(t, proc, 0, 0)
        if threads is not None:  # task/ holds exactly the threads given
            for rel in [p for p in t.files if p.startswith(f"proc/{pid}/task/{pid}/")]:
                if pid not in threads:
                    del t.files[rel]
        return self.tree(t)
