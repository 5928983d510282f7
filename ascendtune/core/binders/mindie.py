"""MindIE's binding: BIND_CPU turns it on, CPU_BINDING_NUM sets the CPUs per NPU."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="mindie",
    name="MindIE BIND_CPU",
    family=None,
    configured=("BIND_CPU=1", "CPU_BINDING_NUM=N"),
    acts="worker start",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="override",
    narrower_note="reading of MindIE's docs, not checked in code: binds each NPU's process to "
    "CPUs of its NUMA node",
    off="BIND_CPU=0",
    off_env=("export BIND_CPU=0",),
    evidence=(
        Evidence(
            "MindIE environment variables: BIND_CPU, CPU_BINDING_NUM", "MindIE 2.x docs", "reading"
        ),
    ),
)


def act(w: Worker, m: Masks) -> Action | None:
    v = (w.env.get("BIND_CPU") or "").strip()
    if v not in ("1", "true", "True"):
        return None
    n = w.env.get("CPU_BINDING_NUM")
    how = f"BIND_CPU={v}" + (f", CPU_BINDING_NUM={n}" if n else "")
    return Action(INFO, how, "binds", dict.fromkeys(m), "binds the process near its NPU at start")
