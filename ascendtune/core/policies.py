"""The binding policies: the one list. Each entry is light (names and words, no code), so option
help, completion and the --policy check of a bind that needs no plan read it without importing
the planner; the planner (core.planner.engine) builds its registry from these entries, joining
each to the planner function its `plan` names.

Adding a policy is an entry here; one that needs an algorithm of its own also adds a planner
function to the engine's PLANNERS. Which policies `plan --policy compare` sets side by side is
the host's vendor profile's choice (`VendorProfile.compare_families`) among these families.
"""

from typing import Literal, NamedTuple

# runtime: what the accelerator's serving runtime does itself (flaws included); ascendtune: this
# tool's own; torchrun: the modes of `torchrun --numa-binding`, for GPU users' habits
Family = Literal["runtime", "ascendtune", "torchrun"]


class Policy(NamedTuple):
    name: str
    summary: str
    family: Family
    plan: str  # the planner function that runs it (a key of core.planner.engine.PLANNERS)
    vendors: tuple[str, ...] = ()  # the vendors it plans (Vendor values); () every vendor


POLICIES: tuple[Policy, ...] = (
    Policy(
        "vllm-ascend",
        "exactly what vLLM-Ascend's enable_cpu_binding does (topo_affinity / global_slice / "
        "Ascend 950 clusters), flaws included, to predict or reproduce it",
        "runtime",
        "vllm_ascend",
        ("huawei",),
    ),
    Policy(
        "numa-local",
        "each rank on its own device's NUMA node; devices on one node split it evenly in whole "
        "physical cores; never crosses a node",
        "ascendtune",
        "numa_local",
    ),
    Policy(
        "numa-slice",
        "vLLM-Ascend's global slicing made NUMA-aware: devices dealt to nodes, slices never "
        "cross a node, the same for every process sharing the cpuset (for A3 or no affinity)",
        "ascendtune",
        "numa_slice",
    ),
    Policy(
        "node",
        "torchrun's node mode: every CPU of the device's NUMA node (ranks on a node share them)",
        "torchrun",
        "torchrun",
    ),
    Policy(
        "socket",
        "torchrun's socket mode: every CPU of the NUMA nodes on the device's socket",
        "torchrun",
        "torchrun",
    ),
    Policy(
        "exclusive",
        "torchrun's exclusive mode: the node's physical cores split evenly among its devices",
        "torchrun",
        "torchrun",
    ),
    Policy(
        "core-complex",
        "torchrun's core-complex mode: one last-level-cache group of the node per device",
        "torchrun",
        "torchrun",
    ),
)
POLICY_NAMES: tuple[str, ...] = tuple(p.name for p in POLICIES)
