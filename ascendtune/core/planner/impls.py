"""vLLM-Ascend's binding implementations: each distinct `vllm_ascend/cpu_binding.py` among the
releases (named by its git blob prefix), described as data: which allocator, which modes per
SoC family, whether IRQ CPUs are reserved, how a rank finds its NPU, what makes it refuse.

Every fact here was read in that release's own source and is checked by running that source
(tests/reference). The planner asks `of(target)` and follows the record; adding an
implementation is adding an entry.
"""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ascendtune.core.model import Soc
from ascendtune.core.planner.model import (
    A5_CLUSTERS,
    GLOBAL_SLICE,
    NUMA_BALANCED,
    TOPO_AFFINITY,
    Plan,
)

if TYPE_CHECKING:
    from ascendtune.core.vllm_ascend import VllmAscendVersion

# allocators
NUMA_SPLIT = "numa-split"  # 0.9.1-0.13.0: each NPU's NUMA node (from PCI) split among its NPUs
POOLS = "pools"  # 0.14.0rc1 on: per-NPU pools from npu-smi's topo affinity, with thread roles

# how a rank finds the NPU whose pool it gets
DEVICES_LIST = "devices-list"  # devices[rank]: the visible list as given, else every NPU
RUNNING_LIST = "running-list"  # running_npu_list[rank]: sorted busy NPUs ∩ visible
NPU_ID = "npu-id"  # bind_cpus(rank, npu_id=device_id_to_physical_device_id(rank))

# how memory follows the CPUs (migratepages)
MEM_NONE = "none"
MEM_NODE_PAIR = "node-pair"  # the acl CPU's node and its pair (n, n^1), per acl thread
MEM_POOL_NODE = "pool-node"  # the node of the pool's first CPU


class Impl(NamedTuple):
    blob: str
    releases: str
    allocator: str
    arm_only: bool = True  # binding skipped (nothing bound) on a non-ARM host
    lscpu_e: bool = True  # reads `lscpu -e=CPU,NODE`: an offline CPU's node "-" fails it
    modes: Mapping[Soc, str] = MappingProxyType({Soc.A3: GLOBAL_SLICE})
    no_affinity: str = GLOBAL_SLICE  # the mode when npu-smi prints no CPU affinity
    irq_free: frozenset[Soc] = frozenset()  # families whose pools keep no IRQ CPUs
    min_pool: int = 5  # a pool's least size with IRQ CPUs (3 without)
    hidden_npus: bool = True  # NPUs not visible whose affinity meets the cpuset get pools too
    rank_npu: str = RUNNING_LIST
    topo_by_label: bool = True  # topo rows keyed by their NPU<n> label (else by row number)
    memory: str = MEM_POOL_NODE
    migrate_optional: bool = False  # the worker skips migration under Engram CPU offload
    # reads npu-smi by position, not by header (0.9.1-0.21.0rc1): `info -m`'s third cell as
    # the Chip Logic ID, and each process row's first cell as "<npu> <chip>"
    positional_npu_smi: bool = False

    @property
    def has_roles(self) -> bool:
        return self.allocator == POOLS

    def mode(self, soc: Soc, has_affinity: bool) -> str:
        mode = self.modes.get(soc, TOPO_AFFINITY)
        if mode == TOPO_AFFINITY and not has_affinity:
            return self.no_affinity
        return mode

    def irq_cpus(self, soc: Soc) -> bool:
        return soc not in self.irq_free

    def least_pool(self, soc: Soc) -> int:
        return self.min_pool if self.irq_cpus(soc) else 3


_A5_SLICE = MappingProxyType({Soc.A3: GLOBAL_SLICE, Soc.A5: GLOBAL_SLICE})
_A5_CLUSTER = MappingProxyType({Soc.A3: GLOBAL_SLICE, Soc.A5: A5_CLUSTERS})
_OLD = dict(
    allocator=NUMA_SPLIT,
    arm_only=False,
    lscpu_e=False,
    modes=MappingProxyType({}),
    hidden_npus=False,
    rank_npu=DEVICES_LIST,
    memory=MEM_NONE,
    positional_npu_smi=True,
)
_V15 = dict(
    allocator=POOLS,
    modes=MappingProxyType({Soc.A3: NUMA_BALANCED}),
    no_affinity=NUMA_BALANCED,
    min_pool=3,
    hidden_npus=False,
    topo_by_label=False,
    memory=MEM_NODE_PAIR,
    positional_npu_smi=True,
)
_V16 = dict(allocator=POOLS, hidden_npus=False, topo_by_label=False, positional_npu_smi=True)
_V20 = dict(allocator=POOLS, topo_by_label=False, positional_npu_smi=True)

IMPLS: dict[str, Impl] = {
    i.blob: i
    for i in (
        Impl("2cb1e84a", "0.9.1rc2-0.9.1", **_OLD),  # type: ignore[arg-type]
        Impl("280e516e", "0.11.0rc1-0.13.0", **_OLD),  # type: ignore[arg-type]
        Impl(
            "062ff4f9",
            "0.14.0rc1",
            POOLS,
            arm_only=False,
            modes=MappingProxyType({}),
            no_affinity=NUMA_BALANCED,
            irq_free=frozenset(Soc),
            min_pool=3,
            hidden_npus=False,
            topo_by_label=False,
            memory=MEM_NONE,
            positional_npu_smi=True,
        ),
        Impl("c09e740a", "0.15.0rc1", **_V15),  # type: ignore[arg-type]
        Impl("abb80aa1", "0.16.0rc1-0.18.0rc1", **_V16),  # type: ignore[arg-type]
        Impl("10967e04", "0.18.0", **_V16),  # type: ignore[arg-type]
        Impl("2d5ba9ec", "0.19.1rc1-0.20.2rc1", **_V20),  # type: ignore[arg-type]
        Impl("7b815e31", "0.21.0rc1", **_V20),  # type: ignore[arg-type]
        Impl(
            "5a947c7b",
            "0.22.1rc1",
            POOLS,
            modes=_A5_SLICE,
            irq_free=frozenset({Soc.A5}),
        ),
        Impl(
            "0cbc0e2b",
            "0.23.0rc1-0.25.1rc1",
            POOLS,
            modes=_A5_CLUSTER,
            irq_free=frozenset({Soc.A5}),
        ),
        Impl(
            "8448cd77",
            "main 182b75ea",
            POOLS,
            modes=_A5_CLUSTER,
            irq_free=frozenset({Soc.A5}),
        ),
        Impl(
            "cc55125b",
            "0.26.0rc1",
            POOLS,
            modes=_A5_CLUSTER,
            irq_free=frozenset({Soc.A5}),
            rank_npu=NPU_ID,
        ),
        Impl(
            "daab93aa",
            "0.27.1rc1-0.29.0rc1",
            POOLS,
            modes=_A5_CLUSTER,
            irq_free=frozenset({Soc.A5}),
            rank_npu=NPU_ID,
        ),
        Impl(
            "7ed2022f",
            "0.30.0rc1-0.30.0rc2",
            POOLS,
            modes=_A5_CLUSTER,
            irq_free=frozenset({Soc.A5}),
            rank_npu=NPU_ID,
            migrate_optional=True,
        ),
    )
}


# the implementation of each registry entry, until the registry names it (binding.impl)
def of(target: "VllmAscendVersion") -> Impl:
    """The implementation a registry entry runs (its binding.impl: cpu_binding.py's blob)."""
    blob = target.binding.impl
    if blob is None or blob not in IMPLS:
        raise ValueError(f"{target.name}: no binding implementation {blob!r} in the planner")
    return IMPLS[blob]


# findings that say vLLM-Ascend binds nothing at all on this host
REFUSAL_CODES = ("binding_refused", "offline_cpus", "not_arm")


def refusal(plan: Plan) -> str | None:
    """Why vLLM-Ascend binds no rank of plan (None: it binds as planned)."""
    for f in plan.findings:
        if f.code in REFUSAL_CODES:
            return f.message
    return None
