"""MindIE's binding (MindIE-LLM's model runner): on unless BIND_CPU is set to anything but "1";
once the NPU is set, the process is bound to its share of the NPU's NUMA node, CPU_BINDING_NUM
CPUs per NPU when set."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="mindie",
    name="MindIE BIND_CPU",
    family=None,
    configured=(
        "BIND_CPU unset or 1 (on by default; any other value turns it off)",
        "CPU_BINDING_NUM=N (CPUs per NPU; default: the node's CPUs split evenly over its NPUs)",
    ),
    acts="device init",
    threads=("main",),
    on_narrower="override",
    narrower_note="it does not look at the mask it inherits: it sets the process's mask (the "
    "main thread; threads started later inherit it) to its slice of the NPU's NUMA node as "
    "lscpu lists it, cpuset or not (the kernel keeps the intersection; a failure is logged at "
    "info level and binding skipped)",
    off="BIND_CPU=0",
    off_env=("export BIND_CPU=0",),
    evidence=(
        Evidence(
            "Ascend/MindIE-LLM mindie_llm/runtime/utils/helpers/env.py (BIND_CPU defaults to "
            '"1", compared with "1"), runtime/model_runner/model_runner.py (bind_cpus after '
            "set_device), runtime/utils/cpu/affinity.py (node from the NPU's PCIe NUMA node, "
            "else NPUs spread evenly over the nodes; psutil cpu_affinity of the process)",
            "commit 8b4871a (2026-04-23)",
            "source",
        ),
        Evidence(
            "Ascend/MindIE-LLM docs/zh/user_guide/user_manual/environment_variable.md: BIND_CPU, "
            "CPU_BINDING_NUM",
            "commit 8b4871a (2026-04-23)",
            "doc",
        ),
    ),
)


def is_mindie(w: Worker) -> bool:
    return any("mindie" in a.lower() for a in w.argv[:3])


def act(w: Worker, m: Masks) -> Action | None:
    if not is_mindie(w):
        return None
    raw = w.env.get("BIND_CPU")
    if w.env_known and raw is not None and raw.strip() != "1":
        return None  # off: only "1" (or unset) turns it on
    n = w.env.get("CPU_BINDING_NUM")
    unset = "BIND_CPU unset" if w.env_known else "BIND_CPU not read"
    how = (f"BIND_CPU={raw}" if raw is not None else f"{unset} (on by default)") + (
        f", CPU_BINDING_NUM={n}" if n else ""
    )
    share = f"{n} CPUs" if n else "an even share of the node's CPUs"
    return Action(
        INFO,
        how,
        "binds",
        {"main": None},
        f"once the NPU is set, the process is bound to {share} on its NPU's NUMA node (its "
        "slice is not modelled here); threads started later inherit it",
        main_only=True,
    )
