"""The synthetic-host kit's text parses like the real tools' output (samples read in place), so
do the GPU hosts the tests build (tests/support/gpu_hosts.py), its archives are deterministic,
and the standard hosts read back as their specs say."""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from ascendtune.core.parsers.npu_smi import parse_board, parse_info, parse_info_m
from ascendtune.core.parsers.numa_tools import parse_lscpu_numa, parse_numactl_hardware
from ascendtune.core.parsers.nvidia_smi import parse_topo_m, parse_topo_m_details
from ascendtune.core.vendors.ascend import positional_rows
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, MemRoot
from ascendtune.synth import standard, text
from ascendtune.synth.expect import expected_host
from ascendtune.synth.render import render
from ascendtune.synth.spec import Chip, HostSpec, NpuProcess
from tests.support.builder import SysrootBuilder
from tests.support.gpu_hosts import (
    H100_SAMPLE,
    SLURM_SAMPLE,
    Gpu,
    gh200,
    interleaved,
    read,
    topo_m_text,
)
from tests.support.samples import sample


def test_info_m_with_phy_id_parses_like_the_sample() -> None:
    real = parse_info_m(sample("npu-smi_info_-m__with_Chip_Phy-ID__vllm-ascend-ut.txt"))
    chips = [Chip(0, d, d, "Ascend", "") for d in range(2)]
    mine = parse_info_m(text.info_m(chips, phy_col=True))
    assert [(c.npu_id, c.chip_id, c.logical_id, c.phy_id) for c in mine] == [
        (c.npu_id, c.chip_id, c.logical_id, c.phy_id) for c in real
    ][: len(mine)]


def test_info_m_without_logic_id_parses_like_the_ascend_950_sample() -> None:
    real = parse_info_m(sample("npu-smi_info_-m__ascend950_no_logic_id__vllm-ascend-ut.txt"))
    chips = [Chip(i, 0, i, "Ascend950DT", "") for i in range(len(real))]
    mine = parse_info_m(text.info_m(chips, logic_col=False, phy_col=True))
    assert mine == real


def test_the_950_map_with_slot_id_reads_by_position_like_the_sample() -> None:
    """The releases up to 0.21.0rc1 read `info -m` by position: the synthetic Slot ID layout
    must give them the very cells the real one does."""
    raw = sample("npu-smi_info_-m__ascend950_no_logic_id__vllm-ascend-ut.txt")
    real = parse_info_m(raw)
    chips = [Chip(i, 0, i, "Ascend950DT", "") for i in range(len(real))]
    mine = text.info_m(chips, logic_col=False, phy_col=True, slot_col=True)
    assert parse_info_m(mine) == real
    assert positional_rows(mine) == positional_rows(raw)
    assert positional_rows(raw)[1] == ("1", "1", "0", "1", "Ascend950DT")


def test_the_process_table_keyed_by_npu_id_parses_like_the_950_sample() -> None:
    real = parse_info(sample("npu-smi_info__process_table_npu_id_only__vllm-ascend-ut.txt"))
    assert real.procs_by_chip is False
    chips = [Chip(i, 0, i, "Ascend950DT", f"0000:0{i + 1}:00.0") for i in range(2)]
    procs = [NpuProcess(p.npu_id, 0, p.pid, p.name, int(p.mem_mib or 0)) for p in real.processes]
    mine = parse_info(text.info_hbm("25.5.0", chips, procs, a3=False, npu_id_procs=True))
    assert mine.processes == real.processes and mine.procs_by_chip is False
    chip_col = parse_info(sample("npu-smi_info__process_table_npu_chip__vllm-ascend-ut.txt"))
    assert chip_col.procs_by_chip is True


def test_process_table_parses_like_the_sample() -> None:
    real = parse_info(sample("npu-smi_info__process_table_npu_chip__vllm-ascend-ut.txt"))
    chips = [Chip(i, 0, i, "910B3", f"0000:0{i + 1}:00.0") for i in range(2)]
    procs = [
        NpuProcess(p.npu_id, p.chip_id or 0, p.pid, p.name, int(p.mem_mib or 0))
        for p in real.processes
    ]
    mine = parse_info(text.info_hbm("24.1.rc1", chips, procs, a3=False))
    assert mine.processes == real.processes


@pytest.mark.parametrize("layout", ["a2", "a3", "310p"])
def test_every_info_layout_parses_its_chips_and_processes(layout: str) -> None:
    spec = standard.atlas_800i_a2()
    assert spec.npu_smi is not None
    procs = (NpuProcess(3, 0, 4242, "VLLMWorker", 1234),)
    smi = replace(spec.npu_smi, layout=layout, processes=procs)  # type: ignore[arg-type]
    info = parse_info(text.npu_smi_info(smi))
    assert [(d.npu_id, d.chip_id, d.name, d.bus_id) for d in info.devices] == [
        (c.npu_id, c.chip_id, c.name, c.bus.lower()) for c in smi.chips
    ]
    assert [(p.npu_id, p.pid, p.name, p.mem_mib) for p in info.processes] == [
        (3, 4242, "VLLMWorker", 1234)
    ]


def test_board_parses_to_the_chip() -> None:
    chip = Chip(2, 0, 2, "910B3", "0000:81:00.0")
    [block] = parse_board(text.board(chip))
    assert block["NPU ID"] == "2" and block["Chip ID"] == "0"
    assert block["Chip Name"] == "910B3" and block["PCIe Bus Info"] == "0000:81:00.0"


def test_board_files_are_written_per_chip() -> None:
    spec = standard.atlas_800i_a2()
    assert spec.npu_smi is not None
    tree = render(replace(spec, npu_smi=replace(spec.npu_smi, board=True)))
    assert "commands/npu-smi_info_-t_board_-i_7_-c_0.txt" in tree.files


def test_archive_is_deterministic_with_fixed_stamps() -> None:
    tree = render(standard.demo_container_a2_half("demo"))
    data = tree.tar()
    assert data == render(standard.demo_container_a2_half("demo")).tar()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {
        (0, 0, 0, "root", "root")
    }
    assert any(m.issym() and m.name.endswith("/fd/27") for m in members)
    assert tree.tar_gz()[4:8] == b"\0\0\0\0"  # gzip mtime 0


def test_folder_mapping_and_links_hold_the_same_host(tmp_path: Path) -> None:
    tree = render(standard.demo_container_a2_half("demo"))
    root = tree.write(tmp_path / "host")
    assert (root / "proc/3418790/fd/27").readlink() == Path("/dev/davinci4")
    files = {p: b.decode() for p, b in tree.mapping().items()}
    assert read_host(DirRoot(root)) == read_host(MemRoot(files, tree.links))


@pytest.mark.parametrize(
    "spec",
    [
        standard.atlas_800i_a2(),
        standard.atlas_800i_a2(allowed="0-23", pci=False, topology=False),
        standard.atlas_800i_a3(),
        standard.atlas_300i_duo(),
        standard.ascend_950(),
    ],
    ids=["a2", "a2-bare", "a3", "300i-duo", "950"],
)
def test_standard_hosts_read_back_as_specified(spec: HostSpec) -> None:
    tree = render(spec)
    files = {p: b.decode() for p, b in tree.mapping().items()}
    assert read_host(MemRoot(files, tree.links)) == expected_host(spec)


def test_dgx_h100_reads_eight_gpus_on_two_nodes() -> None:
    tree = render(standard.dgx_h100())
    host = read_host(MemRoot({p: b.decode() for p, b in tree.mapping().items()}, tree.links))
    assert [g.numa_node for g in host.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert host.links[0][7] == "NV18" and not host.notes


# ---------------------------------------------------------------- GPU hosts (tests/support/gpu_hosts.py)


def test_written_text_parses_like_the_h100_sample() -> None:
    real = parse_topo_m(sample(H100_SAMPLE))
    gpus = [Gpu(g // 4, "0-55,112-167" if g < 4 else "56-111,168-223") for g in range(8)]
    mine = parse_topo_m(topo_m_text(gpus))
    assert (mine.devices, mine.links, mine.affinity, mine.numa) == (
        real.devices,
        real.links,
        real.affinity,
        real.numa,
    )


def test_written_text_keeps_empty_cells_like_the_slurm_sample() -> None:
    real = parse_topo_m_details(sample(SLURM_SAMPLE))
    gpus = [Gpu(g // 4, "x", shown="" if g < 4 else "1") for g in range(8)]
    mine = parse_topo_m_details(topo_m_text(gpus))
    assert mine.matrix.affinity == real.matrix.affinity
    assert mine.matrix.numa == real.matrix.numa
    assert mine.gpu_numa_id == real.gpu_numa_id


def test_interleaved_host_matches_the_numactl_sample(tmp_path: Path) -> None:
    """The della H100 host (numactl -H sample) numbers node 0 even, node 1 odd, as built here."""
    real = parse_numactl_hardware(sample("numactl_H_2socket_interleaved_numbering_h100_host.txt"))
    host = read(interleaved(SysrootBuilder(tmp_path)))
    for node, built in zip(real, host.numa_nodes, strict=True):
        assert {c % 2 for c in node.cpus} == {c % 2 for c in built.cpus} == {node.id}


def test_gh200_host_matches_the_lscpu_sample(tmp_path: Path) -> None:
    real = parse_lscpu_numa(sample("lscpu_numa_section_gh200_cpuless_gpu_nodes.txt"))
    host = read(gh200(SysrootBuilder(tmp_path)))
    assert [(n.id, n.cpus) for n in real] == [(n.id, n.cpus) for n in host.numa_nodes]
