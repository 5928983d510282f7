"""Regenerate completions/ascendtune.{bash,zsh,fish} from the Typer app.

Run: python scripts/gen_completions.py  (tests/test_completions.py fails when they differ)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SHELLS = ("bash", "zsh", "fish")
OUT = Path(__file__).resolve().parents[1] / "completions"


def script(shell: str) -> str:
    env = dict(os.environ, _ASCENDTUNE_COMPLETE=f"source_{shell}", LC_ALL="C")
    done = subprocess.run(
        [sys.executable, "-m", "ascendtune"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=OUT.parent,
    )
    return done.stdout


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for shell in SHELLS:
        (OUT / f"ascendtune.{shell}").write_text(script(shell))
        print(OUT / f"ascendtune.{shell}")


if __name__ == "__main__":
    main()
