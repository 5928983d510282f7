"""Regenerate completions/ascendtune.{bash,zsh,fish} from the Typer app.

Run: python -m scripts.regen (every generated file), or python scripts/gen_completions.py for
these alone; tests/cli/test_completions.py fails when they differ.
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
    return finish(shell, done.stdout)


BASH_HEAD = (
    "# ascendtune completion for bash. Plain bash is enough (no bash-completion package):\n"
    "#   source /path/to/completions/ascendtune.bash   # in ~/.bashrc\n"
)
ZSH_TAIL = """if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
  # autoloaded from $fpath as _ascendtune: complete this first TAB too
  _ascendtune_completion "$@"
else
  compdef _ascendtune_completion ascendtune
fi
"""


# Typer renders each candidate's help for fish through Rich at the terminal's width, and a help
# wrapped onto several lines gave fish one candidate per line: fragments of help offered as
# words. A width no help reaches keeps each candidate's help on its own line.
FISH_ENV = "env _ASCENDTUNE_COMPLETE=complete_fish"
FISH_WIDE = f"{FISH_ENV} TERMINAL_WIDTH=100000"


def finish(shell: str, text: str) -> str:
    """Typer's script, made to work as installed: zsh's `#compdef` on line 1 (else compinit
    ignores the file) and a first TAB that completes; a bash header saying how to load it;
    fish's candidates one line each (FISH_WIDE)."""
    body = text.strip("\n") + "\n"
    if shell == "fish":
        body = body.replace(FISH_ENV + " ", FISH_WIDE + " ")
    if shell == "zsh":
        body = body.replace("compdef _ascendtune_completion ascendtune\n", ZSH_TAIL)
    if shell == "bash":
        body = BASH_HEAD + "\n" + body
    return body


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for shell in SHELLS:
        (OUT / f"ascendtune.{shell}").write_text(script(shell))
        print(OUT / f"ascendtune.{shell}")


if __name__ == "__main__":
    main()
