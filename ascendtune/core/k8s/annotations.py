"""Pod annotations as the downward API writes them into a volume (`key="value"` a line, the
value Go-quoted), and the Ascend device plugin's two annotations: what the kubelet allocated
(`huawei.com/kltDev`) and what was mounted (`huawei.com/AscendReal`); under Volcano they can
differ, and then the kubelet's own record names the wrong NPU (docs/kubernetes.md)."""

from __future__ import annotations

import json
import re

from ascendtune.core.redact import MASK, is_secret_key, redact_text

ASCEND_REAL = "huawei.com/AscendReal"
KLT_DEV = "huawei.com/kltDev"
MAX_ANNOTATIONS = 4096


def parse_annotations(text: str) -> dict[str, str]:
    """`key="value"` lines (the downward API's format); lines of another shape are skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            continue
        value = value.strip()
        if value.startswith('"'):
            try:
                value = str(json.loads(value))
            except json.JSONDecodeError:
                value = value.strip('"')
        out[key.strip()] = value
        if len(out) >= MAX_ANNOTATIONS:
            break
    return out


def ascend_devices(value: str) -> tuple[str, ...]:
    """The device names of an AscendReal / kltDev value, sorted (older plugins wrote them
    unsorted; they are compared as sets)."""
    return tuple(sorted({d.strip() for d in re.split(r"[,;\s]+", value) if d.strip()}))


def redact_annotations(text: str) -> str:
    """The annotations file with secret-looking values masked (a token in an annotation must
    not end up in a snapshot): by name, and by form anywhere in the value."""
    lines = []
    for line in text.splitlines():
        key, eq, _value = line.partition("=")
        last = re.split(r"[/.]", key.strip())[-1].replace("-", "_")
        if eq and is_secret_key(last):
            lines.append(f'{key}="{MASK}"')
        else:
            lines.append(redact_text(line))
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def physical_id(device_id: str) -> int | None:
    """The physical NPU id a device plugin id names: the last `-` field (`Ascend910-4`,
    virtual `Ascend910-2c-100-4`), or the id itself when it is a number."""
    tail = device_id.rsplit("-", 1)[-1].strip()
    return int(tail) if tail.isdigit() else None
