"""`worker:PID` and `overlap:A,B` rows: how each running accelerator worker is bound, compared
with the plan of the device it drives, and which workers share CPUs."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.core import vendors
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.doctor.facts import DoctorInput, PlanFacts, ThreadFacts, WorkerFacts
from ascendtune.core.doctor.report import Check, Status, join_ids
from ascendtune.core.model import Host, Vendor
from ascendtune.core.planner.model import RankPlan

if TYPE_CHECKING:
    # imported where a worker's rank is compared with its plan: its five frozen dataclasses
    # cost about 7 ms of every `doctor` start-up, and a host without workers needs none
    from ascendtune.core.bindplan import BindTarget

ROLE_THREAD_NAMES = ("acl_thread", "release_thread")
# Processes that start unrelated jobs: a parent or grandparent among these does not make two
# workers one job (two `vllm serve` started from one shell are still two services).
LAUNCHERS = frozenset(
    {
        "bash", "sh", "dash", "zsh", "fish", "ksh", "tmux", "tmux: server", "screen", "sshd",
        "systemd", "init", "docker-init", "tini", "dumb-init", "containerd-shim", "runc",
        "conmon", "su", "sudo", "nohup", "setsid", "raylet", "supervisord", "python-supervisor",
    }
)  # fmt: skip


def redact_command(argv: Sequence[str], limit: int = 160) -> str:
    """A command line fit to print: values of --api-key-like options masked, cut at `limit`."""
    # imported here: core.redact compiles its 15 patterns at import, and a doctor that finds no
    # worker prints no command (docs/startup.md)
    from ascendtune.core.redact import redact_args

    out = redact_args(argv)
    text = " ".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Audit(NamedTuple):
    """What the audit computed for one worker; kept to judge overlaps."""

    worker: WorkerFacts
    used: CpuSet  # every CPU any of its threads may run on
    cpuset: CpuSet  # what "unbound" is measured against
    unbound: tuple[int, ...]  # tids
    rank: RankPlan | None

    @property
    def all_unbound(self) -> bool:
        return bool(self.worker.threads) and len(self.unbound) == len(self.worker.threads)


def _dev_word(w: WorkerFacts) -> str:
    return vendors.profile(w.vendor).word


def _vllm_ascend(w: WorkerFacts) -> bool:
    """vLLM-Ascend's own binding rules apply: the worker holds Ascend NPUs."""
    return w.vendor == Vendor.HUAWEI.value


def _match(threads: Sequence[ThreadFacts], target: "BindTarget") -> str | None:
    """Which plan the threads follow: "roles" (each its role's mask), "pool" (all the pool)."""
    if target.has_roles and all(
        t.cpus == target.thread_target(t.name, use_roles=True)[1] for t in threads
    ):
        return "roles"
    if all(t.cpus == target.cpus for t in threads):
        return "pool"
    return None


def _role_threads(threads: Sequence[ThreadFacts]) -> dict[str, list[ThreadFacts]]:
    return {name: [t for t in threads if t.name.strip() == name] for name in ROLE_THREAD_NAMES}


def _masks(threads: Sequence[ThreadFacts]) -> list[dict[str, Any]]:
    count: dict[CpuSet, int] = {}
    for t in threads:
        count[t.cpus] = count.get(t.cpus, 0) + 1
    return [
        {"cpus": format_cpulist(m), "threads": n}
        for m, n in sorted(count.items(), key=lambda x: (-x[1], min(x[0], default=-1)))
    ]


def _device_node(host: Host | None, device: int) -> int | None:
    if host is None:
        return None
    a = host.accelerator(device)
    return a.numa_node if a else None


def _fallback_fix(w: WorkerFacts, host: Host | None, cpuset: CpuSet) -> str | None:
    """Without a plan rank: bind to the device's affinity, when that narrows anything."""
    if host is None or len(w.devices) != 1:
        return None
    a = host.accelerator(w.devices[0])
    cpus = a.cpu_affinity & cpuset if a is not None else frozenset()
    if not cpus or cpus == cpuset:
        return None
    return f"ascendtune bind --cpus {format_cpulist(cpus)} --pid {w.pid}"


class _Reading(NamedTuple):
    """What one worker's threads show, set beside its device and its plan rank."""

    audit: _Audit
    word: str  # "NPU", "GPU"
    devs: str  # "NPU 3", "GPU ?"
    nodes: tuple[int, ...]  # the NUMA nodes its threads may run on
    device_node: int | None  # the node of the one device it holds
    roles: dict[str, list[ThreadFacts]]  # acl_thread / release_thread by name
    target: "BindTarget | None"  # its rank's plan
    matched: str | None  # which form of the plan its threads follow (see _match)


def _base_data(w: WorkerFacts) -> dict[str, Any]:
    return {
        "pid": w.pid,
        "devices": list(w.devices),
        "device_files": list(w.device_files),
        "found_by": list(w.found_by),
        "comm": w.comm,
    }


def _unreadable(w: WorkerFacts, devs: str) -> Check | None:
    """The skip row of a worker whose threads cannot be read here, None for any other."""
    cid = f"worker:{w.pid}"
    if not w.present:
        return Check(
            cid, "skip", f"{devs}: PID {w.pid} has no proc/{w.pid} entry", None, None, "workers",
            f"{' and '.join(w.found_by) or 'the vendor tool'} lists it, but it is not visible "
            "here: it runs in another PID namespace (run doctor on the host, or the container "
            "with --pid=host)",
            _base_data(w),
        )  # fmt: skip
    if not w.threads:
        return Check(
            cid, "skip", f"{devs}: threads unreadable", None, None, "workers",
            f"no readable proc/{w.pid}/task/*/status (permission?)", _base_data(w),
        )  # fmt: skip
    return None


def _read(w: WorkerFacts, inp: DoctorInput, word: str, devs: str) -> _Reading:
    """Where its threads may run, against its cpuset, its device's node and its plan rank."""
    host, plan = inp.host, inp.plan
    threads = w.threads
    used = frozenset(c for t in threads for c in t.cpus)
    cpuset = w.cpuset or (host.cpus_allowed if host is not None else used)
    unbound = tuple(t.tid for t in threads if t.cpus >= cpuset)
    one = w.devices[0] if len(w.devices) == 1 else None
    rank = plan.rank_of(one) if one is not None else None
    target = None
    if rank is not None:
        from ascendtune.core.bindplan import target_of_rank

        target = target_of_rank(rank, plan.policy)
    return _Reading(
        audit=_Audit(w, used, cpuset, unbound, rank),
        word=word,
        devs=devs,
        nodes=host.nodes_of(used) if host is not None else (),
        device_node=_device_node(host, one) if one is not None else None,
        roles=_role_threads(threads),
        target=target,
        matched=_match(threads, target) if target is not None else None,
    )


def _value(w: WorkerFacts, r: _Reading) -> str:
    unbound = r.audit.unbound
    value = f"{r.devs} ({w.comm or '?'}): {len(w.threads)} threads"
    if unbound:
        value += f", {len(unbound)} unbound"
    value += f", on CPUs {format_cpulist(r.audit.used)}"
    if r.nodes:
        value += f" (node {join_ids(r.nodes)})"
    role_bits = [
        f"{name} on {format_cpulist(frozenset(c for t in ts for c in t.cpus))}"
        if ts
        else f"no {name}"
        for name, ts in r.roles.items()
    ]
    return value + "; " + ", ".join(role_bits)


def _expected(r: _Reading, plan: PlanFacts) -> str:
    rank, target = r.audit.rank, r.target
    if rank is not None and target is not None:
        roles = rank.roles
        if target.has_roles and (roles.acl or roles.release):
            expected = (
                f"{plan.policy} rank {rank.rank}: main {format_cpulist(roles.main)}, "
                f"acl {format_cpulist(roles.acl)}, release {format_cpulist(roles.release)}"
            )
        else:
            expected = f"{plan.policy} rank {rank.rank}: CPUs {format_cpulist(rank.cpus)}"
        if rank.numa_nodes:
            expected += f" (node {join_ids(rank.numa_nodes)})"
        return expected
    if r.device_node is not None:
        return f"bound to CPUs of node {r.device_node} (its {r.word}'s node)"
    return "bound to its device's CPUs"


def _judge(w: WorkerFacts, r: _Reading, inp: DoctorInput) -> tuple[Status, str | None, list[str]]:
    """(status, fix, details) from how its threads are bound against its plan rank."""
    plan, a, target = inp.plan, r.audit, r.target
    fix = (
        plan.bind_command(a.rank.rank, w.pid)
        if a.rank is not None
        else _fallback_fix(w, inp.host, a.cpuset)
    )
    if len(a.unbound) == len(w.threads):
        why = " (vLLM-Ascend only logs a warning when its binding fails)" if _vllm_ascend(w) else ""
        return (
            "fail",
            fix,
            [f"bound to nothing: every thread may run on all of {format_cpulist(a.cpuset)}{why}"],
        )
    if a.unbound:
        more = "…" if len(a.unbound) > 8 else ""
        return (
            "warn",
            fix,
            [
                f"{len(a.unbound)} of {len(w.threads)} threads unbound "
                f"(TIDs {join_ids(a.unbound[:8])}{more})"
            ],
        )
    if r.matched is not None:
        split = r.matched == "pool" and target is not None and target.has_roles
        return (
            "ok",
            None,
            ["every thread on the whole pool: acl_thread/release_thread not split out"]
            if split
            else [],
        )
    if target is not None:
        which = a.rank.rank if a.rank else "?"
        return "warn", fix, [f"bound, but not as the {plan.policy} plan places rank {which}"]
    if plan.error:
        return "ok", None, [f"no plan to compare with: {plan.error}"]
    if len(w.devices) > 1:
        return "ok", None, [f"holds {len(w.devices)} devices: compared with no single rank"]
    if plan.plan is not None:
        return "ok", None, [f"its {r.word} is not in the {plan.policy} plan (--visible-devices?)"]
    return "ok", None, []


def _away_from_device(
    w: WorkerFacts, r: _Reading, plan: PlanFacts, status: Status, fix: str | None
) -> tuple[Status, str | None, list[str]]:
    """A worker running wholly off its device's node: the notes, and ok becomes warn."""
    dnode, nodes = r.device_node, r.nodes
    if dnode is None or not nodes or dnode in nodes:
        return status, fix, []
    notes = [
        f"runs wholly on node {join_ids(nodes)}, away from its {r.word} on node {dnode} "
        "(memory follows the CPUs, so host-device copies cross nodes)"
    ]
    if r.matched is not None and plan.policy == "vllm-ascend":
        notes.append(
            "this is vLLM-Ascend's own plan: the second NPU of a pair gets the next node; "
            "--policy numa-local keeps it local"
        )
    if status == "ok":
        rank = r.audit.rank
        return (
            "warn",
            plan.bind_command(rank.rank, w.pid, "numa-local") if rank is not None else fix,
            notes,
        )
    return status, fix, notes


def _data(w: WorkerFacts, r: _Reading) -> dict[str, Any]:
    a = r.audit
    return {
        **_base_data(w),
        "command": redact_command(w.command) if w.command else None,
        "uid": w.uid,
        "session": w.session,
        "parents": [{"pid": p.pid, "comm": p.comm} for p in w.ancestors],
        "threads_total": len(w.threads),
        "threads_unbound": len(a.unbound),
        "cpus": format_cpulist(a.used),
        "cpuset": format_cpulist(a.cpuset),
        "numa_nodes": list(r.nodes),
        "device_numa_node": r.device_node,
        "role_threads": {
            name: [{"tid": t.tid, "cpus": format_cpulist(t.cpus)} for t in ts]
            for name, ts in r.roles.items()
        },
        "masks": _masks(w.threads),
        "plan_rank": a.rank.rank if a.rank is not None else None,
        "matches_plan": r.matched if r.target is not None else None,
    }


def _audit_worker(w: WorkerFacts, inp: DoctorInput) -> tuple[Check, _Audit | None]:
    """The `worker:PID` row, and what the overlap rows need (None: threads unreadable)."""
    word = _dev_word(w)
    devs = f"{word} {join_ids(w.devices)}" if w.devices else f"{word} ?"
    skipped = _unreadable(w, devs)
    if skipped is not None:
        return skipped, None
    r = _read(w, inp, word, devs)
    status, fix, details = _judge(w, r, inp)
    status, fix, away = _away_from_device(w, r, inp.plan, status, fix)
    check = Check(
        f"worker:{w.pid}", status, _value(w, r), _expected(r, inp.plan), fix, "workers",
        "; ".join(details + away) or None, _data(w, r),
    )  # fmt: skip
    return check, r.audit


def same_job(a: WorkerFacts, b: WorkerFacts) -> bool | None:
    """True when two workers are ranks of one job, False when two services, None: can't tell.

    One job's workers share a cgroup and a session, and a parent or grandparent that is not a
    launcher (shell, init, container runtime): the EngineCore or the API server.
    """
    if a.cgroup is not None and b.cgroup is not None and a.cgroup != b.cgroup:
        return False
    if a.session is not None and b.session is not None and a.session != b.session:
        return False
    if not a.ancestors or not b.ancestors:
        return None

    def near(w: WorkerFacts) -> set[int]:
        out = {w.pid}
        out.update(x.pid for x in w.ancestors[:2] if x.pid > 1 and x.comm not in LAUNCHERS)
        return out

    return bool(near(a) & near(b) - {a.pid, b.pid} or a.pid in near(b) or b.pid in near(a))


def _overlap_fix(a: _Audit, b: _Audit, plan: PlanFacts) -> str | None:
    loose = [x for x in (a, b) if x.all_unbound]
    if loose:  # binding the unbound one(s) is enough
        if any(x.rank is None for x in loose):
            return None
        return " && ".join(plan.bind_command(x.rank.rank, x.worker.pid) for x in loose if x.rank)
    if a.rank is None or b.rank is None:
        return None
    pol = plan.policy if not a.rank.cpuset & b.rank.cpuset else "numa-local"
    return (
        f"{plan.bind_command(a.rank.rank, a.worker.pid, pol)} && "
        f"{plan.bind_command(b.rank.rank, b.worker.pid, pol)}"
    )


def _overlap_check(a: _Audit, b: _Audit, plan: PlanFacts) -> Check | None:
    shared = a.used & b.used
    if not shared:
        return None
    pa, pb = a.worker.pid, b.worker.pid
    job = same_job(a.worker, b.worker)
    kind = {True: "ranks of one job", False: "different services", None: "unknown"}[job]
    # the value says it in words: "unknown" alone reads as if the CPUs were unknown
    said = {
        True: "ranks of one job",
        False: "two services: no common launcher",
        None: "one job or two services: cannot tell",
    }[job]
    value = f"PIDs {pa} and {pb} share CPUs {format_cpulist(shared)} ({said})"
    status: Status = "fail"
    fix = _overlap_fix(a, b, plan)
    if a.all_unbound or b.all_unbound:
        status = "warn"
        loose = [str(x.worker.pid) for x in (a, b) if x.all_unbound]
        detail = (
            f"worker {' and '.join(loose)} is unbound; binding it (see its worker row) ends this"
        )
    elif job is False:
        detail = (
            "two services compete for the same CPUs: each bound itself without knowing the "
            "other (the failure vLLM-Ascend issue 8600 describes); give each a disjoint cpuset "
            "or bind both from one plan"
        )
    elif job is True and _vllm_ascend(a.worker):
        detail = (
            "two ranks of one job share CPUs: vLLM-Ascend's topo_affinity extends an NPU alone "
            "on its node onto a node another NPU uses; --policy numa-local does not overlap"
        )
    elif job is True:
        detail = (
            "two ranks of one job share CPUs; --policy numa-local or exclusive does not overlap"
        )
    else:
        detail = (
            "two workers share CPUs; could not tell whether they are one job (no proc/PID/stat)"
        )
    data = {"pids": [pa, pb], "cpus": format_cpulist(shared), "same_job": job, "kind": kind}
    return Check(
        f"overlap:{pa},{pb}", status, value, "no CPU shared between workers", fix, "workers",
        detail, data,
    )  # fmt: skip


def worker_checks(workers: Sequence[WorkerFacts], inp: DoctorInput, scanned: str) -> list[Check]:
    """One `worker:PID` row per worker, then one `overlap:A,B` row per pair sharing CPUs."""
    if not workers:
        return [
            Check(
                "workers",
                "skip",
                "no NPU or GPU worker process found",
                None,
                None,
                "workers",
                scanned,
            )
        ]
    out: list[Check] = []
    audits: list[_Audit] = []
    for w in sorted(workers, key=lambda w: w.pid):
        check, audit = _audit_worker(w, inp)
        out.append(check)
        if audit is not None:
            audits.append(audit)
    for i, a in enumerate(audits):
        for b in audits[i + 1 :]:
            ov = _overlap_check(a, b, inp.plan)
            if ov is not None:
                out.append(ov)
    return out
