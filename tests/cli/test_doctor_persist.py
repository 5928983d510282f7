"""`fix_persistent` on doctor rows: the form of each fix that survives a reboot (sysctl.d, the
kernel command line, tuned, the irqbalance config), per distribution and with or without tuned."""

from __future__ import annotations

from ascendtune.host.facts import gather_host_facts
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.doctor_hosts import TOOLS_ALL, doctor_json, rows, tuned, untuned

SYSCTL_D = "/etc/sysctl.d/90-ascendtune.conf"


def sysctl_line(key: str, value: object) -> str:
    # the key's old line dropped first: pasted twice, the file still holds it once
    pattern = key.replace(".", "\\.")
    return (
        f"touch {SYSCTL_D} && sed -i '/^{pattern} /d' {SYSCTL_D} && "
        f"echo '{key} = {value}' >> {SYSCTL_D} && sysctl -p {SYSCTL_D}"
    )


def detune(b: SysrootBuilder) -> SysrootBuilder:
    """The tuned A2 (openEuler) with its kernel knobs back at their defaults."""
    for c in range(192):
        b.file(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor", "ondemand\n")
    b.file("proc/sys/kernel/numa_balancing", "1\n")
    b.file("proc/sys/vm/swappiness", "60\n")
    b.file("proc/sys/kernel/sched_migration_cost_ns", "500000\n")
    b.file("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    return b


def test_every_row_has_the_key_and_ok_rows_have_none(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    _, doc = doctor_json(sysroot)
    assert all("fix_persistent" in c and c["fix_persistent"] is None for c in doc["checks"])


def test_ubuntu_without_tuned_sysctl_d_and_grub(sysroot: SysrootBuilder) -> None:
    untuned(sysroot)
    _, doc = doctor_json(sysroot, "--section", "host")
    p = {k: v["fix_persistent"] for k, v in rows(doc).items()}
    # the argument added to GRUB_CMDLINE_LINUX unless the line has it already
    grub = (
        "sed -i '/^GRUB_CMDLINE_LINUX=/{{/{0}/!s/^GRUB_CMDLINE_LINUX=\"/&{1} /}}' "
        "/etc/default/grub && update-grub"
    )
    gov = "cpufreq.default_governor=performance"
    assert p["cpu_governor"] == grub.format(gov.replace(".", "\\."), gov) + "  # kernels >= 5.9"
    assert p["numa_balancing"] == sysctl_line("kernel.numa_balancing", 0)
    assert p["swappiness"] == sysctl_line("vm.swappiness", 0)
    assert p["sched_migration_cost"] == sysctl_line("kernel.sched_migration_cost_ns", 50000)
    assert p["thp"] == grub.format("transparent_hugepage=never", "transparent_hugepage=never")
    # no npu-smi, so no plan and no IRQ CPUs to keep irqbalance off: turn it off for good
    assert p["irqbalance"] == "systemctl disable --now irqbalance"
    assert "LC_ALL=C.UTF-8" in p["locale"]
    # a container's cpuset, capabilities, installed tools and the CPU: nothing to persist
    for cid in ("cgroup_cpuset", "cap_sys_nice", "npu_smi", "numactl", "taskset", "arch"):
        assert p[cid] is None, cid
    # the immediate fixes are unchanged
    assert rows(doc)["numa_balancing"]["fix"] == "sysctl -w kernel.numa_balancing=0"


def test_openeuler_with_tuned_uses_tuned_and_grubby(sysroot: SysrootBuilder) -> None:
    detune(tuned(sysroot))
    sysroot.meta(
        arch="aarch64",
        tools={**TOOLS_ALL, "tuned-adm": "/usr/sbin/tuned-adm"},
        env={"LANG": "C"},
        proc_scanned=True,
    )
    sysroot.file("etc/tuned/active_profile", "balanced\n")
    _, doc = doctor_json(sysroot, "--section", "host")
    p = {k: v["fix_persistent"] for k, v in rows(doc).items()}
    # the note is a comment: the line runs as pasted
    assert p["cpu_governor"] == (
        "tuned-adm profile latency-performance  # tuned's active profile now: balanced"
    )
    assert p["thp"] == (
        "grubby --update-kernel=ALL --args=transparent_hugepage=never  # or [vm] "
        "transparent_hugepages=never in a tuned profile (tuned's active profile now: balanced)"
    )
    # tuned re-applies /etc/sysctl.d after its own [sysctl]: the sysctl.d line still holds
    assert p["numa_balancing"] == sysctl_line("kernel.numa_balancing", 0)


def test_tuned_seen_from_its_folder_and_unknown_os(sysroot: SysrootBuilder) -> None:
    detune(tuned(sysroot))
    (sysroot.root / "etc" / "os-release").unlink()
    _, doc = doctor_json(sysroot, "--section", "host")
    p = {k: v["fix_persistent"] for k, v in rows(doc).items()}
    # not recorded, no folder: the kernel command line, both ways to set it
    assert p["cpu_governor"].startswith(
        "grubby --update-kernel=ALL --args=cpufreq.default_governor=performance  # or: sed -i"
    )
    assert "grub2-mkconfig -o /boot/grub2/grub.cfg" in p["thp"]
    sysroot.file("usr/lib/tuned/latency-performance/tuned.conf", "[cpu]\ngovernor=performance\n")
    facts = gather_host_facts(DirRoot(sysroot.root))
    assert facts.tuned is True and facts.tuned_profile is None
    _, doc = doctor_json(sysroot, "--section", "host")
    assert rows(doc)["cpu_governor"]["fix_persistent"] == "tuned-adm profile latency-performance"


def test_tuned_recorded_absent(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.meta(arch="aarch64", tools={**TOOLS_ALL, "tuned-adm": None}, proc_scanned=True)
    assert gather_host_facts(DirRoot(sysroot.root)).tuned is False
    sysroot.meta(arch="aarch64", tools=TOOLS_ALL, proc_scanned=True)
    assert gather_host_facts(DirRoot(sysroot.root)).tuned is None


def test_migration_cost_in_debugfs_goes_to_tmpfiles(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    (sysroot.root / "proc/sys/kernel/sched_migration_cost_ns").unlink()
    sysroot.file("sys/kernel/debug/sched/migration_cost_ns", "500000\n")
    _, doc = doctor_json(sysroot, "--section", "host")
    row = rows(doc)["sched_migration_cost"]
    assert row["fix"] == "echo 50000 > /sys/kernel/debug/sched/migration_cost_ns"
    tmpfiles = "/etc/tmpfiles.d/90-ascendtune.conf"
    assert row["fix_persistent"] == (
        f"touch {tmpfiles} && sed -i '/^w \\/sys\\/kernel\\/debug\\/sched\\/migration_cost_ns /d' "
        f"{tmpfiles} && echo 'w /sys/kernel/debug/sched/migration_cost_ns - - - - 50000' >> "
        f"{tmpfiles}"
    )
    sysroot.file("etc/tuned/active_profile", "throughput-performance\n")
    _, doc = doctor_json(sysroot, "--section", "host")
    assert rows(doc)["sched_migration_cost"]["fix_persistent"].endswith(
        "  # or in a tuned profile: [scheduler] sched_migration_cost_ns=50000"
    )


def test_irqbalance_ban_uses_the_config_file_present(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.proc(900, comm="irqbalance", cmdline=["/usr/sbin/irqbalance"])
    sysroot.file("etc/default/irqbalance", "#IRQBALANCE_ARGS=\n")
    _, doc = doctor_json(sysroot, "--section", "host")
    row = rows(doc)["irqbalance"]
    assert row["fix"] == "systemctl stop irqbalance"
    # the vllm-ascend plan of the A2: two IRQ CPUs at the start of each of 8 pools
    assert "echo 'IRQBALANCE_BANNED_CPULIST=0-1,24-25,48-49," in row["fix_persistent"]
    assert ">> /etc/default/irqbalance && systemctl restart irqbalance" in row["fix_persistent"]
    assert "--policyscript=/usr/local/sbin/ascendtune-irqbalance-policy" in row["fix_persistent"]
    assert row["fix_persistent"].endswith("# or: systemctl disable --now irqbalance")


def test_report_prints_the_persistent_line(sysroot: SysrootBuilder, cli: Cli) -> None:
    untuned(sysroot)
    res = cli("doctor", "--sysroot", str(sysroot.root), "--section", "host")
    assert res.exit_code == 1
    out = res.stdout
    assert "    fix: sysctl -w kernel.numa_balancing=0\n" in out
    assert f"    persistent: {sysctl_line('kernel.numa_balancing', 0)}\n" in out
    assert out.index("fix: sysctl -w kernel.numa_balancing=0") < out.index(
        "persistent: " + sysctl_line("kernel.numa_balancing", 0)
    )
