"""Help and piped output as a new user meets them: whole command summaries, metavars that say
what goes there, and piped text that is never wrapped."""

from __future__ import annotations

import re

import pytest

from tests.support.cli import CLI


def invoke(*args: str, **env: str) -> str:
    """stdout at the width the test gives (COLUMNS="": a pipe, no width)."""
    res = CLI(*args, env=env)
    assert res.exit_code in (0, 1), res.output
    return res.stdout


def test_root_help_summaries_are_whole() -> None:
    out = invoke("--help", COLUMNS="200")
    commands = out.split("Commands:", 1)[1]
    assert not [x for x in commands.splitlines() if x.rstrip().endswith("...")], commands
    entries = dict(re.findall(r"^  (\S+) +(.*(?:\n {5,}.*)*)", commands, flags=re.M))
    assert set(entries) == {
        "topo",
        "plan",
        "bind",
        "check-config",
        "doctor",
        "snapshot",
        "watch",
        "log",
        "explain",
        "fleet",
        "agent",
    }
    for name, summary in entries.items():
        assert summary.rstrip().endswith("."), (name, summary)  # the first sentence, whole


@pytest.mark.parametrize("command", ["topo", "plan", "doctor", "watch"])
def test_metavars_say_what_goes_there(command: str) -> None:
    out = invoke(command, "--help", COLUMNS="200")
    # --emit's line belongs to the plan document work (see the issue); everything else is named
    generic = [
        m for m in re.findall(r"^\s+(-[^\n]*?<[a-z ]+>)", out, flags=re.M) if "--emit" not in m
    ]
    assert generic == [], generic


def test_metavars_and_defaults_of_the_plan_options() -> None:
    out = invoke("plan", "--help", COLUMNS="200")
    for piece in (
        "--policy POLICY",
        "--ranks N",
        "--reserve CPULIST",
        "--soc SOC",
        "--target VERSION",
    ):
        assert piece in out
    assert "[default: auto]" in out


def test_piped_text_is_never_wrapped() -> None:
    # no COLUMNS and not a terminal: a reader greps whole lines
    out = invoke("doctor", "--demo", "container-a2-half", COLUMNS="")
    # in the container demo the kernel's fixes say they run on the host
    fixes = [
        x for x in out.splitlines() if re.match(r"    persistent( \(on the host[^)]*\))?: ", x)
    ]
    assert fixes and all(
        x.rstrip().endswith(("grub.cfg  # kernels >= 5.9", ".conf", "irqbalance"))
        for x in fixes[:1]
    ), fixes[:1]
    assert any("  # or: systemctl disable --now irqbalance" in x for x in fixes)


def test_plan_names_the_host_on_its_first_line() -> None:
    for args, first in (
        (("plan", "--demo", "container-a2-half"), "plan for demo container-a2-half"),
        (("doctor", "--demo", "dgx-h100"), "doctor for demo dgx-h100"),
        (("topo", "--demo", "atlas-800i-a3"), "demo atlas-800i-a3 (hostname atlas-800i-a3-demo)"),
        (("plan", "--demo", "dgx-h100", "--policy", "compare"), "plan for demo dgx-h100"),
    ):
        assert invoke(*args, COLUMNS="80").splitlines()[0].startswith(first)


def test_container_plan_shows_both_numberings() -> None:
    out = invoke("plan", "--demo", "container-a2-half", COLUMNS="80")
    header = next(x for x in out.splitlines() if "rank" in x and "NPU" in x)
    assert "npu-smi" in header
    row0 = next(x for x in out.splitlines() if re.match(r"^│\s+0 │\s+0 │ 4 ", x))
    assert row0
