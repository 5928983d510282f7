"""Regenerate tests/golden/json/: every demo host's topo, plan, plan --policy compare and doctor
JSON, byte for byte as `--json` prints it.

Run: python -m scripts.regen (every generated file), or python scripts/gen_golden_json.py for
these alone; tests/cli/test_golden_json.py fails when they differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as `python scripts/gen_golden_json.py` too

# the same demos and commands as the rendered golden files
from scripts.gen_golden import COMMANDS, DEMOS  # noqa: E402

OUT = REPO / "tests" / "golden" / "json"


def cases() -> list[tuple[str, tuple[str, ...]]]:
    """(file name, arguments) for every golden JSON file."""
    return [
        (f"{demo}.{name}.json", (*args, "--demo", demo, "--json"))
        for demo in DEMOS
        for name, args in COMMANDS.items()
    ]


def render(args: tuple[str, ...]) -> str:
    from typer.testing import CliRunner

    from ascendtune.cli.app import app

    res = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1"})
    if res.exit_code not in (0, 1):  # doctor exits 1 when a check fails
        raise RuntimeError(f"ascendtune {' '.join(args)} exited {res.exit_code}: {res.output}")
    return res.stdout


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, args in cases():
        (OUT / name).write_text(render(args))
        print(OUT / name)


if __name__ == "__main__":
    main()
