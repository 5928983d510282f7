"""vLLM's --numa-bind, --numa-bind-nodes, --numa-bind-cpus (vLLM PR #38635): on GPUs the
worker is started under numactl; on Ascend vLLM-Ascend turns it into enable_cpu_binding and
ignores the node and CPU lists (vllm-ascend PR #8703)."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.errors import ParseError

INFO = Binder(
    id="vllm-numa-bind",
    name="vLLM --numa-bind",
    family=None,  # a numactl wrapper on GPUs, vLLM-Ascend's own switch on Ascend
    configured=("--numa-bind", "--numa-bind-nodes N,...", "--numa-bind-cpus LIST;..."),
    acts="launch",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="narrow",
    narrower_note="numactl inside the cpuset keeps the intersection",
    off="drop --numa-bind, --numa-bind-nodes and --numa-bind-cpus",
    evidence=(
        Evidence(
            "vLLM PR #38635 (NUMA binding for GPU workers, numactl at launch)", "vLLM 0.19+", "PR"
        ),
        Evidence(
            "vllm-ascend PR #8703 (--numa-bind mapped to enable_cpu_binding)", "2026-04", "PR"
        ),
    ),
    versions=(
        ("vLLM on GPU", "EngineCore and workers started under numactl"),
        ("vLLM-Ascend", "enable_cpu_binding: true; the node and CPU lists are ignored"),
    ),
)


def flags(argv: tuple[str, ...]) -> list[str]:
    return [
        a
        for a in argv
        if a.split("=")[0] in ("--numa-bind", "--numa-bind-nodes", "--numa-bind-cpus")
    ]


def _value(argv: tuple[str, ...], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a.startswith(name + "="):
            return a.partition("=")[2]
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def act(w: Worker, m: Masks) -> Action | None:
    got = flags(w.argv)
    if not got:
        return None
    how = " ".join(got)
    if w.vllm_ascend is not None:
        return Action(
            INFO,
            how,
            "unknown",
            {},
            "on Ascend this only turns on vLLM-Ascend's enable_cpu_binding; the node and CPU "
            "lists are ignored",
        )
    cpus_text = _value(w.argv, "--numa-bind-cpus")
    cpus = None
    if cpus_text:
        try:
            cpus = parse_cpulist(cpus_text.split(";")[0])
        except ParseError:
            cpus = None
    base = m["main"]
    if cpus is not None:
        got_cpus = cpus & base if base is not None else cpus
        return Action(
            INFO,
            how,
            "binds",
            dict.fromkeys(m, got_cpus),
            f"numactl --physcpubind={format_cpulist(got_cpus)} at launch",
        )
    return Action(
        INFO,
        how,
        "binds",
        dict.fromkeys(m),
        "numactl around each worker at launch, its GPU's NUMA node",
    )
