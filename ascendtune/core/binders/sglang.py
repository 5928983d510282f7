"""SGLang's binders: SGLANG_SET_CPU_AFFINITY=1 (the scheduler binds itself to a share of the
machine's cores), --numa-node and automatic NUMA binding (numactl around each scheduler)."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="sglang",
    name="SGLang SGLANG_SET_CPU_AFFINITY / --numa-node / SGLANG_AUTO_NUMA_BIND",
    family=None,
    configured=("SGLANG_SET_CPU_AFFINITY=1", "--numa-node N,...", "SGLANG_AUTO_NUMA_BIND"),
    acts="worker start",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="override",
    narrower_note="SGLANG_SET_CPU_AFFINITY derives CPU ids from the machine's core count, not the "
    "cpuset (sglang #39552); NUMA binding intersects with the allowed CPUs since PR #26983",
    off="SGLANG_SET_CPU_AFFINITY=0, SGLANG_AUTO_NUMA_BIND=0, drop --numa-node",
    off_env=("export SGLANG_SET_CPU_AFFINITY=0 SGLANG_AUTO_NUMA_BIND=0",),
    evidence=(
        Evidence("sglang PR #2222 (SGLANG_SET_CPU_AFFINITY, off by default)", "2024-11", "PR"),
        Evidence(
            "sglang PR #19452 (automatic NUMA binding, numactl per scheduler)", "2026-02", "PR"
        ),
        Evidence("sglang PR #26983 (bind within allowed CPUs)", "2026-06", "PR"),
    ),
)


def _is_sglang(argv: tuple[str, ...]) -> bool:
    return any("sglang" in a for a in argv[:4])


def act(w: Worker, m: Masks) -> Action | None:
    if not _is_sglang(w.argv):
        return None
    parts = []
    if (w.env.get("SGLANG_SET_CPU_AFFINITY") or "").strip() in ("1", "true", "True"):
        parts.append("SGLANG_SET_CPU_AFFINITY=1")
    if "--numa-node" in w.argv or any(a.startswith("--numa-node=") for a in w.argv):
        parts.append("--numa-node")
    auto = (w.env.get("SGLANG_AUTO_NUMA_BIND") or "").strip()
    if auto in ("1", "true", "True"):
        parts.append(f"SGLANG_AUTO_NUMA_BIND={auto}")
    if not parts:
        return None
    return Action(
        INFO,
        ", ".join(parts),
        "binds",
        dict.fromkeys(m),
        "the scheduler process binds itself at start",
    )
