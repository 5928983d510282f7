"""The policy list is one: core.policies (light, read by option help and completion); the
planner's registry is built from it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ascendtune.app.planchoices import policy_choices
from ascendtune.core import policies
from ascendtune.core.planner import POLICIES, POLICY_NAMES, engine


def test_the_registry_is_built_from_the_light_list() -> None:
    assert tuple(POLICIES) == POLICY_NAMES == policies.POLICY_NAMES
    for light, info in zip(policies.POLICIES, POLICIES.values(), strict=True):
        assert (info.name, info.summary, info.family) == (light.name, light.summary, light.family)
        assert info.run is engine.PLANNERS[light.plan]
    assert policy_choices(compare=True) == ("auto", *POLICIES, "compare")


def test_an_entry_naming_no_planner_stops_the_planner_loading() -> None:
    with pytest.raises(ImportError, match="planner 'fastest'"):
        engine._info(policies.Policy("x", "y", "ascendtune", "fastest"))


def test_a_bind_by_cpus_does_not_import_the_planner() -> None:
    code = (
        "import sys, ascendtune.cli.app, ascendtune.cli.bind, ascendtune.app.bind, "
        "ascendtune.host.affinity; "
        "bad = [m for m in ('ascendtune.core.planner', 'ascendtune.app.plan', 'psutil') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
