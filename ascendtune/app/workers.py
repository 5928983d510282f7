"""`bind --workers`: find every accelerator worker of a running server, match each to its rank
by the device it drives, bind every thread of every worker to one plan, verified (`--watch`,
which keeps it applied, is app.keep_bound).

Discovery goes through a Root (the vendor tool's process table and /proc/*/fd, host.workers),
binding through ascendtune.host.affinity (its Tasks seam), so tests can point both at processes
of their own."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.core.bindplan import BindTarget, ThreadFailure
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import AscendtuneError, MissingError, PlanError, UsageError

if TYPE_CHECKING:
    from ascendtune.core.model import Host
    from ascendtune.core.workerfacts import ThreadFacts, WorkerFacts
    from ascendtune.host.affinity import PendingBind, Tasks
    from ascendtune.host.roots import Root

DRY_RUN_ONLY = (
    "--workers changes processes of this host, and {what} is another host's view: "
    "only --dry-run is allowed with it"
)
DISABLE_BINDING = '{"enable_cpu_binding": false}'


class WorkersOptions(NamedTuple):
    """What `bind --workers` is asked (a NamedTuple like PlanOptions: defined on every bind
    --workers' start-up, 0.1 against 1 ms as a frozen dataclass)."""

    source: HostSource = HostSource()
    plan: PlanOptions = PlanOptions()
    plan_file: Path | None = None
    force: bool = False  # apply a plan file of another host
    dry_run: bool = False
    use_roles: bool = True
    max_passes: int = 16


@dataclass(frozen=True)
class WorkerOutcome:
    """One worker: what it was bound to and what the re-read found."""

    pid: int
    name: str | None
    devices: tuple[int, ...]
    rank: int | None
    target: BindTarget | None
    cpus_before: CpuSet
    cpus_after: CpuSet
    threads_total: int
    threads_bound: int
    threads_failed: tuple[ThreadFailure, ...] = ()
    threads_changed: int = 0
    verified: bool = False
    dry_run: bool = False
    error: str | None = None  # why it was not bound (no rank for its device, exited, EPERM...)
    rolled_back: int = 0
    bind_seconds: float = 0.0
    self_binding: bool | None = None  # its vLLM-Ascend binds by itself (enable_cpu_binding)
    moved: tuple[tuple[int, CpuSet], ...] = ()  # each thread written: (tid, its mask before)

    @property
    def device(self) -> int | None:
        return self.devices[0] if len(self.devices) == 1 else None

    @property
    def changed(self) -> bool:
        """Masks were changed (a dry run: would be)."""
        if self.dry_run:
            return self.error is None and self.threads_bound < self.threads_total
        return self.threads_changed > 0

    @property
    def ok(self) -> bool:
        return self.error is None and (self.dry_run or self.verified)

    def to_json(self) -> dict[str, Any]:
        t = self.target
        return {
            "pid": self.pid,
            "name": self.name,
            "device": self.device,
            "devices": list(self.devices),
            "rank": self.rank,
            "target_cpus": format_cpulist(t.cpus) if t is not None else None,
            "roles": {r: format_cpulist(c) for r, c in t.roles.items()} if t is not None else {},
            "cpus_before": format_cpulist(self.cpus_before),
            "cpus_after": format_cpulist(self.cpus_after),
            "threads_total": self.threads_total,
            "threads_bound": self.threads_bound,
            "threads_failed": [
                {"tid": f.tid, "error": f.error, "errno": f.errno_name} for f in self.threads_failed
            ],
            "threads_changed": self.threads_changed,
            "verified": self.verified,
            "changed": self.changed,
            "dry_run": self.dry_run,
            "error": self.error,
            "rolled_back": self.rolled_back,
            "bind_ms": round(self.bind_seconds * 1000, 3),
            "self_binding": self.self_binding,
        }


@dataclass(frozen=True)
class WorkersReport:
    workers: tuple[WorkerOutcome, ...]
    source: str  # where the plan came from
    root: str
    dry_run: bool
    handoff: tuple[str, ...] = ()  # what happens with vLLM-Ascend's own binding, in words

    @property
    def ok(self) -> bool:
        return all(w.ok for w in self.workers)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "source": self.source,
            "dry_run": self.dry_run,
            "workers": [w.to_json() for w in self.workers],
            "handoff": list(self.handoff),
            "summary": {
                "workers": len(self.workers),
                "bound": sum(1 for w in self.workers if w.ok and not w.dry_run),
                "failed": sum(1 for w in self.workers if not w.ok),
                "would_change": sum(
                    1 for w in self.workers if w.dry_run and w.threads_bound < w.threads_total
                ),
            },
        }


# ---- the plan, per device ---------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    by_device: dict[int, BindTarget]
    source: str
    # finds the vLLM-Ascend version whose defaults the handoff uses (`version`)
    find_version: Callable[[], str | None] = field(default=lambda: None, repr=False)
    vendor: str | None = None  # whose devices the plan's ranks run on ("huawei", "nvidia")
    # devices the plan leaves unbound (vLLM-Ascend skips them), with why
    unbound: dict[int, str] = field(default_factory=dict)

    @functools.cached_property
    def version(self) -> str | None:
        """Looked up on first use: only a worker with a vLLM command line needs it, and the
        lookup reads each worker's memory map until one imports vllm_ascend (16 workers that
        are not vLLM's: about 35 ms)."""
        return self.find_version()


def check_plan_identity(doc: Any, here: dict[str, Any], path: Path, *, force: bool) -> None:
    """Refuse a plan file that carries another host's identity (or a sysroot's, a demo's)."""
    from ascendtune.host.identity import same_host

    plan_id = doc.get("host") if isinstance(doc, dict) else None
    if force or not isinstance(plan_id, dict):
        return  # plans written before identities existed cannot be told apart
    same, why = same_host(plan_id, here)
    if not same:
        raise UsageError(
            f"plan {path} was not made for this host: {why}",
            "compute the plan here (`ascendtune plan --json` on this host), or give --force",
        )


def resolve_targets(opts: WorkersOptions, root: Root, host: Host) -> Targets:
    def version() -> str | None:
        from ascendtune.app.plan import resolve_version

        try:
            return resolve_version(host, opts.plan.target, root).entry.name
        except AscendtuneError:
            return None

    if opts.plan_file is not None:
        from ascendtune.app.bind import read_plan_file
        from ascendtune.app.hosts import identity
        from ascendtune.core.bindplan import targets_by_device

        doc = read_plan_file(opts.plan_file)
        if not opts.dry_run:
            check_plan_identity(doc, identity(root), opts.plan_file, force=opts.force)
        src = str(opts.plan_file)
        vendor = doc.get("vendor") if isinstance(doc, dict) else None
        return Targets(
            targets_by_device(doc, source=src),
            src,
            version,
            vendor if isinstance(vendor, str) else None,
        )
    from ascendtune.app.doctor import plan_facts
    from ascendtune.core.bindplan import target_of_rank

    facts = plan_facts(host, None, opts.plan, root)
    if facts.plan is None:
        raise PlanError(f"no plan for the workers: {facts.error}")
    plan, policy = facts.plan, facts.policy
    source = f"{policy} plan of {root.describe()}" + (f" ({facts.note})" if facts.note else "")
    by_device = {r.device: target_of_rank(r, policy) for r in plan.ranks if r.cpus}
    unbound = {r.device: r.skipped for r in plan.ranks if r.skipped is not None}
    return Targets(by_device, source, version, plan.vendor, unbound)


# ---- vLLM-Ascend's own binding ------------------------------------------------------------------


def self_binding(root: Root, w: WorkerFacts, targets: Targets) -> bool | None:
    """Whether the worker's vLLM-Ascend binds by itself: enable_cpu_binding of the nearest
    `vllm serve` command line (the worker's, else a parent's), the default of the targets'
    version filled in. None when no vLLM command line is found (not a vLLM worker, or
    unreadable)."""
    lines = [list(w.command)]
    for a in w.ancestors:
        text = root.read_text(f"proc/{a.pid}/cmdline")
        lines.append([x for x in (text or "").split("\0") if x])
    if not any("vllm" in x for argv in lines for x in argv):
        return None  # what is_vllm says of each line, without loading the config rules
    from ascendtune.core.vllm_config import inputs

    for argv in lines:
        if not argv or not inputs.is_vllm(argv):
            continue
        from ascendtune.core.vllm_config import checker  # a vLLM worker's only (its rules)

        try:
            parsed = inputs.parse_cmdline(argv, f"PID {w.pid}")
            cfg = inputs.parse_config(parsed.config_text or "{}", "--additional-config")
            eff = checker.check(cfg, targets.version).effective
        except AscendtuneError:
            return None
        return bool(eff.get("enable_cpu_binding", True))
    return None


def handoff_notes(outcomes: tuple[WorkerOutcome, ...], dry_run: bool) -> tuple[str, ...]:
    on = [w.pid for w in outcomes if w.self_binding]
    off = [w.pid for w in outcomes if w.self_binding is False]
    notes: list[str] = []
    verb = "would override" if dry_run else "overrides"
    if on:
        notes.append(
            f"vLLM-Ascend binds worker(s) {', '.join(map(str, on))} itself (enable_cpu_binding "
            f"on): binding after warm-up {verb} its once-per-start binding, but a restarted "
            "worker binds the vLLM-Ascend way again; start the server with --additional-config "
            f"'{DISABLE_BINDING}' (`ascendtune plan --emit vllm --cmdline ...`) or keep "
            "`ascendtune bind --workers --watch` running"
        )
    if off:
        notes.append(
            f"enable_cpu_binding is off for worker(s) {', '.join(map(str, off))}: this binding "
            "stands until a worker restarts (`bind --workers --watch` rebinds restarted workers)"
        )
    return tuple(notes)


# ---- is it a worker? --------------------------------------------------------------------------

PF_KTHREAD = 0x00200000  # task->flags bit of a kernel thread (/proc/PID/stat field 9)
# what a worker's command line or name shows when its device files cannot be read: vLLM (and
# vLLM-Ascend) names its processes VLLM::Worker_TPn / VllmWorker, MindIE and SGLang theirs
WORKER_MARKERS = ("vllm", "mindie", "sglang")


def kernel_thread(root: Root, pid: int) -> bool:
    """Whether PID is a kernel thread (kworker, ...): its stat flags say so, or it has no
    command line and kthreadd (PID 2) is its parent or itself."""
    text = root.read_text(f"proc/{pid}/stat") or ""
    fields = text.rpartition(")")[2].split()
    try:
        return bool(int(fields[6]) & PF_KTHREAD) or pid == 2 or int(fields[1]) == 2
    except (IndexError, ValueError):
        return False


def not_a_worker(root: Root, w: WorkerFacts, plan_vendor: str | None) -> str | None:
    """Why `bind --workers` must not bind w (None: it may): PID 1, a kernel thread, a device of
    another vendor than the plan's, or a PID the vendor tool named that neither holds a device
    file nor looks like a worker (a PID of another namespace, or reused since)."""
    from ascendtune.core import vendors

    if w.pid == 1:
        return "PID 1 is this namespace's init, never bound by --workers (bind it with --pid 1)"
    if kernel_thread(root, w.pid):
        return f"PID {w.pid} is a kernel thread, not a worker: never bound"
    if plan_vendor is not None and w.vendor != plan_vendor:
        have = vendors.profile(w.vendor).word
        want = next(
            (p.word for p in vendors.profiles() if p.vendor.value == plan_vendor), plan_vendor
        )
        return f"it holds a {have}, and the plan is for {want}s: not bound"
    if w.device_files:
        return None  # it holds the device's file: a worker of that device
    text = " ".join([w.comm or "", *w.command]).lower()
    if any(m in text for m in WORKER_MARKERS):
        return None
    tool = ", ".join(w.found_by) or "?"
    return (
        f"named by {tool}, but it holds no /dev/{vendors.profile(w.vendor).device_file}N file "
        f"and its command line ({' '.join(w.command)[:80] or w.comm or '?'}) is not a worker's: "
        "not bound (bind it with --pid if it is one)"
    )


# ---- binding ------------------------------------------------------------------------------------


def _union(masks: Iterator[CpuSet] | list[CpuSet]) -> CpuSet:
    out: set[int] = set()
    for m in masks:
        out |= m
    return frozenset(out)


def _planned(threads: tuple[ThreadFacts, ...], target: BindTarget, use_roles: bool) -> int:
    return sum(1 for t in threads if t.cpus == target.thread_target(t.name, use_roles=use_roles)[1])


def unbound(
    w: WorkerFacts,
    error: str,
    *,
    dry_run: bool,
    target: BindTarget | None = None,
    rank: int | None = None,
    self_bind: bool | None = None,
    cpus: list[CpuSet] | None = None,
) -> WorkerOutcome:
    """An outcome that binds nothing; cpus: each thread's mask (None: w's threads')."""
    cpus = [t.cpus for t in w.threads] if cpus is None else cpus
    masks = _union(cpus)
    return WorkerOutcome(
        pid=w.pid,
        name=w.comm,
        devices=w.devices,
        rank=rank,
        target=target,
        cpus_before=masks,
        cpus_after=masks,
        threads_total=len(cpus),
        threads_bound=0,
        dry_run=dry_run,
        error=error,
        self_binding=self_bind,
    )


def _masks_now(w: WorkerFacts, tasks: Tasks | None) -> list[CpuSet] | None:
    """Each thread's mask read from the kernel now, when discovery left w's threads unread
    (find_workers(threads=False)): listed, no name read. None: use w's threads."""
    if w.threads or not w.present:
        return None
    from ascendtune.host import affinity as aff

    return list(aff.thread_masks(w.pid, tasks).values())


class Begun(NamedTuple):
    """A worker whose threads are written, its final re-read still to come (finish_worker);
    it holds the worker's binder lock until then (a NamedTuple: 0.5 ms less of a bind's
    start-up than a dataclass)."""

    w: WorkerFacts
    target: BindTarget
    before: CpuSet  # every mask the passes found
    pending: Any  # host.affinity.PendingBind
    self_bind: bool | None
    seconds: float  # spent binding so far
    hold: contextlib.ExitStack
    tasks: Tasks | None


def bind_worker(
    w: WorkerFacts,
    targets: Targets,
    *,
    root: Root,
    dry_run: bool,
    use_roles: bool = True,
    max_passes: int = 16,
    tasks: Tasks | None = None,
    lock: bool = True,
) -> WorkerOutcome:
    """Bind (or, dry_run, survey) one worker; every failure becomes the outcome's error.
    lock: take the worker's binder lock for the bind (False: the caller holds it)."""
    got = begin_worker(
        w,
        targets,
        root=root,
        dry_run=dry_run,
        use_roles=use_roles,
        max_passes=max_passes,
        tasks=tasks,
        lock=lock,
    )
    return got if isinstance(got, WorkerOutcome) else finish_worker(got)


def begin_worker(
    w: WorkerFacts,
    targets: Targets,
    *,
    root: Root,
    dry_run: bool,
    use_roles: bool = True,
    max_passes: int = 16,
    tasks: Tasks | None = None,
    lock: bool = True,
) -> WorkerOutcome | Begun:
    """bind_worker up to the final re-read: the outcome when there is nothing to verify (not
    bound, a dry run, a write refused), else the worker begun, for finish_worker."""
    from ascendtune.core import vendors

    word = vendors.profile(w.vendor).word
    selfb = self_binding(root, w, targets)
    if not w.present:
        return unbound(
            w,
            f"PID {w.pid} is not visible here (another PID namespace)",
            dry_run=dry_run,
            self_bind=selfb,
        )

    def now() -> list[CpuSet] | None:
        return None if dry_run else _masks_now(w, tasks)

    refused = not_a_worker(root, w, targets.vendor)
    if refused is not None:
        return unbound(w, refused, dry_run=dry_run, self_bind=selfb, cpus=now())
    if len(w.devices) != 1:
        held = ",".join(map(str, w.devices)) or "?"
        return unbound(
            w,
            f"holds {word}s {held}: one rank per device, bind it with --pid",
            dry_run=dry_run,
            self_bind=selfb,
            cpus=now(),
        )
    target = targets.by_device.get(w.devices[0])
    if target is None:
        skipped = targets.unbound.get(w.devices[0])
        return unbound(
            w,
            f"the plan leaves {word} {w.devices[0]} unbound: {skipped}"
            if skipped
            else f"the plan has no rank on {word} {w.devices[0]}",
            dry_run=dry_run,
            self_bind=selfb,
            cpus=now(),
        )
    use = use_roles and target.has_roles
    if dry_run:
        before = _union([t.cpus for t in w.threads])
        after = _union([target.thread_target(t.name, use_roles=use)[1] for t in w.threads])
        bound = _planned(w.threads, target, use)
        return WorkerOutcome(
            pid=w.pid,
            name=w.comm,
            devices=w.devices,
            rank=target.rank,
            target=target,
            cpus_before=before,
            cpus_after=after,
            threads_total=len(w.threads),
            threads_bound=bound,
            verified=bound == len(w.threads),
            dry_run=True,
            self_binding=selfb,
        )
    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.host import affinity as aff
    from ascendtune.host.affinity.lock import process_lock

    t0 = time.perf_counter()
    hold = contextlib.ExitStack()
    try:
        check_cpus_usable(
            target,
            online=aff.online_cpus(),
            # live, discovery read this cpuset a moment ago through the same resolver
            # (host.cgroup): not read again (16 workers: 16 mountinfo parses, about 1.8 ms)
            allowed=w.cpuset if root.live else aff.cpuset_cpus(w.pid),
            whom=f"process {w.pid}",
        )
        if lock:
            hold.enter_context(process_lock(w.pid))
        pending = aff.begin_bind(
            w.pid,
            target,
            use_roles=use_roles,
            keep_partial=False,
            max_passes=max_passes,
            tasks=tasks,
        )
    except AscendtuneError as e:
        hold.close()
        return _failed(w, target, selfb, e, time.perf_counter() - t0, now())
    hold.callback(pending.close)  # what it holds open for the re-read, if never finished
    dt = time.perf_counter() - t0
    begun = Begun(w, target, pending.before(), pending, selfb, dt, hold, tasks)
    # a write refused: what it moved goes back now, not after the other workers' passes
    return finish_worker(begun) if pending.fatal else begun


def _failed(
    w: WorkerFacts,
    target: BindTarget,
    selfb: bool | None,
    e: AscendtuneError,
    seconds: float,
    cpus: list[CpuSet] | None,
) -> WorkerOutcome:
    return replace(
        unbound(
            w, e.message, dry_run=False, target=target, rank=target.rank, self_bind=selfb, cpus=cpus
        ),
        bind_seconds=seconds,
    )


def finish_worker(b: Begun) -> WorkerOutcome:
    """The final re-read of a worker begun by begin_worker (after the settle window since its
    last write), its outcome, and its binder lock released."""
    from ascendtune.host import affinity as aff

    w, target, selfb = b.w, b.target, b.self_bind
    t0 = time.perf_counter()
    with b.hold:
        try:
            report = aff.finish_bind(b.pending)
        except AscendtuneError as e:
            dt = b.seconds + time.perf_counter() - t0
            return _failed(w, target, selfb, e, dt, _masks_now(w, b.tasks))
        if report.threads_changed and not report.rolled_back:  # what `watch` names
            from ascendtune.host.affinity.lock import write_record

            write_record(w.pid, target, use_roles=report.use_roles, by="ascendtune bind --workers")
    dt = b.seconds + time.perf_counter() - t0
    after = b.pending.after or frozenset()  # what the final re-read found
    error = None
    if report.threads_failed or not report.verified:
        first = report.threads_failed[0].error if report.threads_failed else "not verified"
        error = f"{len(report.threads_failed) or 1} thread(s) not bound: {first}"
        if report.rolled_back:
            error += f"; {len(report.rolled_back)} threads put back"
    return WorkerOutcome(
        pid=w.pid,
        name=w.comm,
        devices=w.devices,
        rank=target.rank,
        target=target,
        cpus_before=b.before,
        cpus_after=after,
        threads_total=report.threads_total,
        threads_bound=report.threads_bound,
        threads_failed=report.threads_failed,
        threads_changed=report.threads_changed,
        verified=report.verified,
        error=error,
        rolled_back=len(report.rolled_back),
        bind_seconds=dt,
        self_binding=selfb,
        moved=tuple(b.pending.run.previous.items()),
    )


def discover(
    root: Root, *, threads: bool = True, workers_only: bool = False
) -> tuple[Host, list[WorkerFacts]]:
    """The host and its workers; threads=False leaves their threads unread (a bind reads the
    masks it needs itself, host.workers.find_workers); workers_only: the host read only as far
    as finding the workers and their devices needs (host.reader.read_host), where nothing is
    planned from it (a plan file given)."""
    from ascendtune.host.reader import read_host
    from ascendtune.host.workers import find_workers

    host = read_host(root, workers_only=workers_only)
    return host, find_workers(root, host, threads=threads)


def _bind_all(
    workers: list[WorkerFacts],
    targets: Targets,
    opts: WorkersOptions,
    root: Root,
    tasks: Tasks | None,
    meanwhile: Callable[[], object] | None = None,
) -> tuple[WorkerOutcome, ...]:
    """Every worker's threads written first, then each re-read once its settle window
    (host.affinity.bind.VERIFY_SETTLE_S from its last write) has passed: in the order they were
    written, the first re-reads take the time the last workers' windows need, and what is left
    of a window when its worker comes is waited once, for every worker left (`meanwhile`, the
    caller's own work, runs in that wait)."""
    got: list[WorkerOutcome | Begun] = []
    try:
        for w in workers:
            got.append(
                begin_worker(
                    w,
                    targets,
                    root=root,
                    dry_run=opts.dry_run,
                    use_roles=opts.use_roles,
                    max_passes=opts.max_passes,
                    tasks=tasks,
                )
            )
        out = list(got)
        waited = False
        for i, g in enumerate(got):
            if not isinstance(g, Begun):
                continue
            if not waited and _window_left(g.pending) > 0:
                from ascendtune.host.affinity import settle

                # the one wait: every window left has passed after it (16 x 500 threads:
                # the first re-reads outlast the last window, about 10 ms of wall saved)
                settle([b.pending for b in got[i:] if isinstance(b, Begun)], meanwhile)
                waited = True
            out[i] = finish_worker(g)
        return tuple(o for o in out if isinstance(o, WorkerOutcome))
    finally:
        for g in got:  # released by finish_worker; here only when something raised
            if isinstance(g, Begun):
                g.hold.close()


def _window_left(p: PendingBind) -> float:
    """Seconds left of the settle window of a bind begun: what finish_bind would wait before
    its re-read (0 or less: nothing, the window has passed or nothing was written)."""
    from ascendtune.host.affinity.bind import VERIFY_SETTLE_S

    if not p.run.previous:
        return 0.0
    return VERIFY_SETTLE_S - (time.monotonic() - p.run.last_write)


def require_live(root: Root, dry_run: bool) -> None:
    if not root.live and not dry_run:
        raise UsageError(
            DRY_RUN_ONLY.format(what=root.describe()),
            "add --dry-run to see what would change, or run on the host itself without "
            "--sysroot/--demo (and without ASCENDTUNE_SYSROOT)",
        )


class NoWorkers(MissingError):
    """No accelerator worker runs here (exit 3; `fleet bind` says "nothing to bind")."""


def bind_workers(
    opts: WorkersOptions,
    *,
    root: Root | None = None,
    tasks: Tasks | None = None,
    pids: frozenset[int] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> WorkersReport:
    """Bind every worker found to one plan; a worker that fails is rolled back and reported.
    pids: only these processes are workers (`fleet bind`'s ASCENDTUNE_FLEET_PIDS).
    meanwhile: the caller's own work (imports for its output), done in the wait before the
    final re-reads when there is one (_bind_all)."""
    from ascendtune.app.hosts import open_root

    if root is None:
        root = open_root(opts.source)
    require_live(root, opts.dry_run)
    # a bind reads each thread's mask itself: discovery reads no thread (a dry run shows them);
    # with a plan file, the host is read for its workers only (16 NPUs: one npu-smi run and
    # pyudev's 9 ms fewer)
    host, workers = discover(root, threads=opts.dry_run, workers_only=opts.plan_file is not None)
    if pids is not None:
        workers = [w for w in workers if w.pid in pids]
    if not workers:
        from ascendtune.host.workers import scanned_note

        raise NoWorkers(
            f"no accelerator worker found on {root.describe()} ({scanned_note(root, host)})",
            f"start the server first; workers are found by {_where_found()}",
        )
    targets = resolve_targets(opts, root, host)
    with contextlib.nullcontext() if opts.dry_run else workers_lock():
        outcomes = _bind_all(workers, targets, opts, root, tasks, meanwhile)
    return WorkersReport(
        outcomes,
        targets.source,
        root.describe(),
        opts.dry_run,
        handoff_notes(outcomes, opts.dry_run),
    )


def workers_lock() -> contextlib.AbstractContextManager[str]:
    """One `bind --workers` (or `--workers --watch`) per host at a time (host.affinity.lock)."""
    from ascendtune.host.affinity.lock import workers_lock as lock

    return lock()


def _where_found() -> str:
    """Where worker discovery looks, in words: "npu-smi's process table and by their open
    /dev/davinciN or /dev/nvidiaN files"."""
    from ascendtune.core import vendors

    profiles = vendors.profiles()
    tables = [f"{p.tool}'s process table" for p in profiles if p.processes_from == p.tool]
    files = " or ".join(f"/dev/{p.device_file}N" for p in profiles)
    return " and by ".join([*tables, f"their open {files} files"])


def check_workers(report: WorkersReport) -> None:
    from ascendtune.core.errors import ProblemsFound

    bad = [w for w in report.workers if not w.ok]
    if bad:
        raise ProblemsFound(
            f"{len(bad)} of {len(report.workers)} workers not bound: "
            + "; ".join(f"PID {w.pid}: {w.error}" for w in bad[:3]),
            "see workers[].error in --json; the other workers are bound",
        )
