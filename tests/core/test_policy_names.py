"""The light list of policy names (option help, completion) is the planner registry's own."""

from __future__ import annotations

import subprocess
import sys

from ascendtune.app.planchoices import policy_choices
from ascendtune.core import policies
from ascendtune.core.planner import POLICIES, POLICY_NAMES


def test_the_light_names_are_the_registry_in_its_order() -> None:
    assert policies.POLICY_NAMES == tuple(POLICIES) == POLICY_NAMES
    assert policy_choices(compare=True) == ("auto", *POLICIES, "compare")


def test_a_bind_by_cpus_does_not_import_the_planner() -> None:
    code = (
        "import sys, ascendtune.cli.app, ascendtune.cli.bind, ascendtune.app.bind, "
        "ascendtune.host.affinity; "
        "bad = [m for m in ('ascendtune.core.planner', 'ascendtune.app.plan', 'psutil') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
