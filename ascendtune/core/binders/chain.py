"""The chain: every binder found on a worker run in the order the worker meets them, the mask
each leaves per thread class, the winner, the conflicts as findings, and the switches that leave
one owner."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ascendtune.core.binders import (
    afd,
    ascendtune,
    cgroup,
    mindie,
    omp,
    outer,
    sglang,
    torch_npu,
    ucm,
    vllm_ascend,
    vllm_numa,
)
from ascendtune.core.binders.model import (
    BORN,
    CLASSES,
    OWNERS,
    STAGES,
    Action,
    Masks,
    Owner,
    Stage,
    Worker,
)
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.findings import Severity

# every binder, one module each, in the order they act within a stage
MODULES = (
    cgroup,
    outer,
    ascendtune,
    vllm_numa,
    omp,
    sglang,
    mindie,
    afd,
    torch_npu,
    vllm_ascend,
    ucm,
)
BINDERS = tuple(m.INFO for m in MODULES)

ON = {
    "vllm-ascend": "--additional-config '{\"enable_cpu_binding\": true}'",
    "torch_npu": "export CPU_AFFINITY_CONF=2 with this card's range (`ascendtune plan --emit cpu-affinity-conf`)",
    "ascendtune": "once the server is up: ascendtune bind --workers (`ascendtune plan --emit vllm`)",
    "outer": "start it under the plan's wrapper (`ascendtune plan --emit taskset|numactl|systemd|docker`)",
}


class ChainFinding(NamedTuple):
    code: str
    severity: Severity
    binders: tuple[str, ...]
    message: str
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "binders": list(self.binders),
            "message": self.message,
            "hint": self.hint,
        }


class Switch(NamedTuple):
    binder: str
    switch: str


class Chain(NamedTuple):
    worker: Worker
    actions: tuple[Action, ...]
    steps: tuple[Masks, ...]  # the masks after each action
    predicted: Masks
    observed: dict[str, CpuSet] | None
    winners: dict[str, str | None]
    findings: tuple[ChainFinding, ...]
    switches: dict[str, tuple[Switch, ...]]
    owner: Owner
    owner_reason: str
    # per thread class, (action index, mask) of every action that sets it, in chain order (a
    # class born after a main-thread-only action counts its inherited mask)
    set_by: Mapping[str, tuple[tuple[int, CpuSet | None], ...]] = MappingProxyType({})

    @property
    def winner(self) -> str | None:
        return self.winners.get("main")

    def to_json(self, owner: str | None = None) -> dict[str, Any]:
        own = owner or self.owner
        return {
            "pid": self.worker.pid,
            "binders": [
                {
                    "order": i + 1,
                    "id": a.binder.id,
                    "name": a.binder.name,
                    "stage": a.when,
                    "config": a.config,
                    "outcome": a.outcome,
                    "on_narrower": a.binder.on_narrower,
                    "masks": {c: _cpus(v) for c, v in a.masks.items()},
                    "leaves": {c: _cpus(self.steps[i][c]) for c in CLASSES},
                    "note": a.note,
                    "evidence": [e.to_json() for e in a.binder.evidence],
                }
                for i, a in enumerate(self.actions)
            ],
            "predicted": {c: _cpus(self.predicted[c]) for c in CLASSES},
            "observed": (
                {c: format_cpulist(v) for c, v in self.observed.items()}
                if self.observed is not None
                else None
            ),
            "winner": self.winner,
            "winners": dict(self.winners),
            "findings": [f.to_json() for f in self.findings],
            "owner": own,
            "owner_reason": self.owner_reason if owner is None else "given with --owner",
            "switches": [s._asdict() for s in self.switches[own]],
            "switches_by_owner": {o: [s._asdict() for s in self.switches[o]] for o in OWNERS},
        }


def _cpus(v: CpuSet | None) -> str | None:
    return None if v is None else format_cpulist(v)


def _stage_of(mod: Any, w: Worker) -> Stage:
    if (mod is vllm_ascend or mod is ucm) and w.vllm_ascend is not None:
        return vllm_ascend.stage_of(w.vllm_ascend)
    if mod is ascendtune:
        return "launch"
    stage: Stage = mod.INFO.acts
    return stage


def run(w: Worker, owner: Owner | None = None) -> Chain:
    """The chain of binders of one worker, predicted and (when threads are given) observed."""
    masks: Masks = dict.fromkeys(CLASSES, w.frame)
    actions: list[Action] = []
    steps: list[Masks] = []
    set_by: dict[str, list[tuple[int, CpuSet | None]]] = {c: [] for c in CLASSES}
    for si, stage in enumerate(STAGES):
        for mod in MODULES:
            if _stage_of(mod, w) != stage:
                continue
            a = mod.act(w, dict(masks))
            if a is None:
                continue
            i = len(actions)
            actions.append(a)
            for c, v in a.masks.items():
                masks[c] = v
                set_by[c].append((i, v))
            if a.main_only and "main" in a.masks:
                for c in CLASSES:
                    if c not in a.masks and BORN[c] > si:
                        masks[c] = a.masks["main"]
                        set_by[c].append((i, a.masks["main"]))
            steps.append(dict(masks))
    observed = observe(w)
    winners = {c: (actions[set_by[c][-1][0]].binder.id if set_by[c] else None) for c in CLASSES}
    chosen, reason = _owner(w, actions, winners, owner)
    switches: dict[str, tuple[Switch, ...]] = {o: _switches(w, actions, o) for o in OWNERS}
    findings = _findings(w, actions, set_by, masks, observed, winners, switches[chosen], chosen)
    return Chain(
        w, tuple(actions), tuple(steps), masks, observed, winners, tuple(findings), switches,
        chosen, reason, {c: tuple(v) for c, v in set_by.items()},
    )  # fmt: skip


def thread_class(tid: int, name: str, pid: int | None) -> str:
    """A thread's class by its name: the main thread is the PID's; the interpreter's name on
    another thread is read as an OpenMP pool thread (libgomp does not rename its threads)."""
    if pid is not None and tid == pid:
        return "main"
    if name in ("acl_thread", "release_thread"):
        return "acl"
    if name.startswith("ucm_"):
        return "plugin"
    if name.startswith("python") or name == "pt_main_thread":
        return "omp"
    return "rest"


def observe(w: Worker) -> dict[str, CpuSet] | None:
    if w.threads is None:
        return None
    out: dict[str, CpuSet] = {}
    for t in w.threads:
        c = thread_class(t.tid, t.name, w.pid)
        out[c] = out.get(c, frozenset()) | t.cpus
    return {c: out[c] for c in CLASSES if c in out}


def _family(a: Action) -> str:
    return a.binder.family or a.binder.id


def _owner(
    w: Worker, actions: list[Action], winners: Mapping[str, str | None], given: Owner | None
) -> tuple[Owner, str]:
    if given is not None:
        return given, "given with --owner"
    by_id = {a.binder.id: a for a in actions}
    win = winners.get("main")
    if win is not None and win != "cgroup":
        a = by_id[win]
        fam = a.binder.family
        if fam in OWNERS and a.outcome in ("binds", "splits", "narrows"):
            assert fam is not None
            return fam, f"it binds the main thread last ({a.binder.name})"
    if w.vllm_ascend is not None and w.vllm_ascend.binding.ships and w.is_arm is not False:
        return "vllm-ascend", f"{w.vllm_ascend.name} ships a binding that knows the NPU topology"
    return "ascendtune", "no binder in the chain binds by the NPU topology"


def _switches(w: Worker, actions: list[Action], owner: str) -> tuple[Switch, ...]:
    out: list[Switch] = []
    seen: set[str] = set()
    for a in actions:
        if a.binder.id == "cgroup" or a.binder.id in seen:
            continue
        if _family(a) == owner and a.binder.id != "ucm":
            continue
        if a.binder.id == "ucm" and owner == "vllm-ascend":
            continue  # inside vLLM-Ascend's binding; its split is a finding of its own
        if a.binder.id == "vllm-numa-bind" and owner == "vllm-ascend" and w.vllm_ascend:
            continue  # on Ascend the flag only turns the owner's binding on
        seen.add(a.binder.id)
        out.append(Switch(a.binder.id, a.binder.off))
    owned = [a for a in actions if _family(a) == owner]
    if not owned:
        out.append(Switch(owner, ON[owner]))
    if owner == "vllm-ascend" and w.vllm_ascend is not None and not w.vllm_ascend.binding.ships:
        out.append(
            Switch("vllm-ascend", f"{w.vllm_ascend.name} ships no binding: choose another owner")
        )
    return tuple(out)


def _findings(
    w: Worker,
    actions: list[Action],
    set_by: dict[str, list[tuple[int, CpuSet | None]]],
    final: Masks,
    observed: dict[str, CpuSet] | None,
    winners: Mapping[str, str | None],
    switches: tuple[Switch, ...],
    owner: str,
) -> list[ChainFinding]:
    out: list[ChainFinding] = []
    fix = "; ".join(s.switch for s in switches) or "nothing to change"
    families: dict[str, Action] = {}
    for a in actions:
        if (a.binder.id != "cgroup" and a.outcome != "unknown") or a.binder.id == "vllm-numa-bind":
            families.setdefault(_family(a), a)
    real = [a for a in families.values() if a.binder.id != "vllm-numa-bind"]
    for a in actions:
        if a.outcome == "pins":
            cpu = a.masks.get("main")
            where = f"CPU {min(cpu)}" if cpu else "the first CPU of its mask"
            after = [
                b.binder.name
                for b in actions
                if actions.index(b) > actions.index(a) and b.outcome in ("skips", "fails")
            ]
            out.append(
                ChainFinding(
                    "binders-pin-first-cpu",
                    "warning",
                    (a.binder.id,),
                    f"{a.config} pins the main thread to {where} at `import torch` (libgomp); "
                    f"every thread it starts later runs there too"
                    + (f"; then {', '.join(after)} find only that CPU" if after else ""),
                    omp.INFO.off,
                )
            )
        elif a.outcome == "skips":
            out.append(
                ChainFinding(
                    "binders-silent-skip",
                    "warning",
                    (a.binder.id,),
                    f"{a.binder.name}: {a.note}",
                    fix,
                )
            )
        elif a.outcome == "fails":
            out.append(
                ChainFinding(
                    "binders-fails",
                    "warning",
                    (a.binder.id,),
                    f"{a.binder.name} ({a.config}) fails: {a.note}",
                    fix,
                )
            )
        elif a.outcome == "splits":
            out.append(
                ChainFinding(
                    "binders-split-pool",
                    "warning",
                    ("vllm-ascend", a.binder.id),
                    f"{a.binder.name} splits the worker's main pool: {a.note}",
                    "keep the split only if the ucm_* threads need their own CPUs; else "
                    + ucm.INFO.off,
                )
            )
    if len(real) >= 2:
        order = ", ".join(f"{a.binder.name} [{a.config}] ({a.when})" for a in real)
        out.append(
            ChainFinding(
                "binders-conflict",
                "warning",
                tuple(a.binder.id for a in real),
                f"{len(real)} binders act on this worker, in this order: {order}; the main "
                f"thread ends with {winners.get('main') or 'no binder'}'s mask",
                f"leave one owner ({owner}): {fix}",
            )
        )
    # a binder whose mask a later one replaces with CPUs outside it
    for c in ("main", "acl"):
        sets = set_by[c]
        for (i, m1), (j, m2) in itertools.pairwise(sets):
            a, b = actions[i], actions[j]
            if a is b or a.binder.id == "cgroup" or m1 is None or m2 is None:
                continue
            if not m2 <= m1:
                out.append(
                    ChainFinding(
                        "binders-undone",
                        "warning",
                        (a.binder.id, b.binder.id),
                        f"{b.binder.name} undoes {a.binder.name} on the {c} thread: "
                        f"{format_cpulist(m1)} becomes {format_cpulist(m2)}",
                        f"leave one owner ({owner}): {fix}",
                    )
                )
    first = next(
        (
            a
            for a in actions
            if a.binder.id != "cgroup" and "main" in a.masks and a.outcome in ("binds", "pins")
        ),
        None,
    )
    if first is not None and STAGES.index(first.when) >= STAGES.index("after warm-up"):
        moved = (
            w.vllm_ascend is not None
            and first.binder.id == "vllm-ascend"
            and w.vllm_ascend.binding.migrate_memory
        )
        out.append(
            ChainFinding(
                "binders-first-touch",
                "info",
                (first.binder.id,),
                f"the first binder of the main thread, {first.binder.name}, acts {first.when}: "
                "the weights and buffers were first-touched on whatever node the unbound "
                "threads ran"
                + (
                    "; vLLM-Ascend then migrates the worker's pages (migratepages)" if moved else ""
                ),
                "bind before exec to place memory from the start: ascendtune bind --rank R -- COMMAND",
            )
        )
    if observed is not None:
        diff = [
            c
            for c in CLASSES
            if c in observed and final.get(c) is not None and observed[c] != final[c]
        ]
        if diff:
            words = "; ".join(
                f"{c}: predicted {format_cpulist(final[c] or ())}, observed {format_cpulist(observed[c])}"
                for c in diff
            )
            out.append(
                ChainFinding(
                    "binders-observed-differs",
                    "warning" if "main" in diff else "info",
                    (),
                    f"the masks read differ from the chain's prediction ({words}): a binder "
                    "not found here, or one that has not acted yet",
                    "`ascendtune bind --pid PID --show` reads every thread's mask back",
                )
            )
        cpus = frozenset().union(*observed.values()) if observed else frozenset()
        frame = w.frame
        if (
            len(cpus) == 1
            and not any(a.outcome == "pins" for a in actions)
            and (frame is None or len(frame) > 1)
        ):
            out.append(
                ChainFinding(
                    "binders-pinned-one-cpu",
                    "warning",
                    (),
                    f"every thread runs on CPU {min(cpus)} alone and no binder found explains it"
                    + ("" if w.env_known else " (the worker's environment was not read)")
                    + ": OMP_PROC_BIND / GOMP_CPU_AFFINITY at `import torch` do this",
                    omp.INFO.off,
                )
            )
    return out
