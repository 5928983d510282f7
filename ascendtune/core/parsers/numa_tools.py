"""Parsers for the NUMA views of `numactl -H`, `lscpu` and `lscpu -e=CPU,NODE`.

sysfs is the tool's own source of NUMA facts; these parsers read what users paste and what
vLLM-Ascend itself reads (`lscpu -e=CPU,NODE`), so the two can be compared and explained.
Bad input raises ParseError naming the command and the 1-based line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ascendtune.core.cpulist import MAX_CPU, CpuSet, parse_cpulist, parse_int_list
from ascendtune.core.errors import ParseError
from ascendtune.core.model import NumaNode

SRC_NUMACTL = "numactl -H"
SRC_LSCPU = "lscpu"
SRC_LSCPU_E = "lscpu -e"

# [0-9] rather than \d: int() reads any Unicode digit, and a garbled "٣" must be refused.
_ID = r"[0-9]{1,6}"
_AVAILABLE = re.compile(rf"available:\s*({_ID})\s+nodes?\s*\(([^()]*)\)")
_NODE_FIELD = re.compile(rf"node\s+({_ID})\s+(cpus|size|free):(.*)")
_MB = re.compile(r"([0-9]{1,15})\s*MB")
_DIST_HEAD = re.compile(rf"node((?:\s+{_ID})+)")
_DIST_ROW = re.compile(rf"({_ID}):((?:\s+{_ID})+)")
_UINT = re.compile(_ID)
_NO_NUMA = "No NUMA available on this system"

_LSCPU_NODE = re.compile(rf"NUMA node({_ID}) CPU\(s\):(.*)")
_LSCPU_COUNT = re.compile(rf"NUMA node\(s\):\s*({_ID})")
_LSCPU_E_COLUMN = re.compile(r"[A-Z][A-Za-z0-9:]*")


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, stripped line); split on "\\n" so numbers match what an editor shows."""
    for no, raw in enumerate(text.split("\n"), start=1):
        yield no, raw.strip()


def _cpu_ids(words: list[str], source: str, no: int) -> CpuSet:
    cpus: set[int] = set()
    for w in words:
        if not _UINT.fullmatch(w) or int(w) >= MAX_CPU:
            raise ParseError(f"{w!r} is not a CPU number", source=source, line=no)
        cpus.add(int(w))
    return frozenset(cpus)


def _check_disjoint(nodes: dict[int, CpuSet], source: str, lines: dict[int, int]) -> None:
    """A CPU belongs to one node; two nodes claiming it means the text was garbled."""
    owner: dict[int, int] = {}
    for node in sorted(nodes):
        for cpu in sorted(nodes[node]):
            if cpu in owner:
                raise ParseError(
                    f"CPU {cpu} is listed under node {owner[cpu]} and node {node}",
                    source=source,
                    line=lines.get(node),
                )
            owner[cpu] = node


# ---------------------------------------------------------------- numactl -H


@dataclass
class _NumactlNode:
    line: int  # first line that names the node
    cpus: CpuSet | None = None
    size_mib: int | None = None
    free_mib: int | None = None


@dataclass
class _Numactl:
    nodes: dict[int, _NumactlNode] = field(default_factory=dict)
    available: tuple[int, ...] | None = None
    available_line: int | None = None
    distances: dict[int, dict[int, int]] = field(default_factory=dict)


def _numactl_mib(value: str, what: str, no: int) -> int:
    m = _MB.fullmatch(value.strip())
    if not m:
        raise ParseError(
            f"node {what} {value.strip()!r} is not 'N MB'", source=SRC_NUMACTL, line=no
        )
    return int(m.group(1))


def _parse_numactl(text: str) -> _Numactl:
    out = _Numactl()
    started = False
    dist_cols: tuple[int, ...] | None = None
    dist_done = False
    for no, s in _numbered_lines(text):
        if not s:
            continue
        if s.startswith(_NO_NUMA):
            raise ParseError(
                "numactl reports no NUMA support",
                source=SRC_NUMACTL,
                line=no,
                hint="the kernel exposes no NUMA nodes; treat the host as one node",
            )
        if dist_cols and not dist_done:
            m = _DIST_ROW.fullmatch(s)
            if not m:
                raise ParseError(
                    f"expected a distance row, found {s!r}", source=SRC_NUMACTL, line=no
                )
            node = int(m.group(1))
            values = [int(v) for v in m.group(2).split()]
            if node not in dist_cols or node in out.distances or len(values) != len(dist_cols):
                raise ParseError(
                    f"distance row {node} does not fit the header nodes {list(dist_cols)}",
                    source=SRC_NUMACTL,
                    line=no,
                )
            out.distances[node] = dict(zip(dist_cols, values, strict=True))
            dist_done = len(out.distances) == len(dist_cols)
            continue
        if dist_done:
            break  # whatever follows the matrix (a pasted prompt) is not numactl's
        if m := _AVAILABLE.fullmatch(s):
            if out.available is not None:
                raise ParseError("a second 'available:' line", source=SRC_NUMACTL, line=no)
            try:
                ids = parse_int_list(m.group(2), source="")
            except ParseError as e:
                raise ParseError(e.message, source=SRC_NUMACTL, line=no) from None
            if len(ids) != int(m.group(1)):
                raise ParseError(
                    f"'available: {m.group(1)} nodes' lists {len(ids)} node ids",
                    source=SRC_NUMACTL,
                    line=no,
                )
            out.available, out.available_line, started = ids, no, True
        elif m := _NODE_FIELD.fullmatch(s):
            node_id, what, value = int(m.group(1)), m.group(2), m.group(3)
            entry = out.nodes.setdefault(node_id, _NumactlNode(no))
            if what == "cpus":
                if entry.cpus is not None:
                    raise ParseError(
                        f"node {node_id} cpus listed twice", source=SRC_NUMACTL, line=no
                    )
                entry.cpus = _cpu_ids(value.split(), SRC_NUMACTL, no)
            elif what == "size":
                if entry.size_mib is not None:
                    raise ParseError(
                        f"node {node_id} size listed twice", source=SRC_NUMACTL, line=no
                    )
                entry.size_mib = _numactl_mib(value, "size", no)
            else:
                if entry.free_mib is not None:
                    raise ParseError(
                        f"node {node_id} free listed twice", source=SRC_NUMACTL, line=no
                    )
                entry.free_mib = _numactl_mib(value, "free", no)
            started = True
        elif s == "node distances:":
            if out.distances or dist_cols is not None:
                raise ParseError("a second distance block", source=SRC_NUMACTL, line=no)
            dist_cols = ()  # the header comes next
            started = True
        elif dist_cols == ():
            if not (m := _DIST_HEAD.fullmatch(s)):
                raise ParseError(
                    f"expected the distance header 'node 0 1 ...', found {s!r}",
                    source=SRC_NUMACTL,
                    line=no,
                )
            dist_cols = tuple(int(v) for v in m.group(1).split())
            if len(set(dist_cols)) != len(dist_cols):
                raise ParseError(
                    "a node appears twice in the distance header", source=SRC_NUMACTL, line=no
                )
        elif started:
            raise ParseError(f"unexpected line {s!r}", source=SRC_NUMACTL, line=no)
        # else: a shell prompt or banner before the output; ignored
    if dist_cols == ():
        raise ParseError("'node distances:' has no header line", source=SRC_NUMACTL)
    if dist_cols is not None and not dist_done:
        raise ParseError(
            f"the distance matrix has {len(out.distances)} of {len(dist_cols)} rows",
            source=SRC_NUMACTL,
            hint="the output looks cut short",
        )
    return out


def _numactl_checked(text: str) -> _Numactl:
    out = _parse_numactl(text)
    if not out.nodes:
        raise ParseError(
            "no 'node N cpus:' lines",
            source=SRC_NUMACTL,
            hint="expected the output of `numactl -H`",
        )
    for node_id, node in sorted(out.nodes.items()):
        if node.cpus is None:
            raise ParseError(
                f"node {node_id} has no 'cpus:' line", source=SRC_NUMACTL, line=node.line
            )
    if out.available is not None and set(out.available) != set(out.nodes):
        raise ParseError(
            f"'available:' names nodes {list(out.available)}, the output describes "
            f"{sorted(out.nodes)}",
            source=SRC_NUMACTL,
            line=out.available_line,
            hint="the output looks cut short",
        )
    if out.distances and set(out.distances) != set(out.nodes):
        raise ParseError(
            f"the distance matrix covers nodes {sorted(out.distances)}, not {sorted(out.nodes)}",
            source=SRC_NUMACTL,
        )
    _check_disjoint(
        {i: n.cpus or frozenset() for i, n in out.nodes.items()},
        SRC_NUMACTL,
        {i: n.line for i, n in out.nodes.items()},
    )
    return out


def parse_numactl_hardware(text: str) -> tuple[NumaNode, ...]:
    """Parse `numactl -H` (`--hardware`) into nodes, ascending id.

    A node may have no CPUs (memory-only, e.g. POWER or GH200 GPU memory) or `size: 0 MB`
    (CPUs without local memory: `numactl -m N` fails there); both are kept as printed.
    """
    out = _numactl_checked(text)
    return tuple(
        NumaNode(id=i, cpus=n.cpus or frozenset(), mem_mib=n.size_mib)
        for i, n in sorted(out.nodes.items())
    )


def parse_numactl_distances(text: str) -> dict[int, dict[int, int]]:
    """The `node distances:` matrix of `numactl -H`: {from: {to: distance}}; {} when absent."""
    return _numactl_checked(text).distances


# ---------------------------------------------------------------- lscpu


def parse_lscpu_numa(text: str) -> tuple[NumaNode, ...]:
    """Parse the NUMA lines of `lscpu`, legacy flat or sectioned (`NUMA:` heading), into nodes.

    lscpu gives no memory sizes, so `mem_mib` is None. A node line with nothing after the
    colon is a node without CPUs (GH200 exposes GPU memory that way).
    """
    nodes: dict[int, CpuSet] = {}
    lines: dict[int, int] = {}
    count: int | None = None
    count_line: int | None = None
    for no, s in _numbered_lines(text):
        if m := _LSCPU_NODE.fullmatch(s):
            node = int(m.group(1))
            if node in nodes:
                raise ParseError(f"NUMA node{node} listed twice", source=SRC_LSCPU, line=no)
            try:
                nodes[node] = parse_cpulist(m.group(2), source="")
            except ParseError as e:
                raise ParseError(
                    f"NUMA node{node}: {e.message}", source=SRC_LSCPU, line=no
                ) from None
            lines[node] = no
        elif m := _LSCPU_COUNT.fullmatch(s):
            if count is not None:
                raise ParseError("'NUMA node(s):' appears twice", source=SRC_LSCPU, line=no)
            count, count_line = int(m.group(1)), no
    if not nodes:
        raise ParseError(
            "no 'NUMA nodeN CPU(s):' lines",
            source=SRC_LSCPU,
            hint="lscpu prints them only where the kernel exposes NUMA nodes; run it with LC_ALL=C",
        )
    if count is not None and count != len(nodes):
        raise ParseError(
            f"'NUMA node(s): {count}' but {len(nodes)} node lines follow",
            source=SRC_LSCPU,
            line=count_line,
            hint="the output looks cut short",
        )
    _check_disjoint(nodes, SRC_LSCPU, lines)
    return tuple(NumaNode(id=i, cpus=nodes[i], mem_mib=None) for i in sorted(nodes))


def parse_lscpu_e(text: str) -> dict[int, int | None]:
    """Parse `lscpu -e=CPU,NODE` (or any `lscpu -e` with CPU and NODE columns): CPU -> node.

    An offline CPU (common on ARM servers) prints `-` as its node: that maps to None here.
    vLLM-Ascend reads this very command with `int(node)` and its binding fails on the `-`;
    callers can name the CPUs with `[c for c, n in parsed.items() if n is None]`.
    """
    header: list[str] | None = None
    cpu_col = node_col = 0
    out: dict[int, int | None] = {}
    for no, s in _numbered_lines(text):
        if not s:
            continue
        words = s.split()
        if header is None:
            if "CPU" in words and all(_LSCPU_E_COLUMN.fullmatch(w) for w in words):
                header = words
                if "NODE" not in header:
                    raise ParseError(
                        "no NODE column",
                        source=SRC_LSCPU_E,
                        line=no,
                        hint="run `lscpu -e=CPU,NODE`",
                    )
                cpu_col, node_col = header.index("CPU"), header.index("NODE")
            continue  # lines before the header: a prompt
        # More words than columns is fine (a MODELNAME value holds spaces); fewer is a cut row.
        if len(words) < len(header):
            raise ParseError(
                f"{len(words)} values for the {len(header)} columns {header}",
                source=SRC_LSCPU_E,
                line=no,
            )
        cpu_text, node_text = words[cpu_col], words[node_col]
        if not _UINT.fullmatch(cpu_text) or int(cpu_text) >= MAX_CPU:
            raise ParseError(f"CPU {cpu_text!r} is not a CPU number", source=SRC_LSCPU_E, line=no)
        cpu = int(cpu_text)
        if cpu in out:
            raise ParseError(f"CPU {cpu} listed twice", source=SRC_LSCPU_E, line=no)
        if node_text == "-":
            out[cpu] = None  # offline CPU: the kernel knows no node for it
        elif _UINT.fullmatch(node_text):
            out[cpu] = int(node_text)
        else:
            raise ParseError(
                f"NODE {node_text!r} is not a node number or '-'", source=SRC_LSCPU_E, line=no
            )
    if header is None:
        raise ParseError("no header line with a CPU column", source=SRC_LSCPU_E)
    if not out:
        raise ParseError("no CPU rows under the header", source=SRC_LSCPU_E)
    return out
