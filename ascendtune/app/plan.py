"""`plan`: from plan options and a host to a plan, every policy side by side, and their documents."""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import THIS_HOST, HostSource, PlanOptions
from ascendtune.app.planchoices import (  # re-exported: the plan's vocabulary
    AUTO as AUTO,
)
from ascendtune.app.planchoices import (
    COMPARE as COMPARE,
)
from ascendtune.app.planchoices import (
    SOC_NAMES as SOC_NAMES,
)
from ascendtune.app.planchoices import (
    policy_choices as policy_choices,
)
from ascendtune.app.planchoices import (
    visible_list as visible_list,
)
from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.errors import (
    AscendtuneError,
    InvalidInput,
    MissingError,
    ParseError,
    PlanError,
    UsageError,
)
from ascendtune.core.planner import POLICIES, POLICY_NAMES, compare_policies, make_plan

if TYPE_CHECKING:
    from ascendtune.app.documents import PlanBody, PlanCompareBody, PlanPod
    from ascendtune.app.hosts import Loaded
    from ascendtune.core.model import Host
    from ascendtune.core.planner import Plan, PlanRequest
    from ascendtune.core.vllm_config.inputs import Cmdline
    from ascendtune.host.roots import Root
    from ascendtune.host.vllm_detect import TargetChoice


class PlanCommandOptions(NamedTuple):
    """`plan`: the host, how to plan it (`plan.policy` "compare": every policy side by side),
    and `--emit KIND` (ready-to-paste lines for the plan)."""

    source: HostSource = THIS_HOST
    plan: PlanOptions = PlanOptions()
    emit: str | None = None
    pod: str | None = None  # plan inside this Kubernetes pod's cpuset (NAME, NS/NAME or UID)
    owner: str | None = None  # --owner: the other binders switched off in the --emit lines


def check_policy(policy: str, *, compare: bool = False) -> None:
    if policy not in policy_choices(compare=compare):
        raise UsageError(
            f"--policy {policy}: expected one of {', '.join(policy_choices(compare=compare))}"
        )


def resolve_policy(host: "Host", policy: str) -> str:
    if policy != AUTO:
        return policy
    from ascendtune.core import vendors

    return vendors.vendor_of(host).default_policy


def resolve_version(host: "Host", target: str, root: "Root | None") -> "TargetChoice":
    """`--target VERSION|auto`: the version entry and why (JSON `target_reason`). auto: the
    vllm_ascend a worker on the host imports, else the default python's, else the newest."""
    from ascendtune.host.vllm_detect import TargetChoice, resolve_target

    if root is None:
        from ascendtune.core import vllm_ascend

        if target != AUTO:
            return TargetChoice(vllm_ascend.get(target), "given with --target")
        return TargetChoice(vllm_ascend.NEWEST, "newest known (no host to look for vllm_ascend on)")
    return resolve_target(root, target, sorted({p.pid for p in host.processes}))


def _cmdline_facts(text: str | None) -> "Cmdline | None":
    if text is None:
        return None
    from ascendtune.core.vllm_config import inputs

    return inputs.parse_cmdline(inputs.split_cmdline(text), "--cmdline")


def _size(value: int | None, name: str) -> int | None:
    if value is not None and value < 1:
        raise UsageError(f"{name} {value}: a parallel size is at least 1")
    return value


def build_request(host: "Host", opts: PlanOptions, root: "Root | None" = None) -> "PlanRequest":
    """The planner's request for opts on host (policy resolved, lists parsed, SoC checked,
    the vLLM-Ascend version resolved; root is where `--target auto` looks for it)."""
    from ascendtune.core.model import Soc
    from ascendtune.core.planner import PlanRequest

    choice = resolve_version(host, opts.target, root)
    cmd = _cmdline_facts(opts.cmdline)
    dp = _size(opts.dp, "--data-parallel-size") or (cmd.dp if cmd and cmd.dp > 1 else None)
    tp = _size(opts.tp, "--tensor-parallel-size") or (cmd.tp if cmd and cmd.tp > 1 else None)
    pp = _size(opts.pp, "--pipeline-parallel-size") or (cmd.pp if cmd and cmd.pp > 1 else None)
    ids_text = opts.device_ids if opts.device_ids is not None else (cmd.device_ids if cmd else None)
    device_ids = visible_list(ids_text, "--device-ids") if ids_text is not None else None
    busy = visible_list(opts.busy, "--busy") if opts.busy is not None else None

    env = os.environ if opts.env is None else opts.env
    from ascendtune.core import vendors

    env_name = vendors.vendor_of(host).visible_devices_env
    visible = None
    source = "every device"
    if opts.visible_devices is not None:
        visible = visible_list(opts.visible_devices, "--visible-devices")
        source = "--visible-devices"
    elif env.get(env_name, "").strip():
        visible, source = visible_list(env[env_name], env_name), env_name
    soc_value = None
    if opts.soc is not None:
        by_name = {s.value.upper(): s for s in Soc}
        soc_value = by_name.get(opts.soc.strip().upper())
        if soc_value is None or soc_value in (Soc.UNKNOWN, Soc.GPU):
            raise UsageError(f"--soc {opts.soc}: expected one of {', '.join(SOC_NAMES)}")
    reserved: frozenset[int] = frozenset()
    if opts.reserve:
        try:
            reserved = parse_cpulist(opts.reserve, source="--reserve")
        except ParseError as e:
            raise InvalidInput(e.message) from None
    return PlanRequest(
        policy=resolve_policy(host, opts.policy),
        visible=visible,
        ranks=opts.ranks,
        soc=soc_value,
        reserve=reserved,
        irq_reserve=not opts.no_irq_reserve,
        spill=opts.spill,
        visible_source=source,
        dp=dp,
        tp=tp,
        pp=pp,
        device_ids=device_ids,
        busy=busy,
        target=choice.entry,
        target_inferred=choice.inferred,
    )


class Emitted(NamedTuple):
    """`--emit KIND`: the lines that run as pasted."""

    kind: str
    lines: tuple[str, ...]


class PlanReport(NamedTuple):
    """One policy's plan of a host."""

    host: "Host"
    request: "PlanRequest"
    plan: "Plan"
    target_reason: str
    better: str | None = None  # vllm-ascend plans: the policy that beats it, in words
    identity: dict[str, Any] | None = None  # the host it was made for (None: not said)
    emitted: Emitted | None = None
    pod: "PlanPod | None" = None  # `--pod`: the pod whose cpuset was planned

    @property
    def exit_code(self) -> int:
        return 0

    @property
    def error(self) -> AscendtuneError | None:
        return None


def plan(host: "Host", opts: PlanOptions, root: "Root | None" = None) -> PlanReport:
    """One policy's plan of host; raises the planner's errors."""
    check_policy(opts.policy)
    req = build_request(host, opts, root)
    reason = resolve_version(host, opts.target, root).reason
    p = make_plan(host, req)
    better = None
    if p.policy == "vllm-ascend":
        try:
            better = _better(host, p, req)
        except AscendtuneError:
            better = None
    return PlanReport(host, req, p, reason, better)


def refused_everywhere(plan: "Plan") -> str | None:
    """Why a vllm-ascend plan binds no rank at all (its release refuses the host), else None."""
    from ascendtune.core.planner.impls import refusal

    if plan.policy != "vllm-ascend" or any(r.skipped is None for r in plan.ranks):
        return None
    return refusal(plan)


def binding_plan(
    host: "Host", opts: PlanOptions, root: "Root | None" = None
) -> "tuple[Plan, str | None]":
    """The plan `bind` applies: the policy's; with `--policy auto` on a host where vLLM-Ascend
    binds nothing at all (it refuses the host), the NUMA-local plan instead, with why (else
    None). Raises the planner's errors."""
    p = make_plan(host, build_request(host, opts, root))
    why = refused_everywhere(p) if opts.policy == AUTO else None
    if why is None:
        return p, None
    local = make_plan(host, build_request(host, opts._replace(policy="numa-local"), root))
    return local, f"vLLM-Ascend binds nothing on this host ({why}): numa-local stands in"


def _better(host: "Host", plan: "Plan", base: "PlanRequest") -> str | None:
    """A short line when another policy beats vLLM-Ascend's plan on locality or overlap."""
    mean = _mean_locality(plan)
    bound = sum(r.skipped is None for r in plan.ranks)
    for name in ("numa-local", "numa-slice"):
        try:
            other = make_plan(host, base._replace(policy=name))
        except AscendtuneError:
            continue
        om = _mean_locality(other)
        other_bound = sum(r.skipped is None for r in other.ranks)
        if (
            (om is not None and mean is not None and om > mean + 1e-9)
            or (plan.overlaps and not other.overlaps)
            or other_bound > bound
        ):
            parts = []
            if other_bound > bound:
                parts.append(
                    f"binds {other_bound} of {len(other.ranks)} ranks where vLLM-Ascend binds "
                    f"{bound}"
                )
            if om is not None and mean is not None:
                parts.append(f"mean locality {om:.0%} vs {mean:.0%}")
            elif om is not None:
                parts.append(f"mean locality {om:.0%}")
            if plan.overlaps and not other.overlaps:
                parts.append("no overlapping ranks")
            return f"better: --policy {name} ({', '.join(parts)})"
    return None


def _mean_locality(plan: "Plan") -> float | None:
    vals = [r.locality for r in plan.ranks if r.locality is not None]
    return sum(vals) / len(vals) if vals else None


class CompareReport(NamedTuple):
    """Every policy that fits the host's vendor, side by side."""

    host: "Host"
    plans: "dict[str, Plan | str]"  # policy -> its plan, or why it cannot plan this host
    target_reason: str = ""
    identity: dict[str, Any] | None = None

    @property
    def ok(self) -> "list[Plan]":
        return [p for p in self.plans.values() if not isinstance(p, str)]

    @property
    def error(self) -> PlanError | None:
        """When no policy can plan the host: the document is still printed, then this."""
        if self.ok:
            return None
        return PlanError(
            "no policy can plan this host: " + "; ".join(f"{n}: {p}" for n, p in self.plans.items())
        )

    @property
    def exit_code(self) -> int:
        error = self.error
        return 0 if error is None else error.exit_code


def compare(host: "Host", opts: PlanOptions, root: "Root | None" = None) -> CompareReport:
    """Every policy that fits the host's vendor, side by side; PlanError when none can plan it."""
    # options are checked once: a bad device list is the user's error, not a policy's
    base = build_request(host, opts._replace(policy=POLICY_NAMES[0]), root)
    reason = resolve_version(host, opts.target, root).reason
    from ascendtune.core import vendors

    vendor = vendors.vendor_of(host).vendor if host.accelerators else None
    plans: dict[str, Plan | str] = {}
    for name in compare_policies(vendor):
        if vendor is not None and vendor not in POLICIES[name].vendors:
            continue
        try:
            plans[name] = make_plan(host, base._replace(policy=name))
        except PlanError as e:
            plans[name] = e.message
    return CompareReport(host, plans, reason)


def compare_document(
    report: CompareReport, identity: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: PlanCompareBody = {
        "policies": {
            n: (
                plan_document(p, None, report.target_reason)
                if not isinstance(p, str)
                else {"error": p}
            )
            for n, p in report.plans.items()
        },
    }
    return {**({"host": identity} if identity is not None else {}), **body}


def plan_document(
    plan: "Plan", identity: dict[str, Any] | None = None, target_reason: str | None = None
) -> dict[str, Any]:
    """The plan as JSON (SPEC.md section 3): what `bind --plan FILE` reads back; identity is
    the host it was made for (`bind --plan` refuses a plan of another host)."""
    body: PlanBody = {
        "policy": plan.policy,
        "target": plan.target,
        "target_reason": target_reason,
        "mode": plan.mode,
        "soc": plan.soc.value,
        "vendor": plan.vendor,
        "visible_devices": list(plan.visible),
        "cpus_allowed": format_cpulist(plan.cpus_allowed),
        "reserved": format_cpulist(plan.reserved),
        "ranks": [
            {
                "rank": r.rank,
                "dp_rank": r.dp_rank,
                "local_rank": r.local,
                "device": r.device,
                "pool_device": r.logical_id,
                "logical_id": r.logical_id,  # pool_device's old name, for one schema version
                "cpus": format_cpulist(r.cpus),
                "numa_nodes": list(r.numa_nodes),
                "device_numa_node": r.device_node,
                "locality": None if r.locality is None else round(r.locality, 4),
                "roles": r.roles.to_json(),
                "binding_skipped": r.skipped,
                **(
                    {"vllm_log_line": r.vllm_log_line(plan.mode)}
                    if plan.policy == "vllm-ascend" and plan.mode != "no_binding"
                    else {}
                ),
            }
            for r in plan.ranks
        ],
        "overlaps": [
            {"ranks": list(o.ranks), "cpus": format_cpulist(o.cpus)} for o in plan.overlaps
        ],
        "idle_cpus": format_cpulist(plan.idle_cpus),
        "findings": [f.to_json() for f in plan.findings],
        "notes": list(plan.notes),
    }
    # the typed body is what documents.PlanDocument (and schemas/plan.schema.json) describe
    return {**({"host": identity} if identity is not None else {}), **body}


# ---- the use case ---------------------------------------------------------------------------


def run(opts: PlanCommandOptions) -> PlanReport | CompareReport:
    """`plan`: the host opts.source names, planned under opts.plan (policy "compare": every
    policy side by side), with opts.emit's lines."""
    from ascendtune.app.emit import EMITS

    if opts.emit is not None and opts.emit not in EMITS:
        raise UsageError(f"--emit {opts.emit}: expected one of {', '.join(EMITS)}")
    if opts.owner is not None:
        from ascendtune.app.binders import check_owner

        check_owner(opts.owner)
        if opts.emit is None:
            raise UsageError("--owner goes with --emit: the lines it switches binders off in")
    check_policy(opts.plan.policy, compare=True)
    from ascendtune.app.hosts import load

    return of_loaded(load(opts.source), opts)


def of_loaded(got: "Loaded", opts: PlanCommandOptions) -> PlanReport | CompareReport:
    """`plan` of a host already read (`fleet` reads each node's snapshot itself)."""
    try:
        return _of_loaded(got, opts)
    except MissingError as e:
        raise where_read(e, got.root) from None


def where_read(e: MissingError, root: "Root | None") -> MissingError:
    """The planner's "no accelerator found on this host" said of the host read: a snapshot or
    a demo is not this host (and its hint, to try a demo, is moot there)."""
    from ascendtune.core.planner.engine import NO_ACCELERATOR_WHERE

    if root is None or root.live or NO_ACCELERATOR_WHERE not in e.message:
        return e
    return MissingError(
        e.message.replace(NO_ACCELERATOR_WHERE, f"in this snapshot ({root.describe()})", 1),
        "plan a snapshot of a host with NPUs or GPUs, or a demo (`--demo list`)",
    )


def _of_loaded(got: "Loaded", opts: PlanCommandOptions) -> PlanReport | CompareReport:
    pod = None
    if opts.pod is not None:
        from ascendtune.app import k8s

        host, plan_opts, pod = k8s.in_pod(got.root, got.host, opts.pod, opts.plan)
        got, opts = got._replace(host=host), opts._replace(plan=plan_opts)
    if opts.plan.policy == COMPARE:
        return compare(got.host, opts.plan, got.root)._replace(identity=got.identity)
    try:
        report = plan(got.host, opts.plan, got.root)._replace(identity=got.identity, pod=pod)
    except PlanError as e:
        if pod is None:
            raise
        raise PlanError(
            f"inside pod {pod['label']} ({pod['summary']}): {e.message}", e.hint
        ) from None
    if opts.emit is None:
        return report
    from ascendtune.app.emit import emit_lines

    lines = emit_lines(
        report.plan,
        opts.emit,
        cmdline=opts.plan.cmdline,
        bind_args=["--policy", report.plan.policy, *opts.plan.given()],
        owner=opts.owner,
    )
    return report._replace(emitted=Emitted(opts.emit, tuple(lines)))


def document(report: PlanReport | CompareReport) -> dict[str, Any]:
    """`plan --json` without schema_version (the printer adds it)."""
    if isinstance(report, CompareReport):
        return compare_document(report, report.identity)
    doc = plan_document(report.plan, report.identity, report.target_reason)
    if report.pod is not None:
        doc["pod"] = dict(report.pod)
    if report.emitted is not None:
        doc["emit"] = {"kind": report.emitted.kind, "lines": list(report.emitted.lines)}
    return doc
