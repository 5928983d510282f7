"""afd-plugin (attention-FFN disaggregation): its FFN workers, which bind themselves by
afd-plugin #321 (not checked); what its source does show is that vLLM-Ascend's binding after
warm-up never runs in them."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="afd-plugin",
    name="afd-plugin FFN worker binding",
    family=None,
    configured=(
        "the vllm-afd-plugin distribution (package afd_plugin) installed beside vllm_ascend, "
        "its FFN worker chosen with --worker-cls afd_plugin.v1.worker.npu.ffn_worker.AFDNPUFFNWorker",
    ),
    acts="worker start",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="override",
    narrower_note="afd-plugin #321 (as issue 24 cites it) has FFN workers bind themselves; not "
    "checked: the source read (commit 2e4378f, 2026-08-08) predates it and has no binding of "
    "its own (no sched_setaffinity, no CPU variable)",
    off="run the FFN workers without afd-plugin's binding (afd-plugin #321; no switch known to ascendtune)",
    evidence=(
        Evidence("afd-plugin #321 (as cited by ascendtune issue 24)", "2026", "reading"),
        Evidence(
            "vllm-project/afd-plugin afd_plugin/v1/worker/npu/ffn_worker.py: AFDNPUFFNWorker "
            "subclasses vLLM-Ascend's NPUWorker, calls its _init_device, and replaces "
            "compile_or_warm_up_model with one that returns at once; pyproject.toml names the "
            "distribution vllm-afd-plugin",
            "commit 2e4378f (2026-08-08)",
            "source",
        ),
    ),
)

# the distribution as installed (vllm-afd-plugin: its dist-info is vllm_afd_plugin-V), and
# the names earlier readings used
NAMES = ("vllm_afd_plugin", "afd_plugin", "afd-plugin", "vllm_afd")

# what vLLM-Ascend's binding meets in an FFN worker, read in afd-plugin's source (2e4378f)
SKIPS_WARMUP = (
    "afd-plugin's FFN worker replaces compile_or_warm_up_model with one that returns at once "
    "(afd_plugin/v1/worker/npu/ffn_worker.py, 2e4378f): a binding that runs after warm-up "
    "never runs on it"
)


def ffn_worker(w: Worker) -> str | None:
    """The afd-plugin distribution of an FFN worker (its command line names the FFN worker),
    else None."""
    pkg = next((n for n in NAMES if n in w.plugins), None)
    if pkg is None or not any("ffn" in a.lower() for a in w.argv):
        return None
    return pkg


def act(w: Worker, m: Masks) -> Action | None:
    pkg = ffn_worker(w)
    if pkg is None:
        return None
    return Action(
        INFO,
        f"{pkg} {w.plugins[pkg]} (FFN worker)",
        "binds",
        dict.fromkeys(m),
        "the FFN worker binds itself at start; its CPUs are not modelled",
    )
