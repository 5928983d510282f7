"""Regenerate tests/golden/json/: every demo host's topo, plan, plan --policy compare and doctor
JSON, byte for byte as `--json` prints it.

Run: python scripts/gen_golden_json.py  (tests/test_golden_json.py fails when they differ)
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "golden" / "json"
DEMOS = ("atlas-800i-a2", "atlas-800i-a3", "atlas-300i-duo", "container-a2-half", "dgx-h100")
COMMANDS: dict[str, tuple[str, ...]] = {
    "topo": ("topo",),
    "plan": ("plan",),
    "compare": ("plan", "--policy", "compare"),
    "doctor": ("doctor",),
}


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
