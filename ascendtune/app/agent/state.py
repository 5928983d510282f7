"""What the agent knows between samples, and the series it exports: per worker process the
kernel's view (thread masks, CPU time on and off the plan, migrations, context switches, memory
per node), per device the restarts and failed passes, per NPU the interrupt placement, per host
the doctor checks. Counters only grow; a worker's series go when its process does.

The samples come from `watch`'s engine (core.watch.Watch, one per worker process); this module
only keeps its cumulative readings monotonic across exiting threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ascendtune.app.agent.metrics import DOCTOR_STATUSES
from ascendtune.core.bindplan import BindTarget
from ascendtune.core.cpulist import CpuSet
from ascendtune.core.watch import HostSample, Watch, WatchTarget

Labels = tuple[str, ...]
Row = tuple[str, Labels, float]  # metric name, label values (in the metric's order), value
MaskRow = tuple[int, str, CpuSet]  # tid, thread name, mask


@dataclass
class WorkerState:
    pid: int
    device: int | None
    target: BindTarget | None
    watch: Watch | None = None
    threads: int = 0
    threads_bound: int = 0
    masks_after: dict[int, CpuSet] = field(default_factory=dict)  # after the agent's pass
    # cumulative, in clock ticks / counts
    ticks_on: int = 0
    ticks_off: int = 0
    migrations: int = 0
    ctx_voluntary: int = 0
    ctx_involuntary: int = 0
    conflicts: int = 0
    rebound: int = 0
    memory: Mapping[int, int] | None = None
    last: dict[int, tuple[int, int, int, int, int]] = field(default_factory=dict)  # per tid

    @property
    def rank(self) -> int | None:
        return self.target.rank if self.target is not None else None

    def wanted(self, name: str, use_roles: bool) -> CpuSet | None:
        if self.target is None:
            return None
        return self.target.thread_target(name, use_roles=use_roles)[1]


class AgentState:
    """Everything the exporter reads; the sampling loop writes it under `lock`."""

    def __init__(self, *, host: str, service: str, info: Mapping[str, str]) -> None:
        self.lock = threading.Lock()
        self.host = host
        self.service = service
        self.info = dict(info)
        self.version = ""  # the vLLM-Ascend version the plan follows (the `target` label)
        self.targets: dict[int, BindTarget] = {}
        self.use_roles = True
        self.workers: dict[int, WorkerState] = {}
        self.last_pid: dict[int, int] = {}  # device -> its latest worker PID (kept when gone)
        self.restarts: dict[int, int] = {}
        self.failures: dict[int, int] = {}
        self.irq: dict[int, int] = {}
        self.doctor: dict[str, str] = {}
        self.plan_ok = False
        self.samples = 0
        self.sample_cpu_s = 0.0
        self.last_sample_at = 0.0
        self.clock_ticks = 100

    # ---- what the keeping engine says ---------------------------------------------------------

    def set_plan(self, by_device: Mapping[int, BindTarget], version: str | None) -> None:
        with self.lock:
            self.targets = dict(by_device)
            self.version = version or ""
            self.plan_ok = True
            for w in self.workers.values():
                w.target = self.targets.get(w.device) if w.device is not None else None
                w.watch = None  # the plan changed: sample against the new one

    def saw(self, pid: int, device: int | None, *, failed: bool = False) -> bool:
        """A worker PID found on device; True when it replaced another PID of the device (a
        restart)."""
        with self.lock:
            restarted = False
            if device is not None:
                old = self.last_pid.get(device)
                if old is not None and old != pid:
                    self.restarts[device] = self.restarts.get(device, 0) + 1
                    restarted = True
                self.last_pid[device] = pid
                if failed:
                    self.failures[device] = self.failures.get(device, 0) + 1
            if pid not in self.workers:
                target = self.targets.get(device) if device is not None else None
                self.workers[pid] = WorkerState(pid, device, target)
            return restarted

    def gone(self, pid: int) -> None:
        with self.lock:
            self.workers.pop(pid, None)

    # ---- what the kernel says -----------------------------------------------------------------

    def read_masks(self, read: Callable[[int], list[MaskRow] | None]) -> None:
        """After the agent's pass: every worker's threads and how many sit on the plan."""
        for pid in list(self.workers):
            rows = read(pid)
            with self.lock:
                w = self.workers.get(pid)
                if w is None:
                    continue
                if rows is None:
                    del self.workers[pid]
                    continue
                w.threads = len(rows)
                w.threads_bound = sum(
                    1 for _tid, name, cpus in rows if cpus == w.wanted(name, self.use_roles)
                )
                w.masks_after = {tid: cpus for tid, _name, cpus in rows}

    def before_pass(self, read: Callable[[int], list[MaskRow] | None]) -> None:
        """Just before the agent's next pass: threads off the plan are about to be put back;
        those the last pass had left on the plan were moved by another binder (a conflict)."""
        for pid in list(self.workers):
            w = self.workers.get(pid)
            if w is None or w.target is None:
                continue
            rows = read(pid) or []
            with self.lock:
                for tid, name, cpus in rows:
                    want = w.wanted(name, self.use_roles)
                    if cpus == want:
                        continue
                    w.rebound += 1
                    if w.masks_after.get(tid) == want:
                        w.conflicts += 1

    def sample(self, sample: HostSample, node_map: Mapping[int, CpuSet], clock_ticks: int) -> None:
        """One sample of /proc (core.watch's reading) folded into each worker's counters."""
        with self.lock:
            self.clock_ticks = clock_ticks
            for pid, w in list(self.workers.items()):
                if pid not in sample.workers:
                    del self.workers[pid]  # exited: its series go with it
                    continue
                if w.watch is None:
                    w.watch = Watch([_watch_target(w, node_map)], clock_ticks=clock_ticks)
                w.watch.update(sample)
                [rep] = w.watch.report().workers
                plan = w.target.cpus if w.target is not None else None
                seen: dict[int, tuple[int, int, int, int, int]] = {}
                for th in rep.threads:
                    on = sum(v for c, v in th.cpu_ticks_by_cpu.items() if plan and c in plan)
                    off = sum(th.cpu_ticks_by_cpu.values()) - on
                    now = (on, off, th.migrations, th.ctx_voluntary or 0, th.ctx_involuntary or 0)
                    before = w.last.get(th.tid, (0, 0, 0, 0, 0))
                    d = [max(0, a - b) for a, b in zip(now, before, strict=True)]
                    w.ticks_on += d[0]
                    w.ticks_off += d[1]
                    w.migrations += d[2]
                    w.ctx_voluntary += d[3]
                    w.ctx_involuntary += d[4]
                    seen[th.tid] = now
                w.last = seen  # threads that exited keep their share of the totals
                w.memory = rep.memory_by_node

    def set_checks(self, statuses: Iterable[tuple[str, str]]) -> None:
        """doctor's host rows: `npu_irq:N` becomes the NPU's interrupt gauge."""
        checks: dict[str, str] = {}
        irq: dict[int, int] = {}
        for cid, status in statuses:
            checks[cid] = status
            head, _, dev = cid.partition(":")
            if head == "npu_irq" and dev.isdigit() and status != "skip":
                irq[int(dev)] = 1 if status == "ok" else 0
        with self.lock:
            self.doctor = checks
            self.irq = irq

    # ---- the series ---------------------------------------------------------------------------

    def rows(self) -> list[Row]:
        with self.lock:
            return list(self._rows())

    def _rows(self) -> Iterable[Row]:
        h, s, t = self.host, self.service, self.version
        hz = float(self.clock_ticks)
        for w in sorted(self.workers.values(), key=lambda w: w.pid):
            lab = (h, s, str(w.pid), _opt(w.rank), _opt(w.device), t)
            yield "ascendtune_worker_threads", lab, w.threads
            yield "ascendtune_worker_threads_bound", lab, w.threads_bound
            if w.watch is not None:
                if w.target is None:
                    yield (
                        "ascendtune_worker_cpu_seconds_total",
                        (*lab, "no_plan"),
                        (w.ticks_on + w.ticks_off) / hz,
                    )
                else:
                    yield "ascendtune_worker_cpu_seconds_total", (*lab, "on_plan"), w.ticks_on / hz
                    yield (
                        "ascendtune_worker_cpu_seconds_total",
                        (*lab, "off_plan"),
                        w.ticks_off / hz,
                    )
                yield "ascendtune_worker_migrations_total", lab, w.migrations
                yield (
                    "ascendtune_worker_context_switches_total",
                    (*lab, "voluntary"),
                    w.ctx_voluntary,
                )
                yield (
                    "ascendtune_worker_context_switches_total",
                    (*lab, "involuntary"),
                    w.ctx_involuntary,
                )
            if w.memory:
                for node, b in sorted(w.memory.items()):
                    yield "ascendtune_worker_memory_bytes", (*lab, str(node)), b
                total = sum(w.memory.values())
                if w.target is not None and w.target.numa_nodes and total > 0:
                    local = sum(b for n, b in w.memory.items() if n in w.target.numa_nodes)
                    yield "ascendtune_worker_memory_local_ratio", lab, local / total
            if w.target is not None:
                yield "ascendtune_worker_binder_conflicts_total", lab, w.conflicts
                yield "ascendtune_worker_threads_rebound_total", lab, w.rebound
        for dev in sorted(set(self.last_pid) | set(self.restarts)):
            tgt = self.targets.get(dev)
            dlab = (h, s, _opt(tgt.rank if tgt else None), str(dev), t)
            yield "ascendtune_worker_restarts_total", dlab, self.restarts.get(dev, 0)
            yield "ascendtune_worker_bind_failures_total", dlab, self.failures.get(dev, 0)
        for dev, v in sorted(self.irq.items()):
            yield "ascendtune_npu_irq_on_plan", (h, str(dev)), v
        for cid, status in sorted(self.doctor.items()):
            for st in DOCTOR_STATUSES:
                yield "ascendtune_doctor_check", (h, cid, st), 1 if st == status else 0
        i = self.info
        yield (
            "ascendtune_agent_info",
            (h, s, i["version"], i["policy"], i["plan"], i["mode"]),
            1,
        )
        yield "ascendtune_agent_plan_ok", (h,), 1 if self.plan_ok else 0
        yield "ascendtune_agent_samples_total", (h,), self.samples
        yield "ascendtune_agent_sample_cpu_seconds_total", (h,), self.sample_cpu_s
        yield "ascendtune_agent_last_sample_timestamp_seconds", (h,), self.last_sample_at


def _opt(v: int | None) -> str:
    return "" if v is None else str(v)


def _watch_target(w: WorkerState, node_map: Mapping[int, CpuSet]) -> WatchTarget:
    t = w.target
    if t is None:
        return WatchTarget(pid=w.pid, device=w.device)
    known = [node_map[n] for n in t.numa_nodes if n in node_map]
    return WatchTarget(
        pid=w.pid,
        device=w.device,
        plan_cpus=t.cpus,
        roles={k: v for k, v in t.roles.items() if k in ("main", "acl", "release")},
        node_cpus=frozenset().union(*known) if known else None,
        nodes=t.numa_nodes,
        rank=t.rank,
    )
