"""npu-smi parsers: real samples (read in place), hand-written fixtures, and mutated text."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import AccelProcess, NpuChip, NpuInfo, NpuInfoRow, TopoMatrix
from ascendtune.core.parsers.npu_smi import (
    SRC_BOARD,
    SRC_INFO,
    SRC_INFO_M,
    SRC_TOPO,
    parse_board,
    parse_info,
    parse_info_m,
    parse_topo,
)
from tests.support.samples import sample, sample_files

FIXTURES = Path(__file__).parents[1] / "fixtures" / "npu_smi"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def cpus(text: str) -> frozenset[int]:
    return parse_cpulist(text)


def all_links(text: str) -> set[str]:
    topo = parse_topo(text)
    return {t for row in topo.links.values() for t in row.values()}


# ---------------------------------------------------------------- npu-smi info -t topo


def test_topo_910b3x8_pairs_share_affinity_all_hccs() -> None:
    text = sample("npu-smi_info_t_topo_910B3x8.txt")
    topo = parse_topo(text)
    assert topo.supported
    assert topo.devices == (0, 1, 2, 3, 4, 5, 6, 7)
    assert topo.affinity[0] == topo.affinity[1] == cpus("144-167")
    assert topo.affinity[2] == topo.affinity[3] == cpus("96-119")
    assert topo.affinity[4] == topo.affinity[5] == cpus("0-23")
    assert topo.affinity[6] == topo.affinity[7] == cpus("48-71")
    assert all_links(text) == {"HCCS"}
    # self links are not stored; every other pair is
    assert all(a not in topo.links[a] and len(topo.links[a]) == 7 for a in topo.devices)
    assert topo.nics == ()


def test_topo_ms_swift_copy_with_tab_header() -> None:
    topo = parse_topo(sample("npu-smi_info_-t_topo__910B3_8npu__ms-swift.txt"))
    assert topo.affinity[4] == topo.affinity[5] == cpus("0-23")
    assert topo.links[7][0] == "HCCS"


def test_topo_910b1_nonmonotonic_header_without_leading_space() -> None:
    topo = parse_topo(sample("npu-smi_info_t_topo_910B1x8_nonmonotonic.txt"))
    assert topo.affinity[0] == cpus("144-167")
    assert topo.affinity[1] == cpus("0-23")
    assert topo.affinity[4] == topo.affinity[6] == cpus("96-119")
    assert topo.affinity[5] == topo.affinity[7] == cpus("48-71")


def test_topo_interleaved_affinity() -> None:
    topo = parse_topo(
        sample("npu-smi_info_-t_topo__8npu_interleaved_affinity__openyuanrong-fixture.txt")
    )
    assert [topo.affinity[n] for n in (0, 2)] == [cpus("144-167")] * 2
    assert [topo.affinity[n] for n in (1, 3)] == [cpus("0-23")] * 2
    assert topo.links[3][5] == "HCCS"


def test_topo_pxb_four_npus_truncated_legend() -> None:
    topo = parse_topo(sample("npu-smi_info_-t_topo__4npu_PXB_truncated__openyuanrong-fixture.txt"))
    assert topo.devices == (0, 1, 2, 3)
    assert topo.links[0] == {1: "PXB", 2: "SYS", 3: "PXB"}
    assert topo.links[2][0] == "SYS"
    assert topo.affinity == {
        0: cpus("144-167"),
        1: cpus("96-119"),
        2: cpus("48-71"),
        3: cpus("0-23"),
    }


def test_topo_ub_matrix_with_nic_and_no_affinity() -> None:
    topo = parse_topo(sample("npu-smi_info_-t_topo__ub_matrix_no_cpu_affinity__vllm-ascend-ut.txt"))
    assert topo.devices == (0, 1)
    assert topo.links == {0: {1: "UB"}, 1: {0: "UB"}}
    assert topo.affinity == {0: None, 1: None}
    assert topo.nics == ("NIC0",)


def test_topo_unsupported() -> None:
    topo = parse_topo(sample("npu-smi_info_-t_topo__unsupported__openyuanrong-fixture.txt"))
    assert not topo.supported
    assert topo.devices == () and dict(topo.links) == {} and dict(topo.affinity) == {}


def test_topo_other_link_types_and_empty_affinity_cell() -> None:
    text = (
        "        NPU0    NPU1    NPU2    CPU Affinity\n"
        "NPU0     X      SIO     HCCS_SW 0-39\n"
        "NPU1    SIO      X      HCCS_SW\n"
        "NPU2    HCCS_SW HCCS_SW  X      40-79\n"
    )
    topo = parse_topo(text)
    assert topo.links[0] == {1: "SIO", 2: "HCCS_SW"}
    assert topo.affinity == {0: cpus("0-39"), 1: None, 2: cpus("40-79")}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "empty output", None),
        ("\n\n", "empty output", None),
        (
            "  NPU0 NPU1 CPU Affinity\nNPU0 X HCCS 0-3\nNPU1 HCCS 4-7\n",
            "row 'NPU1' has 1 link cells, header has 2 devices",
            3,
        ),
        (
            "  NPU0 NPU1 NPU2 NPU3 CPU Affinity\nNPU0 X HCCS HCCS 0-3\n",
            "row 'NPU0' has 3 link cells, header has 4 devices",
            2,
        ),
        ("  NPU0 NPU1\nNPU0 X HCCS\n", "matrix ends without rows for NPU1", 2),
        ("  NPU0 NPU1\nNPU0 X HCCS\nNPU0 X HCCS\n", "row 'NPU0' appears twice", 3),
        ("  NPU0 NPU1\nNPU0 X HCCS\nNPU2 HCCS X\n", "row label 'NPU2'", 3),
        ("  NPU0 NPU1\nNPU0 HCCS X\nNPU1 HCCS X\n", "'X' must mark exactly the device", 2),
        ("  NPU0 NPU1 CPU Affinity\nNPU0 X HCCS 9-3\nNPU1 HCCS X 0\n", "not a cpulist", 2),
        ("  NPU0 NPUx CPU Affinity\n", "header cell 'NPUx'", 1),
        ("  NPU0 NPU00\n", "header names NPU00 twice", 1),
        ("  NPU0 NPU1\nNPU0 X 3\nNPU1 HCCS X\n", "'3' is not a link type", 2),
    ],
)
def test_topo_errors(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError) as err:
        parse_topo(text)
    assert message in str(err.value)
    assert err.value.source == "npu-smi info -t topo"
    assert err.value.line == line


# ---------------------------------------------------------------- npu-smi info


def test_info_910b3x8_bus_ids_lower_case_and_version() -> None:
    info = parse_info(sample("npu-smi_info_910B3x8.txt"))  # starts with a shell prompt line
    assert info.version == "24.1.rc1.b030"
    assert [d.npu_id for d in info.devices] == list(range(8))
    assert [d.bus_id for d in info.devices] == [
        f"0000:{b}:00.0" for b in ("c1", "c2", "81", "82", "01", "02", "41", "42")
    ]
    assert {d.name for d in info.devices} == {"910B3"}
    assert {d.health for d in info.devices} == {"OK"}
    assert all(d.chip_id == 0 and d.logical_id is None for d in info.devices)
    assert info.processes == ()


def test_info_ms_swift_copy_matches_prompted_copy() -> None:
    a = parse_info(sample("npu-smi_info__910B3_8npu_24.1.rc1__ms-swift.txt"))
    b = parse_info(sample("npu-smi_info_910B3x8.txt"))
    assert a == b


def test_info_910a_warning_and_no_running_processes() -> None:
    info = parse_info(
        sample("npu-smi_info__910A_4npu_23.0.rc1_no_processes__openyuanrong-fixture.txt")
    )
    assert info.version == "23.0.rc1.b070"
    assert info.devices[0] == NpuInfoRow(
        npu_id=0, chip_id=0, name="910A", health="Warning", bus_id="0000:c1:00.0"
    )
    assert [d.bus_id for d in info.devices][1:] == ["0000:81:00.0", "0000:41:00.0", "0000:01:00.0"]
    assert info.processes == ()


def test_info_two_visible_with_vllm_process() -> None:
    info = parse_info(
        sample("npu-smi_info__910B3_2visible_with_process_25.5.1__sciencediscovery.txt")
    )
    assert info.version == "25.5.1"
    assert [(d.npu_id, d.bus_id) for d in info.devices] == [
        (0, "0000:c1:00.0"),
        (5, "0000:02:00.0"),
    ]
    assert info.processes == (
        AccelProcess(npu_id=5, chip_id=0, pid=2290156, name="VLLMEngineCore", mem_mib=56630.0),
    )


def test_info_process_table_npu_chip_only() -> None:
    info = parse_info(sample("npu-smi_info__process_table_npu_chip__vllm-ascend-ut.txt"))
    assert info.version is None and info.devices == ()
    assert [(p.npu_id, p.chip_id, p.pid, p.name, p.mem_mib) for p in info.processes] == [
        (0, 0, 3428811, "python3.10", 56600.0),
        (1, 0, 3428818, "python3.10", 56474.0),
    ]


def test_info_process_table_npu_id_only_has_no_chip() -> None:
    info = parse_info(sample("npu-smi_info__process_table_npu_id_only__vllm-ascend-ut.txt"))
    assert [(p.npu_id, p.chip_id, p.pid, p.name) for p in info.processes] == [
        (0, None, 2018733, "VLLMWorker_TP"),
        (1, None, 2018734, "VLLMWorker_TP"),
    ]


def test_info_310p_duo_device_column_is_logical_id_and_ids_are_sparse() -> None:
    info = parse_info(fixture("info_310p3_atlas300i_duo_4cards.txt"))
    assert info.version == "24.1.rc2"
    cards = [1, 1, 2, 2, 4, 4, 8, 8]
    assert [d.npu_id for d in info.devices] == cards
    assert [d.chip_id for d in info.devices] == [0, 1] * 4
    assert [d.logical_id for d in info.devices] == list(range(8))
    # both chips of a Duo card sit behind one PCI function
    assert [d.bus_id for d in info.devices[6:]] == ["0000:c1:00.0", "0000:c1:00.0"]
    assert {d.name for d in info.devices} == {"310P3"}
    assert [d.health for d in info.devices[4:6]] == ["Warning", "Warning"]
    assert [(p.npu_id, p.chip_id, p.pid, p.mem_mib) for p in info.processes] == [
        (2, 0, 812204, 13760.0),
        (2, 1, 812209, 13652.0),
    ]


def test_info_a3_two_dies_per_card_phy_id_is_not_a_logical_id() -> None:
    info = parse_info(fixture("info_a3_atlas800i_8cards.txt"))
    assert info.version == "25.2.1"
    assert len(info.devices) == 16
    assert [(d.npu_id, d.chip_id) for d in info.devices[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [d.bus_id for d in info.devices[:4]] == [
        "0000:9d:00.0",
        "0000:9f:00.0",
        "0000:99:00.0",
        "0000:9b:00.0",
    ]
    assert {d.name for d in info.devices} == {"Ascend910"}
    # "Phy-ID" is the physical die number, which a container does not renumber: not logical
    assert all(d.logical_id is None for d in info.devices)
    # the newer process table adds "Process id in container"; the host pid is what we keep
    assert len(info.processes) == 8
    assert info.processes[1] == AccelProcess(
        npu_id=0, chip_id=1, pid=3381027, name="VLLMWorker_DP", mem_mib=56251.0
    )


def test_info_process_memory_in_bytes_is_converted_to_mib() -> None:
    text = (
        "| NPU     Chip         | Process id    | Process name             | Process memory(B)       |\n"
        "| 0       0            | 4242          | python                   | 3145728                 |\n"
    )
    (proc,) = parse_info(text).processes
    assert proc.mem_mib == pytest.approx(3.0)


def test_info_chip_device_header_on_two_chip_card_sets_logical_id_none_for_dash() -> None:
    text = (
        "| NPU     Name                  | Health          | Power(W)     Temp(C)   |\n"
        "| Chip    Device                | Bus-Id          | AICore(%)    Memory    |\n"
        "| 3       310P3                 | Alarm           | NA           45        |\n"
        "| 0       -                     | NA              | 0            1 / 2     |\n"
    )
    (row,) = parse_info(text).devices
    assert row == NpuInfoRow(
        npu_id=3, chip_id=0, name="310P3", health="Alarm", bus_id=None, logical_id=None
    )


_INFO_HEAD = (
    "| npu-smi 24.1.rc1   Version: 24.1.rc1 |\n"
    "| NPU   Name   | Health  | Power(W)  |\n"
    "| Chip         | Bus-Id  | AICore(%) |\n"
)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "empty output", None),
        ("\n  \n", "empty output", None),
        ("$ npu-smi info\n", "empty output", None),
        ("hello\n", "not part of an npu-smi table", 1),
        (_INFO_HEAD, "device table has no rows", None),
        (_INFO_HEAD + "| 0  910B3 | OK | 1 |\n", "before the 'Chip | Bus-Id' line of NPU 0", 4),
        (_INFO_HEAD + "| 0  910B3 | OK | 1 |\n+====+\n", "NPU 0 has no 'Chip | Bus-Id' line", 5),
        (_INFO_HEAD + "| 0  910B3 | OK |\n", "device row has 2 cells, header has 3", 4),
        (_INFO_HEAD + "| x  910B3 | OK | 1 |\n", "NPU id 'x' is not a number", 4),
        (_INFO_HEAD + "| 0  910B3 | OK | 1 |\n| 0 | C1:00 | 0 |\n", "is not a PCI address", 5),
        (
            _INFO_HEAD + "| 0  910B3 | OK | 1 |\n| 0 | 0000:C1:00.0 | 0 |\n" * 2,
            "NPU 0 chip 0 listed twice",
            7,
        ),
        (
            "| NPU  Chip | Process id | Process name | Process memory(MB) |\n| 0 0 | 12 | py |\n",
            "process row has 3 cells, header has 4",
            2,
        ),
        (
            "| NPU  Chip | Process id | Process name | Process memory(MB) |\n"
            "| 0 0 | 12 | py | lots |\n",
            "process memory 'lots' is not a number",
            2,
        ),
        (
            "| NPU  Chip | Process id | Process name | Process memory(MB) |\n| 0 | 12 | py | 1 |\n",
            "expected '<npu> <chip>'",
            2,
        ),
    ],
)
def test_info_errors(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError) as err:
        parse_info(text)
    assert message in str(err.value)
    assert err.value.source == "npu-smi info"
    assert err.value.line == line


# ---------------------------------------------------------------- npu-smi info -m


def test_info_m_910b3_first_two_cards_with_mcu_rows() -> None:
    chips = parse_info_m(sample("npu-smi_info_-m__910B3_first2cards__sciencediscovery.txt"))
    assert chips == (
        NpuChip(npu_id=0, chip_id=0, logical_id=0, name="Ascend 910B3"),
        NpuChip(npu_id=0, chip_id=1, logical_id=None, name="Mcu"),
        NpuChip(npu_id=1, chip_id=0, logical_id=1, name="Ascend 910B3"),
        NpuChip(npu_id=1, chip_id=1, logical_id=None, name="Mcu"),
    )


def test_info_m_a2_compact_single_spaced_rows() -> None:
    chips = parse_info_m(sample("npu-smi_info_-m__a2_compact__vllm-ascend-ut.txt"))
    assert [(c.npu_id, c.chip_id, c.logical_id, c.name) for c in chips] == [
        (0, 0, 0, "Ascend"),
        (0, 1, None, "Mcu"),
        (1, 0, 1, "Ascend"),
    ]


def test_info_m_ascend950_without_logic_id_uses_npu_id() -> None:
    chips = parse_info_m(sample("npu-smi_info_-m__ascend950_no_logic_id__vllm-ascend-ut.txt"))
    assert [(c.npu_id, c.chip_id, c.logical_id, c.phy_id, c.name) for c in chips] == [
        (0, 0, 0, 0, "Ascend950DT"),
        (1, 0, 1, 1, "Ascend950DT"),
        (2, 0, 2, 2, "Ascend950DT"),
    ]


def test_info_m_with_chip_phy_id_column() -> None:
    chips = parse_info_m(sample("npu-smi_info_-m__with_Chip_Phy-ID__vllm-ascend-ut.txt"))
    assert chips == (
        NpuChip(npu_id=0, chip_id=0, logical_id=0, name="Ascend", phy_id=0),
        NpuChip(npu_id=0, chip_id=1, logical_id=1, name="Ascend", phy_id=1),
        NpuChip(npu_id=0, chip_id=2, logical_id=None, name="Mcu", phy_id=None),
    )


def test_info_m_a3_sixteen_logical_ids() -> None:
    chips = parse_info_m(fixture("info_-m_a3_atlas800i_8cards.txt"))
    npus = [c for c in chips if c.logical_id is not None]
    assert [c.logical_id for c in npus] == list(range(16))
    assert [(c.npu_id, c.chip_id) for c in npus[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert all(c.phy_id == c.logical_id and c.name == "Ascend910" for c in npus)
    assert [c.chip_id for c in chips if c.name == "Mcu"] == [2] * 8


def test_info_m_310p_duo_sparse_npu_ids() -> None:
    chips = parse_info_m(fixture("info_-m_310p3_atlas300i_duo_4cards.txt"))
    npus = [c for c in chips if c.name != "Mcu"]
    assert [(c.npu_id, c.chip_id) for c in npus] == [(n, k) for n in (1, 2, 4, 8) for k in (0, 1)]
    assert [c.logical_id for c in npus] == list(range(8))
    assert {c.name for c in chips} == {"Ascend 310P3", "Mcu"}


def test_info_m_mcu_without_logic_column_has_no_logical_id() -> None:
    chips = parse_info_m("NPU ID  Chip ID  Chip Name\n0 0 Ascend950DT\n0 1 Mcu\n")
    assert [c.logical_id for c in chips] == [0, None]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "empty output", None),
        ("0 0 0 Ascend\n", "expected the header line with 'NPU ID' and 'Chip Name'", 1),
        ("NPU ID  Chip ID  Chip Logic ID  Chip Name\n", "no chip rows after the header", 1),
        ("NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0\n", "row has 2 cells, header has 4", 2),
        ("NPU ID  Chip ID  Chip Logic ID  Chip Name\nA 0 0 Ascend\n", "NPU ID 'A'", 2),
        ("NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0 x Ascend\n", "Chip Logic ID 'x'", 2),
        (
            "NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0 0 Ascend\n1 0 0 Ascend\n",
            "logical id 0 listed twice",
            3,
        ),
        (
            "NPU ID  Chip ID  Chip Logic ID  Chip Name\n0 0 0 Ascend\n0 0 1 Ascend\n",
            "NPU 0 chip 0 listed twice",
            3,
        ),
        ("NPU ID  Chip Name  Chip ID\n", "'Chip Name' is not the last column", 1),
        ("NPU ID  Chip Name\n", "header has no 'Chip ID' column", 1),
    ],
)
def test_info_m_errors(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError) as err:
        parse_info_m(text)
    assert message in str(err.value)
    assert err.value.source == "npu-smi info -m"
    assert err.value.line == line


# ---------------------------------------------------------------- npu-smi info -t board


def test_board_doc_examples_two_blocks() -> None:
    blocks = parse_board(
        sample("npu-smi_info_-t_board_-i_N_-c_M__doc_examples_indented__gpustack.txt")
    )
    assert len(blocks) == 2
    first, second = blocks
    assert first["NPU ID"] == "0" and first["Chip ID"] == "0"
    assert first["PCIe Bus Info"] == "0000:81:00.0"  # a value holding colons stays whole
    assert first["VDie ID"] == "901421D4 02103514 1711E613 6DA7040A 00102001"
    assert first["Firmware Version"] == "7.1.0.4.218"
    assert second["NPU ID"] == "1" and second["Board ID"] == "0x64"
    assert "VDie ID" not in second and second["Die ID"].startswith("409921D4")


def test_board_single_block() -> None:
    text = "NPU ID : 0\nProduct Name : IT21PD2G10\nPCI Device ID : 0xD500\nChip Count : 2\n"
    assert parse_board(text) == [
        {"NPU ID": "0", "Product Name": "IT21PD2G10", "PCI Device ID": "0xD500", "Chip Count": "2"}
    ]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "empty output", None),
        ("# only a comment\n", "no 'Key : value' lines", None),
        ("NPU ID : 0\nno colon here\n", "expected 'Key : value'", 2),
        ("NPU ID : 0\nChip ID : 0\nChip ID : 1\n", "'Chip ID' appears twice", 3),
    ],
)
def test_board_errors(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError) as err:
        parse_board(text)
    assert message in str(err.value)
    assert err.value.line == line


# ---------------------------------------------------------------- mutated text never crashes

Parser = Callable[[str], object]


def _corpus() -> list[tuple[Parser, str]]:
    out: list[tuple[Parser, str]] = [
        (parse_info, fixture("info_310p3_atlas300i_duo_4cards.txt")),
        (parse_info, fixture("info_a3_atlas800i_8cards.txt")),
        (parse_info_m, fixture("info_-m_a3_atlas800i_8cards.txt")),
        (parse_info_m, fixture("info_-m_310p3_atlas300i_duo_4cards.txt")),
    ]
    for path in sample_files("npu-smi*"):
        name = path.name
        parser: Parser
        if "board" in name:
            parser = parse_board
        elif "topo" in name:
            parser = parse_topo
        elif "_-m_" in name:
            parser = parse_info_m
        else:
            parser = parse_info
        out.append((parser, path.read_text()))
    return out


CORPUS = _corpus()


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Parser, str]:
    parser, text = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        lines = text.split("\n")
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "replace"]))
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        if op in ("delete", "duplicate", "swap"):
            text = "\n".join(lines)
        elif op == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif text:
            at = draw(st.integers(0, len(text) - 1))
            ch = draw(st.one_of(st.sampled_from(list("|+-= \t\n0123456789XN:/.")), st.characters()))
            text = text[:at] + ch + text[at + 1 :]
    return parser, text


# What any parse that does not raise must give, whatever the text: ids are npu-smi's unsigned
# numbers, a (card, chip) pair is listed once, names and cells never carry a table bar, ...
_BUS = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def _uint(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**9


def _cell(v: object) -> bool:
    return isinstance(v, str) and v == v.strip() and "|" not in v and "\n" not in v


def _sound_info(info: NpuInfo) -> None:
    assert isinstance(info, NpuInfo)
    pairs = [(d.npu_id, d.chip_id) for d in info.devices]
    assert len(pairs) == len(set(pairs)), "a (card, chip) pair listed twice"
    for d in info.devices:
        assert _uint(d.npu_id) and _uint(d.chip_id)
        assert d.name and _cell(d.name)
        assert d.health is None or (d.health and _cell(d.health))
        assert d.bus_id is None or _BUS.fullmatch(d.bus_id), d.bus_id
        assert d.logical_id is None or _uint(d.logical_id)
        assert d.phy_id is None  # A3's Phy-ID is not kept as any id
    for p in info.processes:
        assert _uint(p.npu_id) and _uint(p.pid)
        assert p.chip_id is None or _uint(p.chip_id)
        assert _cell(p.name)
        assert p.mem_mib is None or (p.mem_mib >= 0 and math.isfinite(p.mem_mib))


def _sound_info_m(chips: tuple[NpuChip, ...]) -> None:
    assert isinstance(chips, tuple) and chips, "no rows is an error, never an empty answer"
    pairs = [(c.npu_id, c.chip_id) for c in chips]
    assert len(pairs) == len(set(pairs))
    logical = [c.logical_id for c in chips if c.logical_id is not None]
    assert len(logical) == len(set(logical)), "two chips with one logical id"
    for c in chips:
        assert _uint(c.npu_id) and _uint(c.chip_id)
        assert c.logical_id is None or _uint(c.logical_id)
        assert c.phy_id is None or _uint(c.phy_id)
        assert c.name and c.name == " ".join(c.name.split())


def _sound_topo(topo: TopoMatrix) -> None:
    assert isinstance(topo, TopoMatrix)
    if not topo.supported:
        assert topo.devices == () and not topo.links and not topo.affinity
        return
    assert topo.devices and len(topo.devices) == len(set(topo.devices))
    assert set(topo.links) == set(topo.affinity) == set(topo.devices)
    for npu, row in topo.links.items():
        assert npu not in row and set(row) <= set(topo.devices)
        assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", t) and t != "X" for t in row.values())
    for cpus_of in topo.affinity.values():
        assert cpus_of is None or all(_uint(c) for c in cpus_of)
    assert all(re.fullmatch(r"NIC[0-9]+", n) for n in topo.nics)


def _sound_board(blocks: list[dict[str, str]]) -> None:
    assert isinstance(blocks, list) and blocks and all(blocks)
    for i, block in enumerate(blocks):
        assert i == 0 or next(iter(block)) == "NPU ID", "a new block starts at its NPU ID"
        for key, value in block.items():
            assert key and key == key.strip() and ":" not in key
            assert value == value.strip()


SOUND: dict[Parser, Callable[[Any], None]] = {
    parse_info: _sound_info,
    parse_info_m: _sound_info_m,
    parse_topo: _sound_topo,
    parse_board: _sound_board,
}
SOURCE = {
    parse_info: SRC_INFO,
    parse_info_m: SRC_INFO_M,
    parse_topo: SRC_TOPO,
    parse_board: SRC_BOARD,
}


def model_or_parse_error(parser: Parser, text: str) -> str:
    """Parse; a model must be sound, an error must name its command and a line of the text.
    Which of the two it was ("model", "error"), for the caller's statistics."""
    try:
        got = parser(text)
    except ParseError as e:
        assert e.source == SOURCE[parser], e
        assert e.line is None or 1 <= e.line <= text.count("\n") + 1, (e.line, e)
        assert str(e).startswith(SOURCE[parser])
        return "error"
    SOUND[parser](got)
    return "model"


def test_every_fixture_and_sample_of_the_corpus_is_a_sound_model() -> None:
    # unmutated, the corpus parses: the mutations below start from sound models
    for parser, text in CORPUS:
        assert model_or_parse_error(parser, text) == "model"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_output_gives_a_model_or_parse_error(case: tuple[Parser, str]) -> None:
    parser, text = case
    event(model_or_parse_error(parser, text))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_gives_a_model_or_parse_error(text: str) -> None:
    for parser in (parse_info, parse_info_m, parse_topo, parse_board):
        model_or_parse_error(parser, text)
