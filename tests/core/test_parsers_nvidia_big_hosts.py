"""nvidia-smi topo -m as current drivers and big hosts print it (issue 18, item 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.parsers.nvidia_smi import parse_topo_m_details

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nvidia"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_an_ansi_underlined_header_parses() -> None:
    d = parse_topo_m_details(fixture("topo_m_ansi_header.txt"))
    assert d.matrix.devices == (0, 1)
    assert d.matrix.affinity[0] == parse_cpulist("0-31,64-95")
    assert d.matrix.links[0][1] == "NV18" and d.matrix.nics == ("mlx5_0", "mlx5_1")


def test_cells_run_together_on_16_nic_hosts_are_split() -> None:
    d = parse_topo_m_details(fixture("topo_m_16nic_cells_run_together.txt"))
    assert d.matrix.devices == (0, 1)
    g0 = [d.nic_links[0][f"mlx5_{i}"] for i in range(16)]
    assert g0 == ["PXB", "PXB", "NODE", "NODE", "NODE", "NODE", "NODE", "NODE"] + ["SYS"] * 8
    g1 = [d.nic_links[1][f"mlx5_{i}"] for i in range(16)]
    assert g1 == ["SYS"] * 8 + ["PXB", "PXB", "NODE", "NODE", "NODE", "NODE", "NODE", "NODE"]
    assert d.matrix.affinity == {0: parse_cpulist("0-31,64-95"), 1: parse_cpulist("32-63,96-127")}
    assert d.matrix.numa == {0: 0, 1: 1}


def test_a_last_nic_cell_run_into_the_affinity_is_split() -> None:
    d = parse_topo_m_details(fixture("topo_m_last_nic_into_affinity.txt"))
    assert d.nic_links[0] == {"NIC0": "NODE", "NIC1": "PHB"}
    assert d.matrix.affinity[0] == parse_cpulist("0-115")
    assert d.matrix.numa[0] == 0


def test_a_cut_cell_run_into_the_affinity_is_refused_never_read_as_another_affinity() -> None:
    with pytest.raises(ParseError, match=r"row GPU0: cell 'PH0-115'") as e:
        parse_topo_m_details(fixture("topo_m_last_nic_cut_into_affinity.txt"))
    assert e.value.exit_code == 5 and e.value.line == 2


def test_an_ambiguous_split_is_refused_naming_the_row() -> None:
    with pytest.raises(ParseError, match=r"row GPU0: cell 'NV180-255' splits .* more than one way"):
        parse_topo_m_details(fixture("topo_m_ambiguous_run_together.txt"))


@pytest.mark.parametrize(
    "seq", ["\x1b[1m", "\x1b[0m", "\x1b[38;5;196m", "\x1b]0;title\x07", "\x1b(B"]
)
def test_escape_sequences_anywhere_are_ignored(seq: str) -> None:
    text = fixture("topo_m_ansi_header.txt").replace("GPU1\t", f"GPU1{seq}\t", 1)
    assert parse_topo_m_details(text).matrix.devices == (0, 1)
