"""`explain binding`: the steps vLLM-Ascend's enable_cpu_binding takes for one rank on a host,
each with its input and result, read from the planner's own trace (so it cannot drift from
`plan`), then where the better policy departs from it and why. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ascendtune.core import vllm_ascend as va
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import UsageError
from ascendtune.core.model import Host
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, Plan, RankPlan
from ascendtune.core.planner.trace import PoolTrace, RankTrace, VllmTrace


@dataclass(frozen=True)
class Step:
    name: str
    input: dict[str, Any]
    result: dict[str, Any]
    words: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "input": self.input, "result": self.result, "words": self.words}


@dataclass(frozen=True)
class BindingExplanation:
    rank: int
    target: str
    mode: str
    steps: tuple[Step, ...]
    better_policy: str
    better: dict[str, Any] | None  # the better policy's pool for the rank
    departures: tuple[str, ...]  # where and why it differs, in words

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "target": self.target,
            "mode": self.mode,
            "steps": [s.to_json() for s in self.steps],
            "better": {
                "policy": self.better_policy,
                "plan": self.better,
                "departures": list(self.departures),
            },
        }


def _f(cpus: Any) -> str:
    return format_cpulist(cpus) or "-"


def _ids(xs: Any) -> list[int]:
    return [int(x) for x in xs]


def _nodes(host: Host, cpus: Any) -> list[int]:
    return list(host.nodes_of(frozenset(cpus)))


def _rank_json(host: Host, rp: RankPlan) -> dict[str, Any]:
    return {
        "device": rp.device,
        "cpus": _f(rp.cpus),
        "numa_nodes": _nodes(host, rp.cpus),
        "device_node": rp.device_node,
        "locality": rp.locality,
        "roles": rp.roles.to_json(),
    }


def explain_binding(
    host: Host, trace: VllmTrace, plan: Plan, rank: int, better: Plan | str | None
) -> BindingExplanation:
    """The steps for rank (a rank of plan, made by make_plan with trace); better is the better
    policy's plan of the same request, or why it could not plan the host."""
    rt = next((r for r in trace.ranks if r.rank == rank), None)
    rp = plan.rank(rank)
    if rt is None or rp is None:
        raise UsageError(
            f"--rank {rank}: the plan has ranks 0-{len(plan.ranks) - 1}"
            if plan.ranks
            else f"--rank {rank}: the plan has no rank"
        )
    steps: list[Step] = [_visible(trace, rt), _busy(trace, rt), _npu(trace, rt)]
    steps.append(
        Step(
            "mode",
            {"soc": trace.soc, "npu_smi_affinity": bool(trace.affinity)},
            {"mode": trace.mode},
            f"SoC {trace.soc}: mode {trace.mode}"
            + ("; " + "; ".join(trace.mode_notes) if trace.mode_notes else ""),
        )
    )
    if rt.skipped is not None or rp.skipped is not None:
        # rt.skipped: this rank's own skip; else the release refuses the host as a whole
        why = rt.skipped if rt.skipped is not None else rp.skipped
        non_arm = rt.skipped is None and any(f.code == "not_arm" for f in plan.findings)
        logs = (
            "'CPU binding skipped: non-ARM CPU detected.' (info)"
            if non_arm
            else f"'Bind cpus failed in rank{rt.local}: ... Skip binding cpu.'"
        )
        steps.append(
            Step(
                "skipped",
                {"npu": rt.logical},
                {"skipped": why},
                f"binding is skipped: {why}; the worker logs {logs} and runs unbound",
            )
        )
    else:
        pt = trace.pools.get(rt.running)
        if pt is not None:
            steps += _pool_steps(host, trace, pt, rt.logical)
        steps += _role_steps(host, plan, rp)
    departures, bjson = _departures(host, rp, better)
    return BindingExplanation(
        rank,
        trace.target,
        trace.mode,
        tuple(steps),
        "numa-local",
        bjson,
        tuple(departures),
    )


def _visible(trace: VllmTrace, rt: RankTrace) -> Step:
    env = list(trace.env_visible) if trace.env_visible is not None else None
    inp: dict[str, Any] = {
        "npus_on_host": trace.all_ids,
        "visible_devices": env,
        "device_ids": list(trace.device_ids) if trace.device_ids is not None else None,
        "dp": trace.dp,
        "ranks_per_engine": trace.world,
    }
    words = (
        f"the job drives NPUs {','.join(map(str, trace.jobs))} in rank order"
        + (f" (ASCEND_RT_VISIBLE_DEVICES={','.join(map(str, env))})" if env else " (every NPU)")
        + f"; rank {rt.rank} is local rank {rt.local} of DP engine {rt.dp_rank} and drives NPU "
        f"{rt.device}"
    )
    return Step(
        "visible_npus",
        inp,
        {
            "jobs": trace.jobs,
            "rank": rt.rank,
            "dp_rank": rt.dp_rank,
            "local_rank": rt.local,
            "device": rt.device,
        },
        words,
    )


def _busy(trace: VllmTrace, rt: RankTrace) -> Step:
    return Step(
        "busy_npus",
        {"busy": trace.busy, "busy_source": trace.busy_source, "seen": list(rt.seen)},
        {"running": list(rt.running)},
        "binding runs after warm-up, so the job's own NPUs have a process by then; the worker "
        f"sees NPUs {','.join(map(str, rt.seen))} and keeps the busy ones, sorted: "
        f"[{', '.join(map(str, rt.running))}] (logged as visible_npus in [cpu_bind_mode])",
    )


def _npu(trace: VllmTrace, rt: RankTrace) -> Step:
    rule = (
        "sorted busy list indexed by local rank"
        if trace.npu_of_rank == va.SORTED_BUSY
        else "the device vLLM assigned the rank"
    )
    words = f"{trace.target}: {rule}; rank {rt.rank} gets NPU {rt.logical}'s pool ({rt.how})"
    if rt.logical != rt.device and rt.skipped is None:
        words += f", but it drives NPU {rt.device}: the pool is another NPU's"
    return Step(
        "npu_of_rank",
        {"local_rank": rt.local, "rule": trace.npu_of_rank, "running": list(rt.running)},
        {"npu": rt.logical, "matches_device": rt.logical == rt.device, "skipped": rt.skipped},
        words,
    )


def _pool_steps(host: Host, trace: VllmTrace, pt: PoolTrace, npu: int) -> list[Step]:
    out: list[Step] = []
    if trace.mode == GLOBAL_SLICE:
        pool = pt.final.get(npu, [])
        out.append(
            Step(
                "global_slice",
                {
                    "cpuset": _f(trace.usable),
                    "cpus": len(trace.usable),
                    "npus_divided_by": pt.total,
                    "npu": npu,
                },
                {"per_npu": pt.per_npu, "extra": pt.extra, "pool": _f(pool)},
                f"the sorted cpuset ({len(trace.usable)} CPUs) is cut into {pt.total} slices "
                f"(every NPU of the host, visible or not): {pt.per_npu} CPUs each"
                + (f", the first {pt.extra} one more" if pt.extra else "")
                + f"; NPU {npu} takes slice {npu}: {_f(pool)}, NUMA and SMT ignored",
            )
        )
        return out
    if trace.mode == A5_CLUSTERS:
        return out
    aff = trace.affinity.get(npu, frozenset())
    base = pt.base.get(npu, [])
    out.append(
        Step(
            "affinity",
            {"npu": npu, "npu_smi_affinity": _f(aff), "cpuset": _f(trace.usable)},
            {"cpus": _f(base), "numa_nodes": _nodes(host, base)},
            f"npu-smi gives NPU {npu} the CPUs {_f(aff)}; within the cpuset that is {_f(base)}",
        )
    )
    ext = pt.extended.get(npu, base)
    nxt = pt.next_node.get(npu)
    out.append(
        Step(
            "extend_next_numa",
            {"cpus": _f(base), "numa_nodes": _nodes(host, base), "next_node": nxt},
            {"cpus": _f(ext), "numa_nodes": _nodes(host, ext)},
            (
                f"the pool lies on one NUMA node, so the allowed CPUs of the next node ({nxt}) "
                f"are added: {_f(ext)}"
                if nxt is not None
                else "the pool spans several NUMA nodes, so it is not extended"
            ),
        )
    )
    shared = pt.shared.get(npu, [npu])
    final = pt.final.get(npu, ext)
    others = [n for n in shared if n != npu]
    out.append(
        Step(
            "split_identical_pools",
            {
                "pool": _f(ext),
                "npus_with_this_pool": shared,
                "candidates": pt.candidates,
            },
            {"pool": _f(final), "numa_nodes": _nodes(host, final), "share": shared.index(npu)},
            (
                f"NPUs {','.join(map(str, shared))} have the same pool, so it is split into "
                f"{len(shared)} contiguous shares in NPU order; NPU {npu} takes share "
                f"{shared.index(npu)}: {_f(final)}"
                if others
                else f"no other candidate NPU has this pool; NPU {npu} keeps {_f(final)}"
            ),
        )
    )
    return out


def _role_steps(host: Host, plan: Plan, rp: RankPlan) -> list[Step]:
    r = rp.roles
    out = [
        Step(
            "roles",
            {"pool": _f(rp.cpus)},
            r.to_json(),
            (
                f"the first two CPUs ({_f(r.irq)}) are kept for the NPU's interrupts, acl_thread "
                f"gets {_f(r.acl)}, release_thread {_f(r.release)}, the main threads the rest "
                f"({_f(r.main)})"
                if r.irq
                else f"every thread of the worker gets {_f(r.main)}"
            ),
        )
    ]
    if r.irq:
        out.append(
            Step(
                "interrupts",
                {"npu": rp.logical_id, "irq_cpus": _f(r.irq)},
                {
                    "sq_send_trigger_irq": r.irq[0],
                    "cq_update_irq": r.irq[1] if len(r.irq) > 1 else r.irq[0],
                },
                f"NPU {rp.logical_id}'s send-queue interrupt goes to CPU {r.irq[0]} and its "
                f"completion-queue interrupt to CPU {r.irq[-1]}, through /proc/irq (irqbalance "
                "is stopped first; a read-only /proc/irq skips this step only)",
            )
        )
    nodes = _nodes(host, rp.cpus)
    out.append(
        Step(
            "memory",
            {"pool": _f(rp.cpus)},
            {"numa_nodes": nodes},
            f"migratepages moves the process's memory to node(s) {','.join(map(str, nodes))} "
            f"(logged as [migrate] NPU:{rp.logical_id} -> NUMA {nodes})"
            + (
                f", away from the NPU's own node {rp.device_node}"
                if rp.device_node is not None and rp.device_node not in nodes
                else ""
            ),
        )
    )
    out.append(
        Step(
            "log_line",
            {},
            {"line": rp.vllm_log_line(plan.mode)},
            "the plan line the worker prints after 'The CPU allocation plan is as follows:'",
        )
    )
    return out


def _departures(
    host: Host, rp: RankPlan, better: Plan | str | None
) -> tuple[list[str], dict[str, Any] | None]:
    if better is None:
        return [], None
    if isinstance(better, str):
        return [f"numa-local cannot plan this host: {better}"], None
    bp = better.rank(rp.rank)
    if bp is None:
        return [], None
    out: list[str] = []
    vn = _nodes(host, rp.cpus)
    bn = _nodes(host, bp.cpus)
    if rp.skipped is not None:
        out.append(
            f"vLLM-Ascend binds nothing for this rank; numa-local gives it {_f(bp.cpus)} on "
            f"node(s) {','.join(map(str, bn))}"
        )
    if rp.logical_id != rp.device:
        out.append(
            f"vLLM-Ascend gives rank {rp.rank} NPU {rp.logical_id}'s pool though it drives NPU "
            f"{rp.device}; numa-local plans by the NPU the rank drives"
        )
    if rp.device_node is not None and rp.cpus and rp.device_node not in vn:
        out.append(
            f"vLLM-Ascend's pool {_f(rp.cpus)} lies on node(s) {','.join(map(str, vn))}, not on "
            f"NPU {rp.device}'s node {rp.device_node}: host-device copies and the memory moved by "
            "migratepages cross nodes; numa-local keeps the rank on node "
            f"{rp.device_node} ({_f(bp.cpus)}), sharing it with the node's other NPUs in whole cores"
        )
    elif rp.locality is not None and bp.locality is not None and bp.locality > rp.locality:
        out.append(
            f"locality {bp.locality:.0%} under numa-local vs {rp.locality:.0%}: vLLM-Ascend's "
            "extension onto the next node takes CPUs away from the NPU's node"
        )
    if not out and rp.cpus:
        out.append(
            f"numa-local gives {_f(bp.cpus)} (locality "
            + (f"{bp.locality:.0%}" if bp.locality is not None else "?")
            + "); vLLM-Ascend's pool is already on the NPU's node"
        )
    return out, _rank_json(host, bp)
