"""The binder chain as text: check-config's chain block and `explain binders`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ascendtune.cli.common import plain


def chain_lines(doc: dict[str, Any]) -> list[str]:
    """A chain document (Chain.to_json) as lines: each binder in order, the masks it leaves,
    the winner, and the switches for the owner."""
    out = []
    head = f"binders of PID {doc['pid']}" if doc.get("pid") is not None else "binders"
    out.append(f"{head} (in the order they act):")
    if not doc["binders"]:
        out.append("  none: the scheduler places every thread")
    for b in doc["binders"]:
        out.append(f"  {b['order']}. {b['stage']:13} {b['id']:15} {b['outcome']:7} {b['config']}")
        if b["note"]:
            out.append(f"     {b['note']}")
    pred = ", ".join(f"{c} {v if v is not None else '?'}" for c, v in doc["predicted"].items())
    out.append(f"  predicted: {pred}")
    if doc.get("observed") is not None:
        obs = ", ".join(f"{c} {v}" for c, v in doc["observed"].items())
        out.append(f"  observed:  {obs}")
    out.append(f"  main thread ends with: {doc['winner'] or 'no binder'}")
    out.append(f"  owner: {doc['owner']} ({doc['owner_reason']})")
    for s in doc["switches"]:
        out.append(f"    switch: {s['switch']}")
    return [plain(x) for x in out]


def print_chain(out: Callable[[str], None], doc: dict[str, Any]) -> None:
    for line in chain_lines(doc):
        out(line)
