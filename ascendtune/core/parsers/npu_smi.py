"""Parsers for npu-smi's text: `info`, `info -m`, `info -t topo` and `info -t board`.

Pure functions from text to the frozen models of ascendtune.core.model. Anything that does not
have the shape npu-smi prints raises ParseError naming the command and the 1-based line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import AccelProcess, NpuChip, NpuInfo, NpuInfoRow, TopoMatrix

SRC_INFO = "npu-smi info"
SRC_INFO_M = "npu-smi info -m"
SRC_TOPO = "npu-smi info -t topo"
SRC_BOARD = "npu-smi info -t board"

# Character classes are spelled [0-9] rather than \d: int() accepts any Unicode digit, and a
# garbled "٣" must be refused, not read as 3.
_UINT = re.compile(r"[0-9]{1,9}")
_NUMBER = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,6})?")
_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
# A shell prompt echoed in pasted output: "(venv) root@host:~/src# npu-smi info",
# "[root@host ~]# npu-smi info", "$ npu-smi ..."
_PROMPT = re.compile(
    r"(?:\([^()]*\)\s*)?(?:\[[^\[\]]*\]|[\w.@:~/-])*\s*[$#%>]\s*(?:npu-smi(?:\s.*)?)?"
)
_COMMAND = re.compile(r"npu-smi\s+info\b.*")
_BORDER = re.compile(r"\+[-=+]*")
_NO_PROCESS = re.compile(r"No running processes found in NPU\s+(\S+)", re.IGNORECASE)
_MEMORY_UNIT = re.compile(r"Process memory\s*\(\s*([A-Za-z]+)\s*\)", re.IGNORECASE)
_MIB_PER_UNIT = {"B": 1 / (1024 * 1024), "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}
_NOT_AVAILABLE = frozenset({"-", "NA", "N/A"})
_LINK = re.compile(r"[A-Z][A-Z0-9_]*")
# A2/310P label rows NPU<n>; A3 (910_93) labels them Phy-ID<n> by physical die id
_TOPO_LABEL = re.compile(r"(NPU|NIC|Phy-ID)([0-9]{1,9})")


def _label(tok: str) -> tuple[str, int]:
    """("NPU", n) for NPU<n> and Phy-ID<n> rows, ("NIC", n) for NIC<n>."""
    m = _TOPO_LABEL.fullmatch(tok)
    assert m is not None
    return ("NIC" if m.group(1) == "NIC" else "NPU"), int(m.group(2))


def _is_npu(tok: str) -> bool:
    return _label(tok)[0] == "NPU"


# ---------------------------------------------------------------- shared helpers


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line without its end) for every line, CRLF tolerated.

    Split on "\\n" only, not splitlines(): line numbers must match what an editor shows.
    """
    for no, raw in enumerate(text.split("\n"), start=1):
        yield no, raw.rstrip("\r")


def _is_prompt(line: str) -> bool:
    s = line.strip()
    return bool(_PROMPT.fullmatch(s) or _COMMAND.fullmatch(s))


def _content(text: str) -> list[tuple[int, str]]:
    """Non-blank lines that are not shell prompts, stripped."""
    return [
        (no, line.strip())
        for no, line in _numbered_lines(text)
        if line.strip() and not _is_prompt(line)
    ]


def _uint(token: str, what: str, source: str, line: int) -> int:
    if not _UINT.fullmatch(token):
        raise ParseError(f"{what} {token!r} is not a number", source=source, line=line)
    return int(token)


def _opt_uint(token: str, what: str, source: str, line: int) -> int | None:
    """A number, or None where npu-smi prints "-" / "NA" (Mcu rows, absent values)."""
    if token.upper() in _NOT_AVAILABLE:
        return None
    return _uint(token, what, source, line)


# ---------------------------------------------------------------- npu-smi info


def _cells(line: str) -> list[str]:
    """Cells of a "| a | b |" table line; a line cut before its closing bar still splits."""
    inner = line[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return [c.strip() for c in inner.split("|")]


def _bus_id(cell: str, line: int) -> str | None:
    if cell.upper() in _NOT_AVAILABLE:
        return None
    if not _BUS_ID.fullmatch(cell):
        raise ParseError(
            f"Bus-Id {cell!r} is not a PCI address like 0000:c1:00.0", source=SRC_INFO, line=line
        )
    return cell.lower()


class _ProcessHeader:
    """Where the fields sit in the process table, read from its header line."""

    def __init__(self, cells: list[str], line: int) -> None:
        self.ncells = len(cells)
        first = cells[0].split()
        # "NPU     Chip" (A2/A3/310P) or "NPU ID" (Ascend 950, one chip per NPU)
        if [w.upper() for w in first] == ["NPU", "CHIP"]:
            self.has_chip = True
        elif [w.upper() for w in first] in (["NPU", "ID"], ["NPU"]):
            self.has_chip = False
        else:
            raise ParseError(
                f"process table header starts with {cells[0]!r}, expected 'NPU Chip' or 'NPU ID'",
                source=SRC_INFO,
                line=line,
            )
        lowered = [c.lower() for c in cells]
        try:
            self.pid_at = lowered.index("process id")
            self.name_at = lowered.index("process name")
        except ValueError:
            raise ParseError(
                "process table header lacks 'Process id' or 'Process name'",
                source=SRC_INFO,
                line=line,
            ) from None
        self.mem_at: int | None = None
        self.mib_per_unit = 1.0
        for i, c in enumerate(cells):
            m = _MEMORY_UNIT.fullmatch(c)
            if m:
                unit = m.group(1).upper()
                if unit not in _MIB_PER_UNIT:
                    raise ParseError(
                        f"unknown process memory unit {m.group(1)!r}", source=SRC_INFO, line=line
                    )
                self.mem_at, self.mib_per_unit = i, _MIB_PER_UNIT[unit]

    def row(self, cells: list[str], line: int) -> AccelProcess:
        if len(cells) != self.ncells:
            raise ParseError(
                f"process row has {len(cells)} cells, header has {self.ncells}",
                source=SRC_INFO,
                line=line,
            )
        ids = cells[0].split()
        want = 2 if self.has_chip else 1
        if len(ids) != want:
            raise ParseError(
                f"process row starts with {cells[0]!r}, expected "
                + ("'<npu> <chip>'" if self.has_chip else "'<npu>'"),
                source=SRC_INFO,
                line=line,
            )
        npu = _uint(ids[0], "NPU id", SRC_INFO, line)
        chip = _uint(ids[1], "chip id", SRC_INFO, line) if self.has_chip else None
        pid = _uint(cells[self.pid_at], "process id", SRC_INFO, line)
        mem: float | None = None
        if self.mem_at is not None:
            raw = cells[self.mem_at]
            if raw.upper() not in _NOT_AVAILABLE:
                if not _NUMBER.fullmatch(raw):
                    raise ParseError(
                        f"process memory {raw!r} is not a number", source=SRC_INFO, line=line
                    )
                mem = float(raw) * self.mib_per_unit
        return AccelProcess(
            npu_id=npu, chip_id=chip, pid=pid, name=cells[self.name_at], mem_mib=mem
        )


def parse_info(text: str) -> NpuInfo:
    """Parse `npu-smi info`: its version line, the device table and the process table.

    Each device is two table lines: "NPU Name | Health" then "Chip [Device|Phy-ID] | Bus-Id".
    A "Device" column (310P) is the logical id; "Phy-ID" (A3) is not and is dropped. Output
    holding only a process table (no device table) is accepted.
    """
    lines = _content(text)
    if not lines:
        raise ParseError("empty output", source=SRC_INFO)

    version: str | None = None
    devices: list[NpuInfoRow] = []
    processes: list[AccelProcess] = []
    seen: set[tuple[int, int]] = set()
    # pre -> hdr2 -> first <-> second, then proc; "pre" may jump straight to "proc"
    state = "pre"
    dev_cells = 0  # cell count of the device header's lines
    second_col: str | None = None  # "Device", "Phy-ID" or None (one id under "Chip")
    first: tuple[int, str, str | None] | None = None  # npu id, name, health of the pending row
    first_line = 0
    proc: _ProcessHeader | None = None

    for no, line in lines:
        if _BORDER.fullmatch(line):
            if state == "second":
                raise ParseError(
                    f"NPU {first[0] if first else '?'} has no 'Chip | Bus-Id' line",
                    source=SRC_INFO,
                    line=no,
                )
            continue
        if not line.startswith("|"):
            raise ParseError(
                f"unexpected text {line[:60]!r}: not part of an npu-smi table",
                source=SRC_INFO,
                line=no,
            )
        cells = _cells(line)
        head = cells[0].split()
        is_process_header = any(c.lower() == "process id" for c in cells)

        if state == "pre" and len(cells) == 1 and head and head[0].lower() == "npu-smi":
            if version is not None:
                raise ParseError("second version line", source=SRC_INFO, line=no)
            m = re.search(r"Version:\s*(\S+)", cells[0])
            version = m.group(1) if m else None
            continue
        if state == "pre" and [w.upper() for w in head[:2]] == ["NPU", "NAME"]:
            state, dev_cells = "hdr2", len(cells)
            continue
        if state == "hdr2":
            if not head or head[0].upper() != "CHIP" or len(head) > 2:
                raise ParseError(
                    f"device table header's second line starts with {cells[0]!r}, "
                    "expected 'Chip', 'Chip Device' or 'Chip Phy-ID'",
                    source=SRC_INFO,
                    line=no,
                )
            if len(cells) != dev_cells:
                raise ParseError(
                    f"device table header lines have {dev_cells} and {len(cells)} cells",
                    source=SRC_INFO,
                    line=no,
                )
            second_col = head[1] if len(head) == 2 else None
            if second_col is not None and second_col.upper() not in ("DEVICE", "PHY-ID"):
                raise ParseError(
                    f"unknown device table column {second_col!r} after 'Chip'",
                    source=SRC_INFO,
                    line=no,
                )
            state = "first"
            continue
        if is_process_header:
            if state not in ("pre", "first"):
                raise ParseError(
                    "process table header inside the device table", source=SRC_INFO, line=no
                )
            if state == "first" and not devices:
                raise ParseError("device table has no rows", source=SRC_INFO, line=no)
            proc, state = _ProcessHeader(cells, no), "proc"
            continue
        if state == "first":
            if len(cells) != dev_cells:
                raise ParseError(
                    f"device row has {len(cells)} cells, header has {dev_cells}",
                    source=SRC_INFO,
                    line=no,
                )
            if len(head) < 2:
                raise ParseError(
                    f"device row starts with {cells[0]!r}, expected '<npu id> <name>'",
                    source=SRC_INFO,
                    line=no,
                )
            npu = _uint(head[0], "NPU id", SRC_INFO, no)
            first = (npu, " ".join(head[1:]), cells[1] or None)
            first_line, state = no, "second"
            continue
        if state == "second":
            assert first is not None
            npu, name, health = first
            if len(cells) != dev_cells:
                raise ParseError(
                    f"NPU {npu}: chip line has {len(cells)} cells, header has {dev_cells}",
                    source=SRC_INFO,
                    line=no,
                )
            want = 1 if second_col is None else 2
            if len(head) != want:
                raise ParseError(
                    f"NPU {npu}: chip line starts with {cells[0]!r}, expected "
                    + ("'<chip>'" if want == 1 else f"'<chip> <{second_col}>'"),
                    source=SRC_INFO,
                    line=no,
                )
            chip = _uint(head[0], "chip id", SRC_INFO, no)
            logical: int | None = None
            if second_col is not None:
                other = _opt_uint(head[1], second_col, SRC_INFO, no)
                # Only 310P's "Device" column is the logical id; A3's "Phy-ID" is physical.
                logical = other if second_col.upper() == "DEVICE" else None
            if (npu, chip) in seen:
                raise ParseError(f"NPU {npu} chip {chip} listed twice", source=SRC_INFO, line=no)
            seen.add((npu, chip))
            devices.append(
                NpuInfoRow(
                    npu_id=npu,
                    chip_id=chip,
                    name=name,
                    health=health,
                    bus_id=_bus_id(cells[1], no),
                    logical_id=logical,
                )
            )
            first, state = None, "first"
            continue
        if state == "proc":
            assert proc is not None
            m = _NO_PROCESS.fullmatch(cells[0]) if len(cells) == 1 else None
            if m:
                _uint(m.group(1), "NPU id", SRC_INFO, no)
                continue
            processes.append(proc.row(cells, no))
            continue
        raise ParseError(
            f"unexpected line {line[:60]!r} before the device table header",
            source=SRC_INFO,
            line=no,
        )

    if state == "hdr2":
        raise ParseError("output ends inside the device table header", source=SRC_INFO)
    if state == "second":
        raise ParseError(
            f"output ends before the 'Chip | Bus-Id' line of NPU {first[0] if first else '?'}",
            source=SRC_INFO,
            line=first_line,
        )
    if state == "pre":
        raise ParseError("no device table or process table found", source=SRC_INFO)
    if state == "first" and not devices:
        raise ParseError("device table has no rows", source=SRC_INFO)
    return NpuInfo(
        version=version,
        devices=tuple(devices),
        processes=tuple(processes),
        procs_by_chip=None if proc is None else proc.has_chip,
    )


# ---------------------------------------------------------------- npu-smi info -m

# Column names as npu-smi prints them. Headers are separated by 2+ spaces, except that some
# builds print "Chip Phy-ID Chip Name" with single spaces, so chunks are split on known names.
_M_COLUMNS = ("Chip Logic ID", "Chip Phy-ID", "Chip Name", "Chip ID", "NPU ID", "Slot ID")
_M_WORDS = sorted(((c.upper().split(), c) for c in _M_COLUMNS), key=lambda wc: -len(wc[0]))


def _split_known(chunk: str) -> list[str]:
    words = chunk.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        for key, name in _M_WORDS:
            if [w.upper() for w in words[i : i + len(key)]] == key:
                out.append(name)
                i += len(key)
                break
        else:
            return [" ".join(words)]  # not made of known names: one unknown column
    return out


def _m_header(line: str) -> list[str]:
    cols: list[str] = []
    for chunk in re.split(r"\t+|\s{2,}", line.strip()):
        if chunk.strip():
            cols.extend(_split_known(chunk))
    return cols


def parse_info_m(text: str) -> tuple[NpuChip, ...]:
    """Parse `npu-smi info -m`, one NpuChip per row, in printed order.

    Header-driven: "Chip Logic ID", "Chip Phy-ID" and "Slot ID" may each be absent. Without
    "Chip Logic ID" the NPU ID is the logical id (Ascend 950), except on Mcu rows (None).
    """
    lines = _content(text)
    if not lines:
        raise ParseError("empty output", source=SRC_INFO_M)
    no, line = lines[0]
    upper = line.upper()
    if "NPU ID" not in upper or "CHIP NAME" not in upper:
        raise ParseError(
            f"expected the header line with 'NPU ID' and 'Chip Name', found {line[:60]!r}",
            source=SRC_INFO_M,
            line=no,
        )
    cols = _m_header(line)
    for required in ("NPU ID", "Chip ID"):
        if required not in cols:
            raise ParseError(f"header has no {required!r} column", source=SRC_INFO_M, line=no)
    if cols[-1] != "Chip Name":
        raise ParseError("'Chip Name' is not the last column", source=SRC_INFO_M, line=no)
    if len(set(cols)) != len(cols):
        raise ParseError("header names a column twice", source=SRC_INFO_M, line=no)
    at = {c: i for i, c in enumerate(cols)}

    chips: list[NpuChip] = []
    seen: set[tuple[int, int]] = set()
    logical_seen: set[int] = set()
    for no, line in lines[1:]:
        # The name is the last column and may hold spaces ("Ascend 910B3"): it takes the rest.
        parts = line.split(None, len(cols) - 1)
        if len(parts) != len(cols):
            raise ParseError(
                f"row has {len(parts)} cells, header has {len(cols)} columns",
                source=SRC_INFO_M,
                line=no,
            )
        name = " ".join(parts[-1].split())
        npu = _uint(parts[at["NPU ID"]], "NPU ID", SRC_INFO_M, no)
        chip = _uint(parts[at["Chip ID"]], "Chip ID", SRC_INFO_M, no)
        is_mcu = name.upper() == "MCU"
        if "Chip Logic ID" in at:
            logical = _opt_uint(parts[at["Chip Logic ID"]], "Chip Logic ID", SRC_INFO_M, no)
        else:
            logical = None if is_mcu else npu
        phy = None
        if "Chip Phy-ID" in at:
            phy = _opt_uint(parts[at["Chip Phy-ID"]], "Chip Phy-ID", SRC_INFO_M, no)
        if "Slot ID" in at:
            _opt_uint(parts[at["Slot ID"]], "Slot ID", SRC_INFO_M, no)
        if (npu, chip) in seen:
            raise ParseError(f"NPU {npu} chip {chip} listed twice", source=SRC_INFO_M, line=no)
        seen.add((npu, chip))
        if logical is not None:
            if logical in logical_seen:
                raise ParseError(f"logical id {logical} listed twice", source=SRC_INFO_M, line=no)
            logical_seen.add(logical)
        chips.append(NpuChip(npu_id=npu, chip_id=chip, logical_id=logical, name=name, phy_id=phy))
    if not chips:
        raise ParseError("no chip rows after the header", source=SRC_INFO_M, line=lines[0][0])
    return tuple(chips)


# ---------------------------------------------------------------- npu-smi info -t topo


def _topo_header(line: str, no: int) -> tuple[list[str], bool]:
    """Device labels of the matrix header, and whether a CPU Affinity column ends it."""
    tokens = line.split()
    labels: list[str] = []
    has_affinity = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if [t.upper() for t in tokens[i : i + 2]] == ["CPU", "AFFINITY"] and i + 2 == len(tokens):
            has_affinity = True
            break
        if not _TOPO_LABEL.fullmatch(tok):
            raise ParseError(
                f"header cell {tok!r} is not NPUn, Phy-IDn, NICn or a final 'CPU Affinity'",
                source=SRC_TOPO,
                line=no,
            )
        # Compare as numbers so that "NPU1" and "NPU01" count as the same device.
        if _label(tok) in {_label(lb) for lb in labels}:
            raise ParseError(f"header names {tok} twice", source=SRC_TOPO, line=no)
        labels.append(tok)
        i += 1
    if not any(_is_npu(lb) for lb in labels):
        raise ParseError("header names no NPU", source=SRC_TOPO, line=no)
    return labels, has_affinity


def parse_topo(text: str) -> TopoMatrix:
    """Parse `npu-smi info -t topo`: the link matrix, CPU affinity per NPU, and NIC names.

    `links[a][b]` holds the link type between NPU a and NPU b (self links are not stored, nor
    links to NICs); `affinity[n]` is None when there is no CPU Affinity column or cell. The
    Legend block after the matrix is ignored.
    """
    body = [(no, line) for no, line in _numbered_lines(text) if not _is_prompt(line)]
    while body and not body[0][1].strip():
        body.pop(0)
    if not body:
        raise ParseError("empty output", source=SRC_TOPO)
    no, header = body[0]
    if "not support" in header.lower():
        return TopoMatrix(devices=(), links={}, affinity={}, supported=False)
    labels, has_affinity = _topo_header(header, no)
    ncols = len(labels)
    npus = [_label(lb)[1] for lb in labels if _is_npu(lb)]
    # each column's NPU id (None: a NIC), worked out once, not once per row; a link type seen
    # valid once needs no second match (a 64-NPU matrix is 4,096 cells of a few types)
    col_npu = [(n if kind == "NPU" else None) for kind, n in map(_label, labels)]
    valid: set[str] = set()

    links: dict[int, dict[int, str]] = {}
    affinity: dict[int, CpuSet | None] = {}
    rows_seen: set[str] = set()
    last_no = no  # the matrix's last line, where a missing row is reported
    for no, raw in body[1:]:
        line = raw.strip()
        # A blank line or the Legend ends the matrix; whatever follows is explanation.
        if not line or line.upper().startswith("LEGEND"):
            break
        tokens = line.split()
        label = tokens[0]
        if label not in labels:
            raise ParseError(
                f"row label {label!r} is not one of the header's devices", source=SRC_TOPO, line=no
            )
        if label in rows_seen:
            raise ParseError(f"row {label!r} appears twice", source=SRC_TOPO, line=no)
        rows_seen.add(label)
        last_no = no
        cells = tokens[1:]
        aff_cell: str | None = None
        if has_affinity and len(cells) == ncols + 1:
            link_cells, aff_cell = cells[:ncols], cells[ncols]
        elif len(cells) == ncols and not (
            has_affinity and (cells[-1][:1].isascii() and cells[-1][:1].isdigit())
        ):
            link_cells = cells  # no affinity column, or an empty affinity cell
        else:
            n_links = (
                len(cells) - 1
                if has_affinity and cells and (cells[-1][:1].isascii() and cells[-1][:1].isdigit())
                else len(cells)
            )
            raise ParseError(
                f"row {label!r} has {n_links} link cells, header has {ncols} devices",
                source=SRC_TOPO,
                line=no,
            )
        row: dict[int, str] = {}
        for col, col_id, cell in zip(labels, col_npu, link_cells, strict=True):
            if cell not in valid:
                if not _LINK.fullmatch(cell):
                    raise ParseError(
                        f"row {label!r}, column {col}: {cell!r} is not a link type",
                        source=SRC_TOPO,
                        line=no,
                    )
                valid.add(cell)
            if (cell == "X") != (col == label):
                raise ParseError(
                    f"row {label!r}, column {col}: 'X' must mark exactly the device itself",
                    source=SRC_TOPO,
                    line=no,
                )
            if col_id is not None and col != label:
                row[col_id] = cell
        if not _is_npu(label):
            continue  # NIC rows only repeat the NPU rows' NIC columns
        npu = _label(label)[1]
        links[npu] = row
        if aff_cell is None or aff_cell.upper() in _NOT_AVAILABLE:
            affinity[npu] = None
        else:
            try:
                affinity[npu] = parse_cpulist(aff_cell, source=SRC_TOPO)
            except ParseError as e:
                raise ParseError(
                    f"row {label!r}: CPU Affinity {aff_cell!r} is not a cpulist",
                    source=SRC_TOPO,
                    line=no,
                ) from e
    missing = [lb for lb in labels if _is_npu(lb) and _label(lb)[1] not in links]
    if missing:
        raise ParseError(
            f"matrix ends without rows for {', '.join(missing)}", source=SRC_TOPO, line=last_no
        )
    return TopoMatrix(
        devices=tuple(npus),
        links=links,
        affinity=affinity,
        nics=tuple(lb for lb in labels if lb.startswith("NIC")),
        by_phy_id=any(lb.startswith("Phy-ID") for lb in labels),
    )


# ---------------------------------------------------------------- npu-smi info -t board


def parse_board(text: str) -> list[dict[str, str]]:
    """Parse `npu-smi info -t board` ("Key : value" lines) into one dict per "NPU ID" block.

    One query prints one block; pasted output of several queries gives several. Lines
    starting with "#" (annotations in documentation copies) are skipped.
    """
    lines = _content(text)
    if not lines:
        raise ParseError("empty output", source=SRC_BOARD)
    blocks: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for no, line in lines:
        if line.startswith("#"):
            continue
        key, colon, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon or not key:
            raise ParseError(
                f"expected 'Key : value', found {line[:60]!r}", source=SRC_BOARD, line=no
            )
        if current is None or (key == "NPU ID" and current):
            current = {}
            blocks.append(current)
        if key in current:
            raise ParseError(f"{key!r} appears twice in one block", source=SRC_BOARD, line=no)
        current[key] = value
    if not blocks:
        raise ParseError("no 'Key : value' lines", source=SRC_BOARD)
    return blocks
