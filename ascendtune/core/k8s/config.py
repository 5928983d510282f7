"""The kubelet's configuration (KubeletConfiguration): the CPU, memory and Topology Manager
policies and the reserved CPUs, from its YAML file, a JSON file or a `configz` dump.

YAML without a YAML library: a KubeletConfiguration is a flat mapping whose few nested values
are mappings of strings, and only a handful of its keys matter here, so a small reader of that
subset (block mappings by indentation, plain and quoted scalars, flow `{}` and `[]`, comments)
covers it and refuses what it does not understand rather than guessing. JSON (YAML's flow form,
and `/configz`'s `{"kubeletconfig": {...}}`) goes through the json module.
"""

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.k8s.paths import CONFIG_FILE

# YAML 1.1 booleans, which the kubelet's decoder (sigs.k8s.io/yaml) reads as booleans: in
# cpuManagerPolicyOptions (a map of strings) the kubelet then refuses to start
_BOOLEANS = {"true", "false", "yes", "no", "on", "off", "y", "n"}


class Plain(str):
    """An unquoted YAML scalar (the kubelet may read it as a boolean or a number)."""


class KubeletConfig(NamedTuple):
    cpu_manager_policy: str  # "none" (the default) or "static"
    cpu_manager_options: Mapping[str, str]
    memory_manager_policy: str  # "None" (the default) or "Static"
    topology_manager_policy: str  # "none" (the default), best-effort, restricted, single-numa-node
    topology_manager_scope: str  # "container" (the default) or "pod"
    topology_manager_options: Mapping[str, str]
    reserved_cpus: CpuSet | None  # reservedSystemCPUs
    source: str
    notes: tuple[str, ...] = ()
    reserved_flag: bool = False  # reserved_cpus came from the kubelet's --reserved-cpus flag


DEFAULT = KubeletConfig(
    "none",
    MappingProxyType({}),
    "None",
    "none",
    "container",
    MappingProxyType({}),
    None,
    "defaults",
)


def parse_kubelet_config(text: str, source: str = CONFIG_FILE) -> KubeletConfig:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ParseError(f"not JSON: {e.msg}", source=source, line=e.lineno) from None
        except RecursionError:
            raise ParseError(
                "nested too deeply to be a kubelet configuration", source=source
            ) from None
        except ValueError as e:  # a number of thousands of digits (int's bound on a conversion)
            raise ParseError(f"not a kubelet configuration: {e}"[:120], source=source) from None
    else:
        doc = parse_yaml_subset(text, source)
    if not isinstance(doc, dict):
        raise ParseError("expected a mapping of settings", source=source)
    if isinstance(doc.get("kubeletconfig"), dict):  # a /configz dump
        doc = doc["kubeletconfig"]
    return of_mapping(doc, source)


def of_mapping(doc: Mapping[str, Any], source: str) -> KubeletConfig:
    notes: list[str] = []
    kind = doc.get("kind")
    if kind is not None and kind != "KubeletConfiguration":
        notes.append(f"kind {kind}, not KubeletConfiguration")

    def text(key: str, default: str) -> str:
        value = doc.get(key)
        return default if value is None or value == "" else str(value)

    options = _string_map(doc.get("cpuManagerPolicyOptions"), "cpuManagerPolicyOptions", notes)
    reserved: CpuSet | None = None
    raw = doc.get("reservedSystemCPUs")
    if raw not in (None, ""):
        try:
            reserved = parse_cpulist(str(raw), source=f"{source} reservedSystemCPUs")
        except ParseError as e:
            notes.append(e.message)
    return KubeletConfig(
        text("cpuManagerPolicy", "none"),
        MappingProxyType(options),
        text("memoryManagerPolicy", "None"),
        text("topologyManagerPolicy", "none"),
        text("topologyManagerScope", "container"),
        MappingProxyType(
            _string_map(
                doc.get("topologyManagerPolicyOptions"), "topologyManagerPolicyOptions", notes
            )
        ),
        reserved,
        source,
        tuple(notes),
    )


def _string_map(value: Any, key: str, notes: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        notes.append(f"{key} is not a mapping: ignored")
        return {}
    out = {}
    for k, v in value.items():
        if isinstance(v, bool) or (isinstance(v, Plain) and v.lower() in _BOOLEANS):
            notes.append(
                f"{key}.{k}: {str(v).lower()} unquoted is a YAML boolean, which the kubelet "
                f'refuses (it takes strings): write {k}: "true"'
            )
        out[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def with_flags(cfg: KubeletConfig, args: list[str]) -> KubeletConfig:
    """The configuration as a kubelet run with args has it: its --reserved-cpus flag wins over
    reservedSystemCPUs (a kubelet flag overrides its configuration file)."""
    raw: str | None = None
    for i, arg in enumerate(args):
        if arg.startswith("--reserved-cpus="):
            raw = arg.split("=", 1)[1]
        elif arg == "--reserved-cpus" and i + 1 < len(args):
            raw = args[i + 1]
    if raw is None:
        return cfg
    notes = list(cfg.notes)
    try:
        reserved = parse_cpulist(raw, source="the kubelet's --reserved-cpus") if raw else None
    except ParseError as e:
        return cfg._replace(notes=(*notes, e.message))
    if cfg.reserved_cpus is not None and cfg.reserved_cpus != reserved:
        notes.append(
            f"the kubelet's --reserved-cpus={raw} overrides reservedSystemCPUs of {cfg.source}"
        )
    return cfg._replace(reserved_cpus=reserved, notes=tuple(notes), reserved_flag=True)


# ---- the YAML subset ------------------------------------------------------------------------

_KEY = re.compile(r"^(?P<key>[^\s#:'\"{}\[\],][^:#]*?|\"[^\"]*\"|'[^']*')\s*:(?:\s+(?P<rest>.*))?$")
MAX_DEPTH = 16


def parse_yaml_subset(text: str, source: str) -> dict[str, Any]:
    """Block mappings by indentation, `- item` lists of scalars, scalars, flow `{}`/`[]` of
    scalars, comments and one document. Anchors, tags, multi-line scalars: refused."""
    lines: list[tuple[int, int, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).rstrip()
        if not line.strip() or line.strip() in ("---", "..."):
            if line.strip() == "---" and lines:
                raise ParseError("more than one YAML document", source=source, line=number)
            continue
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise ParseError("a tab in the indentation", source=source, line=number)
        lines.append((number, len(line) - len(line.lstrip()), line.strip()))
    if not lines:
        return {}
    value, end = _block(lines, 0, lines[0][1], source, 0)
    if end != len(lines):
        raise ParseError("unexpected indentation", source=source, line=lines[end][0])
    if not isinstance(value, dict):
        raise ParseError("expected a mapping at the top", source=source)
    return value


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _block(
    lines: list[tuple[int, int, str]], i: int, indent: int, source: str, depth: int
) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise ParseError("nested too deeply", source=source, line=lines[i][0])
    if lines[i][2].startswith("- ") or lines[i][2] == "-":
        items: list[Any] = []
        while i < len(lines) and lines[i][1] == indent and lines[i][2].startswith("-"):
            items.append(_scalar(lines[i][2][1:].strip(), source, lines[i][0]))
            i += 1
        return items, i
    out: dict[str, Any] = {}
    while i < len(lines):
        number, ind, body = lines[i]
        if ind < indent:
            break
        if ind > indent:
            raise ParseError("unexpected indentation", source=source, line=number)
        m = _KEY.match(body)
        if not m:
            raise ParseError(f"not a `key: value` line: {body[:60]}", source=source, line=number)
        key = m.group("key").strip().strip("\"'")
        rest = m.group("rest")
        i += 1
        if rest:
            out[key] = _scalar(rest, source, number)
        elif i < len(lines) and (
            lines[i][1] > ind or (lines[i][1] == ind and lines[i][2].startswith("-"))
        ):
            out[key], i = _block(lines, i, lines[i][1], source, depth + 1)
        else:
            out[key] = None
    return out, i


def _scalar(text: str, source: str, line: int) -> Any:
    text = text.strip()
    if not text:
        return None
    if text[0] in "&*!|>":
        raise ParseError(f"YAML feature not read here: {text[:30]}", source=source, line=line)
    if text[0] in "{[":
        try:
            return json.loads(_flow_to_json(text))
        except (ValueError, RecursionError):
            raise ParseError(
                f"cannot read flow value {text[:40]}", source=source, line=line
            ) from None
    if text[0] == '"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ParseError(
                f"bad double-quoted string {text[:40]}", source=source, line=line
            ) from None
        return str(value)
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise ParseError(f"bad single-quoted string {text[:40]}", source=source, line=line)
        return text[1:-1].replace("''", "'")
    if text in ("~", "null", "Null", "NULL"):
        return None
    return Plain(text)


def _flow_to_json(text: str) -> str:
    """`{a: "1", b: 'c', d: e}` / `[x, y]` of scalars as JSON (plain scalars become strings)."""

    def word(m: re.Match[str]) -> str:
        w = m.group(0).strip()
        if w.startswith('"'):
            return w
        if w.startswith("'"):
            return json.dumps(w[1:-1].replace("''", "'"))
        return json.dumps(w)

    return re.sub(_FLOW_WORD, word, text)


_FLOW_WORD = re.compile(r""""[^"]*"|'(?:[^']|'')*'|[^\s{}\[\],:"'][^{}\[\],:]*""")
