"""One verdict line per benchmark target, and the record `python -m benchmarks` sums up.

Every target is a ratio against a baseline measured side by side in the same run; a figure is
judged on CPU time as well as wall time where both exist (CPU time is the steadier one on a
shared machine). Each call prints `target met` or `target missed` with the ratio, and, when
`ASCENDTUNE_BENCH_RESULTS` names a file, appends the same as one JSON line for the summary.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence


def spread(values: Sequence[float]) -> str:
    """`median (min-max)` of ratios, two decimals."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def verdict(
    work: str,
    baseline: str,
    ratios: Sequence[float],
    limit: float,
    *,
    unit: str = "x",
    every_run: bool = False,
    cpu_ratios: Sequence[float] | None = None,
    detail: str = "",
    kind: str = "wall",
) -> bool:
    """Judge `work` against `limit` (ratios are wall-time ratios unless kind says "CPU": a
    figure that is CPU time alone): the median ratio (or, with every_run, the worst run) must be
    at most `limit`, and so must the CPU-time ratio where given. Prints the verdict line and
    records it; returns whether the target was met."""
    judged = max(ratios) if every_run else statistics.median(ratios)
    met = judged <= limit
    if cpu_ratios:
        cpu_judged = max(cpu_ratios) if every_run else statistics.median(cpu_ratios)
        met = met and cpu_judged <= limit
    figure = f"{kind} {spread(ratios)}{unit}"
    if cpu_ratios:
        figure += f", cpu {spread(cpu_ratios)}{unit}"
    how = "every run" if every_run else "median"
    word = "target met" if met else "target missed"
    line = f"{word}: {work}: {figure} against {baseline} (target <= {limit:g}{unit}, {how})"
    if detail:
        line += f"; {detail}"
    print(line, flush=True)
    record = {
        "work": work,
        "baseline": baseline,
        "kind": kind,
        "unit": unit,
        "limit": limit,
        "how": how,
        "wall": list(ratios),
        "cpu": list(cpu_ratios) if cpu_ratios else None,
        "met": met,
        "detail": detail,
    }
    path = os.environ.get("ASCENDTUNE_BENCH_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    return met


def absolute(work: str, values: Sequence[float], limit: float, unit: str, detail: str = "") -> bool:
    """A bound that is not a ratio (peak MiB, % of a core): every value must stay under it."""
    worst = max(values)
    met = worst <= limit
    word = "target met" if met else "target missed"
    line = f"{word}: {work}: {spread(values)} {unit} (target <= {limit:g} {unit}, every run)"
    if detail:
        line += f"; {detail}"
    print(line, flush=True)
    path = os.environ.get("ASCENDTUNE_BENCH_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            record = {
                "work": work,
                "baseline": "",
                "unit": unit,
                "limit": limit,
                "how": "every run",
                "wall": list(values),
                "cpu": None,
                "met": met,
                "detail": detail,
            }
            out.write(json.dumps(record) + "\n")
    return met
