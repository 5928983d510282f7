"""The NPUs' interrupt CPUs against what the static CPU manager hands out: reserved CPUs that
keep them out of pods.

The CPUs an NPU's interrupts fire on are the `npu_irq` rows' (core.doctor.irq): the
affinity of its sq_send_trigger_irq and cq_update_irq now. An interrupt whose affinity covers
every online CPU is not pinned anywhere and is left out: no reservation places it.

- An interrupt pinned inside a container's exclusive CPUs: its threads there share the core
  with interrupt handling. Another pod's NPU (or an NPU no pod holds): a warning naming the
  pod, container, CPUs, IRQs and NPU. The container's own NPU: information only, as this is
  where vLLM-Ascend's own binding puts them (the first two CPUs of its pool, which it keeps
  free of worker threads; the `npu_irq` rows judge whether they sit on the right ones).
- Interrupts pinned on CPUs the static CPU manager may hand to a pod (not in
  reservedSystemCPUs, or no reservation at all): a warning on the node, whose fix is the
  reservation with those CPUs (whole cores) added and, where it is off,
  `strict-cpu-reservation`, which takes the reserved CPUs out of the shared pool as well.

With the CPU manager `none` nothing is said: every container runs on the shared pool, so no
pod holds a CPU alone, and reservedSystemCPUs only confines system daemons that run in a
cgroup of their own; the `k8s_shared_pool` finding already asks for the static policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.doctor.irq import NpuIrqPlacement
from ascendtune.core.k8s.align import DRAIN, Assessment, K8sFinding
from ascendtune.core.k8s.config import KubeletConfig
from ascendtune.core.k8s.view import KubeletView
from ascendtune.core.model import Host

IRQ_IN_POD = "k8s_irq_in_pod"
IRQ_UNRESERVED = "k8s_irq_unreserved"
STRICT = "strict-cpu-reservation"


def pinned(placements: Sequence[NpuIrqPlacement], host: Host) -> list[NpuIrqPlacement]:
    """The placements that are pinned: whose CPUs leave out some online CPU."""
    return [p for p in placements if p.cpus and not host.cpus_online <= p.cpus]


def _own(p: NpuIrqPlacement, a: Assessment) -> bool:
    return a.exclusive and p.logical_id in a.logical_ids and p.cpus <= a.cpus


def _npus(ps: Sequence[NpuIrqPlacement]) -> str:
    ids = sorted({p.logical_id for p in ps})
    return ("NPU " if len(ids) == 1 else "NPUs ") + ", ".join(map(str, ids))


def irq_findings(
    view: KubeletView,
    host: Host,
    assessments: Sequence[Assessment],
    placements: Sequence[NpuIrqPlacement],
) -> tuple[list[Assessment], list[K8sFinding]]:
    """The assessments with their interrupt findings added, and the node's own findings."""
    if view.cpu_policy != "static":
        return list(assessments), []
    ps = pinned(placements, host)
    if not ps:
        return list(assessments), []
    node = reservation_finding(view, host, assessments, ps)
    out = []
    for a in assessments:
        found = _in_pod(a, ps, node)
        out.append(a._replace(findings=a.findings + tuple(found)) if found else a)
    return out, [node] if node is not None else []


def _in_pod(
    a: Assessment, ps: Sequence[NpuIrqPlacement], node: K8sFinding | None
) -> list[K8sFinding]:
    if not a.exclusive:
        return []
    out = []
    foreign = [p for p in ps if p.cpus & a.cpus and not _own(p, a)]
    if foreign:
        where = "; ".join(
            (
                f"CPU {format_cpulist(p.cpus & a.cpus)} takes"
                if len(p.cpus & a.cpus) == 1
                else f"CPUs {format_cpulist(p.cpus & a.cpus)} take"
            )
            + f" NPU {p.logical_id}'s interrupts "
            f"({p.irqs}"
            + ("" if p.logical_id in a.logical_ids else ", an NPU it does not hold")
            + ")"
            for p in foreign
        )
        out.append(
            K8sFinding(
                IRQ_IN_POD,
                "warn",
                f"{a.pod.label} container {a.container.name}, exclusive CPUs "
                f"{format_cpulist(a.cpus)}: {where}; its threads there share their cores with "
                "interrupt handling",
                (
                    "keep the NPU interrupt CPUs out of pods: reserve them for the system "
                    "(reservedSystemCPUs, the fragment), then "
                    if node is not None
                    else "the kubelet reserves these CPUs already (the pod's CPUs predate the "
                    "reservation): "
                )
                + DRAIN
                + ", so the pod is admitted again on other CPUs",
                node.fragment if node is not None else None,
            )
        )
    own = [p for p in ps if _own(p, a)]
    if own:
        out.append(
            K8sFinding(
                IRQ_IN_POD,
                "info",
                f"{_npus(own)}'s interrupts fire on CPUs "
                f"{format_cpulist(frozenset().union(*(p.cpus for p in own)))} of this "
                "container's own: where vLLM-Ascend's binding pins them (the first two CPUs of "
                "each pool, kept from worker threads; the npu_irq rows check which)",
            )
        )
    return out


def reservation_finding(
    view: KubeletView,
    host: Host,
    assessments: Sequence[Assessment],
    ps: Sequence[NpuIrqPlacement],
) -> K8sFinding | None:
    """A warning when pinned NPU interrupts sit on CPUs the static CPU manager may hand to a
    pod, with the reservation that keeps them out. Interrupts a container's vLLM-Ascend pinned
    inside its own CPUs do not count: reserving those would only move the pod, and its binding
    would pin them into its new CPUs again."""
    cfg = view.config
    reserved = cfg.reserved_cpus or frozenset()
    ps = [p for p in ps if not any(_own(p, a) for a in assessments)]
    pool = (
        view.allocatable_cpus if view.allocatable_cpus is not None else host.cpus_online - reserved
    )
    exposed: CpuSet = frozenset(c for p in ps for c in p.cpus if c in pool and c not in reserved)
    if not exposed:
        return None
    on = [p for p in ps if p.cpus & exposed]
    want = reserved | _whole_cores(host, exposed)
    where = (
        f"{_npus(on)}'s interrupts are pinned on CPU{'s' if len(exposed) > 1 else ''} "
        f"{format_cpulist(exposed)}"
    )
    if cfg.reserved_cpus is None:
        message = (
            where + ", and the kubelet reserves no CPUs by list (no reservedSystemCPUs; the "
            "static policy then reserves as many CPUs as kubeReserved + systemReserved ask, "
            "of its own choosing, the lowest-numbered cores): the static CPU manager can hand "
            "those CPUs to a pod as exclusive CPUs"
        )
    else:
        what = "--reserved-cpus" if cfg.reserved_flag else "reservedSystemCPUs"
        message = (
            where + f", outside {what} {format_cpulist(reserved)}: the static CPU manager can "
            "hand them to a pod as exclusive CPUs"
        )
    strict = cfg.cpu_manager_options.get(STRICT) == "true"
    fix = (
        "reserve the NPU interrupt CPUs for the system"
        + ("" if strict else f", and with {STRICT} keep them out of the shared pool too")
        + " (Burstable and BestEffort pods run there), then "
        + DRAIN
        + " (the static policy refuses to start on a state file of another reservation)"
    )
    if cfg.reserved_flag:
        fix += (
            "; the kubelet's --reserved-cpus flag overrides the file: set "
            f"--reserved-cpus={format_cpulist(want)} instead"
        )
    return K8sFinding(IRQ_UNRESERVED, "warn", message, fix, reservation_fragment(cfg, want))


def reservation_fragment(cfg: KubeletConfig, reserved: CpuSet) -> str:
    """reservedSystemCPUs with the given CPUs and, unless on, strict-cpu-reservation (with the
    options already set, as the fragment replaces the whole map)."""
    lines = [f'reservedSystemCPUs: "{format_cpulist(reserved)}"']
    options = dict(cfg.cpu_manager_options)
    if options.get(STRICT) != "true":
        options[STRICT] = "true"
        lines.append("cpuManagerPolicyOptions:")
        lines += [f'  {k}: "{v}"' for k, v in options.items()]
    return "\n".join(lines)


def _whole_cores(host: Host, cpus: CpuSet) -> CpuSet:
    """cpus with their SMT siblings: a reserved CPU whose sibling a pod holds shares its core."""
    out = set(cpus)
    for c in cpus:
        cpu = host.cpus.get(c)
        if cpu is not None:
            out |= cpu.siblings & host.cpus_online
    return frozenset(out)
