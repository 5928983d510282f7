"""`ascendtune plan`: per-rank CPU pools under a policy, as a table, JSON or ready-to-paste lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors, print_json
from ascendtune.cli.planopts import (
    POLICY_NAMES,
    NoIrqReserveOpt,
    ReserveOpt,
    SocOpt,
    SpillOpt,
    VisibleDevicesOpt,
    plan_document,
)

if TYPE_CHECKING:
    from ascendtune.core.model import Host
    from ascendtune.core.planner import Plan

EMITS = ("taskset", "numactl", "env", "cpu-affinity-conf")


def _fmt(cpus: Any) -> str:
    from ascendtune.core.cpulist import format_cpulist

    return format_cpulist(cpus) or "-"


def _locality(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


def render_plan(plan: Plan, host: Host) -> None:
    from rich.table import Table

    from ascendtune.cli.common import stdout_console

    con = stdout_console()
    word = "NPU" if plan.vendor == "huawei" else "GPU"
    title = f"plan: policy {plan.policy}, mode {plan.mode}, SoC {plan.soc.value}, {len(plan.ranks)} ranks"
    t = Table(title=title, title_justify="left")
    for col in ("rank", word, "pool of", "NUMA", "CPUs", "IRQ", "main", "acl", "release", "local"):
        t.add_column(col, justify="right" if col in ("rank", word, "pool of", "local") else "left")
    for r in plan.ranks:
        t.add_row(
            str(r.rank),
            str(r.device),
            str(r.logical_id) if r.logical_id != r.device else "",
            ",".join(map(str, r.numa_nodes))
            + (
                f" (dev {r.device_node})"
                if r.device_node is not None and (r.device_node,) != r.numa_nodes
                else ""
            ),
            _fmt(r.cpus),
            _fmt(r.roles.irq),
            _fmt(r.roles.main),
            _fmt(r.roles.acl),
            _fmt(r.roles.release),
            _locality(r.locality),
        )
    con.print(t)
    con.print(
        f"cpuset: {_fmt(plan.cpus_allowed)}"
        + (f"  reserved: {_fmt(plan.reserved)}" if plan.reserved else "")
        + f"  idle: {_fmt(plan.idle_cpus)}"
    )
    if not plan.overlaps:
        con.print("overlaps between ranks: none")
    for n in plan.notes:
        con.print(f"note: {n}")
    for f in plan.findings:
        con.print(f"[yellow]![/yellow] {f}")


def _better(host: Host, plan: Plan, request_kw: dict[str, Any]) -> str | None:
    """A short line when another policy beats vLLM-Ascend's plan on locality or overlap."""
    from dataclasses import replace

    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.planner import PlanRequest, make_plan

    base: PlanRequest = request_kw["request"]
    mean = _mean_locality(plan)
    for name in ("numa-local", "numa-slice"):
        try:
            other = make_plan(host, replace(base, policy=name))
        except AscendtuneError:
            continue
        om = _mean_locality(other)
        if (om is not None and mean is not None and om > mean + 1e-9) or (
            plan.overlaps and not other.overlaps
        ):
            parts = []
            if om is not None and mean is not None:
                parts.append(f"mean locality {om:.0%} vs {mean:.0%}")
            if plan.overlaps and not other.overlaps:
                parts.append("no overlapping ranks")
            return f"better: --policy {name} ({', '.join(parts)})"
    return None


def _mean_locality(plan: Plan) -> float | None:
    vals = [r.locality for r in plan.ranks if r.locality is not None]
    return sum(vals) / len(vals) if vals else None


def emit_lines(plan: Plan, kind: str) -> list[str]:
    """Ready-to-paste lines: one per rank (one line in all for cpu-affinity-conf)."""
    word = "NPU" if plan.vendor == "huawei" else "GPU"
    env_name = "ASCEND_RT_VISIBLE_DEVICES" if plan.vendor == "huawei" else "CUDA_VISIBLE_DEVICES"
    out: list[str] = []
    if kind == "cpu-affinity-conf":
        # torch_npu: CPU_AFFINITY_CONF=<mode>,npu<device index>:<a>-<b>; one range per device,
        # the device index as the process sees it (its position in the visible list)
        items = []
        for r in plan.ranks:
            runs = _runs(r.cpus)
            lo, hi = max(runs, key=lambda ab: ab[1] - ab[0])
            items.append(f"npu{r.rank}:{lo}-{hi}")
            if len(runs) > 1:
                out.append(
                    f"# rank {r.rank}: CPUs {_fmt(r.cpus)} are not one range; torch_npu takes a "
                    f"single a-b range, so only {lo}-{hi} is given"
                )
        out.append("export CPU_AFFINITY_CONF=1," + ",".join(items))
        return out
    for r in plan.ranks:
        tag = f"# rank {r.rank}, {word} {r.device}"
        nodes = (
            (r.device_node,)
            if r.device_node is not None and r.device_node in r.numa_nodes
            else r.numa_nodes
        )
        if kind == "taskset":
            out.append(f"taskset -c {_fmt(r.cpus)}  {tag}")
        elif kind == "numactl":
            out.append(
                f"numactl --physcpubind={_fmt(r.cpus)} --membind={','.join(map(str, nodes))}  {tag}"
            )
        elif kind == "env":
            out.append(
                f"{env_name}={r.device} ASCENDTUNE_CPUS={_fmt(r.cpus)} ASCENDTUNE_MEMBIND={','.join(map(str, nodes))}  {tag}"
            )
    return out


def _runs(cpus: tuple[int, ...]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @handle_errors
    def plan_cmd(
        policy: Annotated[
            str,
            typer.Option(
                "--policy",
                help="auto (vllm-ascend on NPU hosts, numa-local on GPU hosts), vllm-ascend, "
                "numa-local, numa-slice, torchrun's node, socket, exclusive, core-complex, or "
                "compare (side by side).",
            ),
        ] = "auto",
        visible_devices: VisibleDevicesOpt = None,
        ranks: Annotated[
            int | None, typer.Option("--ranks", help="Plan only the first N ranks.")
        ] = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        spill: SpillOpt = False,
        emit: Annotated[
            str | None,
            typer.Option(
                "--emit",
                help="Print ready-to-paste lines: taskset, numactl, env, cpu-affinity-conf.",
            ),
        ] = None,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        """Compute per-rank CPU affinity: exactly as vLLM-Ascend would bind, or a better policy.

        Policies: vllm-ascend is what vLLM-Ascend's enable_cpu_binding does, flaws included.
        numa-local puts each rank on its own device's NUMA node in whole cores, never across
        a node. numa-slice is vLLM-Ascend's global slicing made NUMA-aware (for A3, or hosts
        without topology affinity): the same partition for every process sharing the cpuset.
        """
        from ascendtune.cli.common import open_root
        from ascendtune.cli.planopts import build_request
        from ascendtune.core.errors import AscendtuneError, UsageError
        from ascendtune.core.planner import make_plan
        from ascendtune.host.reader import read_host

        if emit is not None and emit not in EMITS:
            raise UsageError(f"--emit {emit}: expected one of {', '.join(EMITS)}")
        if policy not in ("compare", "auto", *POLICY_NAMES):
            raise UsageError(
                f"--policy {policy}: expected one of {', '.join(('auto', *POLICY_NAMES, 'compare'))}"
            )
        root = open_root(sysroot, demo)
        host = read_host(root)
        kw: dict[str, Any] = dict(
            visible_devices=visible_devices,
            ranks=ranks,
            soc=soc,
            reserve=reserve,
            no_irq_reserve=no_irq_reserve,
            spill=spill,
        )
        if policy == "compare":
            _compare(host, kw, json_out)
            return
        req = build_request(host, policy=policy, **kw)
        plan = make_plan(host, req)
        if json_out:
            print_json(plan_document(plan))
            return
        if emit:
            for line in emit_lines(plan, emit):
                print(line)
            return
        render_plan(plan, host)
        if plan.policy == "vllm-ascend":
            try:
                better = _better(host, plan, {"request": req})
            except AscendtuneError:
                better = None
            if better:
                from ascendtune.cli.common import stdout_console

                stdout_console().print(better)


def _compare(host: Host, kw: dict[str, Any], json_out: bool) -> None:
    """Every policy side by side; a policy that cannot plan this host shows its error."""
    from dataclasses import replace

    from rich.table import Table

    from ascendtune.cli.common import stdout_console
    from ascendtune.cli.planopts import build_request
    from ascendtune.core.errors import PlanError
    from ascendtune.core.planner import POLICIES, make_plan

    # options are checked once: a bad device list is the user's error, not a policy's
    base = build_request(host, policy=POLICY_NAMES[0], **kw)
    vendor = (host.npus or host.gpus)[0].vendor if (host.npus or host.gpus) else None
    plans: dict[str, Plan | str] = {}
    from ascendtune.core.model import Vendor

    # NPUs: vLLM-Ascend's plan and ours; GPUs: ours and torchrun's modes (all stay usable alone)
    torch_modes = ("node", "socket", "exclusive", "core-complex")
    for name in POLICY_NAMES:
        if vendor is not None and vendor not in POLICIES[name].vendors:
            continue
        if vendor is Vendor.HUAWEI and name in torch_modes:
            continue
        try:
            plans[name] = make_plan(host, replace(base, policy=name))
        except PlanError as e:
            plans[name] = e.message
    ok = [p for p in plans.values() if not isinstance(p, str)]
    if json_out:
        print_json(
            {
                "policies": {
                    n: (plan_document(p) if not isinstance(p, str) else {"error": p})
                    for n, p in plans.items()
                }
            }
        )
    if not ok:
        raise PlanError(
            "no policy can plan this host: " + "; ".join(f"{n}: {p}" for n, p in plans.items())
        )
    if json_out:
        return
    con = stdout_console()
    t = Table(title="plan: every policy side by side (CPUs, locality)", title_justify="left")
    t.add_column("rank", justify="right")
    t.add_column("device", justify="right")
    for n in plans:
        t.add_column(n)
    first = ok[0]
    for i, r in enumerate(first.ranks):
        cells = []
        for p in plans.values():
            if isinstance(p, str):
                cells.append("" if i else "error (below)")
                continue
            rp = p.ranks[i]
            cells.append(f"{_fmt(rp.cpus)} ({_locality(rp.locality)})")
        t.add_row(str(r.rank), str(r.device), *cells)
    con.print(t)
    for n, p in plans.items():
        if isinstance(p, str):
            con.print(f"{n}: error: {p}")
            continue
        summary = f"{len(p.overlaps)} overlaps, {len(p.idle_cpus)} idle CPUs"
        con.print(
            f"{n}: mode {p.mode}; {summary}"
            + (f"; {len(p.findings)} findings" if p.findings else "")
        )
