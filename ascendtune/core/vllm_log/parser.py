"""The parser: byte lines in, a frozen LogReport out, holding at most MAX_WORKERS workers and
small state; a line it does not know is skipped, never an error."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ascendtune.core.vllm_log import model
from ascendtune.core.vllm_log.causes import UNKNOWN_CAUSE, cause_of
from ascendtune.core.vllm_log.findings import log_findings
from ascendtune.core.vllm_log.model import (
    BINDINGS,
    MAX_IRQS,
    Binding,
    IrqBinding,
    LoggedPlan,
    LogReport,
    RunSummary,
    WorkerLog,
)
from ascendtune.core.vllm_log.patterns import (
    _ASCEND_VERSION,
    _ASSIGNED,
    _BANNER,
    _FAILED,
    _FAILED_START,
    _IDX,
    _IRQ,
    _IRQ_950,
    _IRQ_NOT_WRITABLE,
    _IRQ_SKIP,
    _IRQ_START,
    _IRQBALANCE,
    _LEGACY_BOUND,
    _LEGACY_FAILED,
    _LEGACY_PLAN,
    _MIGRATE,
    _MIGRATE_SKIP,
    _MODE,
    _MODE_NPU,
    _MODE_VISIBLE,
    _NAMESPACE,
    _NO_MIGRATEPAGES,
    _NON_ARM,
    _NON_DEFAULT,
    _PLAN,
    _PLAN_950,
    _PLAN_HEAD,
    _PLAN_START,
    _SKIP_950,
    _STEP_NPU,
    _TOPO_FALLBACK,
    _UNKNOWN_ARCH,
    _VLLM_VERSION,
    Junk,
    _balanced,
    _config_value,
    _cpus,
    _ints,
    num,
    safe_literal,
)
from ascendtune.core.vllm_log.records import (
    Record,
    plain_stamps,
    records,
    stamp_seconds,
)

# time stamps that go back by more than this start a new run (records of one run interleave
# out of order by seconds, never by minutes)
RUN_CLOCK_BACK_S = 600


@dataclass
class _Worker:
    key: object
    line: int
    pid: int | None = None
    process: str | None = None
    rank: int | None = None
    dp_rank: int | None = None
    binding: Binding = "not seen"
    reason: str | None = None
    mode: str | None = None
    visible: tuple[int, ...] = ()
    plan: LoggedPlan | None = None
    plan_expected: bool = False  # "The CPU allocation plan" seen, the NPU line not yet
    irqs: list[IrqBinding] = field(default_factory=list)
    migrate: list[int] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    cut_plan: bool = False
    global_rank: int | None = None
    npu_hint: int | None = None  # the NPU a mode line names, where it does

    def freeze(self) -> WorkerLog:
        cause = cause_of(self.reason) if self.binding == "failed" and self.reason else None
        if self.binding == "failed" and cause is None:
            cause = UNKNOWN_CAUSE
        return WorkerLog(
            rank=self.rank,
            pid=self.pid,
            process=self.process,
            dp_rank=self.dp_rank,
            binding=self.binding,
            reason=self.reason,
            cause=cause.code if cause else None,
            cause_text=cause.cause if cause else None,
            fix=cause.fix if cause else None,
            mode=self.mode,
            visible_npus=self.visible,
            plan=self.plan,
            irqs=tuple(self.irqs),
            migrate_nodes=tuple(self.migrate),
            skipped_steps=tuple(self.skipped),
            line=self.line,
            global_rank=self.global_rank,
        )

    def expected_npu(self) -> int | None:
        if self.npu_hint is not None:
            return self.npu_hint
        if self.rank is not None and 0 <= self.rank < len(self.visible):
            return self.visible[self.rank]
        return None


def _name_ranks(proc: str | None, prank: int | None) -> tuple[int | None, int | None]:
    """(local rank, dp rank) from a prefix name: `Worker_DP1_TP0_EP1`, `VllmWorker rank=2`."""
    if prank is not None:
        return prank, None
    if not proc:
        return None, None
    idx = {k: num(v) for k, v in _IDX.findall(proc)}
    return idx.get("TP"), idx.get("DP")


def _is_worker_name(proc: str | None) -> bool:
    return bool(proc) and proc is not None and (proc.startswith("Worker") or "Worker" in proc)


class LogParser:
    """Feed byte lines, then `report()`; holds at most MAX_WORKERS workers and small state."""

    def __init__(self) -> None:
        self.lines = 0
        self.cut = 0
        self.truncated = False
        self.stop_reason: str | None = None
        self.workers: dict[object, _Worker] = {}
        self.order: list[object] = []
        self.current: dict[object, object] = {}  # source (pid or None) -> key of its open worker
        self.anon = 0
        self.binding_seen = False
        self.args: dict[str, Any] | None = None
        self.args_unparsed = False
        self.additional: Mapping[str, Any] | None = None
        self.versions: dict[str, str] = {}
        self.fallback_ranks: set[int] = set()
        self.irqbalance_stopped = False
        self.dropped_workers = 0
        self.cut_failures = 0
        # runs: a log appended across server restarts holds several; workers are the last's
        self.run = 1
        self.run_first = 1
        self.run_started = "the log's first line"
        self.past: list[RunSummary] = []
        self.any_binding_seen = False
        self.clock: tuple[int | None, int, int] | None = None  # the latest time stamp of the run
        self.clock_text = ""
        self.stale: set[str] = set()  # values an earlier run set, which this run's replace
        self.seconds: dict[str, tuple[int | None, int, int]] = {}  # stamp_seconds, remembered

    # -- runs -----------------------------------------------------------------------------

    def _summary(self, last_line: int) -> RunSummary:
        counts = {b: 0 for b in BINDINGS}
        for w in self.workers.values():
            counts[w.binding] += 1
        failed = sorted(
            {w.rank for w in self.workers.values() if w.binding == "failed" and w.rank is not None}
        )
        return RunSummary(
            self.run,
            self.run_first,
            max(self.run_first, last_line),
            self.run_started,
            counts,
            tuple(failed),
        )

    def _new_run(self, why: str) -> None:
        """A new server run begins at this line, if the current one has seen any worker (a
        banner's second line, or a banner before any worker, belongs to the same start)."""
        if not self.workers:
            return
        self.past.append(self._summary(self.lines - 1))
        self.run += 1
        self.run_first = self.lines
        self.run_started = why
        self.workers, self.order, self.current = {}, [], {}
        self.binding_seen = False
        self.fallback_ranks = set()
        self.irqbalance_stopped = False
        self.stale = {"vllm", "vllm_ascend", "args"}

    def _clock_at(self, stamp: str) -> None:
        t = self.seconds.get(stamp)
        if t is None:
            t = stamp_seconds(stamp)
            if t is None:
                return
            if len(self.seconds) >= 4096:  # a log's stamps repeat within a second, not for long
                self.seconds.clear()
            self.seconds[stamp] = t
        prev = self.clock
        self.clock = t if prev is None or _later(t, prev) else prev
        if prev is None:
            self.clock_text = stamp
            return
        year_wrap = t[0] is None and prev[1] == 12 and t[1] == 1
        back = (prev[0] or 0, prev[1], prev[2] - RUN_CLOCK_BACK_S) > (t[0] or 0, t[1], t[2])
        if back and not year_wrap:
            before = self.clock_text
            self.clock, self.clock_text = t, stamp
            self._new_run(f"time stamps go back (from {before} to {stamp})")
        elif self.clock == t:
            self.clock_text = stamp

    def clock_state(self) -> tuple[tuple[int | None, int, int] | None, str]:
        """(the latest time stamp's seconds, its text): what the next stamps are judged by."""
        return self.clock, self.clock_text

    def set_clock(self, clock: tuple[int | None, int, int] | None, text: str) -> None:
        """Put the clock where feeding skipped stamped lines would have (scan's fast path,
        which proved none of them went back by more than RUN_CLOCK_BACK_S)."""
        self.clock, self.clock_text = clock, text

    # -- workers --------------------------------------------------------------------------

    def _new(self, key: object, rec: Record) -> _Worker | None:
        if len(self.workers) >= model.MAX_WORKERS:
            self.dropped_workers += 1
            return None
        w = _Worker(key=key, line=self.lines, pid=rec.pid, process=rec.process)
        prank = None
        if rec.process and " rank=" in rec.process:
            prank = num(rec.process.rsplit("=", 1)[1])
        w.rank, w.dp_rank = _name_ranks(rec.process, prank)
        self.workers[key] = w
        self.order.append(key)
        return w

    def _by_pid(self, rec: Record) -> _Worker | None:
        key = ("pid", rec.pid)
        w = self.workers.get(key)
        return w if w is not None else self._new(key, rec)

    def _anon(self, rec: Record) -> _Worker | None:
        self.anon += 1
        return self._new(("anon", self.anon), rec)

    def _for_rank(self, rec: Record, rank: int | None, *, opening: bool) -> _Worker | None:
        """The worker a record naming `rank` belongs to. With a pid, the pid's worker. Without
        one (single-process logs, stripped prefixes), the latest worker of that rank that has not
        finished; `opening` (a `[cpu_bind_mode]` line) starts a new one once it has."""
        if rec.pid is not None:
            w = self._by_pid(rec)
            if w is not None and rank is not None:
                w.rank = rank
            return w
        for key in reversed(self.order):
            w = self.workers[key]
            if w.pid is not None or (rank is not None and w.rank not in (rank, None)):
                continue
            done = w.binding in ("failed", "skipped") or (opening and w.mode is not None)
            if not done:
                if rank is not None:
                    w.rank = rank
                return w
            break
        w = self._anon(rec)
        if w is not None:
            w.rank = rank
        return w

    def _current(self, rec: Record) -> _Worker | None:
        if rec.pid is not None:
            return self._by_pid(rec)
        key = self.current.get(None)
        if key is not None:
            return self.workers.get(key)
        return self._anon(rec)

    def _for_npu(self, rec: Record, npu: int) -> _Worker | None:
        """The worker an `NPUn: main=[...]` line belongs to (without a pid: the open worker
        whose rank indexes NPU n in its visible list, else the latest open one)."""
        if rec.pid is not None:
            return self._by_pid(rec)
        pending = [
            self.workers[k]
            for k in self.order
            if self.workers[k].pid is None
            and self.workers[k].plan is None
            and self.workers[k].binding not in ("failed", "skipped")
            and (self.workers[k].mode is not None or self.workers[k].plan_expected)
        ]
        for w in pending:
            if w.expected_npu() == npu:
                return w
        if pending:
            return pending[-1]
        return self._anon(rec)

    def _for_irq(self, rec: Record, npu: int) -> _Worker | None:
        if rec.pid is not None:
            return self._by_pid(rec)
        for key in reversed(self.order):
            w = self.workers[key]
            if w.pid is None and w.plan is not None and w.plan.npu == npu:
                return w
        return self._current(rec)

    def stop(self, reason: str) -> None:
        """Reading ended before the log did (a line, byte or time limit): the report says so."""
        self.truncated = True
        self.stop_reason = reason

    # -- lines ----------------------------------------------------------------------------

    def feed(self, line: bytes, *, stamp_only: bool = False) -> None:
        """One line; `stamp_only` when it holds no marker (patterns.MARKERS), so nothing but
        its records' time stamps can count (the same outcome, sooner)."""
        if self.truncated:
            return
        if self.lines >= model.MAX_LINES:
            self.stop(f"stopped after {model.MAX_LINES} lines")
            return
        self.lines += 1
        if stamp_only:
            stamps = plain_stamps(line)
            if stamps is not None:
                for stamp in stamps:
                    self._clock_at(stamp)
                return
        try:
            recs = records(line)
            if recs and recs[-1].cut:
                self.cut += 1
            for rec in recs:
                if not stamp_only:
                    self._message(rec)
                elif rec.stamp is not None:
                    self._clock_at(rec.stamp)
        except Junk:
            pass  # a number no real log prints (thousands of digits): not a line of a server

    def skip(self, n: int) -> None:
        """n lines that hold nothing the parser reads (no marker, no time stamp): counted, as
        feeding them would, up to the line limit."""
        if self.truncated or n <= 0:
            return
        if self.lines + n > model.MAX_LINES:
            self.lines = max(self.lines, model.MAX_LINES)
            self.stop(f"stopped after {model.MAX_LINES} lines")
            return
        self.lines += n

    def _message(self, rec: Record) -> None:
        msg = rec.message
        if rec.stamp is not None:
            self._clock_at(rec.stamp)
        if _BANNER.search(msg):
            self._new_run(f"a server start banner ({msg[:80]})")
        if rec.pid is not None and "world size" in msg and _ASSIGNED.search(msg):
            seen = self.workers.get(("pid", rec.pid))
            if seen is not None and seen.global_rank is not None:
                self._new_run(f"PID {rec.pid} started again")
        if _is_worker_name(rec.process) and rec.pid is not None:
            w = self._by_pid(rec)  # a worker that never logs binding shows as "not seen"
            m = _ASSIGNED.search(msg) if w is not None and "world size" in msg else None
            if w is not None and m:
                w.global_rank = num(m.group(1))
                if w.dp_rank is None:
                    w.dp_rank = num(m.group(2))
        maybe = "NPU" in msg or "cpu" in msg.lower() or "irq" in msg or "migrat" in msg
        if maybe and self._binding(rec, msg):
            self.binding_seen = self.any_binding_seen = True
            return
        if "version" in msg or "vLLM" in msg:
            self._version(msg)
        if "args: " in msg:
            self._args(msg, rec.cut)

    def _binding(self, rec: Record, msg: str) -> bool:
        m = _MODE.search(msg)
        if m:
            if rec.pid is not None:
                seen = self.workers.get(("pid", rec.pid))
                if seen is not None and seen.mode is not None:
                    self._new_run(f"PID {rec.pid} began binding again")
            w = self._for_rank(rec, num(m.group(2)), opening=True)
            if w is not None:
                vis = _MODE_VISIBLE.search(msg, m.end())
                hint = _MODE_NPU.search(msg, m.end())
                w.mode, w.visible = m.group(1), _ints(vis.group(1)) if vis else ()
                w.npu_hint = num(hint.group(1)) if hint else None
                self.current[rec.pid] = w.key
            return True
        if _PLAN_HEAD.search(msg):
            w = self._current(rec)
            if w is not None:
                w.plan_expected = True
                self.current[rec.pid] = w.key
            return True
        m = _PLAN.search(msg)
        if m:
            npu = num(m.group(1))
            w = self._for_npu(rec, npu)
            if w is not None:
                w.plan = LoggedPlan(
                    npu, _cpus(m.group(2)), _cpus(m.group(3)), _cpus(m.group(4) or "")
                )
                w.plan_expected = False
                if w.binding == "not seen":
                    w.binding = "bound"
                self.current[rec.pid] = w.key
            return True
        m = _PLAN_950.search(msg)
        if m:
            w = self._for_npu(rec, num(m.group(1)))
            if w is not None:
                w.plan = LoggedPlan(num(m.group(1)), _cpus(m.group(2)))
                w.mode = w.mode or "a5_clusters"
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _PLAN_START.search(msg)
        if m:  # a plan line cut short: the worker printed a plan, its CPUs are lost
            w = self._for_npu(rec, num(m.group(1)))
            if w is not None:
                w.cut_plan = True
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _IRQ.search(msg)
        if m:
            npu = num(m.group(1))
            w = self._for_irq(rec, npu)
            if w is not None and len(w.irqs) < MAX_IRQS:
                g = m.groups()
                w.irqs.append(
                    IrqBinding(npu, g[1].strip(), num(g[2]), num(g[3]), num(g[4]), num(g[5]))
                )
            return True
        if _IRQ_START.search(msg):
            return True
        m = _MIGRATE.search(msg)
        if m:
            w = self._current(rec)
            if w is not None:
                for node in _ints(m.group(2))[:8]:
                    if node not in w.migrate:
                        w.migrate.append(node)
            return True
        m = _FAILED.search(msg) or None
        if m is not None or _FAILED_START.search(msg):
            if m is None:
                sm = _FAILED_START.search(msg)
                assert sm is not None
                rank = num(sm.group(1)) if sm.group(1) else None
                reason = msg[sm.end() :].lstrip(": ").strip() or "(the line is cut short)"
                self.cut_failures += 1
            else:
                rank, reason = num(m.group(1)), m.group(2).strip()
            w = self._for_rank(rec, rank, opening=False)
            if w is not None:
                w.binding, w.reason = "failed", reason[:2000]
            return True
        if _NON_ARM.search(msg):
            w = self._for_rank(rec, None, opening=False) if rec.pid is None else self._by_pid(rec)
            if w is not None and w.binding != "failed":
                w.binding, w.reason = (
                    "skipped",
                    "non-ARM CPU: vLLM-Ascend binds CPUs on ARM hosts only",
                )
            return True
        m = _UNKNOWN_ARCH.search(msg)
        if m:
            w = self._for_rank(rec, None, opening=False) if rec.pid is None else self._by_pid(rec)
            arch = m.group(1) or m.group(2) or "?"
            if w is not None and w.binding != "failed":
                w.binding, w.reason = (
                    "skipped",
                    f"unknown CPU architecture {arch}: binding disabled",
                )
            return True
        m = _SKIP_950.search(msg)
        if m:
            w = self._current(rec)
            if w is not None and w.binding != "failed":
                w.binding, w.reason = "skipped", "Ascend 950: " + m.group(1).rstrip(". ")
            return True
        if _TOPO_FALLBACK.search(msg):
            w = self._current(rec)
            if w is not None and w.rank is not None:
                self.fallback_ranks.add(w.rank)
            return True
        if _NO_MIGRATEPAGES.search(msg):
            self._step(rec, "memory: migratepages is not installed; memory was not moved")
            return True
        if _IRQ_NOT_WRITABLE.search(msg):
            self._step(rec, "irq: /proc/irq is not writable; IRQs were not bound")
            return True
        if _IRQ_950.search(msg):
            self._step(rec, "irq: not bound on Ascend 950 (by design)")
            return True
        if _IRQ_SKIP.search(msg):
            self._step(rec, "irq: " + msg.strip()[:300])
            return True
        if _MIGRATE_SKIP.search(msg):
            self._step(rec, "memory: " + msg.strip()[:300])
            return True
        if _IRQBALANCE.search(msg):
            self.irqbalance_stopped = True
            return True
        m = _LEGACY_PLAN.search(msg)
        if m:
            w = self._for_rank(rec, num(m.group(1)), opening=True)
            if w is not None:
                w.mode = "legacy_numa_shard"
                w.visible = _ints(m.group(4))
                w.plan_expected = True
                self.current[rec.pid] = w.key
                w.plan = LoggedPlan(num(m.group(2)), frozenset())
            return True
        m = _LEGACY_BOUND.search(msg)
        if m:
            w = self._current(rec)
            if w is not None:
                npu = w.plan.npu if w.plan else -1
                w.plan = LoggedPlan(npu, _cpus(m.group(2)))
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _LEGACY_FAILED.search(msg)
        if m:
            w = self._for_rank(rec, num(m.group(2)), opening=False)
            if w is not None:
                w.binding, w.reason = "failed", m.group(1).strip()[:2000]
            return True
        return False

    def _step(self, rec: Record, text: str) -> None:
        m = _STEP_NPU.search(rec.message)
        w = self._for_irq(rec, num(m.group(1) or m.group(2))) if m else self._current(rec)
        if w is not None and text not in w.skipped and len(w.skipped) < 16:
            w.skipped.append(text)

    def _version(self, msg: str) -> None:
        m = _VLLM_VERSION.search(msg)
        if m and ("vllm" not in self.versions or "vllm" in self.stale):
            self.versions["vllm"] = next(g for g in m.groups() if g)
            self.stale.discard("vllm")
        m = _ASCEND_VERSION.search(msg)
        if m and ("vllm_ascend" not in self.versions or "vllm_ascend" in self.stale):
            self.versions["vllm_ascend"] = next(g for g in m.groups() if g)
            self.stale.discard("vllm_ascend")

    def _args(self, msg: str, cut: bool) -> None:
        m = _NON_DEFAULT.search(msg)
        if m:
            text = _balanced(m.group(1))
            value = safe_literal(text) if text else None
            if isinstance(value, dict):
                self.args = {str(k): v for k, v in value.items()}
                self.additional = _config_value(self.args.get("additional_config"))
                self.args_unparsed = False
                self.stale.discard("args")
            elif self.args is None:
                self.args_unparsed = True
            return
        m = _NAMESPACE.search(msg)
        if m and (self.additional is None or "args" in self.stale):
            body = m.group(1)
            at = body.find("additional_config=")
            if at >= 0:
                text = _balanced(body[at + len("additional_config=") :])
                value = safe_literal(text) if text else None
                self.additional = _config_value(value)

    # -- the report -----------------------------------------------------------------------

    def report(self) -> LogReport:
        workers = tuple(self.workers[k].freeze() for k in self.order)
        # a worker whose only record is its prefix, in a log with no binding line at all,
        # says nothing: keep the list for logs that show binding somewhere
        if not self.binding_seen:
            workers = ()
        return LogReport(
            workers=workers,
            args=self.args,
            additional_config=self.additional,
            versions=dict(self.versions),
            findings=tuple(log_findings(self, workers)),
            lines=self.lines,
            lines_cut=self.cut,
            binding_seen=self.binding_seen,
            truncated=self.truncated,
            runs=(*self.past, self._summary(self.lines)),
        )


def _later(a: tuple[int | None, int, int], b: tuple[int | None, int, int]) -> bool:
    return (a[0] or 0, a[1], a[2]) > (b[0] or 0, b[1], b[2])


def parse_log(lines: Iterable[bytes]) -> LogReport:
    """Parse a log given as byte lines (no newline needed); never raises on content."""
    p = LogParser()
    for line in lines:
        p.feed(line)
        if p.truncated:
            break
    return p.report()


def parse_text(text: str) -> LogReport:
    """Parse a log given as text (through the prefilter, as a file is)."""
    from ascendtune.core.vllm_log.scan import parse_chunks

    return parse_chunks([text.encode("utf-8", errors="surrogateescape")]).report()
