"""`ascendtune topo`: accelerators, links, NUMA nodes, and the cpuset beside hardware affinity."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ascendtune.app.topo import topo_document, topo_warnings
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors, print_json

if TYPE_CHECKING:
    from ascendtune.core.model import Host


def render_topo(host: Host) -> None:
    from rich.table import Table

    from ascendtune.cli.common import stdout_console
    from ascendtune.core import vendors
    from ascendtune.core.cpulist import format_cpulist as f

    con = stdout_console()
    doc_head = [
        f"host {host.hostname or '?'}",
        f"arch {host.arch or '?'}",
        f"{len(host.cpus_online)} CPUs online",
        f"{len({c.socket for c in host.cpus.values()})} socket(s)",
        f"SMT x{max((len(c.siblings) for c in host.cpus.values()), default=1)}",
    ]
    prof = vendors.vendor_of(host)
    if host.accelerators and prof.soc_of(host).value != "gpu":
        doc_head.append(f"SoC {prof.soc_of(host).value}")
    if host.npu_smi_found:
        doc_head.append(f"npu-smi {host.npu_smi_version or '?'}")
    if host.gpus:
        doc_head.append("nvidia-smi" if host.nvidia_smi_found else "no nvidia-smi")
    con.print(", ".join(doc_head))
    con.print(
        f"cpuset (Cpus_allowed_list): {f(host.cpus_allowed)}"
        + ("" if host.allowed_from_status else " (no proc/self/status: every online CPU assumed)")
    )
    if host.accelerators:
        # a GPU's index is its id: the npu and chip columns only mean something for NPUs
        npu_cols = prof.card_columns
        t = Table(title="accelerators", title_justify="left")
        head = ["id", "npu", "chip"] if npu_cols else [prof.word]
        for col in (*head, "name", "bus id", "NUMA", "CPU affinity", "from", "in cpuset"):
            t.add_column(col)
        for a in host.accelerators:
            inside = a.cpu_affinity & host.cpus_allowed
            mark = f(inside) if inside == a.cpu_affinity else (f"[red]{f(inside) or 'none'}[/red]")
            cells = [str(a.logical_id)]
            if npu_cols:
                cells += [
                    "" if a.npu_id is None else str(a.npu_id),
                    "" if a.chip_id is None else str(a.chip_id),
                ]
            t.add_row(
                *cells,
                a.name,
                a.bus_id or "?",
                "?" if a.numa_node is None else str(a.numa_node),
                f(a.cpu_affinity) or "?",
                a.affinity_source.value if a.affinity_source else "-",
                mark if a.cpu_affinity else "-",
            )
        con.print(t)
        if host.links:
            ids = sorted(host.links)
            lt = Table(title="links", title_justify="left")
            lt.add_column("")
            for b in ids:
                lt.add_column(str(b), justify="center")
            for a_id in ids:
                lt.add_row(
                    str(a_id), *("X" if a_id == b else host.links[a_id].get(b, "") for b in ids)
                )
            con.print(lt)
    else:
        con.print(
            "no accelerator found (no npu-smi or nvidia-smi output, no Huawei or NVIDIA PCI device); "
            "try `ascendtune topo --demo` to see an Atlas 800I A2"
        )
    nt = Table(title="NUMA nodes", title_justify="left")
    for col in ("node", "CPUs", "memory", "allowed", "accelerators"):
        nt.add_column(col)
    for n in host.numa_nodes:
        accs = [str(a.logical_id) for a in host.accelerators if a.numa_node == n.id]
        nt.add_row(
            str(n.id),
            f(n.cpus) or "(none)",
            "?"
            if n.mem_mib is None
            else f"{n.mem_mib / 1024:.0f} GiB"
            if n.mem_mib >= 1024
            else f"{n.mem_mib} MiB",
            f(n.cpus & host.cpus_allowed) or "-",
            ",".join(accs),
        )
    con.print(nt)
    if host.processes:
        pt = Table(title="processes on accelerators", title_justify="left")
        for col in ("npu", "chip", "pid", "name", "memory MiB"):
            pt.add_column(col)
        for p in host.processes:
            pt.add_row(
                str(p.npu_id),
                "" if p.chip_id is None else str(p.chip_id),
                str(p.pid),
                p.name,
                "" if p.mem_mib is None else f"{p.mem_mib:.0f}",
            )
        con.print(pt)
    for w in topo_warnings(host):
        con.print(f"[yellow]![/yellow] {w}")


def register(app: typer.Typer) -> None:
    @app.command("topo")
    @handle_errors
    def topo_cmd(
        json_out: JsonOpt = False, sysroot: SysrootOpt = None, demo: DemoOpt = None
    ) -> None:
        """Show accelerators, links, NUMA nodes, and the cpuset beside each device's CPU affinity."""
        from ascendtune.cli.common import load_host

        got = load_host(sysroot, demo)
        if json_out:
            print_json(topo_document(got.host, got.identity))
        else:
            render_topo(got.host)
