"""The host reader on sysroot trees laid out per SPEC.md section 2."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, ParseError
from ascendtune.core.model import Soc, Source, Vendor
from ascendtune.host import pci
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, open_root
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import (
    A2_AFFINITY,
    A2_NODE,
    atlas_a2,
    npu_smi_info,
    npu_smi_m,
    npu_smi_topo,
)
from tests.support.samples import sample


def host_of(b: SysrootBuilder) -> Any:
    return read_host(DirRoot(b.root))


def test_a2_host(sysroot: SysrootBuilder) -> None:
    host = host_of(atlas_a2(sysroot))
    assert len(host.npus) == 8
    assert host.soc is Soc.A2
    assert format_cpulist(host.cpus_allowed) == "0-191"
    assert [n.id for n in host.numa_nodes] == list(range(8))
    assert all(n.mem_mib == 65536 for n in host.numa_nodes)
    for a in host.npus:
        assert a.vendor is Vendor.HUAWEI
        assert format_cpulist(a.cpu_affinity) == A2_AFFINITY[a.logical_id]
        assert a.affinity_source is Source.NPU_SMI
        assert a.numa_node == A2_NODE[a.logical_id]
        assert a.numa_source is Source.SYSFS
    assert host.npus[0].bus_id == "0000:c1:00.0"
    assert host.links[0][1] == "HCCS"
    assert host.tools["npu-smi"] == "24.1.rc1.b030"
    assert host.arch == "aarch64"


def test_npu_numa_from_affinity_without_pci(sysroot: SysrootBuilder) -> None:
    host = host_of(atlas_a2(sysroot, pci=False))
    assert host.npus[0].numa_node == 6
    assert host.npus[0].numa_source is Source.NPU_SMI


def test_affinity_from_sysfs_when_npu_smi_has_none(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot, topo=False)
    sysroot.command("npu-smi_info_-t_topo", npu_smi_topo(dict.fromkeys(range(8))))
    host = host_of(sysroot)
    a = host.npus[0]
    assert a.tool_affinity is None
    assert a.affinity_source is Source.SYSFS
    assert format_cpulist(a.cpu_affinity) == "144-167"
    assert any("no CPU affinity" in n for n in host.notes)


def test_unsupported_topo(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot, topo=False)
    sysroot.command("npu-smi_info_-t_topo", "This device does not support querying topo.\n")
    host = host_of(sysroot)
    assert host.topo_supported is False
    assert host.npus[3].affinity_source is Source.SYSFS
    assert any("cannot report topology" in n for n in host.notes)


def test_no_npu_smi_but_pci_devices(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-47").nodes_even(2, 24)
    sysroot.pci("0000:c1:00.0", numa_node=1, local_cpulist="24-47")
    sysroot.pci("0000:01:00.0", numa_node=0, local_cpulist="0-23")
    sysroot.pci("0000:02:00.0", vendor="0x19e5", device="0x1822", numa_node=0)  # a Huawei NIC
    host = host_of(sysroot)
    assert "npu-smi" not in host.tools
    assert [(a.logical_id, a.bus_id, a.numa_node) for a in host.npus] == [
        (0, "0000:01:00.0", 0),
        (1, "0000:c1:00.0", 1),
    ]
    assert any("no Ascend driver tools found" in n for n in host.notes)


def test_defaults_without_optional_files(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-3", topology=False)
    host = host_of(sysroot)
    assert format_cpulist(host.cpus_allowed) == "0-3"
    assert not host.allowed_from_status
    assert len(host.numa_nodes) == 1 and host.numa_nodes[0].mem_mib is None
    assert all(c.siblings == frozenset({c.id}) for c in host.cpus.values())
    assert host.accelerators == ()


def test_smt_offline_and_cpuless_node(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-6", present="0-7", smt=2)
    sysroot.node(0, "0-3").node(1, "4-7").node(2, "", mem_mib=1024)
    host = host_of(sysroot)
    assert format_cpulist(host.cpus_offline) == "7"
    assert host.cpus[0].siblings == frozenset({0, 4})
    assert [n.id for n in host.cpu_nodes] == [0, 1]
    assert host.numa_nodes[2].cpus == frozenset()


def test_container_cpuset(sysroot: SysrootBuilder) -> None:
    host = host_of(atlas_a2(sysroot, cpuset="0-23"))
    assert format_cpulist(host.cpus_allowed) == "0-23"
    assert host.mems_allowed == frozenset(range(8))


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: (b.root / "sys/devices/system/cpu/online").unlink(), MissingError),
        (lambda b: b.file("sys/devices/system/cpu/online", "\n"), InvalidInput),
        (lambda b: b.file("sys/devices/system/cpu/online", "0-x\n"), ParseError),
        (lambda b: b.allowed("0-255"), InvalidInput),
        (
            lambda b: b.command(
                "npu-smi_info_-t_topo", "\tNPU0  NPU1  CPU Affinity\nNPU0  X  HCCS\n"
            ),
            ParseError,
        ),
        (lambda b: b.command("npu-smi_info", "+-----+\n| garbage |\n"), ParseError),
    ],
)
def test_bad_input(sysroot: SysrootBuilder, mutate: Any, error: type[Exception]) -> None:
    atlas_a2(sysroot)
    mutate(sysroot)
    with pytest.raises(error):
        host_of(sysroot)


def test_archive_root_matches_folder(sysroot: SysrootBuilder, tmp_path: Path) -> None:
    from ascendtune.host import snapshot

    atlas_a2(sysroot)
    cap = snapshot.capture(DirRoot(sysroot.root))
    out = tmp_path / "snap.tar.gz"
    snapshot.write(cap, str(out))
    assert read_host(open_root(str(out))) == read_host(DirRoot(sysroot.root))
    # deterministic archives: two captures of one sysroot give the same bytes
    assert snapshot.archive_bytes(cap) == snapshot.archive_bytes(
        snapshot.capture(DirRoot(sysroot.root))
    )


def test_snapshot_folder_roundtrip(sysroot: SysrootBuilder, tmp_path: Path) -> None:
    from ascendtune.host import snapshot

    atlas_a2(sysroot, cpuset="0-47")
    sysroot.pci("0000:c1:00.0", numa_node=6, local_cpulist="144-167", driver="devdrv_device_driver")
    snapshot.write(snapshot.capture(DirRoot(sysroot.root)), str(tmp_path / "snap"))
    again = read_host(DirRoot(tmp_path / "snap"))
    assert again == read_host(DirRoot(sysroot.root))
    assert again.npus[0].driver == "devdrv_device_driver"


def test_udev_and_sysfs_agree(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    root = DirRoot(sysroot.root)
    from_sysfs = pci.pci_from_sysfs(root)

    def fake(bdf: str) -> Any:
        base = f"{pci.PCI_DIR}/{bdf}/"
        attrs = {
            n: (root.read_text(base + n) or "").encode()
            for n in ("vendor", "device", "numa_node", "local_cpulist")
        }
        return SimpleNamespace(sys_name=bdf, attributes=attrs, driver=None, children=[])

    other = SimpleNamespace(
        sys_name="0000:00:1f.0",
        attributes={"vendor": b"0x8086\n", "device": b"0x1234\n"},
        driver=None,
        children=[],
    )
    context = SimpleNamespace(
        list_devices=lambda subsystem: [fake(b) for b in root.listdir(pci.PCI_DIR) or []] + [other]
    )
    assert pci.pci_from_udev(context) == from_sysfs
    assert len(from_sysfs) == 8


def test_nvidia_h100_host(sysroot: SysrootBuilder) -> None:
    text = sample("nvidia-smi_topo_m_8xH100_12nic_2numa_smt.txt")
    sysroot.cpus("0-223", smt=2).node(0, "0-55,112-167").node(1, "56-111,168-223")
    buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    for g, bus in enumerate(buses):
        node = 0 if g < 4 else 1
        sysroot.pci(
            f"0000:{bus}:00.0",
            vendor="0x10de",
            device="0x2330",
            numa_node=node,
            local_cpulist="0-55,112-167" if node == 0 else "56-111,168-223",
        )
    sysroot.command("nvidia-smi_topo_-m", text)
    host = host_of(sysroot)
    assert len(host.gpus) == 8
    assert [a.numa_node for a in host.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert format_cpulist(host.gpus[0].cpu_affinity) == "0-55,112-167"
    assert format_cpulist(host.gpus[7].cpu_affinity) == "56-111,168-223"
    assert host.links[0][1] == "NV18"
    assert host.gpus[2].bus_id == "0000:3a:00.0"


def test_nvidia_slurm_truncated_affinity_is_flagged(sysroot: SysrootBuilder) -> None:
    text = sample("nvidia-smi_topo_m_8xH100_empty_cpu_affinity_slurm.txt")
    sysroot.cpus("0-95").node(0, "0-47").node(1, "48-95").allowed("1")
    for g in range(8):
        sysroot.pci(
            f"0000:{0x10 + g:02x}:00.0",
            vendor="0x10de",
            numa_node=0 if g < 4 else 1,
            local_cpulist="0-47" if g < 4 else "48-95",
        )
    sysroot.command("nvidia-smi_topo_-m", text)
    host = host_of(sysroot)
    assert format_cpulist(host.gpus[4].cpu_affinity) == "48-95"
    assert host.gpus[4].tool_affinity == parse_cpulist("1")
    assert host.gpus[0].tool_affinity is None
    assert any("cut down by this process's cpuset" in n for n in host.notes)


def test_a3_detected_by_chips_per_card(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-63").nodes_even(2, 32)
    rows = ["NPU ID  Chip ID  Chip Logic ID  Chip Phy-ID Chip Name"]
    for card in range(2):
        rows += [
            f"{card} 0 {2 * card} {2 * card} Ascend910",
            f"{card} 1 {2 * card + 1} {2 * card + 1} Ascend910",
            f"{card} 2 - - Mcu",
        ]
    sysroot.command("npu-smi_info_-m", "\n".join(rows) + "\n")
    host = host_of(sysroot)
    assert [a.logical_id for a in host.npus] == [0, 1, 2, 3]
    assert host.soc is Soc.A3


def test_processes_from_npu_smi(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    sysroot.command(
        "npu-smi_info",
        npu_smi_info({0: "910B3", 1: "910B3"}, {0: "C1", 1: "C2"}, [(1, 4242, "VLLMWorker")]),
    )
    sysroot.command("npu-smi_info_-m", npu_smi_m([0, 1]))
    host = host_of(sysroot)
    assert [(p.npu_id, p.pid, p.name) for p in host.processes] == [(1, 4242, "VLLMWorker")]


def test_workers_only_finds_the_same_devices_and_processes_without_topo(
    sysroot: SysrootBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_host(workers_only=True), bind --workers --plan's read: the same devices, logical
    ids and process table, without the commands that print links only (npu-smi's topology,
    never run) or pyudev (the PCI bus from sysfs)."""
    atlas_a2(sysroot)
    sysroot.command(
        "npu-smi_info",
        npu_smi_info({0: "910B3", 1: "910B3"}, {0: "C1", 1: "C2"}, [(1, 4242, "VLLMWorker")]),
    )
    sysroot.command("npu-smi_info_-m", npu_smi_m([0, 1]))
    root = DirRoot(sysroot.root)
    full = read_host(root)
    ran: list[tuple[str, ...]] = []
    command = root.command

    def logged(argv: list[str], fallbacks: Any = ()) -> Any:
        ran.append(tuple(argv))
        return command(argv, fallbacks)

    monkeypatch.setattr(root, "command", logged)
    monkeypatch.setattr(pci, "live_pci", lambda: pytest.fail("pyudev asked"))
    lean = read_host(root, workers_only=True)
    assert ("npu-smi", "info", "-t", "topo") not in ran
    assert ("npu-smi", "info") in ran and ("npu-smi", "info", "-m") in ran
    ids = [(a.vendor, a.logical_id, a.npu_id, a.chip_id, a.bus_id) for a in full.accelerators]
    assert ids == [
        (a.vendor, a.logical_id, a.npu_id, a.chip_id, a.bus_id) for a in lean.accelerators
    ]
    assert lean.processes == full.processes and lean.tools == full.tools
    assert full.links and not lean.links


# ---------------------------------------------------------------- failed tools, offline CPUs, SoC

ERR = "dcmi module initialize failed. ret is -8005\n"


def test_a_failed_tool_replays_as_a_failure(sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    (sysroot.root / "commands/npu-smi_info_-t_topo.txt").unlink()
    sysroot.file("commands/npu-smi_info_-t_topo.err", ERR)
    host = read_host(DirRoot(sysroot.root))
    # info and -m still give the NPUs; topo's failure is a note and a tool error, not exit 5
    assert len(host.npus) == 8 and "npu-smi" in host.tools
    assert host.tool_errors == ("npu-smi info -t topo: " + ERR.strip(),)
    assert host.npus[0].affinity_source is not None  # from sysfs now
    doc = schemas.loads(
        "doctor",
        cli("doctor", "--sysroot", str(sysroot.root), "--json").stdout,
    )
    row = next(c for c in doc["checks"] if c["id"] == "npu_smi")
    assert row["status"] == "fail" and "8005" in row["detail"]


def test_every_npu_smi_view_failing_leaves_the_pci_view(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    for name in ("npu-smi_info", "npu-smi_info_-m", "npu-smi_info_-t_topo"):
        (sysroot.root / f"commands/{name}.txt").unlink()
        sysroot.file(f"commands/{name}.err", ERR)
    host = read_host(DirRoot(sysroot.root))
    assert len(host.npus) == 8  # from PCI, in bus order
    assert sum("left out" in n for n in host.notes) == 1  # one note for the three failures


def test_offline_cpus_in_the_cpuset_are_not_an_error(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-3,5-7", topology=False)  # writes possible/present 0-3,5-7 ...
    (sysroot.root / "sys/devices/system/cpu/possible").unlink()
    (sysroot.root / "sys/devices/system/cpu/present").unlink()
    sysroot.allowed("0-7")  # ... and the task mask still names offline CPU 4
    host = read_host(DirRoot(sysroot.root))
    assert format_cpulist(host.cpus_allowed) == "0-3,5-7"


def test_runtime_soc_replays_from_meta(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    text = (sysroot.root / "commands/npu-smi_info.txt").read_text().replace("910B3", "XYZ  ")
    sysroot.command("npu-smi_info", text)
    sysroot.command(
        "npu-smi_info_-m",
        (sysroot.root / "commands/npu-smi_info_-m.txt")
        .read_text()
        .replace("Ascend 910B3", "Ascend XYZ"),
    )
    for d in (sysroot.root / "sys/bus/pci/devices").iterdir():
        (d / "device").write_text("0xd8ff\n")
    assert read_host(DirRoot(sysroot.root)).soc is Soc.UNKNOWN
    sysroot.meta(arch="aarch64", soc_runtime="A3")
    assert read_host(DirRoot(sysroot.root)).soc is Soc.A3


def test_nvswitches_without_class_are_not_gpus(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-7").node(0, "0-7")
    sysroot.pci("0000:05:00.0", vendor="0x10de", device="0x22a3", numa_node=0, local_cpulist="0-7")
    sysroot.pci("0000:18:00.0", vendor="0x10de", device="0x2330", numa_node=0, local_cpulist="0-7")
    host = read_host(DirRoot(sysroot.root))
    assert [g.bus_id for g in host.gpus] == ["0000:18:00.0"]
