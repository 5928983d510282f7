"""Lines for a plan that run as pasted (`plan --emit KIND`): every line is a comment of its own or
a complete shell command; a comment never trails a command, so a command typed after a pasted
line cannot land inside one."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import PlanError, UsageError

if TYPE_CHECKING:
    from ascendtune.core.planner import Plan, RankPlan

EMITS = (
    "taskset",
    "numactl",
    "env",
    "cpu-affinity-conf",
    "systemd",
    "docker",
    "vllm",
    "systemd-unit",  # the agent's forms (app.agent.install)
    "daemonset",
)
ASCEND_ONLY = ("cpu-affinity-conf",)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _fmt(cpus: Sequence[int]) -> str:
    return format_cpulist(cpus) or "-"


def shell_join(argv: Sequence[str]) -> str:
    """argv as one bash line; leading NAME=VALUE words stay assignments (only the value quoted)."""
    out: list[str] = []
    leading = True
    for a in argv:
        m = _ASSIGNMENT.match(a) if leading else None
        if m is not None:
            out.append(m.group(0) + shlex.quote(a[m.end() :]))
            continue
        leading = False
        out.append(shlex.quote(a))
    return " ".join(out)


def wrap(prefix: Sequence[str], argv: Sequence[str]) -> str:
    """`prefix argv` as one bash line; the leading NAME=VALUE words of argv go before the
    prefix (taskset would try to run `NAME=VALUE` as the program)."""
    n = 0
    while n < len(argv) and _ASSIGNMENT.match(argv[n]):
        n += 1
    return shell_join([*argv[:n], *prefix, *argv[n:]])


def _nodes(r: RankPlan) -> str:
    nodes = (
        (r.device_node,)
        if r.device_node is not None and r.device_node in r.numa_nodes
        else r.numa_nodes
    )
    return ",".join(map(str, nodes))


def _command(cmdline: str | None) -> list[str] | None:
    if cmdline is None:
        return None
    from ascendtune.core.vllm_config import inputs

    argv = inputs.split_cmdline(cmdline)
    if not argv:
        raise UsageError("--cmdline is empty: give the command to wrap")
    return argv


def disable_cpu_binding(argv: Sequence[str]) -> list[str]:
    """argv with `"enable_cpu_binding": false` merged into its --additional-config (every other
    key kept), or the option added when there is none."""
    from ascendtune.core.vllm_config import inputs

    out = list(argv)
    for i, a in enumerate(out):
        if a == "--additional-config" and i + 1 < len(out):
            cfg = inputs.parse_config(out[i + 1], "--additional-config of --cmdline")
            cfg["enable_cpu_binding"] = False
            out[i + 1] = json.dumps(cfg, separators=(", ", ": "))
            return out
        if a.startswith("--additional-config="):
            cfg = inputs.parse_config(a.split("=", 1)[1], "--additional-config of --cmdline")
            cfg["enable_cpu_binding"] = False
            out[i] = "--additional-config=" + json.dumps(cfg, separators=(", ", ": "))
            return out
    return [*out, "--additional-config", json.dumps({"enable_cpu_binding": False})]


# the binder each form hands the CPUs to (`--owner` may only name it)
OWNER_OF = {
    "taskset": "outer",
    "numactl": "outer",
    "systemd": "outer",
    "docker": "outer",
    "env": "outer",
    "cpu-affinity-conf": "torch_npu",
    "vllm": "ascendtune",
}


def owner_lines(
    kind: str, owner: str, argv: list[str] | None
) -> tuple[list[str], list[str] | None]:
    """`--emit KIND --owner OWNER`: the lines that switch every other binder off (issue 24), put
    before the form's own lines, and the command to wrap with vLLM-Ascend's binding off when it
    is not the owner."""
    from ascendtune.core.binders import BINDERS

    if owner != OWNER_OF[kind]:
        raise UsageError(
            f"--emit {kind} hands the CPUs to {OWNER_OF[kind]}, not --owner {owner}",
            "drop --owner, or pick the --emit form of that owner",
        )
    lines = [f"# one owner ({owner}): every other binder off, before the server starts"]
    # the binders a vLLM / vLLM-Ascend worker meets (MindIE's and SGLang's are other servers')
    env = [
        x
        for b in BINDERS
        if b.family != owner and b.id in ("openmp", "torch_npu", "ucm")
        for x in b.off_env
    ]
    if kind in ("systemd", "docker"):
        where = "the unit (Environment=)" if kind == "systemd" else "the container (-e)"
        lines += [f"# in {where}: {x}" for x in env]
    else:
        lines += env
    if argv is not None and owner != "vllm-ascend" and kind != "vllm":
        from ascendtune.core.vllm_config.inputs import is_vllm

        if is_vllm(argv):
            argv = disable_cpu_binding(argv)
    elif owner != "vllm-ascend" and kind != "vllm":
        lines.append(
            "# vLLM-Ascend's own binding off: --additional-config '{\"enable_cpu_binding\": false}'"
        )
    return lines, argv


def emit_lines(
    plan: Plan,
    kind: str,
    *,
    cmdline: str | None = None,
    bind_args: Sequence[str] = (),
    owner: str | None = None,
) -> list[str]:
    """The lines of `--emit kind`. cmdline: the command taskset/numactl/vllm wrap (a shell
    line); bind_args: the plan options `ascendtune bind --workers` repeats (`--emit vllm`)."""
    from ascendtune.core import vendors

    if kind not in EMITS:
        raise UsageError(f"--emit {kind}: expected one of {', '.join(EMITS)}")
    profile = vendors.profile(plan.vendor)
    if kind in ASCEND_ONLY and plan.vendor != "huawei":
        raise UsageError(
            f"--emit {kind} is torch_npu's variable, for Ascend NPUs; this is a {plan.vendor} host",
            "use --emit taskset, numactl, systemd or docker",
        )
    if kind in ("systemd-unit", "daemonset"):
        from ascendtune.app.agent.install import emit_agent

        return emit_agent(kind, bind_args)
    word = profile.word
    argv = _command(cmdline)
    head: list[str] = []
    if owner is not None:
        head, argv = owner_lines(kind, owner, argv)
    # ranks the plan leaves unbound (vLLM-Ascend skips them, or refuses the host): a comment
    # each, never a line that binds to nothing; a plan that binds no rank emits nothing
    devices = [r.device for r in plan.ranks]  # the job's, bound or not (--emit env)
    unbound = [r for r in plan.ranks if r.skipped is not None or not r.cpus]
    if unbound:
        if len(unbound) == len(plan.ranks):
            why = next((r.skipped for r in unbound if r.skipped), "it gives them no CPUs")
            raise PlanError(
                f"--emit {kind}: the {plan.policy} plan binds no rank on this host: {why}",
                "emit another policy's plan (`--policy numa-local`; `--policy compare` shows "
                "them side by side)",
            )
        head += [
            f"# rank {r.rank}, {word} {r.device}: left unbound, as the {plan.policy} plan "
            f"leaves it ({r.skipped or 'no CPUs'})"
            for r in unbound
        ]
        gone = {r.rank for r in unbound}
        plan = plan._replace(ranks=tuple(r for r in plan.ranks if r.rank not in gone))
    if kind == "cpu-affinity-conf":
        return head + _cpu_affinity_conf(plan)
    if kind == "vllm":
        if argv is None:
            raise UsageError(
                '--emit vllm needs the server\'s command line: give --cmdline "vllm serve ..."',
                "it is printed back with vLLM-Ascend's own binding off, then the "
                "`ascendtune bind --workers` line that binds its workers",
            )
        return head + _server(plan, argv, bind_args)
    if kind in ("taskset", "numactl") and argv is not None and len(plan.ranks) > 1:
        return head + _server(plan, argv, bind_args, kind)
    out: list[str] = head
    if kind in ("taskset", "numactl") and argv is None:
        out.append(
            "# one shell function per rank: `rank0 CMD ARGS` runs CMD on rank 0's CPUs "
            "(give --cmdline to get the commands themselves)"
        )
    if kind == "systemd":
        out += [
            "# one drop-in per unit: set unit_rankN to the unit that runs that rank",
            'dropins="${SYSTEMD_DROPIN_DIR:-/etc/systemd/system}"',
        ]
    if kind == "env":
        return head + _env(plan, profile.visible_devices_env, word, devices)
    for r in plan.ranks:
        cpus, nodes = _fmt(r.cpus), _nodes(r)
        out.append(f"# rank {r.rank}, {word} {r.device}")
        if kind == "taskset":
            prefix = ["taskset", "-c", cpus]
            out.append(
                wrap(prefix, argv)
                if argv is not None
                else f'rank{r.rank}() {{ {shell_join(prefix)} "$@"; }}'
            )
        elif kind == "numactl":
            strict = ["numactl", f"--physcpubind={cpus}", f"--membind={nodes}"]
            soft = ["numactl", f"--physcpubind={cpus}", f"--preferred={nodes.split(',')[0]}"]
            if argv is not None:
                out.append(wrap(strict, argv))
                out.append("# or, memory preferred on the node rather than bound to it:")
                out.append("# " + wrap(soft, argv))
            else:
                out.append(f'rank{r.rank}() {{ {shell_join(strict)} "$@"; }}')
                out.append(f'rank{r.rank}_preferred() {{ {shell_join(soft)} "$@"; }}')
        elif kind == "systemd":
            unit = f"unit_rank{r.rank}"
            d = f'"$dropins/${{{unit}}}.d"'
            out += [
                f"{unit}=vllm-rank{r.rank}.service",
                f"mkdir -p {d}",
                f"cat > {d}/ascendtune-cpus.conf <<'EOF'",
                "[Service]",
                f"CPUAffinity={cpus.replace(',', ' ')}",
                "NUMAPolicy=bind",
                f"NUMAMask={nodes}",
                "EOF",
            ]
        elif kind == "docker":
            out.append(f"rank{r.rank}_docker=(--cpuset-cpus={cpus} --cpuset-mems={nodes})")
    if kind == "systemd":
        out += [
            "# then reload systemd and restart the units:",
            'if [ "$dropins" = /etc/systemd/system ]; then systemctl daemon-reload; fi',
        ]
    if kind == "docker":
        example = shell_join(argv) if argv is not None else "IMAGE CMD ..."
        out.append(f'# use: docker run "${{rank0_docker[@]}}" ... {example}')
        out.append('# docker compose: `cpuset: "CPUS"` under the rank\'s service')
    return out


def _cpu_affinity_conf(plan: Plan) -> list[str]:
    # torch_npu: CPU_AFFINITY_CONF=<mode>,npu<device index>:<a>-<b>; one range per device,
    # the device index as the process sees it (its position in the visible list)
    out: list[str] = []
    items = []
    for r in plan.ranks:
        runs = _runs(r.cpus)
        if not runs:
            continue
        lo, hi = max(runs, key=lambda ab: ab[1] - ab[0])
        items.append(f"npu{r.rank}:{lo}-{hi}")
        if len(runs) > 1:
            out.append(
                f"# rank {r.rank}: CPUs {_fmt(r.cpus)} are not one range; torch_npu takes a "
                f"single a-b range, so only {lo}-{hi} is given"
            )
    out.append("export CPU_AFFINITY_CONF=1," + ",".join(items))
    return out


def _env(plan: Plan, visible_env: str, word: str, devices: Sequence[int]) -> list[str]:
    """`export` lines a launch script sources: the devices in rank order (every rank's, bound
    or not), and each bound rank's CPUs and NUMA nodes under names of its own (a job of one
    rank: the plain names)."""
    one = len(devices) == 1
    suffix = "" if one else "_RANKn"
    out = [
        f"# for a launch script: {visible_env} gives each rank its {word}, "
        f'taskset -c "$ASCENDTUNE_CPUS{suffix}" / numactl --membind="$ASCENDTUNE_MEMBIND{suffix}" '
        "bind it",
        f"export {visible_env}=" + ",".join(map(str, devices)),
    ]
    for r in plan.ranks:
        tail = "" if one else f"_RANK{r.rank}"
        out.append(f"# rank {r.rank}, {word} {r.device}")
        out.append(
            f"export ASCENDTUNE_CPUS{tail}={_fmt(r.cpus)} ASCENDTUNE_MEMBIND{tail}={_nodes(r)}"
        )
    return out


def _server(
    plan: Plan, argv: list[str], bind_args: Sequence[str], launcher: str | None = None
) -> list[str]:
    """One server for every rank (vllm serve forks a worker per rank): its command line (with
    vLLM-Ascend's own binding off, on the CPUs of every rank when launcher is taskset or
    numactl), then the `ascendtune bind --workers` line that gives each worker its CPUs."""
    out: list[str] = []
    cpus = sorted({c for r in plan.ranks for c in r.cpus})
    nodes = sorted({int(n) for r in plan.ranks for n in _nodes(r).split(",") if n})
    prefix: list[str] = []
    if launcher == "taskset":
        prefix = ["taskset", "-c", _fmt(cpus)]
    elif launcher == "numactl":
        prefix = [
            "numactl",
            f"--physcpubind={_fmt(cpus)}",
            f"--membind={','.join(map(str, nodes))}",
        ]
    if prefix:
        out.append(
            f"# one server for the {len(plan.ranks)} ranks (it forks a worker per rank): the "
            "server on the CPUs of every rank, then each worker on its own"
        )
    bind = shell_join(["ascendtune", "bind", "--workers", *bind_args])
    if plan.vendor == "huawei":
        out.append(
            "# vLLM-Ascend's own binding off (enable_cpu_binding: false), so it neither "
            "fails nor re-slices the mask ascendtune gives:"
        )
        out.append(wrap(prefix, disable_cpu_binding(argv)))
    else:
        out.append("# vLLM does not bind CPUs by itself on GPUs: your command, unchanged:")
        out.append(wrap(prefix, argv))
    out.append("# once the server is up (every worker started), in another shell:")
    out.append(bind)
    out.append("# or keep it applied across worker restarts:")
    out.append(f"# {bind} --watch")
    return out


def _runs(cpus: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs
