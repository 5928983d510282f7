"""`explain KEY`: one additional-config key across every known vLLM-Ascend version, and the
listing of every key by concern. Pure: built from the version tables, the rule registry and the
explanation data (ascendtune.core.vllm_config.explain_data)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ascendtune.core import vllm_ascend as va
from ascendtune.core.errors import UsageError
from ascendtune.core.vllm_config import explain_data as data
from ascendtune.core.vllm_config import extracted
from ascendtune.core.vllm_config.explain_data import KeyDoc
from ascendtune.core.vllm_config.rules import RULES
from ascendtune.core.vllm_config.schema import Key, Version


@dataclass(frozen=True)
class VersionRow:
    """How one version treats the key asked about."""

    target: str
    present: bool
    status: str  # present, deprecated, elsewhere, renamed, removed, absent
    default: Any = None
    type: str | None = None
    choices: tuple[Any, ...] | None = None
    env: str | None = None  # environment variable read when the key is absent
    default_from: str | None = None
    path: str | None = None  # where this version reads the setting, when not the asked path
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"present": self.present, "default": self.default}
        out["status"] = self.status
        if self.type is not None:
            out["type"] = self.type
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.env:
            out["env"] = self.env
        if self.default_from:
            out["default_from"] = self.default_from
        if self.path:
            out["path"] = self.path
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Interaction:
    rule: str  # the check-config rule code, or "" for one no rule models
    keys: tuple[str, ...]  # the other keys involved
    what: str
    versions: tuple[str, ...]  # where it applies

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule or None,
            "keys": list(self.keys),
            "what": self.what,
            "versions": list(self.versions),
        }


@dataclass(frozen=True)
class KeyExplanation:
    key: str
    doc: KeyDoc
    versions: tuple[VersionRow, ...]
    interactions: tuple[Interaction, ...]
    # its life across every release, read from each release's source (extracted schemas)
    history: tuple[extracted.Event, ...] = ()

    @property
    def verify(self) -> tuple[str, ...]:
        out = list(self.doc.verify)
        out += [f"log: {line.means}: {line.example}" for line in self.doc.log]
        if not any("check-config" in v for v in out):
            out.append(data.SHOW_EFFECTIVE)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        d = self.doc
        return {
            "key": self.key,
            "concern": d.concern,
            "concern_title": data.CONCERNS[d.concern],
            "side": d.side,
            "when": d.when,
            "when_words": data.WHEN_WORDS[d.when],
            "summary": d.summary,
            "detail": d.detail,
            "versions": {r.target: r.to_json() for r in self.versions},
            "interactions": [i.to_json() for i in self.interactions],
            "verify": list(self.verify),
            "failure": list(d.failure),
            "log": [
                {"means": ln.means, "example": ln.example, "binding": ln.binding or None}
                for ln in d.log
            ],
            "per_version": [{"versions": v, "what": w} for v, w in d.per_version],
            "also": list(d.also),
            "history": [e.to_json() for e in self.history],
        }


def _tables() -> dict[str, Version]:
    return {name: v.config for name, v in va.VERSIONS.items()}


def known_paths() -> list[str]:
    """Every path any version's schema has, plus the removed and legacy spellings."""
    out: dict[str, None] = {}
    for t in _tables().values():
        for p in t.all_paths():
            out[p] = None
        for r in t.removed:
            out[r.path] = None
        for p in t.legacy:
            out[p] = None
    return list(out)


def _row(table: Version, key: str, doc: KeyDoc) -> VersionRow:
    def of(k: Key, status: str, path: str | None = None, note: str = "") -> VersionRow:
        return VersionRow(
            table.name,
            status in ("present", "deprecated"),
            status,
            k.default_value(),
            k.type,
            k.choices,
            k.env,
            k.default_from,
            path,
            note,
        )

    k = table.key(key)
    if k is not None:
        return of(k, "present")
    if key in table.legacy:
        new = table.legacy[key]
        nk = table.key(new)
        if nk is not None:
            return of(nk, "deprecated", new, f"still read, with a warning; the new place is {new}")
    removed = table.removed_at(key)
    for alias in (doc.path, *doc.also):
        if alias == key:
            continue
        ak = table.key(alias)
        if ak is not None:
            return of(ak, "elsewhere", alias, f"this version reads it as {alias}")
    if removed is not None:
        status = "renamed" if removed.replacement else "removed"
        note = removed.why + (f"; use {removed.replacement}" if removed.replacement else "")
        if removed.severity == "error":
            note += " (start-up fails while it is set)"
        return VersionRow(table.name, False, status, None, note=note, path=removed.replacement)
    return VersionRow(table.name, False, "absent")


def _interactions(doc: KeyDoc, tables: dict[str, Version]) -> tuple[Interaction, ...]:
    mine = {doc.path, *doc.also}
    out: list[Interaction] = []
    for code, keys in data.RULE_KEYS.items():
        if not mine & set(keys):
            continue
        where = tuple(n for n, t in tables.items() if code in t.rules)
        if not where:
            continue
        others = tuple(k for k in keys if k not in mine)
        out.append(Interaction(code, others, " ".join(RULES[code].doc.split()), where))
    for key, what in doc.related:
        out.append(Interaction("", (key,), what, tuple(tables)))
    return tuple(out)


def suggest(key: str, limit: int = 3) -> list[str]:
    paths = known_paths()
    hits = difflib.get_close_matches(key, paths, n=limit, cutoff=0.85) or difflib.get_close_matches(
        key, paths, n=limit, cutoff=0.6
    )
    if not hits:
        # a leaf name without its section: "min_chunk" -> scheduler_config.profiling_chunk_config.min_chunk
        leaf = key.rsplit(".", 1)[-1]
        hits = [p for p in paths if p.rsplit(".", 1)[-1] == leaf][:limit]
    if not hits:
        leaves = {p.rsplit(".", 1)[-1]: p for p in paths}
        hits = [leaves[x] for x in difflib.get_close_matches(key, list(leaves), n=limit)]
    return hits


def explain_key(key: str) -> KeyExplanation:
    """The explanation of key (dotted for nested keys); UsageError with did-you-mean if unknown."""
    key = key.strip()
    docs = data.by_path()
    tables = _tables()
    doc = docs.get(key)
    if doc is None:
        for t in tables.values():
            if key in t.legacy:
                doc = docs.get(t.legacy[key])
                break
    if doc is None and extracted.releases_with(key):
        gone = next((r for t in tables.values() for r in t.removed if r.path == key), None)
        doc = _undocumented(key, gone.why if gone else None)
    if doc is None:
        removed = next((r for t in tables.values() for r in t.removed if r.path == key), None)
        if removed is not None:
            raise UsageError(
                f"{key} is not read by any known vLLM-Ascend version: {removed.why}",
                f"use {removed.replacement}" if removed.replacement else "drop it from the config",
            )
        hits = suggest(key)
        raise UsageError(
            f"unknown additional-config key {key!r}",
            ("did you mean " + " or ".join(hits) + "?")
            if hits
            else "`ascendtune explain` lists every key",
        )
    rows = tuple(_row(t, key, doc) for t in tables.values())
    return KeyExplanation(key, doc, rows, _interactions(doc, tables), extracted.history(key))


# an undocumented key's concern, guessed from its name (the first hint that matches)
_CONCERN_HINTS = (
    ("binding", "binding"),
    ("multistream", "multistream"),
    ("eplb", "moe"),
    ("mc2", "moe"),
    ("expert", "moe"),
    ("moe", "moe"),
    ("sched", "scheduler"),
    ("graph", "graph"),
    ("compil", "graph"),
    ("kernel", "graph"),
    ("kv", "kv"),
    ("spec", "spec"),
    ("sampl", "spec"),
    ("parallel", "parallel"),
    ("_tp", "parallel"),
    ("dump", "debug"),
    ("log", "debug"),
    ("rl_", "debug"),
)


def _undocumented(key: str, gone: str | None) -> KeyDoc:
    """A key some release reads that ascendtune has no description of (or that the modelled
    versions no longer read: `gone` says why): what is known is its life across the releases."""
    concern = next((c for hint, c in _CONCERN_HINTS if hint in key), "kernels")
    last = extracted.releases_with(key)[-1]
    summary = (
        f"no longer read ({gone}); releases up to v{last} read it"
        if gone
        else "not described by ascendtune yet; its type and default per release below are "
        "read from each release's own source"
    )
    return KeyDoc(key, concern, "device", "startup", summary)


@dataclass(frozen=True)
class ListedKey:
    path: str
    concern: str
    summary: str
    default: Any
    type: str
    side: str
    when: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.path,
            "default": self.default,
            "type": self.type,
            "side": self.side,
            "when": self.when,
            "summary": self.summary,
        }


def listing(target: str, search: str | None = None) -> dict[str, list[ListedKey]]:
    """Every key of target's schema grouped by concern (in CONCERNS order); search keeps keys
    whose path, summary or detail holds the word (case-insensitive)."""
    table = va.get(target).config
    docs = data.by_path()
    groups: dict[str, list[ListedKey]] = {c: [] for c in data.CONCERNS}
    word = search.lower() if search else None
    for path in table.all_paths():
        # a key read from a release's source that ascendtune does not describe yet
        doc = docs.get(path) or _undocumented(path, None)
        if word is not None and not any(
            word in s.lower() for s in (path, doc.summary, doc.detail, *doc.failure)
        ):
            continue
        k = table.key(path)
        assert k is not None
        default = None if k.is_section else k.default_value()
        groups[doc.concern].append(
            ListedKey(path, doc.concern, doc.summary, default, k.type, doc.side, doc.when)
        )
    return {c: ks for c, ks in groups.items() if ks}
