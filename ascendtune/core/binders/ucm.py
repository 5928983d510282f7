"""The UCM cache plugin (unified-cache-management) with VLLM_CPU_AFFINITY=1: on NPU it patches
vLLM-Ascend's allocator and gives the second half of each main pool to its own ucm_* threads;
before that patch it split the NUMA node's CPUs between worker and store threads by itself."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import format_cpulist

INFO = Binder(
    id="ucm",
    name="UCM cache plugin (VLLM_CPU_AFFINITY=1)",
    family="vllm-ascend",
    configured=("VLLM_CPU_AFFINITY=1 with the ucm package installed beside vllm_ascend",),
    acts="after warm-up",
    threads=("main", "plugin"),
    on_narrower="narrow",
    narrower_note="it splits whatever main pool vLLM-Ascend computed; with vLLM-Ascend's binding "
    "off it binds nothing on NPU",
    off="VLLM_CPU_AFFINITY=0",
    off_env=("export VLLM_CPU_AFFINITY=0",),
    evidence=(
        Evidence(
            "unified-cache-management PR #1074 (align UCM and vllm-ascend CPU affinity)",
            "2026-07-07",
            "PR",
        ),
        Evidence(
            "unified-cache-management PR #1125 (vLLM-Ascend v0.23.0rc1 patch)", "2026-07-20", "PR"
        ),
        Evidence("unified-cache-management PR #854 (standalone NUMA split)", "2026-03-23", "PR"),
    ),
    versions=(
        (
            "before PR #1074",
            "splits the device's NUMA CPUs between worker and store threads itself",
        ),
        ("PR #1074 on", "inside vLLM-Ascend's CpuAlloc: main pool halved, second half to ucm_*"),
    ),
)

NAMES = ("ucm", "uc_manager", "unified_cache_management")


def installed(w: Worker) -> str | None:
    return next((n for n in NAMES if n in w.plugins), None)


def act(w: Worker, m: Masks) -> Action | None:
    if (w.env.get("VLLM_CPU_AFFINITY") or "").strip() not in ("1", "true", "True"):
        return None
    pkg = installed(w)
    if pkg is None and w.plugins:
        return None  # the plugins beside vllm_ascend were read and UCM is not among them
    how = "VLLM_CPU_AFFINITY=1" + (f" (ucm {w.plugins[pkg]})" if pkg else "")
    pool = m["main"]
    if pool is None:
        return Action(
            INFO,
            how,
            "splits",
            {"main": None, "plugin": None},
            "the first half of the main pool stays with the main thread, the second goes to ucm_*",
        )
    cpus = sorted(pool)
    half = len(cpus) - len(cpus) // 2
    first, second = frozenset(cpus[:half]), frozenset(cpus[half:])
    return Action(
        INFO,
        how,
        "splits",
        {"main": first, "omp": first, "rest": first, "plugin": second},
        f"main pool {format_cpulist(pool)}: {format_cpulist(first)} stays with the worker, "
        f"{format_cpulist(second)} goes to the ucm_* threads",
    )
