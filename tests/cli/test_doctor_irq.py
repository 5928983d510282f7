"""`doctor`'s `npu_irq` rows: each NPU's SQ/CQ interrupts against the plan's IRQ CPUs, through
the CLI on sysroot trees, and replayed from a snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.doctor_hosts import A2_BDF, doctor_json, rows, tuned
from tests.support.irqhosts import BASE_IRQ, STEP, npu_interrupts, plan_irq_cpus, write_npu_irqs

IRQ_IDS = [f"npu_irq:{n}" for n in range(8)]


def sq_of(n: int) -> int:
    """The sq_send_trigger_irq of NPU n in tests.support.irqhosts (NPUs in logical id order)."""
    return BASE_IRQ + STEP * n


def irq_rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in rows(doc).items() if k.startswith("npu_irq")}


def test_interrupts_on_the_plans_irq_cpus_pass(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 0
    r = irq_rows(doc)
    assert list(r) == IRQ_IDS
    assert {k: v["status"] for k, v in r.items()} == dict.fromkeys(IRQ_IDS, "ok")
    row = r["npu_irq:4"]
    sq_cpu, cq_cpu = plan[4]
    assert row["value"] == (
        f"NPU 4 (PCI 0000:01:00.0): sq_send_trigger_irq IRQ {sq_of(4)} on CPUs {sq_cpu}, "
        f"cq_update_irq IRQ {sq_of(4) + 1} on CPUs {cq_cpu}"
    )
    assert row["expected"].startswith("vllm-ascend rank ")
    assert row["fix"] is None and row["fix_persistent"] is None
    assert row["data"]["found_by"] == "msi_irqs"
    assert (row["data"]["sq_irq"], row["data"]["cq_irq"]) == (sq_of(4), sq_of(4) + 1)


def test_interrupts_on_worker_cpus_fail_with_the_echo_fix(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    # vLLM-Ascend could not write /proc/irq (an unprivileged container): NPUs 0 and 5 are left
    # on every CPU; NPU 2's sit on CPU 100, a main CPU of some rank
    pinned = {n: cpus for n, cpus in plan.items() if n not in (0, 5)}
    pinned[2] = (100, 100)
    write_npu_irqs(sysroot, A2_BDF, 192, pinned)
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 1
    st = {k: v["status"] for k, v in irq_rows(doc).items()}
    assert st == {**dict.fromkeys(IRQ_IDS, "ok"), "npu_irq:0": "fail", "npu_irq:2": "fail",
                  "npu_irq:5": "fail"}  # fmt: skip
    row = rows(doc)["npu_irq:0"]
    sq_cpu, cq_cpu = plan[0]
    assert row["fix"] == (
        f"echo {sq_cpu} > /proc/irq/{sq_of(0)}/smp_affinity_list && "
        f"echo {cq_cpu} > /proc/irq/{sq_of(0) + 1}/smp_affinity_list"
    )
    assert "on CPUs 0-191" in row["value"]
    assert "where the plan runs worker threads" in row["detail"]
    assert "--privileged" in row["detail"]
    assert row["data"]["expected_sq_cpu"] == sq_cpu
    # no irqbalance, no config for it: the persistent word is vLLM-Ascend's own re-pinning
    assert "re-pins them at each start" in row["fix_persistent"]
    assert "CPUs 100," in rows(doc)["npu_irq:2"]["value"]


def test_interrupts_on_another_ranks_irq_cpus_warn(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    write_npu_irqs(sysroot, A2_BDF, 192, {**plan, 0: plan[1], 1: plan[0]})
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 0
    r = irq_rows(doc)
    assert (r["npu_irq:0"]["status"], r["npu_irq:1"]["status"]) == ("warn", "warn")
    assert "clear of its worker threads" in r["npu_irq:0"]["detail"]
    assert r["npu_irq:2"]["status"] == "ok"


def test_irqbalance_running_is_named_and_banned(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.proc(1312, comm="irqbalance", cmdline=["/usr/sbin/irqbalance", "--foreground"])
    sysroot.file("etc/sysconfig/irqbalance", "#IRQBALANCE_BANNED_CPULIST=\n")
    plan = plan_irq_cpus(sysroot)
    code, doc = doctor_json(sysroot, "--section", "host")
    r = irq_rows(doc)
    # pinned right, but irqbalance will move them on its next pass
    assert {k: v["status"] for k, v in r.items()} == dict.fromkeys(IRQ_IDS, "warn")
    row = r["npu_irq:3"]
    assert "irqbalance is running (PID 1312)" in row["detail"]
    assert row["fix"].startswith("systemctl stop irqbalance && echo ")
    irq_cpus = sorted({c for pair in plan.values() for c in pair})
    persist = row["fix_persistent"]
    # banning the IRQ CPUs alone would make irqbalance move the NPU interrupts off them: its
    # policy script bans those interrupts by name
    assert persist.startswith("printf '#!/bin/sh\\ngrep -Eq \"^ *$2:.*(sq_send_trigger_irq|")
    assert f"echo 'IRQBALANCE_BANNED_CPULIST={irq_cpus[0]}-" in persist
    assert (
        "echo 'IRQBALANCE_ARGS=\"--policyscript=/usr/local/sbin/ascendtune-irqbalance-policy\"' "
        ">> /etc/sysconfig/irqbalance && systemctl restart irqbalance"
    ) in persist
    assert rows(doc)["irqbalance"]["fix_persistent"] == row["fix_persistent"]
    assert code == 0


def test_no_interrupts_file_is_one_skip_with_a_reason(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    (sysroot.root / "proc" / "interrupts").unlink()
    code, doc = doctor_json(sysroot, "--section", "host")
    assert code == 0
    (row,) = irq_rows(doc).values()
    assert (row["id"], row["status"]) == ("npu_irq", "skip")
    assert "proc/interrupts is missing" in row["detail"]


def test_no_npu_interrupt_lines_and_a_broken_file(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    sysroot.file("proc/interrupts", "     CPU0 CPU1\n 11: 1 2 GICv3 27 Level arch_timer\n")
    (row,) = irq_rows(doctor_json(sysroot, "--section", "host")[1]).values()
    assert row["status"] == "skip" and "no sq_send_trigger_irq line" in row["detail"]
    sysroot.file("proc/interrupts", "garbage\n")
    (row,) = irq_rows(doctor_json(sysroot, "--section", "host")[1]).values()
    assert row["status"] == "skip" and "no CPU header" in row["detail"]


def test_without_msi_irqs_the_line_tells_the_device(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    for style, how in (("its-pci-msix", "pci"), ("its-msi", "hwirq"), ("x86", "hwirq")):
        for bdf in A2_BDF.values():
            for f in (sysroot.root / "sys/bus/pci/devices" / bdf / "msi_irqs").glob("*"):
                f.unlink()
            (sysroot.root / "sys/bus/pci/devices" / bdf / "msi_irqs").rmdir()
        write_npu_irqs(sysroot, A2_BDF, 192, plan, style=style, msi_irqs=False)
        _code, doc = doctor_json(sysroot, "--section", "host")
        r = irq_rows(doc)
        assert {k: v["status"] for k, v in r.items()} == dict.fromkeys(IRQ_IDS, "ok"), style
        assert r["npu_irq:7"]["data"]["found_by"] == how
        write_npu_irqs(sysroot, A2_BDF, 192, plan, style=style, msi_irqs=True)


def test_hex_mask_when_there_is_no_affinity_list(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    for f in (sysroot.root / "proc" / "irq").glob("*/smp_affinity_list"):
        f.unlink()
    write_npu_irqs(sysroot, A2_BDF, 192, {**plan, 6: (191, 191)}, mask_only=True)
    code, doc = doctor_json(sysroot, "--section", "host")
    st = {k: v["status"] for k, v in irq_rows(doc).items()}
    assert st == {**dict.fromkeys(IRQ_IDS, "ok"), "npu_irq:6": "fail"}
    assert code == 1
    for f in (sysroot.root / "proc" / "irq").glob(f"{sq_of(1)}/smp_affinity"):
        f.unlink()
    row = rows(doctor_json(sysroot, "--section", "host")[1])["npu_irq:1"]
    assert row["status"] == "skip" and "unreadable" in row["detail"]


def test_npus_without_a_rank_are_skipped(sysroot: SysrootBuilder) -> None:
    tuned(sysroot)
    write_npu_irqs(sysroot, A2_BDF, 192, plan_irq_cpus(sysroot, "--visible-devices", "4,5"))
    _code, doc = doctor_json(sysroot, "--section", "host", "--visible-devices", "4,5")
    st = {k: v["status"] for k, v in irq_rows(doc).items()}
    assert (st["npu_irq:4"], st["npu_irq:5"]) == ("ok", "ok")
    assert {st[f"npu_irq:{n}"] for n in (0, 1, 2, 3, 6, 7)} == {"skip"}
    assert "no rank in the vllm-ascend plan" in rows(doc)["npu_irq:0"]["detail"]
    # no IRQ CPUs reserved: nothing to compare
    _code, doc = doctor_json(
        sysroot, "--section", "host", "--policy", "numa-local", "--no-irq-reserve"
    )
    assert "reserves no IRQ CPUs" in rows(doc)["npu_irq:4"]["detail"]


def test_report_shows_the_fix_and_its_persistent_form(sysroot: SysrootBuilder, cli: Cli) -> None:
    tuned(sysroot)
    write_npu_irqs(sysroot, A2_BDF, 192, {})
    res = cli("doctor", "--sysroot", str(sysroot.root), "--section", "host")
    assert res.exit_code == 1
    assert "fix: echo " in res.stdout and f"/proc/irq/{sq_of(0)}/smp_affinity_list" in res.stdout
    # a comment, not words a shell would run as a command
    assert "persistent: # IRQ numbers may change at boot" in res.stdout


def test_snapshot_captures_and_replays_the_interrupts(
    sysroot: SysrootBuilder, tmp_path: Path, cli: Cli
) -> None:
    tuned(sysroot)
    plan = plan_irq_cpus(sysroot)
    write_npu_irqs(sysroot, A2_BDF, 192, {**plan, 3: (5, 6)})
    before = doctor_json(sysroot, "--section", "host")[1]
    for dest in (tmp_path / "snap", tmp_path / "snap.tar.gz"):
        res = cli("snapshot", "--sysroot", str(sysroot.root), str(dest))
        assert res.exit_code == 0, res.output
        res = cli("doctor", "--sysroot", str(dest), "--json", "--section", "host")
        after = schemas.loads("doctor", res.stdout)
        assert irq_rows(after) == irq_rows(before)
        assert rows(after)["npu_irq:3"]["status"] == "fail"
    snap = tmp_path / "snap"
    assert (snap / "proc/interrupts").read_text() == npu_interrupts(A2_BDF, 192)
    assert (snap / f"proc/irq/{sq_of(3)}/smp_affinity_list").read_text() == "5\n"
    assert (snap / f"sys/bus/pci/devices/0000:c1:00.0/msi_irqs/{sq_of(0)}").is_file()
