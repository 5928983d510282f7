"""The suite mirrors the package (issue 22): test modules in tests/{core,host,app,cli,synth,e2e}/
(and the download tiers' and the scripts' own folders), named by behaviour, never importing one another; shared
helpers in tests/support/; commands run in process only through the one `cli` fixture."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# beside the layers: the download tiers (reference, release_schemas) and the scripts' own tests
FOLDERS = {"core", "host", "app", "cli", "synth", "e2e", "reference", "release_schemas", "scripts"}
HISTORY = ("harden", "review", "fixes")  # words that date a module instead of naming a behaviour


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.parts)


def _imported(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_every_test_module_sits_in_a_layer_folder_and_names_a_behaviour() -> None:
    tests = [p for p in _modules() if p.name.startswith("test_")]
    assert tests
    misplaced = [str(p.relative_to(TESTS)) for p in tests if p.parent.name not in FOLDERS]
    assert misplaced == [], "move these into tests/{core,host,app,cli,synth,e2e}/"
    dated = [p.name for p in tests if any(w in p.stem for w in HISTORY)]
    assert dated == [], "name a test module by the behaviour it checks"


def test_no_test_module_imports_another_nor_conftest() -> None:
    bad = {
        str(p.relative_to(TESTS)): sorted(
            m
            for m in _imported(p)
            if m.startswith("tests.")
            and (m.rsplit(".", 1)[-1].startswith("test_") or m.endswith("conftest"))
        )
        for p in _modules()
    }
    assert {k: v for k, v in bad.items() if v} == {}, "shared helpers go in tests/support/"


def _names(path: Path) -> set[str]:
    """The names a module's code uses or imports (not its strings)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.rsplit(".", 1)[-1])
    return out


def test_commands_run_in_process_only_through_the_cli_fixture() -> None:
    own = TESTS / "support" / "cli.py"
    bad = [str(p.relative_to(TESTS)) for p in _modules() if p != own and "CliRunner" in _names(p)]
    assert bad == [], "take the `cli` fixture (tests/support/cli.py) instead of a CliRunner"
