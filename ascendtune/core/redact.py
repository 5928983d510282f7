"""Mask secrets in command lines before they are printed or written into a snapshot."""

from __future__ import annotations

import re
from collections.abc import Sequence

SECRET_FLAG = re.compile(r"^--?[\w.-]*(key|token|secret|passw|credential)[\w.-]*$", re.IGNORECASE)


def redact_args(argv: Sequence[str]) -> list[str]:
    """argv with the values of --api-key-like options replaced by ***."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and arg:
            out.append("***")
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}=***")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out
