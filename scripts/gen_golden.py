"""Regenerate tests/golden/: every demo host's topo, plan, plan --policy compare and doctor
output at 80 and 200 columns, as a user sees it piped through a terminal of that width.

Run: python -m scripts.regen (every generated file), or python scripts/gen_golden.py for these
alone; tests/cli/test_golden_text.py fails when they differ.
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "golden"
DEMOS = ("atlas-800i-a2", "atlas-800i-a3", "atlas-300i-duo", "container-a2-half", "dgx-h100")
COMMANDS: dict[str, tuple[str, ...]] = {
    "topo": ("topo",),
    "plan": ("plan",),
    "compare": ("plan", "--policy", "compare"),
    "doctor": ("doctor",),
}
WIDTHS = (80, 200)


def cases() -> list[tuple[str, tuple[str, ...], int]]:
    """(file name, arguments, width) for every golden file."""
    return [
        (f"{demo}.{name}.{width}.txt", (*args, "--demo", demo), width)
        for demo in DEMOS
        for name, args in COMMANDS.items()
        for width in WIDTHS
    ]


def render(args: tuple[str, ...], width: int) -> str:
    from typer.testing import CliRunner

    from ascendtune.cli.app import app

    res = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"})
    if res.exit_code not in (0, 1):  # doctor exits 1 when a check fails
        raise RuntimeError(f"ascendtune {' '.join(args)} exited {res.exit_code}: {res.output}")
    return res.stdout


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, args, width in cases():
        (OUT / name).write_text(render(args, width))
        print(OUT / name)


if __name__ == "__main__":
    main()
