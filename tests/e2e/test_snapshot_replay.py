"""What `snapshot` captures is what `doctor` reads: every demo, with every knob doctor judges set
the way an untuned host has it, is captured and replayed, and doctor says the same of the replay.

The knobs are written here by hand, as an operator's host has them, not from the rules'
declarations (Rule.reads): a rule reading a file it does not declare fails (HostFacts.only), and
a file the snapshot misses turns its check from warn into skip on the replay. Every check that reads a knob must judge it on the
original (all but NOT_KNOBS), so a new rule's knob must be set below for the test to pass."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.doctor import HOST_CHECK_IDS
from ascendtune.core.model import Vendor
from ascendtune.host import snapshot
from ascendtune.host.demos import DEMOS
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from ascendtune.synth.render import render
from ascendtune.synth.standard import DEMO_SPECS
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI
from tests.support.irqhosts import write_npu_irqs

# host checks that may skip on a demo with every knob set: they judge the host's devices, not
# a knob (no Ascend NPU: no npu-smi to want, no ARM-only binding to miss); every other check
# must judge the original, so a new rule's knob has to be set below
NOT_KNOBS = {"npu_smi", "arch"}
IRQBALANCE_PID = 1312


def untuned(b: SysrootBuilder, meta: dict[str, Any], *, debugfs: bool) -> None:
    """Every knob doctor judges, set as an untuned host has it."""
    root = b.root
    for cpu in sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*")):
        b.file(f"sys/devices/system/cpu/{cpu.name}/cpufreq/scaling_governor", "powersave\n")
    b.file("proc/sys/kernel/numa_balancing", "1\n")
    b.file("proc/sys/vm/swappiness", "60\n")
    b.file(
        "proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        "/dev/dm-1                               partition\t8388604\t\t0\t\t-2\n",
    )
    migration = "proc/sys/kernel/sched_migration_cost_ns"
    if debugfs:  # kernels >= 5.13 moved it to debugfs
        (root / migration).unlink(missing_ok=True)
        migration = "sys/kernel/debug/sched/migration_cost_ns"
    b.file(migration, "500000\n")
    b.file("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    status = (root / "proc/self/status").read_text()
    status = re.sub(r"(?m)^CapEff:.*\n", "", status) + "CapEff:\t0000000000000000\n"
    b.file("proc/self/status", status)
    allowed = re.search(r"(?m)^Cpus_allowed_list:\s*(\S+)", status)
    assert allowed is not None
    b.file("proc/self/cgroup", "0::/svc/llm\n")
    b.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    b.file("sys/fs/cgroup/svc/llm/cpuset.cpus.effective", allowed.group(1) + "\n")
    b.file("etc/os-release", 'NAME="openEuler"\nID="openEuler"\nID_LIKE="rhel fedora"\n')
    b.file("etc/tuned/active_profile", "balanced\n")
    b.file("etc/sysconfig/irqbalance", "IRQBALANCE_ONESHOT=\n")
    b.proc(IRQBALANCE_PID, comm="irqbalance", cmdline=["/usr/sbin/irqbalance", "--foreground"])
    tools = {"numactl": None, "migratepages": None, "taskset": None, "tuned-adm": None}
    meta.update(
        proc_scanned=True,
        tools={**meta.get("tools", {}), **tools},
        env={"LANG": "zh_CN.UTF-8"},
    )
    b.file("meta.json", json.dumps(meta, indent=2) + "\n")
    host = read_host(DirRoot(root))
    buses = {a.logical_id: a.bus_id for a in host.accelerators if a.vendor is Vendor.HUAWEI}
    if buses and all(buses.values()):
        # the NPU interrupts where irqbalance left them: on every CPU
        write_npu_irqs(b, buses, len(host.cpus_online), {})  # type: ignore[arg-type]


def doctor_checks(root: Path) -> list[dict[str, Any]]:
    res = CLI("doctor", "--sysroot", str(root), "--json")
    assert res.exit_code in (0, 1), res.output
    return schemas.loads("doctor", res.stdout)["checks"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("demo", list(DEMOS))
def test_every_demo_untuned_replays_the_same_doctor(demo: str, tmp_path: Path) -> None:
    tree = render(DEMO_SPECS[demo](demo))
    meta = json.loads(tree.files.get("meta.json", "{}"))
    b = SysrootBuilder(tmp_path / "host").tree(tree)
    untuned(b, meta, debugfs=list(DEMOS).index(demo) % 2 == 1)
    before = doctor_checks(b.root)
    by_id = {c["id"]: c for c in before}
    assert [c for c in HOST_CHECK_IDS if c not in by_id] == []
    skipped = {i for i in HOST_CHECK_IDS if by_id[i]["status"] == "skip"} - NOT_KNOBS
    assert not skipped, f"{demo}: no knob set here for {sorted(skipped)}"
    assert str(IRQBALANCE_PID) in by_id["irqbalance"]["value"]

    snap = tmp_path / "snap"
    snapshot.write(snapshot.capture(DirRoot(b.root)), str(snap))
    after = doctor_checks(snap)
    assert [(c["id"], c["status"]) for c in after] == [(c["id"], c["status"]) for c in before]
    assert after == before
