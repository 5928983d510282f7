"""What a command imports: the modules loaded after running the CLI with some arguments in a
fresh interpreter (for the start-up and lazy-command tests)."""

from __future__ import annotations

import json
import subprocess
import sys


def modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """sys.modules after `ascendtune ARGS` in a new interpreter (its exit status ignored; env:
    its whole environment, else this process's)."""
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
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))
