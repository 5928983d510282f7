"""vLLM-Ascend's own binding (`enable_cpu_binding`, cpu_binding.py), per release as the
registry (core/vllm_ascend) has it: whether the release ships one, whether it is on by default,
when the worker calls it. It reads the worker's Cpus_allowed_list and plans inside it: a mask
narrowed by an earlier binder makes it fail ("conflict with NUMA affinity", one warning line)
or re-slice what is left."""

from __future__ import annotations

from ascendtune.core import vllm_ascend as va
from ascendtune.core.binders import afd
from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Pool, Stage, Worker
from ascendtune.core.cpulist import format_cpulist

INFO = Binder(
    id="vllm-ascend",
    name="vLLM-Ascend enable_cpu_binding",
    family="vllm-ascend",
    configured=(
        "--additional-config '{\"enable_cpu_binding\": ...}' (default per release)",
        "vLLM's --numa-bind (mapped to enable_cpu_binding: true on Ascend)",
    ),
    acts="after warm-up",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="fail and warn",
    narrower_note="it plans inside the Cpus_allowed_list it inherits: the NPU affinity and that "
    "mask disjoint, it logs 'conflict with NUMA affinity' and binds nothing; otherwise it "
    "re-slices the narrowed mask",
    off="--additional-config '{\"enable_cpu_binding\": false}'",
    evidence=(
        Evidence(
            "vllm_ascend/cpu_binding.py, worker/worker*.py",
            "every release in `ascendtune explain versions`",
            "source",
        ),
        Evidence(
            "vllm-ascend PR #11307 (conflict with NUMA affinity under OMP_PROC_BIND)",
            "2026-07",
            "PR",
        ),
        Evidence(
            "vllm-ascend PR #8703 (--numa-bind mapped to enable_cpu_binding)", "2026-04", "PR"
        ),
    ),
    versions=(
        (
            "0.9.1rc1 on",
            "the registry's binding.impl: which cpu_binding.py, on_by_default, when it runs",
        ),
    ),
)

_STAGES: dict[str, Stage] = {
    va.RUNS_AT_START: "worker start",
    va.RUNS_AT_DEVICE: "device init",
    va.RUNS_AFTER_WARMUP: "after warm-up",
}


def stage_of(entry: va.VllmAscendVersion) -> Stage:
    return _STAGES.get(entry.binding.runs, "after warm-up")


def switched_on(w: Worker) -> tuple[bool, str]:
    """Whether the release binds for this worker, and how it was configured, in words."""
    entry = w.vllm_ascend
    assert entry is not None
    b = entry.binding
    if not b.ships:
        return False, f"{entry.name} ships no CPU binding"
    if w.cpu_binding is not None:
        return w.cpu_binding, f"enable_cpu_binding: {str(w.cpu_binding).lower()}"
    if any(a == "--numa-bind" or a.startswith("--numa-bind=") for a in w.argv):
        return True, "--numa-bind (vLLM-Ascend maps it to enable_cpu_binding: true)"
    word = "true" if b.on_by_default else "false"
    return b.on_by_default, f"enable_cpu_binding: {word} ({entry.name}'s default)"


def act(w: Worker, m: Masks) -> Action | None:
    if w.vllm_ascend is None:
        return None
    on, how = switched_on(w)
    if not on:
        return None
    stage = stage_of(w.vllm_ascend)
    if w.is_arm is False:
        return None  # cpu_binding.bind_cpus acts on ARM hosts only
    if stage == "after warm-up" and afd.ffn_worker(w) is not None:
        return Action(INFO, how, "skips", {}, afd.SKIPS_WARMUP, stage=stage)
    base = m["main"]
    pool = w.pool_for(base) if w.pool_for is not None else None
    when = f"{w.vllm_ascend.name}, {w.vllm_ascend.binding.runs}"
    if isinstance(pool, str):
        return Action(
            INFO,
            how,
            "fails",
            {},
            f"{when}: {pool} (logged as one warning; nothing bound)",
            stage=stage,
        )
    if pool is None and base is not None and len(base) < 5:
        pool = (
            f"the mask it inherits, {format_cpulist(base)}, has fewer than the 5 CPUs each NPU "
            "needs (or conflicts with the NUMA affinity)"
        )
    if isinstance(pool, str):
        return Action(
            INFO,
            how,
            "fails",
            {},
            f"{when}: {pool} (logged as one warning; nothing bound)",
            stage=stage,
        )
    narrowed = base is not None and w.frame is not None and base < w.frame
    if pool is None:
        note = f"{when}: binds the worker's pool"
        if narrowed and base is not None:
            note += f" planned inside the mask it inherits, {format_cpulist(base)}"
        return Action(INFO, how, "binds", dict.fromkeys(m), note, stage=stage)
    assert isinstance(pool, Pool)
    masks = dict.fromkeys(m, pool.main)
    masks["acl"] = pool.acl | pool.release
    note = (
        f"{when}: main {format_cpulist(pool.main)}, acl {format_cpulist(pool.acl)}, "
        f"release {format_cpulist(pool.release)}"
    )
    if narrowed and base is not None:
        note += f" (re-sliced from the inherited mask {format_cpulist(base)})"
    return Action(INFO, how, "binds", masks, note, stage=stage)
