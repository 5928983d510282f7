"""The committed shell completions are what the Typer app generates today."""

from __future__ import annotations

import pytest

from scripts.gen_completions import OUT, SHELLS, script


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_script_is_current(shell: str) -> None:
    committed = (OUT / f"ascendtune.{shell}").read_text()
    assert script(shell) == committed, f"run `python scripts/gen_completions.py` ({shell} differs)"
