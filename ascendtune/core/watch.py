"""What `watch` computes from samples of /proc: where each worker thread ran, how often it moved,
how much of its run time fell off the plan or off the device's node, and who else ran there.

Pure: frozen samples in (the host layer takes them), a frozen report out. `Watch` keeps only
rolling state (the last sample of each live thread, per-CPU tick counts, a capped neighbour
table), so memory stays bounded however long it runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any, TypeVar

from ascendtune.core.bindplan import ROLE_THREADS
from ascendtune.core.cpulist import CpuSet
from ascendtune.core.errors import AscendtuneError

if TYPE_CHECKING:
    from ascendtune.core.binders.attribution import SetBy

_T = TypeVar("_T")
_new = object.__new__
_set = object.__setattr__


def built(cls: type[_T], fields: dict[str, Any]) -> _T:
    """cls(**fields) for a frozen dataclass of this module, every field given in a dict the
    caller made for it (it becomes the object's own), without __init__: that sets each field
    through object.__setattr__ (a ThreadReport's 19 for every thread at every sample), and a
    call with 19 keywords builds their dict anyway. Tests hold the two ways equal."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    return obj


NEIGHBOUR_TRACK_CAP = 256  # neighbour threads remembered per worker; the smallest are dropped
NEIGHBOUR_TOP = 10  # neighbours reported per worker
MASK_CHANGES_KEPT = 32  # the last mask changes reported per worker (a count of all of them)


@dataclass(frozen=True)
class ThreadSample:
    """One thread at one instant."""

    tid: int
    name: str
    processor: int | None
    cpu_ticks: int  # utime + stime so far
    nr_migrations: int | None = None  # the kernel's count (sched), when it prints one
    ctx_voluntary: int | None = None
    ctx_involuntary: int | None = None
    mask: CpuSet | None = None  # its affinity mask, where the sampler reads it


@dataclass(frozen=True)
class ProcessSample:
    """One process at one instant: its threads (those still there when read)."""

    pid: int
    name: str
    threads: tuple[ThreadSample, ...]
    memory_by_node: Mapping[int, int] | None = None  # bytes per NUMA node (numa_maps)
    cpus_allowed: CpuSet | None = None
    vanished: int = 0  # threads listed, then gone before their files were read
    started: int | None = None  # start time after boot, clock ticks (/proc/PID/stat field 22)


@dataclass(frozen=True)
class HostSample:
    """Everything read in one pass: the workers, and (for neighbours) every other thread."""

    at_s: float  # a monotonic clock
    workers: Mapping[int, ProcessSample]  # pid -> sample; a pid missing here has exited
    others: tuple[ProcessSample, ...] = ()


@dataclass(frozen=True)
class WatchTarget:
    """A process to watch and what it should run on (all optional but the pid)."""

    pid: int
    device: int | None = None
    plan_cpus: CpuSet | None = None
    roles: Mapping[str, CpuSet] = field(default_factory=dict)  # acl / release / main CPUs
    node_cpus: CpuSet | None = None  # CPUs of the device's NUMA node (or the plan's nodes)
    nodes: tuple[int, ...] = ()
    rank: int | None = None


@dataclass(frozen=True)
class ThreadReport:
    tid: int
    name: str
    cpus_ran: CpuSet
    migrations: int
    migrations_source: str  # "sched" (the kernel's count) or "samples" (CPU changes seen)
    ctx_voluntary: int | None
    ctx_involuntary: int | None
    cpu_time_s: float  # gained while watched
    cpu_ticks_by_cpu: Mapping[int, int]
    off_plan_share: float | None
    off_node_share: float | None
    share_basis: str  # "cpu_time", or "samples" when the thread gained no CPU time
    last_cpu: int | None
    role: str | None  # "acl" / "release" for torch_npu's role threads
    role_cpus: CpuSet | None
    role_stayed: bool | None  # ran on one CPU only, inside its role CPUs when the plan has them
    mask: CpuSet | None = None  # its affinity mask at the last sample (None: not read)
    mask_changes: int = 0  # times its mask changed while watched
    set_by: SetBy | None = None  # who set that mask (None: not attributed)


@dataclass
class MaskChange:
    """A thread seen on a new mask: at its first sight (`before` None) or between two samples
    (then `since` is when it was last seen on `before`); `set_by` once attributed."""

    pid: int
    tid: int
    name: str
    before: CpuSet | None
    after: CpuSet
    sample: int  # the sample it was seen in (1: the first)
    since: float | None
    set_by: SetBy | None = None


@dataclass(frozen=True)
class Neighbour:
    pid: int
    tid: int
    process: str
    name: str
    cpu_time_s: float  # run time gained on the worker's CPUs
    cpus: CpuSet


@dataclass(frozen=True)
class WorkerReport:
    pid: int
    name: str
    alive: bool
    pid_reused: bool  # gone, and its PID taken by a process started later
    target: WatchTarget
    reference_cpus: CpuSet | None  # the CPUs neighbours are counted on (plan, else allowed)
    threads: tuple[ThreadReport, ...]
    threads_exited: int
    threads_seen: int
    cpu_time_s: float
    off_plan_share: float | None
    off_node_share: float | None
    memory_by_node: Mapping[int, int] | None
    neighbours: tuple[Neighbour, ...]
    neighbours_dropped: int  # neighbour threads forgotten at the tracking cap
    mask_changes: tuple[MaskChange, ...] = ()  # the last MASK_CHANGES_KEPT, oldest first
    mask_changes_total: int = 0
    attributed: bool = False  # its masks are attributed (binders: its chain, or None unread)
    binders: tuple[tuple[str, str, str, str], ...] | None = None  # (id, name, stage, outcome)


@dataclass(frozen=True)
class WatchReport:
    workers: tuple[WorkerReport, ...]
    interval_s: float
    elapsed_s: float
    samples: int
    clock_ticks: int

    @property
    def exit_code(self) -> int:
        return 0  # what ran where is a view, not a verdict

    @property
    def error(self) -> AscendtuneError | None:
        return None


@dataclass
class _Thread:
    """Rolling state of one live thread."""

    name: str
    base_ticks: int
    last_ticks: int
    base_mig: int | None
    last_mig: int | None
    base_vol: int | None
    last_vol: int | None
    base_invol: int | None
    last_invol: int | None
    last_cpu: int | None
    cpus_ran: CpuSet  # replaced (not grown) when a CPU is new: reports share it
    ticks_by_cpu: dict[int, int]
    samples_by_cpu: dict[int, int]
    moves_seen: int = 0
    ticks_gained: int = 0  # the sum of ticks_by_cpu
    ticks_sorted: dict[int, int] | None = None  # ticks_by_cpu in CPU order, until it changes
    mask: CpuSet | None = None
    mask_changes: int = 0
    set_by: SetBy | None = None


@dataclass
class _Neighbour:
    pid: int
    process: str
    name: str
    ticks: int
    cpus: set[int]
    order: int  # when it was (last) put in the table: the table's iteration order


@dataclass
class _Worker:
    target: WatchTarget
    name: str = ""
    alive: bool = True
    threads: dict[int, _Thread] = field(default_factory=dict)
    exited: int = 0
    seen_count: int = 0
    memory: Mapping[int, int] | None = None
    allowed: CpuSet | None = None
    neighbours: dict[int, _Neighbour] = field(default_factory=dict)
    neighbours_dropped: int = 0
    # (ticks, order, tid) of the table's entries once it is full, stale ones skipped when read:
    # the smallest valid entry is what min() over the table would pick, without the walk
    smallest: list[tuple[int, int, int]] | None = None
    added: int = 0  # entries ever put in the table
    started: int | None = None  # the watched process's start time
    reused: bool = False  # its PID now belongs to a process started later
    changes: deque[MaskChange] = field(default_factory=lambda: deque(maxlen=MASK_CHANGES_KEPT))
    changes_total: int = 0
    attributed: bool = False
    binders: tuple[tuple[str, str, str, str], ...] | None = None


def _smallest(w: _Worker) -> int:
    """The neighbour min() over w's table by ticks would pick: the fewest ticks, the first put
    in the table among equals (a table entry's ticks only grow; each value is in the heap)."""
    heap = w.smallest
    if heap is None:
        heap = w.smallest = [(n.ticks, n.order, tid) for tid, n in w.neighbours.items()]
        heapify(heap)
    while True:
        ticks, order, tid = heap[0]
        n = w.neighbours.get(tid)
        if n is not None and n.order == order and n.ticks == ticks:
            return tid
        heappop(heap)


def _share(by_cpu: Mapping[int, int], inside: CpuSet) -> float | None:
    total = off = 0
    for c, v in by_cpu.items():  # one or two CPUs for most threads: no generator, one pass
        total += v
        if c not in inside:
            off += v
    if total <= 0:
        return None
    return off / total


class Watch:
    """Accumulates HostSamples for a list of targets; `report()` at any time."""

    def __init__(
        self,
        targets: list[WatchTarget],
        *,
        clock_ticks: int = 100,
        interval_s: float = 1.0,
        neighbour_cap: int = NEIGHBOUR_TRACK_CAP,
        neighbour_top: int = NEIGHBOUR_TOP,
    ) -> None:
        self.clock_ticks = clock_ticks
        self.interval_s = interval_s
        self.neighbour_cap = neighbour_cap
        self.neighbour_top = neighbour_top
        self._workers = {t.pid: _Worker(target=t) for t in targets}
        self._first_at: float | None = None
        self._last_at: float | None = None
        self._samples = 0
        # last cpu_ticks of every other thread on the host (replaced each sample: bounded)
        self._others: dict[int, int] = {}
        self._pending: list[MaskChange] = []  # masks seen new in the last update

    def take_mask_changes(self) -> list[MaskChange]:
        """The threads seen on a new mask by the last update (each thread at its first sight,
        then at each change); the caller attributes them (MaskChange.set_by)."""
        out, self._pending = self._pending, []
        return out

    @property
    def samples(self) -> int:
        return self._samples

    def update(self, sample: HostSample) -> None:
        first = self._samples == 0
        self._pending = []  # only the last update's: a watch nobody attributes keeps none
        for pid, w in self._workers.items():
            ps = sample.workers.get(pid)
            if ps is not None and w.started is None:
                w.started = ps.started
            elif ps is not None and ps.started is not None and ps.started != w.started:
                # the PID was reused: what runs under it now is another process, not watched
                w.reused = True
            if ps is None or w.reused:
                if w.alive:
                    w.exited += len(w.threads)
                    w.threads.clear()
                w.alive = False
                continue
            self._update_worker(w, ps, first=first)
        self._update_neighbours(sample, first=first)
        if self._first_at is None:
            self._first_at = sample.at_s
        self._last_at = sample.at_s
        self._samples += 1

    def _update_worker(self, w: _Worker, ps: ProcessSample, *, first: bool) -> None:
        w.name = ps.name
        if ps.memory_by_node is not None:
            w.memory = dict(ps.memory_by_node)
        if ps.cpus_allowed is not None:
            w.allowed = ps.cpus_allowed
        now = {t.tid: t for t in ps.threads}
        gone = [tid for tid in w.threads if tid not in now]
        for tid in gone:
            del w.threads[tid]
        w.exited += len(gone) + (0 if first else ps.vanished)
        for tid, t in now.items():
            st = w.threads.get(tid)
            cpu = t.processor
            if st is None:
                w.seen_count += 1
                # a thread born while watched ran all its life under watch: count from zero
                born = not first
                st = _Thread(
                    name=t.name,
                    base_ticks=0 if born else t.cpu_ticks,
                    last_ticks=0 if born else t.cpu_ticks,
                    base_mig=(0 if born and t.nr_migrations is not None else t.nr_migrations),
                    last_mig=t.nr_migrations,
                    base_vol=0 if born and t.ctx_voluntary is not None else t.ctx_voluntary,
                    last_vol=t.ctx_voluntary,
                    base_invol=0 if born and t.ctx_involuntary is not None else t.ctx_involuntary,
                    last_invol=t.ctx_involuntary,
                    last_cpu=cpu,
                    cpus_ran=frozenset(),
                    ticks_by_cpu={},
                    samples_by_cpu={},
                )
                w.threads[tid] = st
            elif cpu is not None and st.last_cpu is not None and cpu != st.last_cpu:
                st.moves_seen += 1
            if t.mask is not None and t.mask != st.mask:
                self._mask_seen(w, ps.pid, tid, t, st)
            gained = t.cpu_ticks - st.last_ticks
            if cpu is not None:
                if cpu not in st.cpus_ran:
                    st.cpus_ran = st.cpus_ran | {cpu}
                by_cpu = st.samples_by_cpu
                by_cpu[cpu] = by_cpu.get(cpu, 0) + 1
                if gained > 0:
                    # the time since the last sample is put on the CPU it was last seen on
                    by_cpu = st.ticks_by_cpu
                    by_cpu[cpu] = by_cpu.get(cpu, 0) + gained
                    st.ticks_gained += gained
                    st.ticks_sorted = None
            st.name = t.name
            st.last_ticks = t.cpu_ticks
            st.last_cpu = cpu
            st.last_mig = t.nr_migrations
            st.last_vol = t.ctx_voluntary
            st.last_invol = t.ctx_involuntary

    def _mask_seen(self, w: _Worker, pid: int, tid: int, t: ThreadSample, st: _Thread) -> None:
        assert t.mask is not None
        change = MaskChange(
            pid,
            tid,
            t.name,
            st.mask,
            t.mask,
            self._samples + 1,
            None if st.mask is None else self._last_at,
        )
        if st.mask is not None:  # a change while watched, not a first sight
            st.mask_changes += 1
            w.changes.append(change)
            w.changes_total += 1
        st.mask = t.mask
        st.set_by = None
        self._pending.append(change)

    @property
    def all_exited(self) -> bool:
        """Every watched process has exited (what report() would say of each, without it)."""
        return all(not w.alive for w in self._workers.values())

    def started(self, pid: int) -> int | None:
        """The watched process's start time (stat field 22), once sampled."""
        w = self._workers.get(pid)
        return w.started if w is not None else None

    def set_binders(self, pid: int, binders: tuple[tuple[str, str, str, str], ...] | None) -> None:
        """The worker's binder chain (id, name, stage, outcome per binder; None: unread), which
        its masks are attributed against."""
        w = self._workers.get(pid)
        if w is not None:
            w.attributed, w.binders = True, binders

    def attributed(self, change: MaskChange) -> None:
        """Record who set change's mask on its thread (still on that mask)."""
        w = self._workers.get(change.pid)
        st = w.threads.get(change.tid) if w is not None else None
        if st is not None and st.mask == change.after:
            st.set_by = change.set_by

    def _update_neighbours(self, sample: HostSample, *, first: bool) -> None:
        # CPU -> the live workers whose reference CPUs hold it, in the workers' order
        on_cpu: dict[int, list[int]] = {}
        for pid, w in self._workers.items():
            ref = self._reference(w)
            if w.alive and ref:
                for c in ref:
                    on_cpu.setdefault(c, []).append(pid)
        workers = self._workers
        last = self._others
        seen: dict[int, int] = {}
        for proc in (*sample.others, *sample.workers.values()):
            for t in proc.threads:
                seen[t.tid] = t.cpu_ticks
                prev = last.get(t.tid)
                if first or prev is None or t.processor is None:
                    continue
                gained = t.cpu_ticks - prev
                if gained <= 0:
                    continue
                for pid in on_cpu.get(t.processor, ()):
                    if proc.pid != pid:
                        self._add_neighbour(workers[pid], proc, t, gained)
        self._others = seen

    def _add_neighbour(self, w: _Worker, proc: ProcessSample, t: ThreadSample, gained: int) -> None:
        n = w.neighbours.get(t.tid)
        if n is None:
            if len(w.neighbours) >= self.neighbour_cap:
                smallest = _smallest(w)
                if w.neighbours[smallest].ticks > gained:
                    w.neighbours_dropped += 1
                    return
                del w.neighbours[smallest]
                w.neighbours_dropped += 1
            w.added += 1
            n = w.neighbours[t.tid] = _Neighbour(proc.pid, proc.name, t.name, 0, set(), w.added)
        n.ticks += gained
        n.name = t.name
        if t.processor is not None:
            n.cpus.add(t.processor)
        if w.smallest is not None:
            heappush(w.smallest, (n.ticks, n.order, t.tid))
            if len(w.smallest) > 4 * self.neighbour_cap:  # mostly stale: start again
                w.smallest = None

    def _reference(self, w: _Worker) -> CpuSet | None:
        return w.target.plan_cpus if w.target.plan_cpus is not None else w.allowed

    def report(self) -> WatchReport:
        workers = tuple(self._report_worker(w) for w in self._workers.values())
        elapsed = (
            0.0
            if self._first_at is None or self._last_at is None
            else self._last_at - self._first_at
        )
        return WatchReport(
            workers=workers,
            interval_s=self.interval_s,
            elapsed_s=elapsed,
            samples=self._samples,
            clock_ticks=self.clock_ticks,
        )

    def _report_worker(self, w: _Worker) -> WorkerReport:
        tgt = w.target
        hz = float(self.clock_ticks)
        threads = tuple(self._report_thread(tid, st, tgt) for tid, st in sorted(w.threads.items()))
        all_ticks: dict[int, int] = {}
        for st in w.threads.values():
            for c, v in st.ticks_by_cpu.items():
                all_ticks[c] = all_ticks.get(c, 0) + v
        ranked = sorted(w.neighbours.items(), key=lambda kv: (-kv[1].ticks, kv[0]))
        neighbours = tuple(
            Neighbour(
                pid=n.pid,
                tid=tid,
                process=n.process,
                name=n.name,
                cpu_time_s=n.ticks / hz,
                cpus=frozenset(n.cpus),
            )
            for tid, n in ranked[: self.neighbour_top]
        )
        return WorkerReport(
            pid=tgt.pid,
            name=w.name,
            alive=w.alive,
            pid_reused=w.reused,
            target=tgt,
            reference_cpus=self._reference(w),
            threads=threads,
            threads_exited=w.exited,
            threads_seen=w.seen_count,
            cpu_time_s=sum(all_ticks.values()) / hz,
            off_plan_share=None
            if tgt.plan_cpus is None
            else (_share(all_ticks, tgt.plan_cpus) or 0.0),
            off_node_share=None
            if tgt.node_cpus is None
            else (_share(all_ticks, tgt.node_cpus) or 0.0),
            memory_by_node=w.memory,
            neighbours=neighbours,
            neighbours_dropped=w.neighbours_dropped,
            mask_changes=tuple(w.changes),
            mask_changes_total=w.changes_total,
            attributed=w.attributed,
            binders=w.binders,
        )

    def _report_thread(self, tid: int, st: _Thread, tgt: WatchTarget) -> ThreadReport:
        # with no run time gained, where the thread sat at each sample is all there is
        if st.ticks_gained:
            weights, basis = st.ticks_by_cpu, "cpu_time"
        else:
            weights, basis = st.samples_by_cpu, "samples"
        base, last = st.base_mig, st.last_mig
        if base is not None and last is not None:
            migrations, source = (last - base if last > base else 0), "sched"
        else:
            migrations, source = st.moves_seen, "samples"
        role = ROLE_THREADS.get(st.name.strip())
        role_cpus = tgt.roles.get(role) if role else None
        stayed: bool | None = None
        if role is not None and st.cpus_ran:
            stayed = len(st.cpus_ran) == 1 and (role_cpus is None or st.cpus_ran <= role_cpus)
        ticks = st.ticks_sorted
        if ticks is None:
            ticks = st.ticks_sorted = dict(sorted(st.ticks_by_cpu.items()))
        # the shares off the plan and off the node (_inside_share of each) in one pass over
        # the thread's one or two CPUs
        plan, node = tgt.plan_cpus, tgt.node_cpus
        total = off_plan = off_node = 0
        for c, v in weights.items():
            total += v
            if plan is not None and c not in plan:
                off_plan += v
            if node is not None and c not in node:
                off_node += v
        base, last = st.base_vol, st.last_vol
        vol = None if base is None or last is None else (last - base if last > base else 0)
        base, last = st.base_invol, st.last_invol
        invol = None if base is None or last is None else (last - base if last > base else 0)
        gained = st.last_ticks - st.base_ticks
        return built(
            ThreadReport,
            {
                "tid": tid,
                "name": st.name,
                "cpus_ran": st.cpus_ran,
                "migrations": migrations,
                "migrations_source": source,
                "ctx_voluntary": vol,
                "ctx_involuntary": invol,
                "cpu_time_s": (gained if gained > 0 else 0) / float(self.clock_ticks),
                "cpu_ticks_by_cpu": ticks,
                "off_plan_share": None
                if plan is None
                else (off_plan / total if total > 0 else 0.0),
                "off_node_share": None
                if node is None
                else (off_node / total if total > 0 else 0.0),
                "share_basis": basis,
                "last_cpu": st.last_cpu,
                "role": role,
                "role_cpus": role_cpus,
                "role_stayed": stayed,
                "mask": st.mask,
                "mask_changes": st.mask_changes,
                "set_by": st.set_by,
            },
        )


def _inside_share(weights: Mapping[int, int], inside: CpuSet | None) -> float | None:
    """A thread's share off `inside` (None without one; 0.0 where it has no weight at all)."""
    if inside is None:
        return None
    got = _share(weights, inside)
    return 0.0 if got is None else got


def _delta(base: int | None, last: int | None) -> int | None:
    if base is None or last is None:
        return None
    return max(0, last - base)
