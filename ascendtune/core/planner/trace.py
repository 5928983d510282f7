"""What the `vllm-ascend` policy computed on its way to a plan: the inputs and the intermediate
pools of each step, recorded by the planner itself so `explain binding` cannot drift from `plan`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ascendtune.core.cpulist import CpuSet


@dataclass
class PoolTrace:
    """One call of a pool allocator for one running-NPU list."""

    running: tuple[int, ...]
    candidates: list[int] = field(default_factory=list)  # topo_affinity: NPUs given a pool
    base: dict[int, list[int]] = field(default_factory=dict)  # affinity ∩ cpuset
    extended: dict[int, list[int]] = field(default_factory=dict)  # after the next-node step
    next_node: dict[int, int | None] = field(default_factory=dict)  # the node added (None: none)
    shared: dict[int, list[int]] = field(default_factory=dict)  # NPU -> NPUs with its pool
    final: dict[int, list[int]] = field(default_factory=dict)
    total: int = 0  # global_slice: the NPUs the cpuset is divided by
    per_npu: int = 0  # global_slice: base CPUs per NPU
    extra: int = 0  # global_slice: NPUs that take one CPU more


@dataclass
class RankTrace:
    rank: int
    dp_rank: int
    local: int
    device: int  # the NPU the rank drives
    seen: tuple[int, ...]  # the device list its worker sees
    running: tuple[int, ...]  # sorted busy NPUs of that list
    logical: int  # the NPU whose pool it gets
    how: str  # how logical was chosen
    skipped: str | None = None


@dataclass
class VllmTrace:
    """Filled by engine._plan_vllm when a trace is asked for; never changes the plan."""

    target: str = ""
    npu_of_rank: str = ""
    dp_mode: str = ""
    mode: str = ""
    mode_notes: list[str] = field(default_factory=list)
    soc: str = ""
    all_ids: list[int] = field(default_factory=list)
    jobs: list[int] = field(default_factory=list)  # devices the job drives, in rank order
    env_visible: tuple[int, ...] | None = None
    device_ids: tuple[int, ...] | None = None
    busy: list[int] = field(default_factory=list)
    busy_source: str = ""
    affinity: dict[int, CpuSet] = field(default_factory=dict)
    allowed: CpuSet = frozenset()  # Cpus_allowed_list
    usable: CpuSet = frozenset()  # minus --reserve
    world: int = 0
    dp: int = 1
    pools: dict[tuple[int, ...], PoolTrace] = field(default_factory=dict)
    ranks: list[RankTrace] = field(default_factory=list)
