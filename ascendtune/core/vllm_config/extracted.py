"""The additional-config of every vLLM-Ascend release, as read from its own source.

`scripts/extract_schema.py` parses each release's sdist with `ast` and writes one JSON data file
per release (ascendtune/core/vllm_ascend/config_schemas/RELEASE.json): every key with its type, default
and nesting, and each level's unknown-key policy. This module turns such a file into the `Version`
the checker runs. The data decides which keys exist and their defaults; the hand tables
(ascendtune.core.vllm_config.versions) add what the source's shape cannot give (bounds, how a
value is tested, sections read only when enabled) where their key agrees, and the hand-written
rules keep their version ranges (`rules_for`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ascendtune.core.vllm_config.schema import Key, Removed, Version

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "vllm_ascend" / "config_schemas"

_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:rc(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")


def release_key(name: str) -> tuple[int, ...]:
    """Sort key of a release name (0.9.1rc2 < 0.9.1 < 0.9.1.post1); ValueError if not one."""
    m = _RELEASE.match(name.strip())
    if m is None:
        raise ValueError(f"not a vLLM-Ascend release: {name!r}")
    major, minor, patch, rc, post, dev = m.groups()
    # a dev build sorts before its rc/final, an rc before the final, a post after it
    stage = (0, int(rc)) if rc is not None else (1, 0)
    return (
        int(major),
        int(minor),
        int(patch),
        -1 if dev is not None and rc is None and post is None else stage[0],
        stage[1],
        int(post or 0),
        int(dev) if dev is not None else 1 << 30,
    )


def release_name(target: str) -> str:
    """`v0.30.0rc2` and `0.30.0rc2` name the same release: the data file's name."""
    return target.strip().removeprefix("v")


@functools.cache
def available() -> tuple[str, ...]:
    """Every release with a data file, oldest first."""
    if not SCHEMA_DIR.is_dir():
        return ()
    names = [p.stem for p in SCHEMA_DIR.glob("*.json")]
    return tuple(sorted(names, key=release_key))


def has(target: str) -> bool:
    return release_name(target) in available()


@functools.cache
def load(release: str) -> Mapping[str, Any]:
    """The data file of one release, as written by scripts/extract_schema.py."""
    name = release_name(release)
    if name not in available():
        raise KeyError(name)
    data: Mapping[str, Any] = json.loads((SCHEMA_DIR / f"{name}.json").read_text())
    return data


def entries(keys: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(dotted path, entry) of every key, sections before their children."""
    for name, entry in keys.items():
        path = prefix + name
        yield path, entry
        if entry.get("type") == "section":
            yield from entries(entry.get("keys", {}), path + ".")


@functools.cache
def paths(release: str) -> dict[str, Mapping[str, Any]]:
    return dict(entries(load(release)["keys"]))


def typed(release: str) -> bool:
    """Whether the release's AscendConfig is a pydantic-typed config (unknown keys refused)."""
    return bool(load(release)["style"] == "typed")


# --- from data to Keys --------------------------------------------------------------------------

_TYPES = {"bool", "int", "float", "str", "list", "dict", "section", "any"}


def to_keys(
    keys: Mapping[str, Any], style: str, hand: Mapping[str, Key], prefix: str = ""
) -> tuple[Key, ...]:
    """The data's keys as the checker's Key tree, with the hand table's validation where the
    hand key (same dotted path) has the same type."""
    out: list[Key] = []
    for name, e in keys.items():
        path = prefix + name
        if e.get("read") == "derived":
            continue  # a field vLLM-Ascend computes: reported as not read (removed_for)
        out.append(_key(name, path, e, style, hand))
    return tuple(out)


def _key(name: str, path: str, e: Mapping[str, Any], style: str, hand: Mapping[str, Key]) -> Key:
    kind = e.get("type", "any")
    kind = kind if kind in _TYPES else "any"
    h = hand.get(path)
    unknown = list(e.get("unknown", []))
    note = ""
    if "default" in unknown:
        note = "default not readable from the source" + (f" ({e['expr']})" if "expr" in e else "")
    if kind == "section":
        sub = to_keys(e.get("keys", {}), style, hand, path + ".")
        key = Key(
            name,
            "section",
            None,
            "any",
            children=sub,
            extra="error" if e.get("unknown_keys") == "refused" else "ignore",
            note=note,
        )
        if h is not None and h.is_section:
            key = dataclasses.replace(
                key,
                non_object=h.non_object,
                null_ok=h.null_ok,
                gate=h.gate if h.gate and key.child(h.gate) else None,
            )
        return key
    agree = h is not None and not h.is_section and (h.type == kind or kind == "any")
    if agree and h is not None and kind == "any":
        kind = h.type
    default = e.get("default")
    if "default" not in e and agree and h is not None:
        default = h.default  # the source computes it; the hand table says what it comes to
    if style == "typed":
        check = "any" if kind == "any" else "lax"
    elif agree and h is not None:
        check = h.check
    elif e.get("cast") in ("bool", "int", "float"):
        check = "cast"
    elif kind == "bool":
        check = "truthy"
    else:
        check = "any"
    bounds = e.get("bounds", {})
    choices = tuple(e["choices"]) if e.get("choices") else None
    key = Key(
        name,
        kind,  # type: ignore[arg-type]
        default,
        check,  # type: ignore[arg-type]
        optional=bool(e.get("optional")) or default is None,
        choices=choices,
        ge=bounds.get("ge"),
        gt=bounds.get("gt"),
        le=bounds.get("le"),
        env=e.get("env"),
        env_bool=kind == "bool" and bool(e.get("env")),
        note=note,
    )
    if agree and h is not None:
        key = dataclasses.replace(
            key,
            choices=key.choices if key.choices is not None else h.choices,
            ge=key.ge if key.ge is not None else h.ge,
            gt=key.gt if key.gt is not None else h.gt,
            le=key.le if key.le is not None else h.le,
            no_bool=h.no_bool,
            optional=key.optional or h.optional,
            default_from=h.default_from if "default" not in e else None,
            env=key.env or h.env,
            env_bool=h.env_bool if h.env else key.env_bool,
        )
    return key


def _hand_paths(ver: Version | None) -> dict[str, Key]:
    if ver is None:
        return {}
    from ascendtune.core.vllm_config.schema import walk

    return dict(walk(ver.keys))


# --- the Version a release checks against -------------------------------------------------------


class Base(NamedTuple):
    """The hand table a release borrows rules and validation from, and why that one."""

    version: Version | None
    why: str


# hand-written rules that do not apply on some releases after their base table, because the key
# they read is not there: rule code -> [first, end) release ranges (end None: still off). A
# release newer than its base table drops these; tests/test_extracted_schemas.py fails when a
# rule names a key that a release in its range lacks.
RULE_OFF: dict[str, tuple[tuple[str, str | None], ...]] = {
    # enable_reduce_sample is gone from 0.30.0rc1 on
    "reduce-sample-experimental": (("0.30.0rc1", None),),
    "reduce-sample-lmhead-tp": (("0.30.0rc1", None),),
    "reduce-sample-producer": (("0.30.0rc1", None),),
    # 0.28.0rc1 made c8_enable_reshape_optim a private derived field; 0.29.0rc1 brought the key
    # back (default true)
    "c8-reshape-needs-li-c8": (("0.28.0rc1", "0.29.0rc1"),),
}


def rule_applies(code: str, release: str) -> bool:
    k = release_key(release)
    for first, end in RULE_OFF.get(code, ()):
        if release_key(first) <= k and (end is None or k < release_key(end)):
            return False
    return True


def rules_for(release: str, base: Version | None) -> tuple[str, ...]:
    if base is None:
        return ()
    return tuple(code for code in base.rules if rule_applies(code, release))


def removed_for(release: str, base: Version | None) -> tuple[Removed, ...]:
    """The base table's removed keys that the release does not have, and the derived fields of
    a typed release (accepted, then dropped: vLLM-Ascend computes them)."""
    have = paths(release)
    out = [r for r in (base.removed if base else ()) if r.path not in have]
    for name, e in load(release)["keys"].items():
        if e.get("read") == "derived":
            out.append(
                Removed(
                    name,
                    None,
                    "warning",
                    "vLLM-Ascend computes it and drops the value given",
                )
            )
    return tuple(out)


def version(release: str, base: Base) -> Version:
    """The checker's Version for one release: keys from its data file, the rest from `base`."""
    name = release_name(release)
    doc = load(name)
    style = doc["style"]
    hand = _hand_paths(base.version)
    keys = to_keys(doc["keys"], style, hand)
    have = paths(name)
    b = base.version
    scheduler = "scheduler_config." if "scheduler_config.enable_balance_scheduling" in have else ""
    legacy = {old: new for old, new in (b.legacy.items() if b else ()) if new in have and scheduler}
    source = (
        f"release {name}: keys read from its source (sdist sha256 {doc['sdist']['sha256'][:12]})"
    )
    if b is not None:
        source += f"; rules and validation from {b.name} ({base.why})"
    else:
        source += f"; {base.why}"
    fields: dict[str, Any] = {
        "name": f"v{name}",
        "source": source,
        "keys": keys,
        "removed": removed_for(name, b),
        "rules": rules_for(name, b),
        "extra": "error" if doc.get("unknown_keys") == "refused" else "ignore",
        "legacy": legacy,
        "scheduler": scheduler,
        "omni_exception": doc.get("unknown_keys_exception") == "vllm_omni",
    }
    if b is not None:
        fields.update(
            removed_env={k: v for k, v in b.removed_env.items()},
            eager_env=b.eager_env and style != "typed",
            strips_upstream_keys=b.strips_upstream_keys
            if b.extra == fields["extra"]
            else (False if fields["extra"] == "error" else b.strips_upstream_keys),
            piecewise_off=tuple(p for p in b.piecewise_off if p in have),
        )
    return Version(**fields)


def for_entry(name: str, table: Version, note: str = "") -> Version | None:
    """The schema of version-registry entry `name` when its release has a data file (None when
    not: a main snapshot, or a release not extracted yet). `table` is the hand table the registry
    gives the entry (its own, or one it borrows, said in `note`); it lends rules and validation
    unless it was written for a newer release than this one."""
    release = release_name(name)
    if release not in available():
        return None
    if table.name == name:
        return version(release, Base(table, "its own table"))
    try:
        newer = release_key(table.name) > release_key(release)
    except ValueError:
        newer = False  # a main snapshot's table, chosen by the registry on purpose
    if newer:
        return version(
            release, Base(None, "no cross-key rules are modelled before v0.23.0: key table only")
        )
    return version(release, Base(table, note or "the nearest table the registry gives"))


def nearest_base(release: str, hand: Mapping[str, Version]) -> Base:
    """The hand table of the release itself, else of the newest release below it."""
    name = release_name(release)
    k = release_key(name)
    best: tuple[tuple[int, ...], Version] | None = None
    for ver in hand.values():
        try:
            hk = release_key(ver.name)
        except ValueError:
            continue  # main snapshots are not releases
        if hk == k:
            return Base(ver, "its own table")
        if hk < k and (best is None or hk > best[0]):
            best = (hk, ver)
    if best is None:
        return Base(None, "no cross-key rules are modelled before v0.23.0: key table only")
    return Base(best[1], "the nearest release below with a hand table")


# --- a key's life across releases (explain KEY) -------------------------------------------------


class Event(NamedTuple):
    """One change of a key between consecutive releases that have data files."""

    release: str
    what: str  # added, default, type, removed
    default: Any = None  # added / default: the new default (None also when unknown)
    before: Any = None  # default / type: the old value
    type: str | None = None
    known: bool = True  # False: the source does not let the default be read

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"release": f"v{self.release}", "event": self.what}
        if self.what == "default" or (self.what == "added" and self.type != "section"):
            out["default"] = self.default if self.known else None
            if not self.known:
                out["default_unknown"] = True
        if self.what in ("default", "type"):
            out["before"] = self.before
        if self.type is not None:
            out["type"] = self.type
        return out


def _state(entry: Mapping[str, Any] | None) -> tuple[bool, str, Any, bool]:
    if entry is None:
        return False, "", None, True
    kind = entry.get("type", "any")
    if kind == "section":
        return True, kind, None, True
    return True, kind, entry.get("default"), "default" in entry


def history(path: str) -> tuple[Event, ...]:
    """When the key appeared in the releases' own source, how its default or type changed, and
    when it went (and came back), oldest release first."""
    out: list[Event] = []
    prev = (False, "", None, True)
    for release in available():
        cur = _state(paths(release).get(path))
        present, kind, default, known = cur
        was, pkind, pdefault, pknown = prev
        if present and not was:
            out.append(Event(release, "added", default, None, kind, known))
        elif was and not present:
            out.append(Event(release, "removed"))
        elif present:
            if kind != pkind and "any" not in (kind, pkind):
                out.append(Event(release, "type", None, pkind, kind))
            if kind != "section" and (default, known) != (pdefault, pknown):
                out.append(Event(release, "default", default, pdefault, None, known))
        prev = cur
    return tuple(out)


def releases_with(path: str) -> tuple[str, ...]:
    return tuple(r for r in available() if path in paths(r))


def spans(path: str) -> str:
    """The releases that read `path`, as runs: "v0.21.0rc1 to v0.27.1rc1, v0.29.0rc1 on"."""
    every = available()
    have = set(releases_with(path))
    runs: list[tuple[str, str]] = []
    start: str | None = None
    last: str | None = None
    for r in every:
        if r in have:
            start = start or r
            last = r
        elif start is not None and last is not None:
            runs.append((start, last))
            start = last = None
    if start is not None and last is not None:
        runs.append((start, last))
    out = []
    for a, b in runs:
        if b == every[-1] and a != b:
            out.append(f"v{a} on")
        else:
            out.append(f"v{a}" if a == b else f"v{a} to v{b}")
    return ", ".join(out)
