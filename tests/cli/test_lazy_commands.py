"""The lazy root group: the command table is where each command is described (root help, name
completion and the command's own help all start from its summary), and a command's module is
imported only when that command runs."""

from __future__ import annotations

import pytest

from ascendtune.cli.app import build_command
from ascendtune.cli.commands import COMMANDS
from tests.support.modules import modules_after


@pytest.mark.parametrize("name", list(COMMANDS))
def test_table_summary_is_the_commands_own(name: str) -> None:
    cmd = build_command(name)
    assert cmd.name == name
    summary = COMMANDS[name].summary
    assert cmd.short_help == summary
    # the command's own help begins with the very same sentence (it is built from the table)
    assert " ".join((cmd.help or "").split()).startswith(summary)


def test_root_help_imports_no_command_module() -> None:
    mods = modules_after(["--help"])
    assert not {c.module for c in COMMANDS.values()} & mods


def test_json_imports_only_its_command_and_no_rich() -> None:
    mods = modules_after(["topo", "--demo", "atlas-800i-a2", "--json"])
    assert {c.module for c in COMMANDS.values()} & mods == {"ascendtune.cli.topo"}
    assert not {m for m in mods if m.split(".")[0] == "rich"}
