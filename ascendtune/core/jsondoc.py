"""The version every `--json` document carries, the one function that stamps it on a
document (the CLI's printer, `ascendtune.api` and `fleet`'s node reports all call it), and the
one encoder that prints it as strict JSON (SPEC.md section 4: no NaN, no Infinity)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# goes up on a breaking change (a key removed, or given another type or meaning), not when a
# key is added; a key renamed keeps its old name beside the new one for one version
SCHEMA_VERSION = 1


def versioned(body: Mapping[str, Any]) -> dict[str, Any]:
    """body as printed: `schema_version` first, then its own keys in their order."""
    return {"schema_version": SCHEMA_VERSION, **body}


# what a number JSON cannot carry is written as (strict parsers refuse bare NaN and Infinity)
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def finite(value: Any) -> Any:
    """value with every NaN, Infinity and -Infinity (a float, or a number too large for one,
    like 1e400) replaced by the string "NaN", "Infinity" or "-Infinity"; the rest unchanged
    (the same objects where nothing changed, so the common case costs one walk)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE.get(value, "NaN")
    if isinstance(value, dict):
        out = {k: finite(v) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, (list, tuple)):
        items = [finite(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def non_finite_paths(value: Any, path: str = "") -> list[str]:
    """The dotted paths (list items as [i]) of every non-finite number in value."""
    if isinstance(value, float) and not math.isfinite(value):
        return [path]
    if isinstance(value, dict):
        return [
            p
            for k, v in value.items()
            for p in non_finite_paths(v, f"{path}.{k}" if path else str(k))
        ]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in non_finite_paths(v, f"{path}[{i}]")]
    return []


def dumps(doc: Mapping[str, Any], *, compact: bool = False) -> str:
    """The one encoder of `--json` documents: schema_version first, strict JSON (no NaN, no
    Infinity: those become strings, see finite), keys that are not strings written as text.
    Indented by 2, or one line with compact (a stream of documents, one per line)."""
    body = versioned(doc)
    try:  # the common case: nothing to replace (allow_nan=False refuses any NaN or Infinity)
        return _encode(body, compact)
    except (TypeError, ValueError):
        body = finite(body)
    try:
        return _encode(body, compact)
    except (TypeError, ValueError):  # a key JSON cannot write (a tuple, NaN): as text
        return _encode(_string_keys(body), compact)


def _encode(body: Any, compact: bool) -> str:
    if compact:
        return json.dumps(body, allow_nan=False, separators=(",", ":"))
    return json.dumps(body, allow_nan=False, indent=2)


def _string_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k if isinstance(k, str) else _key_text(k): _string_keys(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_string_keys(v) for v in value]
    return value


def _key_text(key: Any) -> str:
    """A key as json.dumps would write it where it can (1 -> "1", None -> "null"), else str."""
    key = finite(key)
    if key is None or isinstance(key, (bool, int, float)):
        return str(json.dumps(key))
    return str(key)
