"""Parser for `nvidia-smi topo -m`: GPU-to-GPU links, CPU and NUMA affinity, NICs.

Pure text in, frozen model out; anything that does not have the shape nvidia-smi prints raises
ParseError naming the command and the 1-based line.

Decisions worth knowing:
- Two forms are read: the real output (tab-separated, with padding tabs) and the copy-pasted
  form where the tabs became spaces. Each line is split on tabs when it holds a tab, else on
  whitespace; the header is tokenised on its known multi-word names, so it works either way.
- Only GPUs with a row are devices. An output cut short (the header names 8 GPUs, 6 rows
  follow) still parses: the matrix holds the 6, links only between them, and
  `TopoMDetails.missing_rows` tells the caller what was lost.
- The table ends at the first blank or non-row line; a GPU/NIC row that shows up after that is
  an error (a line was garbled in the middle of the table), not silently dropped.
- Terminal escape sequences are stripped first (current drivers underline the header with
  ESC[4m ... ESC[0m).
- Cells that ran together (hosts with 16 NICs print `PXBNODE`, `SYSSYS`; the last link cell can
  run into CPU Affinity, `PHB0-115`) are split on the link codes of the Legend (and the built-in
  ones) when exactly one split exists; otherwise the row is refused, named.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import TopoMatrix
from ascendtune.core.text import strip_ansi

SOURCE = "nvidia-smi topo -m"

CPU_AFFINITY = "CPU Affinity"
NUMA_AFFINITY = "NUMA Affinity"
GPU_NUMA_ID = "GPU NUMA ID"  # the NUMA node of the GPU's own memory (GH200/GB200 C2C hosts)
_TRAILING_NAMES = (CPU_AFFINITY, NUMA_AFFINITY, GPU_NUMA_ID)

# [0-9] rather than \d: int() reads any Unicode digit, and a garbled "٣" must be refused.
_HEADER_TOKEN = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+")
_GPU = re.compile(r"GPU([0-9]{1,5})")
_NODE = re.compile(r"[0-9]{1,6}")
_NODE_LIST = re.compile(r"[0-9]{1,6}(?:[-,][0-9]{1,6})+")
# Link types seen so far: X, SYS, NODE, PHB, PXB, PIX, NV#, SOC (old drivers), C2C; accept any
# such word so a new one does not break the parse.
_LINK = re.compile(r"[A-Za-z][A-Za-z0-9#/_+-]{0,15}")
_LEGEND_ENTRY = re.compile(r"(\S+):\s*(\S+)")
_LEGEND_CODE = re.compile(r"\s*([A-Z][A-Z0-9#]{0,7})\s+=\s")
_BUILTIN_CODES = frozenset({"X", "SYS", "NODE", "PHB", "PXB", "PIX", "SOC", "C2C", "NV#"})
_NVLINK = re.compile(r"NV[0-9]{1,3}")
_CPULIST_TAIL = re.compile(r"[0-9][0-9,-]*")
_NOT_AVAILABLE = frozenset({"", "N/A"})

# Messages nvidia-smi prints instead of a table, and what to do about each.
_FAILURES = (
    ("couldn't communicate with the NVIDIA driver", "is the NVIDIA driver loaded? (nvidia-smi)"),
    ("Failed to initialize NVML", "the driver and library versions may differ; reboot or reload"),
    ("No devices were found", "no NVIDIA GPU is visible on this host or in this container"),
)


@dataclass(frozen=True)
class TopoMDetails:
    """Everything `nvidia-smi topo -m` says, beyond the TopoMatrix the planner needs."""

    matrix: TopoMatrix
    # GPU NUMA ID column: the node holding the GPU's memory (None: N/A or no such column)
    gpu_numa_id: Mapping[int, int | None]
    # GPU index -> NIC name (as in `matrix.nics`) -> link type
    nic_links: Mapping[int, Mapping[str, str]]
    # GPU indices named by the header; more than `matrix.devices` when the output was cut
    header_gpus: tuple[int, ...]

    @property
    def missing_rows(self) -> tuple[int, ...]:
        """GPUs the header names but no row describes (truncated output)."""
        return tuple(g for g in self.header_gpus if g not in self.matrix.devices)


@dataclass(frozen=True)
class _Header:
    line: int
    columns: tuple[str, ...]  # link columns in order: GPUn, then NICs (NIC0 or mlx5_0 names)
    trailing: tuple[str, ...]  # CPU Affinity, NUMA Affinity, GPU NUMA ID (those present)
    codes: frozenset[str] = _BUILTIN_CODES  # link codes: the built-in ones and the Legend's


@dataclass(frozen=True)
class _Row:
    line: int
    label: str
    links: tuple[str, ...]
    trailing: Mapping[str, str]


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) with CRLF tolerated; split on "\\n" so numbers match an editor."""
    for no, raw in enumerate(text.split("\n"), start=1):
        yield no, raw.rstrip("\r")


def _fail(message: str, line: int | None = None, hint: str | None = None) -> ParseError:
    return ParseError(message, source=SOURCE, line=line, hint=hint)


def _failure_hint(text: str) -> str | None:
    for needle, hint in _FAILURES:
        if needle.lower() in text.lower():
            return f"nvidia-smi said {needle!r}: {hint}"
    return None


def _find_header(lines: list[tuple[int, str]], text: str) -> int:
    """Index in `lines` of the header: the first line whose first word is GPUn.

    Lines before it (a shell prompt, a banner) are ignored.
    """
    for i, (no, line) in enumerate(lines):
        words = line.split()
        if words and _GPU.fullmatch(words[0]):
            if len(words) > 1 and words[1] == "X":
                raise _fail(
                    f"row {words[0]} comes before any header line",
                    no,
                    hint="the header naming GPU0, GPU1, ... and CPU Affinity is missing",
                )
            return i
    raise _fail(
        "no header line naming GPU columns",
        hint=_failure_hint(text) or "expected the output of `nvidia-smi topo -m`",
    )


def _parse_header(no: int, line: str) -> _Header:
    columns: list[str] = []
    trailing: list[str] = []
    for token in _HEADER_TOKEN.findall(line):
        if token == "X":
            raise _fail("the header line holds an 'X' cell, like a row", no)
        if token in _TRAILING_NAMES or trailing:
            # Anything after the first affinity column is a value column, known or not.
            bucket = trailing
        else:
            bucket = columns
        if token in columns or token in trailing:
            raise _fail(f"column {token!r} appears twice in the header", no)
        bucket.append(token)
    gpus = [int(m.group(1)) for c in columns if (m := _GPU.fullmatch(c))]
    if not gpus:
        raise _fail("the header names no GPU column", no)
    if len(set(gpus)) != len(gpus):
        raise _fail("the header names one GPU index twice", no)
    return _Header(no, tuple(columns), tuple(trailing))


def _tab_trailing(cells: list[str], names: tuple[str, ...], no: int) -> list[str]:
    """Assign the cells after the links of a tab-separated row to the value columns.

    nvidia-smi pads short values with extra tabs ("0-7\\t\\tN/A"), so an empty cell is
    usually padding. The first one is not: it is the CPU Affinity cell itself, empty when the
    caller's cpuset (a Slurm job, a container) excludes the GPU's CPUs.
    """
    if not names:
        if any(cells):
            raise _fail(f"values {[c for c in cells if c]} after the last column", no)
        return []
    first = cells[0] if cells else ""
    rest = [c for c in cells[1:] if c]
    if len(rest) > len(names) - 1:
        raise _fail(f"more values than the {len(names)} value columns of the header", no)
    return [first, *rest, *[""] * (len(names) - 1 - len(rest))]


def _space_trailing(tokens: list[str], names: tuple[str, ...], no: int) -> list[str]:
    """Assign the words after the links of a space-separated row to the value columns.

    Without tabs an empty cell leaves no trace. nvidia-smi always prints NUMA Affinity and
    GPU NUMA ID (a number or N/A); only CPU Affinity can be blank. So values align right.
    """
    if len(tokens) > len(names):
        raise _fail(f"more values than the {len(names)} value columns of the header", no)
    return [*[""] * (len(names) - len(tokens)), *tokens]


@functools.lru_cache(maxsize=1024)
def _known(cell: str, codes: frozenset[str]) -> bool:
    # cached: a 1,000-GPU matrix asks this of a million cells that are a handful of words
    return cell in codes or ("NV#" in codes and _NVLINK.fullmatch(cell) is not None)


def _splits(cell: str, codes: frozenset[str], tail: bool) -> list[list[str]]:
    """Every way to read cell as link codes run together (and, when tail, a cpulist after)."""
    memo: dict[int, list[list[str]]] = {}

    def at(i: int) -> list[list[str]]:
        if i == len(cell):
            return [[]]
        if i in memo:
            return memo[i]
        out: list[list[str]] = []
        if tail and i > 0 and _CPULIST_TAIL.fullmatch(cell, i):
            try:
                parse_cpulist(cell[i:], source="")
                out.append([cell[i:]])
            except ParseError:
                pass
        for j in range(i + 1, min(len(cell), i + 8) + 1):
            head = cell[i:j]
            if _known(head, codes):
                out += [[head, *rest] for rest in at(j)]
        memo[i] = out[:3]  # two are enough to call it ambiguous
        return memo[i]

    return at(0)


def _unglue(label: str, cells: list[str], n: int, codes: frozenset[str], no: int) -> list[str]:
    """The cells after the label with link cells that ran together split apart."""
    if all(_known(c, codes) for c in cells[:n]) and len(cells) >= n:
        return cells
    out: list[str] = []
    for i, cell in enumerate(cells):
        if len(out) >= n:
            return out + cells[i:]
        if _known(cell, codes) or not cell:
            out.append(cell)  # an empty cell is refused below, as before
            continue
        ways = _splits(cell, codes, tail=True)
        # a cpulist tail is only possible on the last link cell
        ways = [w for w in ways if len(out) + len([p for p in w if _known(p, codes)]) <= n]
        ways = [w for w in ways if _known(w[-1], codes) or len(out) + len(w) - 1 == n]
        if len(ways) == 1 and len(ways[0]) > 1:
            out += ways[0]
        elif len(ways) > 1:
            raise _fail(
                f"row {label}: cell {cell!r} splits into link types more than one way "
                f"({' + '.join(ways[0])} or {' + '.join(ways[1])})",
                no,
                hint="cells ran together; print it with `nvidia-smi topo -m` on a wider terminal",
            )
        elif re.search(r"[0-9][-,][0-9]", cell):
            raise _fail(
                f"row {label}: cell {cell!r} is neither a link type nor link types run together",
                no,
                hint="a link cell ran into CPU Affinity",
            )
        else:
            out.append(cell)  # a link word this parser does not know yet
    return out


def _parse_row(no: int, line: str, header: _Header) -> _Row:
    body = line.lstrip(" \t")
    n = len(header.columns)
    tabs = "\t" in body
    cells = [c.strip() for c in body.split("\t")] if tabs else body.split()
    if cells[0] in header.columns:
        cells = [cells[0], *_unglue(cells[0], cells[1:], n, header.codes, no)]
    label, links, rest = cells[0], cells[1 : 1 + n], cells[1 + n :]
    if label not in header.columns:
        raise _fail(f"row label {label!r} is not a column of the header", no)
    if len(links) < n:
        raise _fail(f"row {label} has {len(links)} link cells, the header names {n}", no)
    for column, cell in zip(header.columns, links, strict=True):
        if column == label:
            if cell != "X":
                raise _fail(f"row {label} has {cell!r} where it meets itself, not 'X'", no)
        elif cell == "X" or not _LINK.fullmatch(cell):
            raise _fail(f"row {label}, column {column}: {cell!r} is not a link type", no)
    values = (_tab_trailing if tabs else _space_trailing)(rest, header.trailing, no)
    return _Row(no, label, tuple(links), dict(zip(header.trailing, values, strict=True)))


def _cpus(cell: str, gpu: int, no: int) -> CpuSet | None:
    if cell in _NOT_AVAILABLE:
        return None  # nothing printed: the affinity lies outside the caller's cpuset
    try:
        return parse_cpulist(cell, source="")
    except ParseError as e:
        raise _fail(f"CPU Affinity of GPU{gpu}: {e.message}", no) from None


def _node(cell: str, column: str, gpu: int, no: int) -> int | None:
    if cell in _NOT_AVAILABLE:
        return None
    if _NODE.fullmatch(cell):
        return int(cell)
    if _NODE_LIST.fullmatch(cell):
        return None  # spans several nodes: no single node to name
    raise _fail(f"{column} of GPU{gpu}: {cell!r} is not a node number or N/A", no)


def _nic_legend(lines: list[tuple[int, str]]) -> dict[str, str]:
    """NIC0 -> mlx5_0 from the `NIC Legend:` block, when there is one."""
    legend: dict[str, str] = {}
    inside = False
    for _, line in lines:
        s = line.strip()
        if s == "NIC Legend:":
            inside = True
        elif inside and s:
            m = _LEGEND_ENTRY.fullmatch(s)
            if not m:
                break
            legend[m.group(1)] = m.group(2)
    return legend


def _legend_codes(lines: list[tuple[int, str]]) -> frozenset[str]:
    """The link codes the `Legend:` block names (X, SYS, NODE, ..., NV#), with the built-in ones."""
    codes = set(_BUILTIN_CODES)
    inside = False
    for _, line in lines:
        if line.strip() == "Legend:":
            inside = True
        elif inside and line.strip():
            m = _LEGEND_CODE.match(line)
            if not m:
                break
            codes.add(m.group(1))
    return frozenset(codes)


def parse_topo_m_details(text: str) -> TopoMDetails:
    """Parse `nvidia-smi topo -m` with everything it says (GPU NUMA ID, GPU-NIC links)."""
    text = strip_ansi(text)
    lines = list(_numbered_lines(text))
    start = _find_header(lines, text)
    header = _parse_header(*lines[start])
    header = _Header(header.line, header.columns, header.trailing, _legend_codes(lines[start:]))
    labels = set(header.columns)

    rows: dict[str, _Row] = {}
    end = len(lines)
    for i in range(start + 1, len(lines)):
        no, line = lines[i]
        words = line.split()
        if not words:
            if rows:
                end = i
                break
            continue
        if words[0] not in labels:
            end = i  # the Legend, or an excerpt marker: the table is over
            break
        row = _parse_row(no, line, header)
        if row.label in rows:
            raise _fail(f"a second row for {row.label} (first on line {rows[row.label].line})", no)
        rows[row.label] = row
    for no, line in lines[end:]:
        words = line.split()
        if len(words) > 1 and words[0] in labels:
            stop_no, stop = lines[end]
            raise _fail(
                f"row {words[0]} comes after the table ended at line {stop_no} ({stop.strip()!r})",
                no,
            )

    gpu_of = {c: int(m.group(1)) for c in header.columns if (m := _GPU.fullmatch(c))}
    devices = tuple(sorted(gpu_of[label] for label in rows if label in gpu_of))
    if not devices:
        raise _fail("no GPU row under the header", header.line)
    legend = _nic_legend(lines[end:])
    nic_columns = [c for c in header.columns if c not in gpu_of]
    nic_name = {c: legend.get(c, c) for c in nic_columns}

    has_row = frozenset(devices)  # a set: a tuple made 1,000 GPUs cost 10^9 comparisons
    links: dict[int, dict[int, str]] = {}
    nic_links: dict[int, dict[str, str]] = {}
    affinity: dict[int, CpuSet | None] = {}
    numa: dict[int, int | None] = {}
    gpu_numa_id: dict[int, int | None] = {}
    for label, row in rows.items():
        if label not in gpu_of:
            continue  # NIC rows repeat what the GPU rows say
        g = gpu_of[label]
        cells = dict(zip(header.columns, row.links, strict=True))
        links[g] = {gpu_of[c]: v for c, v in cells.items() if c in gpu_of and gpu_of[c] != g}
        # Keep links among GPUs that have rows, so every key is a device of the matrix.
        links[g] = {h: v for h, v in sorted(links[g].items()) if h in has_row}
        nic_links[g] = {nic_name[c]: cells[c] for c in nic_columns}
        affinity[g] = _cpus(row.trailing.get(CPU_AFFINITY, ""), g, row.line)
        numa[g] = _node(row.trailing.get(NUMA_AFFINITY, ""), NUMA_AFFINITY, g, row.line)
        gpu_numa_id[g] = _node(row.trailing.get(GPU_NUMA_ID, ""), GPU_NUMA_ID, g, row.line)

    matrix = TopoMatrix(
        devices=devices,
        links={g: links[g] for g in devices},
        affinity={g: affinity[g] for g in devices},
        numa={g: numa[g] for g in devices},
        nics=tuple(nic_name[c] for c in nic_columns),
    )
    return TopoMDetails(
        matrix=matrix,
        gpu_numa_id={g: gpu_numa_id[g] for g in devices},
        nic_links={g: nic_links[g] for g in devices},
        header_gpus=tuple(sorted(gpu_of.values())),
    )


def parse_topo_m(text: str) -> TopoMatrix:
    """Parse `nvidia-smi topo -m` into links between GPUs, CPU/NUMA affinity and NIC names.

    `affinity[g]` is None when the CPU Affinity cell is empty or N/A (nvidia-smi intersects it
    with the caller's cpuset, so it is empty inside a Slurm job that holds other CPUs);
    `numa[g]` is the NUMA Affinity or None for N/A.
    """
    return parse_topo_m_details(text).matrix
