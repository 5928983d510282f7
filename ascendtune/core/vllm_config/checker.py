"""Check an additional-config against one version: key table first, then the cross-key rules.

`check()` never raises on odd content (any JSON object is a valid input); it returns findings and
`effective`, the config as that vLLM-Ascend version would run it. Checking `effective` again gives
the same `effective`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ascendtune.core.vllm_config import rules as rules_mod
from ascendtune.core.vllm_config.model import Facts, Finding, Report, Severity, show
from ascendtune.core.vllm_config.schema import (
    TYPE_WORDS,
    Bad,
    Key,
    Version,
    cast,
    in_range,
    is_number,
    json_type,
    lax,
    type_ok,
)


def version(target: str | None) -> Version:
    """The schema of `--target target` (a registry name or package version; None: the newest)."""
    from ascendtune.core import vllm_ascend

    return (vllm_ascend.get(target) if target else vllm_ascend.NEWEST).config


def check(
    config: Mapping[str, Any], target: str | Version | None = None, facts: Facts | None = None
) -> Report:
    """Check `config` against a version: a name, a Version table, or None for the newest.

    `facts.with_vllm_omni`, `facts.compilation_config` and the GDN/KDA flags change the result
    on the versions where vLLM-Ascend reads them."""
    ver = version(target) if not isinstance(target, Version) else target
    facts = facts or Facts()
    table = _Table(ver, facts)
    raw, upstream = table.upstream_keys(_text_keys(config))
    user = table.move_legacy(raw)
    eff = table.section(ver.keys, user, "", ver.extra)
    table.removed_env()
    ctx = rules_mod.Context(ver, facts, user, eff)
    rules_mod.run(ctx)
    eff.update(upstream)
    return Report(ver.name, tuple(table.findings + ctx.findings), eff)


def _text_keys(config: Mapping[Any, Any]) -> dict[str, Any]:
    """config with every key a string, at every depth: a config read from a log is a Python
    dict literal and may hold `1:` or `(1, 2):`, which no release knows (the key is then
    reported as unknown under its text, not a crash)."""
    return {
        (k if isinstance(k, str) else str(k)): (_text_keys(v) if isinstance(v, Mapping) else v)
        for k, v in config.items()
    }


# what upstream vLLM's EngineArgs puts into additional_config, and the flag it comes from
UPSTREAM_KEYS = {
    "gdn_prefill_backend": "--gdn-prefill-backend",
    "kda_prefill_backend": "--kda-prefill-backend",
}
# the values PR #16661 lets through silently; the others are CUDA-only and fall back to triton
_ASCEND_BACKENDS = ("triton", "auto")


class _Table:
    """The key-table pass: unknown, removed and deprecated keys, types, ranges, defaults."""

    def __init__(self, ver: Version, facts: Facts) -> None:
        self.ver = ver
        self.facts = facts
        self.findings: list[Finding] = []

    def add(
        self, code: str, severity: Severity, keys: Iterable[str], message: str, hint: str = ""
    ) -> None:
        self.findings.append(Finding(code, severity, message, hint, keys=tuple(keys)))

    def upstream_keys(self, cfg: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Take out gdn/kda_prefill_backend (from the config or vLLM's flags); what each version
        does with them is reported here, and they come back into `effective` as they run."""
        facts_vals = {
            "gdn_prefill_backend": self.facts.gdn_prefill_backend,
            "kda_prefill_backend": self.facts.kda_prefill_backend,
        }
        out: dict[str, Any] = {}
        for key, flag in UPSTREAM_KEYS.items():
            value = cfg.pop(key, facts_vals[key])
            if value is None:
                continue
            src = f"{key} (from {flag})" if facts_vals[key] is not None else key
            strips = self.ver.strips_upstream_keys
            if self.ver.extra != "error":
                out[key] = value
                self.add(
                    "upstream-key-ignored",
                    "info",
                    (key,),
                    f"{src} ends up in the additional config; {self.ver.name} reads only the keys "
                    "it knows and ignores it",
                )
                continue
            if strips is True or strips is None:
                after = value if value in _ASCEND_BACKENDS else "triton"
                out[key] = after
                if after != value:
                    self.add(
                        "upstream-key-fallback",
                        "warning",
                        (key,),
                        f"{src} = {show(value)} is CUDA-only: vLLM-Ascend warns and uses triton",
                        f"drop {flag} or give it triton",
                    )
            if strips is None:
                self.add(
                    "upstream-key-unverified",
                    "warning",
                    (key,),
                    f"{src} ends up in the additional config: {self.ver.name} strips it before "
                    "validation only if the build carries PR 16661 (merged 2026-09-16 or later; "
                    "not verified for this target); without it the typed config refuses the key "
                    "(unexpected_keyword_argument) and start-up aborts",
                    f"check that the build has PR 16661, or drop {flag}",
                )
            elif strips is False:
                out[key] = value
                self.add(
                    "upstream-key-refused",
                    "error",
                    (key,),
                    f"{src} ends up in the additional config, and {self.ver.name}'s typed config "
                    "refuses it (unexpected_keyword_argument): vLLM-Ascend will not start",
                    f"drop {flag} (PR 16661 strips it on later main)",
                )
        return cfg, out

    def _omni(self, path: str) -> bool:
        """Main after PR #15515: an unknown top-level key only warns when vLLM-Omni is installed."""
        return self.ver.omni_exception and "." not in path and self.facts.with_vllm_omni is True

    def _omni_hint(self, path: str, hint: str) -> str:
        if self.ver.omni_exception and "." not in path and self.facts.with_vllm_omni is None:
            return hint + " (only a warning where vLLM-Omni is installed: --with-vllm-omni)"
        return hint

    # legacy top-level keys (main: scheduler switches moved under scheduler_config)
    def move_legacy(self, cfg: dict[str, Any]) -> dict[str, Any]:
        if not any(old in cfg for old in self.ver.legacy):
            return cfg
        sched = cfg.get("scheduler_config")
        # a non-object scheduler_config is reported later; the legacy values then go nowhere
        nested = dict(sched) if isinstance(sched, dict) else {} if sched is None else None
        for old, new in self.ver.legacy.items():
            if old not in cfg:
                continue
            value = cfg.pop(old)
            child = new.split(".", 1)[1]
            if nested is not None and child in nested:
                self.add(
                    "legacy-key-ignored",
                    "warning",
                    (old, new),
                    f"{old} is ignored because {new} is set (the nested key wins)",
                    f"remove the top-level {old}",
                )
                continue
            self.add(
                "deprecated-key",
                "warning",
                (old,),
                f"top-level {old} is deprecated; vLLM-Ascend reads it as {new}",
                f"move it under {new.rsplit('.', 1)[0]}",
            )
            if nested is not None:
                nested[child] = value
        if nested is not None:
            cfg["scheduler_config"] = nested
        return cfg

    def section(
        self,
        keys: tuple[Key, ...],
        raw: Mapping[str, Any],
        prefix: str,
        extra: str,
        gate: str | None = None,
    ) -> dict[str, Any]:
        known = {k.name for k in keys}
        for name in raw:
            if name in known:
                continue
            path = prefix + name
            gone = self.ver.removed_at(path)
            if gone is not None:
                self._removed(path, gone.replacement, gone.why, gone.severity)
            else:
                self._unknown(path, name, keys, extra)
        out: dict[str, Any] = {}
        closed = gate is not None and not self._gate_open(keys, raw, gate)
        for k in keys:
            path = prefix + k.name
            if closed and k.name != gate:
                # not read while the gate is off: no check, the value stays as written
                out[k.name] = raw[k.name] if k.name in raw else k.default_value()
                if k.name in raw:
                    self._unread(k, raw[k.name], path, prefix + str(gate))
                continue
            if k.name in raw:
                out[k.name] = self.value(k, raw[k.name], path)
                if k.env and k.env in self.facts.env and self.ver.eager_env:
                    self._eager_env(k, path)
            elif k.env and k.env in self.facts.env:
                out[k.name] = self._from_env(k, path)
            elif k.is_section:  # absent: its defaults, and the env fallbacks inside it
                out[k.name] = self.section(k.children, {}, path + ".", k.extra)
            else:
                out[k.name] = k.default_value()
        for k in keys:
            if k.default_from is not None and k.name not in raw:
                out[k.name] = out.get(k.default_from)
        return out

    def value(self, k: Key, v: Any, path: str) -> Any:
        if k.is_section:
            if v is None and k.null_ok:
                return self.section(k.children, {}, path + ".", k.extra)
            if not isinstance(v, dict):
                if k.non_object == "ignore":
                    self.add(
                        "unchecked-type",
                        "warning",
                        (path,),
                        f"{path} should be an object, got {json_type(v)}: "
                        "vLLM-Ascend ignores it and uses the defaults",
                        f"write {path} as a JSON object",
                    )
                    return self.section(k.children, {}, path + ".", k.extra)
                self.add(
                    "wrong-type",
                    "error",
                    (path,),
                    f"{path} must be an object, got {json_type(v)} {show(v)}",
                    f"write {path} as a JSON object",
                )
                return v
            return self.section(k.children, v, path + ".", k.extra, k.gate)
        if v is None and k.optional:
            return None
        want = TYPE_WORDS[k.type]
        check = k.check
        if check in ("lax", "cast"):
            # lax: the typed config (main-2026-09) validates; cast: int()/bool() in __init__
            convert, fails = (
                (lax, "refuses to start") if check == "lax" else (cast, "fails converting it")
            )
            try:
                out = convert(k.type, v)
            except Bad:
                self.add(
                    "wrong-type",
                    "error",
                    (path,),
                    f"{path} must be {want}, got {json_type(v)} {show(v)}: vLLM-Ascend {fails}",
                    f"write {path} as {want}",
                )
                return v
            if check == "cast" and k.type == "bool" and not isinstance(v, bool):
                self._truthy(path, v, want)
            elif type(out) is not type(v) or out != v:
                self.add(
                    "coerced-value",
                    "info",
                    (path,),
                    f"{path}: {show(v)} is read as {show(out)}",
                    f"write {show(out)} to say what runs",
                )
            self._range(k, out, path)
            return out
        if check in ("isinstance", "compare"):
            number = k.type in ("int", "float")
            if number and isinstance(v, bool):
                if k.no_bool:
                    self.add(
                        "wrong-type",
                        "error",
                        (path,),
                        f"{path} must be {want}, got boolean {show(v)}: vLLM-Ascend refuses "
                        "to start",
                        f"write {path} as {want}",
                    )
                    return v
                self.add(
                    "unchecked-type",
                    "warning",
                    (path,),
                    f"{path} should be {want}, got {show(v)}, which counts as {int(v)}",
                    f"write {int(v)}",
                )
            elif (number and not is_number(v)) or (not number and not type_ok(k.type, v)):
                how = (
                    "is compared with numbers and crashes start-up"
                    if check == "compare"
                    else "refuses to start"
                )
                self.add(
                    "wrong-type",
                    "error",
                    (path,),
                    f"{path} must be {want}, got {json_type(v)} {show(v)}: vLLM-Ascend {how}",
                    f"write {path} as {want}",
                )
                return v
            elif k.type == "int" and isinstance(v, float) and check == "isinstance":
                # isinstance(1024.0, int) is false: the explicit check refuses it
                whole = f"write {int(v)}" if v.is_integer() else "write an integer"
                self.add(
                    "wrong-type",
                    "error",
                    (path,),
                    f"{path} must be an integer, got number {show(v)}: vLLM-Ascend checks it "
                    "with isinstance(..., int) and refuses to start",
                    f"{whole} (no decimal point)",
                )
                return v
            elif k.type == "int" and isinstance(v, float):
                self.add(
                    "unchecked-type",
                    "warning",
                    (path,),
                    f"{path} should be an integer, got {show(v)}",
                    "write an integer; vLLM-Ascend does not check it",
                )
            self._range(k, v, path)
            return v
        if check == "truthy":
            if not isinstance(v, bool):
                self._truthy(path, v, want)
            return v
        # "any": used as given; a value outside the choices is refused, a wrong type is not
        if self._range(k, v, path):
            return v
        if k.type != "any" and v is not None and not self._loosely(k.type, v):
            self.add(
                "unchecked-type",
                "warning",
                (path,),
                f"{path} should be {want}, got {json_type(v)} {show(v)}; vLLM-Ascend does not "
                "check it and uses it as given",
                f"write {path} as {want}",
            )
        return v

    @staticmethod
    def _loosely(kind: str, v: Any) -> bool:
        if kind in ("int", "float"):
            return is_number(v)
        return type_ok(kind, v)  # type: ignore[arg-type]

    def _truthy(self, path: str, v: Any, want: str) -> None:
        self.add(
            "unchecked-type",
            "warning",
            (path,),
            f"{path} should be {want}, got {json_type(v)} {show(v)}: this version tests only "
            f"its truthiness, so it counts as {show(bool(v))}",
            f"write {show(bool(v))} (or what you meant) as a JSON boolean",
        )

    def _range(self, k: Key, v: Any, path: str) -> bool:
        """Report a value outside the key's choices or bounds; True when it was."""
        expected = in_range(k, v)
        if expected is not None:
            self.add(
                "out-of-range",
                "error",
                (path,),
                f"{path} must be {expected}, got {show(v)}: vLLM-Ascend refuses to start",
                f"set {path} to {expected}",
            )
        return expected is not None

    def _from_env(self, k: Key, path: str) -> Any:
        assert k.env is not None
        raw = self.facts.env[k.env]
        try:
            n = int(raw)
            value: Any = bool(n) if k.env_bool else n
        except ValueError:
            self.add(
                "env-invalid",
                "error",
                (path,),
                f"{k.env}={raw} is read for {path} and is not an integer: vLLM-Ascend "
                "fails at start-up",
                f"set {k.env} to 0 or 1, or unset it",
            )
            return k.default_value()
        if k.check == "lax":
            try:
                value = lax(k.type, value)
            except Bad:
                self.add(
                    "env-invalid",
                    "error",
                    (path,),
                    f"{k.env}={raw} is read for {path} and is not {TYPE_WORDS[k.type]}",
                    f"fix or unset {k.env}",
                )
                return k.default_value()
        self.add(
            "env-fallback",
            "info",
            (path,),
            f"{path} is not set; it comes from {k.env}={raw} (read as {show(value)}, from the "
            f"{self.facts.env_label})",
            f"set {path} in the additional config; {k.env} is deprecated",
        )
        self._range(k, value, path)
        return value

    def _eager_env(self, k: Key, path: str) -> None:
        """The key is set, but this version parses its env variable anyway."""
        assert k.env is not None
        raw = self.facts.env[k.env]
        try:
            int(raw)
        except ValueError:
            self.add(
                "env-invalid",
                "error",
                (path,),
                f"{k.env}={raw} (from the {self.facts.env_label}) is not an integer: "
                f"vLLM-Ascend parses it at start-up even though {path} is set in the config, "
                "and fails",
                f"unset {k.env} (the config value is the one used), or set it to an integer",
            )

    def _gate_open(self, keys: tuple[Key, ...], raw: Mapping[str, Any], gate: str) -> bool:
        """bool() of the gate child, the way the sub-config tests it before reading the rest."""
        key = next((k for k in keys if k.name == gate), None)
        if key is None:
            return True
        return bool(raw[gate]) if gate in raw else bool(key.default_value())

    def _unread(self, k: Key, v: Any, path: str, gate_path: str) -> None:
        """A value behind a closed gate: say what would be refused once the gate opens."""
        scratch = _Table(self.ver, self.facts)
        scratch.value(k, v, path)
        refused = [f for f in scratch.findings if f.severity == "error"]
        if refused:
            self.add(
                "unread-while-disabled",
                "info",
                (path, gate_path),
                f"{path} is not read while {gate_path} is off, so vLLM-Ascend starts; once "
                f"it is on: {refused[0].message}",
                refused[0].hint,
            )

    def removed_env(self) -> None:
        for name, what in self.ver.removed_env.items():
            if name in self.facts.env:
                self.add(
                    "removed-env",
                    "warning",
                    (),
                    f"{name} is set (in the {self.facts.env_label}): {what}",
                    f"unset {name}",
                )

    def _removed(self, path: str, replacement: str | None, why: str, severity: str) -> None:
        hint = f"use {replacement}" if replacement else f"remove {path}"
        if severity == "error" and self._omni(path):
            self.add(
                "unknown-key-omni",
                "warning",
                (path,),
                f"{path} is not a {self.ver.name} key ({why}); vLLM-Omni is installed, so "
                "vLLM-Ascend warns, leaves it out of validation and starts: it has no effect",
                hint,
            )
            return
        if severity == "error":
            hint = self._omni_hint(path, hint)
            self.add(
                "removed-key",
                "error",
                (path,),
                f"{path} is refused by {self.ver.name} ({why}): vLLM-Ascend will not start",
                hint,
            )
        else:
            self.add(
                "removed-key",
                "warning",
                (path,),
                f"{path} is no longer read by {self.ver.name} ({why}): it has no effect",
                hint,
            )

    def _unknown(self, path: str, name: str, level: tuple[Key, ...], extra: str) -> None:
        severity: Severity = "error" if extra == "error" else "warning"
        consequence = (
            "vLLM-Ascend refuses unknown keys here"
            if extra == "error"
            else "vLLM-Ascend silently ignores it"
        )
        hint = did_you_mean(self.ver, path, name, level)
        if extra == "error" and self._omni(path):
            self.add(
                "unknown-key-omni",
                "warning",
                (path,),
                f"{path} is not a {self.ver.name} key; vLLM-Omni is installed, so vLLM-Ascend "
                'warns ("keys are invalid for vLLM-Ascend"), leaves it out of validation and '
                "starts",
                hint,
            )
            return
        if extra == "error":
            hint = self._omni_hint(path, hint)
        self.add(
            "unknown-key",
            severity,
            (path,),
            f"{path} is not a {self.ver.name} key: {consequence}",
            hint,
        )


def did_you_mean(ver: Version, path: str, name: str, level: tuple[Key, ...]) -> str:
    """A hint for an unknown key: another version's key, the right place, or a near spelling."""
    from ascendtune.core import vllm_ascend

    owners = [
        e.name
        for e in vllm_ascend.ENTRIES
        if e.name != ver.name and (o := e.config) is not ver and o.key(path) is not None
    ]
    if owners:
        return f"{path} is a key of {vllm_ascend.spans(owners)}, not of {ver.name}: check --target"
    paths = ver.all_paths()
    elsewhere = [p for p in paths if p.rsplit(".", 1)[-1] == name and p != path]
    if elsewhere:
        return f"did you mean {elsewhere[0]}? (it belongs there)"
    prefix = path[: -len(name)]
    close = difflib.get_close_matches(name, [k.name for k in level], n=1, cutoff=0.75)
    if close:
        return f"did you mean {prefix}{close[0]}?"
    # a misspelt removed key: point at what replaced it
    gone = {r.path[len(prefix) :]: r for r in ver.removed if r.path.startswith(prefix)}
    close = difflib.get_close_matches(name, list(gone), n=1, cutoff=0.75)
    if close and gone[close[0]].replacement:
        return f"did you mean {gone[close[0]].replacement}?"
    leaves = [p.rsplit(".", 1)[-1] for p in paths]
    close = difflib.get_close_matches(name, leaves, n=1, cutoff=0.8)
    if close:
        return f"did you mean {paths[leaves.index(close[0])]}?"
    return f"remove it, or check the spelling against the {ver.name} keys"


def known_paths(target: str | None = None) -> list[str]:
    return version(target).all_paths()
