"""What `bind` aims at: one rank's CPUs and roles taken from a plan, the mask each thread gets,
and the report of a binding. Pure logic; the host layer (ascendtune.host.affinity) applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import InvalidInput, ParseError
from ascendtune.core.jsondoc import SCHEMA_VERSION

if TYPE_CHECKING:
    from ascendtune.core.planner.model import RankPlan

ROLE_NAMES = ("irq", "main", "acl", "release")
# torch_npu names its two runtime threads so; the kernel keeps 15 bytes of a thread name.
ROLE_THREADS: Mapping[str, str] = {"acl_thread": "acl", "release_thread": "release"}

ROLE_POOL = "pool"  # a thread bound to the whole pool (no roles, or --no-roles)
ROLE_MAIN = "main"


@dataclass(frozen=True)
class BindTarget:
    """The CPUs a process is bound to, with the role split when the plan has one."""

    cpus: CpuSet
    roles: Mapping[str, CpuSet] = field(default_factory=dict)  # irq/main/acl/release, non-empty
    numa_nodes: tuple[int, ...] = ()
    rank: int | None = None
    source: str = "--cpus"

    @property
    def has_roles(self) -> bool:
        return bool(self.roles.get("main") or self.roles.get("acl") or self.roles.get("release"))

    @property
    def all_cpus(self) -> CpuSet:
        """Every CPU any thread may be put on (the pool and the role CPUs)."""
        out = set(self.cpus)
        for cpus in self.roles.values():
            out |= cpus
        return frozenset(out)

    def thread_target(self, name: str | None, *, use_roles: bool) -> tuple[str, CpuSet]:
        """(role, mask) for a thread named `name`.

        With roles, acl_thread and release_thread go to their role CPUs and every other thread
        to the `main` CPUs, as vLLM-Ascend's own binding does (so the IRQ CPUs stay free);
        without, every thread gets the whole pool.
        """
        if not use_roles or not self.has_roles:
            return ROLE_POOL, self.cpus
        role = ROLE_THREADS.get((name or "").strip())
        if role is not None and self.roles.get(role):
            return role, self.roles[role]
        main = self.roles.get("main")
        if main:
            return ROLE_MAIN, main
        return ROLE_POOL, self.cpus

    def masks(self, *, use_roles: bool) -> frozenset[CpuSet]:
        """Every distinct mask a thread may be given."""
        if not use_roles or not self.has_roles:
            return frozenset({self.cpus})
        out = {self.thread_target(None, use_roles=True)[1]}
        for name in ROLE_THREADS:
            out.add(self.thread_target(name, use_roles=True)[1])
        return frozenset(out)


def target_of_rank(rank: RankPlan, policy: str) -> BindTarget:
    """The BindTarget of one rank of a computed plan (its pool, role split and NUMA nodes)."""
    roles = {
        name: frozenset(cpus)
        for name, cpus in (
            ("irq", rank.roles.irq),
            ("main", rank.roles.main),
            ("acl", rank.roles.acl),
            ("release", rank.roles.release),
        )
        if cpus
    }
    return BindTarget(
        cpus=rank.cpuset,
        roles=roles,
        numa_nodes=rank.numa_nodes,
        rank=rank.rank,
        source=f"{policy} plan",
    )


def target_from_cpus(text: str) -> BindTarget:
    cpus = parse_cpulist(text, source="--cpus")
    if not cpus:
        raise InvalidInput("--cpus names no CPU", "give a cpulist such as 0-3,8")
    return BindTarget(cpus=cpus, source="--cpus")


def _cpus_field(value: Any, where: str) -> CpuSet:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return parse_cpulist(value, source=where)
    if isinstance(value, list) and all(isinstance(v, int) and v >= 0 for v in value):
        return frozenset(value)
    raise ParseError(f"expected a cpulist string, found {value!r}", source=where)


def target_from_plan(doc: Any, rank: int, *, source: str) -> BindTarget:
    """The BindTarget of `rank` in a plan document (the JSON of `ascendtune plan --json`)."""
    if not isinstance(doc, dict):
        raise ParseError("a plan is a JSON object", source=source)
    version = doc.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise ParseError(
            f"schema_version {version!r} is not supported (expected {SCHEMA_VERSION})",
            source=source,
            hint="write the plan with this version of `ascendtune plan --json`",
        )
    ranks = doc.get("ranks")
    if not isinstance(ranks, list):
        raise ParseError("no `ranks` list", source=source, hint="use `ascendtune plan --json`")
    known: list[int] = []
    for i, entry in enumerate(ranks):
        if not isinstance(entry, dict) or not isinstance(entry.get("rank"), int):
            raise ParseError(f"ranks[{i}] has no integer `rank`", source=source)
        known.append(entry["rank"])
        if entry["rank"] != rank:
            continue
        where = f"{source} rank {rank}"
        cpus = _cpus_field(entry.get("cpus"), f"{where} cpus")
        if not cpus:
            skipped = entry.get("binding_skipped")
            why = f" ({skipped})" if isinstance(skipped, str) and skipped else ""
            raise InvalidInput(f"{where}: the plan gives this rank no CPU{why}")
        roles_raw = entry.get("roles") or {}
        if not isinstance(roles_raw, dict):
            raise ParseError("`roles` is not an object", source=where)
        roles: dict[str, CpuSet] = {}
        for role in ROLE_NAMES:
            got = _cpus_field(roles_raw.get(role), f"{where} roles.{role}")
            if got:
                roles[role] = got
        nodes_raw = entry.get("numa_nodes") or []
        if not isinstance(nodes_raw, list) or not all(isinstance(n, int) for n in nodes_raw):
            raise ParseError("`numa_nodes` is not a list of integers", source=where)
        return BindTarget(
            cpus=cpus,
            roles=roles,
            numa_nodes=tuple(sorted(set(nodes_raw))),
            rank=rank,
            source=source,
        )
    listed = ", ".join(str(r) for r in sorted(known)) or "none"
    raise InvalidInput(f"{source}: no rank {rank} in the plan (ranks: {listed})")


def targets_by_device(doc: Any, *, source: str) -> dict[int, BindTarget]:
    """device -> the BindTarget of the rank that runs on it, for every rank of a plan document
    (`bind --workers --plan FILE`: a worker is matched to its rank by the device it holds)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("ranks"), list):
        raise ParseError("no `ranks` list", source=source, hint="use `ascendtune plan --json`")
    out: dict[int, BindTarget] = {}
    for i, entry in enumerate(doc["ranks"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("rank"), int):
            raise ParseError(f"ranks[{i}] has no integer `rank`", source=source)
        device = entry.get("device", entry["rank"])
        if not isinstance(device, int):
            raise ParseError(f"ranks[{i}] has no integer `device`", source=source)
        if entry.get("binding_skipped") or not entry.get("cpus"):
            continue  # vLLM-Ascend skips this rank: nothing to bind it to
        out.setdefault(device, target_from_plan(doc, entry["rank"], source=source))
    return out


def check_cpus_usable(
    target: BindTarget, *, online: CpuSet, allowed: CpuSet | None, whom: str
) -> None:
    """Raise InvalidInput naming the CPUs `whom` may use when the target reaches beyond them."""
    wanted = target.all_cpus
    offline = wanted - online
    if offline:
        may = online & allowed if allowed is not None else online
        raise InvalidInput(
            f"CPUs {format_cpulist(offline)} are not online on this host "
            f"(online: {format_cpulist(online)})",
            f"{whom} may use CPUs {format_cpulist(may)}",
        )
    if allowed is not None:
        outside = wanted - allowed
        if outside:
            raise InvalidInput(
                f"CPUs {format_cpulist(outside)} are outside the cpuset of {whom}",
                f"{whom} may use CPUs {format_cpulist(allowed)}",
            )


@dataclass(frozen=True)
class ThreadFailure:
    tid: int
    error: str  # "EPERM: Operation not permitted", "not on target after 16 passes", ...
    errno_name: str | None = None  # "EPERM", "EINVAL"; None for failures that are not errors


@dataclass(frozen=True)
class ThreadRow:
    """One thread as a dry run sees it."""

    tid: int
    name: str
    role: str
    current: CpuSet
    target: CpuSet

    @property
    def changes(self) -> bool:
        return self.current != self.target


@dataclass(frozen=True)
class BindReport:
    """What a binding did; `threads_bound` counts the threads the final re-read found on target."""

    pid: int
    target: BindTarget
    use_roles: bool
    threads_total: int
    threads_bound: int
    threads_failed: tuple[ThreadFailure, ...]
    passes: int
    verified: bool
    threads_changed: int = 0
    converged: bool = False  # a whole pass found every thread already on target
    roles_placed: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    rolled_back: tuple[int, ...] = ()
    restore_failed: tuple[ThreadFailure, ...] = ()
    dry_run: bool = False
    rows: tuple[ThreadRow, ...] = ()
    # threads seen during the binding that had ended by the final re-read (the process lives on)
    threads_exited: int = 0
    stopped: bool = False  # the process was stopped (SIGSTOP): bound, it runs there once resumed

    @property
    def errno_names(self) -> frozenset[str]:
        return frozenset(f.errno_name for f in self.threads_failed if f.errno_name)

    def to_json(self) -> dict[str, Any]:
        t = self.target
        doc: dict[str, Any] = {
            "pid": self.pid,
            "cpus": format_cpulist(t.cpus),
            "threads_total": self.threads_total,
            "threads_bound": self.threads_bound,
            "threads_failed": [
                {"tid": f.tid, "error": f.error, "errno": f.errno_name} for f in self.threads_failed
            ],
            "passes": self.passes,
            "verified": self.verified,
            "dry_run": self.dry_run,
            "rank": t.rank,
            "source": t.source,
            "use_roles": self.use_roles and t.has_roles,
            "roles": {r: format_cpulist(c) for r, c in t.roles.items()},
            "numa_nodes": list(t.numa_nodes),
            "roles_placed": {r: list(tids) for r, tids in self.roles_placed.items()},
            "threads_changed": self.threads_changed,
            "converged": self.converged,
            "rolled_back": list(self.rolled_back),
            "restore_failed": [{"tid": f.tid, "error": f.error} for f in self.restore_failed],
            "threads_exited": self.threads_exited,
            "stopped": self.stopped,
        }
        if self.dry_run:
            doc["threads"] = [
                {
                    "tid": r.tid,
                    "name": r.name,
                    "role": r.role,
                    "current": format_cpulist(r.current),
                    "target": format_cpulist(r.target),
                    "changes": r.changes,
                }
                for r in self.rows
            ]
        return doc


def dry_run_report(
    pid: int, target: BindTarget, threads: Iterable[tuple[int, str, CpuSet]], *, use_roles: bool
) -> BindReport:
    """The dry run of a bind: every thread (tid, name, current mask), in the order given, with
    the mask it would get; nothing changed. The live survey and a captured process share it."""
    use = use_roles and target.has_roles
    rows: list[ThreadRow] = []
    placed: dict[str, list[int]] = {}
    for tid, name, cur in threads:
        role, want = target.thread_target(name, use_roles=use)
        rows.append(ThreadRow(tid, name, role, cur, want))
        if role in ("acl", "release"):
            placed.setdefault(role, []).append(tid)
    bound = sum(1 for r in rows if not r.changes)
    return BindReport(
        pid=pid,
        target=target,
        use_roles=use,
        threads_total=len(rows),
        threads_bound=bound,
        threads_failed=(),
        passes=0,
        verified=bound == len(rows),
        roles_placed={r: tuple(t) for r, t in placed.items()},
        dry_run=True,
        rows=tuple(rows),
    )
