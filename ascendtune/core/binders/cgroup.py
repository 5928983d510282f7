"""The cgroup cpuset around a worker: docker --cpuset-cpus, the Kubernetes static CPU manager,
systemd AllowedCPUs=. The kernel narrows every later mask to it: it is the frame every other
binder works in, not a binder any owner switches off."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import format_cpulist

INFO = Binder(
    id="cgroup",
    name="cgroup cpuset (container, Kubernetes CPU manager, systemd slice)",
    family="outer",
    configured=(
        "docker --cpuset-cpus",
        "Kubernetes static CPU manager (Guaranteed pod, integer CPUs)",
        "systemd AllowedCPUs=",
    ),
    acts="cgroup",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="narrow",
    narrower_note="the kernel intersects every sched_setaffinity with it; a mask wholly "
    "outside it fails with EINVAL",
    off="give the container or pod the CPUs the owner needs (it stays the frame of every binder)",
    evidence=(
        Evidence("Linux cpuset(7): cpuset.cpus limits sched_setaffinity", "kernel docs", "doc"),
        Evidence("kubelet cpu_manager_state (static policy)", "Kubernetes CPU manager docs", "doc"),
    ),
)


def kind(path: str | None) -> str:
    """Who made the cgroup, from its path."""
    p = path or ""
    if "kubepods" in p:
        return "Kubernetes"
    if "docker" in p or "containerd" in p or "libpod" in p:
        return "container"
    if p.endswith(".service") or ".slice" in p:
        return "systemd"
    return "cgroup"


def act(w: Worker, m: Masks) -> Action | None:
    if w.cpuset is None or w.cpus_online is None or w.cpuset >= w.cpus_online:
        return None
    who = kind(w.cgroup)
    return Action(
        INFO,
        f"{who} cpuset {format_cpulist(w.cpuset)}" + (f" ({w.cgroup})" if w.cgroup else ""),
        "narrows",
        dict.fromkeys(m, w.cpuset),
        f"every thread may run only on {format_cpulist(w.cpuset)} of the online "
        f"{format_cpulist(w.cpus_online)}",
    )
