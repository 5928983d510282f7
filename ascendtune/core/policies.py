"""The names of the planner's policies, in registry order, for what must not import the planner
(option help, completion, --policy checks of a bind that needs no plan). The registry itself is
core.planner.engine.POLICIES; it refuses to load when these names differ from its own."""

from __future__ import annotations

POLICY_NAMES: tuple[str, ...] = (
    "vllm-ascend",
    "numa-local",
    "numa-slice",
    "node",
    "socket",
    "exclusive",
    "core-complex",
)
