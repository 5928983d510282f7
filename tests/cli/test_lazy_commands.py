"""The lazy root group: its static table says what the commands themselves say, and a command's
module is imported only when that command runs."""

from __future__ import annotations

import pytest

from ascendtune.cli.app import COMMANDS, _summary, build_command
from tests.support.modules import modules_after


@pytest.mark.parametrize("name", list(COMMANDS))
def test_table_summary_is_the_commands_own(name: str) -> None:
    cmd = build_command(name)
    assert cmd.name == name
    assert cmd.short_help == COMMANDS[name][1] == _summary(cmd.help or "")


def test_root_help_imports_no_command_module() -> None:
    mods = modules_after(["--help"])
    assert not {m for m, _ in COMMANDS.values()} & mods


def test_json_imports_only_its_command_and_no_rich() -> None:
    mods = modules_after(["topo", "--demo", "atlas-800i-a2", "--json"])
    assert {m for m, _ in COMMANDS.values()} & mods == {"ascendtune.cli.topo"}
    assert not {m for m in mods if m.split(".")[0] == "rich"}
