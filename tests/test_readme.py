"""The README's quick start is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    text = (TOP / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_two_quick_start_commands() -> None:
    cmds = quick_start_commands()
    assert len(cmds) == 2
    assert "topo --demo" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (TOP / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in ci


def test_library_example_runs(capsys: object) -> None:
    text = (TOP / "README.md").read_text()
    blocks = re.findall(r"```python\n(.+?)\n```", text, flags=re.S)
    assert blocks, "the README shows the API"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.splitlines()[0].startswith("0 4 ")
