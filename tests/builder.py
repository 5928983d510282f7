"""Build sysroot trees (SPEC.md section 2) in a temporary folder for tests."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ascendtune.core.cpulist import format_cpulist, parse_cpulist


def _cpus(spec: str | Iterable[int]) -> list[int]:
    return sorted(parse_cpulist(spec)) if isinstance(spec, str) else sorted(spec)


class SysrootBuilder:
    """Write a host's files under `root`; every method returns self so calls chain."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def file(self, rel: str, text: str) -> SysrootBuilder:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return self

    def link(self, rel: str, target: str) -> SysrootBuilder:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(target)
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
        self.file("sys/devices/system/cpu/online", format_cpulist(on) + "\n")
        self.file("sys/devices/system/cpu/possible", format_cpulist(allc) + "\n")
        self.file("sys/devices/system/cpu/present", format_cpulist(allc) + "\n")
        if not topology:
            return self
        n = len(allc)
        cores = n // smt
        per_socket = max(1, cores // sockets)
        for i, c in enumerate(allc):
            core = i % cores
            sibs = [allc[core + k * cores] for k in range(smt) if core + k * cores < n]
            base = f"sys/devices/system/cpu/cpu{c}/topology/"
            self.file(base + "physical_package_id", f"{min(core // per_socket, sockets - 1)}\n")
            self.file(base + "core_id", f"{core}\n")
            self.file(base + "thread_siblings_list", format_cpulist(sibs) + "\n")
        return self

    def node(
        self, node_id: int, cpus: str | Iterable[int], mem_mib: int | None = 65536
    ) -> SysrootBuilder:
        base = f"sys/devices/system/node/node{node_id}/"
        self.file(base + "cpulist", format_cpulist(_cpus(cpus)) + "\n")
        if mem_mib is not None:
            kb = mem_mib * 1024
            self.file(
                base + "meminfo",
                f"Node {node_id} MemTotal:       {kb} kB\nNode {node_id} MemFree:        {kb // 2} kB\n",
            )
        return self

    def nodes_even(
        self, count: int, cpus_per_node: int, mem_mib: int | None = 65536
    ) -> SysrootBuilder:
        for i in range(count):
            self.node(i, range(i * cpus_per_node, (i + 1) * cpus_per_node), mem_mib)
        return self

    def allowed(self, cpus: str, mems: str = "0") -> SysrootBuilder:
        return self.file(
            "proc/self/status",
            f"Name:\tascendtune\nCpus_allowed_list:\t{cpus}\nMems_allowed_list:\t{mems}\n",
        )

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
        base = f"sys/bus/pci/devices/{bdf.lower()}/"
        self.file(base + "vendor", vendor + "\n")
        self.file(base + "device", device + "\n")
        self.file(base + "numa_node", f"{numa_node}\n")
        self.file(base + "local_cpulist", local_cpulist + "\n")
        if driver:
            self.link(base + "driver", f"../../../../bus/pci/drivers/{driver}")
        return self

    def command(self, name: str, text: str) -> SysrootBuilder:
        """name as in SPEC: "npu-smi_info", "npu-smi_info_-m", "npu-smi_info_-t_topo", ..."""
        return self.file(f"commands/{name}.txt", text)

    def meta(self, **kw: object) -> SysrootBuilder:
        return self.file("meta.json", json.dumps(kw))

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
        base = f"proc/{pid}/"
        self.file(base + "comm", comm + "\n")
        self.file(base + "cmdline", "\0".join(cmdline or [comm]) + "\0")
        status = (
            f"Name:\t{comm}\nTgid:\t{pid}\nPid:\t{pid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
            f"Cpus_allowed_list:\t{cpus_allowed}\n"
        )
        self.file(base + "status", status)
        for tid, (name, mask) in (threads or {pid: (comm, cpus_allowed)}).items():
            t = f"{base}task/{tid}/"
            self.file(t + "comm", name + "\n")
            self.file(
                t + "status",
                f"Name:\t{name}\nTgid:\t{pid}\nPid:\t{tid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
                f"Cpus_allowed_list:\t{mask}\n",
            )
        for fd, target in (fds or {}).items():
            self.link(f"{base}fd/{fd}", target)
        return self
