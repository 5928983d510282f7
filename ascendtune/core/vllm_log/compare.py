"""The log beside ascendtune's prediction: the vLLM-Ascend version it names, the plan request that
covers its workers, and each logged pool compared with the predicted one."""

from __future__ import annotations

import re

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.findings import Finding
from ascendtune.core.planner.model import Plan, PlanRequest
from ascendtune.core.vllm_log.findings import worker_name
from ascendtune.core.vllm_log.model import LogReport


def _version_tuple(v: str) -> tuple[int, int] | None:
    m = re.match(r"v?(\d+)\.(\d+)", v.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_target(report: LogReport) -> tuple[str | None, str]:
    """The known vLLM-Ascend version the log names (the registry in core/versions.py), and why
    (None: the log names none, or one ascendtune does not know)."""
    from ascendtune.core import versions

    raw = report.versions.get("vllm_ascend")
    if raw:
        entry = versions.from_package_version(raw)
        if entry is not None:
            return entry.name, f"the log names vLLM-Ascend {raw}"
    vllm = report.versions.get("vllm")
    if vllm:
        vt = _version_tuple(vllm)
        lines = [e for e in versions.VERSIONS.values() if not e.name.startswith("main")]
        # a release line pairs with one vLLM: the newest line paired with that vLLM
        paired = [e for e in lines if _version_tuple(e.vllm.lstrip("v")) == vt]
        if paired:
            return paired[-1].name, f"the log names vLLM {vllm}, which {paired[-1].name} pairs with"
        oldest = lines[0]
        old = _version_tuple(oldest.vllm.lstrip("v"))
        if vt is not None and old is not None and vt < old:
            return oldest.name, (
                f"the log names vLLM {vllm}, older than any line ascendtune knows: "
                f"{oldest.name} is the oldest"
            )
    if raw or vllm:
        named = f"vLLM-Ascend {raw}" if raw else f"vLLM {vllm}"
        return None, f"the log names {named}, which is not a version ascendtune knows"
    return None, "the log names no vLLM or vLLM-Ascend version"


def plan_request(report: LogReport) -> PlanRequest:
    """What to ask the planner so its vllm-ascend prediction covers the logged workers, on the
    version the log names when it is known."""
    from ascendtune.core import versions

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
        target=versions.get(name) if name else None,
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
