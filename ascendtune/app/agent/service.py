"""The agent's loop. Keep mode hands the binding to `bind --workers --watch`'s engine
(app.keep_bound.watch_workers) and does its own work in the pause between two passes (the
engine's `sleep`): read the masks the pass left, take a sample of /proc (core.watch), run
doctor's host checks now and then, export; then, just before the next pass, see which threads
are off the plan. Observe mode finds the workers itself and binds nothing; it is the only mode
for a captured host (--sysroot, --demo).

SIGHUP re-reads the configuration (the engine stops between two workers and starts again with
the new plan); SIGTERM and SIGINT end the loop, and the agent exits 0."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ascendtune.app.agent.config import AgentConfig, listen_address
from ascendtune.app.agent.state import AgentState, MaskRow
from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.core.errors import AscendtuneError, UsageError

if TYPE_CHECKING:
    from ascendtune.app.keep_bound import WatchEvent
    from ascendtune.app.workers import WorkersOptions
    from ascendtune.host.roots import Root

OBSERVE_ONLY = (
    "the agent binds workers of this host only, and {what} is a captured host: "
    "give --observe to export its metrics read-only"
)
RETRY_MAX_S = 60.0


class Log:
    """Structured lines on stderr, one event a line (journald keeps each as one entry)."""

    def __init__(self, fmt: str = "logfmt", stream: IO[str] | None = None) -> None:
        self.fmt = fmt
        self.stream = stream or sys.stderr

    def __call__(self, level: str, msg: str, **kv: Any) -> None:
        at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        fields = {
            "ts": at,
            "level": level,
            "msg": msg,
            **{k: v for k, v in kv.items() if v is not None},
        }
        if self.fmt == "json":
            line = json.dumps(fields, separators=(",", ":"), default=str)
        else:
            line = " ".join(f"{k}={_logfmt(v)}" for k, v in fields.items())
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # stderr closed: the metrics still tell


def _logfmt(v: Any) -> str:
    s = str(v)
    if s and all(c.isalnum() or c in "-._:/,+@" for c in s):
        return s
    return json.dumps(s)


class Flags:
    """What the signal handlers set; the loops read it between steps."""

    def __init__(self) -> None:
        self.stop = False
        self.reload = False

    def any(self) -> bool:
        return self.stop or self.reload


def install_signals(flags: Flags) -> Callable[[], None]:
    """SIGHUP: reload; SIGTERM, SIGINT: stop. Returns what puts the old handlers back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(_s: int, _f: object) -> None:
        flags.stop = True

    def reload(_s: int, _f: object) -> None:
        flags.reload = True

    old = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, stop),
        signal.SIGINT: signal.signal(signal.SIGINT, stop),
        signal.SIGHUP: signal.signal(signal.SIGHUP, reload),
    }

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


class Agent:
    """One agent: its state, its exporter and its loops."""

    def __init__(
        self,
        load: Callable[[], AgentConfig],
        source: HostSource,
        *,
        log: Log,
        flags: Flags | None = None,
    ) -> None:
        from ascendtune import __version__
        from ascendtune.app.hosts import identity, open_root

        self.load = load
        self.cfg = load()
        self.source = source
        self.log = log
        self.flags = flags or Flags()
        self.root: Root = open_root(source)
        if not self.root.live and self.cfg.mode == "keep":
            raise UsageError(OBSERVE_ONLY.format(what=self.root.describe()))
        host = identity(self.root).get("hostname") or "unknown"
        self.state = AgentState(
            host=str(host), service=self.cfg.service, info=self._info(__version__)
        )
        self.version = __version__
        self.registry: Any = None
        self.server: Any = None
        self.sampler: Any = None
        self.next_doctor = 0.0
        self.resumed = time.process_time()
        self.captured: dict[int, list[MaskRow]] = {}  # a captured host's thread masks
        self.failing: dict[int, str] = {}  # pid -> why it was last not bound (logged once)

    def _info(self, version: str) -> dict[str, str]:
        c = self.cfg
        return {
            "version": version,
            "policy": c.policy,
            "plan": c.plan_file or c.policy,
            "mode": c.mode,
        }

    # ---- options for the engines --------------------------------------------------------------

    def plan_options(self) -> PlanOptions:
        c = self.cfg
        return PlanOptions(
            policy=c.policy, target=c.target, visible_devices=c.visible_devices or None
        )

    def workers_options(self) -> WorkersOptions:
        from ascendtune.app.workers import WorkersOptions

        c = self.cfg
        return WorkersOptions(
            source=self.source,
            plan=self.plan_options(),
            plan_file=Path(c.plan_file) if c.plan_file else None,
            dry_run=c.mode == "observe",
        )

    # ---- start, run, stop ---------------------------------------------------------------------

    def start_exporter(self) -> None:
        from ascendtune.app.agent import export

        self.registry = export.registry(self.state)
        if self.cfg.listen:
            addr, port = listen_address(self.cfg.listen)
            self.server = export.serve_http(self.registry, addr, port)
            self.log("info", "serving metrics", listen=f"{addr}:{port}", path="/metrics")
        if self.cfg.textfile:
            self.log("info", "writing metrics", textfile=self.cfg.textfile)

    def run(self) -> int:
        """Until SIGTERM/SIGINT; 0 when stopped by one."""
        self.start_exporter()
        self.log(
            "info",
            "agent started",
            version=self.version,
            mode=self.cfg.mode,
            root=self.root.describe(),
            interval_s=self.cfg.interval_s,
        )
        retry = self.cfg.interval_s
        try:
            while not self.flags.stop:
                try:
                    self.plan()
                    self.resumed = time.process_time()  # the plan is made once, not per sample
                    retry = self.cfg.interval_s
                    if self.cfg.mode == "keep":
                        self.keep()
                    else:
                        self.observe()
                except AscendtuneError as e:
                    with self.state.lock:
                        self.state.plan_ok = False
                    self.log("error", str(e.message), hint=e.hint, retry_s=retry)
                    self.after_pass()
                    self.wait(retry)
                    retry = min(RETRY_MAX_S, retry * 2)
                if self.flags.reload and not self.flags.stop:
                    self.reload()
        finally:
            if self.server is not None:
                self.server.shutdown()
        self.log("info", "agent stopped", samples=self.state.samples)
        return 0

    def reload(self) -> None:
        self.flags.reload = False
        try:
            cfg = self.load()
        except AscendtuneError as e:
            self.log("error", f"config not reloaded: {e.message}", hint=e.hint)
            return
        if not self.root.live and cfg.mode == "keep":
            self.log(
                "error", "config not reloaded: " + OBSERVE_ONLY.format(what=self.root.describe())
            )
            return
        if (cfg.listen, cfg.textfile) != (self.cfg.listen, self.cfg.textfile):
            self.log("warning", "--listen and --textfile change on restart only; kept as they were")
            cfg = cfg._replace(listen=self.cfg.listen, textfile=self.cfg.textfile)
        self.cfg = cfg
        with self.state.lock:
            self.state.service = cfg.service
            self.state.info = self._info(self.version)
        self.next_doctor = 0.0
        self.log(
            "info", "config reloaded", mode=cfg.mode, policy=cfg.policy, plan=cfg.plan_file or None
        )

    def plan(self) -> None:
        """The plan of every device, as the binding engine resolves it."""
        from ascendtune.app.workers import discover, resolve_targets

        host, _ = discover(self.root)
        targets = resolve_targets(self.workers_options(), self.root, host)
        self.state.set_plan(targets.by_device, targets.version)
        with self.state.lock:
            self.state.info["plan"] = targets.source
        self.log(
            "info",
            "plan",
            source=targets.source,
            devices=len(targets.by_device),
            target=targets.version,
        )

    def keep(self) -> None:
        from ascendtune.app.keep_bound import watch_workers

        watch_workers(
            self.workers_options(),
            interval_s=self.cfg.interval_s,
            on_event=self.on_event,
            root=self.root,
            sleep=self.between_passes,
            should_stop=self.flags.any,
            handle_signals=False,
        )

    def observe(self) -> None:
        while not self.flags.any():
            self.find_workers()
            self.between_passes(self.cfg.interval_s)

    def once(self) -> None:
        """One pass, then two samples an interval apart (`--once`)."""
        self.plan()
        if self.cfg.mode == "keep":
            from ascendtune.app.workers import bind_workers

            report = bind_workers(self.workers_options(), root=self.root)
            for o in report.workers:
                self.state.saw(o.pid, o.device, failed=not o.ok)
                if not o.ok:
                    self.log(
                        "warning", "worker not bound", pid=o.pid, device=o.device, error=o.error
                    )
        else:
            self.find_workers()
        self.after_pass()
        if self.root.live:
            self.wait(self.cfg.interval_s)
            self.after_pass()

    def run_once(self) -> None:
        """`--once`: the metrics after one pass, on stdout (textfile "-") or in the textfile."""
        from ascendtune.app.agent import export

        self.registry = export.registry(self.state)
        self.once()
        if self.cfg.textfile == "-":
            sys.stdout.write(export.exposition(self.registry))

    # ---- what the engine says -----------------------------------------------------------------

    def on_event(self, e: WatchEvent) -> None:
        if e.kind == "gone" and e.pid is not None:
            self.state.gone(e.pid)
            self.failing.pop(e.pid, None)
            self.log("info", "worker gone", pid=e.pid, device=e.device)
            return
        if e.pid is None:
            return
        failed = e.kind == "failed"
        restarted = self.state.saw(e.pid, e.device, failed=failed)
        if failed:
            if self.failing.get(e.pid) == e.message:
                return  # said once per worker and reason, not every pass
            self.failing[e.pid] = e.message
            self.log("warning", e.message, event=e.kind, pid=e.pid, device=e.device)
        else:
            self.log(
                "info",
                e.message,
                event="restarted" if restarted else e.kind,
                pid=e.pid,
                device=e.device,
            )

    def find_workers(self) -> None:
        from ascendtune.app.workers import discover

        _, workers = discover(self.root)
        found = set()
        for w in workers:
            if not w.present:
                continue
            found.add(w.pid)
            device = w.devices[0] if len(w.devices) == 1 else None
            if self.state.saw(w.pid, device):
                self.log("info", "worker restarted", pid=w.pid, device=device)
        if not self.root.live:
            self.captured = {w.pid: [(t.tid, t.name, t.cpus) for t in w.threads] for w in workers}
        for pid in list(self.state.workers):
            if pid not in found:
                self.state.gone(pid)

    # ---- the pause between two passes ---------------------------------------------------------

    def between_passes(self, seconds: float) -> None:
        self.after_pass()
        self.wait(seconds)
        if self.cfg.mode == "keep" and not self.flags.any():
            self.state.before_pass(self.read_masks)

    def read_masks(self, pid: int) -> list[MaskRow] | None:
        if not self.root.live:
            return self.captured.get(pid)
        from ascendtune.host.affinity import thread_names_and_masks

        rows = thread_names_and_masks(pid)
        return rows or None

    def after_pass(self) -> None:
        """Masks, a sample of /proc, doctor when due, export."""
        s = self.state
        s.read_masks(self.read_masks)
        if self.root.live:
            if self.sampler is None:
                from ascendtune.app.watch import live_sampler

                self.sampler = live_sampler()
            sample = self.sampler.sample(list(s.workers), neighbours=False)
            s.sample(sample, self.sampler.node_map(), self.sampler.clock_ticks)
        now = time.monotonic()
        if now >= self.next_doctor:
            self.next_doctor = now + self.cfg.doctor_interval_s
            self.run_doctor()
        for pid in [p for p in self.failing if p not in s.workers]:
            del self.failing[pid]  # exited: forget why it was not bound
        with s.lock:
            s.samples += 1
            s.last_sample_at = time.time()
            s.sample_cpu_s += max(0.0, time.process_time() - self.resumed)
        if self.cfg.textfile not in ("", "-") and self.registry is not None:
            from ascendtune.app.agent import export

            try:
                export.write_textfile(self.registry, self.cfg.textfile)
            except OSError as e:
                self.log("error", f"cannot write {self.cfg.textfile}: {e.strerror}")

    def run_doctor(self) -> None:
        from ascendtune.app.doctor import DoctorOptions, doctor

        try:
            report = doctor(
                self.root,
                DoctorOptions(sections=("host",), plan=self.plan_options(), source=self.source),
            )
        except AscendtuneError as e:
            self.log("warning", f"doctor: {e.message}")
            return
        self.state.set_checks((c.id, c.status) for c in report.checks)

    def wait(self, seconds: float) -> None:
        """In slices, so a signal ends the pause at once (a handler that returns does not cut
        time.sleep short)."""
        end = time.monotonic() + seconds
        while not self.flags.any() and time.monotonic() < end:
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
        self.resumed = time.process_time()
