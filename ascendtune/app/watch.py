"""`watch` as the application sees it: what to watch (targets from --pid with --cpus or a plan,
or every worker), a session that samples them, one sample of a given length, and the JSON
document of a report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ascendtune.app.options import PlanOptions
from ascendtune.core.bindplan import target_from_plan
from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, UsageError
from ascendtune.core.watch import HostSample, Watch, WatchReport, WatchTarget, WorkerReport

if TYPE_CHECKING:
    from ascendtune.app.documents import WatchDocument
    from ascendtune.core.binders.attribution import Attributor, Own, SetBy
    from ascendtune.core.watch import MaskChange


class WatchOptions(NamedTuple):
    """`watch`: the processes (`pids`, or every worker of this host), what each should run on
    (`cpus`, a rank of `plan_file`, or of this host's plan under `policy`), and the interval."""

    pids: tuple[int, ...] = ()
    workers: bool = False
    cpus: str | None = None
    plan_file: str | None = None
    ranks: tuple[int, ...] = ()
    policy: str | None = None
    target: str = "auto"
    interval_s: float = 1.0


class ProcSampler(Protocol):
    """What a session needs of the host (ascendtune.host.watch.ProcSampler is one)."""

    clock_ticks: int

    def tgid(self, pid: int) -> int | None: ...

    def sample(
        self, workers: Iterable[int], *, neighbours: bool = True, ignore: Iterable[int] = ()
    ) -> HostSample: ...

    def online_cpus(self) -> CpuSet: ...

    def node_map(self) -> dict[int, CpuSet]: ...


def _node_cpus(nodes: Sequence[int], node_map: Mapping[int, CpuSet]) -> CpuSet | None:
    known = [node_map[n] for n in nodes if n in node_map]
    if not known:
        return None
    return frozenset().union(*known)


def target_from_cpus(
    pid: int, text: str, *, online: CpuSet, node_map: Mapping[int, CpuSet]
) -> WatchTarget:
    """Watch pid against an explicit cpulist; its node is every node holding those CPUs."""
    cpus = parse_cpulist(text, source="--cpus")
    if not cpus:
        raise InvalidInput("--cpus names no CPU", "give a cpulist such as 0-3,8")
    check_online(cpus, online, "--cpus")
    nodes = tuple(n for n, c in node_map.items() if c & cpus)
    return WatchTarget(pid=pid, plan_cpus=cpus, node_cpus=_node_cpus(nodes, node_map), nodes=nodes)


def target_from_plan_doc(
    pid: int,
    doc: Any,
    rank: int,
    *,
    source: str,
    online: CpuSet,
    node_map: Mapping[int, CpuSet],
) -> WatchTarget:
    """Watch pid against rank's CPUs (and roles) of a plan as `ascendtune plan --json` prints it.

    The reference node is the device's own (`device_numa_node`) when the plan names it, else
    the plan's `numa_nodes` for the rank.
    """
    bt = target_from_plan(doc, rank, source=source)
    check_online(bt.all_cpus, online, f"{source} rank {rank}")
    entry = next(r for r in doc["ranks"] if isinstance(r, dict) and r.get("rank") == rank)
    device = entry.get("device") if isinstance(entry.get("device"), int) else None
    dev_node = entry.get("device_numa_node")
    nodes: tuple[int, ...] = (dev_node,) if isinstance(dev_node, int) else bt.numa_nodes
    roles = {k: v for k, v in bt.roles.items() if k in ("main", "acl", "release")}
    return WatchTarget(
        pid=pid,
        device=device,
        plan_cpus=bt.cpus,
        roles=roles,
        node_cpus=_node_cpus(nodes, node_map),
        nodes=nodes,
        rank=rank,
    )


def targets_for(
    pids: Sequence[int],
    *,
    cpus: str | None,
    plan_doc: Any | None,
    plan_source: str,
    ranks: Sequence[int],
    online: CpuSet,
    node_map: Mapping[int, CpuSet],
) -> list[WatchTarget]:
    """One target per --pid: against --cpus, against a plan's rank (one --rank for all, or one
    per --pid in order), or against nothing."""
    if cpus is not None and plan_doc is not None:
        raise UsageError("give --cpus LIST or --plan FILE --rank R, not both")
    if plan_doc is None:
        if ranks:
            raise UsageError("--rank R picks a rank of --plan FILE; give the plan too")
        if cpus is None:
            return [WatchTarget(pid=p) for p in pids]
        return [target_from_cpus(p, cpus, online=online, node_map=node_map) for p in pids]
    if not ranks:
        raise UsageError("--plan FILE needs --rank R (the rank each --pid serves)")
    if len(ranks) not in (1, len(pids)):
        raise UsageError(
            f"{len(ranks)} --rank for {len(pids)} --pid: give one --rank for all, or one per --pid"
        )
    per = list(ranks) * len(pids) if len(ranks) == 1 else list(ranks)
    return [
        target_from_plan_doc(p, plan_doc, r, source=plan_source, online=online, node_map=node_map)
        for p, r in zip(pids, per, strict=True)
    ]


def check_online(cpus: CpuSet, online: CpuSet, what: str) -> None:
    outside = cpus - online
    if outside:
        raise InvalidInput(
            f"{what}: CPUs {format_cpulist(outside)} are not online on this host "
            f"(online: {format_cpulist(online)})",
            "see the host's CPUs with `ascendtune topo`",
        )


def check_targets(targets: Sequence[WatchTarget], sampler: ProcSampler) -> None:
    """MissingError for a PID that does not exist; InvalidInput for a thread id."""
    for t in targets:
        tgid = sampler.tgid(t.pid)
        if tgid is None:
            raise MissingError(f"no process {t.pid} on this host", "check the PID with `ps -ef`")
        if tgid != t.pid:
            raise InvalidInput(
                f"{t.pid} is a thread of process {tgid}, not a process",
                f"watch the whole process with --pid {tgid}",
            )


class Binders(Protocol):
    """Who set a watched thread's mask: each worker's binder chain (read once per process) and
    what ascendtune itself last wrote to it (LiveBinders reads this machine's)."""

    def attributors(self, pids: Sequence[int]) -> dict[int, Attributor]: ...

    def own(self, pid: int, started: int | None) -> Own | None: ...


class Session:
    """A running watch: one sample now, then one per `step()`; `report()` at any time.
    binders: attribute each thread's mask at its first sight and at each change."""

    def __init__(
        self,
        targets: Sequence[WatchTarget],
        sampler: ProcSampler,
        *,
        interval_s: float,
        ignore_pids: Sequence[int] = (),
        binders: Binders | None = None,
    ) -> None:
        self.targets = list(targets)
        self.sampler = sampler
        self.ignore = tuple(ignore_pids)
        self.binders = binders
        # pid -> (its start time, its chain as attributions): one chain per process, not per
        # sample (a PID reused by a new process is not watched on)
        self._attributors: dict[int, tuple[int | None, Attributor]] = {}
        self.watch = Watch(self.targets, clock_ticks=sampler.clock_ticks, interval_s=interval_s)
        self.step()

    def step(self) -> WatchReport:
        pids = [t.pid for t in self.targets]
        self.watch.update(self.sampler.sample(pids, neighbours=True, ignore=self.ignore))
        changes = self.watch.take_mask_changes()
        if changes and self.binders is not None:
            self._attribute(self.binders, changes)
        return self.watch.report()

    def _attribute(self, binders: Binders, changes: list[MaskChange]) -> None:
        by_pid: dict[int, list[MaskChange]] = {}
        for c in changes:
            by_pid.setdefault(c.pid, []).append(c)
        fresh = [
            p
            for p in by_pid
            if p not in self._attributors or self._attributors[p][0] != self.watch.started(p)
        ]
        if fresh:
            for pid, att in binders.attributors(fresh).items():
                self._attributors[pid] = (self.watch.started(pid), att)
                chain = att.chain
                self.watch.set_binders(
                    pid,
                    None
                    if chain is None
                    else tuple(
                        (a.binder.id, a.binder.name, a.when, a.outcome) for a in chain.actions
                    ),
                )
        for pid, got in by_pid.items():
            entry = self._attributors.get(pid)
            if entry is None:
                continue
            att = entry[1]
            own = binders.own(pid, self.watch.started(pid))  # once per worker and sample
            for c in got:
                c.set_by = att.attribute(c.tid, c.name, c.after, own, c.since)
                self.watch.attributed(c)

    def report(self) -> WatchReport:
        return self.watch.report()

    @property
    def all_exited(self) -> bool:
        return self.watch.all_exited


def watch_once(
    targets: Sequence[WatchTarget],
    sampler: ProcSampler,
    *,
    interval_s: float,
    sleep: Callable[[float], None] = time.sleep,
    ignore_pids: Sequence[int] = (),
) -> WatchReport:
    """One sample of length interval_s: read, wait, read again."""
    check_targets(targets, sampler)
    session = Session(targets, sampler, interval_s=interval_s, ignore_pids=ignore_pids)
    sleep(interval_s)
    return session.step()


def _share(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


class _Cpulists(dict[CpuSet, str]):
    """format_cpulist of each set once per document: a worker's threads ran on, and are masked
    to, a handful of distinct sets."""

    def __missing__(self, cpus: CpuSet) -> str:
        text = self[cpus] = format_cpulist(cpus)
        return text


class _SetBys(dict["SetBy", dict[str, object]]):
    """SetBy.to_json of each attribution once per document: a worker's threads share a
    handful (the JSON encoder writes each where it appears)."""

    def __missing__(self, set_by: SetBy) -> dict[str, object]:
        got = self[set_by] = set_by.to_json()
        return got


def _worker_doc(w: WorkerReport, cpulist: _Cpulists, set_bys: _SetBys) -> dict[str, Any]:
    t = w.target
    planned = t.plan_cpus is not None
    noded = t.node_cpus is not None
    threads: list[dict[str, Any]] = []
    for th in w.threads:
        d: dict[str, Any] = {
            "tid": th.tid,
            "name": th.name,
            "cpus_ran": cpulist[th.cpus_ran],
            "last_cpu": th.last_cpu,
            "migrations": th.migrations,
            "migrations_source": th.migrations_source,
            "ctx_voluntary": th.ctx_voluntary,
            "ctx_involuntary": th.ctx_involuntary,
            "cpu_time_s": round(th.cpu_time_s, 3),
        }
        if planned:
            d["off_plan_share"] = _share(th.off_plan_share)
        if noded:
            d["off_node_share"] = _share(th.off_node_share)
        if planned or noded:
            d["share_basis"] = th.share_basis
        if th.role is not None:
            d["role"] = th.role
            d["role_cpus"] = None if th.role_cpus is None else format_cpulist(th.role_cpus)
            d["role_stayed"] = th.role_stayed
        if w.attributed and th.mask is not None:
            d["mask"] = cpulist[th.mask]
            d["mask_changes"] = th.mask_changes
            d["set_by"] = None if th.set_by is None else set_bys[th.set_by]
        threads.append(d)
    doc: dict[str, Any] = {
        "pid": w.pid,
        "name": w.name,
        "alive": w.alive,
        "pid_reused": w.pid_reused,
        "rank": t.rank,
        "device": t.device,
        "plan_cpus": None if t.plan_cpus is None else format_cpulist(t.plan_cpus),
        "numa_nodes": list(t.nodes),
        "node_cpus": None if t.node_cpus is None else format_cpulist(t.node_cpus),
        "cpu_time_s": round(w.cpu_time_s, 3),
    }
    if planned:
        doc["off_plan_share"] = _share(w.off_plan_share)
    if noded:
        doc["off_node_share"] = _share(w.off_node_share)
    if w.attributed:
        doc["binders"] = (
            None
            if w.binders is None
            else [{"id": i, "name": n, "stage": s, "outcome": o} for i, n, s, o in w.binders]
        )
        doc["mask_changes"] = [
            {
                "tid": c.tid,
                "name": c.name,
                "before": format_cpulist(c.before or ()),
                "after": format_cpulist(c.after),
                "sample": c.sample,
                "set_by": None if c.set_by is None else c.set_by.to_json(),
            }
            for c in w.mask_changes
        ]
        doc["mask_changes_total"] = w.mask_changes_total
    doc.update(
        {
            "threads_total": len(w.threads),
            "threads_seen": w.threads_seen,
            "threads_exited": w.threads_exited,
            "threads": threads,
            "role_threads": [
                {k: d[k] for k in ("tid", "name", "role", "cpus_ran", "role_cpus", "role_stayed")}
                for d in threads
                if "role" in d
            ],
            "memory_by_node": None
            if w.memory_by_node is None
            else [
                {"node": n, "bytes": b, "mib": round(b / (1 << 20), 1)}
                for n, b in sorted(w.memory_by_node.items())
            ],
            "neighbours_cpus": None
            if w.reference_cpus is None
            else format_cpulist(w.reference_cpus),
            "neighbours": [
                {
                    "pid": n.pid,
                    "tid": n.tid,
                    "process": n.process,
                    "name": n.name,
                    "cpu_time_s": round(n.cpu_time_s, 3),
                    "cpus": format_cpulist(n.cpus),
                }
                for n in w.neighbours
            ],
            "neighbours_dropped": w.neighbours_dropped,
        }
    )
    return doc


def document(report: WatchReport) -> dict[str, Any]:
    """`watch --json` without schema_version (the printer adds it)."""
    from ascendtune.app.documents import plain

    cpulists, set_bys = _Cpulists(), _SetBys()
    doc: WatchDocument = {
        "interval_s": report.interval_s,
        "elapsed_s": round(report.elapsed_s, 3),
        "samples": report.samples,
        "clock_ticks": report.clock_ticks,
        "workers": [_worker_doc(w, cpulists, set_bys) for w in report.workers],
    }
    return plain(doc)


def start(
    opts: WatchOptions, sampler: ProcSampler | None = None, binders: Binders | None = None
) -> Session:
    """`watch`: the targets opts names, checked, and a session that has taken its first sample
    (sampler: this machine's /proc unless given)."""
    if opts.workers and opts.pids:
        raise UsageError("give --workers or --pid PID, not both")
    if opts.workers and (opts.cpus is not None or opts.ranks):
        raise UsageError("--workers takes each worker's rank from the plan: drop --cpus/--rank")
    if not opts.pids and not opts.workers:
        raise UsageError("say what to watch: --pid PID (repeat for several processes) or --workers")
    sampler = sampler or live_sampler()
    if opts.policy is not None and (opts.plan_file is not None or opts.cpus is not None):
        raise UsageError("give one of --plan FILE, --policy P or --cpus LIST")
    plan_doc: Any = None
    plan_source = ""
    if opts.plan_file is not None:
        from pathlib import Path

        from ascendtune.app.bind import read_plan_file

        plan_doc, plan_source = read_plan_file(Path(opts.plan_file)), opts.plan_file
    if opts.policy is not None:
        from ascendtune.app.plan import check_policy

        check_policy(opts.policy)
        plan_doc, plan_source = live_plan_document(
            PlanOptions(policy=opts.policy, target=opts.target)
        )
    if opts.workers:
        targets = worker_targets(
            plan_doc, plan_source, online=sampler.online_cpus(), node_map=sampler.node_map()
        )
    else:
        targets = targets_for(
            list(opts.pids),
            cpus=opts.cpus,
            plan_doc=plan_doc,
            plan_source=plan_source,
            ranks=list(opts.ranks),
            online=sampler.online_cpus(),
            node_map=sampler.node_map(),
        )
    check_targets(targets, sampler)
    return Session(
        targets,
        sampler,
        interval_s=opts.interval_s,
        ignore_pids=own_pids(),
        binders=LiveBinders(opts.target) if binders is None else binders,
    )


def run(
    opts: WatchOptions,
    sampler: ProcSampler | None = None,
    sleep: Callable[[float], None] = time.sleep,
    binders: Binders | None = None,
) -> WatchReport:
    """`watch --once`: one sample of length opts.interval_s."""
    session = start(opts, sampler, binders)
    sleep(opts.interval_s)
    return session.step()


class LiveBinders:
    """This machine's binders: each watched worker's chain as `explain binders --pid` reads it
    (the host, its workers and the vLLM-Ascend release read once for all), and the record
    ascendtune's own binds leave beside their lock."""

    def __init__(self, target: str = "auto") -> None:
        self.target = target

    def attributors(self, pids: Sequence[int]) -> dict[int, Attributor]:
        from ascendtune.app.binders import chains_of
        from ascendtune.app.hosts import open_root
        from ascendtune.app.options import HostSource
        from ascendtune.core.binders.attribution import Attributor

        got = chains_of(open_root(HostSource()), list(pids), self.target)
        return {
            p: Attributor(None, p, c) if isinstance(c, str) else Attributor(c, p)
            for p, c in got.items()
        }

    def own(self, pid: int, started: int | None) -> Own | None:
        from ascendtune.core.binders.attribution import Own
        from ascendtune.host.affinity.lock import read_record

        got = read_record(pid, "" if started is None else str(started))
        return None if got is None else Own(got.target, got.use_roles, got.monotonic, got.by)


def live_sampler() -> ProcSampler:
    """The sampler of this machine's /proc (the CLI never reads /proc itself)."""
    from ascendtune.host.watch import ProcSampler as LiveSampler

    return LiveSampler()


def own_pids() -> tuple[int, ...]:
    """ascendtune's own process: never a neighbour of what it watches."""
    from ascendtune.host.system import own_pid

    return (own_pid(),)


def live_plan_document(opts: PlanOptions) -> tuple[dict[str, Any], str]:
    """`watch --policy P`: the plan of this host to watch the workers against, and its name."""
    from ascendtune.app import plan as app_plan
    from ascendtune.app.hosts import load
    from ascendtune.app.options import HostSource

    got = load(HostSource())
    result = app_plan.plan(got.host, opts, got.root)
    doc = app_plan.plan_document(result.plan, got.identity, result.target_reason)
    return doc, f"{result.plan.policy} plan of this host"


def worker_targets(
    plan_doc: Any | None, plan_source: str, *, online: CpuSet, node_map: Mapping[int, CpuSet]
) -> list[WatchTarget]:
    """`watch --workers`: every NPU/GPU worker of this host (found as `doctor` and `bind
    --workers` find them), each against the rank of the plan that runs on its device."""
    from ascendtune.app.hosts import open_root
    from ascendtune.app.options import HostSource
    from ascendtune.app.workers import discover
    from ascendtune.core.errors import MissingError

    _, workers = discover(open_root(HostSource()))
    found = [w for w in workers if w.present]
    if not found:
        raise MissingError(
            "no NPU or GPU worker found on this host (npu-smi's process table, /dev holders)",
            "give the worker with --pid PID",
        )
    rank_of: dict[int, int] = {}
    if plan_doc is not None:
        for entry in plan_doc.get("ranks", []) if isinstance(plan_doc, dict) else []:
            if isinstance(entry, dict) and isinstance(entry.get("device"), int):
                rank_of.setdefault(entry["device"], entry.get("rank", 0))
    out: list[WatchTarget] = []
    for w in found:
        device = w.devices[0] if len(w.devices) == 1 else None
        if device is not None and device in rank_of:
            out.append(
                target_from_plan_doc(
                    w.pid,
                    plan_doc,
                    rank_of[device],
                    source=plan_source,
                    online=online,
                    node_map=node_map,
                )
            )
        else:
            out.append(WatchTarget(pid=w.pid, device=device))
    return out
