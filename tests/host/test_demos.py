"""The demo hosts shipped in ascendtune/demos: they open, their files say what the demo claims,
and the committed archives are exactly what scripts/make_demos.py writes."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import re
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.errors import UsageError
from ascendtune.host import demos
from ascendtune.host.roots import MemRoot, Root

REPO = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO / "ascendtune" / "demos"


def load_generator() -> ModuleType:
    name = "make_demos_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / "make_demos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------- helpers


def cpus_of(root: Root, rel: str) -> frozenset[int]:
    text = root.read_text(rel)
    assert text is not None, f"{root.describe()}: {rel} is missing"
    return parse_cpulist(text, source=rel)


def status_field(text: str, key: str) -> str:
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {key} in status")


def node_cpus(root: Root) -> dict[int, frozenset[int]]:
    out = {}
    for entry in root.listdir("sys/devices/system/node") or []:
        m = re.fullmatch(r"node(\d+)", entry)
        if m:
            out[int(m.group(1))] = cpus_of(root, f"sys/devices/system/node/{entry}/cpulist")
    return out


def pci(root: Root) -> dict[str, dict[str, str]]:
    out = {}
    for bdf in root.listdir("sys/bus/pci/devices") or []:
        base = f"sys/bus/pci/devices/{bdf}/"
        out[bdf] = {
            k: (root.read_text(base + k) or "").strip()
            for k in ("vendor", "device", "class", "numa_node", "local_cpulist")
        }
    return out


def topo_affinity(text: str) -> dict[int, str]:
    """NPU row label -> last column, for matrices that have a CPU Affinity column."""
    lines = text.splitlines()
    assert lines[0].rstrip().endswith("CPU Affinity")
    return {
        int(m.group(1)): line.split()[-1]
        for line in lines[1:]
        if (m := re.match(r"NPU(\d+)\s", line))
    }


def map_rows(text: str) -> list[list[str]]:
    """`npu-smi info -m` rows split on runs of 2+ spaces (the header included)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def info_rows(text: str) -> list[tuple[str, str]]:
    """(first-line cells, second-line cells) of each chip in `npu-smi info`'s upper table."""
    out = []
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    for i, line in enumerate(lines):
        if re.search(r"\|\s+(OK|Warning)\s+\|", line):
            out.append((line, lines[i + 1]))
    return out


def open_root(name: str) -> MemRoot:
    root = demos.open_demo(name)
    assert isinstance(root, MemRoot)
    return root


# ---------------------------------------------------------------------------- every demo

ALL = list(demos.DEMOS)


def test_index_matches_generator() -> None:
    gen = load_generator()
    assert list(gen.BUILDERS) == ALL
    assert gen.DESCRIPTIONS == demos.DEMOS
    assert demos.list_demos() == list(demos.DEMOS.items())
    assert demos.list_demos()[0][0] == demos.DEFAULT_DEMO
    assert sorted(p.name for p in DEMO_DIR.glob("*.tar.gz")) == sorted(f"{n}.tar.gz" for n in ALL)
    assert sorted(p.name for p in DEMO_DIR.glob("*.json")) == sorted(f"{n}.json" for n in ALL)


@pytest.mark.parametrize("name", ALL)
def test_demo_is_its_archive(name: str) -> None:
    """`--demo` loads the index beside the archive (host/demos.py): the same files, links,
    folders and order as a replay of the archive itself (`--sysroot NAME.tar.gz`)."""
    from ascendtune.host.roots import open_root as open_sysroot

    index = open_root(name)
    archive = open_sysroot(str(DEMO_DIR / f"{name}.tar.gz"))
    assert isinstance(archive, MemRoot)
    assert list(index.files.items()) == list(archive.files.items())
    assert list(index.links.items()) == list(archive.links.items())
    assert index.dirs == archive.dirs


@pytest.mark.parametrize("name", ALL)
def test_demo_is_a_consistent_host(name: str) -> None:
    root = open_root(name)
    assert root.describe() == f"demo:{name}"
    meta = json.loads(root.read_text("meta.json") or "")
    assert meta["description"] == demos.DEMOS[name]
    assert meta["captured_by"] == "ascendtune demo"
    assert meta["arch"] in ("aarch64", "x86_64")

    online = cpus_of(root, "sys/devices/system/cpu/online")
    assert online == frozenset(range(len(online)))
    for c in online:
        base = f"sys/devices/system/cpu/cpu{c}/"
        sibs = cpus_of(root, base + "topology/thread_siblings_list")
        assert c in sibs and sibs <= online
        for s in sibs:  # siblings agree with each other
            assert (
                cpus_of(root, f"sys/devices/system/cpu/cpu{s}/topology/thread_siblings_list")
                == sibs
            )
        assert (root.read_text(base + "topology/physical_package_id") or "").strip().isdigit()
        assert (root.read_text(base + "topology/core_id") or "").strip().isdigit()
        assert root.read_text(base + "cpufreq/scaling_governor")

    nodes = node_cpus(root)
    assert nodes, "no NUMA nodes"
    seen: set[int] = set()
    for nid, cpus in nodes.items():
        assert not cpus & seen, f"node {nid} overlaps another"
        seen |= cpus
        meminfo = root.read_text(f"sys/devices/system/node/node{nid}/meminfo") or ""
        assert re.search(rf"^Node {nid} MemTotal:\s+\d+ kB$", meminfo, re.M)
    assert seen == online

    status = root.read_text("proc/self/status") or ""
    allowed = parse_cpulist(status_field(status, "Cpus_allowed_list"))
    assert allowed and allowed <= online
    assert parse_cpulist(status_field(status, "Mems_allowed_list")) <= set(nodes)
    assert cpus_of(root, "sys/fs/cgroup/cpuset.cpus.effective") == allowed

    for bdf, dev in pci(root).items():
        assert bdf == bdf.lower() and re.fullmatch(
            r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", bdf
        )
        node = int(dev["numa_node"])
        assert parse_cpulist(dev["local_cpulist"]) == nodes[node]

    for knob in ("proc/sys/kernel/numa_balancing", "proc/sys/vm/swappiness"):
        assert (root.read_text(knob) or "").strip().isdigit()
    assert re.fullmatch(
        r"(\S+ )*\[\w+\]( \S+)*\n",
        root.read_text("sys/kernel/mm/transparent_hugepage/enabled") or "",
    )


@pytest.mark.parametrize("name", [n for n in ALL if n != "dgx-h100"])
def test_npu_smi_tables_agree(name: str) -> None:
    """The three npu-smi views name the same chips, and every Bus-Id is a PCI device of sysfs."""
    root = open_root(name)
    info = root.read_text("commands/npu-smi_info.txt") or ""
    rows = map_rows(root.read_text("commands/npu-smi_info_-m.txt") or "")
    chips = [r for r in rows[1:] if r[-1] != "Mcu"]
    if name == "ascend-950":
        # Ascend 950's layout (as vLLM-Ascend's unit tests show it): a Slot ID, no Chip Logic
        # ID (the NPU ID is the logical id), no Mcu rows; the process table keyed by NPU ID
        assert rows[0] == ["NPU ID", "Slot ID", "Chip ID", "Chip Phy-ID", "Chip Name"]
        assert (
            sorted(int(r[0]) for r in chips)
            == list(range(len(chips)))
            == [int(r[3]) for r in chips]
        )
        assert "| NPU ID " in info and "| NPU     Chip " not in info
    else:
        assert rows[0][:3] == ["NPU ID", "Chip ID", "Chip Logic ID"]
        mcus = [r for r in rows[1:] if r[-1] == "Mcu"]
        assert {r[0] for r in mcus} == {r[0] for r in chips}, "one Mcu row per card"
        assert all(r[2] == "-" for r in mcus)
        logical = sorted(int(r[2]) for r in chips)
        assert logical == list(range(len(chips)))

    tables = info_rows(info)
    assert len(tables) == len(chips)
    devices = pci(root)
    for _first, second in tables:
        bus = re.search(r"([0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F])", second)
        assert bus, second
        assert bus.group(1).lower() in devices
    widths = {len(line) for line in info.splitlines()}
    assert len(widths) == 1, "every line of the npu-smi table has the tool's one width"


def test_commands_for_gpu_host_only_nvidia() -> None:
    root = open_root("dgx-h100")
    assert root.listdir("commands") == ["nvidia-smi_topo_-m.txt"]
    assert root.command(["npu-smi", "info"]) is None


# ---------------------------------------------------------------------------- the hosts' facts

A2_AFFINITY = {
    0: "144-167", 1: "144-167", 2: "96-119", 3: "96-119",
    4: "0-23", 5: "0-23", 6: "48-71", 7: "48-71",
}  # fmt: skip
A2_BUS = ["0000:C1:00.0", "0000:C2:00.0", "0000:81:00.0", "0000:82:00.0",
          "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"]  # fmt: skip


def test_atlas_800i_a2() -> None:
    root = open_root("atlas-800i-a2")
    assert topo_affinity(root.read_text("commands/npu-smi_info_-t_topo.txt") or "") == A2_AFFINITY
    nodes = node_cpus(root)
    assert nodes == {n: frozenset(range(24 * n, 24 * n + 24)) for n in range(8)}
    devices = pci(root)
    for npu, bus in enumerate(A2_BUS):
        dev = devices[bus.lower()]
        assert (dev["vendor"], dev["device"], dev["class"]) == ("0x19e5", "0xd802", "0x120000")
        assert dev["local_cpulist"] == A2_AFFINITY[npu]
        assert nodes[int(dev["numa_node"])] == parse_cpulist(A2_AFFINITY[npu])
    # the Kunpeng's own NIC is a Huawei device too, but not an accelerator
    assert devices["0000:7d:00.0"]["class"] == "0x020000"
    info = root.read_text("commands/npu-smi_info.txt") or ""
    assert [second.split("|")[2].strip() for _, second in info_rows(info)] == A2_BUS
    assert "npu-smi 24.1.rc1" in info
    assert info.count("No running processes found in NPU") == 8
    for c in (0, 100, 191):
        assert cpus_of(root, f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") == {c}
        assert (
            root.read_text(f"sys/devices/system/cpu/cpu{c}/topology/physical_package_id")
            == f"{c // 48}\n"
        )
        assert (
            root.read_text(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor")
            == "ondemand\n"
        )
    # an untuned host, for `doctor`
    assert root.read_text("proc/sys/kernel/numa_balancing") == "1\n"
    assert root.read_text("proc/sys/vm/swappiness") == "60\n"
    assert root.read_text("proc/sys/kernel/sched_migration_cost_ns") == "500000\n"
    assert (
        root.read_text("sys/kernel/mm/transparent_hugepage/enabled") == "always [madvise] never\n"
    )
    assert root.read_text("proc/1634/comm") == "irqbalance\n"
    status = root.read_text("proc/self/status") or ""
    assert status_field(status, "Cpus_allowed_list") == "0-191"
    assert status_field(status, "Mems_allowed_list") == "0-7"
    meta = json.loads(root.read_text("meta.json") or "")
    assert meta["hostname"] == "atlas-800i-a2-demo"
    assert meta["kernel"] == "5.10.0-182.0.0.95.oe2203sp3.aarch64"
    assert meta["os"] == "openEuler 22.03 (LTS-SP3)"
    assert meta["npu_smi_version"] == "24.1.rc1"


def test_atlas_800i_a3() -> None:
    root = open_root("atlas-800i-a3")
    nodes = node_cpus(root)
    assert nodes == {n: frozenset(range(40 * n, 40 * n + 40)) for n in range(8)}
    for c in (0, 1, 77, 318):
        sibs = cpus_of(root, f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")
        assert sibs == {c - c % 2, c - c % 2 + 1}
    rows = map_rows(root.read_text("commands/npu-smi_info_-m.txt") or "")
    assert rows[0] == ["NPU ID", "Chip ID", "Chip Logic ID", "Chip Phy-ID", "Chip Name"]
    chips = [r for r in rows[1:] if r[-1] != "Mcu"]
    assert [(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in chips] == [
        (k, d, 2 * k + d, 2 * k + d) for k in range(8) for d in range(2)
    ]
    topo = root.read_text("commands/npu-smi_info_-t_topo.txt") or ""
    assert "CPU Affinity" not in topo
    matrix = {
        int(m.group(1)): line.split()[1:]
        for line in topo.splitlines()
        if (m := re.match(r"Phy-ID(\d+)\s", line))
    }
    assert sorted(matrix) == list(range(16))
    for a, cells in matrix.items():
        assert len(cells) == 16
        for b, cell in enumerate(cells):
            assert cell == ("X" if a == b else "SIO" if a // 2 == b // 2 else "HCCS_SW")
    # affinity only from sysfs: both dies of card k on node k
    devices = pci(root)
    assert len(devices) == 16
    info = root.read_text("commands/npu-smi_info.txt") or ""
    for i, (first, second) in enumerate(info_rows(info)):
        k = i // 2
        assert first.split()[2] == "Ascend910"
        bus = second.split("|")[2].strip().lower()
        dev = devices[bus]
        assert (dev["device"], int(dev["numa_node"])) == ("0xd803", k)
        assert parse_cpulist(dev["local_cpulist"]) == nodes[k]
    assert root.read_text("proc/sys/kernel/numa_balancing") == "0\n"
    assert root.read_text("proc/sys/vm/swappiness") == "0\n"
    assert (
        root.read_text("sys/devices/system/cpu/cpu300/cpufreq/scaling_governor") == "performance\n"
    )
    assert json.loads(root.read_text("meta.json") or "")["soc_version"] == "Ascend910_9382"


def test_atlas_300i_duo() -> None:
    root = open_root("atlas-300i-duo")
    nodes = node_cpus(root)
    assert {n: format_cpulist(c) for n, c in nodes.items()} == {0: "0-31,64-95", 1: "32-63,96-127"}
    assert cpus_of(root, "sys/devices/system/cpu/cpu70/topology/thread_siblings_list") == {6, 70}
    info = root.read_text("commands/npu-smi_info.txt") or ""
    assert "| Chip    Device " in info
    cells = [
        (first.split()[1], second.split()[1], second.split()[2])
        for first, second in info_rows(info)
    ]
    assert [c[0] for c in cells] == ["1", "1", "2", "2", "4", "4", "5", "5"]  # sparse NPU ids
    assert [int(c[2]) for c in cells] == list(range(8))  # the Device column: logical ids
    affinity = topo_affinity(root.read_text("commands/npu-smi_info_-t_topo.txt") or "")
    assert affinity == {i: "0-31,64-95" if i < 4 else "32-63,96-127" for i in range(8)}
    devices = pci(root)
    assert {d["device"] for d in devices.values()} == {"0xd500"}
    assert json.loads(root.read_text("meta.json") or "")["arch"] == "x86_64"
    # 5.15 moved sched_migration_cost_ns to debugfs: the knob is absent here
    assert root.read_text("proc/sys/kernel/sched_migration_cost_ns") is None


def test_container_a2_half() -> None:
    root = open_root("container-a2-half")
    status = root.read_text("proc/self/status") or ""
    assert status_field(status, "Cpus_allowed_list") == "0-23"
    assert status_field(status, "Mems_allowed_list") == "0"
    assert status_field(status, "CapEff") == "00000000a80425fb"  # no CAP_SYS_NICE
    # the host's view through sysfs is not namespaced: all 192 CPUs and 8 NPUs
    assert cpus_of(root, "sys/devices/system/cpu/online") == frozenset(range(192))
    assert len([d for d in pci(root).values() if d["device"] == "0xd802"]) == 8
    info = root.read_text("commands/npu-smi_info.txt") or ""
    assert [first.split()[1] for first, _ in info_rows(info)] == ["4", "5"]
    procs = re.findall(r"^\| (\d+)\s+(\d+)\s+\| (\d+)\s+\| (\S+)", info, re.M)
    pids = [int(p[2]) for p in procs]
    assert [(p[0], p[1]) for p in procs] == [("4", "0"), ("5", "0")]
    rows = map_rows(root.read_text("commands/npu-smi_info_-m.txt") or "")
    assert [(r[0], r[2]) for r in rows[1:] if r[-1] != "Mcu"] == [("4", "0"), ("5", "1")]
    assert topo_affinity(root.read_text("commands/npu-smi_info_-t_topo.txt") or "") == {
        0: "0-23",
        1: "0-23",
    }

    masks = {}
    for npu, pid in zip((4, 5), pids, strict=True):
        links = {
            fd: root.readlink(f"proc/{pid}/fd/{fd}") for fd in root.listdir(f"proc/{pid}/fd") or []
        }
        assert f"/dev/davinci{npu}" in links.values()
        assert (root.read_text(f"proc/{pid}/cmdline") or "").startswith("VLLM::Worker_TP")
        threads = {}
        for tid in root.listdir(f"proc/{pid}/task") or []:
            comm = (root.read_text(f"proc/{pid}/task/{tid}/comm") or "").strip()
            tstatus = root.read_text(f"proc/{pid}/task/{tid}/status") or ""
            assert status_field(tstatus, "Tgid") == str(pid)
            threads[comm] = status_field(tstatus, "Cpus_allowed_list")
        assert {"acl_thread", "release_thread", "python3"} <= set(threads)
        masks[npu] = threads
    # NPU 4's worker is bound the way vLLM-Ascend binds it; NPU 5's is not bound at all
    assert masks[4] == {
        "VLLM::Worker_TP": "2-9", "python3": "2-9", "ZMQbg/Reaper": "2-9", "ZMQbg/IO/0": "2-9",
        "acl_thread": "10", "release_thread": "11",
    }  # fmt: skip
    assert set(masks[5].values()) == {"0-23"}
    all_tids = [t for pid in pids for t in root.listdir(f"proc/{pid}/task") or []]
    assert len(all_tids) == len(set(all_tids)), "thread ids are unique across processes"


def test_dgx_h100() -> None:
    root = open_root("dgx-h100")
    nodes = node_cpus(root)
    assert {n: format_cpulist(c) for n, c in nodes.items()} == {
        0: "0-55,112-167",
        1: "56-111,168-223",
    }
    topo = root.read_text("commands/nvidia-smi_topo_-m.txt") or ""
    head = topo.splitlines()[0].split("\t")
    assert head[-3:] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    gpu_rows = [line.split("\t") for line in topo.splitlines() if line.startswith("GPU")]
    assert len(gpu_rows) == 8
    for g, row in enumerate(gpu_rows):
        assert row[1 : 1 + 8] == [" X " if g == h else "NV18" for h in range(8)]
        assert row[-4:] == ["0-55,112-167" if g < 4 else "56-111,168-223", str(g // 4), "", "N/A"]
    devices = pci(root)
    gpus = sorted(
        b for b, d in devices.items() if d["vendor"] == "0x10de" and d["class"].startswith("0x03")
    )
    assert len(gpus) == 8
    for g, bdf in enumerate(gpus):  # GPU index g = g-th GPU in bus order; NVSwitches are not GPUs
        assert int(devices[bdf]["numa_node"]) == g // 4
        assert (
            root.readlink(f"sys/bus/pci/devices/{bdf}/driver")
            == "../../../../bus/pci/drivers/nvidia"
        )
    assert sum(d["class"] == "0x068000" for d in devices.values()) == 4


# ---------------------------------------------------------------------------- open_demo errors


@pytest.mark.parametrize("name", ["nope", "list", "", "ATLAS-800I-A2"])
def test_unknown_demo_names_the_demos(name: str) -> None:
    with pytest.raises(UsageError) as err:
        demos.open_demo(name)
    assert err.value.exit_code == 2
    for known in demos.DEMOS:
        assert known in str(err.value)


# ---------------------------------------------------------------------------- the generator


def test_generator_is_deterministic_and_committed_archives_are_current(tmp_path: Path) -> None:
    gen = load_generator()
    first = gen.build_all(tmp_path / "a")
    second = gen.build_all(tmp_path / "b")
    assert [p.name for p in first] == [f"{n}.tar.gz" for n in ALL]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), f"{a.name} differs between two runs"
        committed = DEMO_DIR / a.name
        # compare the tar stream, not the gzip bytes: another zlib may compress differently
        assert gzip.decompress(committed.read_bytes()) == gzip.decompress(a.read_bytes()), (
            f"{committed} is stale: run `python -m scripts.regen`"
        )


@pytest.mark.parametrize("name", ALL)
def test_archive_is_normalised(name: str) -> None:
    data = (DEMO_DIR / f"{name}.tar.gz").read_bytes()
    assert data[:3] == b"\x1f\x8b\x08" and data[4:8] == b"\0\0\0\0", "gzip header mtime is 0"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert len(data) < 64 * 1024
    for m in members:
        assert (m.mtime, m.uid, m.gid) == (0, 0, 0)
        assert m.isfile() or m.issym()
        assert not m.name.startswith(("/", "./")) and ".." not in m.name.split("/")


# ---------------------------------------------------------------------------- through the reader


def _read_host(name: str) -> Any:
    from ascendtune.host import reader

    return reader.read_host(demos.open_demo(name))


def test_reader_sees_the_a2_pairs() -> None:
    host = _read_host("atlas-800i-a2")
    npus = sorted(host.npus, key=lambda a: a.logical_id)
    assert len(npus) == 8
    assert {a.logical_id: format_cpulist(a.cpu_affinity) for a in npus} == A2_AFFINITY
    assert [a.bus_id for a in npus] == [b.lower() for b in A2_BUS]
    assert [a.numa_node for a in npus] == [6, 6, 4, 4, 0, 0, 2, 2]


def test_reader_takes_a3_affinity_from_sysfs() -> None:
    host = _read_host("atlas-800i-a3")
    npus = sorted(host.npus, key=lambda a: a.logical_id)
    assert len(npus) == 16
    for a in npus:
        k = a.logical_id // 2
        assert a.tool_affinity is None
        assert a.cpu_affinity == frozenset(range(40 * k, 40 * k + 40))
        assert a.numa_node == k


READER_COUNTS = {
    "atlas-800i-a2": 8,
    "atlas-800i-a3": 16,
    "atlas-300i-duo": 8,
    "container-a2-half": 2,
    "ascend-950": 8,
    "dgx-h100": 8,
}


@pytest.mark.parametrize("name", ALL)
def test_reader_on_every_demo(name: str) -> None:
    host = _read_host(name)
    assert len(host.accelerators) == READER_COUNTS[name]
    assert host.cpus_allowed == (
        frozenset(range(24)) if name == "container-a2-half" else host.cpus_online
    )
