"""The `--json` documents, as types: one TypedDict per document and per object inside one.

The document builders in `ascendtune/app/*.py` are annotated with these types, so mypy checks
that a builder's keys are the documented ones; `scripts/gen_schemas.py` turns them into the JSON
Schemas under `schemas/` and the key list in the README. Each key is
`Annotated[type, "what it means"]`; a mapping that a core `to_json()` (or a comprehension)
builds with a looser type says which shape it has with `Like(SomeTypedDict)`.

To add a document: write its TypedDict here, annotate its builder with it, list it in
`DOCUMENTS`, and run `python scripts/gen_schemas.py`. Every printed document also carries
`schema_version` (`SCHEMA_VERSION`), which the printer adds; it goes up on a breaking change
(a key removed, renamed, or given another type or meaning), not when a key is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Like:
    """The value is a mapping (or a list of them) shaped as `shape`, a TypedDict; its producer
    (a core `to_json()`, a comprehension) types it more loosely than that."""

    shape: Any


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


class TopoAccelerator(TypedDict):
    vendor: Annotated[str, "`huawei` or `nvidia`"]
    logical_id: Annotated[
        int, "the id the runtime uses (ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)"
    ]
    npu_id: Annotated[int | None, "the card id npu-smi prints (the GPU index on NVIDIA)"]
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
    npu_id: Annotated[int, "the card id (the GPU index on NVIDIA)"]
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


class TopoDocument(WithHost, TopoBody):
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
    logical_id: Annotated[
        int, "the device whose CPU pool it gets (differs from device only where vLLM-Ascend errs)"
    ]
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
    mode: Annotated[str, "the rule used (`topo_affinity`, `global_slice`, `numa_local`, ...)"]
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


class PlanDocument(WithHost, PlanBody):
    """`ascendtune plan --json`: one policy's plan; `bind --plan FILE` reads it back."""


class PolicyError(TypedDict):
    error: Annotated[str, "why the policy cannot plan this host"]


class PlanCompareBody(TypedDict):
    policies: Annotated[
        dict[str, dict[str, Any]],
        Keys("a policy name"),
        Like(PlanDocument | PolicyError),
        "each policy that fits the vendor: its plan document (without `host`), or why it cannot plan",
    ]


class PlanCompareDocument(WithHost, PlanCompareBody):
    """`ascendtune plan --policy compare --json`: every policy's plan side by side."""


# ---- doctor ---------------------------------------------------------------------------------


class _CheckBody(TypedDict):
    id: Annotated[
        str,
        "the check (`cpu_governor`, `numa_balancing`, ..., `worker:PID`, `overlap:PID,PID`, `npu_irq:N`)",
    ]
    status: Annotated[Status, "`ok`, `warn`, `fail` or `skip`"]
    value: Annotated[str | None, "what was found"]
    expected: Annotated[str | None, "what it should be"]
    fix: Annotated[str | None, "a command that fixes it now"]
    fix_persistent: Annotated[str | None, "the form of the fix that survives a reboot"]
    section: Annotated[str, "`host` or `workers`"]
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
    sections: Annotated[list[str], "the sections run (`host`, `workers`)"]
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


class CheckConfigDocument(TypedDict):
    """`ascendtune check-config --json`: the additional-config checked against a version's rules."""

    target: Annotated[str, "the vLLM-Ascend version whose rules were used"]
    findings: Annotated[list[ConfigFinding], "what the checker has to say"]
    effective: Annotated[
        dict[str, Any], "the config as vLLM-Ascend would run it, after its silent rewrites"
    ]
    counts: Annotated[ConfigCounts, "findings per severity"]
    target_reason: Annotated[str, "why that version"]


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
    threads_bound: Annotated[int, "threads a final re-read found on target"]
    threads_failed: Annotated[list[ThreadFailed], "threads that could not be bound"]
    passes: Annotated[int, "passes over the threads (new threads appear while binding)"]
    verified: Annotated[bool, "a final re-read of every thread's mask matched"]
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

    command: Annotated[list[str], "the command given"]
    argv: Annotated[list[str], "what is executed (with numactl in front under `--membind`)"]
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


# ---- watch ----------------------------------------------------------------------------------


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


class WatchDocument(TypedDict):
    """`ascendtune watch --json`: where each watched process's threads really ran."""

    schema_version: Annotated[int, "the document's schema version"]
    interval_s: Annotated[float, "the sampling interval, seconds"]
    elapsed_s: Annotated[float, "time watched, seconds"]
    samples: Annotated[int, "samples taken"]
    clock_ticks: Annotated[int, "the kernel's clock ticks per second"]
    workers: Annotated[list[dict[str, Any]], Like(WatchWorker), "one entry per --pid"]


def plain(doc: Mapping[str, object]) -> dict[str, Any]:
    """A typed document as the printers take it (`dict[str, Any]`): the same keys and values."""
    return {**doc}


# ---- the registry ---------------------------------------------------------------------------

# file stem under schemas/ -> the document's type, or its forms (the document is one of them)
DOCUMENTS: dict[str, Any] = {
    "topo": TopoDocument,
    "plan": PlanDocument,
    "plan-compare": PlanCompareDocument,
    "doctor": DoctorDocument,
    "check-config": CheckConfigDocument,
    "bind": (BindPidDocument, BindLaunchDocument),
    "snapshot": SnapshotDocument,
    "log": LogDocument,
    "watch": WatchDocument,
}
