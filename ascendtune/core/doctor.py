"""`doctor` rules: host checks and the audit of running NPU workers, judged from gathered facts.

Pure: the host layer (ascendtune.host.facts) reads the files, this module turns the facts into
rows. Host rules are a table (`HOST_RULES`) of id, expected value, fix and one judge function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from ascendtune.core import vendors
from ascendtune.core.bindplan import BindTarget, target_of_rank
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import Accelerator, Host, Vendor
from ascendtune.core.parsers.interrupts import (
    CQ_IRQ_NAME,
    NPU_IRQ_NAMES,
    SQ_IRQ_NAME,
    Interrupts,
    affinities,
    npu_irqs,
    parse_interrupts,
)
from ascendtune.core.planner.model import Plan, RankPlan
from ascendtune.core.redact import redact_args

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skip")
SECTIONS = ("host", "workers")

# vLLM-Ascend developer guide, performance_and_debug/optimization_and_tuning.md, section 4.4
# "Increase Scheduler Migration Cost": `sysctl -w kernel.sched_migration_cost_ns=50000`,
# "Typical recommended range: 50000–100000". (The kernel default, 500000, is higher still:
# the guide's title says "increase" but its number lowers it; we follow the number.)
SCHED_MIGRATION_COST_NS = 50000
SCHED_MIGRATION_COST_MAX_NS = 100000
# CAP_SYS_NICE is bit 23 of the capability sets (linux/capability.h).
CAP_SYS_NICE_BIT = 23
# vLLM-Ascend's role split needs 2 IRQ + 1 main + 1 acl + 1 release CPUs per NPU.
MIN_CPUS_PER_NPU = 5

ROLE_THREAD_NAMES = ("acl_thread", "release_thread")
# Processes that start unrelated jobs: a parent or grandparent among these does not make two
# workers one job (two `vllm serve` started from one shell are still two services).
LAUNCHERS = frozenset(
    {
        "bash", "sh", "dash", "zsh", "fish", "ksh", "tmux", "tmux: server", "screen", "sshd",
        "systemd", "init", "docker-init", "tini", "dumb-init", "containerd-shim", "runc",
        "conmon", "su", "sudo", "nohup", "setsid", "raylet", "supervisord", "python-supervisor",
    }
)  # fmt: skip


class Check(NamedTuple):
    """One row of the doctor report."""

    id: str
    status: Status
    value: str | None
    expected: str | None
    fix: str | None
    section: str
    detail: str | None = None
    data: Mapping[str, Any] = MappingProxyType({})
    # the form of `fix` that survives a reboot (sysctl.d, kernel command line, tuned, config)
    fix_persistent: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "value": self.value,
            "expected": self.expected,
            "fix": self.fix,
            "fix_persistent": self.fix_persistent,
            "section": self.section,
            "detail": self.detail,
        }
        if self.data:
            doc["data"] = dict(self.data)
        return doc


# ---- facts --------------------------------------------------------------------------------------


class FileValue(NamedTuple):
    """A one-line knob: where it was looked for and its text (None: absent)."""

    path: str
    text: str | None

    @property
    def value(self) -> str | None:
        return None if self.text is None else self.text.strip()


class HostFacts(NamedTuple):
    """Everything the host rules read, gathered through a Root (live `/` or a sysroot)."""

    root: str
    live: bool
    governors: Mapping[int, str]  # cpu -> scaling_governor, only CPUs that have cpufreq
    numa_balancing: FileValue
    swappiness: FileValue
    swaps: str | None  # proc/swaps text (None: unknown)
    sched_migration_cost: FileValue  # sysctl file, or debugfs on kernels >= 5.13
    thp: FileValue
    irqbalance_pids: tuple[int, ...] | None  # None: no process list under this root
    cgroup_version: int | None
    cgroup_cpuset: CpuSet | None  # this process's cgroup cpuset (effective)
    cap_eff: int | None  # CapEff of this process (None: not recorded)
    tools: Mapping[str, str | None] | None  # name -> path or None; None: not recorded
    arch: str | None
    env: Mapping[str, str] | None  # locale variables that are set; None: not recorded
    os_ids: tuple[str, ...] = ()  # ID and ID_LIKE of etc/os-release
    uid: int | None = None  # this process's uid
    cgroup_cpuset_file: str | None = None  # the file cgroup_cpuset came from
    interrupts: str | None = None  # proc/interrupts text (None: absent)
    # IRQ -> (smp_affinity_list, smp_affinity) texts of the NPU SQ/CQ interrupts
    irq_affinity: Mapping[int, tuple[str | None, str | None]] = MappingProxyType({})
    # Huawei PCI address -> its msi_irqs listing (absent: not readable under this root)
    msi_irqs: Mapping[str, frozenset[int]] = MappingProxyType({})
    tuned: bool | None = None  # tuned installed (None: not recorded)
    tuned_profile: str | None = None  # etc/tuned/active_profile
    irqbalance_config: str | None = None  # the irqbalance config file present, relative


class ThreadFacts(NamedTuple):
    tid: int
    name: str
    cpus: CpuSet


class Ancestor(NamedTuple):
    pid: int
    comm: str


class WorkerFacts(NamedTuple):
    """A process holding an accelerator, as proc/PID shows it."""

    pid: int
    devices: tuple[int, ...]  # logical ids of the devices it holds (best effort)
    found_by: tuple[str, ...]  # "npu-smi", "fd"
    present: bool = True  # proc/PID exists under this root
    vendor: str = "huawei"
    comm: str | None = None
    command: tuple[str, ...] = ()
    uid: int | None = None
    session: int | None = None
    ancestors: tuple[Ancestor, ...] = ()  # parent first
    cgroup: str | None = None
    cpuset: CpuSet | None = None  # its cgroup cpuset (None: unknown)
    threads: tuple[ThreadFacts, ...] = ()
    device_files: tuple[str, ...] = ()


class PlanFacts(NamedTuple):
    """The plan workers are compared with, or why there is none."""

    policy: str = "vllm-ascend"
    plan: Plan | None = None
    error: str | None = None
    cpus_problem: bool = False  # the plan failed on the CPUs (cpuset too small, disjoint)
    options: tuple[str, ...] = ()  # plan options to repeat in `ascendtune bind` (not --policy)

    def rank_of(self, device: int) -> RankPlan | None:
        if self.plan is None:
            return None
        for r in self.plan.ranks:
            if r.device == device:
                return r
        return None

    def bind_command(self, rank: int, pid: int, policy: str | None = None) -> str:
        pol = policy or self.policy
        parts = ["ascendtune", "bind", "--rank", str(rank), "--pid", str(pid)]
        if pol != "vllm-ascend":
            parts += ["--policy", pol]
        parts += list(self.options)
        return " ".join(parts)


class DoctorInput(NamedTuple):
    facts: HostFacts
    host: Host | None
    host_error: str | None
    plan: PlanFacts


# ---- host rules ---------------------------------------------------------------------------------

Verdict = tuple[Status, str | None, str | None]  # status, value, detail
FixFn = Callable[[DoctorInput], str]
PersistFn = Callable[[DoctorInput], str | None]


class Rule(NamedTuple):
    id: str
    expected: str
    fix: str | FixFn
    judge: Callable[[DoctorInput], Verdict]
    persist: str | PersistFn | None = None  # the fix that survives a reboot

    def check(self, inp: DoctorInput) -> Check:
        status, value, detail = self.judge(inp)
        fix = persistent = None
        if status in ("warn", "fail"):
            fix = self.fix if isinstance(self.fix, str) else self.fix(inp)
            persistent = self.persist if not callable(self.persist) else self.persist(inp)
        return Check(
            self.id, status, value, self.expected, fix, "host", detail, fix_persistent=persistent
        )


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
    fv = inp.facts.numa_balancing
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
    fv = inp.facts.swappiness
    v = _int(fv.value)
    if fv.value is None:
        return _missing(fv)
    if v is None:
        return "skip", fv.value, f"{fv.path} is not a number"
    if v <= 1:
        return "ok", str(v), None
    active = _swap_active(inp.facts.swaps)
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
    fv = inp.facts.thp
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
    cpus = want or f"<CPUs near the {home.word}s>"
    return f"docker update --cpuset-cpus {cpus} <container>  # or widen the cgroup's cpuset.cpus"


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
        notes += [
            f.message for f in plan.plan.findings if "cpuset" in f.message or "idle" in f.message
        ]
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


def _judge_npu_smi(inp: DoctorInput) -> Verdict:
    host = inp.host
    if host is None:
        return "skip", None, f"host unreadable: {inp.host_error}"
    failed = [e for e in host.tool_errors if e.startswith("npu-smi")]
    if host.npu_smi_found:
        value = f"npu-smi {host.npu_smi_version}" if host.npu_smi_version else "npu-smi found"
        if failed:
            return "fail", value if host.npu_smi_version else "npu-smi fails", "; ".join(failed)
        return "ok", value, None
    if host.npus:
        return (
            "fail",
            "not found",
            f"{len(host.npus)} Ascend NPU(s) on the PCI bus but no npu-smi: vLLM-Ascend cannot "
            "read the NPU map and binds nothing",
        )
    return "skip", "not found", "no Ascend NPU on this host"


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


# ---- fixes that survive a reboot ----------------------------------------------------------------

SYSCTL_D_FILE = "/etc/sysctl.d/90-ascendtune.conf"
TMPFILES_D_FILE = "/etc/tmpfiles.d/90-ascendtune.conf"
_RHEL_LIKE = frozenset(
    {"rhel", "centos", "fedora", "openeuler", "euleros", "kylin", "rocky", "almalinux", "anolis"}
)
_DEBIAN_LIKE = frozenset({"debian", "ubuntu"})


def _sysctl_persist(key: str, value: object) -> str:
    return f"echo '{key} = {value}' >> {SYSCTL_D_FILE} && sysctl -p {SYSCTL_D_FILE}"


def _kernel_arg(inp: DoctorInput, arg: str) -> str:
    """Add `arg` to the kernel command line the way this distribution does it (next boot)."""
    ids = set(inp.facts.os_ids)
    grubby = f"grubby --update-kernel=ALL --args={arg}"
    grub = f"sed -i 's/^GRUB_CMDLINE_LINUX=\"/&{arg} /' /etc/default/grub && " + (
        "update-grub" if ids & _DEBIAN_LIKE else "grub2-mkconfig -o /boot/grub2/grub.cfg"
    )
    if ids & _DEBIAN_LIKE:
        return grub
    if ids & _RHEL_LIKE:
        return grubby
    return f"{grubby}  # or: {grub}"


def _tuned_note(inp: DoctorInput) -> str:
    prof = inp.facts.tuned_profile
    return f" (tuned's active profile now: {prof})" if prof else ""


def _persist_governor(inp: DoctorInput) -> str:
    if inp.facts.tuned:
        # latency-performance and throughput-performance both set governor=performance
        return "tuned-adm profile latency-performance" + _tuned_note(inp)
    return _kernel_arg(inp, "cpufreq.default_governor=performance") + "  # kernels >= 5.9"


def _persist_migration(inp: DoctorInput) -> str:
    path = inp.facts.sched_migration_cost.path
    if path.startswith("sys/kernel/debug/"):
        # no sysctl on kernels >= 5.13: systemd-tmpfiles writes it at every boot
        return (
            f"echo 'w /{path} - - - - {SCHED_MIGRATION_COST_NS}' >> {TMPFILES_D_FILE}"
            + ("  # or in a tuned profile: [scheduler] sched_migration_cost_ns="
               f"{SCHED_MIGRATION_COST_NS}" if inp.facts.tuned else "")
        )  # fmt: skip
    return _sysctl_persist("kernel.sched_migration_cost_ns", SCHED_MIGRATION_COST_NS)


def _persist_thp(inp: DoctorInput) -> str:
    out = _kernel_arg(inp, "transparent_hugepage=never")
    if inp.facts.tuned:
        out += "  # or [vm] transparent_hugepages=never in a tuned profile" + _tuned_note(inp)
    return out


def _irqbalance_config(inp: DoctorInput) -> str:
    if inp.facts.irqbalance_config:
        return "/" + inp.facts.irqbalance_config
    if set(inp.facts.os_ids) & _DEBIAN_LIKE:
        return "/etc/default/irqbalance"
    return "/etc/sysconfig/irqbalance"


def _plan_irq_cpus(plan: PlanFacts) -> CpuSet:
    if plan.plan is None:
        return frozenset()
    return frozenset(c for r in plan.plan.ranks for c in r.roles.irq)


IRQBALANCE_POLICY = "/usr/local/sbin/ascendtune-irqbalance-policy"
# irqbalance moves every IRQ it manages onto unbanned CPUs, so banning the IRQ CPUs alone would
# push the NPU interrupts off them: its --policyscript bans those IRQs by name (their numbers
# may change at boot); the script gets the IRQ number as $2 and answers ban=true.
_POLICY_SCRIPT = (
    "#!/bin/sh\\n"
    f'grep -Eq "^ *$2:.*({SQ_IRQ_NAME}|{CQ_IRQ_NAME})" /proc/interrupts && echo ban=true\\n'
)


def _irqbalance_ban(inp: DoctorInput) -> str:
    """Keep irqbalance off the plan's IRQ CPUs and off the NPU interrupts for good."""
    cpus = _plan_irq_cpus(inp.plan)
    if not cpus:
        return "systemctl disable --now irqbalance"
    cfg = _irqbalance_config(inp)
    return (
        f"printf '{_POLICY_SCRIPT}' > {IRQBALANCE_POLICY} && chmod 755 {IRQBALANCE_POLICY} && "
        f"echo 'IRQBALANCE_BANNED_CPULIST={format_cpulist(cpus)}' >> {cfg} && "
        f"echo 'IRQBALANCE_ARGS=\"--policyscript={IRQBALANCE_POLICY}\"' >> {cfg} && "
        "systemctl restart irqbalance  # or: systemctl disable --now irqbalance"
    )


HOST_RULES: tuple[Rule, ...] = (
    Rule(
        "cpu_governor",
        "performance on every CPU",
        "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        _judge_governor,
        _persist_governor,
    ),
    Rule(
        "numa_balancing",
        "0",
        "sysctl -w kernel.numa_balancing=0",
        _judge_numa_balancing,
        _sysctl_persist("kernel.numa_balancing", 0),
    ),
    Rule(
        "swappiness",
        "0 or 1",
        "sysctl -w vm.swappiness=0",
        _judge_swappiness,
        _sysctl_persist("vm.swappiness", 0),
    ),
    Rule(
        "sched_migration_cost",
        f"{SCHED_MIGRATION_COST_NS} ({SCHED_MIGRATION_COST_NS}-{SCHED_MIGRATION_COST_MAX_NS})",
        _migration_fix,
        _judge_migration,
        _persist_migration,
    ),
    Rule(
        "thp",
        "never or madvise",
        "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
        _judge_thp,
        _persist_thp,
    ),
    Rule(
        "irqbalance",
        "not running",
        "systemctl stop irqbalance",
        _judge_irqbalance,
        _irqbalance_ban,
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
        "run as root, or give the container --cap-add SYS_NICE",
        _judge_cap,
    ),
    Rule(
        "npu_smi",
        "npu-smi found",
        "install the Ascend driver; in a container add "
        "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi -v /usr/local/dcmi:/usr/local/dcmi "
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
        _judge_npu_smi,
    ),
    Rule(
        "numactl",
        "installed",
        _install("numactl"),
        _tool_judge("numactl", "`ascendtune bind --membind` and `numactl --membind` need it"),
    ),
    Rule(
        "migratepages",
        "installed (numactl package)",
        _install("numactl"),
        _tool_judge(
            "migratepages",
            "vLLM-Ascend skips memory migration without it: pages stay on remote NUMA nodes",
        ),
    ),
    Rule(
        "taskset",
        "installed (util-linux)",
        _install("util-linux"),
        _tool_judge(
            "taskset", "vLLM-Ascend binds threads with `taskset -acp`", fail_with_npus=True
        ),
    ),
    Rule("arch", "aarch64", "ascendtune bind --rank R --pid PID  # for each worker", _judge_arch),
    Rule(
        "locale",
        "C, POSIX, en_* or unset",
        "export LC_ALL=C.UTF-8",
        _judge_locale,
        "set LC_ALL=C.UTF-8 in the server's environment (its systemd unit's Environment=, "
        "or docker run -e LC_ALL=C.UTF-8)",
    ),
)

# tuned-adm only tells which persistent fix to give (a tuned profile where tuned runs)
TOOLS = ("npu-smi", "numactl", "migratepages", "taskset", "tuned-adm")
HOST_CHECK_IDS = tuple(r.id for r in HOST_RULES)


def host_checks(inp: DoctorInput) -> list[Check]:
    """The host rules, then the NPU interrupt rows (`npu_irq:N`, or one `npu_irq`)."""
    return [rule.check(inp) for rule in HOST_RULES] + npu_irq_checks(inp)


# ---- NPU interrupts -----------------------------------------------------------------------------

IRQ_CHECK_ID = "npu_irq"
IRQ_EXPECTED = "each NPU's sq_send_trigger_irq and cq_update_irq on its rank's IRQ CPUs"


def _irq_skip(detail: str, value: str | None = None, cid: str = IRQ_CHECK_ID) -> Check:
    return Check(cid, "skip", value, IRQ_EXPECTED, None, "host", detail)


def npu_irq_checks(inp: DoctorInput) -> list[Check]:
    """One `npu_irq:N` row per Ascend NPU: are its SQ/CQ interrupts where the plan puts them?

    vLLM-Ascend pins them to the first two CPUs of the rank's pool (the rank whose pool is
    NPU N's); doctor reads proc/irq/IRQ/smp_affinity_list. One `npu_irq` row says why not."""
    host, facts = inp.host, inp.facts
    if host is None:
        return [_irq_skip(f"host unreadable: {inp.host_error}")]
    if not host.npus:
        return [_irq_skip("no Ascend NPU on this host")]
    if facts.interrupts is None:
        return [
            _irq_skip(
                "proc/interrupts is missing: cannot tell where the NPU interrupts land "
                "(a sysroot captured before ascendtune recorded it?)"
            )
        ]
    try:
        parsed = parse_interrupts(facts.interrupts, source="proc/interrupts", keep=NPU_IRQ_NAMES)
    except ParseError as e:
        return [_irq_skip(str(e))]
    if not any(ln.named(SQ_IRQ_NAME) for ln in parsed.lines):
        return [
            _irq_skip(
                f"no {SQ_IRQ_NAME} line in proc/interrupts: the Ascend driver is not loaded "
                "here, or this driver version names its interrupts otherwise"
            )
        ]
    affs = affinities(facts.irq_affinity)
    return [_npu_irq_row(a, parsed, affs, inp) for a in sorted(host.npus, key=_logical)]


def _logical(a: Accelerator) -> int:
    return a.logical_id


def _irq_rank(plan: PlanFacts, logical_id: int) -> RankPlan | None:
    if plan.plan is None:
        return None
    return next((r for r in plan.plan.ranks if r.logical_id == logical_id), None)


def _on(cpus: CpuSet | None) -> str:
    return "?" if cpus is None else format_cpulist(cpus) or "none"


def _npu_irq_row(
    a: Accelerator, parsed: Interrupts, affs: Mapping[int, CpuSet | None], inp: DoctorInput
) -> Check:
    cid = f"{IRQ_CHECK_ID}:{a.logical_id}"
    plan, facts = inp.plan, inp.facts
    if not a.bus_id:
        return _irq_skip(f"NPU {a.logical_id} has no PCI address here", cid=cid)
    bus = a.bus_id.lower()
    msi = facts.msi_irqs.get(bus)
    found = npu_irqs(parsed, bus, msi)
    if found.sq is None or found.cq is None:
        where = (
            f"sys/bus/pci/devices/{bus}/msi_irqs"
            if msi is not None
            else f"lines naming PCI {bus} (no msi_irqs listing recorded)"
        )
        return _irq_skip(
            f"none of the {found.sq_candidates} {SQ_IRQ_NAME} lines belongs to NPU "
            f"{a.logical_id} ({where})",
            cid=cid,
        )
    sq, cq = found.sq, found.cq
    sq_on, cq_on = affs.get(sq), affs.get(cq)
    value = (
        f"NPU {a.logical_id} (PCI {bus}): {SQ_IRQ_NAME} IRQ {sq} on CPUs {_on(sq_on)}, "
        f"{CQ_IRQ_NAME} IRQ {cq} on CPUs {_on(cq_on)}"
    )
    data: dict[str, Any] = {
        "device": a.logical_id,
        "pci": bus,
        "sq_irq": sq,
        "cq_irq": cq,
        "sq_cpus": None if sq_on is None else format_cpulist(sq_on),
        "cq_cpus": None if cq_on is None else format_cpulist(cq_on),
        "found_by": found.found_by,
    }
    notes: list[str] = []
    if not found.cq_named:
        notes.append(
            f"IRQ {cq} (sq + 1, which vLLM-Ascend takes as {CQ_IRQ_NAME}) is not named "
            f"{CQ_IRQ_NAME} in proc/interrupts"
        )
    rank = _irq_rank(plan, a.logical_id)
    if rank is None:
        why = (
            f"no plan to compare with: {plan.error}"
            if plan.plan is None
            else f"NPU {a.logical_id} has no rank in the {plan.policy} plan (not visible, or "
            "no process on it)"
        )
        return Check(cid, "skip", value, IRQ_EXPECTED, None, "host", why, data)
    irq_cpus = rank.roles.irq
    if not irq_cpus:
        return Check(
            cid, "skip", value, IRQ_EXPECTED, None, "host",
            f"the {plan.policy} plan reserves no IRQ CPUs for rank {rank.rank} "
            "(Ascend 950, or --no-irq-reserve)", data,
        )  # fmt: skip
    want_sq, want_cq = irq_cpus[0], irq_cpus[1] if len(irq_cpus) > 1 else irq_cpus[0]
    expected = (
        f"{plan.policy} rank {rank.rank}: IRQ {sq} on CPU {want_sq}, IRQ {cq} on CPU {want_cq}"
    )
    data.update(plan_rank=rank.rank, expected_sq_cpu=want_sq, expected_cq_cpu=want_cq)
    if sq_on is None or cq_on is None:
        missing = [str(i) for i, on in ((sq, sq_on), (cq, cq_on)) if on is None]
        return Check(
            cid, "skip", value, expected, None, "host",
            f"proc/irq/{{{','.join(missing)}}}/smp_affinity_list (and smp_affinity) unreadable",
            data,
        )  # fmt: skip
    allowed = frozenset(irq_cpus)
    ranks = plan.plan.ranks if plan.plan is not None else ()
    workers_cpus = frozenset(
        c for r in ranks for c in (*r.roles.main, *r.roles.acl, *r.roles.release)
    )
    off = (sq_on | cq_on) - allowed
    status: Status
    if not off:
        status = "ok"
    elif off & workers_cpus:
        status = "fail"
        notes.insert(
            0,
            f"they land on CPUs {format_cpulist(off & workers_cpus)} where the plan runs worker "
            "threads: every operator launch and completion interrupts them (vLLM-Ascend pins "
            "them at start only where /proc/irq is writable: a container needs --privileged)",
        )
    else:
        status = "warn"
        notes.insert(
            0,
            f"on CPUs {format_cpulist(off)}, off the plan's IRQ CPUs {format_cpulist(allowed)} "
            "but clear of its worker threads",
        )
    pids = facts.irqbalance_pids or ()
    fix = (
        f"echo {want_sq} > /proc/irq/{sq}/smp_affinity_list && "
        f"echo {want_cq} > /proc/irq/{cq}/smp_affinity_list"
    )
    if pids:
        notes.append(
            f"irqbalance is running (PID {_ids(pids)}) and rebalances every 10 s: it undoes "
            "this pinning unless stopped or kept off these CPUs"
        )
        if status == "ok":
            status = "warn"
        fix = "systemctl stop irqbalance && " + fix
    if status == "ok":
        return Check(cid, "ok", value, expected, None, "host", "; ".join(notes) or None, data)
    persistent = (
        _irqbalance_ban(inp)
        if pids or facts.irqbalance_config
        else "IRQ numbers may change at boot: vLLM-Ascend re-pins them at each start "
        "(enable_cpu_binding, /proc/irq writable); or run the echo lines from a boot unit"
    )
    return Check(
        cid, status, value, expected, fix, "host", "; ".join(notes), data,
        fix_persistent=persistent,
    )  # fmt: skip


# ---- workers ------------------------------------------------------------------------------------


def redact_command(argv: Sequence[str], limit: int = 160) -> str:
    """A command line fit to print: values of --api-key-like options masked, cut at `limit`."""
    out = redact_args(argv)
    text = " ".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Audit(NamedTuple):
    """What the audit computed for one worker; kept to judge overlaps."""

    worker: WorkerFacts
    used: CpuSet  # every CPU any of its threads may run on
    cpuset: CpuSet  # what "unbound" is measured against
    unbound: tuple[int, ...]  # tids
    rank: RankPlan | None

    @property
    def all_unbound(self) -> bool:
        return bool(self.worker.threads) and len(self.unbound) == len(self.worker.threads)


def _dev_word(w: WorkerFacts) -> str:
    return vendors.profile(w.vendor).word


def _vllm_ascend(w: WorkerFacts) -> bool:
    """vLLM-Ascend's own binding rules apply: the worker holds Ascend NPUs."""
    return w.vendor == Vendor.HUAWEI.value


def _ids(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


def _match(threads: Sequence[ThreadFacts], target: BindTarget) -> str | None:
    """Which plan the threads follow: "roles" (each its role's mask), "pool" (all the pool)."""
    if target.has_roles and all(
        t.cpus == target.thread_target(t.name, use_roles=True)[1] for t in threads
    ):
        return "roles"
    if all(t.cpus == target.cpus for t in threads):
        return "pool"
    return None


def _role_threads(threads: Sequence[ThreadFacts]) -> dict[str, list[ThreadFacts]]:
    return {name: [t for t in threads if t.name.strip() == name] for name in ROLE_THREAD_NAMES}


def _masks(threads: Sequence[ThreadFacts]) -> list[dict[str, Any]]:
    count: dict[CpuSet, int] = {}
    for t in threads:
        count[t.cpus] = count.get(t.cpus, 0) + 1
    return [
        {"cpus": format_cpulist(m), "threads": n}
        for m, n in sorted(count.items(), key=lambda x: (-x[1], min(x[0], default=-1)))
    ]


def _device_node(host: Host | None, device: int) -> int | None:
    if host is None:
        return None
    a = host.accelerator(device)
    return a.numa_node if a else None


def _fallback_fix(w: WorkerFacts, host: Host | None, cpuset: CpuSet) -> str | None:
    """Without a plan rank: bind to the device's affinity, when that narrows anything."""
    if host is None or len(w.devices) != 1:
        return None
    a = host.accelerator(w.devices[0])
    cpus = a.cpu_affinity & cpuset if a is not None else frozenset()
    if not cpus or cpus == cpuset:
        return None
    return f"ascendtune bind --cpus {format_cpulist(cpus)} --pid {w.pid}"


def _audit_worker(w: WorkerFacts, inp: DoctorInput) -> tuple[Check, _Audit | None]:
    host, plan = inp.host, inp.plan
    cid = f"worker:{w.pid}"
    word = _dev_word(w)
    devs = f"{word} {_ids(w.devices)}" if w.devices else f"{word} ?"
    base_data: dict[str, Any] = {
        "pid": w.pid,
        "devices": list(w.devices),
        "device_files": list(w.device_files),
        "found_by": list(w.found_by),
        "comm": w.comm,
    }
    if not w.present:
        return (
            Check(
                cid,
                "skip",
                f"{devs}: PID {w.pid} has no proc/{w.pid} entry",
                None,
                None,
                "workers",
                "npu-smi lists it, but it is not visible here: it runs in another PID namespace "
                "(run doctor on the host, or the container with --pid=host)",
                base_data,
            ),
            None,
        )
    if not w.threads:
        return (
            Check(
                cid,
                "skip",
                f"{devs}: threads unreadable",
                None,
                None,
                "workers",
                f"no readable proc/{w.pid}/task/*/status (permission?)",
                base_data,
            ),
            None,
        )
    threads = w.threads
    used = frozenset(c for t in threads for c in t.cpus)
    cpuset = w.cpuset or (host.cpus_allowed if host is not None else used)
    unbound = tuple(t.tid for t in threads if t.cpus >= cpuset)
    nodes = host.nodes_of(used) if host is not None else ()
    dnode = _device_node(host, w.devices[0]) if len(w.devices) == 1 else None
    roles = _role_threads(threads)
    rank = plan.rank_of(w.devices[0]) if len(w.devices) == 1 else None
    target = target_of_rank(rank, plan.policy) if rank is not None else None
    matched = _match(threads, target) if target is not None else None
    audit = _Audit(w, used, cpuset, unbound, rank)

    who = w.comm or "?"
    value = f"{devs} ({who}): {len(threads)} threads"
    if unbound:
        value += f", {len(unbound)} unbound"
    value += f", on CPUs {format_cpulist(used)}"
    if nodes:
        value += f" (node {_ids(nodes)})"
    role_bits = [
        f"{name} on {format_cpulist(frozenset(c for t in ts for c in t.cpus))}"
        if ts
        else f"no {name}"
        for name, ts in roles.items()
    ]
    value += "; " + ", ".join(role_bits)

    expected: str | None
    if rank is not None and target is not None:
        r = rank.roles
        if target.has_roles and (r.acl or r.release):
            expected = (
                f"{plan.policy} rank {rank.rank}: main {format_cpulist(r.main)}, "
                f"acl {format_cpulist(r.acl)}, release {format_cpulist(r.release)}"
            )
        else:
            expected = f"{plan.policy} rank {rank.rank}: CPUs {format_cpulist(rank.cpus)}"
        if rank.numa_nodes:
            expected += f" (node {_ids(rank.numa_nodes)})"
    elif dnode is not None:
        expected = f"bound to CPUs of node {dnode} (its {word}'s node)"
    else:
        expected = "bound to its device's CPUs"

    fix = (
        plan.bind_command(rank.rank, w.pid) if rank is not None else _fallback_fix(w, host, cpuset)
    )
    details: list[str] = []
    status: Status
    if len(unbound) == len(threads):
        status = "fail"
        details.append(
            f"bound to nothing: every thread may run on all of {format_cpulist(cpuset)}"
            + (
                " (vLLM-Ascend only logs a warning when its binding fails)"
                if _vllm_ascend(w)
                else ""
            )
        )
    elif unbound:
        status = "warn"
        details.append(
            f"{len(unbound)} of {len(threads)} threads unbound (TIDs {_ids(unbound[:8])}{'…' if len(unbound) > 8 else ''})"
        )
    elif matched is not None:
        status = "ok"
        fix = None
        if matched == "pool" and target is not None and target.has_roles:
            details.append(
                "every thread on the whole pool: acl_thread/release_thread not split out"
            )
    elif target is not None:
        status = "warn"
        details.append(
            f"bound, but not as the {plan.policy} plan places rank {rank.rank if rank else '?'}"
        )
    else:
        status = "ok"
        fix = None
        if plan.error:
            details.append(f"no plan to compare with: {plan.error}")
        elif len(w.devices) > 1:
            details.append(f"holds {len(w.devices)} devices: compared with no single rank")
        elif plan.plan is not None:
            details.append(f"its {word} is not in the {plan.policy} plan (--visible-devices?)")
    if dnode is not None and nodes and dnode not in nodes:
        details.append(
            f"runs wholly on node {_ids(nodes)}, away from its {word} on node {dnode} "
            "(memory follows the CPUs, so host-device copies cross nodes)"
        )
        if matched is not None and plan.policy == "vllm-ascend":
            details.append(
                "this is vLLM-Ascend's own plan: the second NPU of a pair gets the next node; "
                "--policy numa-local keeps it local"
            )
        if status == "ok":
            status = "warn"
            fix = plan.bind_command(rank.rank, w.pid, "numa-local") if rank is not None else fix
    data = {
        **base_data,
        "command": redact_command(w.command) if w.command else None,
        "uid": w.uid,
        "session": w.session,
        "parents": [{"pid": a.pid, "comm": a.comm} for a in w.ancestors],
        "threads_total": len(threads),
        "threads_unbound": len(unbound),
        "cpus": format_cpulist(used),
        "cpuset": format_cpulist(cpuset),
        "numa_nodes": list(nodes),
        "device_numa_node": dnode,
        "role_threads": {
            name: [{"tid": t.tid, "cpus": format_cpulist(t.cpus)} for t in ts]
            for name, ts in roles.items()
        },
        "masks": _masks(threads),
        "plan_rank": rank.rank if rank is not None else None,
        "matches_plan": matched if target is not None else None,
    }
    return (
        Check(cid, status, value, expected, fix, "workers", "; ".join(details) or None, data),
        audit,
    )


def same_job(a: WorkerFacts, b: WorkerFacts) -> bool | None:
    """True when two workers are ranks of one job, False when two services, None: can't tell.

    One job's workers share a cgroup and a session, and a parent or grandparent that is not a
    launcher (shell, init, container runtime): the EngineCore or the API server.
    """
    if a.cgroup is not None and b.cgroup is not None and a.cgroup != b.cgroup:
        return False
    if a.session is not None and b.session is not None and a.session != b.session:
        return False
    if not a.ancestors or not b.ancestors:
        return None

    def near(w: WorkerFacts) -> set[int]:
        out = {w.pid}
        out.update(x.pid for x in w.ancestors[:2] if x.pid > 1 and x.comm not in LAUNCHERS)
        return out

    return bool(near(a) & near(b) - {a.pid, b.pid} or a.pid in near(b) or b.pid in near(a))


def _overlap_fix(a: _Audit, b: _Audit, plan: PlanFacts) -> str | None:
    loose = [x for x in (a, b) if x.all_unbound]
    if loose:  # binding the unbound one(s) is enough
        if any(x.rank is None for x in loose):
            return None
        return " && ".join(plan.bind_command(x.rank.rank, x.worker.pid) for x in loose if x.rank)
    if a.rank is None or b.rank is None:
        return None
    pol = plan.policy if not a.rank.cpuset & b.rank.cpuset else "numa-local"
    return (
        f"{plan.bind_command(a.rank.rank, a.worker.pid, pol)} && "
        f"{plan.bind_command(b.rank.rank, b.worker.pid, pol)}"
    )


def _overlap_check(a: _Audit, b: _Audit, plan: PlanFacts) -> Check | None:
    shared = a.used & b.used
    if not shared:
        return None
    pa, pb = a.worker.pid, b.worker.pid
    job = same_job(a.worker, b.worker)
    kind = {True: "ranks of one job", False: "different services", None: "unknown"}[job]
    value = f"PIDs {pa} and {pb} share CPUs {format_cpulist(shared)} ({kind})"
    status: Status = "fail"
    fix = _overlap_fix(a, b, plan)
    if a.all_unbound or b.all_unbound:
        status = "warn"
        loose = [str(x.worker.pid) for x in (a, b) if x.all_unbound]
        detail = (
            f"worker {' and '.join(loose)} is unbound; binding it (see its worker row) ends this"
        )
    elif job is False:
        detail = (
            "two services compete for the same CPUs: each bound itself without knowing the "
            "other (the failure vLLM-Ascend issue 8600 describes); give each a disjoint cpuset "
            "or bind both from one plan"
        )
    elif job is True and _vllm_ascend(a.worker):
        detail = (
            "two ranks of one job share CPUs: vLLM-Ascend's topo_affinity extends an NPU alone "
            "on its node onto a node another NPU uses; --policy numa-local does not overlap"
        )
    elif job is True:
        detail = (
            "two ranks of one job share CPUs; --policy numa-local or exclusive does not overlap"
        )
    else:
        detail = (
            "two workers share CPUs; could not tell whether they are one job (no proc/PID/stat)"
        )
    data = {"pids": [pa, pb], "cpus": format_cpulist(shared), "same_job": job, "kind": kind}
    return Check(
        f"overlap:{pa},{pb}", status, value, "no CPU shared between workers", fix, "workers",
        detail, data,
    )  # fmt: skip


def worker_checks(workers: Sequence[WorkerFacts], inp: DoctorInput, scanned: str) -> list[Check]:
    """One `worker:PID` row per worker, then one `overlap:A,B` row per pair sharing CPUs."""
    if not workers:
        return [
            Check(
                "workers",
                "skip",
                "no NPU or GPU worker process found",
                None,
                None,
                "workers",
                scanned,
            )
        ]
    out: list[Check] = []
    audits: list[_Audit] = []
    for w in sorted(workers, key=lambda w: w.pid):
        check, audit = _audit_worker(w, inp)
        out.append(check)
        if audit is not None:
            audits.append(audit)
    for i, a in enumerate(audits):
        for b in audits[i + 1 :]:
            ov = _overlap_check(a, b, inp.plan)
            if ov is not None:
                out.append(ov)
    return out


# ---- the report ---------------------------------------------------------------------------------


def summary(checks: Sequence[Check]) -> dict[str, int]:
    return {s: sum(1 for c in checks if c.status == s) for s in STATUSES}


def exit_code(checks: Sequence[Check]) -> int:
    """SPEC.md section 4: 1 when any check failed, else 0."""
    return 1 if any(c.status == "fail" for c in checks) else 0
