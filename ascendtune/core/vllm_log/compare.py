"""The log beside ascendtune's prediction: the vLLM-Ascend version it names, the plan request that
covers its workers, and each logged pool compared with the predicted one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.findings import Finding
from ascendtune.core.vllm_log.findings import worker_name
from ascendtune.core.vllm_log.model import LogReport

if TYPE_CHECKING:  # the planner (its engine and vendors) is imported only where a plan is made
    from ascendtune.core.planner.model import Plan, PlanRequest


def check_target(report: LogReport) -> tuple[str | None, str]:
    """The vLLM-Ascend version the log names (ascendtune.core.vllm_ascend), or the release that
    pairs with the vLLM it names, and why (None: the log names neither, or a vLLM newer than any
    release pairs with)."""
    from ascendtune.core import vllm_ascend
    from ascendtune.core.vllm_ascend import pep440

    raw = report.versions.get("vllm_ascend")
    if raw:
        got = vllm_ascend.package_version(raw)
        if got is not None:
            said = f"the log names vLLM-Ascend {raw}"
            return got.entry.name, f"{said} ({raw} {got.how})" if got.how else said
    vllm = report.versions.get("vllm")
    parsed = pep440.parse(vllm) if vllm else None
    if vllm and parsed is not None:
        lines = [e for e in vllm_ascend.ENTRIES if e.is_release]
        release = parsed.key[1]

        def paired(e: vllm_ascend.VllmAscendVersion, n: int) -> bool:
            p = pep440.parse(e.vllm)
            return p is not None and p.key[1][:n] == release[:n]

        # a release pairs with one vLLM: the release of the same number, else the newest release
        # paired with that vLLM, else with its minor version
        same = [e for e in lines if e.package_versions[0] == parsed.public]
        for n in (len(release), 2):
            hits = same or [e for e in lines if paired(e, n)]
            if hits:
                return hits[-1].name, f"the log names vLLM {vllm}, which {hits[-1].name} pairs with"
        oldest = pep440.parse(lines[0].vllm)
        if oldest is not None and parsed.key < oldest.key:
            return lines[0].name, (
                f"the log names vLLM {vllm}, older than any release ascendtune knows pairs with: "
                f"{lines[0].name} is the oldest"
            )
    if raw or vllm:
        named = f"vLLM-Ascend {raw}" if raw else f"vLLM {vllm}"
        return None, f"the log names {named}, which is not a version ascendtune knows"
    return None, "the log names no vLLM or vLLM-Ascend version"


def plan_request(report: LogReport) -> PlanRequest:
    """What to ask the planner so its vllm-ascend prediction covers the logged workers, on the
    version the log names when it is known."""
    from ascendtune.core import vllm_ascend
    from ascendtune.core.planner.model import PlanRequest

    name, _ = check_target(report)
    visible: list[int] = []
    for w in report.workers:
        for n in w.visible_npus:
            if n not in visible:
                visible.append(n)
    return PlanRequest(
        policy="vllm-ascend",
        visible=tuple(visible) if visible else None,
        visible_source="the log's visible_npus" if visible else "all",
        target=vllm_ascend.get(name) if name else None,
    )


def compare_with_plan(report: LogReport, plan: Plan) -> tuple[Finding, ...]:
    """Logged pools beside the predicted ones, NPU by NPU: each difference becomes a finding."""
    by_npu = {rp.logical_id: rp for rp in plan.ranks}
    out: list[Finding] = []
    matched: list[int] = []
    for w in report.workers:
        if w.plan is None or not w.plan.cpus:
            continue
        rank = (w.rank,) if w.rank is not None else ()
        rp = by_npu.get(w.plan.npu)
        if rp is None:
            out.append(
                Finding(
                    "plan_npu_unpredicted",
                    "warning",
                    f"{worker_name(w)} was bound for NPU {w.plan.npu}, which ascendtune's plan does not "
                    f"give a pool (planned NPUs: {format_cpulist(by_npu)})",
                    "the host given (--sysroot/--demo) may not be the one that wrote the log",
                    ranks=rank,
                )
            )
            continue
        diffs: list[str] = []
        for role, logged, predicted in (
            ("main", w.plan.main, frozenset(rp.roles.main)),
            ("acl", w.plan.acl, frozenset(rp.roles.acl)),
            ("release", w.plan.release, frozenset(rp.roles.release)),
        ):
            if w.mode == "a5_clusters" and role != "main":
                continue
            if logged != predicted:
                diffs.append(
                    f"{role} {format_cpulist(logged) or '(none)'} "
                    f"(predicted {format_cpulist(predicted) or '(none)'})"
                )
        for irq in w.irqs[:1]:
            got = (irq.sq_cpu, irq.cq_cpu)
            want = tuple(rp.roles.irq[:2])
            if want and got != want:
                diffs.append(f"IRQ CPUs {got[0]},{got[1]} (predicted {','.join(map(str, want))})")
        if diffs:
            out.append(
                Finding(
                    "plan_differs",
                    "warning",
                    f"{worker_name(w)} on NPU {w.plan.npu}: " + "; ".join(diffs),
                    "the host changed since the log (cpuset, visible NPUs, busy NPUs), or the "
                    "log comes from another host or version",
                    ranks=rank,
                )
            )
        elif w.rank is not None:
            matched.append(w.rank)
    if matched:
        out.append(
            Finding(
                "plan_matches",
                "info",
                "the logged pools are the ones ascendtune predicts for this host",
                ranks=tuple(sorted(set(matched))),
            )
        )
    return tuple(out)
