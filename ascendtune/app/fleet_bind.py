"""`fleet bind --workers`: `bind --workers` on every node of a Ray cluster, one row per node.

One task pinned to each alive node (host.ray_fleet: `soft=False`, `num_cpus=0`, no retry)
runs `bind_here`, which is `bind --workers` of that node (app.workers.bind_workers: the same
discovery, plan, locks, final re-read and rollback; no second engine) and returns that node's
`bind --workers --json` document inside a small envelope. A dry run by default; `--apply`
binds. The driver only judges the answers: a node that fails, hangs past the deadline, dies
or answers anything but that document is its own row and never counts as verified.

On a node:
- ASCENDTUNE_FLEET_SOURCE set (the node replays a captured host, for tests): a dry run plans
  against that host's captured workers; `--apply` is refused (no process is bound from a
  captured host).
- ASCENDTUNE_FLEET_PIDS=PID[,PID...] (in the raylet's environment, which its workers inherit):
  only those processes are that node's workers. Every node of a local test cluster is the same
  machine; this keeps each node to the workers its test started.
- `--plan FILE` is a path read on each node (a plan per host, as `bind --workers --plan`).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import PlanOptions
from ascendtune.core.errors import AscendtuneError, UsageError

if TYPE_CHECKING:
    from ascendtune.host.ray_fleet import Gathered, NodeAnswer

__all__ = ["FleetBindOptions", "FleetBindReport", "bind_here", "document", "judge", "run"]

PIDS_ENV = "ASCENDTUNE_FLEET_PIDS"
# a node's row: what its answer amounts to
VERIFIED = "verified"  # --apply: every worker bound, verified from the kernel
PLANNED = "planned"  # dry run: a plan for every worker, nothing changed
NOTHING = "nothing to bind"  # no worker runs there (not a failure)
REFUSED = "refused"  # --apply on a node that replays a captured host
FAILED = "failed"
NO_ANSWER = "no answer"
STATUSES = (VERIFIED, PLANNED, NOTHING, REFUSED, FAILED, NO_ANSWER)
GOOD = frozenset({VERIFIED, PLANNED, NOTHING})
# what a node's task answers (its envelope's status)
NODE_STATUSES = ("ok", NOTHING, REFUSED, FAILED)


class FleetBindOptions(NamedTuple):
    ray_address: str | None = None  # None: RAY_ADDRESS, else auto
    apply: bool = False
    timeout: float = 60.0  # each node's deadline (the tasks run side by side)
    nodes: tuple[str, ...] = ()  # hostnames, IPs or node id prefixes; empty: every alive node
    ship: bool = True
    plan: PlanOptions = PlanOptions()
    plan_file: str | None = None  # a path read on each node
    force: bool = False
    use_roles: bool = True
    max_passes: int = 16


def request_of(opts: FleetBindOptions) -> dict[str, Any]:
    """What each node's task is given (plain data: it is pickled to the node)."""
    plan = {k: v for k, v in opts.plan._asdict().items() if k != "env"}
    return {
        "apply": opts.apply,
        "plan": plan,
        "plan_file": opts.plan_file,
        "force": opts.force,
        "use_roles": opts.use_roles,
        "max_passes": opts.max_passes,
    }


# ---- on a node ----------------------------------------------------------------------------------


def node_pids(text: str | None) -> frozenset[int] | None:
    """ASCENDTUNE_FLEET_PIDS as a set (None: unset, every worker)."""
    if text is None or not text.strip():
        return None
    try:
        return frozenset(int(p) for p in text.replace(" ", "").split(",") if p)
    except ValueError:
        raise UsageError(f"{PIDS_ENV}={text[:80]!r}: give PIDs separated by commas") from None


def bind_here(request: dict[str, Any]) -> dict[str, Any]:
    """The task body, run on a node: `bind --workers` there (a dry run unless request says
    apply); never raises for what it finds: every outcome is the envelope's status."""
    from pathlib import Path

    from ascendtune.app.workers import NoWorkers, WorkersOptions, bind_workers
    from ascendtune.host.ray_fleet import SOURCE_ENV, package_dir, replayed_root

    t0 = time.monotonic()
    apply = bool(request.get("apply"))
    src = os.environ.get(SOURCE_ENV) or None
    env: dict[str, Any] = {
        "status": "ok",
        "reason": None,
        "hostname": socket.gethostname(),
        "live": src is None,
        "apply": apply,
        "bind": None,
        "python": sys.version.split()[0],
        "ascendtune": package_dir(),
    }
    ray = sys.modules.get("ray")
    if ray is not None:
        env["ray_version"] = getattr(ray, "__version__", None)
    if src is not None:
        env["replayed"] = src
    try:
        pids = node_pids(os.environ.get(PIDS_ENV))
        if pids is not None:
            env["pids"] = sorted(pids)
        if src is not None and apply:
            env["status"] = REFUSED
            env["reason"] = (
                f"this node replays a captured host ({SOURCE_ENV}={src}), not a live one: "
                "nothing is bound from a captured host"
            )
            return env
        root = replayed_root(src) if src is not None else None
        opts = WorkersOptions(
            plan=PlanOptions(**request.get("plan", {})),
            plan_file=Path(request["plan_file"]) if request.get("plan_file") else None,
            force=bool(request.get("force")),
            dry_run=not apply,
            use_roles=bool(request.get("use_roles", True)),
            max_passes=int(request.get("max_passes", 16)),
        )
        report = bind_workers(opts, root=root, pids=pids)
        env["bind"] = report.to_json()
    except NoWorkers as e:
        env["status"] = NOTHING
        env["reason"] = e.message
        if "pids" in env:
            env["reason"] += f"; only PIDs {','.join(map(str, env['pids']))} taken ({PIDS_ENV})"
    except AscendtuneError as e:
        env["status"] = FAILED
        env["reason"] = e.message + (f" ({e.hint})" if e.hint else "")
    except Exception as e:  # a defect met on one node: that node's row, not the run
        env["status"] = FAILED
        env["reason"] = (
            f"internal error {type(e).__name__}: {e} (a defect of ascendtune: please report it)"
        )
    env["seconds"] = round(time.monotonic() - t0, 3)
    return env


# ---- on the driver --------------------------------------------------------------------------------


def accept(ans: NodeAnswer, got: object) -> None:
    """A node's answer as bind_here returns it; anything else is that node's failed row."""
    if not isinstance(got, dict) or got.get("status") not in NODE_STATUSES:
        what = type(got).__name__ if not isinstance(got, dict) else "a document without status"
        ans.status = FAILED
        ans.reason = f"malformed answer: {what}, not a bind document"
        return
    ans.doc = got


@dataclass(frozen=True)
class Row:
    node: str
    node_id: str
    address: str
    status: str
    reason: str | None
    host: str | None = None  # the hostname the node's task saw
    workers: int | None = None
    threads_bound: int | None = None
    threads_total: int | None = None
    verified: bool | None = None  # None: a dry run, or no answer
    seconds: float | None = None
    bind: dict[str, Any] | None = None  # the node's `bind --workers --json` document
    extra: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "node_id": self.node_id,
            "address": self.address,
            "host": self.host,
            "status": self.status,
            "reason": self.reason,
            "workers": self.workers,
            "threads_bound": self.threads_bound,
            "threads_total": self.threads_total,
            "verified": self.verified,
            "seconds": self.seconds,
            **dict(self.extra),
            "bind": self.bind,
        }


def _int(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{what} is not a count")
    return v


def conforms(value: object, t: Any) -> bool:
    """Whether value has the shape of type t as documents.py declares documents (a TypedDict,
    its Annotated keys, `Like(...)` shapes, cpulists): a node's answer is printed inside this
    document only when it is the `bind --workers --json` document its schema says."""
    import re
    import types
    import typing

    from ascendtune.app import documents as d

    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        meta = t.__metadata__
        like = next((m.shape for m in meta if isinstance(m, d.Like)), None)
        cpulist = r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?"
        if d.CPULIST in meta and isinstance(value, str) and not re.fullmatch(cpulist, value):
            return False
        base = t.__origin__
        if like is None:
            return conforms(value, base)
        if value is None:
            return type(None) in typing.get_args(base)
        if isinstance(value, list):
            return typing.get_origin(base) is list and all(conforms(v, like) for v in value)
        return conforms(value, like)
    if t is Any:
        return True
    if t is type(None):
        return value is None
    if t is bool:
        return isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t is str:
        return isinstance(value, str)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            isinstance(k, str) and conforms(v, args[1]) for k, v in value.items()
        )
    if typing.is_typeddict(t):
        if not isinstance(value, dict):
            return False
        hints = typing.get_type_hints(t, include_extras=True)
        if set(value) - set(hints) or t.__required_keys__ - set(value):
            return False
        return all(conforms(v, hints[k]) for k, v in value.items())
    return False


def _facts(bind: object, apply: bool) -> tuple[int, int, int, list[str], bool]:
    """(workers, threads bound, threads total, each failing worker's 'PID n: why', every
    worker verified) of a node's `bind --workers --json` document; ValueError when it is not
    one, or not the kind asked (a dry run's answer to --apply)."""
    from ascendtune.app.documents import BindWorkersDocument

    if not isinstance(bind, dict) or not isinstance(bind.get("workers"), list):
        raise ValueError("no workers list")
    if not conforms(bind, BindWorkersDocument):
        raise ValueError("not a bind --workers document")
    if bind.get("dry_run") is not (not apply):
        raise ValueError(
            "a dry run's answer to --apply" if apply else "a bind's answer to a dry run"
        )
    bound = total = 0
    bad: list[str] = []
    verified = True
    for w in bind["workers"]:
        if not isinstance(w, dict):
            raise ValueError("a worker that is no object")
        pid = _int(w.get("pid"), "pid")
        t_bound = _int(w.get("threads_bound"), "threads_bound")
        t_total = _int(w.get("threads_total"), "threads_total")
        if t_bound > t_total:
            raise ValueError("more threads bound than threads")
        bound, total = bound + t_bound, total + t_total
        error = w.get("error")
        if error is not None and not isinstance(error, str):
            raise ValueError("an error that is no text")
        ok = w.get("verified") is True and error is None and t_bound == t_total
        if apply and not ok:
            verified = False
            bad.append(f"PID {pid}: {error or 'not verified'}")
        elif not apply and error is not None:
            bad.append(f"PID {pid}: {error}")
    if not bind["workers"]:
        raise ValueError("an empty workers list")
    return len(bind["workers"]), bound, total, bad, verified


def judge(ans: NodeAnswer, apply: bool) -> Row:
    """One node's row from its answer: verified only when the node's own document says every
    worker was bound and verified from the kernel, and says so in the expected shape."""
    base: dict[str, Any] = {
        "node": ans.hostname,
        "node_id": ans.node_id,
        "address": ans.address,
        "seconds": ans.seconds,
    }
    doc = ans.doc
    if doc is None:
        status = ans.status if ans.status in (FAILED, NO_ANSWER) else FAILED
        return Row(status=status, reason=ans.reason or "no answer", **base)
    host = doc.get("hostname") if isinstance(doc.get("hostname"), str) else None
    extra = tuple(
        (k, doc[k])
        for k in ("replayed", "pids", "ray_version", "python", "ascendtune", "live")
        if k in doc and isinstance(doc[k], (str, int, float, bool, list))
    )
    base.update(host=host, extra=extra)
    reason = doc.get("reason") if isinstance(doc.get("reason"), str) else None
    status = doc["status"]
    if status != "ok":
        return Row(
            status=status, reason=reason or status, verified=False if apply else None, **base
        )
    bind = doc.get("bind")
    try:
        n, bound, total, bad, verified = _facts(bind, apply)
    except ValueError as e:
        return Row(status=FAILED, reason=f"malformed answer: {e}", verified=False, **base)
    assert isinstance(bind, dict)
    counts: dict[str, Any] = {
        "workers": n,
        "threads_bound": bound,
        "threads_total": total,
        "bind": bind,
    }
    if bad:
        why = f"{len(bad)} of {n} workers not bound: " + "; ".join(bad[:3])
        return Row(status=FAILED, reason=why, verified=False if apply else None, **base, **counts)
    if apply:
        return Row(status=VERIFIED, reason=None, verified=verified, **base, **counts)
    change = sum(1 for w in bind["workers"] if w.get("changed") is True)
    why = f"{change} of {n} workers would change" if change else "every worker is on its plan"
    return Row(status=PLANNED, reason=why, verified=None, **base, **counts)


@dataclass(frozen=True)
class FleetBindReport:
    apply: bool
    rows: tuple[Row, ...]
    ray: dict[str, Any]
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return 0 if all(r.status in GOOD for r in self.rows) else 1

    @property
    def error(self) -> AscendtuneError | None:
        return None  # failed nodes are rows of the report

    def summary(self) -> dict[str, int]:
        s = {"nodes": len(self.rows), **{k: 0 for k in STATUSES}}
        for r in self.rows:
            s[r.status] += 1
        s["workers"] = sum(r.workers or 0 for r in self.rows)
        s["threads_bound"] = sum(r.threads_bound or 0 for r in self.rows)
        s["threads_total"] = sum(r.threads_total or 0 for r in self.rows)
        return s


def report_of(got: Gathered, apply: bool) -> FleetBindReport:
    rows = tuple(
        judge(a, apply) for a in sorted(got.answers, key=lambda a: (a.hostname, a.node_id))
    )
    ray = {
        "address": got.address,
        "driver_ray": got.driver_ray,
        "shipped": got.shipped,
        "seconds": round(got.seconds, 3),
    }
    return FleetBindReport(apply, rows, ray, tuple(got.notes))


def document(report: FleetBindReport) -> dict[str, Any]:
    """`fleet bind --workers --json` without schema_version (the printer adds it)."""
    from ascendtune.core.redact import redact_doc

    doc: dict[str, Any] = redact_doc(
        {
            "mode": "ray",
            "apply": report.apply,
            "ray": report.ray,
            "nodes": [r.to_json() for r in report.rows],
            "summary": report.summary(),
            "notes": list(report.notes),
        }
    )
    return doc


def run(opts: FleetBindOptions) -> FleetBindReport:
    """`fleet bind --workers [--apply]` over the Ray cluster."""
    from ascendtune.app.plan import check_policy
    from ascendtune.host import ray_fleet

    check_policy(opts.plan.policy)
    if opts.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if opts.max_passes < 1:
        raise UsageError("--max-passes must be 1 or more")
    address = ray_fleet.resolve_address(opts.ray_address)
    task = ray_fleet.Task(bind_here, (request_of(opts),), accept, "ascendtune-fleet-bind", "bind")
    got = ray_fleet.run_tasks(
        address,
        task,
        timeout=opts.timeout,
        nodes=list(opts.nodes) or None,
        ship=opts.ship,
        connect_deadline=min(30.0, max(opts.timeout, 5.0)),
    )
    if opts.apply:
        for a in got.answers:
            if a.status == NO_ANSWER and a.reason and a.reason.startswith("no answer in"):
                a.reason += " (its bind was stopped: its workers may be partly bound)"
    return report_of(got, opts.apply)
