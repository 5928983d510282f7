"""The `--json` documents, as types: one TypedDict per document and per object inside one.

The document builders in `ascendtune/app/*.py` are annotated with these types, so mypy checks
that a builder's keys are the documented ones; `scripts/gen_schemas.py` turns them into the JSON
Schemas under `schemas/` and the key list in `docs/json.md`. Each key is
`Annotated[type, "what it means"]`; a mapping that a core `to_json()` (or a comprehension)
builds with a looser type says which shape it has with `Like(SomeTypedDict)`.

To add a document: write its TypedDict here, annotate its builder with it, list it in
`DOCUMENTS`, and run `python scripts/gen_schemas.py`. Every printed document also carries
`schema_version` (`ascendtune.core.jsondoc.SCHEMA_VERSION`), which the printer adds; it goes up
on a breaking change (a key removed, or given another type or meaning), not when a key is added.
A key renamed keeps its old name beside the new one, marked `Deprecated(new name)`, for one
schema version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from ascendtune.core.jsondoc import SCHEMA_VERSION

__all__ = ["DOCUMENTS", "SCHEMA_VERSION", "plain"]


@dataclass(frozen=True)
class Like:
    """The value is a mapping (or a list of them) shaped as `shape`, a TypedDict; its producer
    (a core `to_json()`, a comprehension) types it more loosely than that."""

    shape: Any


@dataclass(frozen=True)
class Deprecated:
    """The key is an old name of `use`, printed beside it with the same value for one schema
    version (then removed, with the version raised); the schema marks it `deprecated`."""

    use: str


@dataclass(frozen=True)
class Keys:
    """A mapping whose keys have this meaning (e.g. "a policy name"); for the README."""

    meaning: str


CPULIST = "cpulist"  # a marker: a Linux cpulist string ("0-3,8", "" for none)
CpuList = Annotated[str, CPULIST]

Severity = Literal["error", "warning", "info"]
Status = Literal["ok", "warn", "fail", "skip"]


# ---- shared ---------------------------------------------------------------------------------


class HostIdentity(TypedDict):
    """Which host a document was made for (`bind --plan` refuses a plan of another host)."""

    source: Annotated[str, "how it was read: `live`, `sysroot` or `demo`"]
    root: Annotated[str, "the root read: `/`, the sysroot path, or `demo:NAME`"]
    hostname: Annotated[str | None, "the host's name (a captured host's from its meta.json)"]
    machine_id_sha256: Annotated[
        str | None, "the first 16 hex digits of the SHA-256 of /etc/machine-id (never the id)"
    ]
    boot_id_sha256: Annotated[str | None, "the same digest of the kernel's boot id"]


class Finding(TypedDict):
    """One thing to tell an operator; `code` is stable, scripts may match on it."""

    code: Annotated[str, "a stable identifier of the kind of finding"]
    severity: Annotated[Severity, "`error`, `warning` or `info`"]
    ranks: Annotated[list[int], "the ranks it is about (empty: the whole plan or host)"]
    keys: Annotated[list[str], "the config keys it is about (empty: none)"]
    message: Annotated[str, "what is wrong, in words"]
    hint: Annotated[str, "what to do about it (empty: nothing to add)"]


class WithHost(TypedDict, total=False):
    host: Annotated[
        dict[str, Any], Like(HostIdentity), "which host it was read from (a plan: made for)"
    ]


# ---- topo -----------------------------------------------------------------------------------


class NpuSmi(TypedDict):
    found: Annotated[bool, "npu-smi ran (or a captured host has its output)"]
    version: Annotated[str | None, "the version npu-smi printed"]


class NvidiaSmi(TypedDict):
    found: Annotated[bool, "nvidia-smi ran (or a captured host has its output)"]


class TopoNumaNode(TypedDict):
    id: Annotated[int, "the node id"]
    cpus: Annotated[CpuList, "its online CPUs (empty: a memory-only node)"]
    mem_mib: Annotated[int | None, "its memory in MiB (null: unknown; 0: none)"]
    accelerators: Annotated[list[int], "logical ids of the accelerators on this node"]


CARD_ID = (
    "the card the vendor tool names: npu-smi's NPU ID (a card may hold two chips: `chip_id`), "
    "nvidia-smi's GPU index"
)


class TopoAccelerator(TypedDict):
    vendor: Annotated[str, "`huawei` or `nvidia`"]
    logical_id: Annotated[
        int, "the id the runtime uses (ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)"
    ]
    card_id: Annotated[int | None, CARD_ID]
    npu_id: Annotated[int | None, Deprecated("card_id"), "the card id (the GPU index on NVIDIA)"]
    chip_id: Annotated[int | None, "the chip of the card (Ascend)"]
    name: Annotated[str, "the model name the vendor tool prints"]
    bus_id: Annotated[str | None, "the PCI address, lower case (`0000:c1:00.0`)"]
    numa_node: Annotated[int | None, "the NUMA node the device sits on"]
    cpu_affinity: Annotated[CpuList, "its hardware CPU affinity, from the best source"]
    cpu_affinity_source: Annotated[
        str | None,
        "where the affinity came from: `npu-smi`, `nvidia-smi`, `nvml`, `sysfs`, `udev`, `guess`",
    ]
    tool_cpu_affinity: Annotated[
        CpuList | None, "the affinity the vendor tool itself printed (null: it printed none)"
    ]
    numa_node_source: Annotated[str | None, "where numa_node came from (as cpu_affinity_source)"]
    cpus_allowed_in_affinity: Annotated[CpuList, "the part of the affinity inside the cpuset"]
    health: Annotated[str | None, "the health npu-smi reports (`OK`, ...)"]
    driver: Annotated[str | None, "the kernel driver bound to the PCI device"]


class TopoProcess(TypedDict):
    card_id: Annotated[int, CARD_ID]
    npu_id: Annotated[int, Deprecated("card_id"), "the card id (the GPU index on NVIDIA)"]
    chip_id: Annotated[int | None, "the chip of the card"]
    pid: Annotated[int, "the process id"]
    name: Annotated[str, "the process name"]
    mem_mib: Annotated[float | None, "device memory it holds, in MiB"]


class TopoBody(TypedDict):
    hostname: Annotated[str | None, "the host's name"]
    arch: Annotated[str | None, "the CPU architecture (`aarch64`, `x86_64`)"]
    soc: Annotated[
        str | None,
        "the SoC family (`A2`, `A3`, `310P`, `A5`, `910`, `gpu`, `unknown`); null without accelerators",
    ]
    npu_smi: Annotated[NpuSmi, "npu-smi"]
    nvidia_smi: Annotated[NvidiaSmi, "nvidia-smi"]
    cpus_online: Annotated[CpuList, "the online CPUs"]
    cpus_offline: Annotated[CpuList, "CPUs present but offline"]
    cpus_allowed: Annotated[CpuList, "the CPUs this process may use (cpuset ∩ Cpus_allowed_list)"]
    cpus_allowed_source: Annotated[
        str, "`proc/self/status`, or `assumed: every online CPU` when it is absent"
    ]
    mems_allowed: Annotated[
        CpuList | None, "the NUMA nodes memory may come from (a cpulist of node ids)"
    ]
    smt_threads_per_core: Annotated[int, "hardware threads per core"]
    sockets: Annotated[int, "CPU sockets"]
    numa_nodes: Annotated[list[TopoNumaNode], "the NUMA nodes"]
    accelerators: Annotated[list[TopoAccelerator], "the accelerators, by logical id"]
    links: Annotated[
        dict[str, dict[str, str]],
        Keys("a logical id, then another"),
        'the link type between two accelerators by logical id: `{"0": {"1": "HCCS"}}` (HCCS, SIO, HCCS_SW, PIX, PXB, PHB, NODE, SYS, NV#)',
    ]
    processes: Annotated[
        list[TopoProcess], "processes holding an accelerator (npu-smi's or nvidia-smi's table)"
    ]
    warnings: Annotated[list[str], "what an operator must know, in words"]


class K8sFinding(TypedDict):
    code: Annotated[str, "a stable identifier (`k8s_numa_misaligned`, `k8s_shared_pool`, ...)"]
    severity: Annotated[Literal["fail", "warn", "info"], "how bad"]
    message: Annotated[str, "what is wrong, in words"]
    fix: Annotated[str | None, "what to do, in words"]
    fragment: Annotated[
        str | None, "what to paste: kubelet configuration YAML (or a pod spec's resources)"
    ]


class K8sDevice(TypedDict):
    resource: Annotated[str, "the extended resource (`huawei.com/Ascend910`)"]
    id: Annotated[str, "the device plugin's id (`Ascend910-4`)"]
    reported_numa_nodes: Annotated[list[int], "the NUMA nodes the plugin reported (empty: none)"]
    logical_id: Annotated[int | None, "the NPU of this host it names (null: none)"]
    numa_node: Annotated[int | None, "that NPU's NUMA node on this host"]
    source: Annotated[str, "what the answer rests on: `kubelet`, or the AscendReal annotation"]


class K8sContainer(TypedDict):
    uid: Annotated[str | None, "the pod's UID"]
    namespace: Annotated[str | None, "the pod's namespace"]
    pod: Annotated[str | None, "the pod's name (null: only its UID is known)"]
    container: Annotated[str, "the container's name"]
    cpus: Annotated[CpuList, "the CPUs it may run on (exclusive, else the shared pool)"]
    exclusive: Annotated[bool, "the static CPU manager gave it these CPUs alone"]
    cpu_numa_nodes: Annotated[list[int], "the NUMA nodes of those CPUs"]
    devices: Annotated[list[K8sDevice], "the accelerators it was given"]
    aligned: Annotated[bool | None, "its CPUs lie on its NPUs' NUMA nodes (null: no NPU known)"]
    status: Annotated[Status, "`ok`, `warn` or `fail`"]
    findings: Annotated[list[K8sFinding], "what is wrong, each with its kubelet-level fix"]


class Kubernetes(TypedDict):
    source: Annotated[
        str, "`pod-resources API`, `pod-resources API (captured answer)` or `kubelet files`"
    ]
    cpu_manager_policy: Annotated[
        str, "`none` or `static` (the CPU manager's state, else the config)"
    ]
    cpu_manager_options: Annotated[dict[str, str], "cpuManagerPolicyOptions"]
    topology_manager_policy: Annotated[
        str, "`none`, `best-effort`, `restricted` or `single-numa-node`"
    ]
    topology_manager_scope: Annotated[str, "`container` or `pod`"]
    memory_manager_policy: Annotated[str, "`None` or `Static`"]
    reserved_cpus: Annotated[CpuList | None, "reservedSystemCPUs"]
    shared_cpus: Annotated[CpuList | None, "the shared pool (defaultCpuSet)"]
    allocatable_cpus: Annotated[CpuList | None, "GetAllocatableResources' CPUs"]
    containers: Annotated[
        list[K8sContainer], "each container that holds an accelerator or exclusive CPUs"
    ]
    findings: Annotated[
        list[K8sFinding],
        "the node's: NPU interrupts pinned on CPUs the static CPU manager may give a pod",
    ]
    notes: Annotated[list[str], "how it was read"]
    warnings: Annotated[
        list[str], "unreadable files, stale checksums, settings the kubelet refuses"
    ]


class _TopoKubernetes(TypedDict, total=False):
    kubernetes: Annotated[Kubernetes, "on a Kubernetes node: what the kubelet gave each pod"]


class TopoDocument(WithHost, TopoBody, _TopoKubernetes):
    """`ascendtune topo --json`: the host's CPUs, NUMA nodes, accelerators and links."""


# ---- plan -----------------------------------------------------------------------------------


class Roles(TypedDict):
    irq: Annotated[CpuList, "CPUs for the device's interrupts (vLLM-Ascend's first two)"]
    main: Annotated[CpuList, "CPUs for the worker's main and other threads"]
    acl: Annotated[CpuList, "the CPU of torch_npu's acl_thread"]
    release: Annotated[CpuList, "the CPU of torch_npu's release_thread"]


class _PlanRankBody(TypedDict):
    rank: Annotated[int, "the rank (vLLM's global rank within the job)"]
    dp_rank: Annotated[int, "its data-parallel engine"]
    local_rank: Annotated[int, "its rank within the engine"]
    device: Annotated[int, "the logical id of the device the rank runs on"]
    pool_device: Annotated[
        int,
        "the logical id of the device whose CPU pool the rank gets: `device`, except where a "
        "policy reproduces a flaw of vLLM-Ascend (ASCEND_RT_VISIBLE_DEVICES out of order)",
    ]
    logical_id: Annotated[int, Deprecated("pool_device"), "the device whose CPU pool it gets"]
    cpus: Annotated[CpuList, "the CPUs it is bound to"]
    numa_nodes: Annotated[list[int], "the NUMA nodes its CPUs lie on"]
    device_numa_node: Annotated[int | None, "the NUMA node of its device"]
    locality: Annotated[float | None, "the share of its CPUs on its device's node (0 to 1)"]
    roles: Annotated[dict[str, str], Like(Roles), "the split of its CPUs by thread role"]
    binding_skipped: Annotated[
        str | None, "why vLLM-Ascend skips binding this rank (then it has no CPUs); null: it binds"
    ]


class PlanRank(_PlanRankBody, total=False):
    vllm_log_line: Annotated[
        str, "the line vLLM-Ascend logs for this rank (policy `vllm-ascend` only)"
    ]


class Overlap(TypedDict):
    ranks: Annotated[list[int], "the two ranks"]
    cpus: Annotated[CpuList, "the CPUs both are bound to"]


class PlanBody(TypedDict):
    policy: Annotated[str, "the policy that made the plan (`auto` resolved)"]
    target: Annotated[
        str | None, "the vLLM-Ascend version whose binding was modelled (`vllm-ascend`)"
    ]
    target_reason: Annotated[str | None, "why that version (given, detected, or the newest)"]
    mode: Annotated[
        str,
        "the rule used (`topo_affinity`, `global_slice`, `numa_local`, ...; `no_binding`: the "
        "vLLM-Ascend version ships no CPU binding)",
    ]
    soc: Annotated[str, "the SoC family planned for"]
    vendor: Annotated[str, "`huawei` or `nvidia`"]
    visible_devices: Annotated[list[int], "the devices the job sees, in the order given"]
    cpus_allowed: Annotated[CpuList, "the CPUs the plan may use"]
    reserved: Annotated[CpuList, "CPUs kept out (`--reserve`, IRQ reservation)"]
    ranks: Annotated[list[dict[str, Any]], Like(PlanRank), "one entry per rank"]
    overlaps: Annotated[list[Overlap], "pairs of ranks that share CPUs"]
    idle_cpus: Annotated[CpuList, "allowed CPUs no rank uses"]
    findings: Annotated[
        list[dict[str, Any]], Like(Finding), "what an operator must know about the plan"
    ]
    notes: Annotated[list[str], "how the plan was made (fallbacks, assumptions)"]


class _MadeFor(TypedDict):
    host: Annotated[
        dict[str, Any],
        Like(HostIdentity),
        "the host it was made for (`bind --plan FILE` refuses a plan of another host)",
    ]


class PlanPod(TypedDict):
    label: Annotated[str, "NAMESPACE/NAME (the UID where the name is unknown)"]
    uid: Annotated[str | None, "the pod's UID"]
    namespace: Annotated[str | None, "its namespace"]
    name: Annotated[str | None, "its name"]
    container: Annotated[str, "the container planned (the one holding the NPUs)"]
    source: Annotated[str, "where the kubelet's answer was read"]
    summary: Annotated[str, "its CPUs and NPUs with their NUMA nodes, in words"]
    aligned: Annotated[bool | None, "its CPUs lie on its NPUs' NUMA nodes"]


class _PlanPod(TypedDict, total=False):
    pod: Annotated[PlanPod, "`--pod`: the pod whose cpuset and NPUs were planned"]


class PlanDocument(_MadeFor, PlanBody, _PlanPod):
    """`ascendtune plan --json`: one policy's plan; `bind --plan FILE` reads it back."""


class PolicyError(TypedDict):
    error: Annotated[str, "why the policy cannot plan this host"]


class PlanCompareBody(TypedDict):
    policies: Annotated[
        dict[str, dict[str, Any]],
        Keys("a policy name"),
        Like(PlanBody | PolicyError),
        "each policy that fits the vendor: its plan document (without `host`), or why it cannot plan",
    ]


class PlanCompareDocument(WithHost, PlanCompareBody):
    """`ascendtune plan --policy compare --json`: every policy's plan side by side."""


# ---- doctor ---------------------------------------------------------------------------------


class _CheckBody(TypedDict):
    id: Annotated[
        str,
        "the check (`cpu_governor`, `numa_balancing`, ..., `worker:PID`, `overlap:PID,PID`, "
        "`npu_irq:N`, `kubelet`, `pod:NAMESPACE/NAME/CONTAINER`)",
    ]
    status: Annotated[Status, "`ok`, `warn`, `fail` or `skip`"]
    value: Annotated[str | None, "what was found"]
    expected: Annotated[str | None, "what it should be"]
    fix: Annotated[str | None, "a command that fixes it now"]
    fix_persistent: Annotated[str | None, "the form of the fix that survives a reboot"]
    fix_on_host: Annotated[
        bool,
        "the fixes change the kernel or the host's services and this is a container: "
        "they run on the host, not in the container",
    ]
    section: Annotated[str, "`host`, `workers`, `binders` or `k8s`"]
    detail: Annotated[str | None, "more words about it"]


class DoctorCheck(_CheckBody, total=False):
    data: Annotated[dict[str, Any], "facts behind the row, per check (free form)"]


class DoctorSummary(TypedDict):
    ok: Annotated[int, "checks that passed"]
    warn: Annotated[int, "checks that warn"]
    fail: Annotated[int, "checks that failed (then the exit status is 1)"]
    skip: Annotated[int, "checks that could not run"]


class DoctorDocument(TypedDict):
    """`ascendtune doctor --json`: host checks and the audit of running workers."""

    host: Annotated[dict[str, Any], Like(HostIdentity), "which host was read"]
    root: Annotated[str, "the root read (`/`, a sysroot, `demo:NAME`)"]
    live: Annotated[bool, "the live host was read"]
    hostname: Annotated[str | None, "the host's name (null: the host model could not be read)"]
    sections: Annotated[
        list[str],
        "the sections run (`host`, `workers`, `binders`; `k8s` on a Kubernetes node or when asked)",
    ]
    policy: Annotated[str, "the policy workers are compared with"]
    target: Annotated[str | None, "the vLLM-Ascend version modelled"]
    target_reason: Annotated[str | None, "why that version"]
    plan_mode: Annotated[str | None, "the mode of the plan compared with"]
    plan_error: Annotated[str | None, "why there is no plan to compare with"]
    checks: Annotated[list[dict[str, Any]], Like(DoctorCheck), "one row per check"]
    summary: Annotated[dict[str, int], Like(DoctorSummary), "how many checks had each status"]
    notes: Annotated[list[str], "facts that arose while reading the host"]


# ---- check-config ---------------------------------------------------------------------------


Rewrite = TypedDict(
    "Rewrite",
    {
        "key": Annotated[str, "the key vLLM-Ascend rewrites (dotted when nested)"],
        "from": Annotated[Any, "the value given"],
        "to": Annotated[Any, "the value it runs with"],
        "because": Annotated[str, "why, in words"],
    },
)


class ConfigFinding(TypedDict):
    code: Annotated[str, "a stable identifier of the rule"]
    severity: Annotated[
        Severity,
        "`error` (it would refuse to start), `warning`, `info` (depends on facts not given)",
    ]
    keys: Annotated[
        list[str], "the config keys involved, dotted for nested (`eplb_config.expert_map_path`)"
    ]
    message: Annotated[str, "what is wrong, in words"]
    hint: Annotated[str, "what to do"]
    rewrite: Annotated[Rewrite | None, "the value vLLM-Ascend replaces silently"]
    needs: Annotated[list[str], "the facts the rule needed and did not get"]


class ConfigCounts(TypedDict):
    error: Annotated[int, "findings of severity error"]
    warning: Annotated[int, "findings of severity warning"]
    info: Annotated[int, "findings of severity info"]


# ---- the binder chain (check-config, doctor --section binders, explain binders) --------------


class BinderEvidence(TypedDict):
    source: Annotated[str, "the source file, PR, issue or document the fact was read in"]
    version: Annotated[str, "the version or date it holds for"]
    kind: Annotated[str, "`source`, `PR`, `issue`, `doc` or `reading` (not checked in code)"]


class ChainStep(TypedDict):
    order: Annotated[int, "1 for the binder that acts first"]
    id: Annotated[str, "the binder (`cgroup`, `outer`, `openmp`, `torch_npu`, `vllm-ascend`, ...)"]
    name: Annotated[str, "the binder in words"]
    stage: Annotated[str, "when it acts (`cgroup`, `launch`, `import`, `worker start`, ...)"]
    config: Annotated[str, "how it was found configured (`taskset -c 0-9`, `OMP_PROC_BIND=TRUE`)"]
    outcome: Annotated[str, "`binds`, `narrows`, `pins`, `skips`, `fails`, `splits` or `unknown`"]
    on_narrower: Annotated[str, "what it does on a mask already narrower: skip, narrow, ..."]
    masks: Annotated[
        dict[str, CpuList | None],
        Keys("a thread class"),
        "the masks it sets, per thread class (null: not computable without the host)",
    ]
    leaves: Annotated[
        dict[str, CpuList | None], Keys("a thread class"), "every class's mask after it acted"
    ]
    note: Annotated[str, "what it does here, in words"]
    evidence: Annotated[list[BinderEvidence], "where its behaviour was read"]


class ChainFindingDoc(TypedDict):
    code: Annotated[str, "`binders-conflict`, `binders-pin-first-cpu`, `binders-silent-skip`, ..."]
    severity: Annotated[Severity, "`error`, `warning` or `info`"]
    binders: Annotated[list[str], "the binders it is about"]
    message: Annotated[str, "what happens, in words"]
    hint: Annotated[str, "what to do"]


class ChainSwitch(TypedDict):
    binder: Annotated[str, "the binder the switch acts on (the owner itself: how to turn it on)"]
    switch: Annotated[str, "the variable, flag or command"]


class ChainDocument(TypedDict):
    """Every binder acting on one worker, in order, the winner and the switches."""

    pid: Annotated[int | None, "the worker (null: a command line)"]
    binders: Annotated[list[ChainStep], "the binders found, in the order they act"]
    predicted: Annotated[
        dict[str, CpuList | None], Keys("a thread class"), "the final mask per thread class"
    ]
    observed: Annotated[
        dict[str, CpuList] | None,
        Keys("a thread class"),
        "the masks read per thread class (null: nothing running)",
    ]
    winner: Annotated[str | None, "the binder whose mask the main thread ends with"]
    winners: Annotated[
        dict[str, str | None], Keys("a thread class"), "the binder each class ends with"
    ]
    findings: Annotated[list[ChainFindingDoc], "conflicts and surprises of the chain"]
    owner: Annotated[str, "the owner the switches keep (`--owner`, else the chain's choice)"]
    owner_reason: Annotated[str, "why that owner"]
    switches: Annotated[list[ChainSwitch], "what to change so that only the owner binds"]
    switches_by_owner: Annotated[
        dict[str, list[ChainSwitch]], Keys("an owner"), "the switches for every owner"
    ]


class BinderFacts(TypedDict):
    id: Annotated[str, "the binder"]
    name: Annotated[str, "in words"]
    owner: Annotated[str | None, "the owner it belongs to (null: none keeps it)"]
    configured: Annotated[list[str], "where it is configured"]
    acts: Annotated[str, "the stage it acts at"]
    threads: Annotated[list[str], "the thread classes it touches"]
    on_narrower: Annotated[str, "skip, narrow, override, or fail and warn"]
    on_narrower_note: Annotated[str, "more words about that"]
    off: Annotated[str, "the switch that leaves it out"]
    versions: Annotated[list[dict[str, str]], "how its behaviour changed between versions"]
    evidence: Annotated[list[BinderEvidence], "where it was read"]


class ExplainBindersDocument(TypedDict):
    """`ascendtune explain binders --json`: every binder modelled and each worker's chain."""

    kind: Annotated[Literal["binders"], "always `binders`"]
    root: Annotated[str, "the host read, or `--cmdline`"]
    stages: Annotated[list[str], "the stages, in the order a worker meets them"]
    thread_classes: Annotated[dict[str, str], Keys("a thread class"), "each class in words"]
    binders: Annotated[list[BinderFacts], "every binder ascendtune models"]
    workers: Annotated[list[ChainDocument], "the chain of each worker (or the command line)"]


class _CheckConfigBody(TypedDict):
    """`ascendtune check-config --json`: the additional-config checked against a version's rules."""

    target: Annotated[str, "the vLLM-Ascend version whose rules were used"]
    findings: Annotated[list[ConfigFinding], "what the checker has to say"]
    effective: Annotated[
        dict[str, Any], "the config as vLLM-Ascend would run it, after its silent rewrites"
    ]
    counts: Annotated[ConfigCounts, "findings per severity"]
    target_reason: Annotated[str, "why that version"]


class CheckConfigDocument(_CheckConfigBody, total=False):
    """`ascendtune check-config --json`: the additional-config checked against a version's rules."""

    binders: Annotated[
        ChainDocument, "the binders the command line or PID starts with (--cmdline, --pid)"
    ]


# ---- bind -----------------------------------------------------------------------------------


class ThreadFailed(TypedDict):
    tid: Annotated[int, "the thread"]
    error: Annotated[str, "what went wrong (`EPERM: Operation not permitted`, ...)"]
    errno: Annotated[str | None, "the errno name, when it was an error"]


class RestoreFailed(TypedDict):
    tid: Annotated[int, "the thread"]
    error: Annotated[str, "why its old mask could not be put back"]


class DryRunThread(TypedDict):
    tid: Annotated[int, "the thread"]
    name: Annotated[str, "its name"]
    role: Annotated[str, "the role it would get (`main`, `acl`, `release`)"]
    current: Annotated[CpuList, "its mask now"]
    target: Annotated[CpuList, "the mask it would get"]
    changes: Annotated[bool, "binding would change it"]


class ProcessInfo(TypedDict):
    name: Annotated[str, "the process name"]
    user: Annotated[str | None, "its owner"]
    cmdline: Annotated[list[str], "its command line, secrets redacted"]
    status: Annotated[str, "its state (`running`, `sleeping`, ...)"]


class _MigrateBody(TypedDict):
    nodes: Annotated[str, "the NUMA nodes the pages go to"]
    argv: Annotated[list[str], "the migratepages command"]
    ran: Annotated[bool, "it was run"]


class MigrateMemory(_MigrateBody, total=False):
    ok: Annotated[bool, "it succeeded (when ran)"]
    error: Annotated[str | None, "why not"]


class _BindPidBody(TypedDict):
    pid: Annotated[int, "the process bound"]
    cpus: Annotated[CpuList, "the CPUs it is bound to"]
    threads_total: Annotated[int, "its threads"]
    threads_bound: Annotated[
        int, "threads on target at the end (read on it, or set where the kernel cannot narrow it)"
    ]
    threads_failed: Annotated[list[ThreadFailed], "threads that could not be bound"]
    passes: Annotated[int, "passes over the threads (new threads appear while binding)"]
    verified: Annotated[
        bool,
        "a final re-read of every thread's mask, after the last write, matched its target, "
        "and no thread failed",
    ]
    dry_run: Annotated[bool, "nothing was changed (`--dry-run`)"]
    rank: Annotated[int | None, "the rank of the plan bound to"]
    source: Annotated[str, "where the CPUs came from (`--cpus`, a plan file, a computed plan)"]
    use_roles: Annotated[bool, "threads were placed by role (acl, release, main)"]
    roles: Annotated[dict[str, str], Keys("a role"), "the role CPUs of the target (cpulists)"]
    numa_nodes: Annotated[list[int], "the NUMA nodes of the target"]
    roles_placed: Annotated[
        dict[str, list[int]], Keys("a role"), "the threads put on each role's CPUs"
    ]
    threads_changed: Annotated[int, "threads whose mask was changed"]
    converged: Annotated[bool, "a whole pass found every thread already on target"]
    rolled_back: Annotated[list[int], "threads put back after a failure"]
    restore_failed: Annotated[list[RestoreFailed], "threads that could not be put back"]
    threads_exited: Annotated[int, "threads seen that ended while the process lived on"]
    stopped: Annotated[bool, "the process is stopped (SIGSTOP): bound, it runs there once resumed"]
    process: Annotated[ProcessInfo | None, "who the process is (null: psutil cannot see it)"]


class BindPidDocument(_BindPidBody, total=False):
    """`ascendtune bind --pid PID --json`: every thread of a running process bound, verified."""

    threads: Annotated[list[DryRunThread], "each thread's mask now and after (`--dry-run` only)"]
    migrate_memory: Annotated[MigrateMemory, "the page migration (`--migrate-memory` only)"]


class BindLaunchDocument(TypedDict):
    """`ascendtune bind ... --json -- COMMAND`: a command started already bound."""

    command: Annotated[list[str], "the command given, secrets masked"]
    argv: Annotated[
        list[str], "what is executed (with numactl in front under `--membind`), secrets masked"
    ]
    cpus: Annotated[CpuList, "the CPUs it starts on"]
    threads_total: Annotated[int, "always 1 (this process, before exec)"]
    threads_bound: Annotated[int, "1 when its mask reads back as cpus"]
    threads_failed: Annotated[list[ThreadFailed], "always empty"]
    passes: Annotated[int, "1, or 0 under `--dry-run`"]
    verified: Annotated[bool, "its mask reads back as cpus"]
    dry_run: Annotated[bool, "nothing was started (`--dry-run`)"]
    rank: Annotated[int | None, "the rank of the plan"]
    source: Annotated[str, "where the CPUs came from"]
    membind: Annotated[str | None, "the NUMA nodes memory is bound to (`--membind`)"]


# ---- snapshot -------------------------------------------------------------------------------


class SnapshotDocument(TypedDict):
    """`ascendtune snapshot DEST --json`: what was captured (and read back)."""

    path: Annotated[str, "the folder or archive written"]
    files: Annotated[int, "files captured"]
    links: Annotated[int, "symbolic links captured"]
    missing: Annotated[list[str], "paths looked for and absent on the host"]
    accelerators: Annotated[int, "accelerators the capture replays"]
    cpus_online: Annotated[int, "online CPUs the capture replays"]


# ---- log ------------------------------------------------------------------------------------


class LoggedPlan(TypedDict):
    npu: Annotated[int, "the NPU the pools are for"]
    main: Annotated[CpuList, "main CPUs"]
    acl: Annotated[CpuList, "acl_thread CPUs"]
    release: Annotated[CpuList, "release_thread CPUs"]


class LoggedIrq(TypedDict):
    npu: Annotated[int, "the NPU"]
    pci: Annotated[str, "its PCI address"]
    sq_irq: Annotated[int, "the sq_send_trigger IRQ"]
    sq_cpu: Annotated[int, "the CPU it was bound to"]
    cq_irq: Annotated[int, "the cq_update IRQ"]
    cq_cpu: Annotated[int, "the CPU it was bound to"]


class LogRank(TypedDict):
    rank: Annotated[int | None, "vLLM-Ascend's rank id (the worker's local rank)"]
    pid: Annotated[int | None, "the worker's PID"]
    process: Annotated[str | None, "the log record's process name (`Worker_TP3`, ...)"]
    dp_rank: Annotated[int | None, "its data-parallel engine"]
    global_rank: Annotated[int | None, "vLLM's global rank"]
    binding: Annotated[
        Literal["bound", "failed", "skipped", "not seen"], "what CPU binding did for it"
    ]
    reason: Annotated[str | None, "the exception text, or why it was skipped"]
    cause: Annotated[str | None, "a stable code for the reason (`too_few_cpus`, ...)"]
    cause_text: Annotated[str | None, "the cause in words"]
    fix: Annotated[str | None, "what to do"]
    mode: Annotated[str | None, "the binding mode logged (`topo_affinity`, `global_slice`)"]
    visible_npus: Annotated[list[int], "the running NPU list it printed"]
    plan: Annotated[dict[str, Any] | None, Like(LoggedPlan), "the pools it printed"]
    irqs: Annotated[list[dict[str, Any]], Like(LoggedIrq), "the IRQ bindings it printed"]
    migrate_numa: Annotated[list[int], "the NUMA nodes its memory was migrated to"]
    skipped_steps: Annotated[list[str], "steps of binding that did not run (`irq: ...`)"]
    line: Annotated[int, "the first line that named this worker"]


class LogFinding(TypedDict):
    code: Annotated[str, "a stable identifier"]
    severity: Annotated[Severity, "`error`, `warning` or `info`"]
    ranks: Annotated[list[int], "the ranks it is about"]
    message: Annotated[str, "in words"]
    hint: Annotated[str, "what to do"]


class LogComparison(TypedDict):
    host: Annotated[str, "the host the prediction was made for"]
    mode: Annotated[str, "the mode predicted"]
    predicted: Annotated[
        dict[str, dict[str, str]], Keys("an NPU"), "the predicted roles (cpulists) per NPU"
    ]


LogSummary = TypedDict(
    "LogSummary",
    {
        "bound": Annotated[int, "workers bound"],
        "failed": Annotated[int, "workers whose binding failed"],
        "skipped": Annotated[int, "workers that skipped binding"],
        "not seen": Annotated[int, "workers that logged nothing about binding"],
    },
)


class LogRun(TypedDict):
    run: Annotated[int, "1, 2, ... in the order of the file"]
    first_line: Annotated[int, "its first line"]
    last_line: Annotated[int, "its last line"]
    started: Annotated[str, "why a run begins there (a start banner, PIDs binding again, ...)"]
    summary: Annotated[dict[str, int], Like(LogSummary), "its workers per binding outcome"]
    failed_ranks: Annotated[list[int], "ranks whose binding failed in it"]


class LogDocument(TypedDict):
    """`ascendtune log FILE --json`: what a vLLM / vLLM-Ascend server log says about CPU binding."""

    binding_seen: Annotated[bool, "any CPU-binding line at all"]
    ranks: Annotated[list[LogRank], "one entry per worker"]
    versions: Annotated[dict[str, str], Keys("`vllm`, `vllm_ascend`"), "versions the log names"]
    args: Annotated[dict[str, Any] | None, "vLLM's `non-default args`"]
    additional_config: Annotated[dict[str, Any] | None, "the additional-config logged"]
    check_config: Annotated[
        dict[str, Any] | None,
        Like(CheckConfigDocument),
        "the logged additional-config checked (a check-config document without schema_version)",
    ]
    comparison: Annotated[
        LogComparison | None, "the logged pools beside the prediction (`--demo`/`--sysroot`)"
    ]
    findings: Annotated[list[dict[str, Any]], Like(LogFinding), "what the log shows, in words"]
    lines: Annotated[int, "lines read"]
    lines_cut: Annotated[int, "lines too long or ending mid-record"]
    truncated: Annotated[bool, "reading stopped at the size limit"]
    summary: Annotated[dict[str, int], Like(LogSummary), "workers per binding outcome"]
    runs: Annotated[
        list[LogRun],
        "every server run of a log appended across restarts, the last (the one `ranks` and "
        "`summary` describe) last",
    ]


# ---- watch ----------------------------------------------------------------------------------


class SetBy(TypedDict):
    binder: Annotated[
        str | None,
        "the binder's id (`explain binders`): the only one, or the latest in the chain's order "
        "of the candidates; null when unknown or unbound",
    ]
    name: Annotated[str | None, "the binder's name"]
    stage: Annotated[str | None, "when it acts (a stage of `explain binders`)"]
    how: Annotated[
        Literal["exact", "candidates", "unknown", "unbound"],
        "`exact`: one binder of the worker's chain leaves this mask on the thread's class, or "
        "ascendtune's own bind record shows it wrote it; `candidates`: several do; `unknown`: "
        "none does (the kernel does not say who called sched_setaffinity); `unbound`: the "
        "mask is every CPU the worker may use",
    ]
    candidates: Annotated[list[str], "every binder that leaves this mask, in the chain's order"]
    words: Annotated[str, "the same in words"]


class MaskChange(TypedDict):
    tid: Annotated[int, "the thread"]
    name: Annotated[str, "its name then"]
    before: Annotated[CpuList, "its mask at the sample before"]
    after: Annotated[CpuList, "its new mask"]
    sample: Annotated[int, "the sample that saw it (1: the first)"]
    set_by: Annotated[SetBy | None, "who set the new mask (null: not attributed)"]


class WatchBinder(TypedDict):
    id: Annotated[str, "the binder's id"]
    name: Annotated[str, "its name"]
    stage: Annotated[str, "when it acts"]
    outcome: Annotated[str, "what it does to this worker (`binds`, `skips`, `fails`...)"]


class _WatchThreadBody(TypedDict):
    tid: Annotated[int, "the thread"]
    name: Annotated[str, "its name"]
    cpus_ran: Annotated[CpuList, "the CPUs it ran on while watched"]
    last_cpu: Annotated[int | None, "the CPU it last ran on"]
    migrations: Annotated[int, "CPU migrations"]
    migrations_source: Annotated[str, "`sched` (the kernel's count) or `samples` (changes seen)"]
    ctx_voluntary: Annotated[int | None, "voluntary context switches"]
    ctx_involuntary: Annotated[int | None, "involuntary context switches"]
    cpu_time_s: Annotated[float, "CPU time gained while watched, seconds"]


class WatchThread(_WatchThreadBody, total=False):
    off_plan_share: Annotated[
        float | None, "share of its run time off the plan's CPUs (with a plan)"
    ]
    off_node_share: Annotated[float | None, "share off the device's NUMA node (with a node)"]
    share_basis: Annotated[str, "`cpu_time`, or `samples` when it gained no CPU time"]
    role: Annotated[str, "`acl` or `release` for torch_npu's role threads"]
    role_cpus: Annotated[CpuList | None, "the CPUs of its role in the plan"]
    role_stayed: Annotated[bool | None, "it ran on one CPU only, inside its role CPUs"]
    mask: Annotated[CpuList, "its affinity mask at the last sample (live watch only)"]
    mask_changes: Annotated[int, "times its mask changed while watched"]
    set_by: Annotated[
        SetBy | None, "who set that mask, seen at its first sample or its last change"
    ]


class RoleThread(TypedDict):
    tid: Annotated[int, "the thread"]
    name: Annotated[str, "its name"]
    role: Annotated[str, "`acl` or `release`"]
    cpus_ran: Annotated[CpuList, "the CPUs it ran on"]
    role_cpus: Annotated[CpuList | None, "the CPUs of its role"]
    role_stayed: Annotated[bool | None, "it stayed on one CPU of its role"]


class MemoryOnNode(TypedDict):
    node: Annotated[int, "the NUMA node"]
    bytes: Annotated[int, "resident bytes on it"]
    mib: Annotated[float, "the same in MiB"]


class Neighbour(TypedDict):
    pid: Annotated[int, "the other process"]
    tid: Annotated[int, "its thread"]
    process: Annotated[str, "the process name"]
    name: Annotated[str, "the thread name"]
    cpu_time_s: Annotated[float, "run time gained on the worker's CPUs, seconds"]
    cpus: Annotated[CpuList, "the worker's CPUs it ran on"]


class _WatchWorkerBody(TypedDict):
    pid: Annotated[int, "the worker"]
    name: Annotated[str, "its name"]
    alive: Annotated[bool, "it still runs"]
    pid_reused: Annotated[
        bool, "it is gone and a process started later has its PID (not watched: its figures end)"
    ]
    rank: Annotated[int | None, "the plan's rank"]
    device: Annotated[int | None, "the plan's device"]
    plan_cpus: Annotated[CpuList | None, "the CPUs it should run on"]
    numa_nodes: Annotated[list[int], "the reference NUMA nodes"]
    node_cpus: Annotated[CpuList | None, "the CPUs of those nodes"]
    cpu_time_s: Annotated[float, "CPU time gained while watched, seconds"]
    threads_total: Annotated[int, "threads reported"]
    threads_seen: Annotated[int, "threads seen at any sample"]
    threads_exited: Annotated[int, "threads that exited while watched"]
    threads: Annotated[list[dict[str, Any]], Like(WatchThread), "every thread"]
    role_threads: Annotated[list[dict[str, Any]], Like(RoleThread), "torch_npu's role threads"]
    memory_by_node: Annotated[list[MemoryOnNode] | None, "resident memory per NUMA node"]
    neighbours_cpus: Annotated[CpuList | None, "the CPUs neighbours are counted on"]
    neighbours: Annotated[list[Neighbour], "other processes' threads that ran on them"]
    neighbours_dropped: Annotated[int, "neighbour threads forgotten at the tracking cap"]


class WatchWorker(_WatchWorkerBody, total=False):
    off_plan_share: Annotated[float | None, "share of run time off the plan (with a plan)"]
    off_node_share: Annotated[float | None, "share of run time off the node (with a node)"]
    binders: Annotated[
        list[WatchBinder] | None,
        "the worker's binder chain, in order, read once (what `set_by` is judged against); "
        "null when it could not be read",
    ]
    mask_changes: Annotated[list[MaskChange], "the last 32 thread mask changes, oldest first"]
    mask_changes_total: Annotated[int, "thread mask changes seen while watched"]


class WatchDocument(TypedDict):
    """`ascendtune watch --json`: where each watched process's threads really ran."""

    interval_s: Annotated[float, "the sampling interval, seconds"]
    elapsed_s: Annotated[float, "time watched, seconds"]
    samples: Annotated[int, "samples taken"]
    clock_ticks: Annotated[int, "the kernel's clock ticks per second"]
    workers: Annotated[list[dict[str, Any]], Like(WatchWorker), "one entry per --pid"]


# ---- plan --emit --------------------------------------------------------------------------------


class Emitted(TypedDict):
    kind: Annotated[
        str, "the form asked for (`taskset`, `numactl`, `env`, `cpu-affinity-conf`, ...)"
    ]
    lines: Annotated[list[str], "the lines `plan --emit KIND` prints without --json"]


class PlanEmitDocument(PlanDocument):
    """`ascendtune plan --emit KIND --json`: the plan document with the emitted lines in it."""

    emit: Annotated[Emitted, "the emitted lines"]


# ---- explain --------------------------------------------------------------------------------


class _VersionRowBody(TypedDict):
    present: Annotated[bool, "this version reads the key (as asked, or deprecated)"]
    default: Annotated[Any, "its default in this version (null: none, or not read)"]
    status: Annotated[
        Literal["present", "deprecated", "elsewhere", "renamed", "removed", "absent"],
        "how this version treats the key",
    ]


class VersionRow(_VersionRowBody, total=False):
    type: Annotated[str, "the value's type (`bool`, `int`, `section`, ...)"]
    choices: Annotated[list[Any], "the values it accepts"]
    env: Annotated[str, "the environment variable read when the key is absent"]
    default_from: Annotated[str, "where the default comes from, when not a constant"]
    path: Annotated[str, "where this version reads the setting, when not the key asked"]
    note: Annotated[str, "more words about this version"]


class Interaction(TypedDict):
    rule: Annotated[str | None, "the check-config rule that models it (null: none does)"]
    keys: Annotated[list[str], "the other keys involved"]
    what: Annotated[str, "the interaction, in words"]
    versions: Annotated[list[str], "the versions it applies to"]


class LogLine(TypedDict):
    means: Annotated[str, "what the line says about the key"]
    example: Annotated[str, "the line as a server logs it"]
    binding: Annotated[str | None, "the CPU-binding outcome the line shows (null: none)"]


class PerVersion(TypedDict):
    versions: Annotated[str, "the versions"]
    what: Annotated[str, "how the key behaves there"]


class _HistoryBody(TypedDict):
    release: Annotated[str, "the first release (`v0.15.0rc1`) where it differs from the one before"]
    event: Annotated[
        Literal["added", "default", "type", "removed"],
        "what changed: the key appeared, its default or type changed, or it went",
    ]


class HistoryEvent(_HistoryBody, total=False):
    default: Annotated[Any, "added or default: its default from this release on"]
    default_unknown: Annotated[bool, "the source computes the default at run time"]
    before: Annotated[Any, "default or type: the value before this release"]
    type: Annotated[str, "its type from this release on"]


class ExplainKeyDocument(TypedDict):
    """`ascendtune explain KEY --json`: one additional-config key across every known version."""

    key: Annotated[str, "the key, dotted when nested"]
    concern: Annotated[str, "what it is about (`binding`, `multistream`, ...)"]
    concern_title: Annotated[str, "the concern in words"]
    side: Annotated[str, "`host` (CPU threads, scheduling, memory) or `device` (what the NPU runs)"]
    when: Annotated[str, "when it acts (`startup`, `load`, `warmup`, `per_step`, `periodic`)"]
    when_words: Annotated[str, "when, in words"]
    summary: Annotated[str, "what it does, in one line"]
    detail: Annotated[str, "what it does, in full (empty: nothing to add)"]
    versions: Annotated[
        dict[str, dict[str, Any]],
        Keys("a vLLM-Ascend version"),
        Like(VersionRow),
        "how each known version treats it",
    ]
    interactions: Annotated[
        list[dict[str, Any]], Like(Interaction), "other keys it works with or against"
    ]
    verify: Annotated[list[str], "how to check it took effect"]
    failure: Annotated[list[str], "how it fails"]
    log: Annotated[list[LogLine], "the log lines that show it"]
    per_version: Annotated[list[PerVersion], "how its behaviour changed between versions"]
    also: Annotated[list[str], "related keys"]
    history: Annotated[
        list[HistoryEvent],
        "its life across every vLLM-Ascend release, read from each release's source",
    ]


class ListedKey(TypedDict):
    key: Annotated[str, "the key, dotted when nested"]
    default: Annotated[Any, "its default in the target version (null for a section)"]
    type: Annotated[str, "the value's type (`bool`, `int`, `section`, ...)"]
    side: Annotated[str, "`host` or `device`"]
    when: Annotated[str, "when it acts"]
    summary: Annotated[str, "what it does, in one line"]


class ConcernGroup(TypedDict):
    concern: Annotated[str, "the concern (`binding`, `multistream`, ...)"]
    title: Annotated[str, "the concern in words"]
    keys: Annotated[list[dict[str, Any]], Like(ListedKey), "its keys"]


class ExplainListingDocument(TypedDict):
    """`ascendtune explain --json`: every key of one version, by concern (`--search WORD`)."""

    target: Annotated[str, "the vLLM-Ascend version listed"]
    search: Annotated[str | None, "the word searched for (null: every key)"]
    groups: Annotated[list[ConcernGroup], "the keys by concern (only concerns with a key)"]
    count: Annotated[int, "keys listed"]


class VersionFact(TypedDict):
    what: Annotated[str, "the fact"]
    evidence: Annotated[
        Literal["git", "PR", "inferred"],
        "how it is known: read in the source, read in a PR or issue thread, or inferred",
    ]
    note: Annotated[str, "why it is believed, for an inferred fact (empty: nothing to add)"]


class VersionEntry(TypedDict):
    name: Annotated[str, "the name --target takes"]
    package_versions: Annotated[
        list[str], "vllm_ascend's `Version:` values (empty: a main snapshot)"
    ]
    released: Annotated[str | None, "the upload date of the release, or the snapshot's commit date"]
    vllm: Annotated[str, "the vLLM it pairs with"]
    source: Annotated[str, "what the entry was read from"]
    binding_impl: Annotated[
        str | None, "git blob prefix of its `cpu_binding.py` (null: it ships no CPU binding)"
    ]
    binding_impl_evidence: Annotated[
        Literal["git", "PR", "inferred"],
        "how binding_impl is known (`inferred`: the file was not read; it names its twin)",
    ]
    binding_call: Annotated[str, "how its worker calls the binding (empty: no binding)"]
    binding_default: Annotated[bool, "`enable_cpu_binding`'s default"]
    binding_runs: Annotated[
        Literal["worker start", "device set-up", "after warm-up"] | None,
        "when the worker calls it (null: no binding)",
    ]
    npu_of_rank: Annotated[
        Literal["visible-index", "sorted-busy", "device-id"] | None,
        "how a rank finds the NPU it binds (null: no binding)",
    ]
    data_parallel: Annotated[
        Literal["narrowed", "restart"],
        "what data parallel does: each engine sees its own devices, or its local ranks restart "
        "at 0 over the whole list",
    ]
    config_schema: Annotated[str, "where its additional-config schema comes from"]
    facts: Annotated[list[VersionFact], "what ascendtune models about it, and how it is known"]


class ExplainVersionsDocument(TypedDict):
    """`ascendtune explain versions --json`: every vLLM-Ascend version --target takes."""

    newest: Annotated[str, "the newest entry (what `--target auto` falls back to)"]
    versions: Annotated[list[VersionEntry], "every version, oldest first"]


class BindingStep(TypedDict):
    name: Annotated[
        str,
        "the step (`visible_npus`, `busy_npus`, `npu_of_rank`, `mode`, `affinity`, `roles`, "
        "`interrupts`, `memory`, `log_line`, ...)",
    ]
    input: Annotated[dict[str, Any], "what the step starts from (per step, free form)"]
    result: Annotated[dict[str, Any], "what it gives (per step, free form)"]
    words: Annotated[str, "the step in words"]


class BetterPool(TypedDict):
    device: Annotated[int, "the logical id of the rank's device"]
    cpus: Annotated[str, "its CPUs (a cpulist, `-` for none)"]
    numa_nodes: Annotated[list[int], "the NUMA nodes of its CPUs"]
    device_node: Annotated[int | None, "the NUMA node of its device"]
    locality: Annotated[float | None, "the share of its CPUs on its device's node (0 to 1)"]
    roles: Annotated[dict[str, str], Like(Roles), "the split of its CPUs by thread role"]


class Better(TypedDict):
    policy: Annotated[str, "the policy compared with (`numa-local`)"]
    plan: Annotated[
        dict[str, Any] | None, Like(BetterPool), "its pool for the rank (null: it cannot plan)"
    ]
    departures: Annotated[list[str], "where and why vLLM-Ascend's binding differs from it"]


class ExplainBindingBody(TypedDict):
    target_reason: Annotated[str, "why that version (given, detected, or the newest)"]
    rank: Annotated[int, "the rank followed (`--rank`)"]
    target: Annotated[str, "the vLLM-Ascend version whose binding is followed"]
    mode: Annotated[str, "the mode it uses (`topo_affinity`, `global_slice`, ...)"]
    steps: Annotated[list[BindingStep], "the steps vLLM-Ascend's binding takes for the rank"]
    better: Annotated[Better, "the better policy's pool for the same rank, and the differences"]


class ExplainBindingDocument(WithHost, ExplainBindingBody):
    """`ascendtune explain binding --json`: the steps of vLLM-Ascend's binding for one rank."""


# ---- bind --workers, bind --pid --show ------------------------------------------------------


class WorkerResult(TypedDict):
    pid: Annotated[int, "the worker"]
    name: Annotated[str | None, "its process name"]
    device: Annotated[int | None, "the device it drives (null: none, or several)"]
    devices: Annotated[list[int], "every device it holds open"]
    rank: Annotated[int | None, "the plan's rank for its device (null: none)"]
    target_cpus: Annotated[CpuList | None, "the CPUs it is (or would be) bound to"]
    roles: Annotated[dict[str, str], Keys("a role"), "the role CPUs of the target (cpulists)"]
    cpus_before: Annotated[CpuList, "the union of its threads' masks before"]
    cpus_after: Annotated[
        CpuList,
        "the union of its threads' masks read back after binding (a dry run: the union of the "
        "masks they would get; nothing is changed)",
    ]
    threads_total: Annotated[int, "its threads"]
    threads_bound: Annotated[int, "threads on target (a dry run: already)"]
    threads_failed: Annotated[list[ThreadFailed], "threads that could not be bound"]
    threads_changed: Annotated[int, "threads whose mask was changed"]
    verified: Annotated[
        bool,
        "a final re-read of every thread's mask, after the last write, matched its target, "
        "and no thread failed",
    ]
    changed: Annotated[bool, "masks were changed (a dry run: would be)"]
    dry_run: Annotated[bool, "nothing was changed"]
    error: Annotated[
        str | None, "why it was not bound (no rank for its device, exited, EPERM, ...)"
    ]
    rolled_back: Annotated[int, "threads put back after a failure"]
    bind_ms: Annotated[float, "time spent binding it, milliseconds"]
    self_binding: Annotated[
        bool | None,
        "its vLLM-Ascend binds by itself (enable_cpu_binding); null: no vLLM command line found",
    ]


class WorkersSummary(TypedDict):
    workers: Annotated[int, "workers found"]
    bound: Annotated[int, "workers bound and verified"]
    failed: Annotated[int, "workers not bound (then the exit status is 1)"]
    would_change: Annotated[int, "workers a dry run would change"]


class BindWorkersDocument(TypedDict):
    """`ascendtune bind --workers --json`: every worker of a running server bound to its rank."""

    root: Annotated[str, "the root read (`/`, a sysroot, `demo:NAME`)"]
    source: Annotated[str, "where the plan came from (a plan file, a computed plan)"]
    dry_run: Annotated[bool, "nothing was changed (`--dry-run`)"]
    workers: Annotated[list[dict[str, Any]], Like(WorkerResult), "one entry per worker found"]
    handoff: Annotated[
        list[str], "what happens with vLLM-Ascend's own binding of these workers, in words"
    ]
    summary: Annotated[dict[str, int], Like(WorkersSummary), "workers per outcome"]


class MaskRow(TypedDict):
    cpus: Annotated[CpuList, "the mask"]
    threads: Annotated[int, "threads with this mask (and this expected mask)"]
    tids: Annotated[list[int], "those threads"]
    role_threads: Annotated[list[str], "torch_npu's role threads among them (`acl_thread 123`)"]
    expected: Annotated[CpuList | None, "what the plan wants for them (null: no plan)"]
    matches: Annotated[bool | None, "the mask is the expected one (null: no plan)"]


class BindShowDocument(TypedDict):
    """`ascendtune bind --pid PID --show --json`: every thread's mask read back, grouped."""

    pid: Annotated[int, "the process"]
    name: Annotated[str | None, "its name"]
    threads_total: Annotated[int, "its threads"]
    target: Annotated[CpuList | None, "the CPUs of the plan compared with (null: no plan)"]
    source: Annotated[str | None, "where that plan came from"]
    off_target: Annotated[int, "threads whose mask differs from the plan's (0 without a plan)"]
    masks: Annotated[list[dict[str, Any]], Like(MaskRow), "threads grouped by mask, largest first"]


# ---- fleet ----------------------------------------------------------------------------------


class TopoReport(TopoDocument):
    """A `topo` document as a node's report."""

    schema_version: Annotated[int, "the document's schema version"]


class DoctorReport(DoctorDocument):
    """A `doctor` document as a node's report."""

    schema_version: Annotated[int, "the document's schema version"]


class PlanReport(PlanDocument):
    """A `plan` document as a node's report."""

    schema_version: Annotated[int, "the document's schema version"]


class Difference(TypedDict):
    key: Annotated[str, "what differs (`cpus_online`, a doctor check id, a rank's CPUs, ...)"]
    value: Annotated[str, "this node's value"]
    majority: Annotated[str, "the value most nodes of its group have"]


class _FleetNodeBody(TypedDict):
    node: Annotated[str, "the node's hostname (as captured), else as the cluster names it"]
    node_id: Annotated[str | None, "the Ray node id (null: a snapshot)"]
    group: Annotated[str | None, "its topology class (null: it did not answer)"]
    status: Annotated[Literal["ok", "differs", "failed", "no answer"], "what became of the node"]
    differs: Annotated[list[str], "the keys where it differs from its group's majority"]
    differences: Annotated[list[dict[str, Any]], Like(Difference), "each difference"]
    fails: Annotated[list[str], "the doctor checks that failed on it"]
    reason: Annotated[str | None, "why it has no report"]
    report: Annotated[
        dict[str, Any] | None,
        Like(TopoReport | DoctorReport | PlanReport),
        "the view's document for the node (`topo` for the snapshot view); null: none",
    ]


class FleetNode(_FleetNodeBody, total=False):
    source: Annotated[str, "the snapshot read (`fleet compare`)"]
    address: Annotated[str, "the node's address (Ray)"]
    seconds: Annotated[float | None, "the time its answer took, seconds (Ray)"]
    bytes: Annotated[int, "the size of its snapshot archive (Ray)"]
    saved: Annotated[str, "where its archive was saved (`--save`)"]
    python: Annotated[str, "the node's Python version (Ray)"]
    ascendtune: Annotated[str, "where ascendtune was imported from on the node (Ray)"]
    ascendtune_shipped: Annotated[bool, "ascendtune was shipped to it with the task (Ray)"]
    capture_seconds: Annotated[float, "the capture's time on the node, seconds (Ray)"]
    ray_version: Annotated[str | None, "the node's Ray version"]
    devices_env: Annotated[
        dict[str, str], Keys("a variable"), "the visible-devices variables the task saw (Ray)"
    ]
    replayed: Annotated[str, "the source the node replayed instead of its host (tests)"]


FleetSummary = TypedDict(
    "FleetSummary",
    {
        "nodes": Annotated[int, "nodes in the fleet"],
        "ok": Annotated[int, "nodes like their group's majority"],
        "differs": Annotated[int, "nodes that differ from it"],
        "failed": Annotated[int, "nodes whose capture or judging failed"],
        "no answer": Annotated[int, "nodes that did not answer in time"],
        "groups": Annotated[int, "topology classes"],
    },
)


class FleetGroup(TypedDict):
    group: Annotated[str, "the topology class"]
    nodes: Annotated[list[str], "its nodes"]
    majority: Annotated[dict[str, str], Keys("a key"), "the value most of its nodes have"]


class _FleetBody(TypedDict):
    view: Annotated[str, "the view (`snapshot`, `topo`, `doctor`, `plan`)"]
    summary: Annotated[dict[str, int], Like(FleetSummary), "nodes per status"]
    groups: Annotated[list[FleetGroup], "the topology classes"]
    keys: Annotated[list[str], "the keys compared"]
    nodes: Annotated[list[dict[str, Any]], Like(FleetNode), "one row per node"]


class FleetCompareDocument(_FleetBody):
    """`ascendtune fleet compare PATH... --json`: snapshots grouped and compared."""

    mode: Annotated[Literal["compare"], "`compare`: snapshots read here"]


class RayInfo(TypedDict):
    address: Annotated[str, "the cluster address joined"]
    driver_ray: Annotated[str, "the driver's Ray version"]
    shipped: Annotated[bool, "ascendtune was shipped to the nodes"]
    seconds: Annotated[float, "the gather's time, seconds"]


class _FleetRayBody(_FleetBody):
    mode: Annotated[Literal["ray"], "`ray`: gathered over a Ray cluster"]
    ray: Annotated[RayInfo, "the gather"]
    notes: Annotated[list[str], "facts that arose while gathering"]


class FleetRayDocument(_FleetRayBody, total=False):
    """`ascendtune fleet snapshot|topo|doctor|plan --json`: every node of a Ray cluster."""

    saved: Annotated[str, "the folder the snapshots were saved to (`--save`)"]


class _FleetBindNodeBody(TypedDict):
    node: Annotated[str, "the node as the cluster names it (its hostname)"]
    node_id: Annotated[str, "the Ray node id"]
    address: Annotated[str, "the node's address (Ray)"]
    host: Annotated[str | None, "the hostname the node's task saw (null: no answer)"]
    status: Annotated[
        Literal["verified", "planned", "nothing to bind", "refused", "failed", "no answer"],
        "what became of the node: every worker bound and verified (`--apply`), a plan for every "
        "worker (dry run), no worker there, `--apply` refused (the node replays a captured "
        "host), a failure, or no answer within the deadline",
    ]
    reason: Annotated[str | None, "why, in words (the failing workers, the node's error, ...)"]
    workers: Annotated[int | None, "workers found on the node (null: none reported)"]
    threads_bound: Annotated[int | None, "their threads on target (a dry run: already)"]
    threads_total: Annotated[int | None, "their threads"]
    verified: Annotated[
        bool | None,
        "every worker verified from a final re-read of the kernel's masks (null: a dry run, or "
        "no answer)",
    ]
    seconds: Annotated[float | None, "the time its answer took, seconds"]
    bind: Annotated[
        dict[str, Any] | None,
        Like(BindWorkersDocument),
        "the node's own `bind --workers --json` document (null: none)",
    ]


class FleetBindNode(_FleetBindNodeBody, total=False):
    replayed: Annotated[str, "the source the node replays instead of its host (tests)"]
    pids: Annotated[list[int], "the only processes taken as its workers (ASCENDTUNE_FLEET_PIDS)"]
    live: Annotated[bool, "the node binds its own live host (false: it replays one)"]
    python: Annotated[str, "the node's Python version"]
    ascendtune: Annotated[str, "where ascendtune was imported from on the node"]
    ray_version: Annotated[str | None, "the node's Ray version"]


FleetBindSummary = TypedDict(
    "FleetBindSummary",
    {
        "nodes": Annotated[int, "nodes asked"],
        "verified": Annotated[int, "nodes whose every worker was bound and verified"],
        "planned": Annotated[int, "nodes that planned every worker (dry run)"],
        "nothing to bind": Annotated[int, "nodes where no worker runs"],
        "refused": Annotated[int, "nodes that refused --apply (a replayed host)"],
        "failed": Annotated[int, "nodes that failed"],
        "no answer": Annotated[int, "nodes that did not answer in time"],
        "workers": Annotated[int, "workers found on every node"],
        "threads_bound": Annotated[int, "their threads on target"],
        "threads_total": Annotated[int, "their threads"],
    },
)


class FleetBindDocument(TypedDict):
    """`ascendtune fleet bind --workers --json`: `bind --workers` on every node of a Ray cluster."""

    mode: Annotated[Literal["ray"], "`ray`: run over a Ray cluster"]
    apply: Annotated[bool, "the nodes bound (`--apply`); false: a dry run"]
    ray: Annotated[RayInfo, "the run"]
    nodes: Annotated[list[dict[str, Any]], Like(FleetBindNode), "one row per node"]
    summary: Annotated[dict[str, int], Like(FleetBindSummary), "nodes per status, and totals"]
    notes: Annotated[list[str], "facts that arose while running"]


class FleetAgentNode(TypedDict):
    node: Annotated[str, "the node as the cluster names it (its hostname)"]
    node_id: Annotated[str, "the Ray node id"]
    address: Annotated[str, "the node's address (Ray): the agent is read at ADDRESS:PORT"]
    up: Annotated[bool, "its agent answered with an ascendtune agent's metrics"]
    reason: Annotated[
        str | None, "why it is down (`connection refused`, `no answer in 2 s`, `HTTP 404`, ...)"
    ]
    version: Annotated[str | None, "the agent's ascendtune version"]
    mode: Annotated[str | None, "`keep` (it binds) or `observe`"]
    plan_ok: Annotated[bool | None, "the agent has a plan for the workers"]
    workers: Annotated[int | None, "workers it sees"]
    threads_bound: Annotated[int | None, "their threads on the plan"]
    threads_total: Annotated[int | None, "their threads"]
    off_plan_share: Annotated[
        float | None, "share of the workers' CPU time off the plan, 0 to 1 (null: none yet)"
    ]
    restarts: Annotated[int | None, "worker restarts it counted"]
    last_sample_age_s: Annotated[
        float | None, "seconds since its last sample (by this machine's clock)"
    ]
    doctor_failures: Annotated[list[str], "doctor's host checks that fail there"]
    seconds: Annotated[float | None, "the time its answer took, seconds"]


class AgentRayInfo(TypedDict):
    address: Annotated[str, "the cluster address joined"]
    driver_ray: Annotated[str, "the driver's Ray version"]


class FleetAgentSummary(TypedDict):
    nodes: Annotated[int, "nodes asked"]
    up: Annotated[int, "nodes whose agent answered"]
    down: Annotated[int, "nodes whose agent did not (then the exit status is 1)"]
    workers: Annotated[int, "workers the agents see"]
    threads_bound: Annotated[int, "their threads on the plan"]
    threads_total: Annotated[int, "their threads"]


class FleetAgentStatusDocument(TypedDict):
    """`ascendtune fleet agent-status --json`: every node's agent, read from its /metrics."""

    mode: Annotated[Literal["ray"], "`ray`: the nodes of a Ray cluster"]
    ray: Annotated[AgentRayInfo, "the cluster"]
    port: Annotated[int, "the agents' port"]
    nodes: Annotated[list[dict[str, Any]], Like(FleetAgentNode), "one row per node"]
    summary: Annotated[dict[str, int], Like(FleetAgentSummary), "agents up and down, and totals"]
    notes: Annotated[list[str], "facts that arose while reading them"]


def plain(doc: Mapping[str, object]) -> dict[str, Any]:
    """A typed document as the printers take it (`dict[str, Any]`): the same keys and values."""
    return {**doc}


# ---- the registry ---------------------------------------------------------------------------

# file stem under schemas/ -> the document's type, or its forms (the document is one of them)
DOCUMENTS: dict[str, Any] = {
    "topo": TopoDocument,
    "plan": (PlanDocument, PlanEmitDocument),
    "plan-compare": PlanCompareDocument,
    "doctor": DoctorDocument,
    "check-config": CheckConfigDocument,
    "bind": (BindPidDocument, BindLaunchDocument),
    "snapshot": SnapshotDocument,
    "log": LogDocument,
    "watch": WatchDocument,
    "explain": (
        ExplainKeyDocument,
        ExplainListingDocument,
        ExplainBindingDocument,
        ExplainVersionsDocument,
        ExplainBindersDocument,
    ),
    "bind-workers": BindWorkersDocument,
    "bind-show": BindShowDocument,
    "fleet": (FleetCompareDocument, FleetRayDocument),
    "fleet-bind": FleetBindDocument,
    "fleet-agent-status": FleetAgentStatusDocument,
}
