"""`log`'s findings: what the parsed log as a whole tells (no binding line, cut records, fallbacks,
workers sharing an NPU's pool or CPUs)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.findings import Finding
from ascendtune.core.vllm_log import model
from ascendtune.core.vllm_log.model import WorkerLog

if TYPE_CHECKING:
    from ascendtune.core.vllm_log.parser import LogParser


def log_findings(p: LogParser, workers: tuple[WorkerLog, ...]) -> list[Finding]:
    """What the log as a whole tells: binding absent or cut short, fallbacks, overlaps."""
    out: list[Finding] = []

    def ranks(ws: Iterable[WorkerLog]) -> tuple[int, ...]:
        return tuple(sorted({w.rank for w in ws if w.rank is not None}))

    if p.past:
        out.append(_earlier_runs(p))
    if not p.binding_seen and p.any_binding_seen:
        out.append(
            Finding(
                "no_binding_lines",
                "warning",
                f"the last run (from line {p.run_first}) holds no CPU-binding line; earlier "
                "runs did",
                "the server restarted and has not reached binding (after warm-up), or its "
                "workers died first; see `runs` for what earlier runs did",
            )
        )
    elif not p.binding_seen:
        out.append(
            Finding(
                "no_binding_lines",
                "info",
                "the log holds no CPU-binding line of vLLM-Ascend",
                "binding is off (additional-config enable_cpu_binding false), the log starts "
                "after the workers warmed up, or it is not a vLLM-Ascend log",
            )
        )
    by_cause: dict[str, list[WorkerLog]] = {}
    for w in workers:
        if w.binding == "failed":
            by_cause.setdefault(w.cause or "unknown", []).append(w)
    for code, ws in by_cause.items():
        w0 = ws[0]
        out.append(
            Finding(
                f"binding_failed.{code}",
                "error",
                f"CPU binding failed ({w0.reason}): {w0.cause_text}",
                w0.fix or "",
                ranks=ranks(ws),
            )
        )
    skipped = [w for w in workers if w.binding == "skipped"]
    if skipped:
        out.append(
            Finding(
                "binding_skipped",
                "warning",
                f"CPU binding was skipped: {skipped[0].reason}",
                "bind the workers yourself: `ascendtune bind --workers`",
                ranks=ranks(skipped),
            )
        )
    unseen = [w for w in workers if w.binding == "not seen"]
    if unseen and p.binding_seen:
        who = ", ".join(
            f"pid {w.pid}"
            + (f" (global rank {w.global_rank})" if w.global_rank is not None else "")
            for w in unseen[:8]
        )
        out.append(
            Finding(
                "binding_not_logged",
                "warning",
                f"{len(unseen)} worker(s) printed no CPU-binding line while others did: {who}",
                "binding runs after warm-up; a worker that died or hung before it, or a log "
                "cut early, shows so; check that worker's own lines",
                ranks=ranks(unseen),
            )
        )
    for prefix, code, hint in (
        (
            "irq:",
            "irq_skipped",
            "start the container with `--privileged=true`, or bind "
            "the NPU IRQs on the host (`ascendtune plan` gives the IRQ CPUs)",
        ),
        ("memory:", "memory_not_moved", "install numactl (migratepages) in the image"),
    ):
        texts: dict[str, list[WorkerLog]] = {}
        for w in workers:
            for s in w.skipped_steps:
                if s.startswith(prefix) and "by design" not in s:
                    texts.setdefault(s, []).append(w)
        for text, ws in texts.items():
            out.append(Finding(code, "warning", text, hint, ranks=ranks(ws)))
    silent = [
        w
        for w in workers
        if w.binding == "bound"
        and w.plan is not None
        and w.mode in ("topo_affinity", "global_slice")
        and not w.irqs
        and not any(s.startswith("irq:") for s in w.skipped_steps)
    ]
    if silent:
        out.append(
            Finding(
                "irq_not_logged",
                "info",
                "no IRQ binding line after the plan: vLLM-Ascend up to v0.26.0rc returns "
                "silently when /proc/irq is not writable (or the log was cut)",
                "check `/proc/irq/*/smp_affinity_list` of the NPU's sq_send_trigger_irq",
                ranks=ranks(silent),
            )
        )
    if p.fallback_ranks:
        out.append(
            Finding(
                "topo_fallback",
                "warning",
                "npu-smi gave no topology affinity: binding fell back to global_slice, "
                "which ignores NUMA",
                "check `npu-smi info -t topo` (driver version)",
                ranks=tuple(sorted(p.fallback_ranks)),
            )
        )
    if p.irqbalance_stopped:
        out.append(
            Finding(
                "irqbalance_stopped",
                "info",
                "vLLM-Ascend stopped the irqbalance service to bind NPU IRQs; it stays stopped",
                "`systemctl start irqbalance` after the server exits, if the host needs it",
            )
        )
    out.extend(_overlaps(workers))
    cut_plans = [w for w in p.workers.values() if w.cut_plan and w.plan is None]
    if cut_plans:
        out.append(
            Finding(
                "plan_line_cut",
                "warning",
                f"{len(cut_plans)} plan line(s) are cut short: those workers' CPUs are unknown",
                "read the full log (not a truncated copy)",
                ranks=tuple(sorted({w.rank for w in cut_plans if w.rank is not None})),
            )
        )
    if p.cut:
        out.append(
            Finding(
                "lines_cut",
                "info",
                f"{p.cut} line(s) longer than {model.MAX_LINE_BYTES} bytes were cut",
            )
        )
    if p.truncated:
        out.append(
            Finding(
                "truncated",
                "warning",
                f"{p.stop_reason or 'reading stopped early'}; later lines were not read",
                "cut the log to the server start-up (binding happens after warm-up)",
            )
        )
    if p.dropped_workers:
        out.append(
            Finding(
                "too_many_workers",
                "warning",
                f"more than {model.MAX_WORKERS} workers: the rest were not tracked",
            )
        )
    if p.args_unparsed:
        out.append(
            Finding(
                "args_unparsed",
                "info",
                "the `non-default args` line could not be read (cut short, too large, or not "
                "a Python literal)",
            )
        )
    return out


def _earlier_runs(p: LogParser) -> Finding:
    """The log holds several server runs: this report is of the last; what the others did."""
    said = []
    for r in p.past[-4:]:
        counts = ", ".join(f"{n} {b}" for b, n in r.counts.items() if n) or "no worker"
        said.append(f"run {r.run} (lines {r.first_line}-{r.last_line}): {counts}")
    more = f" ({len(p.past) - 4} more before)" if len(p.past) > 4 else ""
    return Finding(
        "earlier_runs",
        "info",
        f"the log holds {len(p.past) + 1} server runs; this report is of the last (from line "
        f"{p.run_first}: {p.run_started}); earlier{more}: " + "; ".join(said),
        "a log appended across restarts: each run is judged alone (`runs` in --json)",
    )


def _overlaps(workers: tuple[WorkerLog, ...]) -> list[Finding]:
    """Workers of one log bound to the same NPU's pool or to shared CPUs (vLLM ≥ 0.24 with DP
    before vLLM-Ascend PR #15517: every DP engine indexes the unnarrowed NPU list by local rank)."""
    out: list[Finding] = []
    planned = [w for w in workers if w.plan is not None and w.plan.cpus]
    same_npu: dict[int, list[WorkerLog]] = {}
    for w in planned:
        assert w.plan is not None
        same_npu.setdefault(w.plan.npu, []).append(w)
    for npu, ws in sorted(same_npu.items()):
        if len(ws) > 1:
            who = ", ".join(worker_name(w) for w in ws[:_NAMED])
            if len(ws) > _NAMED:
                who += f" and {len(ws) - _NAMED} more"
            out.append(
                Finding(
                    "same_npu_pool",
                    "warning",
                    f"{who} were all bound to NPU {npu}'s CPUs "
                    f"{format_cpulist(ws[0].plan.cpus if ws[0].plan else ())}",
                    "data parallel on vLLM ≥ 0.24 with vLLM-Ascend before the binding fix "
                    "(PR #15517): each DP engine binds to the first NPUs' pools; upgrade, or "
                    "rebind with `ascendtune bind --workers`",
                    ranks=tuple(sorted({w.rank for w in ws if w.rank is not None})),
                )
            )
    reported = {id(w) for ws in same_npu.values() if len(ws) > 1 for w in ws}
    # one finding per set of workers sharing CPUs (not per pair): a CPU shared by k ranks is
    # one entry, so the findings grow with the pools logged, never with the pairs of workers
    users: dict[int, list[int]] = {}
    for i, w in enumerate(planned):
        assert w.plan is not None
        for c in w.plan.cpus:
            users.setdefault(c, []).append(i)
    sharing: dict[tuple[int, ...], set[int]] = {}
    for c, idx in users.items():
        if len(idx) > 1 and not all(id(planned[i]) in reported for i in idx):
            sharing.setdefault(tuple(idx), set()).add(c)
    for members, cpus in sorted(sharing.items(), key=lambda kv: (min(kv[1]), kv[0])):
        ws = [planned[i] for i in members]
        names = ", ".join(worker_name(w) for w in ws[:_NAMED])
        if len(ws) > _NAMED:
            names += f" and {len(ws) - _NAMED} more"
        elif len(ws) == 2:
            names = " and ".join(worker_name(w) for w in ws)
        out.append(
            Finding(
                "shared_cpus",
                "warning",
                f"{names} share CPUs {format_cpulist(cpus)}"
                + (f" ({len(ws)} workers)" if len(ws) > 2 else ""),
                "pools of one job should not overlap; `ascendtune plan --policy compare` "
                "shows disjoint alternatives",
                ranks=tuple(sorted({w.rank for w in ws if w.rank is not None})),
            )
        )
    return out


_NAMED = 8  # workers named in one finding; the ranks field lists them all


def worker_name(w: WorkerLog) -> str:
    name = f"rank {w.rank}" if w.rank is not None else "a worker"
    if w.dp_rank is not None:
        name = f"DP{w.dp_rank} " + name
    return name + (f" (pid {w.pid})" if w.pid is not None else "")
