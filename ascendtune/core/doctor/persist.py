"""Fixes that survive a reboot: sysctl.d, the kernel command line, tuned, irqbalance's config."""

from __future__ import annotations

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.doctor.facts import DoctorInput, PlanFacts
from ascendtune.core.parsers.interrupts import CQ_IRQ_NAME, SQ_IRQ_NAME

# vLLM-Ascend developer guide, performance_and_debug/optimization_and_tuning.md, section 4.4
# "Increase Scheduler Migration Cost": `sysctl -w kernel.sched_migration_cost_ns=50000`,
# "Typical recommended range: 50000–100000". (The kernel default, 500000, is higher still:
# the guide's title says "increase" but its number lowers it; we follow the number.)
SCHED_MIGRATION_COST_NS = 50000
SCHED_MIGRATION_COST_MAX_NS = 100000


SYSCTL_D_FILE = "/etc/sysctl.d/90-ascendtune.conf"
TMPFILES_D_FILE = "/etc/tmpfiles.d/90-ascendtune.conf"
_RHEL_LIKE = frozenset(
    {"rhel", "centos", "fedora", "openeuler", "euleros", "kylin", "rocky", "almalinux", "anolis"}
)
_DEBIAN_LIKE = frozenset({"debian", "ubuntu"})


def sysctl_persist(key: str, value: object) -> str:
    return f"echo '{key} = {value}' >> {SYSCTL_D_FILE} && sysctl -p {SYSCTL_D_FILE}"


def kernel_arg(inp: DoctorInput, arg: str) -> str:
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


def persist_governor(inp: DoctorInput) -> str:
    if inp.facts.tuned:
        # latency-performance and throughput-performance both set governor=performance
        return "tuned-adm profile latency-performance" + _tuned_note(inp)
    return kernel_arg(inp, "cpufreq.default_governor=performance") + "  # kernels >= 5.9"


def persist_migration(inp: DoctorInput) -> str:
    path = inp.facts.sched_migration_cost.path
    if path.startswith("sys/kernel/debug/"):
        # no sysctl on kernels >= 5.13: systemd-tmpfiles writes it at every boot
        return (
            f"echo 'w /{path} - - - - {SCHED_MIGRATION_COST_NS}' >> {TMPFILES_D_FILE}"
            + ("  # or in a tuned profile: [scheduler] sched_migration_cost_ns="
               f"{SCHED_MIGRATION_COST_NS}" if inp.facts.tuned else "")
        )  # fmt: skip
    return sysctl_persist("kernel.sched_migration_cost_ns", SCHED_MIGRATION_COST_NS)


def persist_thp(inp: DoctorInput) -> str:
    out = kernel_arg(inp, "transparent_hugepage=never")
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


def irqbalance_ban(inp: DoctorInput) -> str:
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
