"""OpenMP's own binding: the libgomp bundled with PyTorch reads OMP_PROC_BIND / OMP_PLACES /
GOMP_CPU_AFFINITY when it loads (`import torch`) and pins the calling thread, the main thread,
to the first place; every thread created afterwards that is not an OpenMP worker inherits that
one CPU. KMP_AFFINITY acts only where Intel's OpenMP (libiomp5) is loaded instead."""

from __future__ import annotations

from collections.abc import Mapping

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import format_cpulist

INFO = Binder(
    id="openmp",
    name="OpenMP (libgomp bundled with PyTorch; Intel OpenMP)",
    family=None,
    configured=("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"),
    acts="import",
    threads=("main", "omp"),
    on_narrower="narrow",
    narrower_note="the first place is the lowest CPU of the mask it finds: CPU 0 with a full "
    "mask; threads created later inherit that single CPU",
    off="OMP_PROC_BIND=false (and unset GOMP_CPU_AFFINITY, OMP_PLACES, KMP_AFFINITY)",
    off_env=("export OMP_PROC_BIND=false", "unset GOMP_CPU_AFFINITY OMP_PLACES KMP_AFFINITY"),
    evidence=(
        Evidence(
            "libgomp env.c (initialize_env), affinity.c (gomp_init_affinity)",
            "GCC libgomp",
            "source",
        ),
        Evidence("GCC libgomp manual: OMP_PROC_BIND, GOMP_CPU_AFFINITY", "GCC 14", "doc"),
        Evidence(
            "vllm-ascend PR #11307 (strace: import torch -> sched_setaffinity(pid, [0]))",
            "2026-07",
            "PR",
        ),
    ),
    versions=(
        ("libgomp", "pins the main thread at library load; OMP_PROC_BIND=false wins over the rest"),
        ("Intel OpenMP", "KMP_AFFINITY binds the pool only where libiomp5 is preloaded"),
    ),
)

_TRUE = ("true", "spread", "close", "master", "primary")


def trigger(env: Mapping[str, str]) -> str | None:
    """The variable that makes libgomp pin the main thread (NAME=VALUE), or None."""
    get = env.get
    bind = (get("OMP_PROC_BIND") or "").strip()
    low = bind.lower()
    if low == "false":
        return None
    if low and low.split(",")[0] in _TRUE:
        return f"OMP_PROC_BIND={bind}"
    for name in ("GOMP_CPU_AFFINITY", "OMP_PLACES"):
        v = (get(name) or "").strip()
        if v:
            return f"{name}={v}"
    return None


def _first_gomp_cpu(text: str) -> int | None:
    word = text.replace(",", " ").split()[0] if text.strip() else ""
    head = word.split("-")[0].split(":")[0]
    return int(head) if head.isdigit() else None


def act(w: Worker, m: Masks) -> Action | None:
    cause = trigger(w.env)
    kmp = (w.env.get("KMP_AFFINITY") or "").strip()
    if cause is None:
        if kmp and "disabled" not in kmp.lower():
            return Action(
                INFO,
                f"KMP_AFFINITY={kmp}",
                "unknown",
                {},
                "acts only where Intel OpenMP (libiomp5) is preloaded; PyTorch's own is libgomp",
            )
        return None
    base = m["main"]
    cpu: int | None = None
    if cause.startswith("GOMP_CPU_AFFINITY="):
        cpu = _first_gomp_cpu(cause.partition("=")[2])
        if base is not None and cpu not in base:
            cpu = min(base) if base else None
    elif base:
        cpu = min(base)
    if cpu is None:
        return Action(
            INFO,
            cause,
            "pins",
            {"main": None, "omp": base},
            "the main thread is pinned to the first CPU of its mask at `import torch`",
            main_only=True,
        )
    return Action(
        INFO,
        cause,
        "pins",
        {"main": frozenset({cpu}), "omp": base},
        f"the main thread is pinned to CPU {cpu} at `import torch`; every thread it creates "
        f"later (acl_thread, release_thread, plugins) starts on CPU {cpu} too; the OpenMP pool "
        f"takes one place each in {format_cpulist(base or ())}",
        main_only=True,
    )
