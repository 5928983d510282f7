"""The only place that runs programs: no shell, LC_ALL=C, always a timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(Exception):
    pass


def c_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    if extra:
        env.update(extra)
    return env


def which(name: str, fallbacks: tuple[str, ...] = ()) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for path in fallbacks:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def run(argv: list[str], timeout: float = DEFAULT_TIMEOUT_S) -> Completed:
    """Run argv (argv[0] an absolute path or a PATH name) and return its text output.

    Raises FileNotFoundError when the program is missing and CommandTimeout when it hangs.
    """
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=c_env(),
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise CommandTimeout(f"{argv[0]} did not answer within {timeout:g} s") from None
    return Completed(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
