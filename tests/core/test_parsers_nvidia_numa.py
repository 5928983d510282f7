"""Tests for the `nvidia-smi topo -m`, `numactl -H` and `lscpu` parsers of ascendtune.core.parsers.

Real outputs come from ../shared/samples (read in place, skipped when absent); forms no sample
shows are hand-made under tests/fixtures/nvidia or inline here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import NumaNode, TopoMatrix
from ascendtune.core.parsers import numa_tools, nvidia_smi
from ascendtune.core.parsers.numa_tools import (
    parse_lscpu_e,
    parse_lscpu_numa,
    parse_numactl_distances,
    parse_numactl_hardware,
)
from ascendtune.core.parsers.nvidia_smi import parse_topo_m, parse_topo_m_details
from tests.support.samples import sample, sample_files

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nvidia"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def cpus(text: str) -> CpuSet:
    return parse_cpulist(text)


def evens(lo: int, hi: int) -> CpuSet:
    return frozenset(range(lo, hi + 1, 2))


# ---------------------------------------------------------------- nvidia-smi topo -m: samples


def test_topo_m_8xh100_12nic_tabs_nic_legend() -> None:
    d = parse_topo_m_details(sample("nvidia-smi_topo_m_8xH100_12nic_2numa_smt.txt"))
    m = d.matrix
    assert m.devices == tuple(range(8))
    for g in range(4):
        assert m.affinity[g] == cpus("0-55,112-167")
        assert m.numa[g] == 0
    for g in range(4, 8):
        assert m.affinity[g] == cpus("56-111,168-223")
        assert m.numa[g] == 1
    assert m.links[0][1] == "NV18"
    assert all(m.links[a][b] == "NV18" for a in range(8) for b in range(8) if a != b)
    assert all(g not in m.links[g] for g in range(8))
    assert m.nics == tuple(f"mlx5_{i}" for i in range(12))
    assert d.nic_links[0]["mlx5_0"] == "PIX"
    assert d.nic_links[0]["mlx5_1"] == "PXB"
    assert d.nic_links[4]["mlx5_6"] == "PIX"
    assert d.nic_links[7]["mlx5_0"] == "SYS"
    assert d.gpu_numa_id == dict.fromkeys(range(8))
    assert d.missing_rows == ()


def test_topo_m_slurm_cpuset_leaves_cpu_affinity_empty() -> None:
    d = parse_topo_m_details(sample("nvidia-smi_topo_m_8xH100_empty_cpu_affinity_slurm.txt"))
    m = d.matrix
    assert m.devices == tuple(range(8))
    assert [m.affinity[g] for g in range(4)] == [None] * 4
    assert [m.affinity[g] for g in range(4, 8)] == [frozenset({1})] * 4
    assert [m.numa[g] for g in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert m.nics == tuple(f"mlx5_{i}" for i in range(6))
    assert d.nic_links[0]["mlx5_0"] == "PIX"
    assert d.nic_links[3]["mlx5_2"] == "PIX"
    assert d.nic_links[6]["mlx5_5"] == "PIX"


def test_topo_m_single_p4_numa_not_available() -> None:
    m = parse_topo_m(sample("nvidia-smi_topo_m_1xP4_numa_NA.txt"))
    assert m == TopoMatrix(
        devices=(0,), links={0: {}}, affinity={0: cpus("0-7")}, numa={0: None}, nics=()
    )


def test_topo_m_copy_pasted_spaces_without_nics() -> None:
    m = parse_topo_m(sample("nvidia-smi_topo_m_8xH100_nonic_spaces.txt"))
    assert m.devices == tuple(range(8))
    assert {g: m.affinity[g] for g in range(4)} == dict.fromkeys(range(4), cpus("0-47,96-143"))
    assert {g: m.affinity[g] for g in range(4, 8)} == dict.fromkeys(
        range(4, 8), cpus("48-95,144-191")
    )
    assert [m.numa[g] for g in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert m.links[7][6] == "NV18"
    assert m.nics == ()


def test_topo_m_snc_excerpt_keeps_the_rows_it_has() -> None:
    d = parse_topo_m_details(sample("nvidia-smi_topo_m_8xGPU_snc_uneven_numa_EXCERPT.txt"))
    m = d.matrix
    # The header names 8 GPUs, the excerpt stops after GPU5: only rowed GPUs are devices.
    assert m.devices == tuple(range(6))
    assert d.header_gpus == tuple(range(8))
    assert d.missing_rows == (6, 7)
    assert set(m.links[0]) == {1, 2, 3, 4, 5}
    by_node: dict[int | None, list[int]] = {}
    for g in m.devices:
        by_node.setdefault(m.numa[g], []).append(g)
    assert by_node == {0: [0, 1, 2], 1: [3], 2: [4, 5]}
    assert m.affinity[3] == cpus("24-47,120-143")
    assert m.affinity[0] == cpus("0-23,96-119")
    assert m.affinity[5] == cpus("48-71,144-167")
    assert m.nics == tuple(f"NIC{i}" for i in range(9))
    assert d.nic_links[3]["NIC4"] == "PIX"


# ---------------------------------------------------------------- nvidia-smi topo -m: fixtures


def test_topo_m_pcie_box_phb_within_socket_sys_across() -> None:
    d = parse_topo_m_details(fixture("topo_m_4xpcie_phb_sys.txt"))
    m = d.matrix
    assert m.devices == (0, 1, 2, 3)
    assert m.links == {
        0: {1: "PHB", 2: "SYS", 3: "SYS"},
        1: {0: "PHB", 2: "SYS", 3: "SYS"},
        2: {0: "SYS", 1: "SYS", 3: "PHB"},
        3: {0: "SYS", 1: "SYS", 2: "PHB"},
    }
    assert m.affinity == {0: cpus("0-15,32-47"), 1: cpus("0-15,32-47"),
                          2: cpus("16-31,48-63"), 3: cpus("16-31,48-63")}  # fmt: skip
    assert m.numa == {0: 0, 1: 0, 2: 1, 3: 1}
    assert d.gpu_numa_id == dict.fromkeys(range(4))  # no such column
    assert m.nics == ()


def test_topo_m_gh200_gpu_numa_id() -> None:
    d = parse_topo_m_details(fixture("topo_m_gh200_gpu_numa_id.txt"))
    assert d.matrix.devices == (0,)
    assert d.matrix.affinity == {0: cpus("0-71")}
    assert d.matrix.numa == {0: 0}  # the CPUs' node
    assert d.gpu_numa_id == {0: 1}  # the GPU memory's own node
    assert d.matrix.nics == ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
    assert d.nic_links[0] == dict.fromkeys(d.matrix.nics, "NODE")


def test_topo_m_old_driver_nic_names_in_header() -> None:
    d = parse_topo_m_details(fixture("topo_m_2gpu_old_driver_mlx_header.txt"))
    assert d.matrix.links == {0: {1: "SOC"}, 1: {0: "SOC"}}
    assert d.matrix.affinity == {0: cpus("0-9,20-29"), 1: cpus("10-19,30-39")}
    assert d.matrix.numa == {0: None, 1: None}
    assert d.matrix.nics == ("mlx5_0",)
    assert d.nic_links == {0: {"mlx5_0": "PHB"}, 1: {"mlx5_0": "SOC"}}


def test_topo_m_spaces_with_empty_cpu_affinity_align_right() -> None:
    m = parse_topo_m(fixture("topo_m_4gpu_spaces_empty_affinity.txt"))
    assert m.affinity == {0: None, 1: None, 2: cpus("16-31"), 3: cpus("16-31")}
    assert m.numa == {0: 0, 1: 0, 2: 1, 3: 1}
    assert m.links[0] == {1: "NV4", 2: "SYS", 3: "SYS"}


def test_topo_m_crlf_and_prompt_parse_like_the_original() -> None:
    text = fixture("topo_m_4xpcie_phb_sys.txt")
    crlf = ("$ nvidia-smi topo -m\n" + text).replace("\n", "\r\n")
    assert parse_topo_m(crlf) == parse_topo_m(text)


def test_topo_m_multi_node_numa_affinity_names_no_single_node() -> None:
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-63\t0-1\n"
    assert parse_topo_m(text).numa == {0: None}


# ---------------------------------------------------------------- nvidia-smi topo -m: errors

_PCIE = "topo_m_4xpcie_phb_sys.txt"


def _edit_line(text: str, index: int, new: str) -> str:
    lines = text.split("\n")
    lines[index] = new
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no header"),
        ("Legend:\n\n  X    = Self\n", "no header"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            "driver",
        ),
        ("No devices were found\n", "No devices were found"),
        ("\tGPU0\tGPU1\tCPU Affinity\n\nLegend:\n", "no GPU row"),
        ("\tGPU0\tGPU1\tX\tCPU Affinity\n", "'X' cell"),
        ("\tGPU0\tGPU0\tCPU Affinity\n", "twice"),
    ],
)
def test_topo_m_unusable_text_raises_parse_error(text: str, needle: str) -> None:
    with pytest.raises(ParseError, match=needle) as e:
        parse_topo_m(text)
    assert e.value.source == nvidia_smi.SOURCE


def test_topo_m_rows_without_header() -> None:
    text = "\n".join(fixture(_PCIE).split("\n")[1:])
    with pytest.raises(ParseError, match="before any header") as e:
        parse_topo_m(text)
    assert e.value.line == 1


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ("GPU0\tPHB\tPHB\tSYS\tSYS\t0-15\t0", "not 'X'"),  # self cell lost
        ("GPU0\t X \tPHB\tSYS", "link cells"),  # cut short
        ("GPU0\t X \tPHB\tSYS\t\tSYS\t0-15\t0", "not a link type"),  # an empty link cell
        ("GPU0\t X \tPHB\tSYS\tSYS\t0-1x\t0", "CPU Affinity of GPU0"),
        ("GPU0\t X \tPHB\tSYS\tSYS\t0-15\tzero", "NUMA Affinity of GPU0"),
        ("GPU0\t X \tPHB\tSYS\tSYS\t0-15\t0\t7\t8", "more values"),
        ("GPU0 X\tPHB\tSYS\tSYS\t0-15\t0", "not a column"),
    ],
)
def test_topo_m_bad_row_names_its_line(row: str, needle: str) -> None:
    with pytest.raises(ParseError, match=needle) as e:
        parse_topo_m(_edit_line(fixture(_PCIE), 1, row))
    assert e.value.line == 2


def test_topo_m_duplicate_row() -> None:
    lines = fixture(_PCIE).split("\n")
    lines.insert(3, lines[1])
    with pytest.raises(ParseError, match="second row for GPU0") as e:
        parse_topo_m("\n".join(lines))
    assert e.value.line == 4


def test_topo_m_garbled_line_inside_the_table_is_not_the_end() -> None:
    text = _edit_line(fixture(_PCIE), 2, "[garbled]")
    with pytest.raises(ParseError, match="after the table ended at line 3") as e:
        parse_topo_m(text)
    assert e.value.line == 4


# ---------------------------------------------------------------- numactl -H


def test_numactl_interleaved_numbering() -> None:
    text = sample("numactl_H_2socket_interleaved_numbering_h100_host.txt")
    assert parse_numactl_hardware(text) == (
        NumaNode(0, evens(0, 94), 515020),
        NumaNode(1, evens(1, 95), 516037),
    )
    assert parse_numactl_distances(text) == {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}


def test_numactl_cpuless_nodes_power() -> None:
    text = sample("numactl_H_cpuless_nodes_power.txt")
    assert parse_numactl_hardware(text) == (
        NumaNode(0, frozenset(), 8664),
        NumaNode(1, frozenset(), 5602),
        NumaNode(2, cpus("0-7"), 0),
        NumaNode(3, frozenset(), 1023),
    )
    dist = parse_numactl_distances(text)
    assert all(dist[a][b] == (10 if a == b else 20) for a in range(4) for b in range(4))


def test_numactl_memoryless_nodes_threadripper() -> None:
    nodes = parse_numactl_hardware(sample("numactl_H_memoryless_nodes_threadripper_nps4.txt"))
    assert [(n.id, n.cpulist, n.mem_mib) for n in nodes] == [
        (0, "0-5,24-29", 0),
        (1, "6-11,30-35", 64307),
        (2, "12-17,36-41", 64472),
        (3, "18-23,42-47", 0),
    ]


_NUMACTL = """\
available: 2 nodes (0,2)
node 0 cpus: 0 1 2 3
node 0 size: 1024 MB
node 0 free: 512 MB
node 2 cpus: 4 5 6 7
node 2 size: 2048 MB
node 2 free: 1000 MB
node distances:
node   0   2
  0:  10  20
  2:  20  10
"""


def test_numactl_sparse_node_ids_and_trailing_prompt() -> None:
    nodes = parse_numactl_hardware(_NUMACTL + "user@host:~$ \n")
    assert [n.id for n in nodes] == [0, 2]
    assert parse_numactl_distances(_NUMACTL) == {0: {0: 10, 2: 20}, 2: {0: 20, 2: 10}}


def test_numactl_without_distances_block() -> None:
    text = _NUMACTL.split("node distances:")[0]
    assert len(parse_numactl_hardware(text)) == 2
    assert parse_numactl_distances(text) == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no 'node N cpus:'"),
        ("No NUMA available on this system\n", "no NUMA support"),
        (_NUMACTL.replace("node 2 cpus: 4 5 6 7\n", ""), "node 2 has no 'cpus:'"),
        (_NUMACTL.replace("(0,2)", "(0-2)"), "lists 3 node ids"),
        (_NUMACTL.replace("available: 2 nodes (0,2)", "available: 3 nodes (0-2)"), "cut short"),
        (_NUMACTL.replace("2048 MB", "2 GB"), "not 'N MB'"),
        (_NUMACTL.replace("4 5 6 7", "3 4 5 6"), "CPU 3 is listed under node 0 and node 2"),
        (_NUMACTL.replace("4 5 6 7", "4 5 x 7"), "'x' is not a CPU number"),
        (_NUMACTL.replace("  2:  20  10\n", ""), "1 of 2 rows"),
        (_NUMACTL.replace("  2:  20  10", "  2:  20"), "does not fit"),
        (_NUMACTL.replace("node 0 free", "node 0 size"), "size listed twice"),
        (_NUMACTL.replace("node 0 free: 512 MB", "node 0 hugepages: 3"), "unexpected line"),
        (_NUMACTL.replace("node   0   2\n", ""), "expected the distance header"),
    ],
)
def test_numactl_unusable_text_raises_parse_error(text: str, needle: str) -> None:
    with pytest.raises(ParseError, match=needle) as e:
        parse_numactl_hardware(text)
    assert e.value.source == numa_tools.SRC_NUMACTL


# ---------------------------------------------------------------- lscpu


def test_lscpu_sectioned_gh200_cpuless_nodes() -> None:
    nodes = parse_lscpu_numa(sample("lscpu_numa_section_gh200_cpuless_gpu_nodes.txt"))
    assert [n.id for n in nodes] == list(range(9))
    assert nodes[0].cpus == cpus("0-71")
    assert all(n.cpus == frozenset() for n in nodes[1:])
    assert all(n.mem_mib is None for n in nodes)


def test_lscpu_sectioned_six_subnuma_smt() -> None:
    nodes = parse_lscpu_numa(sample("lscpu_numa_section_6_subnuma_smt.txt"))
    assert [n.cpulist for n in nodes] == [
        "0-39,240-279",
        "40-79,280-319",
        "80-119,320-359",
        "120-159,360-399",
        "160-199,400-439",
        "200-239,440-479",
    ]


def test_lscpu_legacy_flat_interleaved() -> None:
    nodes = parse_lscpu_numa(sample("lscpu_xeon8468_2socket_nosmt_interleaved.txt"))
    assert nodes == (NumaNode(0, evens(0, 94), None), NumaNode(1, evens(1, 95), None))


@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ("Architecture: x86_64\nCPU(s): 8\n", "no 'NUMA nodeN", None),
        ("NUMA node(s): 3\nNUMA node0 CPU(s): 0-3\nNUMA node1 CPU(s): 4-7\n", "cut short", 1),
        ("NUMA node0 CPU(s): 0-3\nNUMA node1 CPU(s): 4-x\n", "NUMA node1", 2),
        ("NUMA node0 CPU(s): 0-3\nNUMA node0 CPU(s): 4-7\n", "twice", 2),
        ("NUMA node0 CPU(s): 0-4\nNUMA node1 CPU(s): 4-7\n", "CPU 4 is listed", 2),
    ],
)
def test_lscpu_unusable_text_raises_parse_error(text: str, needle: str, line: int | None) -> None:
    with pytest.raises(ParseError, match=needle) as e:
        parse_lscpu_numa(text)
    assert e.value.line == line


def test_lscpu_e_offline_cpu_has_no_node() -> None:
    text = "$ lscpu -e=CPU,NODE\nCPU NODE\n  0    0\n  1    0\n  2    -\n  3    1\n"
    parsed = parse_lscpu_e(text)
    assert parsed == {0: 0, 1: 0, 2: None, 3: 1}
    # What vLLM-Ascend trips over: int("-") for CPU 2.
    assert [c for c, n in parsed.items() if n is None] == [2]


def test_lscpu_e_full_columns() -> None:
    text = (
        "CPU NODE SOCKET CORE L1d:L1i:L2:L3 ONLINE    MAXMHZ   MINMHZ\n"
        "  0    0      0    0 0:0:0:0          yes 2600.0000 200.0000\n"
        "  1    0      0    1 1:1:1:0          yes 2600.0000 200.0000\n"
        "  2    -      -    - :::               no -         -\n"
    )
    assert parse_lscpu_e(text) == {0: 0, 1: 0, 2: None}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no header"),
        ("CPU SOCKET\n0 0\n", "no NODE column"),
        ("CPU NODE\n", "no CPU rows"),
        ("CPU NODE\n0 0\n0 1\n", "CPU 0 listed twice"),
        ("CPU NODE\n0 x\n", "NODE 'x'"),
        ("CPU NODE\nz 0\n", "CPU 'z'"),
        ("CPU NODE\n0\n", "1 values"),
    ],
)
def test_lscpu_e_unusable_text_raises_parse_error(text: str, needle: str) -> None:
    with pytest.raises(ParseError, match=needle):
        parse_lscpu_e(text)


# ---------------------------------------------------------------- layering


@pytest.mark.parametrize("module", [nvidia_smi, numa_tools])
def test_parsers_import_nothing_that_touches_the_host(module: Any) -> None:
    tree = ast.parse(Path(module.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    banned = ("os", "subprocess", "psutil", "pyudev", "ascendtune.host", "ascendtune.cli")
    assert not [n for n in names if any(n == b or n.startswith(b + ".") for b in banned)]


# ---------------------------------------------------------------- properties


def _texts(pattern: str, extra: list[str]) -> list[str]:
    found = sample_files(pattern)
    return [p.read_text() for p in found] + extra


_TOPO_TEXTS = _texts("nvidia-smi_*", [p.read_text() for p in sorted(FIXTURES.glob("*.txt"))])
_NUMACTL_TEXTS = _texts("numactl_*", [_NUMACTL])
_LSCPU_TEXTS = _texts("lscpu_*", ["NUMA node(s): 2\nNUMA node0 CPU(s): 0-3\nNUMA node1 CPU(s):\n"])
_LSCPU_E_TEXTS = ["CPU NODE\n  0    0\n  1    0\n  2    -\n  3    1\n"]

# Characters a garbled paste or a bit flip could bring: digits (ASCII and not), separators,
# letters of the tools' words, controls.
_CHARS = st.sampled_from([*"0123456789 \t\n\r-,:X/ANGPUICMBnode()", "٣", "\x00", "é"])


@st.composite
def _mutated(draw: st.DrawFn, texts: list[str]) -> str:
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        lines = text.split("\n")
        op = draw(st.sampled_from(["delete", "duplicate", "truncate", "replace", "insert"]))
        if op in ("delete", "duplicate") and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i:i + 1] = [] if op == "delete" else [lines[i], lines[i]]  # fmt: skip
            text = "\n".join(lines)
        elif op == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif text:
            i = draw(st.integers(0, len(text) - 1))
            keep = i + 1 if op == "replace" else i
            text = text[:i] + draw(_CHARS) + text[keep:]
    return text


def _model_or_parse_error(parse: Callable[[str], Any], text: str) -> Any:
    """The parse result, or None when it raised ParseError naming its source and a line of the
    text; any other exception fails."""
    try:
        return parse(text)
    except ParseError as e:
        assert e.source, e
        assert e.line is None or 1 <= e.line <= text.count("\n") + 1, (e.line, e)
        return None


def _check_nodes(nodes: tuple[NumaNode, ...]) -> None:
    ids = [n.id for n in nodes]
    assert ids == sorted(set(ids)) and ids
    seen: set[int] = set()
    for n in nodes:
        assert not (n.cpus & seen)
        seen |= n.cpus
        assert n.mem_mib is None or n.mem_mib >= 0


_PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPS
@given(_mutated(_TOPO_TEXTS))
def test_topo_m_mutated_gives_matrix_or_parse_error(text: str) -> None:
    m = _model_or_parse_error(parse_topo_m, text)
    if m is None:
        return
    assert isinstance(m, TopoMatrix)
    assert m.devices == tuple(sorted(set(m.devices))) and m.devices
    assert set(m.links) == set(m.affinity) == set(m.numa) == set(m.devices)
    for g in m.devices:
        assert g not in m.links[g]
        assert set(m.links[g]) <= set(m.devices)


@_PROPS
@given(_mutated(_NUMACTL_TEXTS))
def test_numactl_mutated_gives_nodes_or_parse_error(text: str) -> None:
    nodes = _model_or_parse_error(parse_numactl_hardware, text)
    if nodes is not None:
        _check_nodes(nodes)
        dist = parse_numactl_distances(text)
        assert not dist or set(dist) == {n.id for n in nodes}


@_PROPS
@given(_mutated(_LSCPU_TEXTS))
def test_lscpu_mutated_gives_nodes_or_parse_error(text: str) -> None:
    nodes = _model_or_parse_error(parse_lscpu_numa, text)
    if nodes is not None:
        _check_nodes(nodes)
        assert all(n.mem_mib is None for n in nodes)


@_PROPS
@given(_mutated(_LSCPU_E_TEXTS))
def test_lscpu_e_mutated_gives_map_or_parse_error(text: str) -> None:
    parsed = _model_or_parse_error(parse_lscpu_e, text)
    if parsed is not None:
        assert parsed and all(n is None or n >= 0 for n in parsed.values())


# Round trip: render a random topology the way nvidia-smi prints it (tabs with padding, or
# expanded to spaces as pasted), parse it back.

_LINK_TYPES = st.sampled_from(["NV18", "NV4", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS"])
_NODE_CELL = st.one_of(st.none(), st.integers(0, 15))


@st.composite
def _rendered_topo(draw: st.DrawFn) -> tuple[str, TopoMatrix, dict[int, int | None]]:
    n = draw(st.integers(1, 8))
    k = draw(st.integers(0, 4))
    pair = {(a, b): draw(_LINK_TYPES) for a in range(n) for b in range(a + 1, n)}
    nic = {(g, i): draw(_LINK_TYPES.filter(lambda t: not t.startswith("NV")))
           for g in range(n) for i in range(k)}  # fmt: skip
    aff = {g: draw(st.one_of(st.none(), st.frozensets(st.integers(0, 255), min_size=1)))
           for g in range(n)}  # fmt: skip
    numa = {g: draw(_NODE_CELL) for g in range(n)}
    gnuma = {g: draw(_NODE_CELL) for g in range(n)}
    names = [f"mlx5_{i}" for i in range(k)]

    def link(a: int, b: int) -> str:
        return " X " if a == b else pair[(min(a, b), max(a, b))]

    def node(v: int | None) -> str:
        return "N/A" if v is None else str(v)

    def pad() -> str:
        return "\t" * draw(st.integers(1, 3))

    columns = [f"GPU{g}" for g in range(n)] + [f"NIC{i}" for i in range(k)]
    out = ["\t" + "\t".join([*columns, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for g in range(n):
        cells = [link(g, h) for h in range(n)] + [nic[(g, i)] for i in range(k)]
        mine = aff[g]
        cpu = "" if mine is None else format_cpulist(mine)
        tail = cpu + pad() + node(numa[g]) + pad() + node(gnuma[g])
        out.append(f"GPU{g}\t" + "\t".join(cells) + "\t" + tail)
    for i in range(k):
        cells = [nic[(g, i)] for g in range(n)] + [" X " if j == i else "PIX" for j in range(k)]
        out.append(f"NIC{i}\t" + "\t".join(cells) + "\t\t\t\t")
    out += ["", "Legend:", "", "  X    = Self"]
    if k:
        out += ["", "NIC Legend:", ""] + [f"  NIC{i}: {names[i]}" for i in range(k)]
    text = "\n".join(out) + "\n"
    if draw(st.booleans()):
        text = "\n".join(line.expandtabs(8) for line in text.split("\n"))
    expected = TopoMatrix(
        devices=tuple(range(n)),
        links={g: {h: link(g, h) for h in range(n) if h != g} for g in range(n)},
        affinity=aff,
        numa=numa,
        nics=tuple(names),
    )
    return text, expected, gnuma


@settings(max_examples=200, deadline=None)
@given(_rendered_topo())
def test_topo_m_round_trip(case: tuple[str, TopoMatrix, dict[int, int | None]]) -> None:
    text, expected, gpu_numa = case
    d = parse_topo_m_details(text)
    assert d.matrix == expected
    assert d.gpu_numa_id == gpu_numa
