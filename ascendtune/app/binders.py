"""The binder chain of a worker: built from a live PID, a worker of a sysroot, or a command line
with its environment; the doctor rows (`--section binders`), check-config's chain and `explain
binders`. The chain itself is pure (core/binders); this module gathers its facts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.binders import Chain, Owner, Pool, Worker
    from ascendtune.core.cpulist import CpuSet
    from ascendtune.core.doctor import Check, WorkerFacts
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.model import Host
    from ascendtune.core.vllm_ascend import VllmAscendVersion
    from ascendtune.host.roots import Root

SECTION = "binders"


def check_owner(owner: str | None) -> Owner | None:
    from ascendtune.core.binders import OWNERS

    if owner is None:
        return None
    if owner not in OWNERS:
        raise UsageError(f"--owner {owner}: expected one of {', '.join(OWNERS)}")
    return owner  # type: ignore[return-value]


def parse_env_pairs(pairs: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """`--env KEY=VALUE` options."""
    out: dict[str, str] = {}
    for p in pairs or ():
        key, eq, value = p.partition("=")
        if not eq or not key:
            raise UsageError(f"--env {p}: expected KEY=VALUE")
        out[key] = value
    return out


def leading_env(argv: list[str] | tuple[str, ...]) -> dict[str, str]:
    """NAME=VALUE words in front of a command line (`OMP_PROC_BIND=TRUE vllm serve ...`), and
    after `env`."""
    out: dict[str, str] = {}
    for a in argv:
        if a == "env":
            continue
        key, eq, value = a.partition("=")
        if not eq or a.startswith("-") or not key.replace("_", "").isalnum():
            break
        out[key] = value
    return out


def cpu_binding_of(argv: list[str] | tuple[str, ...]) -> bool | None:
    """enable_cpu_binding as a `vllm serve` command line's --additional-config sets it."""
    from ascendtune.core.vllm_config import inputs

    try:
        parsed = inputs.parse_cmdline(list(argv), "command line")
    except Exception:  # a command line the parser refuses says nothing of the key
        return None
    if parsed.config_text is None:
        return None
    try:
        cfg = json.loads(parsed.config_text)
    except ValueError:
        return None
    v = cfg.get("enable_cpu_binding") if isinstance(cfg, dict) else None
    return v if isinstance(v, bool) else None


# ---- pools: vLLM-Ascend's plan for the worker inside the mask it inherits --------------------


class _Planner:
    """vLLM-Ascend's pool for one device given the mask the worker inherits (the cpuset's pool
    comes from the plan doctor already made)."""

    def __init__(self, host: Host, entry: VllmAscendVersion, root: Root | None) -> None:
        self.host, self.entry, self.root = host, entry, root
        self.cache: dict[frozenset[int], Any] = {}

    def pool(self, device: int, mask: CpuSet | None) -> Pool | str | None:
        from ascendtune.core.binders import Pool

        allowed = self.host.cpus_allowed if mask is None else (mask & self.host.cpus_allowed)
        plan = self._plan(frozenset(allowed))
        if isinstance(plan, str):
            return str(plan)
        for r in plan.ranks:
            if r.device == device:
                if r.skipped:
                    return str(r.skipped)
                roles = r.roles
                return Pool(frozenset(roles.main), frozenset(roles.acl), frozenset(roles.release))
        return None

    def _plan(self, allowed: frozenset[int]) -> Any:
        if allowed in self.cache:
            return self.cache[allowed]
        from ascendtune.app.options import PlanOptions
        from ascendtune.app.plan import build_request
        from ascendtune.core.errors import AscendtuneError
        from ascendtune.core.planner import make_plan

        host = self.host._replace(cpus_allowed=allowed)
        try:
            req = build_request(
                host, PlanOptions(policy="vllm-ascend", target=self.entry.name), self.root
            )
            got: Any = make_plan(host, req)
        except AscendtuneError as e:
            got = e.message
        self.cache[allowed] = got
        return got


# ---- a worker of a host ---------------------------------------------------------------------


def _serve_argv(root: Root, wf: WorkerFacts) -> tuple[str, ...]:
    """The `vllm serve` command line above a worker (its own, or a parent's)."""
    from ascendtune.core.vllm_config.inputs import is_vllm

    if wf.command and is_vllm(list(wf.command)) and len(wf.command) > 2:
        return wf.command
    for a in wf.ancestors:
        text = root.read_text(f"proc/{a.pid}/cmdline") or ""
        argv = [x for x in text.split("\0") if x]
        if argv and is_vllm(argv) and "serve" in argv:
            return tuple(argv)
    return wf.command


def _is_vllm_worker(wf: WorkerFacts, serve: tuple[str, ...]) -> bool:
    words = " ".join((wf.comm or "", *wf.command[:2], *serve[:3])).lower()
    return "vllm" in words


def worker_of(
    root: Root,
    host: Host | None,
    wf: WorkerFacts,
    entry: VllmAscendVersion | None,
    planner: _Planner | None,
) -> Worker:
    from ascendtune.core.binders import Worker
    from ascendtune.host.binder_facts import read

    facts = read(root, wf.pid)
    serve = _serve_argv(root, wf)
    env = facts.env
    visible_text = env.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    ids = sorted(a.logical_id for a in host.accelerators) if host is not None else []
    visible = len([x for x in visible_text.split(",") if x.strip()]) if visible_text else len(ids)
    device = wf.devices[0] if wf.devices else None
    card = ids.index(device) if device is not None and device in ids else None
    is_vllm = _is_vllm_worker(wf, serve)
    pool_for = None
    if planner is not None and device is not None and is_vllm:
        dev = device
        pool_for = lambda mask: planner.pool(dev, mask)  # noqa: E731
    return Worker(
        argv=serve,
        wrappers=facts.wrappers,
        env=env,
        env_known=facts.env_known,
        plugins=facts.plugins,
        arch=host.arch if host is not None else None,
        cpus_online=host.cpus_online if host is not None else None,
        # the worker's own cpuset; unknown, the one ascendtune reads for itself (in a
        # container, the same)
        cpuset=wf.cpuset if wf.cpuset is not None or host is None else host.cgroup_cpuset,
        cgroup=wf.cgroup,
        numa={n.id: frozenset(n.cpus) for n in host.numa_nodes} if host is not None else {},
        npus_visible=visible or None,
        card=card,
        vllm_ascend=entry if is_vllm else None,
        cpu_binding=cpu_binding_of(serve) if is_vllm else None,
        pool_for=pool_for,
        threads=wf.threads,
        pid=wf.pid,
        torch_npu=facts.plugins.get("torch_npu"),
    )


def doctor_checks(
    root: Root, host: Host | None, workers: list[WorkerFacts], target: VllmAscendVersion | None
) -> list[Check]:
    """One `binders:PID` row per worker: the chain, its winner, its conflicts and switches."""
    from ascendtune.core.binders import run
    from ascendtune.core.doctor import Check

    planner = _Planner(host, target, root) if host is not None and target is not None else None
    rows: list[Check] = []
    for wf in workers:
        if not wf.present:
            continue
        chain = run(worker_of(root, host, wf, target, planner))
        rows.append(check_of(chain))
    if not rows:
        rows.append(
            Check("binders", "skip", None, "a running worker", None, SECTION, "no worker found")
        )
    return rows


def check_of(chain: Chain) -> Check:
    from ascendtune.core.doctor import Check

    order = " → ".join(f"{a.binder.id} ({a.when})" for a in chain.actions) or "none"
    warn = any(f.severity in ("warning", "error") for f in chain.findings)
    value = f"{order}; main thread: {chain.winner or 'unbound'}"
    if not chain.worker.env_known:
        value += " (environment not recorded)"
    detail = "; ".join(f.message for f in chain.findings) or None
    fix = None
    if warn:
        words = "; ".join(s.switch for s in chain.switches[chain.owner]) or next(
            f.hint for f in chain.findings if f.severity == "warning"
        )
        # a change to how the server is launched, not a command for the running worker: a
        # comment, so that what doctor prints for pasting stays harmless as pasted
        fix = "# in the server's launch: " + " ".join(words.split())
    return Check(
        f"binders:{chain.worker.pid}",
        "warn" if warn else "ok",
        value,
        f"one owner ({chain.owner})",
        fix,
        SECTION,
        detail,
        chain.to_json(),
    )


# ---- a command line, a PID ------------------------------------------------------------------


def chain_of_cmdline(
    argv: list[str] | tuple[str, ...],
    *,
    env: Mapping[str, str],
    env_known: bool,
    arch: str | None,
    entry: VllmAscendVersion | None,
    cpu_binding: bool | None = None,
    owner: Owner | None = None,
) -> Chain:
    """The chain a `vllm serve ...` line (wrappers in front included) would start with."""
    from ascendtune.core.binders import Worker, run

    merged = {**env, **leading_env(argv)}
    return run(
        Worker(
            argv=tuple(argv),
            env=merged,
            env_known=env_known or bool(merged),
            arch=arch,
            vllm_ascend=entry,
            cpu_binding=cpu_binding if cpu_binding is not None else cpu_binding_of(argv),
        ),
        owner,
    )


def binders_of_check(
    opts: Any,
    root: Root | None,
    argv: list[str],
    facts: Any,
    entry: VllmAscendVersion,
    cfg: Mapping[str, Any],
    owner: Owner | None,
) -> Chain:
    """check-config's chain: the command line's (its wrappers, its NAME=VALUE words, --env and
    --env-file), or the PID's as it runs."""
    binding = cfg.get("enable_cpu_binding")
    on = binding if isinstance(binding, bool) else None
    if opts.pid is not None and root is not None:
        return chain_of_pid(root, opts.pid, entry, owner)
    known = facts.env_source in ("file", "pid")
    return chain_of_cmdline(
        argv,
        env=facts.env if known else {},
        env_known=known,
        arch=facts.arch,
        entry=entry,
        cpu_binding=on,
        owner=owner,
    )


def chain_of_pid(
    root: Root, pid: int, entry: VllmAscendVersion | None, owner: Owner | None = None
) -> Chain:
    """The chain of a running (or captured) process, any process: its threads are read."""
    from ascendtune.core.errors import AscendtuneError, MissingError
    from ascendtune.host.reader import read_host
    from ascendtune.host.workers import find_workers

    if root.read_text(f"proc/{pid}/status") is None and not root.read_text(f"proc/{pid}/cmdline"):
        raise MissingError(
            f"no process with PID {pid} (on {root.describe()})", "check the PID with `ps`"
        )
    host: Host | None
    try:
        host = read_host(root)
    except AscendtuneError:
        host = None
    found = [w for w in find_workers(root, host) if w.pid == pid]
    wf = found[0] if found else _facts_of(root, pid)
    planner = _Planner(host, entry, root) if host is not None and entry is not None else None
    from ascendtune.core.binders import run

    return run(worker_of(root, host, wf, entry, planner), owner)


def chains_of(root: Root, pids: list[int], target: str = "auto") -> dict[int, Chain | str]:
    """Each PID's chain (what `watch` attributes masks with), the host, its workers and the
    vLLM-Ascend release read once for all; a PID whose chain cannot be read, why not."""
    from ascendtune.core.binders import run as run_chain
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.host.reader import read_host
    from ascendtune.host.vllm_detect import resolve_target
    from ascendtune.host.workers import find_workers

    try:
        host = read_host(root)
        found = {w.pid: w for w in find_workers(root, host, threads=False) if w.present}
        entry = resolve_target(root, target, pids).entry
    except AscendtuneError as e:
        return dict.fromkeys(pids, e.message)
    planner = _Planner(host, entry, root)
    out: dict[int, Chain | str] = {}
    for pid in pids:
        try:
            wf = found.get(pid) or _facts_of(root, pid)
            out[pid] = run_chain(worker_of(root, host, wf, entry, planner))
        except AscendtuneError as e:
            out[pid] = e.message
    return out


def _facts_of(root: Root, pid: int) -> WorkerFacts:
    """A process that holds no accelerator, read as doctor reads a worker."""
    from ascendtune.host.binder_facts import process_facts

    return process_facts(root, pid)


# ---- explain binders -------------------------------------------------------------------------


class BindersOptions(NamedTuple):
    pid: int | None = None
    cmdline: str | None = None
    env: tuple[str, ...] = ()
    owner: str | None = None
    target: str = "auto"
    arch: str | None = None
    sysroot: str | None = None
    demo: str | None = None


class BindersReport(NamedTuple):
    chains: list[Chain]
    owner: Owner | None
    where: str

    @property
    def exit_code(self) -> int:
        return 0

    @property
    def error(self) -> AscendtuneError | None:
        return None


def run(opts: BindersOptions) -> BindersReport:
    """`explain binders`: every binder ascendtune models, and the chain of the PID, the
    command line, or every worker of the host."""
    from ascendtune.app.hosts import open_root
    from ascendtune.app.source import HostSource
    from ascendtune.core import vllm_ascend

    owner = check_owner(opts.owner)
    if opts.pid is not None and opts.cmdline is not None:
        raise UsageError("give --pid or --cmdline, not both")
    if opts.cmdline is not None:
        from ascendtune.core.vllm_config.inputs import split_cmdline

        argv = split_cmdline(opts.cmdline)
        entry = vllm_ascend.NEWEST if opts.target == "auto" else vllm_ascend.get(opts.target)
        env = parse_env_pairs(opts.env)
        chain = chain_of_cmdline(
            argv, env=env, env_known=bool(env), arch=opts.arch, entry=entry, owner=owner
        )
        return BindersReport([chain], owner, "--cmdline")
    root = open_root(HostSource(sysroot=opts.sysroot, demo=opts.demo))
    from ascendtune.host.vllm_detect import resolve_target

    pids = [opts.pid] if opts.pid is not None else []
    entry = resolve_target(root, opts.target, pids).entry
    if opts.pid is not None:
        return BindersReport([chain_of_pid(root, opts.pid, entry, owner)], owner, root.describe())
    from ascendtune.core.binders import run as run_chain
    from ascendtune.host.reader import read_host
    from ascendtune.host.workers import find_workers

    host = read_host(root)
    planner = _Planner(host, entry, root)
    chains = [
        run_chain(worker_of(root, host, wf, entry, planner), owner)
        for wf in find_workers(root, host)
        if wf.present
    ]
    return BindersReport(chains, owner, root.describe())


def document(report: BindersReport) -> dict[str, Any]:
    from ascendtune.core.binders import BINDERS, CLASS_WORDS, STAGES

    return {
        "kind": "binders",
        "root": report.where,
        "stages": list(STAGES),
        "thread_classes": dict(CLASS_WORDS),
        "binders": [b.to_json() for b in BINDERS],
        "workers": [c.to_json(report.owner) for c in report.chains],
    }
