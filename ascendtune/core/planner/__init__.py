"""The planner: per-rank CPU pools under a named policy (pure; reads only the Host model)."""

from ascendtune.core.planner.engine import (
    POLICIES,
    POLICY_NAMES,
    PolicyInfo,
    compare_policies,
    make_plan,
)
from ascendtune.core.planner.model import Plan, PlanRequest, RankPlan, Roles

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
