"""`ascendtune topo`: accelerators, links, NUMA nodes, and the cpuset beside hardware affinity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from ascendtune.app.topo import topo_warnings
from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console

    from ascendtune.app.k8s import K8sReport
    from ascendtune.app.topo import TopoReport
    from ascendtune.core.model import Host
    from ascendtune.core.vendors import VendorProfile


def grid_lines(rows: list[list[str]]) -> list[str]:
    """Rows as aligned text: the first column right-justified, the others centred, one space
    between columns (what a Rich grid with padding (0, 1) prints, at a fraction of the cost:
    the link matrix is a square of short codes, never wrapped)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [r[0].rjust(widths[0])]
        for cell, w in zip(r[1:], widths[1:], strict=True):
            left = (w - len(cell)) // 2
            cells.append(" " * left + cell + " " * (w - len(cell) - left))
        out.append(" ".join(cells))
    return out


def render_links(con: Console, links: Mapping[int, Mapping[int, str]], prof: VendorProfile) -> None:
    """The link matrix as a grid (as the vendor's tool prints it), codes whole or two-letter
    forms when whole codes would not fit, and a legend (the vendor profile's) for every code it
    shows."""
    from ascendtune.cli.common import plain, shown

    ids = sorted(links)
    codes = sorted({c for row in links.values() for c in row.values() if c})
    id_w = max(len(str(i)) for i in ids)

    def width(names: list[str]) -> int:
        cell = max([id_w, 1, *map(len, names)])
        return (cell + 1) * (len(ids) + 1) - 1

    short = width(codes) > con.width
    show = prof.link_short if short else (lambda c: c)
    rows = [["", *map(str, ids)]]
    for a_id in ids:
        rows.append(
            [
                str(a_id),
                *("X" if a_id == b else plain(show(links[a_id].get(b, ""))) or "-" for b in ids),
            ]
        )
    con.print("links")
    for line in grid_lines(rows):
        con.print(line, markup=False, highlight=False, soft_wrap=True)
    seen = {prof.link_key(c): c for c in codes}
    legend = []
    for key, link in prof.links.items():
        if key in seen:
            legend.append(
                f"{prof.link_short(seen[key]) + ' = ' if short else ''}{key}: {link.about}"
            )
    legend += [c for c in codes if prof.link_key(c) is None]
    if legend:
        con.print("  " + shown("; ".join(legend)))


def render_topo(host: Host, identity: dict[str, Any] | None = None) -> None:
    from rich.text import Text

    from ascendtune.cli.cells import Wrapped, cpus, fitted_table, prose, show
    from ascendtune.cli.common import host_line, plain, shown, stdout_console
    from ascendtune.core import vendors
    from ascendtune.core.cpulist import format_cpulist as f

    con = stdout_console()
    where = host_line(identity) if identity else f"host {host.hostname or '?'}"
    doc_head = [
        where
        + (
            f", host {host.hostname}"
            if identity and host.hostname and host.hostname not in where
            else ""
        ),
        f"arch {host.arch or '?'}",
        f"{len(host.cpus_online)} CPUs online",
        f"{len({c.socket for c in host.cpus.values()})} socket(s)",
        f"SMT x{max((len(c.siblings) for c in host.cpus.values()), default=1)}",
    ]
    prof = vendors.vendor_of(host)
    if host.accelerators and prof.soc_of(host).value != "gpu":
        doc_head.append(f"SoC {prof.soc_of(host).value}")
    doc_head += [h for p in vendors.profiles() if (h := p.topo_header(host)) is not None]
    con.print(shown(", ".join(doc_head)))
    con.print(
        f"cpuset (Cpus_allowed_list): {f(host.cpus_allowed)}"
        + ("" if host.allowed_from_status else " (no proc/self/status: every online CPU assumed)")
    )
    if host.accelerators:
        # a GPU's index is its id: the tool's card id and chip columns only mean something
        # where a card holds several devices (NPUs)
        npu_cols = prof.card_columns
        sources = {a.affinity_source.value if a.affinity_source else "-" for a in host.accelerators}
        one_source = len(sources) == 1
        # a mixed host (NPUs and GPUs): each row says which kind it is, and only the home
        # vendor's devices fill its tool's card columns (a GPU has no npu-smi id)
        mixed = len({a.vendor for a in host.accelerators}) > 1
        head: list[Any] = ["device" if mixed else prof.word]
        if npu_cols:
            head += [prof.tool, "chip"]
        head += ["name", "bus id", "NUMA", "CPU affinity"]
        if not one_source:
            head.append("from")
        head.append("in cpuset")
        rows: list[list[Any]] = []
        for a in host.accelerators:
            inside = a.cpu_affinity & host.cpus_allowed
            mark = (
                cpus(f(inside))
                if inside == a.cpu_affinity
                else cpus(f(inside) or "none", style="red")
            )
            ours = a.vendor == prof.vendor
            cells: list[Any] = [
                f"{vendors.profile(a.vendor).word} {a.logical_id}" if mixed else str(a.logical_id)
            ]
            if npu_cols:
                cells += [
                    "" if a.npu_id is None or not ours else str(a.npu_id),
                    "" if a.chip_id is None or not ours else str(a.chip_id),
                ]
            cells += [
                shown(a.name),
                shown(a.bus_id or "?"),
                "?" if a.numa_node is None else str(a.numa_node),
                cpus(f(a.cpu_affinity) or "?"),
            ]
            if not one_source:
                cells.append(a.affinity_source.value if a.affinity_source else "-")
            cells.append(mark if a.cpu_affinity else "-")
            rows.append(cells)
        title = "accelerators" + (
            f" (CPU affinity from {sources.pop()})" if one_source and "-" not in sources else ""
        )
        show(con, fitted_table(con, title, head, rows))
        if host.links:
            render_links(con, host.links, prof)
    else:
        every = vendors.profiles()
        prose(
            con,
            f"no accelerator found (no {' or '.join(p.tool for p in every)} output, "
            f"no {' or '.join(p.maker for p in every)} PCI device); "
            "try `ascendtune topo --demo` to see an Atlas 800I A2",
        )
    nrows: list[list[Any]] = []
    for n in host.numa_nodes:
        accs = [str(a.logical_id) for a in host.accelerators if a.numa_node == n.id]
        nrows.append(
            [
                str(n.id),
                cpus(f(n.cpus) or "(none)"),
                "?"
                if n.mem_mib is None
                else f"{n.mem_mib / 1024:.0f} GiB"
                if n.mem_mib >= 1024
                else f"{n.mem_mib} MiB",
                cpus(f(n.cpus & host.cpus_allowed) or "-"),
                Wrapped(",".join(accs), ","),
            ]
        )
    show(
        con,
        fitted_table(
            con, "NUMA nodes", ("node", "CPUs", "memory", "allowed", "accelerators"), nrows
        ),
    )
    if host.processes:
        by_card = {(a.npu_id, a.chip_id or 0): a.logical_id for a in host.accelerators}
        prows = []
        for p in host.processes:
            logical = by_card.get((p.npu_id, p.chip_id or 0))
            prows.append(
                [
                    "?" if logical is None else str(logical),
                    str(p.npu_id),
                    "" if p.chip_id is None else str(p.chip_id),
                    str(p.pid),
                    shown(p.name),
                    "" if p.mem_mib is None else f"{p.mem_mib:.0f}",
                ]
            )
        head = [prof.word, prof.tool, "chip", "pid", "name", "memory MiB"]
        show(con, fitted_table(con, "processes on accelerators", head, prows))
    for w in topo_warnings(host):
        prose(con, Text.assemble(("!", "yellow"), " " + plain(w)))


def _render(report: TopoReport) -> None:
    render_topo(report.host, report.identity)
    if report.kubernetes is not None:
        render_pods(report.kubernetes)


def render_pods(rep: K8sReport) -> None:
    """The pods table of a Kubernetes node: each container's CPUs and NPUs, and their nodes."""
    from ascendtune.app.k8s import summary_of
    from ascendtune.cli.cells import fitted_table, show
    from ascendtune.cli.common import shown, stdout_console

    con = stdout_console()
    view, cfg = rep.view, rep.view.config
    con.print(
        shown(
            f"kubelet ({view.source}): cpuManagerPolicy {view.cpu_policy}, "
            f"topologyManagerPolicy {cfg.topology_manager_policy} "
            f"(scope {cfg.topology_manager_scope}), memoryManagerPolicy {cfg.memory_manager_policy}"
        )
    )
    rows = [
        [
            shown(a.pod.label),
            shown(a.container.name),
            shown(summary_of(a)),
            {True: "yes", False: "NO", None: "-"}[a.aligned],
        ]
        for a in rep.assessments
    ]
    if rows:
        show(con, fitted_table(con, "pods", ("pod", "container", "CPUs and NPUs", "aligned"), rows))
    else:
        con.print("pods: none holds an accelerator or exclusive CPUs")
    for w in view.warnings:
        con.print(f"[yellow]![/yellow] {shown(w)}")
    for f in rep.findings:  # the node's (NPU interrupt CPUs not reserved): doctor has the fix
        con.print(f"[yellow]![/yellow] {shown(f.message)} (ascendtune doctor --section k8s)")


def register(app: typer.Typer) -> None:
    @app.command("topo", help=describe("topo"))
    @handle_errors
    def topo_cmd(
        json_out: JsonOpt = False, sysroot: SysrootOpt = None, demo: DemoOpt = None
    ) -> None:
        from ascendtune.app import topo
        from ascendtune.cli.common import host_source, respond

        report = topo.run(topo.TopoOptions(host_source(sysroot, demo)))
        respond(report, json_out, topo.document, _render)
