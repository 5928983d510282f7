"""vLLM-Ascend's first allocator (0.9.1rc2-0.13.0, `cpu_binding.py` blobs 2cb1e84a and
280e516e): each visible NPU's NUMA node from PCI, that node's CPUs split evenly among the
visible NPUs on it, the whole worker process bound to its share. No thread roles, no IRQ
CPUs, no cpuset awareness: the kernel keeps only the allowed CPUs of what it is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.findings import Finding
from ascendtune.core.model import Accelerator, Host, Soc, Source
from ascendtune.core.planner.model import NUMA_SPLIT, PlanRequest, RankPlan, Roles

if TYPE_CHECKING:
    from ascendtune.core.planner.engine import _Result
    from ascendtune.core.vllm_ascend import VllmAscendVersion


def node_count(host: Host) -> int:
    """What the release reads as the node count: the last digit of lscpu's "NUMA node(s):"
    line (so 16 nodes read as 6)."""
    return int(str(len(host.numa_nodes) or 1)[-1])


def mcu_rows(host: Host) -> bool:
    """`npu-smi info -m` lists an Mcu row after each card's chips (910B, 910_93, 310P; not 950).
    This release keys its map by Chip Logic ID and reads the Mcu row's "-" as 0, so logical id
    0 ends up naming the last card's Mcu. (Used only where the map's rows were not read.)"""
    return host.soc_detected in (Soc.A2, Soc.A3, Soc.P310)


def release_map(host: Host) -> dict[int, tuple[int, int]] | str | None:
    """The release's map of `npu-smi info -m`, read as it reads it: each row after the header
    split into NPU ID, Chip ID, Chip Logic ID and the rest by position, whatever the header
    says; a Chip Logic ID that is not a number ("-" on an Mcu row) reads as 0, and a later row
    replaces an earlier one with the same id. Logical id -> (NPU ID, Chip ID). A str: why the
    release fails to read the map (every rank then binds nothing); None: no map was read."""
    rows = host.npu_map_rows
    if not rows:
        return None
    out: dict[int, tuple[int, int]] = {}
    for cells in rows:
        if len(cells) < 4:
            return (
                f"a row of `npu-smi info -m` has {len(cells)} cell(s) where this release unpacks "
                "four (ValueError)"
            )
        try:
            npu, chip = int(cells[0]), int(cells[1])
            logical = int(cells[2]) if cells[2].isnumeric() else 0
        except ValueError:
            return (
                f"`npu-smi info -m` has the row {' '.join(cells[:3])!r}..., whose first three "
                "cells this release reads as numbers (ValueError)"
            )
        out[logical] = (npu, chip)
    return out


def device_nodes(
    devices: Sequence[int],
    by_id: dict[int, Accelerator],
    host: Host,
    pairs: dict[int, tuple[int, int]] | None = None,
) -> tuple[dict[int, int], dict[int, list[int]], str]:
    """(device -> node, node -> devices in the list's order, how): from each device's PCI
    NUMA node; when no device has one, the devices dealt in order to the nodes. pairs: the
    release's map (release_map); each device's board is asked for the (NPU, chip) it names
    there, and a pair that is no chip (an Mcu row) gives no PCIe address."""
    dev_node: dict[int, int] = {}
    node_devs: dict[int, list[int]] = {}
    by_pair = {(a.npu_id, a.chip_id): a for a in by_id.values()}
    for d in devices:
        if pairs is not None:
            acc = by_pair.get(pairs[d]) if d in pairs else None
        elif d == 0 and mcu_rows(host):
            continue  # its -m entry is the last card's Mcu row, whose board has no PCIe address
        else:
            acc = by_id.get(d)
        node = acc.numa_node if acc is not None and acc.numa_source == Source.SYSFS else None
        if node is None or node < 0:
            continue
        dev_node[d] = node
        node_devs.setdefault(node, []).append(d)
    if dev_node:
        return dev_node, node_devs, "the NPUs' NUMA nodes from PCI (lspci)"
    k = node_count(host)
    per, tail = divmod(len(devices), k) if k else (0, 0)
    start = 0
    for n in range(k):
        take = per + (1 if n < tail else 0)
        node_devs[n] = list(devices[start : start + take])
        for d in node_devs[n]:
            dev_node[d] = n
        start += take
    return (
        dev_node,
        node_devs,
        "no NPU's NUMA node is known from PCI, so the NPUs are dealt in order to the nodes",
    )


def _node_cpus(host: Host, node: int) -> list[int] | str:
    """The node's CPUs as the release parses lscpu's "NUMA nodeN CPU(s):" line, or why the
    parse fails (it accepts only a-b ranges)."""
    match = [n for n in host.numa_nodes if n.id == node]
    if not match:
        return f"lscpu prints no CPU list for NUMA node {node}"
    cpus = sorted(match[0].cpus & host.cpus_online)
    text = format_cpulist(cpus)
    if any("-" not in part for part in text.split(",")):
        return (
            f"lscpu prints node {node}'s CPUs as {text or '(nothing)'}, and this release accepts "
            'only a-b ranges there ("lscpu command output error, please check !")'
        )
    return cpus


def eligible(host: Host) -> list[int]:
    """What psutil binds for an empty CPU list: the first a-b range of Cpus_allowed_list as
    /proc/self/status prints it, else CPUs 0..(online CPUs - 1)."""
    text = format_cpulist(host.cpus_allowed)
    first = text.split(",", 1)[0]
    if host.allowed_from_status and "-" in first:
        a, b = first.split("-")
        return list(range(int(a), int(b) + 1))
    return list(range(len(host.cpus_online)))


def plan(
    host: Host,
    devices_all: Sequence[Accelerator],
    jobs: list[int],
    env: tuple[int, ...] | None,
    req: PlanRequest,
    target: VllmAscendVersion,
) -> _Result:
    from ascendtune.core.planner.engine import _rank_plan, _Result

    by_id = {d.logical_id: d for d in devices_all}
    got = release_map(host)
    pairs = got if isinstance(got, dict) else None
    # the visible variable as given, else every logical NPU of `npu-smi info -m`, sorted
    devices = list(env) if env is not None else sorted(by_id if pairs is None else pairs)
    whole: str | None = got if isinstance(got, str) else None
    if whole is None and pairs is not None:
        unmapped = [d for d in devices if d not in pairs]
        if unmapped:
            whole = (
                f"NPU {unmapped[0]} has no row in `npu-smi info -m` as this release reads it "
                '(by position), so it stops ("Can not get device info")'
            )
    dev_node, node_devs, how = device_nodes(devices, by_id, host, pairs)
    notes = [
        f"modelled on vLLM-Ascend {target.name}: the NUMA-split allocator of 0.9.1-0.13.0 "
        "(the worker calls bind_cpus(local_rank, ratio=1.0)); " + how,
        "no thread roles: the whole worker process is bound to one CPU set",
    ]
    bad = {n: why for n in node_devs if isinstance(why := _node_cpus(host, n), str)}
    ranks: list[RankPlan] = []
    findings: list[Finding] = []
    allowed = host.cpus_allowed & host.cpus_online
    for rank, device in enumerate(jobs):
        skipped: str | None = None
        cpus: list[int] = []
        cur = devices[rank] if rank < len(devices) else device
        node = dev_node.get(cur)
        if whole is not None:
            skipped = whole
        elif bad:
            skipped = next(iter(bad.values()))
        elif rank >= len(devices):
            skipped = (
                f"its device list [{','.join(map(str, devices))}] has no entry {rank} (IndexError)"
            )
        elif node is None:
            skipped = f"NPU {cur} has no NUMA node (its PCI device shows none)"
        else:
            shard = sorted(node_devs[node])
            node_cpus = _node_cpus(host, node)
            assert not isinstance(node_cpus, str)
            per = len(node_cpus) // len(shard)
            idx = shard.index(cur)
            want = node_cpus[idx * per : (idx + 1) * per]
            # psutil: an empty list means every eligible CPU (the first a-b range of
            # Cpus_allowed_list); the kernel keeps the allowed ones
            cpus = sorted(set(want or eligible(host)) & allowed)
            if not cpus and want:
                skipped = (
                    f"its share {format_cpulist(want)} of node {node} lies wholly outside the "
                    f"cpuset {format_cpulist(host.cpus_allowed)} (sched_setaffinity: EINVAL)"
                )
            elif not cpus:
                skipped = (
                    f"its share of node {node} is empty ({len(node_cpus)} CPUs over "
                    f"{len(shard)} NPUs), psutil reads an empty list as CPUs "
                    f"{format_cpulist(eligible(host))}, and none of them is in the cpuset "
                    f"{format_cpulist(host.cpus_allowed)} (sched_setaffinity: EINVAL)"
                )
        rp = _rank_plan(host, rank, device, cur, cpus, Roles(main=tuple(cpus)))
        if skipped is not None:
            from dataclasses import replace

            rp = replace(rp, locality=None, skipped=skipped)
            findings.append(
                Finding(
                    "binding_skipped",
                    "warning",
                    f"on {target.name} rank {rank} drives NPU {device}: {skipped}; vLLM-Ascend "
                    'skips binding it ("Skip binding cpu.") and its threads run anywhere in the '
                    "cpuset",
                    "bind it with `ascendtune bind --workers` once the server is up",
                    ranks=(rank,),
                )
            )
        ranks.append(rp)
    if not ranks:
        raise PlanError("no rank to plan")
    return _Result(NUMA_SPLIT, ranks, notes, findings=findings, target=target.name)
