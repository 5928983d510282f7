"""Launching a command already bound: this process takes the mask, then becomes the command."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from typing import NoReturn

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.host.affinity.masks import EPERM_HINT, errno_text


def resolve_command(name: str) -> str | None:
    """The program execvp would run for `name`, None when there is none."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name)


def set_own_affinity(cpus: CpuSet) -> None:
    """Bind the calling thread (the one that will exec) to `cpus`."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        text, _ = errno_text(e)
        if e.errno == errno.EINVAL:
            raise InvalidInput(
                f"cannot bind to CPUs {format_cpulist(cpus)}: {text}",
                f"this process may use CPUs {format_cpulist(os.sched_getaffinity(0))}",
            ) from None
        if e.errno == errno.EPERM:
            raise PermissionDenied(f"cannot bind this process: {text}", EPERM_HINT) from None
        raise


def exec_command(argv: Sequence[str]) -> NoReturn:
    """Replace this process with argv (no shell; PATH lookup as execvp does)."""
    try:
        os.execvp(argv[0], list(argv))
    except FileNotFoundError:
        raise MissingError(f"command not found: {argv[0]}") from None
    except PermissionError as e:
        raise PermissionDenied(f"cannot run {argv[0]}: {errno_text(e)[0]}") from None
    except OSError as e:
        raise InvalidInput(f"cannot run {argv[0]}: {errno_text(e)[0]}") from None
