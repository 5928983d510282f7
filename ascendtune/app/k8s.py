"""Kubernetes: the kubelet's view of this node (its PodResources API where the socket answers,
else its files), each NPU container judged for NUMA alignment, and what vLLM-Ascend's binding
does inside a pod's cpuset. Serves `doctor --section k8s`, `topo`'s pods table, `plan --pod`
and `snapshot`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ascendtune.app.documents import Kubernetes, PlanPod
    from ascendtune.app.options import PlanOptions
    from ascendtune.core.doctor import Check
    from ascendtune.core.doctor.irq import NpuIrqPlacement
    from ascendtune.core.k8s.align import Assessment, K8sFinding
    from ascendtune.core.k8s.view import KubeletView, PodGrant
    from ascendtune.core.model import Host
    from ascendtune.host.k8s.api import ApiAnswer
    from ascendtune.host.k8s.files import KubeletFiles
    from ascendtune.host.roots import Root

SECTION = "k8s"


class K8sReport(NamedTuple):
    view: KubeletView
    assessments: list[Assessment]
    findings: tuple[K8sFinding, ...] = ()  # the node's: NPU interrupt CPUs not reserved


def read_view(root: Root) -> KubeletView | None:
    """What the kubelet gave each pod; None when the root is not a Kubernetes node."""
    from ascendtune.host.k8s import is_kubernetes_node, socket_path

    if not is_kubernetes_node(root):
        return None
    from ascendtune.core.k8s import view as v
    from ascendtune.core.k8s.config import DEFAULT, with_flags
    from ascendtune.core.k8s.paths import API_ANSWER
    from ascendtune.host.k8s import api, files

    got = files.read_files(root)
    notes: list[str] = []
    warnings = list(got.problems)
    config = got.config
    if config is None:
        notes.append(
            f"no kubelet configuration at {files.config_file(root)}: the kubelet's defaults assumed"
        )
        config = with_flags(DEFAULT, files.kubelet_args(root) or [])
    warnings += list(config.notes)
    answer: ApiAnswer | None = None
    source = v.SOURCE_FILES
    sock = socket_path(root)
    asked = api.ask(sock) if sock is not None else api.read_answer(root, API_ANSWER)
    if isinstance(asked, api.Unanswered):
        notes.append(asked.reason)
    elif asked is not None:
        answer = asked
        source = v.SOURCE_API if sock is not None else v.SOURCE_API_CAPTURED
        notes += asked.notes
    pods = _from_api(answer, got) if answer is not None else _from_files(got, notes)
    cpu = got.cpu
    if cpu is not None:
        warnings += list(cpu.notes)
        if got.config is not None and cpu.policy != config.cpu_manager_policy:
            warnings.append(
                f"cpu_manager_state was written under policy {cpu.policy}, the configuration says "
                f"{config.cpu_manager_policy}: the kubelet refuses to start until the file is "
                "removed, or the file predates the change"
            )
    for state in (got.memory, got.devices):
        if state is not None:
            warnings += list(state.notes)
    return v.KubeletView(
        source,
        config,
        cpu.policy if cpu is not None else config.cpu_manager_policy,
        cpu.default_cpus if cpu is not None else None,
        answer.allocatable.cpus if answer is not None and answer.allocatable else None,
        tuple(pods),
        tuple(notes),
        tuple(warnings),
    )


def _from_api(answer: ApiAnswer, got: KubeletFiles) -> list[PodGrant]:
    from ascendtune.core.k8s.view import PodGrant

    uid_of = {names: uid for uid, names in got.names.items()}
    out = []
    for p in answer.pods:
        uid = uid_of.get((p.namespace, p.name))
        out.append(
            PodGrant(
                uid,
                p.name,
                p.namespace,
                p.containers,
                got.annotations.get(uid, {}) if uid else {},
                got.cpu.pods.get(uid, frozenset()) if uid and got.cpu else frozenset(),
            )
        )
    return out


def _from_files(got: KubeletFiles, notes: list[str]) -> list[PodGrant]:
    """The pods the CPU, memory and device managers' files name, by UID."""
    from ascendtune.core.k8s.state import V1_POD
    from ascendtune.core.k8s.view import ContainerGrant, DeviceRef, PodGrant

    cpus: dict[tuple[str, str], frozenset[int]] = dict(got.cpu.containers) if got.cpu else {}
    devices: dict[tuple[str, str], list[DeviceRef]] = {}
    for g in got.devices.grants if got.devices else ():
        devices.setdefault((g.pod_uid, g.container), []).append(
            DeviceRef(g.resource, g.device_id, g.numa_nodes)
        )
    memory: dict[tuple[str, str], tuple[int, ...]] = {}
    for key, blocks in (got.memory.containers if got.memory else {}).items():
        memory[key] = tuple(sorted({n for b in blocks for n in b.numa_nodes}))
    keys = sorted(set(cpus) | set(devices) | set(memory))
    if any(uid == V1_POD for uid, _ in keys):
        notes.append(
            "cpu_manager_state is of layout v1 (kubelet 1.17 or older): it names containers by "
            "runtime id, not by pod"
        )
    uids = sorted({uid for uid, _ in keys}, key=lambda u: (got.names.get(u, ("~", u)), u))
    gone = [u for u in uids if got.names and u != V1_POD and u not in got.names]
    if gone:
        notes.append(
            f"{len(gone)} pod UID(s) in the kubelet's checkpoints have no folder under var/log/pods: "
            "entries can outlive their pods"
        )
    names_of: dict[str, list[str]] = {}
    for uid, c in keys:
        names_of.setdefault(uid, []).append(c)
    out = []
    for uid in uids:
        ns, name = got.names.get(uid, (None, None))
        containers = tuple(
            ContainerGrant(
                c,
                cpus.get((uid, c), frozenset()),
                tuple(devices.get((uid, c), ())),
                memory.get((uid, c), ()),
            )
            for c in names_of[uid]
        )
        out.append(
            PodGrant(
                uid or None,
                name,
                ns,
                containers,
                got.annotations.get(uid, {}),
                got.cpu.pods.get(uid, frozenset()) if got.cpu else frozenset(),
            )
        )
    return out


def report(root: Root, host: Host) -> K8sReport | None:
    view = read_view(root)
    if view is None:
        return None
    from ascendtune.core.k8s.align import assess
    from ascendtune.core.k8s.irq import irq_findings

    irqs = irq_placements(root, host) if view.cpu_policy == "static" else []
    assessments, found = irq_findings(view, host, assess(view, host), irqs)
    return K8sReport(view, assessments, tuple(found))


def irq_placements(root: Root, host: Host) -> list[NpuIrqPlacement]:
    """Where each NPU's interrupts may fire, as doctor's npu_irq rows read it."""
    if not host.npus:
        return []
    from ascendtune.core.doctor.irq import npu_irq_placements
    from ascendtune.host.facts import npu_irq_facts

    text, aff, msi = npu_irq_facts(root)
    return npu_irq_placements(host.npus, text, aff, msi)


# ---- vLLM-Ascend inside a pod ----------------------------------------------------------------


def pod_host(host: Host, a: Assessment) -> Host:
    """The host as a process of the pod sees it: its cpuset, and only its NPUs (npu-smi in a
    container lists the NPUs mounted into it)."""
    ids = set(a.logical_ids)
    accelerators = tuple(x for x in host.accelerators if x.logical_id in ids) if ids else ()
    cards = {x.npu_id for x in accelerators}
    return host._replace(
        cpus_allowed=frozenset(a.cpus) & host.cpus_online,
        accelerators=accelerators or host.accelerators,
        processes=tuple(p for p in host.processes if p.npu_id in cards),
        cgroup_cpuset=frozenset(a.cpus),
    )


def vllm_in_pod(host: Host, a: Assessment, opts: PlanOptions, root: Root) -> dict[str, Any]:
    """What vLLM-Ascend's binding does inside the container's cpuset on the chosen version:
    each rank's CPUs, or the error it stops at."""
    from ascendtune.app.plan import plan, resolve_version
    from ascendtune.core.cpulist import format_cpulist
    from ascendtune.core.errors import AscendtuneError

    if not a.logical_ids:
        return {"error": "no NPU of this host identified", "target": None, "ranks": []}
    sub = pod_host(host, a)
    try:
        target: str | None = resolve_version(sub, opts.target, root).entry.name
    except AscendtuneError:
        target = None
    po = opts._replace(
        policy="vllm-ascend",
        visible_devices=",".join(map(str, a.logical_ids)),
        ranks=None,
        spill=False,
    )
    try:
        got = plan(sub, po, root)
    except AscendtuneError as e:
        return {"error": e.message, "target": target, "ranks": []}
    return {
        "error": None,
        "target": got.plan.target,
        "mode": got.plan.mode,
        "ranks": [
            {"device": r.device, "cpus": format_cpulist(r.cpus), "numa_nodes": list(r.numa_nodes)}
            for r in got.plan.ranks
        ],
    }


def find_pod(rep: K8sReport, wanted: str) -> list[Assessment]:
    from ascendtune.core.errors import MissingError, UsageError

    match = [a for a in rep.assessments if a.pod.matches(wanted)]
    if not match:
        known = sorted({a.pod.label for a in rep.assessments if a.npus})
        raise MissingError(
            f"--pod {wanted}: no pod of that name or UID holds an NPU on this node",
            f"pods with NPUs: {', '.join(known)}" if known else "no pod here holds an NPU",
        )
    pods = {a.pod.uid or a.pod.label for a in match}
    if len(pods) > 1:
        raise UsageError(
            f"--pod {wanted}: {len(pods)} pods of that name; give NAMESPACE/NAME or the UID"
        )
    return [a for a in match if a.npus] or match


def in_pod(
    root: Root, host: Host, wanted: str, opts: PlanOptions
) -> tuple[Host, PlanOptions, PlanPod]:
    """`plan --pod`: the host as the pod sees it, the plan options with the pod's NPUs as the
    visible devices (unless given), and the pod as the plan document names it."""
    from ascendtune.core.errors import MissingError

    rep = report(root, host)
    if rep is None:
        raise MissingError(
            f"--pod {wanted}: not a Kubernetes node (no kubelet state under var/lib/kubelet)"
        )
    found = find_pod(rep, wanted)
    a = found[0]
    if opts.visible_devices is None and a.logical_ids:
        opts = opts._replace(visible_devices=",".join(map(str, a.logical_ids)))
    pod: PlanPod = {
        "label": a.pod.label,
        "uid": a.pod.uid,
        "namespace": a.pod.namespace,
        "name": a.pod.name,
        "container": a.container.name,
        "source": rep.view.source,
        "summary": summary_of(a),
        "aligned": a.aligned,
    }
    return pod_host(host, a), opts, pod


# ---- doctor --------------------------------------------------------------------------------


def checks(root: Root, host: Host | None, opts: PlanOptions, *, asked: bool) -> list[Check]:
    """`doctor --section k8s`: a row for the kubelet's settings and one per NPU container.
    Not a Kubernetes node: nothing, or one skip row when the section was asked for by name."""
    from ascendtune.core.cpulist import format_cpulist
    from ascendtune.core.doctor import Check

    if host is None:
        return [Check("kubelet", "skip", None, None, None, SECTION, "the host could not be read")]
    rep = report(root, host)
    if rep is None:
        if not asked:
            return []
        return [
            Check(
                "kubelet",
                "skip",
                None,
                None,
                None,
                SECTION,
                "not a Kubernetes node: no kubelet state under var/lib/kubelet",
            )
        ]
    view = rep.view
    cfg = view.config
    node = rep.findings[0] if rep.findings else None
    rows = [
        Check(
            "kubelet",
            "warn" if view.warnings or node is not None else "ok",
            f"cpuManagerPolicy {view.cpu_policy}"
            + (
                f" ({', '.join(f'{k}={v}' for k, v in cfg.cpu_manager_options.items())})"
                if cfg.cpu_manager_options
                else ""
            )
            + f", topologyManagerPolicy {cfg.topology_manager_policy} (scope "
            f"{cfg.topology_manager_scope}), memoryManagerPolicy {cfg.memory_manager_policy}"
            + (
                f", reserved CPUs {format_cpulist(cfg.reserved_cpus)}"
                if cfg.reserved_cpus is not None
                else ""
            ),
            "NPU interrupt CPUs reserved" if node is not None else None,
            node.fix if node is not None else None,
            SECTION,
            "; ".join(
                [
                    *(f.message for f in rep.findings),
                    f"read through the {view.source}",
                    *view.warnings,
                    *view.notes,
                ]
            ),
            {"source": view.source, "findings": [f._asdict() for f in rep.findings]},
            node.fragment if node is not None else None,
        )
    ]
    from ascendtune.core.k8s.irq import IRQ_IN_POD
    from ascendtune.host.k8s.files import pod_processes

    # a container without an NPU shows when it takes an NPU's interrupts
    with_npus = [
        a
        for a in rep.assessments
        if a.npus or any(f.code == IRQ_IN_POD and f.severity == "warn" for f in a.findings)
    ]
    procs = pod_processes(root, {a.pod.uid for a in with_npus if a.pod.uid})
    for a in with_npus:
        rows.append(_row(a, view, host, opts, root, procs.get(a.pod.uid or "", [])))
    return rows


def _row(
    a: Assessment,
    view: KubeletView,
    host: Host,
    opts: PlanOptions,
    root: Root,
    procs: list[tuple[int, str]],
) -> Check:
    from ascendtune.core.cpulist import format_cpulist
    from ascendtune.core.doctor import Check

    worst = sorted(a.findings, key=lambda f: ("fail", "warn", "info").index(f.severity))
    first = worst[0] if worst and worst[0].severity != "info" else None
    vllm = vllm_in_pod(host, a, opts, root)
    said = (
        f"vLLM-Ascend {vllm['target'] or ''} inside this cpuset: "
        + (
            f"fails: {vllm['error']}"
            if vllm["error"]
            else "; ".join(f"NPU {r['device']} on {r['cpus']}" for r in vllm["ranks"])
        )
    ).replace("  ", " ")
    return Check(
        f"pod:{a.pod.label}/{a.container.name}",
        a.status,  # type: ignore[arg-type]
        summary_of(a),
        "CPUs on the NUMA node of the container's NPUs",
        first.fix if first else None,
        SECTION,
        "; ".join(
            [
                *(f.message for f in worst),
                said,
                *(
                    ["processes: " + ", ".join(f"{pid} ({comm})" for pid, comm in procs[:8])]
                    if procs
                    else []
                ),
            ]
        ),
        {
            "uid": a.pod.uid,
            "namespace": a.pod.namespace,
            "pod": a.pod.name,
            "container": a.container.name,
            "source": view.source,
            "cpus": format_cpulist(a.cpus),
            "exclusive": a.exclusive,
            "cpu_numa_nodes": list(a.cpu_nodes),
            "npus": list(a.logical_ids),
            "devices": [n.device.device_id for n in a.npus],
            "npu_numa_nodes": list(a.npu_nodes),
            "aligned": a.aligned,
            "findings": [f._asdict() for f in a.findings],
            "vllm_ascend": vllm,
            "pids": [pid for pid, _ in procs],
        },
        first.fragment if first else None,
    )


def summary_of(a: Assessment) -> str:
    from ascendtune.core.cpulist import format_cpulist

    nodes = ",".join(map(str, a.cpu_nodes)) or "?"
    npus = ", ".join(
        f"NPU {n.logical_id}" if n.logical_id is not None else n.device.device_id for n in a.npus
    )
    npu_nodes = ",".join(map(str, a.npu_nodes)) or "?"
    kind = "" if a.exclusive else " (shared pool)"
    return f"CPUs {format_cpulist(a.cpus)}{kind} on node {nodes}; {npus} on node {npu_nodes}"


# ---- documents -------------------------------------------------------------------------------


def document(rep: K8sReport) -> Kubernetes:
    """The `kubernetes` object of `topo --json`."""
    from ascendtune.core.cpulist import format_cpulist as f

    view, cfg = rep.view, rep.view.config
    return {
        "source": view.source,
        "cpu_manager_policy": view.cpu_policy,
        "cpu_manager_options": dict(cfg.cpu_manager_options),
        "topology_manager_policy": cfg.topology_manager_policy,
        "topology_manager_scope": cfg.topology_manager_scope,
        "memory_manager_policy": cfg.memory_manager_policy,
        "reserved_cpus": None if cfg.reserved_cpus is None else f(cfg.reserved_cpus),
        "shared_cpus": None if view.shared_cpus is None else f(view.shared_cpus),
        "allocatable_cpus": None if view.allocatable_cpus is None else f(view.allocatable_cpus),
        "containers": [
            {
                "uid": a.pod.uid,
                "namespace": a.pod.namespace,
                "pod": a.pod.name,
                "container": a.container.name,
                "cpus": f(a.cpus),
                "exclusive": a.exclusive,
                "cpu_numa_nodes": list(a.cpu_nodes),
                "devices": [
                    {
                        "resource": n.device.resource,
                        "id": n.device.device_id,
                        "reported_numa_nodes": list(n.device.numa_nodes),
                        "logical_id": n.logical_id,
                        "numa_node": n.numa_node,
                        "source": n.how,
                    }
                    for n in a.npus
                ],
                "aligned": a.aligned,
                "status": a.status,  # type: ignore[typeddict-item]
                "findings": [fd._asdict() for fd in a.findings],  # type: ignore[misc]
            }
            for a in rep.assessments
        ],
        "findings": [fd._asdict() for fd in rep.findings],  # type: ignore[misc]
        "notes": list(view.notes),
        "warnings": list(view.warnings),
    }
