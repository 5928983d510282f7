"""Host rules: a table (`HOST_RULES`) of id, expected value, fix, persistent fix and one judge
function each, over the facts the host layer gathered."""

import re
from collections.abc import Callable
from typing import NamedTuple

from ascendtune.core import vendors
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.doctor.facts import (
    CONTAINER_MARKS,
    GOVERNORS,
    IRQBALANCE_CONFIGS,
    META,
    NUMA_BALANCING,
    OS_RELEASE,
    SCHED_MIGRATION,
    SCHED_MIGRATION_DEBUGFS,
    SELF_STATUS,
    SWAPPINESS,
    SWAPS,
    THP,
    TUNED_PROFILE,
    DoctorInput,
    FileValue,
)
from ascendtune.core.doctor.irq import IRQ_READS, npu_irq_checks
from ascendtune.core.doctor.persist import (
    SCHED_MIGRATION_COST_MAX_NS,
    SCHED_MIGRATION_COST_NS,
    irqbalance_ban,
    persist_governor,
    persist_migration,
    persist_thp,
    sysctl_persist,
)
from ascendtune.core.doctor.report import Check, Status
from ascendtune.core.planner.findings import CPUSET_CODES

# CAP_SYS_NICE is bit 23 of the capability sets (linux/capability.h).
CAP_SYS_NICE_BIT = 23
# vLLM-Ascend's role split needs 2 IRQ + 1 main + 1 acl + 1 release CPUs per NPU.
MIN_CPUS_PER_NPU = 5

Verdict = tuple[Status, str | None, str | None]  # status, value, detail
FixFn = Callable[[DoctorInput], str]
PersistFn = Callable[[DoctorInput], str | None]


class Rule(NamedTuple):
    id: str
    expected: str
    fix: str | FixFn
    judge: Callable[[DoctorInput], Verdict]
    persist: str | PersistFn | None = None  # the fix that survives a reboot
    # the files (facts.py) its judge and fixes read: gathered for it and captured by `snapshot`;
    # it sees no other (HostFacts.only)
    reads: tuple[str, ...] = ()
    # its fixes change the kernel or the host's services: in a container, they run on the host
    host_wide: bool = False

    def check(self, inp: DoctorInput) -> Check:
        inp = inp._replace(facts=inp.facts.only(self.reads))
        status, value, detail = self.judge(inp)
        fix = persistent = None
        if status in ("warn", "fail"):
            fix = self.fix if isinstance(self.fix, str) else self.fix(inp)
            persistent = self.persist if not callable(self.persist) else self.persist(inp)
        return Check(
            self.id, status, value, self.expected, fix, "host", detail,
            fix_persistent=persistent,
            fix_on_host=bool(self.host_wide and fix and inp.facts.container),
        )  # fmt: skip


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _missing(fv: FileValue, why: str = "") -> Verdict:
    return "skip", None, f"{fv.path} is missing{': ' + why if why else ''}"


def _has_accelerators(inp: DoctorInput) -> bool:
    return bool(inp.host and inp.host.accelerators)


def _judge_governor(inp: DoctorInput) -> Verdict:
    govs = inp.facts.governors
    if not govs:
        return (
            "skip",
            None,
            "no sys/devices/system/cpu/cpuN/cpufreq/scaling_governor: frequency is not "
            "managed by the kernel here (a VM, or firmware-controlled)",
        )
    by_gov: dict[str, set[int]] = {}
    for cpu, g in govs.items():
        by_gov.setdefault(g, set()).add(cpu)
    value = "; ".join(
        f"{g} on {format_cpulist(cpus)}"
        for g, cpus in sorted(by_gov.items(), key=lambda x: min(x[1]))
    )
    if len(by_gov) == 1:
        value = next(iter(by_gov)) + f" on every CPU with cpufreq ({len(govs)})"
    detail = None
    if inp.host is not None:
        lacking = inp.host.cpus_online - set(govs)
        if lacking:
            detail = f"no cpufreq for CPUs {format_cpulist(lacking)}"
    if set(by_gov) == {"performance"}:
        return "ok", value, detail
    slow = sorted(set(by_gov) - {"performance"})
    why = (
        f"{', '.join(slow)} scale the frequency down between bursts: token latency jitters "
        "(vLLM-Ascend tuning guide 4.1)"
    )
    return "fail", value, why + (f"; {detail}" if detail else "")


def _judge_numa_balancing(inp: DoctorInput) -> Verdict:
    fv = inp.facts.file(NUMA_BALANCING)
    if fv.value is None:
        return _missing(fv, "this kernel has no automatic NUMA balancing, nothing to turn off")
    if fv.value == "0":
        return "ok", "0", None
    if inp.host is not None and len(inp.host.cpu_nodes) <= 1:
        return "ok", fv.value, "one NUMA node: balancing has nothing to move"
    return (
        "fail",
        fv.value,
        "the kernel migrates pages behind the binding's back, so memory access latency varies "
        "(vLLM-Ascend tuning guide 4.3)",
    )


def _swap_active(swaps: str | None) -> bool | None:
    if swaps is None:
        return None
    return any(line.strip() for line in swaps.splitlines()[1:])


def _judge_swappiness(inp: DoctorInput) -> Verdict:
    fv = inp.facts.file(SWAPPINESS)
    v = _int(fv.value)
    if fv.value is None:
        return _missing(fv)
    if v is None:
        return "skip", fv.value, f"{fv.path} is not a number"
    if v <= 1:
        return "ok", str(v), None
    active = _swap_active(inp.facts.text(SWAPS))
    why = "swapping model pages out costs seconds of latency (vLLM-Ascend tuning guide 4.2)"
    if active is False:
        return "warn", str(v), f"no swap is active now, but once some is added: {why}"
    if v <= 10:
        return "warn", str(v), why
    return "fail", str(v), why + ("" if active else "; proc/swaps not recorded")


def _migration_fix(inp: DoctorInput) -> str:
    path = inp.facts.sched_migration_cost.path
    if path.startswith("sys/kernel/debug/"):
        return f"echo {SCHED_MIGRATION_COST_NS} > /{path}"
    return f"sysctl -w kernel.sched_migration_cost_ns={SCHED_MIGRATION_COST_NS}"


def _judge_migration(inp: DoctorInput) -> Verdict:
    fv = inp.facts.sched_migration_cost
    if fv.value is None:
        return (
            "skip",
            None,
            "neither proc/sys/kernel/sched_migration_cost_ns nor "
            "sys/kernel/debug/sched/migration_cost_ns (kernels >= 5.13 moved it to debugfs; "
            "mount debugfs to check it)",
        )
    v = _int(fv.value)
    if v is None:
        return "skip", fv.value, f"{fv.path} is not a number"
    if SCHED_MIGRATION_COST_NS <= v <= SCHED_MIGRATION_COST_MAX_NS:
        return "ok", str(v), None
    return (
        "warn",
        str(v),
        f"the vLLM-Ascend tuning guide (4.4) sets {SCHED_MIGRATION_COST_NS} ns "
        f"(range {SCHED_MIGRATION_COST_NS}-{SCHED_MIGRATION_COST_MAX_NS})",
    )


_BRACKET = re.compile(r"\[(\w+)\]")


def _judge_thp(inp: DoctorInput) -> Verdict:
    fv = inp.facts.file(THP)
    if fv.value is None:
        return _missing(fv, "this kernel has no transparent hugepages")
    m = _BRACKET.search(fv.value)
    mode = m.group(1) if m else fv.value
    if mode in ("never", "madvise"):
        return "ok", mode, None
    return (
        "warn",
        mode,
        "with THP always on, khugepaged compaction and page faults on huge pages stall "
        "threads now and then: latency spikes",
    )


def _judge_irqbalance(inp: DoctorInput) -> Verdict:
    pids = inp.facts.irqbalance_pids
    if pids is None:
        return "skip", None, "no process list recorded (proc/*/comm)"
    if not pids:
        return "ok", "not running", None
    value = f"running (PID {', '.join(map(str, pids))})"
    if not _has_accelerators(inp):
        return "skip", value, "no accelerator on this host: IRQ pinning does not apply"
    return (
        "warn",
        value,
        "irqbalance moves NPU interrupts off the CPUs they were pinned to; vLLM-Ascend stops it "
        "only where it can run systemctl (not in a container)",
    )


def _cpuset_fix(inp: DoctorInput) -> str:
    host = inp.host
    home = vendors.vendor_of(host)
    want = ""
    if host is not None and home.accelerators(host):
        aff = frozenset(c for a in home.accelerators(host) for c in a.cpu_affinity)
        want = format_cpulist(aff & host.cpus_online)
    cpus = want or "CPULIST"
    return (
        f"docker update --cpuset-cpus {cpus} CONTAINER  # on the host; CONTAINER: its name or "
        + ("id" if want else f"id, CPULIST: the CPUs near the {home.word}s")
        + "; or widen the cgroup's cpuset.cpus"
    )


def _judge_cpuset(inp: DoctorInput) -> Verdict:
    host, facts = inp.host, inp.facts
    ver = f"cgroup v{facts.cgroup_version}" if facts.cgroup_version else "cgroup version unknown"
    if host is None:
        return "skip", ver, f"host unreadable: {inp.host_error}"
    allowed, online = host.cpus_allowed, host.cpus_online
    src = "" if host.allowed_from_status else " (assumed: proc/self/status missing)"
    value = f"{ver}, cpuset {format_cpulist(allowed)}{src}"
    if allowed != online:
        value += f" ({len(allowed)} of {len(online)} online CPUs)"
    if facts.cgroup_cpuset is not None and facts.cgroup_cpuset != allowed:
        name = (facts.cgroup_cpuset_file or "cpuset.cpus.effective").rpartition("/")[2]
        value += f"; cgroup {name} {format_cpulist(facts.cgroup_cpuset)}"
    plan = inp.plan
    if plan.error and plan.cpus_problem:
        return "fail", value, f"{plan.policy} cannot bind under this cpuset: {plan.error}"
    notes: list[str] = []
    if plan.plan is not None:
        notes += [f.message for f in plan.plan.findings if f.code in CPUSET_CODES]
    if allowed != online:
        per_node = {n.id: len(n.cpus & allowed) for n in host.cpu_nodes if n.cpus & allowed}
        if len(set(per_node.values())) > 1:
            spread = ", ".join(f"node {n}: {k}" for n, k in sorted(per_node.items()))
            notes.append(
                f"the cpuset is uneven across NUMA nodes ({spread}); vLLM-Ascend's binding "
                "works best on a cpuset spread evenly over nodes"
            )
    if notes:
        return "warn", value, "; ".join(notes)
    return "ok", value, None


def _judge_cap(inp: DoctorInput) -> Verdict:
    cap = inp.facts.cap_eff
    if cap is None:
        return "skip", None, "proc/self/status has no CapEff line"
    if cap >> CAP_SYS_NICE_BIT & 1:
        return "ok", "CAP_SYS_NICE present", None
    return (
        "warn",
        "CAP_SYS_NICE missing",
        "without it `ascendtune bind` (and taskset) can change only this user's processes",
    )


def _tool_rule(p: vendors.VendorProfile, check: vendors.ToolCheck) -> Rule:
    """The row of a vendor's tool (npu-smi): found, its version, and whether it failed."""
    tool = p.tool

    def judge(inp: DoctorInput) -> Verdict:
        host = inp.host
        if host is None:
            return "skip", None, f"host unreadable: {inp.host_error}"
        failed = [e for e in host.tool_errors if e.startswith(tool)]
        if tool in host.tools:
            version = host.tools[tool]
            value = f"{tool} {version}" if version else f"{tool} found"
            if failed:
                return "fail", value if version else f"{tool} fails", "; ".join(failed)
            return "ok", value, None
        devices = p.accelerators(host)
        if devices:
            return (
                "fail",
                "not found",
                f"{len(devices)} {p.generic_name}(s) on the PCI bus but no {tool}: "
                + check.missing,
            )
        return "skip", "not found", f"no {p.generic_name} on this host"

    return Rule(p.tool_key, f"{tool} found", check.fix, judge)


def _install(pkg: str) -> FixFn:
    def fix(inp: DoctorInput) -> str:
        ids = set(inp.facts.os_ids)
        if ids & {"debian", "ubuntu"}:
            return f"apt-get install -y {pkg}"
        if ids & {
            "rhel",
            "centos",
            "fedora",
            "openeuler",
            "euleros",
            "kylin",
            "rocky",
            "almalinux",
        }:
            return f"yum install -y {pkg}"
        return f"apt-get install -y {pkg}  # or: yum install -y {pkg}"

    return fix


def _tool_judge(
    name: str, why: str, fail_with_npus: bool = False
) -> Callable[[DoctorInput], Verdict]:
    def judge(inp: DoctorInput) -> Verdict:
        tools = inp.facts.tools
        if tools is None or name not in tools:
            return "skip", None, f"not recorded (meta.json has no tools.{name})"
        path = tools[name]
        if path:
            return "ok", path, None
        status: Status = "fail" if fail_with_npus and inp.host and inp.host.npus else "warn"
        return status, "not found", why

    return judge


def _judge_arch(inp: DoctorInput) -> Verdict:
    arch = inp.facts.arch
    if not arch:
        return "skip", None, "not recorded (meta.json has no arch)"
    a = arch.lower()
    if a in ("aarch64", "arm64") or a.startswith("arm"):
        return "ok", arch, None
    if not (inp.host and inp.host.npus):
        return "skip", arch, "no Ascend NPU on this host"
    return (
        "warn",
        arch,
        "vLLM-Ascend binds CPUs only on ARM ('CPU binding skipped: non-ARM CPU detected.'): "
        "here every worker stays unbound unless bound with `ascendtune bind`",
    )


_LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")


def _judge_locale(inp: DoctorInput) -> Verdict:
    env = inp.facts.env
    if env is None:
        return "skip", None, "not recorded (meta.json has no env)"
    # the first set variable wins, as in glibc
    name, val = next(((k, env[k]) for k in _LOCALE_VARS if env.get(k)), ("LANG", ""))
    if not val:
        return "ok", "unset (C)", None
    base = val.split(".")[0].split("@")[0]
    value = f"{name}={val}"
    if base in ("C", "POSIX") or base.startswith("en_") or base == "en":
        return "ok", value, None
    return (
        "warn",
        value,
        "vLLM-Ascend before v0.19.1rc1 parsed `lscpu` output in the caller's locale and its "
        "CPU binding failed on localized hosts (fixed in vllm-ascend #8251); "
        f"this is {'this shell' if inp.facts.live else 'the captured shell'}'s locale",
    )


_BEFORE_TOOLS: tuple[Rule, ...] = (
    Rule(
        "cpu_governor",
        "performance on every CPU",
        "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        _judge_governor,
        persist_governor,
        reads=(GOVERNORS, TUNED_PROFILE, OS_RELEASE),
        host_wide=True,
    ),
    Rule(
        "numa_balancing",
        "0",
        "sysctl -w kernel.numa_balancing=0",
        _judge_numa_balancing,
        sysctl_persist("kernel.numa_balancing", 0),
        reads=(NUMA_BALANCING,),
        host_wide=True,
    ),
    Rule(
        "swappiness",
        "0 or 1",
        "sysctl -w vm.swappiness=0",
        _judge_swappiness,
        sysctl_persist("vm.swappiness", 0),
        reads=(SWAPPINESS, SWAPS),
        host_wide=True,
    ),
    Rule(
        "sched_migration_cost",
        f"{SCHED_MIGRATION_COST_NS} ({SCHED_MIGRATION_COST_NS}-{SCHED_MIGRATION_COST_MAX_NS})",
        _migration_fix,
        _judge_migration,
        persist_migration,
        reads=(SCHED_MIGRATION, SCHED_MIGRATION_DEBUGFS),
        host_wide=True,
    ),
    Rule(
        "thp",
        "never or madvise",
        "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
        _judge_thp,
        persist_thp,
        reads=(THP, TUNED_PROFILE, OS_RELEASE),
        host_wide=True,
    ),
    Rule(
        "irqbalance",
        "not running",
        "systemctl stop irqbalance",
        _judge_irqbalance,
        irqbalance_ban,
        reads=(*IRQBALANCE_CONFIGS, OS_RELEASE),
        host_wide=True,
    ),
    Rule(
        "cgroup_cpuset",
        f">= {MIN_CPUS_PER_NPU} CPUs per NPU within its affinity, even across NUMA nodes",
        _cpuset_fix,
        _judge_cpuset,
    ),
    Rule(
        "cap_sys_nice",
        "CAP_SYS_NICE present",
        "# run as root, or start the container with --cap-add SYS_NICE",
        _judge_cap,
        reads=(SELF_STATUS,),
    ),
)

_AFTER_TOOLS: tuple[Rule, ...] = (
    Rule(
        "numactl",
        "installed",
        _install("numactl"),
        _tool_judge("numactl", "`ascendtune bind --membind` and `numactl --membind` need it"),
        reads=(META, OS_RELEASE),
    ),
    Rule(
        "migratepages",
        "installed (numactl package)",
        _install("numactl"),
        _tool_judge(
            "migratepages",
            "vLLM-Ascend skips memory migration without it: pages stay on remote NUMA nodes",
        ),
        reads=(META, OS_RELEASE),
    ),
    Rule(
        "taskset",
        "installed (util-linux)",
        _install("util-linux"),
        _tool_judge(
            "taskset", "vLLM-Ascend binds threads with `taskset -acp`", fail_with_npus=True
        ),
        reads=(META, OS_RELEASE),
    ),
    Rule(
        "arch",
        "aarch64",
        "ascendtune bind --rank R --pid PID  # for each worker",
        _judge_arch,
        reads=(META,),
    ),
    Rule(
        "locale",
        "C, POSIX, en_* or unset",
        "export LC_ALL=C.UTF-8",
        _judge_locale,
        "# set LC_ALL=C.UTF-8 in the server's environment (its systemd unit's Environment=, "
        "or docker run -e LC_ALL=C.UTF-8)",
        reads=(META,),
    ),
)


def host_rules() -> tuple[Rule, ...]:
    """The host rules in report order, each registered vendor's tool row among them."""
    tool_rows = [_tool_rule(p, p.tool_check) for p in vendors.profiles() if p.tool_check]
    return (*_BEFORE_TOOLS, *tool_rows, *_AFTER_TOOLS)


def doctor_tools() -> tuple[str, ...]:
    """The tools doctor looks for (a snapshot records which were found): the checked vendor
    tools, then the ones vLLM-Ascend's binding runs; tuned-adm only tells which persistent fix
    to give (a tuned profile where tuned runs)."""
    checked = (t for p in vendors.profiles() if p.tool_check for t in p.tools)
    return (*checked, "numactl", "migratepages", "taskset", "tuned-adm")


HOST_RULES = host_rules()  # with the built-in vendors
TOOLS = doctor_tools()
HOST_CHECK_IDS = tuple(r.id for r in HOST_RULES)


def declared_reads() -> tuple[str, ...]:
    """Every file the host rules and the NPU interrupt rows declare, each once, in order."""
    return tuple(
        dict.fromkeys(
            (*(p for rule in host_rules() for p in rule.reads), *IRQ_READS, *CONTAINER_MARKS)
        )
    )


def host_checks(inp: DoctorInput) -> list[Check]:
    """The host rules, then the NPU interrupt rows (`npu_irq:N`, or one `npu_irq`)."""
    return [rule.check(inp) for rule in host_rules()] + npu_irq_checks(inp)
