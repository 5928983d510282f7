"""Read one vLLM-Ascend release's additional-config keys out of its source, with `ast` only.

    python -m scripts.extract_schema 0.30.0rc2            # fetch, extract, write the data file
    python -m scripts.extract_schema --all --since 0.9.1rc1
    python -m scripts.extract_schema --check 0.18.0        # exit 1 when the committed file differs
    python -m scripts.extract_schema --source DIR          # a source tree (prints the JSON)

Nothing of the release is imported or run: every .py file under vllm_ascend/ (tests excluded) is
parsed, and the keys are followed from where the code reads `<anything>.additional_config`:

- the `.get()` style (releases up to 0.26): `cfg.get("k", default)`, `cfg["k"]`, `"k" in cfg`,
  a sub-dict passed on to a class or function (`Cls(sub)`, `Cls(**sub)`, `self.m(sub)`), keys
  listed in a literal that the code checks every given key against (EplbConfig's `_defaults`);
- the typed style (0.27.1rc1 on): `@config` pydantic dataclasses, one field per key, a field whose
  type is another such class is a section; keys the factory strips before validation;
- the unknown-key policy of every level: ignored (only known keys are read), refused (a loop over
  the given keys that raises, `Cls(**sub)` into a class without `**kwargs`, `extra="forbid"`),
  kept (copied through with setattr), and main's vLLM-Omni exception (a `find_spec("vllm_omni")`).

Where a type or default cannot be told from the source (a default computed at run time, a value
from a helper), the key says so: `"unknown": ["default"]` with the expression in `"expr"`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parents[1]
SCHEMA_DIR = TOP / "ascendtune" / "core" / "vllm_ascend" / "config_schemas"
# bump when the output for the same source changes; recorded in every data file
EXTRACTOR_VERSION = 3
PACKAGE = "vllm_ascend/"

Path_ = tuple[str, ...]
ROOT: Path_ = ()
TYPES = {
    "bool": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "list": "list",
    "dict": "dict",
    "set": "list",
    "tuple": "list",
    "List": "list",
    "Dict": "dict",
    "Sequence": "list",
    "Mapping": "dict",
}


# --- what is collected --------------------------------------------------------------------------


@dataclass
class KeyInfo:
    type: str | None = None
    default: Any = None
    has_default: bool = False
    expr: str | None = None  # the default's source where it is not a literal
    optional: bool = False
    choices: list[Any] | None = None
    bounds: dict[str, float] = field(default_factory=dict)
    env: str | None = None
    cast: str | None = None
    section: bool = False
    policy: str | None = None  # sections: ignored / refused / kept
    policy_why: str | None = None
    sources: list[str] = field(default_factory=list)
    stripped: bool = False  # typed style: taken out before validation
    derived: bool = False  # typed style: a field the factory computes; a given value is dropped


@dataclass(frozen=True)
class Dict_:
    """A value that is the config dict at `path` (minus `excluded` keys)."""

    path: Path_
    excluded: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Str_:
    value: str


@dataclass(frozen=True)
class Expr_:
    node: ast.expr
    where: str


Value = Dict_ | Str_ | Expr_


@dataclass
class Func:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    module: Module
    cls: Klass | None

    @property
    def is_classmethod(self) -> bool:
        return any(_name(d) == "classmethod" for d in self.node.decorator_list)

    @property
    def is_static(self) -> bool:
        return any(_name(d) == "staticmethod" for d in self.node.decorator_list)


@dataclass
class Klass:
    node: ast.ClassDef
    module: Module
    methods: dict[str, Func] = field(default_factory=dict)


@dataclass
class Module:
    rel: str
    tree: ast.Module
    constants: dict[str, ast.expr] = field(default_factory=dict)


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def _const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


_NO = object()


def literal(node: ast.AST | None) -> Any:
    """The node's value when it is a literal (lists, dicts, numbers, -1, None), else _NO."""
    if node is None:
        return _NO
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO
    if isinstance(value, (set, frozenset, tuple)):
        value = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _NO
    return value


def type_of_value(v: Any) -> str | None:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return None


# --- the program --------------------------------------------------------------------------------


class Program:
    """Every module of the release's package, its classes and functions by name."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.modules: list[Module] = []
        self.classes: dict[str, list[Klass]] = {}
        self.functions: dict[str, list[Func]] = {}
        self.methods: dict[str, list[Func]] = {}
        self.errors: list[str] = []
        # modules are parsed when they can matter: those that read the config or define typed
        # configs and environment defaults first, any other one when a name it defines is needed
        self.pending: dict[str, bytes] = {
            rel: data
            for rel, data in files.items()
            if rel.startswith(PACKAGE) and rel.endswith(".py") and "/tests/" not in rel
        }
        for rel in sorted(self.pending):
            data = self.pending[rel]
            if b"additional_config" in data or b"ConfigDict" in data or rel.endswith("envs.py"):
                self._load(rel)

    def _load(self, rel: str) -> None:
        data = self.pending.pop(rel, None)
        if data is None:
            return
        if True:
            try:
                tree = ast.parse(data, filename=rel)
            except SyntaxError as e:
                self.errors.append(f"{rel}: {e}")
                return
            mod = Module(rel, tree)
            self.modules.append(mod)
            for stmt in tree.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    t = stmt.targets[0]
                    if isinstance(t, ast.Name):
                        mod.constants[t.id] = stmt.value
                elif (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.value is not None
                ):
                    mod.constants[stmt.target.id] = stmt.value
            self._index(mod, tree.body, None)

    def _index(self, mod: Module, body: list[ast.stmt], cls: Klass | None) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                k = Klass(stmt, mod)
                self.classes.setdefault(stmt.name, []).append(k)
                self._index(mod, stmt.body, k)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                f = Func(stmt, mod, cls)
                if cls is None:
                    self.functions.setdefault(stmt.name, []).append(f)
                else:
                    cls.methods[stmt.name] = f
                    self.methods.setdefault(stmt.name, []).append(f)

    def _demand(self, kind: str, name: str) -> None:
        """Parse the not-yet-parsed modules that define `class name` / `def name`."""
        needle = f"{kind} {name}".encode()
        for rel in [r for r, data in self.pending.items() if needle in data]:
            self._load(rel)

    def klass(self, name: str, near: Module | None = None) -> Klass | None:
        if name not in self.classes:
            self._demand("class", name)
        found = self.classes.get(name) or []
        if near is not None:
            for k in found:
                if k.module is near:
                    return k
        return found[0] if len(found) == 1 else (found[0] if found else None)

    def method(self, cls: Klass, name: str) -> Func | None:
        seen: set[str] = set()
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c.node.name in seen:
                continue
            seen.add(c.node.name)
            if name in c.methods:
                return c.methods[name]
            for b in c.node.bases:
                bn = _name(b)
                base = self.klass(bn, c.module) if bn else None
                if base is not None:
                    todo.append(base)
        return None

    def function(self, name: str, near: Module) -> Func | None:
        if name not in self.functions:
            self._demand("def", name)
        found = self.functions.get(name) or []
        for f in found:
            if f.module is near:
                return f
        return found[0] if len(found) == 1 else None

    # typed config classes
    def decorator_extra(self, cls: Klass) -> str | None:
        """extra= of a @config / pydantic dataclass class; None when it is not one."""
        for d in cls.node.decorator_list:
            name = _name(d)
            if name not in ("config", "dataclass"):
                continue
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg == "config" and isinstance(kw.value, ast.Call):
                        ex = _kw(kw.value, "extra")
                        if _const_str(ex):
                            return _const_str(ex)
            for stmt in cls.node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(_name(t) == "model_config" for t in stmt.targets)
                    and isinstance(stmt.value, ast.Call)
                ):
                    ex = _const_str(_kw(stmt.value, "extra"))
                    if ex:
                        return ex
            if name == "config":
                return self._config_default_extra()
            return "forbid-init"  # a plain dataclass: Cls(**d) raises on an unknown key
        return None

    def _config_default_extra(self) -> str:
        """extra= of the package's own `config` decorator (config_utils.py mirrors vLLM's)."""
        if "config" not in self.functions:
            self._demand("def", "config")
        for f in self.functions.get("config") or []:
            for node in ast.walk(f.node):
                if isinstance(node, ast.Call) and _name(node.func) == "ConfigDict":
                    ex = _const_str(_kw(node, "extra"))
                    if ex:
                        return ex
        # vLLM's own decorator, outside this package: it forbids extra keys
        return "forbid-vllm"


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


# --- the extraction -----------------------------------------------------------------------------


class Extractor:
    def __init__(self, program: Program) -> None:
        self.p = program
        self.keys: dict[Path_, KeyInfo] = {}
        self.seen: set[tuple[int, tuple[tuple[str, Any], ...]]] = set()
        self.typed_done: set[tuple[str, Path_]] = set()
        self.fields: set[Path_] = set()  # keys that are fields of a typed config class
        self.stripped: set[str] = set()  # top-level names the typed factory takes out
        # `.get()` style: `self.f = cfg.get("k", ...)` in a class: (class, f) -> the key
        self.attrs: dict[tuple[int, str], Path_] = {}
        self.attr_classes: dict[int, Klass] = {}
        self.top_policy: str | None = None
        self.top_why: str | None = None
        self.omni = False
        self.notes: list[str] = []
        self.envs = self._env_defaults()
        self.depth = 0

    # entry
    def run(self) -> None:
        # first the module that defines AscendConfig, so its reads give the defaults
        mods = sorted(self.p.modules, key=lambda m: (not m.rel.endswith("ascend_config.py"), m.rel))
        for mod in mods:
            for func in self._functions(mod):
                if any(
                    (isinstance(n, ast.Attribute) and n.attr == "additional_config")
                    or (isinstance(n, ast.Constant) and n.value == "additional_config")
                    for n in ast.walk(func.node)
                ):
                    self.analyze(func, {})
            for node in ast.walk(mod.tree):
                if (
                    isinstance(node, ast.Call)
                    and _name(node.func) == "find_spec"
                    and node.args
                    and _const_str(node.args[0]) == "vllm_omni"
                ):
                    self.omni = True
        for cid, cls in self.attr_classes.items():
            self._constraints(cls, lambda f, cid=cid: self.attrs.get((cid, f)), init=True)  # type: ignore[misc]

    def _functions(self, mod: Module) -> Iterator[Func]:
        for fs in list(self.p.functions.values()):
            for f in fs:
                if f.module is mod:
                    yield f
        for ks in list(self.p.classes.values()):
            for k in ks:
                if k.module is mod:
                    yield from list(k.methods.values())

    def key(self, path: Path_) -> KeyInfo:
        for i in range(1, len(path)):
            parent = self.keys.setdefault(path[:i], KeyInfo())
            parent.section = True
        return self.keys.setdefault(path, KeyInfo())

    def where(self, func: Func, node: ast.AST) -> str:
        return f"{func.module.rel}:{getattr(node, 'lineno', 0)}"

    # one function, with its parameters bound
    def analyze(self, func: Func, binds: dict[str, Value]) -> None:
        sig = (id(func.node), tuple(sorted((k, _hashable(v)) for k, v in binds.items())))
        if sig in self.seen or len(self.seen) > 20000:
            return
        self.seen.add(sig)
        env: dict[str, Value] = dict(binds)
        lits: dict[str, ast.expr] = {}
        body = func.node.body
        # two passes: aliases made late in the body (loops) are known the second time
        for _ in range(2):
            for stmt in body:
                self._stmt(func, stmt, env, lits)

    def _stmt(
        self, func: Func, stmt: ast.AST, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a nested function sees the enclosing names (closures such as _resolve)
            inner = Func(stmt, func.module, func.cls)
            inner_env = {k: v for k, v in env.items()}
            for stmt2 in stmt.body:
                self._stmt(inner, stmt2, inner_env, dict(lits))
            return
        if isinstance(stmt, ast.ClassDef):
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = stmt.value
            if value is not None:
                self._expr(func, value, env, lits, stmt)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                v = self.value_of(func, value, env, lits)
                ann = stmt.annotation if isinstance(stmt, ast.AnnAssign) else None
                read = self._read_path(func, value, env, lits)
                for t in targets:
                    name = _target(t)
                    if name is None:
                        continue
                    if read is not None and func.cls is not None and name.startswith("self."):
                        self.attrs.setdefault((id(func.cls.node), name[5:]), read)
                        self.attr_classes[id(func.cls.node)] = func.cls
                    if isinstance(v, (Dict_, Str_)):
                        env[name] = v
                    if isinstance(value, (ast.Dict, ast.Set, ast.List, ast.Tuple, ast.Call)):
                        lits[name] = value
                    if ann is not None:
                        self._annotate(func, value, ann, env, lits)
            return
        if isinstance(stmt, ast.For):
            self._expr(func, stmt.iter, env, lits, stmt)
            self._loop(func, stmt, env, lits)
            for s in (*stmt.body, *stmt.orelse):
                self._stmt(func, s, env, lits)
            return
        if isinstance(stmt, ast.stmt):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    self._stmt(func, child, env, lits)
                elif isinstance(child, ast.expr):
                    self._expr(func, child, env, lits, stmt)
                elif isinstance(child, ast.excepthandler):
                    for s in child.body:
                        self._stmt(func, s, env, lits)
                elif isinstance(child, ast.withitem):
                    self._expr(func, child.context_expr, env, lits, stmt)
                elif isinstance(child, ast.match_case):
                    for s in child.body:
                        self._stmt(func, s, env, lits)

    # values
    def value_of(
        self, func: Func, node: ast.AST, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> Value | None:
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return Str_(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr == "additional_config":
                return Dict_(ROOT)
            t = _target(node)
            if t is not None and t in env:
                return env[t]
            return None
        if isinstance(node, ast.IfExp):
            return self.value_of(func, node.body, env, lits) or self.value_of(
                func, node.orelse, env, lits
            )
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                got = self.value_of(func, v, env, lits)
                if isinstance(got, Dict_):
                    return got
            return None
        if isinstance(node, ast.NamedExpr):
            return self.value_of(func, node.value, env, lits)
        if isinstance(node, ast.Subscript):
            base = self.value_of(func, node.value, env, lits)
            key = self._keyname(func, node.slice, env)
            if isinstance(base, Dict_) and key is not None:
                return Dict_((*base.path, key))
            return None
        if isinstance(node, ast.Call):
            fn = node.func
            if _name(fn) == "getattr" and len(node.args) >= 2:
                if _const_str(node.args[1]) == "additional_config":
                    return Dict_(ROOT)
                return None
            if isinstance(fn, ast.Attribute) and fn.attr in ("get", "pop", "setdefault"):
                base = self.value_of(func, fn.value, env, lits)
                key = self._keyname(func, node.args[0], env) if node.args else None
                if isinstance(base, Dict_) and key is not None:
                    return Dict_((*base.path, key))
                return None
            if isinstance(fn, ast.Attribute) and fn.attr in ("copy", "items", "keys"):
                base = self.value_of(func, fn.value, env, lits)
                return base if isinstance(base, Dict_) else None
            if _name(fn) in ("dict", "deepcopy", "copy", "set") and len(node.args) == 1:
                base = self.value_of(func, node.args[0], env, lits)
                return base if isinstance(base, Dict_) else None
            return self._returned(func, node, env, lits)
        if isinstance(node, ast.DictComp) and node.generators:
            gen = node.generators[0]
            base = self.value_of(func, gen.iter, env, lits)
            if isinstance(base, Dict_):
                excluded: set[str] = set()
                for cond in gen.ifs:
                    if (
                        isinstance(cond, ast.Compare)
                        and len(cond.ops) == 1
                        and isinstance(cond.ops[0], ast.NotIn)
                    ):
                        lit = self._literal_keys(func, cond.comparators[0], env, lits)
                        if lit is not None:
                            excluded |= set(lit)
                return Dict_(base.path, base.excluded | frozenset(excluded))
            return None
        if isinstance(node, ast.Dict) and len(node.keys) == 1 and node.keys[0] is None:
            base = self.value_of(func, node.values[0], env, lits)
            return base if isinstance(base, Dict_) else None
        return None

    def _read_path(
        self, func: Func, node: ast.expr, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> Path_ | None:
        """The key a value reads: `cfg.get("k", d)`, `cfg["k"]`, either inside int()/float()."""
        if (
            isinstance(node, ast.Call)
            and _name(node.func) in ("int", "float", "bool")
            and len(node.args) == 1
        ):
            node = node.args[0]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr != "get" or not node.args:
                return None
        elif not isinstance(node, ast.Subscript):
            return None
        got = self.value_of(func, node, env, lits)
        return got.path if isinstance(got, Dict_) and got.path else None

    def _returned(
        self, func: Func, call: ast.Call, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> Dict_ | None:
        """The config dict a helper returns (`_get_config_value(sub, cfg, "k", {})` returns
        `sub["k"]`): its first `return` that is one."""
        if self.depth > 3:
            return None
        args = [self.value_of(func, a, env, lits) for a in call.args]
        if not any(isinstance(a, Dict_) for a in args):
            return None
        target, skip_first, _ = self._callee(func, call.func)
        if target is None:
            return None
        params = [a.arg for a in (*target.node.args.posonlyargs, *target.node.args.args)]
        if skip_first and params:
            params = params[1:]
        inner: dict[str, Value] = {
            p: v for p, v in zip(params, args, strict=False) if isinstance(v, (Dict_, Str_))
        }
        self.depth += 1
        try:
            for node in ast.walk(target.node):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    name = _target(node.targets[0])
                    v = self.value_of(target, node.value, inner, {})
                    if name is not None and isinstance(v, (Dict_, Str_)):
                        inner.setdefault(name, v)
            for node in ast.walk(target.node):
                if isinstance(node, ast.Return) and node.value is not None:
                    v = self.value_of(target, node.value, inner, {})
                    if isinstance(v, Dict_):
                        return v
        finally:
            self.depth -= 1
        return None

    def _keyname(self, func: Func, node: ast.AST, env: dict[str, Value]) -> str | None:
        s = _const_str(node)
        if s is not None:
            return s
        if isinstance(node, ast.Name) and isinstance(env.get(node.id), Str_):
            return env[node.id].value  # type: ignore[union-attr]
        return None

    def _literal_keys(
        self, func: Func, node: ast.AST, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> dict[str, Any] | None:
        """Keys (with values, for a dict) of a literal the node names: local, self/class
        attribute, module constant, or a .copy()/dict()/set() of one."""
        for _ in range(6):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr in ("copy", "keys"))
                or _name(node.func) in ("dict", "set", "frozenset", "deepcopy")
            ):
                node = (
                    node.func.value
                    if isinstance(node.func, ast.Attribute) and node.func.attr in ("copy", "keys")
                    else (node.args[0] if node.args else node)
                )
                continue
            t = _target(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if t is not None and t in lits and lits[t] is not node:
                node = lits[t]
                continue
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                found = self._class_attr(func, node.attr)
                if found is not None:
                    node = found
                    continue
            if isinstance(node, ast.Name) and node.id in func.module.constants:
                node = func.module.constants[node.id]
                continue
            break
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                ks = _const_str(k)
                if ks is None:
                    return None
                lv = literal(v)
                out[ks] = lv
            return out
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            names = [_const_str(e) for e in node.elts]
            if any(n is None for n in names):
                return None
            return {n: _NO for n in names if n is not None}
        return None

    def _class_attr(self, func: Func, name: str) -> ast.expr | None:
        if func.cls is None:
            return None
        for stmt in func.cls.node.body:
            if isinstance(stmt, ast.Assign) and any(_name(t) == name for t in stmt.targets):
                return stmt.value
            if isinstance(stmt, ast.AnnAssign) and _name(stmt.target) == name and stmt.value:
                return stmt.value
        # self.x assigned in __init__ to a literal
        init = func.cls.methods.get("__init__")
        if init is not None:
            for node in ast.walk(init.node):
                if isinstance(node, ast.Assign) and any(
                    _target(t) == f"self.{name}" for t in node.targets
                ):
                    return node.value
        return None

    # expressions: the reads
    def _expr(
        self,
        func: Func,
        node: ast.AST,
        env: dict[str, Value],
        lits: dict[str, ast.expr],
        stmt: ast.AST,
        wrap: str | None = None,
    ) -> None:
        if isinstance(node, ast.Call):
            fn = node.func
            cast = _name(fn) if _name(fn) in ("bool", "int", "float", "str") else None
            if isinstance(fn, ast.Attribute) and fn.attr in ("get", "pop", "setdefault"):
                base = self.value_of(func, fn.value, env, lits)
                key = self._keyname(func, node.args[0], env) if node.args else None
                if isinstance(base, Dict_) and key is not None and key not in base.excluded:
                    default = node.args[1] if len(node.args) > 1 else _kw(node, "default")
                    self._read(func, (*base.path, key), default, node, env, wrap, has_default=True)
            elif not (isinstance(fn, ast.Attribute) and fn.attr in ("items", "keys", "copy")):
                self._call(func, node, env, lits)
            for child in (*node.args, *(kw.value for kw in node.keywords)):
                self._expr(func, child, env, lits, stmt, cast)
            self._expr(func, fn, env, lits, stmt)
            return
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            base = self.value_of(func, node.value, env, lits)
            key = self._keyname(func, node.slice, env)
            if isinstance(base, Dict_) and key is not None:
                self._read(func, (*base.path, key), None, node, env, wrap, has_default=False)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
        ):
            base = self.value_of(func, node.comparators[0], env, lits)
            key = self._keyname(func, node.left, env)
            if isinstance(base, Dict_) and key is not None:
                self._read(func, (*base.path, key), None, node, env, None, has_default=False)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                base = self.value_of(func, gen.iter, env, lits)
                if (
                    isinstance(base, Dict_)
                    and self._raises(func.node)
                    and self._checks_membership(node)
                ):
                    self._policy(base.path, "refused", self.where(func, node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            base = self.value_of(func, node.left, env, lits)
            if isinstance(base, Dict_) and self._raises(func.node):
                self._policy(base.path, "refused", self.where(func, node))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(
                    func, child, env, lits, stmt, wrap if isinstance(node, ast.BoolOp) else None
                )

    @staticmethod
    def _raises(fn: ast.AST) -> bool:
        return any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(fn))

    @staticmethod
    def _checks_membership(node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops)
            for n in ast.walk(node)
        )

    def _read(
        self,
        func: Func,
        path: Path_,
        default: ast.expr | None,
        node: ast.AST,
        env: dict[str, Value],
        wrap: str | None,
        has_default: bool,
    ) -> None:
        info = self.key(path)
        where = self.where(func, node)
        if where not in info.sources:
            info.sources.append(where)
        none_default = has_default and (default is None or literal(default) is None)
        if wrap and info.cast is None and not info.section:
            info.cast = wrap
            # bool(cfg.get("path")) of a key that defaults to None tests presence: no type
            if not info.optional and not none_default:
                info.type = info.type or wrap
        if not has_default and not info.has_default:
            # a helper reading a key it was given by name, with its fallback as another
            # argument (`_get_config_value(cfg, "k", "ENV", envs.ENV)`)
            fallback = next(
                (v.node for v in env.values() if isinstance(v, Expr_) and _env_name(v.node)),
                None,
            ) or next(
                (
                    v.node
                    for k, v in env.items()
                    if isinstance(v, Expr_)
                    and k.startswith("default")
                    and literal(v.node) is not _NO
                ),
                None,
            )
            if fallback is not None and any(isinstance(v, Str_) for v in env.values()):
                self._set_default(info, fallback, func.module)
            return
        if not has_default or info.has_default:
            return
        if default is None:
            # .get("k") without a default: None when absent
            info.has_default = True
            info.default = None
            return
        if isinstance(default, ast.Name) and isinstance(env.get(default.id), Expr_):
            default = env[default.id].node  # type: ignore[union-attr]
        default = self._class_literal(func, default)
        self._set_default(info, default, func.module)

    def _class_literal(self, func: Func, node: ast.expr) -> ast.expr:
        """`self.attr` or `self._defaults["k"]` where the class holds a literal: that literal."""
        key = None
        if isinstance(node, ast.Subscript):
            key = _const_str(node.slice)
            if key is None:
                return node
            base: ast.expr = node.value
        else:
            base = node
        if not (
            isinstance(base, ast.Attribute)
            and isinstance(base.value, ast.Name)
            and base.value.id in ("self", "cls")
        ):
            return node
        attr = self._class_attr(func, base.attr)
        if attr is None:
            return node
        if key is None:
            return attr if literal(attr) is not _NO else node
        if isinstance(attr, ast.Dict):
            for k, v in zip(attr.keys, attr.values, strict=True):
                if _const_str(k) == key and literal(v) is not _NO:
                    return v
        return node

    def _set_default(self, info: KeyInfo, default: ast.expr, module: Module | None) -> None:
        value = literal(default)
        if value is _NO and isinstance(default, ast.Name) and module is not None:
            const = module.constants.get(default.id)
            value = literal(const) if const is not None else _NO
        if value is not _NO:
            info.has_default = True
            info.default = value
            if info.type is None:
                info.type = type_of_value(value)
            if value is None:
                info.optional = True
            return
        env_name = _env_name(default)
        if env_name is not None:
            info.env = env_name
            got = self.envs.get(env_name, _NO)
            if got is not _NO:
                info.has_default = True
                info.default = got
                if info.type is None:
                    info.type = type_of_value(got)
                return
        info.has_default = True
        info.default = _NO
        info.expr = ast.unparse(default)[:200]

    def _annotate(
        self,
        func: Func,
        value: ast.expr,
        ann: ast.expr,
        env: dict[str, Value],
        lits: dict[str, ast.expr],
    ) -> None:
        """`self.x: int = cfg.get("x", ...)`: the annotation gives the type."""
        target = value
        if isinstance(target, ast.Call) and _name(target.func) in ("bool", "int", "float", "str"):
            target = target.args[0] if target.args else target
        if not (
            isinstance(target, ast.Call)
            and isinstance(target.func, ast.Attribute)
            and target.func.attr == "get"
        ):
            return
        path = self.value_of(func, target, env, lits)
        if isinstance(path, Dict_) and path.path in self.keys:
            t, optional, choices = annotation_type(ann)
            info = self.keys[path.path]
            if t and not info.section:
                info.type = t
            info.optional = info.optional or optional
            if choices and info.choices is None:
                info.choices = choices

    def _policy(self, path: Path_, policy: str, why: str) -> None:
        if path == ROOT:
            if self.top_policy is None or policy == "refused":
                self.top_policy, self.top_why = policy, why
            return
        info = self.key(path)
        info.section = True
        if info.policy is None or policy == "refused":
            info.policy, info.policy_why = policy, why

    def _loop(
        self, func: Func, loop: ast.For, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> None:
        base = self.value_of(func, loop.iter, env, lits)
        if not isinstance(base, Dict_):
            return
        target = loop.target
        key_var = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
        kname = key_var.id if isinstance(key_var, ast.Name) else None
        body = ast.Module(body=loop.body, type_ignores=[])
        raises = any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(body))
        sets = any(isinstance(n, ast.Call) and _name(n.func) == "setattr" for n in ast.walk(body))
        where = self.where(func, loop)
        if raises:
            self._policy(base.path, "refused", where)
        elif sets:
            self._policy(base.path, "kept", where)
        # the given keys are checked against a literal: its keys are the section's keys
        if kname is None:
            return
        for n in ast.walk(body):
            if (
                isinstance(n, ast.Compare)
                and isinstance(n.left, ast.Name)
                and n.left.id == kname
                and len(n.ops) == 1
                and isinstance(n.ops[0], (ast.In, ast.NotIn))
            ):
                keys = self._literal_keys(func, n.comparators[0], env, lits)
                if not keys:
                    continue
                for k, v in keys.items():
                    info = self.key((*base.path, k))
                    if where not in info.sources:
                        info.sources.append(where)
                    if v is not _NO and not info.has_default:
                        info.has_default, info.default = True, v
                        info.type = info.type or type_of_value(v)
                        info.optional = info.optional or v is None

    # calls that pass a config dict on
    def _call(
        self, func: Func, call: ast.Call, env: dict[str, Value], lits: dict[str, ast.expr]
    ) -> None:
        args = [self.value_of(func, a, env, lits) for a in call.args]
        kws = {kw.arg: self.value_of(func, kw.value, env, lits) for kw in call.keywords if kw.arg}
        splats = [
            self.value_of(func, kw.value, env, lits) for kw in call.keywords if kw.arg is None
        ]
        splat = next((s for s in splats if isinstance(s, Dict_)), None)
        if not any(isinstance(v, Dict_) for v in (*args, *kws.values())) and splat is None:
            return
        target, skip_first, cls = self._callee(func, call.func)
        if target is None and cls is not None:
            # a typed class built from the dict: its fields are the keys
            if splat is not None:
                if splat.path == ROOT:
                    self.stripped |= set(splat.excluded) | set(kws)
                self.typed(cls, splat.path, splat.excluded, set(kws))
            return
        if target is None:
            return
        params = [a.arg for a in (*target.node.args.posonlyargs, *target.node.args.args)]
        if skip_first and params:
            params = params[1:]
        binds: dict[str, Value] = {}
        for pname, v in zip(params, args, strict=False):
            if v is None and call.args:
                a = call.args[params.index(pname)] if params.index(pname) < len(call.args) else None
                if a is not None and not isinstance(a, ast.Starred):
                    v = Expr_(a, self.where(func, a))
            if v is not None:
                binds[pname] = v
        for kw in call.keywords:
            if kw.arg is None:
                continue
            v = kws.get(kw.arg)
            if v is None:
                v = Expr_(kw.value, self.where(func, kw.value))
            binds[kw.arg] = v
        if splat is not None:
            self._splat(target, params, binds, splat, cls)
        self.analyze(target, binds)

    def _callee(self, func: Func, fn: ast.expr) -> tuple[Func | None, bool, Klass | None]:
        """The function a call runs, whether its first parameter is bound (self/cls), and the
        class when the call builds one."""
        if isinstance(fn, ast.Name):
            k = (
                func.cls
                if fn.id == "cls" and func.cls is not None
                else self.p.klass(fn.id, func.module)
            )
            if k is not None:
                init = self.p.method(k, "__init__")
                if init is not None and init.cls is k:
                    return init, True, k
                if self.p.decorator_extra(k) is not None:
                    return None, False, k
                return (init, True, k) if init is not None else (None, False, None)
            f = self.p.function(fn.id, func.module)
            return f, False, None
        if isinstance(fn, ast.Attribute):
            owner = fn.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and func.cls:
                m = self.p.method(func.cls, fn.attr)
                if m is not None:
                    return m, not m.is_static, None
            if isinstance(owner, ast.Name):
                k = self.p.klass(owner.id, func.module)
                if k is not None:
                    m = self.p.method(k, fn.attr)
                    if m is not None:
                        return m, m.is_classmethod, None
            cands = self.p.methods.get(fn.attr) or []
            if len(cands) == 1 and fn.attr not in ("get", "update", "pop", "__init__"):
                m = cands[0]
                return m, not m.is_static, None
        return None, False, None

    def _splat(
        self,
        target: Func,
        params: list[str],
        binds: dict[str, Value],
        splat: Dict_,
        cls: Klass | None,
    ) -> None:
        """`Callee(**sub)`: the callee's keyword parameters are the keys of `sub`."""
        a = target.node.args
        defaults = dict(
            zip([x.arg for x in a.args][len(a.args) - len(a.defaults) :], a.defaults, strict=True)
        )
        defaults.update(
            {x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        )
        where = f"{target.module.rel}:{target.node.lineno}"
        for arg in (*a.args, *a.kwonlyargs):
            name = arg.arg
            if name in ("self", "cls") or name in binds or name in splat.excluded:
                continue
            path = (*splat.path, name)
            info = self.key(path)
            if where not in info.sources:
                info.sources.append(where)
            if arg.annotation is not None:
                t, optional, choices = annotation_type(arg.annotation)
                info.type = info.type or t
                info.optional = info.optional or optional
                info.choices = info.choices or choices
            if name in defaults and not info.has_default:
                self._set_default(info, defaults[name], target.module)
            binds[name] = Expr_(defaults.get(name, ast.Constant(None)), where)
        if a.kwarg is not None:
            binds[a.kwarg.arg] = splat
            self._policy(splat.path, "ignored", where)
        else:
            self._policy(splat.path, "refused", where + " (no **kwargs)")

    # typed (@config) classes
    def typed(
        self,
        cls: Klass,
        path: Path_,
        excluded: frozenset[str] = frozenset(),
        given: set[str] | None = None,
    ) -> None:
        tag = (f"{cls.module.rel}:{cls.node.name}", path)
        if tag in self.typed_done:
            return
        self.typed_done.add(tag)
        try:
            self._typed_fields(cls, path, excluded)
        finally:
            self._constraints(cls, lambda f: (*path, f) if (*path, f) in self.fields else None)

    def _typed_fields(self, cls: Klass, path: Path_, excluded: frozenset[str]) -> None:
        extra = self.p.decorator_extra(cls)
        where = f"{cls.module.rel}:{cls.node.lineno}"
        if extra in ("forbid", "forbid-init", "forbid-vllm"):
            why = {"forbid-init": "a dataclass built with **", "forbid-vllm": "vLLM's @config"}
            self._policy(
                path, "refused", f"{where} {cls.node.name} ({why.get(extra, 'extra=forbid')})"
            )
        elif extra in ("ignore", "allow"):
            self._policy(path, "ignored" if extra == "ignore" else "kept", where)
        for stmt in cls.node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            name = stmt.target.id
            if name.startswith("_") or _is_classvar(stmt.annotation):
                continue
            call = stmt.value if isinstance(stmt.value, ast.Call) else None
            is_field = call is not None and _name(call.func) in ("field", "Field")
            if is_field and call is not None:
                init = _kw(call, "init")
                if isinstance(init, ast.Constant) and init.value is False:
                    continue
            kpath = (*path, name)
            self.fields.add(kpath)
            info = self.key(kpath)
            if name in excluded:
                info.stripped = True
            fwhere = f"{cls.module.rel}:{stmt.lineno}"
            if fwhere not in info.sources:
                info.sources.append(fwhere)
            t, optional, choices = annotation_type(stmt.annotation)
            sub = self._typed_class(stmt.annotation, cls.module)
            info.optional = info.optional or optional
            info.choices = info.choices or choices
            if is_field and call is not None:
                for bound in ("ge", "gt", "le", "lt"):
                    bv = literal(_kw(call, bound))
                    if isinstance(bv, (int, float)) and not isinstance(bv, bool):
                        info.bounds[bound] = bv
            for b, bv in _annotated_bounds(stmt.annotation).items():
                info.bounds.setdefault(b, bv)
            if sub is not None:
                info.section = True
                self.typed(sub, kpath)
                continue
            if t:
                info.type = t
            if stmt.value is None:
                continue
            if not is_field or call is None:
                if not info.has_default:
                    self._set_default(info, stmt.value, cls.module)
                continue
            default = _kw(call, "default")
            factory = _kw(call, "default_factory")
            if default is not None:
                if not info.has_default:
                    self._set_default(info, default, None)
            elif factory is not None:
                fac = factory.body if isinstance(factory, ast.Lambda) else factory
                fname = _name(fac)
                if fname in ("list", "set", "tuple") or (isinstance(fac, ast.List)):
                    info.has_default, info.default = True, []
                elif fname == "dict" or isinstance(fac, ast.Dict):
                    info.has_default, info.default = (
                        True,
                        literal(fac) if isinstance(fac, ast.Dict) else {},
                    )
                else:
                    sub2 = self.p.klass(fname, cls.module) if fname else None
                    if sub2 is not None and self.p.decorator_extra(sub2) is not None:
                        info.section = True
                        self.typed(sub2, kpath)
                    elif not info.has_default:
                        info.has_default, info.default = True, _NO
                        info.expr = ast.unparse(factory)[:200]

    def _constraints(
        self, cls: Klass, resolve: Callable[[str], Path_ | None], init: bool = False
    ) -> None:
        """Choices and bounds a class's validators enforce on one key: a statement
        `if self.f not in (0, 1): raise ...` or `if self.f <= 0: raise ...` directly in the
        body of an after-validator or a `_validate*` method (or `__init__`, for the `.get()`
        style), nothing conditional; `resolve` names the key behind `self.f`."""
        for name, method in cls.methods.items():
            after = any(
                isinstance(d, ast.Call)
                and _name(d.func) == "model_validator"
                and _const_str(_kw(d, "mode")) == "after"
                for d in method.node.decorator_list
            )
            if not (after or name.startswith("_validate") or (init and name == "__init__")):
                continue
            for stmt in method.node.body:
                if not (
                    isinstance(stmt, ast.If)
                    and stmt.body
                    and isinstance(stmt.body[-1], ast.Raise)
                    and not stmt.orelse
                ):
                    continue
                tests = (
                    stmt.test.values
                    if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.Or)
                    else [stmt.test]
                )
                for test in tests:
                    self._constraint(test, resolve, f"{cls.module.rel}:{stmt.lineno}")

    def _constraint(
        self, test: ast.expr, resolve: Callable[[str], Path_ | None], where: str
    ) -> None:
        if (
            isinstance(test, ast.UnaryOp)
            and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Compare)
            and len(test.operand.ops) == 2
        ):
            # `not (0 < self.f <= 1)`: the range that is accepted
            c = test.operand
            low, high = literal(c.left), literal(c.comparators[1])
            field_name = _self_field(c.comparators[0])
            kpath = resolve(field_name) if field_name else None
            info = self.keys.get(kpath) if kpath else None
            if info is None or info.section:
                return
            lo = {ast.Lt: "gt", ast.LtE: "ge"}.get(type(c.ops[0]))
            if lo and isinstance(low, (int, float)) and not isinstance(low, bool):
                info.bounds.setdefault(lo, low)
            if isinstance(c.ops[1], ast.LtE) and isinstance(high, (int, float)):
                info.bounds.setdefault("le", high)
            if where not in info.sources:
                info.sources.append(where)
            return
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return
        left, op, right = test.left, test.ops[0], test.comparators[0]
        flipped = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
        if not _self_field(left) and _self_field(right) and type(op) in flipped:
            left, right, op = right, left, flipped[type(op)]()
        field_name = _self_field(left)
        kpath = resolve(field_name) if field_name else None
        if kpath is None:
            return
        info = self.keys.get(kpath)
        value = literal(right)
        if info is None or value is _NO or info.section:
            return
        if isinstance(op, ast.NotIn) and isinstance(value, list) and info.choices is None:
            info.choices = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            # the test says what is refused: `f < 0` refuses below 0, so f >= 0 is required
            bound = {ast.Lt: "ge", ast.LtE: "gt", ast.Gt: "le"}.get(type(op))
            if bound is not None:
                info.bounds.setdefault(bound, value)
        else:
            return
        if where not in info.sources:
            info.sources.append(where)

    def _typed_class(self, ann: ast.expr, near: Module) -> Klass | None:
        for n in ast.walk(ann):
            name = (
                n.id
                if isinstance(n, ast.Name)
                else n.value
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
                else None
            )
            if not name:
                continue
            k = self.p.klass(name, near)
            if k is not None and self.p.decorator_extra(k) is not None:
                return k
        return None

    # environment defaults (vllm_ascend/envs.py): "NAME": lambda: int(os.getenv("NAME", "0"))
    def _env_defaults(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for mod in self.p.modules:
            if not mod.rel.endswith("envs.py"):
                continue
            for node in ast.walk(mod.tree):
                if not isinstance(node, ast.Dict):
                    continue
                for k, v in zip(node.keys, node.values, strict=True):
                    name = _const_str(k)
                    if name and isinstance(v, ast.Lambda):
                        got = _eval_env(v.body)
                        if got is not _NO:
                            out[name] = got
        return out

    # result
    def tree(self) -> dict[str, Any]:
        return self._level(ROOT)

    def _level(self, path: Path_) -> dict[str, Any]:
        out: dict[str, Any] = {}
        children = sorted(
            p for p in self.keys if len(p) == len(path) + 1 and p[: len(path)] == path
        )
        for child in children:
            info = self.keys[child]
            out[child[-1]] = self._entry(child, info)
        return out

    def _entry(self, path: Path_, info: KeyInfo) -> dict[str, Any]:
        e: dict[str, Any] = {}
        unknown: list[str] = []
        if info.section:
            e["type"] = "section"
            e["unknown_keys"] = info.policy or "ignored"
            if info.policy_why:
                e["unknown_keys_source"] = info.policy_why
            e["keys"] = self._level(path)
            if info.has_default and isinstance(info.default, dict):
                # `.get("k", {"a": 1})`: the literal gives the children's defaults
                for name, value in info.default.items():
                    child = e["keys"].get(name)
                    if child is None or "default" in child or child.get("type") == "section":
                        continue
                    child["default"] = value
                    if child.get("type") == "any" and type_of_value(value):
                        child["type"] = type_of_value(value)
                        child["unknown"] = [u for u in child.get("unknown", []) if u != "type"]
                    child["unknown"] = [u for u in child.get("unknown", []) if u != "default"]
                    if not child["unknown"]:
                        del child["unknown"]
                    child.pop("expr", None)
        else:
            if info.type is None:
                unknown.append("type")
            e["type"] = info.type or "any"
            if info.has_default and info.default is not _NO:
                e["default"] = info.default
            else:
                unknown.append("default")
                if info.expr:
                    e["expr"] = info.expr
        if info.optional and not info.section:
            e["optional"] = True
        if info.choices:
            e["choices"] = info.choices
        if info.bounds:
            e["bounds"] = dict(sorted(info.bounds.items()))
        if info.env:
            e["env"] = info.env
        if info.cast:
            e["cast"] = info.cast
        if info.stripped:
            e["stripped"] = True
        if unknown:
            e["unknown"] = unknown
        e["source"] = sorted(info.sources)[:4]
        return e


def _self_field(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _hashable(v: Value) -> Any:
    if isinstance(v, Dict_):
        return ("d", v.path, tuple(sorted(v.excluded)))
    if isinstance(v, Str_):
        return ("s", v.value)
    return ("e", ast.dump(v.node)[:200])


def _target(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _is_classvar(ann: ast.expr) -> bool:
    return any(
        isinstance(n, (ast.Name, ast.Attribute)) and _name(n) == "ClassVar" for n in ast.walk(ann)
    )


def annotation_type(ann: ast.expr) -> tuple[str | None, bool, list[Any] | None]:
    """(type, optional, choices) of an annotation: `int | None`, Optional[str], Literal[0, 1]."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None, False, None
    optional = False
    parts: list[ast.expr] = []

    def split(n: ast.expr) -> None:
        nonlocal optional
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            split(n.left)
            split(n.right)
        elif isinstance(n, ast.Constant) and n.value is None:
            optional = True
        elif isinstance(n, ast.Subscript) and _name(n.value) == "Optional":
            optional = True
            split(n.slice)
        elif isinstance(n, ast.Subscript) and _name(n.value) == "Union":
            for e in n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]:
                split(e)
        elif isinstance(n, ast.Subscript) and _name(n.value) == "Annotated":
            first = n.slice.elts[0] if isinstance(n.slice, ast.Tuple) else n.slice
            split(first)
        else:
            parts.append(n)

    split(ann)
    if len(parts) != 1:
        return None, optional, None
    n = parts[0]
    if isinstance(n, ast.Subscript) and _name(n.value) == "Literal":
        elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
        vals = [literal(e) for e in elts]
        if any(v is _NO for v in vals):
            return None, optional, None
        types = {type_of_value(v) for v in vals if v is not None}
        return (types.pop() if len(types) == 1 else None), optional or None in vals, vals
    base = n.value if isinstance(n, ast.Subscript) else n
    name = _name(base)
    if name == "Any":
        return "any", optional, None
    return TYPES.get(name or ""), optional, None


def _annotated_bounds(ann: ast.expr) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in ast.walk(ann):
        if isinstance(n, ast.Call) and _name(n.func) in ("Field", "Ge", "Gt", "Le", "Lt"):
            for kw in n.keywords:
                v = literal(kw.value)
                if kw.arg in ("ge", "gt", "le", "lt") and isinstance(v, (int, float)):
                    out[kw.arg] = v
    return out


def _env_name(node: ast.AST) -> str | None:
    """The variable of `envs.NAME`, `ascend_envs.NAME`, `os.getenv("NAME")`, `os.environ[...]`."""
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id.endswith("envs")
            and n.attr.isupper()
        ):
            return n.attr
        if isinstance(n, ast.Call) and _name(n.func) in ("getenv", "get") and n.args:
            owner = n.func.value if isinstance(n.func, ast.Attribute) else None
            if _name(n.func) == "getenv" or _name(owner) == "environ" if owner else False:
                s = _const_str(n.args[0])
                if s:
                    return s
    return None


def _eval_env(node: ast.AST) -> Any:
    """The value an envs.py lambda gives when the variable is unset, for the simple forms."""
    if isinstance(node, ast.Call):
        fname = _name(node.func)
        if fname == "getenv" or (
            fname == "get" and _name(getattr(node.func, "value", None)) == "environ"
        ):
            if len(node.args) >= 2:
                return literal(node.args[1])
            return None
        if fname in ("int", "bool", "float", "str") and len(node.args) == 1:
            inner = _eval_env(node.args[0])
            if inner is _NO or inner is None:
                return _NO
            try:
                return {"int": int, "bool": bool, "float": float, "str": str}[fname](inner)
            except (TypeError, ValueError):
                return _NO
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("lower", "upper", "strip"):
            inner = _eval_env(node.func.value)
            if isinstance(inner, str):
                return getattr(inner, node.func.attr)()
            return _NO
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _eval_env(node.left)
        right = literal(node.comparators[0])
        if left is _NO or right is _NO:
            return _NO
        op = node.ops[0]
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, ast.In):
            return left in right
        if isinstance(op, ast.NotIn):
            return left not in right
    return _NO


# --- one release --------------------------------------------------------------------------------


def extract(files: Mapping[str, bytes]) -> dict[str, Any]:
    """The schema document of a release's package files (paths relative to the project)."""
    program = Program(files)
    ex = Extractor(program)
    ex.run()
    typed_root = program.klass("AscendConfig")
    style = "get"
    if typed_root is not None and program.decorator_extra(typed_root) is not None:
        style = "typed"
    # typed style: the fields the factory strips are accepted and never validated; the
    # derived ones among them drop what the user gave
    if style == "typed":
        for path, info in list(ex.keys.items()):
            if len(path) == 1 and info.stripped and not info.section:
                info.derived = True
    refused_reads: list[str] = []
    if style == "typed" and ex.stripped:
        # read with .get() somewhere, yet neither a field nor taken out before validation: the
        # typed config refuses it before that code ever runs
        for path in [p for p in ex.keys if len(p) == 1]:
            if path not in ex.fields and path[0] not in ex.stripped:
                refused_reads.append(path[0])
                for sub in [p for p in ex.keys if p[:1] == path]:
                    del ex.keys[sub]
    keys = ex.tree()
    if style == "typed":
        for name, entry in keys.items():
            info = ex.keys[(name,)]
            if info.derived and len(info.sources) == 1:
                entry["read"] = "derived"  # computed by vLLM-Ascend; a given value is dropped
    top = ex.top_policy or "ignored"
    doc: dict[str, Any] = {
        "style": style,
        "unknown_keys": top,
    }
    if ex.top_why:
        doc["unknown_keys_source"] = ex.top_why
    if ex.omni:
        doc["unknown_keys_exception"] = "vllm_omni"
    doc["keys"] = keys
    if refused_reads:
        doc["read_but_refused"] = sorted(refused_reads)
    if program.errors:
        doc["parse_errors"] = program.errors
    return doc


def document(
    version: str, sdist_name: str, sha256: str, files: Mapping[str, bytes]
) -> dict[str, Any]:
    body = extract(files)
    return {
        "release": version,
        "extractor_version": EXTRACTOR_VERSION,
        "sdist": {"filename": sdist_name, "sha256": sha256},
        **body,
    }


def render(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n"


def schema_path(version: str) -> Path:
    return SCHEMA_DIR / f"{version}.json"


def from_release(version: str) -> dict[str, Any]:
    from scripts import releases

    sdist, path = releases.fetch_version(version)
    files = releases.read_members(path)
    return document(sdist.version, sdist.filename, releases.sha256_of(path), files)


def from_tree(root: Path) -> dict[str, Any]:
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*.py")
        if str(p.relative_to(root)).startswith(PACKAGE)
    }
    return extract(files)


def main(argv: list[str] | None = None) -> int:
    from scripts import releases

    ap = argparse.ArgumentParser(
        prog="python -m scripts.extract_schema", description=__doc__.split("\n")[0]
    )
    ap.add_argument("versions", nargs="*")
    ap.add_argument("--all", action="store_true", help="every release on the index")
    ap.add_argument("--since", default="0.9.1rc1", help="with --all: the oldest release")
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    ap.add_argument("--source", type=Path, help="a source tree: print its schema")
    args = ap.parse_args(argv)
    if args.source:
        sys.stdout.write(render(from_tree(args.source)))
        return 0
    try:
        versions = list(args.versions)
        if args.all:
            versions += [
                s.version
                for s in releases.list_sdists()
                if releases.version_key(s.version) >= releases.version_key(args.since)  # type: ignore[operator]
            ]
        if not versions:
            ap.error("give a version, --all or --source")
        stale = 0
        for v in versions:
            doc = from_release(v)
            text = render(doc)
            path = schema_path(doc["release"])
            if args.check:
                if not path.is_file() or path.read_text() != text:
                    print(
                        f"{path.relative_to(TOP)}: differs from what the extractor reads",
                        file=sys.stderr,
                    )
                    stale += 1
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(text)
            tmp.replace(path)
            print(
                f"{path.relative_to(TOP)}: {count_keys(doc['keys'])} keys, sha256 {doc['sdist']['sha256'][:12]}"
            )
        return 1 if stale else 0
    except releases.ReleaseError as e:
        print(f"extract_schema: {e}", file=sys.stderr)
        return 1


def count_keys(keys: Mapping[str, Any]) -> int:
    n = 0
    for entry in keys.values():
        n += 1
        if entry.get("type") == "section":
            n += count_keys(entry.get("keys", {}))
    return n


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
