"""How a vLLM-Ascend version's additional-config is described: keys, sections, removed keys.

A version is data (ascendtune.core.vllm_ascend.tables): a tree of `Key`s with type, default and
range, the keys it no longer accepts, and the names of the cross-key rules that apply to it.
`Key.check` records how that version treats a value of the wrong type, because that differs:

- "truthy": read with `if value:`; any type runs, "false" counts as true.
- "cast": passed through bool()/int()/float(); the cast result runs, a failed cast refuses to start.
- "isinstance": an explicit isinstance check raises on the wrong type.
- "compare": compared with numbers (`> 0`); a non-number crashes with TypeError.
- "any": used as given, never checked.
- "lax": a typed pydantic field (main-2026-09): lax coercion ("false" → false, "2" → 2), else refuses.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Check = Literal["truthy", "cast", "isinstance", "compare", "any", "lax"]
KeyType = Literal["bool", "int", "float", "str", "list", "dict", "section", "any"]


@dataclass(frozen=True)
class Key:
    name: str
    type: KeyType
    default: Any = None
    check: Check = "truthy"
    optional: bool = False  # null is a valid value (str | None, int | None)
    choices: tuple[Any, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    env: str | None = None  # vllm_ascend/envs.py variable read when the key is absent
    env_bool: bool = False  # the env variable is parsed as bool(int(...)), else int(...)
    children: tuple[Key, ...] = ()
    extra: Literal["ignore", "error"] = "ignore"  # sections: what unknown sub-keys do
    non_object: Literal["error", "ignore"] = "error"  # sections: what a non-object value does
    null_ok: bool = False  # sections: null means {}
    default_from: str | None = None  # the default is this sibling's value (need_timing <- enabled)
    no_bool: bool = False  # an explicit check refuses true/false where a number is expected
    # sections: the other children are read (and validated) only when this child is truthy
    gate: str | None = None
    note: str = ""

    @property
    def is_section(self) -> bool:
        return self.type == "section"

    def child(self, name: str) -> Key | None:
        for k in self.children:
            if k.name == name:
                return k
        return None

    def default_value(self) -> Any:
        """The value vLLM-Ascend uses when the key is absent (sections: every default filled)."""
        if self.is_section:
            out = {k.name: k.default_value() for k in self.children}
            for k in self.children:
                if k.default_from is not None:
                    out[k.name] = out.get(k.default_from)
            return out
        if isinstance(self.default, (dict, list)):
            return _deepcopy(self.default)
        return self.default


@dataclass(frozen=True)
class Removed:
    """A key a version no longer reads (or refuses)."""

    path: str  # dotted
    replacement: str | None
    severity: Literal["error", "warning"]
    why: str


@dataclass(frozen=True)
class Version:
    name: str
    source: str  # commit and date the table was read from
    keys: tuple[Key, ...]
    removed: tuple[Removed, ...]
    rules: tuple[str, ...]  # codes of ascendtune.core.vllm_config.rules.RULES, in vLLM's order
    extra: Literal["ignore", "error"] = "ignore"  # what an unknown top-level key does
    # deprecated top-level keys still read, now nested: old name -> new dotted path
    legacy: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # prefix of the scheduler switches (main nests them under scheduler_config)
    scheduler: str = ""
    # environment variables this version no longer reads: name -> what to do instead
    removed_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # AscendConfig parses the env fallbacks (`int(os.getenv(...))`) even when the key is set, so
    # a value that does not parse fails start-up whatever the config says
    eager_env: bool = False
    # main after PR #15515: with vLLM-Omni installed, unknown top-level keys only warn
    omni_exception: bool = False
    # PR #16661 strips upstream-injected gdn/kda_prefill_backend before validation: True, False,
    # or None where it is not known whether this version carries it (the output then says so)
    strips_upstream_keys: bool | None = False
    # what platform.py writes back to false in piecewise graph modes (v0.24.0rc1: npugraph_ex only)
    piecewise_off: tuple[str, ...] = (
        "ascend_compilation_config.enable_npugraph_ex",
        "ascend_compilation_config.enable_static_kernel",
    )

    def key(self, path: str) -> Key | None:
        parts = path.split(".")
        level: Iterable[Key] = self.keys
        found: Key | None = None
        for p in parts:
            found = next((k for k in level if k.name == p), None)
            if found is None:
                return None
            level = found.children
        return found

    def removed_at(self, path: str) -> Removed | None:
        return next((r for r in self.removed if r.path == path), None)

    def all_paths(self) -> list[str]:
        return [p for p, _ in walk(self.keys)]


def walk(keys: Iterable[Key], prefix: str = "") -> Iterator[tuple[str, Key]]:
    for k in keys:
        path = prefix + k.name
        yield path, k
        if k.is_section:
            yield from walk(k.children, path + ".")


# --- building tables ---------------------------------------------------------------------------


def Bool(name: str, default: bool | None = False, check: Check = "truthy", **kw: Any) -> Key:
    return Key(name, "bool", default, check, **kw)


def Int(name: str, default: int | None = 0, check: Check = "compare", **kw: Any) -> Key:
    return Key(name, "int", default, check, **kw)


def Num(name: str, default: float, check: Check = "compare", **kw: Any) -> Key:
    return Key(name, "float", default, check, **kw)


def Str(name: str, default: str | None = None, check: Check = "any", **kw: Any) -> Key:
    return Key(name, "str", default, check, **kw)


def List(name: str, default: list[Any] | None = None, check: Check = "any", **kw: Any) -> Key:
    return Key(name, "list", [] if default is None else default, check, **kw)


def Obj(name: str, default: dict[str, Any] | None = None, check: Check = "any", **kw: Any) -> Key:
    """A free-form object (not a section): its content is not checked."""
    return Key(name, "dict", default, check, **kw)


def Anything(name: str, default: Any = None, **kw: Any) -> Key:
    return Key(name, "any", default, "any", optional=True, **kw)


def Section(name: str, *children: Key, **kw: Any) -> Key:
    return Key(name, "section", None, "any", children=tuple(children), **kw)


def patch(keys: tuple[Key, ...], changes: Mapping[str, Mapping[str, Any]]) -> tuple[Key, ...]:
    """Keys with fields replaced at dotted paths: {"a.b": {"default": 1}}."""
    out = keys
    for path, change in changes.items():
        out = _at(out, path.split("."), lambda k, c=change: dataclasses.replace(k, **c))  # type: ignore[misc]
    return out


def drop(keys: tuple[Key, ...], *paths: str) -> tuple[Key, ...]:
    out = keys
    for path in paths:
        out = _at(out, path.split("."), lambda k: None)
    return out


def add(keys: tuple[Key, ...], parent: str, *new: Key) -> tuple[Key, ...]:
    """Keys with `new` appended at top level (parent "") or inside the section at `parent`."""
    if not parent:
        return keys + new
    return _at(keys, parent.split("."), lambda k: dataclasses.replace(k, children=k.children + new))


def typed(keys: tuple[Key, ...]) -> tuple[Key, ...]:
    """The table as pydantic-typed config classes see it: lax types, unknown keys refused."""
    out = []
    for k in keys:
        if k.is_section:
            out.append(
                dataclasses.replace(
                    k,
                    children=typed(k.children),
                    extra="error",
                    non_object="error",
                    null_ok=False,
                    gate=None,  # pydantic validates every field, enabled or not
                )
            )
        elif k.type == "any":
            out.append(k)
        else:
            out.append(dataclasses.replace(k, check="lax"))
    return tuple(out)


def _at(
    keys: tuple[Key, ...], parts: list[str], fn: Callable[[Key], Key | None]
) -> tuple[Key, ...]:
    out: list[Key] = []
    hit = False
    for k in keys:
        if k.name != parts[0]:
            out.append(k)
            continue
        hit = True
        new = (
            fn(k)
            if len(parts) == 1
            else dataclasses.replace(k, children=_at(k.children, parts[1:], fn))
        )
        if new is not None:
            out.append(new)
    if not hit:
        raise KeyError(".".join(parts))
    return tuple(out)


def _deepcopy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _deepcopy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deepcopy(x) for x in v]
    return v


# --- values ------------------------------------------------------------------------------------


class Bad(Exception):
    """A value the version refuses."""


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_INT_RE = re.compile(r"^[+-]?\d+(_\d+)*(\.0*)?$")
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
_I64 = 2**63 - 1


def lax(kind: KeyType, v: Any) -> Any:
    """Pydantic v2 lax-mode coercion for the field types AscendConfig uses; Bad if refused."""
    if kind == "bool":
        if isinstance(v, bool):
            return v
        if is_number(v) and v in (0, 1):
            return bool(v)
        if isinstance(v, str) and v.lower() in _TRUE | _FALSE:
            return v.lower() in _TRUE
        raise Bad("a boolean (true/false)")
    if kind == "int":
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        if isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= _I64:
            return int(v)
        if isinstance(v, str) and _INT_RE.match(v.strip()):
            return int(v.strip().replace("_", "").split(".")[0])
        raise Bad("an integer")
    if kind == "float":
        if isinstance(v, bool) or is_number(v):
            return float(v)
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                pass
        raise Bad("a number")
    if kind == "str":
        if isinstance(v, str):
            return v
        raise Bad("a string")
    if kind == "list":
        if isinstance(v, list):
            return v
        raise Bad("a list")
    if kind == "dict":
        if isinstance(v, dict):
            return v
        raise Bad("an object")
    return v


def cast(kind: KeyType, v: Any) -> Any:
    """Python's bool()/int()/float() as vLLM-Ascend applies them; Bad where they raise."""
    try:
        if kind == "bool":
            return bool(v)
        if kind == "int":
            if isinstance(v, (dict, list)) or v is None:
                raise Bad("an integer")
            if isinstance(v, float) and not math.isfinite(v):
                raise Bad("a finite integer")
            return int(v)
        if kind == "float":
            if isinstance(v, (dict, list)) or v is None:
                raise Bad("a number")
            return float(v)
    except (TypeError, ValueError, OverflowError):
        raise Bad("an integer" if kind == "int" else "a number") from None
    return v


def type_ok(kind: KeyType, v: Any) -> bool:
    """Whether v is of the key's type the way Python's isinstance sees it (bool counts as int)."""
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int)
    if kind == "float":
        return isinstance(v, (int, float))
    if kind == "str":
        return isinstance(v, str)
    if kind == "list":
        return isinstance(v, list)
    if kind in ("dict", "section"):
        return isinstance(v, dict)
    return True


TYPE_WORDS: dict[str, str] = {
    "bool": "a boolean",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "list": "a list",
    "dict": "an object",
    "section": "an object",
    "any": "any value",
}


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def in_range(key: Key, v: Any) -> str | None:
    """None when v satisfies the key's choices and bounds, else what was expected."""
    if key.choices is not None:
        try:
            ok = v in key.choices
        except TypeError:
            ok = False
        if not ok:
            return "one of " + ", ".join(_show(c) for c in key.choices)
    if v is None or not (is_number(v) or isinstance(v, bool)):
        return None
    if isinstance(v, float) and math.isnan(v) and (key.gt, key.ge, key.le) != (None, None, None):
        return _bounds(key)
    if key.gt is not None and not v > key.gt:
        return _bounds(key)
    if key.ge is not None and not v >= key.ge:
        return _bounds(key)
    if key.le is not None and not v <= key.le:
        return _bounds(key)
    return None


def _bounds(key: Key) -> str:
    lo = (
        f"> {_num(key.gt)}"
        if key.gt is not None
        else f">= {_num(key.ge)}"
        if key.ge is not None
        else ""
    )
    hi = f"<= {_num(key.le)}" if key.le is not None else ""
    return " and ".join(x for x in (lo, hi) if x)


def _num(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)


def _show(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def get_path(tree: Mapping[str, Any], path: str) -> Any:
    node: Any = tree
    for p in path.split("."):
        if not isinstance(node, Mapping) or p not in node:
            return None
        node = node[p]
    return node


def set_path(tree: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = tree
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value
