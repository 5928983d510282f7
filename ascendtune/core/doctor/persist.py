"""Fixes that survive a reboot: sysctl.d, the kernel command line, tuned, irqbalance's config.

Each is one bash line that does the same thing when pasted twice: a config line is replaced,
never appended a second time (`set_line`), and the kernel command line gets an argument once."""

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


def set_line(path: str, key: str, line: str) -> str:
    """A bash line that leaves exactly one line starting with `key` in path: `line` (lines of
    other keys kept; the file made if missing), so pasting it twice changes nothing more."""
    pattern = key.replace(".", r"\.").replace("/", r"\/")
    return f"touch {path} && sed -i '/^{pattern}/d' {path} && echo '{line}' >> {path}"


def sysctl_persist(key: str, value: object) -> str:
    return set_line(SYSCTL_D_FILE, f"{key} ", f"{key} = {value}") + f" && sysctl -p {SYSCTL_D_FILE}"


def kernel_arg(inp: DoctorInput, arg: str) -> str:
    """Add `arg` to the kernel command line the way this distribution does it (next boot)."""
    ids = host_os_ids(inp)
    grubby = f"grubby --update-kernel=ALL --args={arg}"
    # the argument added once: a line that holds it already is left alone
    grub = (
        f"sed -i '/^GRUB_CMDLINE_LINUX=/{{/{arg.replace('.', chr(92) + '.')}/!s/^GRUB_CMDLINE_LINUX=\"/&{arg} /}}' "
        "/etc/default/grub && "
    ) + ("update-grub" if ids & _DEBIAN_LIKE else "grub2-mkconfig -o /boot/grub2/grub.cfg")
    if ids & _DEBIAN_LIKE:
        return grub
    if ids & _RHEL_LIKE:
        return grubby
    return f"{grubby}  # or: {grub}"


def _tuned_note(inp: DoctorInput) -> str:
    # a comment of its own: the line stays a command that runs as pasted
    prof = inp.facts.tuned_profile
    return f"  # tuned's active profile now: {prof}" if prof else ""


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
            set_line(TMPFILES_D_FILE, f"w /{path} ", f"w /{path} - - - - {SCHED_MIGRATION_COST_NS}")
            + ("  # or in a tuned profile: [scheduler] sched_migration_cost_ns="
               f"{SCHED_MIGRATION_COST_NS}" if inp.facts.tuned else "")
        )  # fmt: skip
    return sysctl_persist("kernel.sched_migration_cost_ns", SCHED_MIGRATION_COST_NS)


def persist_thp(inp: DoctorInput) -> str:
    out = kernel_arg(inp, "transparent_hugepage=never")
    if inp.facts.tuned:
        prof = inp.facts.tuned_profile
        out += "  # or [vm] transparent_hugepages=never in a tuned profile" + (
            f" (tuned's active profile now: {prof})" if prof else ""
        )
    return out


def host_os_ids(inp: DoctorInput) -> set[str]:
    """The distribution of the host a host-wide fix runs on: etc/os-release, except in a
    container, whose os-release names the image, not the host (then unknown)."""
    return set() if inp.facts.container else set(inp.facts.os_ids)


def _irqbalance_config(inp: DoctorInput) -> str:
    """irqbalance's config file: the one present, else the distribution's (Debian and Ubuntu
    read /etc/default/irqbalance, RHEL and openEuler /etc/sysconfig/irqbalance); for an unknown
    distribution, a shell word that picks it on the host ($cfg, set by IRQBALANCE_CFG_PICK)."""
    if inp.facts.irqbalance_config and not inp.facts.container:
        return "/" + inp.facts.irqbalance_config
    ids = host_os_ids(inp)
    if ids & _DEBIAN_LIKE:
        return "/etc/default/irqbalance"
    if ids & _RHEL_LIKE:
        return "/etc/sysconfig/irqbalance"
    return "$cfg"


# on a host of unknown distribution: RHEL and openEuler have /etc/sysconfig, Debian does not
IRQBALANCE_CFG_PICK = (
    "cfg=/etc/default/irqbalance && { [ ! -d /etc/sysconfig ] || cfg=/etc/sysconfig/irqbalance; }"
)


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
        (f"{IRQBALANCE_CFG_PICK} && " if cfg == "$cfg" else "")
        + f"printf '{_POLICY_SCRIPT}' > {IRQBALANCE_POLICY} && chmod 755 {IRQBALANCE_POLICY} && "
        + set_line(
            cfg, "IRQBALANCE_BANNED_CPULIST=", f"IRQBALANCE_BANNED_CPULIST={format_cpulist(cpus)}"
        )
        + " && "
        + set_line(cfg, "IRQBALANCE_ARGS=", f'IRQBALANCE_ARGS="--policyscript={IRQBALANCE_POLICY}"')
        + " && systemctl restart irqbalance  # or: systemctl disable --now irqbalance"
    )
