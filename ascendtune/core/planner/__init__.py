"""The planner: per-rank CPU pools under a named policy (pure; reads only the Host model)."""

from ascendtune.core.planner.engine import POLICIES, make_plan
from ascendtune.core.planner.model import Plan, PlanRequest, RankPlan, Roles

__all__ = ["POLICIES", "Plan", "PlanRequest", "RankPlan", "Roles", "make_plan"]
