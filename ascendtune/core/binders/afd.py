"""afd-plugin (attention-FFN disaggregation): its FFN workers bind themselves at start."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="afd-plugin",
    name="afd-plugin FFN worker binding",
    family=None,
    configured=("the afd-plugin package installed beside vllm_ascend (FFN workers)",),
    acts="worker start",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="override",
    narrower_note="reading of afd-plugin #321, not checked in its source: it sets its own CPUs",
    off="run the FFN workers without afd-plugin's binding (afd-plugin #321; no switch known to ascendtune)",
    evidence=(Evidence("afd-plugin #321 (as cited by ascendtune issue 24)", "2026", "reading"),),
)

NAMES = ("afd_plugin", "afd-plugin", "vllm_afd")


def act(w: Worker, m: Masks) -> Action | None:
    pkg = next((n for n in NAMES if n in w.plugins), None)
    if pkg is None:
        return None
    ffn = any("ffn" in a.lower() for a in w.argv)
    if not ffn:
        return None
    return Action(
        INFO,
        f"{pkg} {w.plugins[pkg]} (FFN worker)",
        "binds",
        dict.fromkeys(m),
        "the FFN worker binds itself at start; its CPUs are not modelled",
    )
