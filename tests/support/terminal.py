"""Commands run in a real terminal: a pseudo-terminal of a given width, as a user's shell
would give ascendtune (colour on, the width from the terminal, not from COLUMNS), and what a
user copies out of it.

A terminal folds a line longer than its width on screen, and a copy of the folded line gives it
back whole; a newline the program printed stays a newline in the copy. So what a user copies is
the program's output split at its own newlines: `copied` returns those lines, escape codes
removed.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Sequence

END = "@@ascendtune-command-end@@"
# one interpreter runs every command of a batch (the CLI's own main(), as the console script
# does), so a batch of 30 commands costs one start-up
_DRIVER = f"""
import json, sys
from ascendtune.cli.app import main
for args in json.loads(sys.argv[1]):
    sys.argv = ["ascendtune", *args]
    try:
        main()
    except SystemExit:
        pass
    sys.stdout.flush()
    sys.stdout.write("\\n{END}\\n")
    sys.stdout.flush()
"""
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def run_in_terminal(commands: Sequence[Sequence[str]], width: int) -> list[list[str]]:
    """Each command's output (stdout and stderr, as the terminal shows them) in a terminal of
    `width` columns, as the lines a user copies."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm-256color", LC_ALL="C.UTF-8")
    for name in ("ASCENDTUNE_SYSROOT", "ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, json.dumps([list(c) for c in commands])],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=300)
    text = b"".join(chunks).decode("utf-8", "replace")
    outputs = text.replace("\r\n", "\n").split(f"\n{END}\n")
    return [copied(o) for o in outputs[: len(commands)]]


def copied(output: str) -> list[str]:
    """The lines a user copies from this output: escape codes gone, trailing blanks gone."""
    return [_ESCAPES.sub("", line).rstrip() for line in output.split("\n")]
