"""What a plan is: per-rank CPU pools with their role split, and what the planner was asked."""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.findings import Finding
from ascendtune.core.model import Soc
from ascendtune.core.vllm_ascend.registry import VllmAscendVersion

# The rules vLLM-Ascend's binding applies (its own names), and the better policies' modes
TOPO_AFFINITY = "topo_affinity"
GLOBAL_SLICE = "global_slice"
A5_CLUSTERS = "a5_clusters"  # Ascend 950: one 8-core cluster per NPU, no role split
NUMA_BALANCED = "numa_balanced"  # 0.14-0.15: the busy NPUs dealt to nodes, each node split
NUMA_SPLIT = "numa_split"  # 0.9.1-0.13.0: each NPU's node (from PCI) split among its NPUs
NO_BINDING = "no_binding"  # the vLLM-Ascend version ships no CPU binding
NUMA_LOCAL = "numa_local"
NUMA_SLICE = "numa_slice"


class PlanRequest(NamedTuple):
    policy: str = "vllm-ascend"
    visible: tuple[int, ...] | None = None  # device ids in the order given (None: every device)
    ranks: int | None = None  # only the first N ranks
    soc: Soc | None = None  # override the SoC family read from the chip names
    reserve: CpuSet = frozenset()  # housekeeping CPUs no rank may get
    irq_reserve: bool = True  # better policies: keep 2 CPUs (or a core) per rank for NPU IRQs
    spill: bool = False  # numa-local: lend nodes without devices to the nearest device node
    visible_source: str = (
        "all"  # "--visible-devices", "ASCEND_RT_VISIBLE_DEVICES", "--ranks", "all"
    )
    # data parallel (policy vllm-ascend): dp engines of tp × pp ranks each, on one node; None
    # keeps the single-engine meaning (one rank per visible device)
    dp: int | None = None
    tp: int | None = None
    pp: int | None = None
    device_ids: tuple[int, ...] | None = None  # vLLM's --device-ids (vLLM >= 0.24)
    # NPUs with a process in npu-smi's table when binding runs; None: the host's process table
    # (when it lists any) plus the job's own NPUs, which show up after warm-up
    busy: tuple[int, ...] | None = None
    target: VllmAscendVersion | None = None  # None: vllm_ascend.PLANNER_DEFAULT
    # the server runs Engram with CPU offload (0.30 on: the worker then skips page migration)
    engram_offload: bool = False
    # the target only stands in for the version found (nearest release below, newer than all):
    # the inference in words, which the plan reports as a finding
    target_inferred: str = ""


class Roles(NamedTuple):
    irq: tuple[int, ...] = ()
    main: tuple[int, ...] = ()
    acl: tuple[int, ...] = ()
    release: tuple[int, ...] = ()

    def to_json(self) -> dict[str, str]:
        return {
            "irq": format_cpulist(self.irq),
            "main": format_cpulist(self.main),
            "acl": format_cpulist(self.acl),
            "release": format_cpulist(self.release),
        }


@dataclass(frozen=True)
class RankPlan:  # a dataclass: cpuset is a cached_property
    rank: int
    device: int  # the NPU/GPU the rank runs on
    logical_id: int  # the device whose CPU pool it gets (differs only where vLLM-Ascend errs)
    cpus: tuple[int, ...]  # in the order the policy placed them
    roles: Roles
    numa_nodes: tuple[int, ...]  # nodes its CPUs lie on
    device_node: int | None  # the NUMA node of the device it runs on
    locality: float | None  # share of its CPUs on device_node (None: node unknown)
    dp_rank: int = 0
    local_rank: int | None = None  # the rank inside its DP engine (None: same as rank)
    skipped: str | None = None  # vLLM-Ascend skips binding this rank, and why (then no CPUs)
    # vllm-ascend: the NUMA nodes migratepages moves the worker's memory to (None: not moved)
    memory_nodes: tuple[int, ...] | None = None

    @property
    def local(self) -> int:
        return self.rank if self.local_rank is None else self.local_rank

    @cached_property
    def cpuset(self) -> CpuSet:
        return frozenset(self.cpus)

    def vllm_log_line(self, mode: str = TOPO_AFFINITY) -> str:
        """The line vLLM-Ascend logs for this rank under `mode` (cpu_binding.py `print_plan`)."""
        main = " ".join(map(str, self.roles.main))
        if mode == A5_CLUSTERS:
            return f"Ascend 950 NPU{self.logical_id}: worker=[{main}]"
        acl = " ".join(map(str, self.roles.acl))
        # vLLM-Ascend formats the release list with str(list), hence the doubled brackets
        rel = str(list(self.roles.release)) if self.roles.release else ""
        return f"NPU{self.logical_id}: main=[{main}]  acl=[{acl}]  release=[{rel}]"


class Overlap(NamedTuple):
    ranks: tuple[int, int]
    cpus: CpuSet


class Plan(NamedTuple):
    policy: str
    mode: str
    soc: Soc
    vendor: str
    ranks: tuple[RankPlan, ...]
    cpus_allowed: CpuSet
    reserved: CpuSet
    overlaps: tuple[Overlap, ...] = ()
    idle_cpus: CpuSet = frozenset()
    findings: tuple[Finding, ...] = ()  # what an operator must know
    notes: tuple[str, ...] = ()  # how the plan was made (fallbacks, assumptions)
    visible: tuple[int, ...] = ()
    total_devices: int = 0
    # vllm-ascend: the pools it gives NPUs this job does not use but whose affinity meets the
    # cpuset (other services'), to show where independent services would compete
    hidden_pools: Mapping[int, tuple[int, ...]] = MappingProxyType({})
    target: str | None = None  # the vLLM-Ascend version whose binding was modelled (vllm-ascend)

    def rank(self, r: int) -> RankPlan | None:
        for rp in self.ranks:
            if rp.rank == r:
                return rp
        return None
