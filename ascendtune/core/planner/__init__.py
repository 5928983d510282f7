"""The planner: per-rank CPU pools under a named policy (pure; reads only the Host model)."""

from typing import TYPE_CHECKING, Any

from ascendtune.core.planner.model import Plan, PlanRequest, RankPlan, Roles

if TYPE_CHECKING:
    from ascendtune.core.planner.engine import (
        POLICIES,
        POLICY_NAMES,
        PolicyInfo,
        compare_policies,
        make_plan,
    )

__all__ = [
    "POLICIES",
    "POLICY_NAMES",
    "Plan",
    "PlanRequest",
    "PolicyInfo",
    "RankPlan",
    "Roles",
    "compare_policies",
    "make_plan",
]

_ENGINE = frozenset({"POLICIES", "POLICY_NAMES", "PolicyInfo", "compare_policies", "make_plan"})


def __getattr__(name: str) -> Any:
    # the engine (every policy, the vLLM-Ascend table, the traces) is imported on first use:
    # what only reads plan records (snapshot and doctor's facts, through core.doctor) never
    # imports it (docs/startup.md)
    if name in _ENGINE:
        from ascendtune.core.planner import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
