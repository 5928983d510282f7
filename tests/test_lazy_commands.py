"""The lazy root group: its static table says what the commands themselves say, and a command's
module is imported only when that command runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascendtune.cli.app import COMMANDS, _summary, build_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_table_summary_is_the_commands_own(name: str) -> None:
    cmd = build_command(name)
    assert cmd.name == name
    assert cmd.short_help == COMMANDS[name][1] == _summary(cmd.help or "")


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        "from ascendtune.cli.app import app\n"
        "try:\n"
        f"    app(args={args!r}, prog_name='ascendtune')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_root_help_imports_no_command_module() -> None:
    mods = _modules_after(["--help"])
    assert not {m for m, _ in COMMANDS.values()} & mods


def test_json_imports_only_its_command_and_no_rich() -> None:
    mods = _modules_after(["topo", "--demo", "atlas-800i-a2", "--json"])
    assert {m for m, _ in COMMANDS.values()} & mods == {"ascendtune.cli.topo"}
    assert not {m for m in mods if m.split(".")[0] == "rich"}
