"""From a version string a host reports (or a user types) to the registry entry that models it.

A published release resolves to itself; a local build of one (`0.18.0+cust`) too. Anything else
(`0.26.0rc2`, `0.24.0`, `0.25.2.dev3+gabc1234`) resolves to the nearest release below it in PEP 440
order, with that inference said; a version newer than every known release to the newest entry,
said as such; a dev build whose local label names a main snapshot's commit (`+g182b75ea`) to that
snapshot. Nothing resolves silently to the newest.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from ascendtune.core.errors import UsageError
from ascendtune.core.vllm_ascend import pep440
from ascendtune.core.vllm_ascend.registry import ENTRIES, NEWEST, VERSIONS, VllmAscendVersion

_HEX = set("0123456789abcdef")


class Resolved(NamedTuple):
    entry: VllmAscendVersion
    exact: bool  # the version is that entry's (or a local build of it)
    how: str  # why this entry, said after the version ("is a development build: ..."); "" when
    # the version is the entry's own


@functools.cache
def _releases() -> list[tuple[tuple[Any, ...], VllmAscendVersion]]:
    """Every release's PEP 440 key and entry, in PEP 440 order."""
    out = []
    for e in ENTRIES:
        for pv in e.package_versions:
            p = pep440.parse(pv)
            if p is not None:
                out.append((p.key, e))
    out.sort(key=lambda kv: kv[0])
    return out


def _main_of(local: str | None) -> VllmAscendVersion | None:
    """The main snapshot whose commit a local label names (`g182b75ea`, setuptools-scm's form)."""
    for part in (local or "").replace("-", ".").replace("_", ".").split("."):
        sha = part[1:]
        if not (part.startswith("g") and len(sha) >= 7):
            continue
        for e in ENTRIES:
            commits = [w for w in e.source.split() if len(w) >= 7 and set(w) <= _HEX]
            if not e.is_release and any(w.startswith(sha) or sha.startswith(w) for w in commits):
                return e
    return None


def package_version(text: str) -> Resolved | None:
    """The entry for a vllm_ascend `Version:`; None when the text is not a version at all."""
    parsed = pep440.parse(text)
    if parsed is None:
        return None
    main = _main_of(parsed.local)
    if main is not None:
        return Resolved(main, True, f"is a build of {main.source}")
    releases = _releases()
    for key, e in releases:
        if key == parsed.key:
            how = "" if parsed.local is None else f"is a local build of {e.package_versions[0]}"
            return Resolved(e, True, how)
    below = [e for key, e in releases if key < parsed.key]
    what = "a development build" if parsed.is_dev else "not a release ascendtune knows"
    if not below:
        oldest = releases[0][1]
        return Resolved(
            oldest,
            False,
            f"is older than every known release: modelled as the oldest, {oldest.name} "
            "(releases before 0.9.1rc1 ship no CPU binding)",
        )
    nearest = below[-1]
    if nearest is releases[-1][1]:
        return Resolved(
            NEWEST,
            False,
            f"is newer than every known release: modelled as the newest, {NEWEST.name}",
        )
    return Resolved(
        nearest, False, f"is {what}: modelled as the nearest release below it, {nearest.name}"
    )


def target(name: str) -> VllmAscendVersion:
    """`--target NAME`: a registry name (`v0.18.0`, `main-2026-09`) or a release's package
    version (`0.18.0`). Anything else is a usage error that says where the names are listed."""
    text = name.strip()
    entry = VERSIONS.get(text) or VERSIONS.get(f"v{text}")
    if entry is not None:
        return entry
    raise UsageError(
        f"unknown --target {name!r}",
        f"`ascendtune explain versions` lists the versions ascendtune models, releases "
        f"{ENTRIES[0].name} to {NEWEST.name} and main snapshots; --target auto detects the one a "
        "worker runs",
    )
