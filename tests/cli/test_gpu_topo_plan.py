"""NVIDIA GPUs as a second vendor (issue 7): `topo` on the real nvidia-smi samples, with and
without sysfs PCI devices, and `plan` on the GPU hosts the issue names, policy by policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host, Source
from ascendtune.core.parsers.nvidia_smi import parse_topo_m
from ascendtune.core.planner import Plan, PlanRequest, make_plan
from ascendtune.core.vendors.nvidia import build_gpus
from ascendtune.host import pci
from ascendtune.host.roots import DirRoot
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.gpu_hosts import (
    AMD_CCX,
    DGX_BUSES,
    H100_SAMPLE,
    P4_SAMPLE,
    SLURM_SAMPLE,
    SNC_SAMPLE,
    TWO_SOCKET_NODES,
    Gpu,
    amd,
    bus_of,
    gh200,
    interleaved,
    read,
    snc,
    two_socket,
    write_gpus,
)
from tests.support.planner_hosts import Hosts
from tests.support.samples import sample

NODE0, NODE1 = "0-55,112-167", "56-111,168-223"
EVEN, ODD = format_cpulist(range(0, 96, 2)), format_cpulist(range(1, 96, 2))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCENDTUNE_SYSROOT"):
        monkeypatch.delenv(name, raising=False)


def topo_json(sb: SysrootBuilder) -> dict[str, Any]:
    res = CLI("topo", "--sysroot", str(sb.root), "--json")
    assert res.exit_code == 0, res.stderr
    doc: dict[str, Any] = schemas.loads("topo", res.stdout)
    return doc


def column(doc: dict[str, Any], key: str) -> list[Any]:
    return [a[key] for a in doc["accelerators"]]


# ------------------------------------------------------------------------ topo: 8x H100


def h100_host(sb: SysrootBuilder, *, sysfs: bool) -> SysrootBuilder:
    # no cpuN/topology files: topo needs none to show GPUs, and 224 CPUs' worth are slow to write
    sb.cpus("0-223", topology=False).node(0, NODE0).node(1, NODE1)
    sb.command("nvidia-smi_topo_-m", sample(H100_SAMPLE))
    if sysfs:
        for g, bus in enumerate(DGX_BUSES):
            sb.pci(
                f"0000:{bus}:00.0",
                vendor="0x10de",
                device="0x2330",
                numa_node=g // 4,
                local_cpulist=NODE0 if g < 4 else NODE1,
                driver="nvidia",
            )
    return sb


@pytest.mark.parametrize("sysfs", [True, False], ids=["sysfs", "nvidia-smi-only"])
def test_topo_h100_sample(sysroot: SysrootBuilder, sysfs: bool) -> None:
    doc = topo_json(h100_host(sysroot, sysfs=sysfs))
    assert doc["soc"] == "gpu" and doc["nvidia_smi"] == {"found": True}
    assert column(doc, "vendor") == ["nvidia"] * 8
    assert column(doc, "logical_id") == list(range(8))
    assert column(doc, "numa_node") == [0, 0, 0, 0, 1, 1, 1, 1]
    assert column(doc, "cpu_affinity") == [NODE0] * 4 + [NODE1] * 4
    assert column(doc, "cpus_allowed_in_affinity") == [NODE0] * 4 + [NODE1] * 4
    assert doc["links"] == {str(a): {str(b): "NV18" for b in range(8) if b != a} for a in range(8)}
    assert [n["accelerators"] for n in doc["numa_nodes"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert doc["warnings"] == []
    # without sysfs, affinity and NUMA node come from nvidia-smi's own columns
    source = "sysfs" if sysfs else "nvidia-smi"
    assert set(column(doc, "cpu_affinity_source")) == {source}
    assert set(column(doc, "numa_node_source")) == {source}
    if sysfs:
        assert column(doc, "bus_id") == [f"0000:{b}:00.0" for b in DGX_BUSES]
        assert set(column(doc, "name")) == {"NVIDIA H100 SXM5 80GB"}
        assert set(column(doc, "driver")) == {"nvidia"}
    else:
        assert column(doc, "bus_id") == [None] * 8
        assert set(column(doc, "name")) == {"NVIDIA GPU"}


def test_topo_h100_copy_pasted_with_spaces(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-191", topology=False).node(0, "0-47,96-143").node(1, "48-95,144-191")
    sysroot.command("nvidia-smi_topo_-m", sample("nvidia-smi_topo_m_8xH100_nonic_spaces.txt"))
    doc = topo_json(sysroot)
    assert column(doc, "numa_node") == [0] * 4 + [1] * 4
    assert column(doc, "cpu_affinity") == ["0-47,96-143"] * 4 + ["48-95,144-191"] * 4
    assert doc["links"]["7"]["0"] == "NV18"


def test_topo_table_for_gpus(sysroot: SysrootBuilder, cli: Cli) -> None:
    res = cli("topo", "--sysroot", str(h100_host(sysroot, sysfs=True).root))
    assert res.exit_code == 0
    out = res.stdout
    assert "NVIDIA H100 SXM5 80GB" in out and "0000:db:00.0" in out and "NV18" in out
    header = next(line for line in out.splitlines() if "bus id" in line)
    # a GPU has an index, not an NPU id and a chip id
    assert "GPU" in header and "npu" not in header and "chip" not in header
    assert "nvidia-smi" in out.splitlines()[0]


@pytest.mark.parametrize(
    ("device", "name"),
    [
        ("0x2330", "NVIDIA H100 SXM5 80GB"),
        ("0x2331", "NVIDIA H100 PCIe"),
        ("0x2335", "NVIDIA H200 SXM 141GB"),
        ("0x20b0", "NVIDIA A100 SXM4 40GB"),
        ("0x20b2", "NVIDIA A100 SXM4 80GB"),
        ("0x20b5", "NVIDIA A100 PCIe 80GB"),
        ("0x26b9", "NVIDIA L40S"),
        ("0x2342", "NVIDIA GH200 120GB / 480GB"),
        ("0xffff", "NVIDIA GPU"),  # not in the table: the generic name
    ],
)
def test_gpu_named_from_its_pci_device_id(sysroot: SysrootBuilder, device: str, name: str) -> None:
    """No NVML and no nvidia-smi: sysfs alone gives the name, node and affinity."""
    sysroot.cpus("0-15", topology=False).node(0, "0-7").node(1, "8-15")
    write_gpus(sysroot, [Gpu(1, "8-15", device=device)], smi=False)
    doc = topo_json(sysroot)
    [gpu] = doc["accelerators"]
    assert (gpu["name"], gpu["numa_node"], gpu["cpu_affinity"]) == (name, 1, "8-15")
    assert gpu["cpu_affinity_source"] == "sysfs" and gpu["tool_cpu_affinity"] is None
    assert doc["nvidia_smi"] == {"found": False} and doc["links"] == {}
    assert doc["warnings"] == []


# ------------------------------------------------------------------------ topo: Slurm cpuset


def della(sb: SysrootBuilder, *, sysfs: bool, status: bool = True) -> SysrootBuilder:
    """The Slurm sample's host (della-k17g3): 96 CPUs, node 0 even, node 1 odd (its numactl
    -H sample), a job cpuset holding CPU 1 only, so nvidia-smi printed '' and '1'."""
    sb.cpus("0-95", topology=False).node(0, EVEN).node(1, ODD)
    if status:
        sb.allowed("1", "0-1")
    sb.command("nvidia-smi_topo_-m", sample(SLURM_SAMPLE))
    if sysfs:
        for g in range(8):
            sb.pci(
                f"0000:{0x18 + g:02x}:00.0",
                vendor="0x10de",
                device="0x2330",
                numa_node=g // 4,
                local_cpulist=EVEN if g < 4 else ODD,
            )
    return sb


@pytest.mark.parametrize("sysfs", [True, False], ids=["sysfs", "nvidia-smi-only"])
def test_topo_slurm_sample_flags_truncated_affinity(sysroot: SysrootBuilder, sysfs: bool) -> None:
    doc = topo_json(della(sysroot, sysfs=sysfs))
    # the hardware affinity, not what the job's cpuset let nvidia-smi see
    assert column(doc, "cpu_affinity") == [EVEN] * 4 + [ODD] * 4
    assert column(doc, "tool_cpu_affinity") == [None] * 4 + ["1"] * 4
    assert column(doc, "numa_node") == [0] * 4 + [1] * 4
    assert column(doc, "cpus_allowed_in_affinity") == [""] * 4 + ["1"] * 4
    warnings = doc["warnings"]
    cut = [w for w in warnings if "cut down by this process's cpuset 1" in w]
    assert [w.split(":")[0] for w in cut] == ["GPU 0-3", "GPU 4-7"]
    assert "shows CPU affinity empty" in cut[0] and "shows CPU affinity 1," in cut[1]
    hardware = "sysfs local_cpulist" if sysfs else "CPUs of its NUMA node 1"
    assert hardware in cut[1]
    assert any(
        w.startswith("GPU 0-3: its CPU affinity") and "wholly outside" in w for w in warnings
    )
    assert any(w.startswith("GPU 4-7: only 1 of its affinity") for w in warnings)


def test_topo_slurm_sample_without_cpuset_still_flags_the_cut(sysroot: SysrootBuilder) -> None:
    """No proc/self/status in the sysroot: the cpuset is unknown, but an affinity smaller than
    the GPU's NUMA node (empty, or '1') can only be nvidia-smi's cut."""
    doc = topo_json(della(sysroot, sysfs=False, status=False))
    assert column(doc, "cpu_affinity") == [EVEN] * 4 + [ODD] * 4
    assert sum("narrower cpuset" in w for w in doc["warnings"]) == 2


# ------------------------------------------------------------------------ topo: small samples


@pytest.mark.parametrize("nodes", [1, 2])
def test_topo_p4_sample_numa_not_available(sysroot: SysrootBuilder, nodes: int) -> None:
    """NUMA Affinity N/A: the node comes from the CPU affinity (0-7) when it lies on one node."""
    if nodes == 1:
        sysroot.cpus("0-7")  # no node files: one node holds every CPU
    else:
        sysroot.cpus("0-15").node(0, "0-7").node(1, "8-15")
    sysroot.command("nvidia-smi_topo_-m", sample(P4_SAMPLE))
    doc = topo_json(sysroot)
    [gpu] = doc["accelerators"]
    assert (gpu["numa_node"], gpu["cpu_affinity"], gpu["tool_cpu_affinity"]) == (0, "0-7", "0-7")
    # without node files node 0 itself is a guess, and said to be one (issue 18)
    assert gpu["numa_node_source"] == ("guess" if nodes == 1 else "nvidia-smi")
    assert doc["links"] == {"0": {}}


def test_topo_p4_with_pci_device_is_named(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-7")
    sysroot.pci("0000:3b:00.0", vendor="0x10de", device="0x1bb3", local_cpulist="0-7")
    sysroot.command("nvidia-smi_topo_-m", sample(P4_SAMPLE))
    [gpu] = topo_json(sysroot)["accelerators"]
    assert gpu["name"] == "NVIDIA Tesla P4" and gpu["bus_id"] == "0000:3b:00.0"
    # no node files: node 0 is a guess, and said to be one
    assert (gpu["numa_node"], gpu["numa_node_source"]) == (0, "guess")


SNC_HOST_NODES = ("0-23,96-119", "24-47,120-143", "48-71,144-167", "72-95,168-191")


@pytest.mark.parametrize("sysfs", [True, False], ids=["sysfs", "nvidia-smi-only"])
def test_topo_snc_excerpt_uneven_gpus_per_node(
    sysroot: SysrootBuilder, sysfs: bool, cli: Cli
) -> None:
    """Sub-NUMA clustering: 3 GPUs on node 0, 1 on node 1, 2 on node 2; the excerpt stops after
    six GPU rows although its header names eight."""
    sysroot.cpus("0-191", smt=2, sockets=2, topology=sysfs)  # SMT only for the plan below
    for i, cpus in enumerate(SNC_HOST_NODES):
        sysroot.node(i, cpus)
    sysroot.command("nvidia-smi_topo_-m", sample(SNC_SAMPLE))
    gpu_nodes = [0, 0, 0, 1, 2, 2, 3, 3]
    if sysfs:
        write_gpus(sysroot, [Gpu(n, SNC_HOST_NODES[n]) for n in gpu_nodes], smi=False)
    doc = topo_json(sysroot)
    shown = 8 if sysfs else 6
    assert column(doc, "numa_node") == gpu_nodes[:shown]
    assert column(doc, "cpu_affinity") == [SNC_HOST_NODES[n] for n in gpu_nodes[:shown]]
    assert [n["accelerators"] for n in doc["numa_nodes"]] == [
        [0, 1, 2],
        [3],
        [4, 5],
        [6, 7] if sysfs else [],
    ]
    assert sorted(doc["links"]) == [str(g) for g in range(6)]
    assert any("names GPU 6-7 in its header but prints no row" in w for w in doc["warnings"])
    if not sysfs:
        return
    res = cli("plan", "--sysroot", str(sysroot.root), "--policy", "numa-local", "--json")
    ranks = schemas.loads("plan", res.stdout)["ranks"]
    assert [r["cpus"] for r in ranks[:4]] == [
        "0-7,96-103",
        "8-15,104-111",
        "16-23,112-119",
        "24-47,120-143",
    ]


def test_topo_gh200_cpuless_nodes(sysroot: SysrootBuilder) -> None:
    doc = topo_json(gh200(sysroot))
    [gpu] = doc["accelerators"]
    assert gpu["name"] == "NVIDIA GH200 120GB / 480GB" and gpu["bus_id"] == "0009:01:00.0"
    assert (gpu["numa_node"], gpu["cpu_affinity"]) == (0, "0-71")
    assert [n["cpus"] for n in doc["numa_nodes"]] == ["0-71"] + [""] * 8
    [cpuless] = [w for w in doc["warnings"] if "hold no online CPU" in w]
    assert cpuless.startswith("NUMA nodes 1,2,3,4,5,6,7,8") and "GH200" in cpuless
    assert "vLLM-Ascend" not in cpuless


def test_topo_gh200_gpu_on_its_memory_node_is_placed_by_its_cpus(sysroot: SysrootBuilder) -> None:
    """A GPU whose PCI numa_node is a CPU-less node (its own memory): a worker cannot be bound
    there, so the node of its CPUs stands in, and topo says so."""
    doc = topo_json(gh200(sysroot, numa_node=1))
    assert doc["accelerators"][0]["numa_node"] == 0
    assert any("GPU 0: NUMA node 1 holds no CPU" in w for w in doc["warnings"])
    assert not any("sysfs numa_node is" in w for w in doc["warnings"])


def plain(sb: SysrootBuilder) -> SysrootBuilder:
    """The 2-socket GPU host without SMT or cache files, for tests of the GPU list alone."""
    sb.cpus("0-63", topology=False).node(0, TWO_SOCKET_NODES[0]).node(1, TWO_SOCKET_NODES[1])
    return write_gpus(sb, [Gpu(g // 4, TWO_SOCKET_NODES[g // 4]) for g in range(8)])


def test_topo_container_seeing_some_gpus_does_not_mix_up_bus_ids(sysroot: SysrootBuilder) -> None:
    """nvidia-smi in a container given GPUs 4,5 calls them GPU0, GPU1; sysfs lists all eight.
    Joining by index would put them on node 0 with GPU 0's bus id."""
    plain(sysroot)  # 8 PCI GPUs and an 8-GPU matrix; replace the matrix by a 2-GPU one
    sysroot.command(
        "nvidia-smi_topo_-m",
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\t16-31,48-63\t1\t\tN/A\n"
        "GPU1\tNV18\t X \t16-31,48-63\t1\t\tN/A\n",
    )
    doc = topo_json(sysroot)
    assert column(doc, "numa_node") == [1, 1]
    assert column(doc, "bus_id") == [None, None]
    assert any("shows 2 GPUs, the PCI bus 8" in w for w in doc["warnings"])


def test_nvml_bus_ids_join_a_container_gpus_with_their_pci_devices(
    sysroot: SysrootBuilder,
) -> None:
    """On a live host NVML tells which bus id each index is, so the container case joins."""
    plain(sysroot)
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t16-31,48-63\t1\n"
    text += "GPU1\tNV18\t X \t16-31,48-63\t1\n"
    devices = list(pci.pci_from_sysfs(DirRoot(sysroot.root)))
    notes: list[str] = []
    gpus = build_gpus(
        parse_topo_m(text),
        devices,
        read(sysroot).numa_nodes,
        frozenset(range(64)),
        notes,
        nvml_buses={0: bus_of(4), 1: bus_of(5)},
    )
    assert [(a.logical_id, a.bus_id, a.numa_node) for a in gpus] == [
        (0, bus_of(4), 1),
        (1, bus_of(5), 1),
    ]
    assert {a.affinity_source for a in gpus} == {Source.SYSFS} and notes == []


def test_topo_nvidia_driver_down_is_a_warning(sysroot: SysrootBuilder) -> None:
    plain(sysroot)
    sysroot.command(
        "nvidia-smi_topo_-m",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n",
    )
    doc = topo_json(sysroot)
    assert column(doc, "numa_node") == [0] * 4 + [1] * 4  # from sysfs alone
    assert any("is the NVIDIA driver loaded" in w for w in doc["warnings"])


def test_topo_garbled_nvidia_smi_is_one_line(sysroot: SysrootBuilder, cli: Cli) -> None:
    plain(sysroot)
    sysroot.command("nvidia-smi_topo_-m", "\tGPU0\tCPU Affinity\nGPU0\t X \t0-x\n")
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 5 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "nvidia-smi topo -m line 2" in res.stderr


# ------------------------------------------------------------------------ plan: the host table

HOSTS: dict[str, Callable[[SysrootBuilder], object]] = {
    "2-socket-smt": two_socket,
    "snc-uneven": snc,
    "gh200": gh200,
    "gh200-numa-unknown": lambda sb: gh200(sb, numa_node=None),
    "gh200-numa-memory-node": lambda sb: gh200(sb, numa_node=1),
    "interleaved": interleaved,
    "amd-ccx": lambda sb: amd(sb, l1=True),
    "amd-ccx-cut": lambda sb: (amd(sb), sb.allowed("2-31,34-63", "0-1")),
    "amd-6-on-node-0": lambda sb: amd(sb, gpu_nodes=(0, 0, 0, 0, 0, 0, 1, 1)),
    "2-socket-core-0-cut": lambda sb: two_socket(sb, allowed="1-63"),
}


class GpuHosts(Hosts):
    """The planner's lazily built host folders, over the GPU host table."""

    def __init__(self, base: Path) -> None:
        super().__init__(base, HOSTS)


@pytest.fixture(scope="module")
def gpu_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GpuHosts]:
    yield GpuHosts(tmp_path_factory.mktemp("gpu-hosts"))


def plan(host: Host, policy: str, visible: tuple[int, ...] | None = None) -> Plan:
    return make_plan(host, PlanRequest(policy=policy, visible=visible))


def cpus_of(p: Plan) -> dict[int, str]:
    return {r.device: format_cpulist(r.cpus) for r in p.ranks}


def interleaved_share(g: int) -> str:
    """GPU g's 4 cores on the interleaved host: node g // 4 holds the CPUs of its parity, a
    core is CPU c and c + 32, and the node's 16 cores go 4 by 4 in GPU order."""
    node, k = divmod(g, 4)
    first = [node + 8 * k + 2 * i for i in range(4)]
    return format_cpulist(first + [c + 32 for c in first])


# 4 cores of 2 threads per GPU, in GPU order, on the 2-socket host
SPLIT_2S = {g: f"{4 * g}-{4 * g + 3},{32 + 4 * g}-{32 + 4 * g + 3}" for g in range(8)}
NODE_2S = {g: TWO_SOCKET_NODES[g // 4] for g in range(8)}
SNC_SPLIT = {
    0: "0-3,48-51",
    1: "4-7,52-55",
    2: "8-11,56-59",
    3: "12-23,60-71",  # alone on node 1: the whole node
    4: "24-29,72-77",
    5: "30-35,78-83",
    6: "36-41,84-89",
    7: "42-47,90-95",
}
SNC_NODE = {
    g: ("0-11,48-59", "12-23,60-71", "24-35,72-83", "36-47,84-95")[n]
    for g, n in enumerate((0, 0, 0, 1, 2, 2, 3, 3))
}
SNC_SOCKET = {g: "0-23,48-71" if g < 4 else "24-47,72-95" for g in range(8)}
GH200 = {0: "0-71"}
IL_SPLIT = {g: interleaved_share(g) for g in range(8)}
IL_NODE = {g: format_cpulist(range(g // 4, 64, 2)) for g in range(8)}
AMD_SPLIT = {g: AMD_CCX[g] for g in range(8)}
AMD_NODE = {g: ("0-15,32-47", "16-31,48-63")[g // 4] for g in range(8)}

CASES: list[tuple[str, str, dict[int, str]]] = [
    # 2 sockets with SMT, one node per socket, an L3 per socket
    ("2-socket-smt", "numa-local", SPLIT_2S),
    ("2-socket-smt", "numa-slice", SPLIT_2S),
    ("2-socket-smt", "exclusive", SPLIT_2S),
    ("2-socket-smt", "node", NODE_2S),
    ("2-socket-smt", "socket", NODE_2S),
    ("2-socket-smt", "core-complex", NODE_2S),  # one L3 per node: every GPU gets all of it
    # sub-NUMA clustering, 3/1/2/2 GPUs on 4 nodes, 2 nodes per socket
    ("snc-uneven", "numa-local", SNC_SPLIT),
    ("snc-uneven", "numa-slice", SNC_SPLIT),
    ("snc-uneven", "exclusive", SNC_SPLIT),
    ("snc-uneven", "node", SNC_NODE),
    ("snc-uneven", "socket", SNC_SOCKET),
    ("snc-uneven", "core-complex", SNC_NODE),  # the socket's L3, cut to the GPU's node
    # interleaved numbering with SMT
    ("interleaved", "numa-local", IL_SPLIT),
    ("interleaved", "numa-slice", IL_SPLIT),
    ("interleaved", "exclusive", IL_SPLIT),
    ("interleaved", "node", IL_NODE),
    ("interleaved", "socket", IL_NODE),
    ("interleaved", "core-complex", IL_NODE),
    # AMD-like: 4 core complexes per node, 4 GPUs per node: one complex each
    ("amd-ccx", "numa-local", AMD_SPLIT),
    ("amd-ccx", "numa-slice", AMD_SPLIT),
    ("amd-ccx", "exclusive", AMD_SPLIT),
    ("amd-ccx", "node", AMD_NODE),
    ("amd-ccx", "socket", AMD_NODE),
    ("amd-ccx", "core-complex", AMD_SPLIT),
    # a cpuset without half of complex 0: the biggest complexes go first, the cut one last
    (
        "amd-ccx-cut",
        "core-complex",
        {
            0: AMD_CCX[1],
            1: AMD_CCX[2],
            2: AMD_CCX[3],
            3: "2-3,34-35",
            **{g: AMD_CCX[g] for g in range(4, 8)},
        },
    ),
    # 6 GPUs on a node of 4 complexes: GPUs 4 and 5 wrap onto complexes 0 and 1 (as torch does)
    (
        "amd-6-on-node-0",
        "core-complex",
        {
            0: AMD_CCX[0],
            1: AMD_CCX[1],
            2: AMD_CCX[2],
            3: AMD_CCX[3],
            4: AMD_CCX[0],
            5: AMD_CCX[1],
            6: AMD_CCX[4],
            7: AMD_CCX[5],
        },
    ),
    # 16 cores for 6 GPUs: the four lowest get 3 cores, the others 2
    (
        "amd-6-on-node-0",
        "exclusive",
        {
            0: "0-2,32-34",
            1: "3-5,35-37",
            2: "6-8,38-40",
            3: "9-11,41-43",
            4: "12-13,44-45",
            5: "14-15,46-47",
            6: "16-23,48-55",
            7: "24-31,56-63",
        },
    ),
    # torch orders cores by their first thread: core 0 (CPU 32 left in the cpuset) stays first
    (
        "2-socket-core-0-cut",
        "exclusive",
        {
            0: "1-3,32-35",
            1: "4-7,36-39",
            2: "8-11,40-43",
            3: "12-15,44-47",
            **{g: SPLIT_2S[g] for g in range(4, 8)},
        },
    ),
]
CASES += [
    (name, policy, GH200)
    for name in ("gh200", "gh200-numa-unknown", "gh200-numa-memory-node")
    for policy in ("numa-local", "numa-slice", "exclusive", "node", "socket", "core-complex")
]


@pytest.mark.parametrize(
    ("name", "policy", "expected"), CASES, ids=[f"{n}-{p}" for n, p, _ in CASES]
)
def test_plan_gives_the_right_cpus(
    gpu_hosts: GpuHosts, name: str, policy: str, expected: dict[int, str]
) -> None:
    host = gpu_hosts.host(name)
    p = plan(host, policy)
    assert cpus_of(p) == expected
    assert p.vendor == "nvidia" and p.soc.value == "gpu"
    for r in p.ranks:
        # CUDA has no acl/release threads and no NPU IRQs: every CPU is the main role
        assert r.roles.main == r.cpus and not (r.roles.irq or r.roles.acl or r.roles.release)
        assert r.device == r.logical_id
        if policy != "socket":
            assert r.numa_nodes == (r.device_node,), f"GPU {r.device} left its node"
    if policy in ("numa-local", "numa-slice", "exclusive"):
        assert not p.overlaps


def test_exclusive_with_a_gpu_of_unknown_node_on_a_one_node_host(sysroot: SysrootBuilder) -> None:
    """torch reads numa_node -1 as node 0 on a one-node host; the GPU must then count among
    node 0's GPUs (it once raised ValueError: not in its own peers list)."""
    sysroot.cpus("0-7")
    sysroot.pci("0000:18:00.0", vendor="0x10de", numa_node=0, local_cpulist="0-7")
    sysroot.pci("0000:2a:00.0", vendor="0x10de", numa_node=-1, local_cpulist="")
    host = read(sysroot)
    assert [g.numa_node for g in host.gpus] == [0, None]
    assert cpus_of(plan(host, "exclusive")) == {0: "0-3", 1: "4-7"}


@pytest.mark.parametrize("policy", ["numa-local", "numa-slice"])
def test_a_node_with_fewer_cores_than_gpus_is_refused(sysroot: SysrootBuilder, policy: str) -> None:
    sysroot.cpus("0-1")
    write_gpus(sysroot, [Gpu(0, "0-1")] * 3)
    with pytest.raises(PlanError):
        plan(read(sysroot), policy)


def test_core_complex_without_cache_topology_is_a_plan_error(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    sysroot.cpus("0-15").node(0, "0-7").node(1, "8-15")
    write_gpus(sysroot, [Gpu(0, "0-7"), Gpu(1, "8-15")])
    with pytest.raises(PlanError, match="core-complex mode cannot group them"):
        plan(read(sysroot), "core-complex")
    res = cli("plan", "--sysroot", str(sysroot.root), "--policy", "core-complex")
    assert res.exit_code == 5 and "use --policy exclusive" in res.stderr


def test_hidden_gpus_keep_their_share_in_exclusive_mode(gpu_hosts: GpuHosts) -> None:
    """Two jobs on GPUs 0,1 and 2,3 of one node do not meet (torch itself would give both the
    node's first half, counting only the GPUs it sees)."""
    host = gpu_hosts.host("2-socket-smt")
    a, b = plan(host, "exclusive", (0, 1)), plan(host, "exclusive", (2, 3))
    assert cpus_of(a) == {0: SPLIT_2S[0], 1: SPLIT_2S[1]}
    assert cpus_of(b) == {2: SPLIT_2S[2], 3: SPLIT_2S[3]}


# ------------------------------------------------------------------------ plan: the CLI


def plan_json(root: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = CLI("plan", "--sysroot", root, "--json", *args, env=env)
    assert res.exit_code == 0, res.stderr
    doc: dict[str, Any] = schemas.loads_cli(["plan"], res.stdout)
    return doc


def test_cuda_visible_devices_from_the_environment(gpu_hosts: GpuHosts) -> None:
    # ASCEND_RT_VISIBLE_DEVICES: an Ascend variable, not for GPUs
    env = {"CUDA_VISIBLE_DEVICES": "5,4", "ASCEND_RT_VISIBLE_DEVICES": "0"}
    doc = plan_json(gpu_hosts.root("2-socket-smt"), "--policy", "numa-local", env=env)
    assert doc["visible_devices"] == [5, 4]
    assert [(r["rank"], r["device"], r["pool_device"], r["cpus"]) for r in doc["ranks"]] == [
        (0, 5, 5, SPLIT_2S[5]),
        (1, 4, 4, SPLIT_2S[4]),
    ]
    assert doc["ranks"][0]["roles"] == {"irq": "", "main": SPLIT_2S[5], "acl": "", "release": ""}


def test_visible_devices_option_wins_over_the_environment(gpu_hosts: GpuHosts) -> None:
    doc = plan_json(
        gpu_hosts.root("snc-uneven"),
        "--policy",
        "node",
        "--visible-devices",
        "3",
        env={"CUDA_VISIBLE_DEVICES": "5,4"},
    )
    assert [(r["device"], r["cpus"], r["numa_nodes"]) for r in doc["ranks"]] == [
        (3, "12-23,60-71", [1])
    ]


def test_cuda_visible_devices_naming_a_missing_gpu_is_exit_5(gpu_hosts: GpuHosts, cli: Cli) -> None:
    res = cli(
        "plan",
        "--sysroot",
        gpu_hosts.root("2-socket-smt"),
        "--policy",
        "numa-local",
        env={"CUDA_VISIBLE_DEVICES": "9"},
    )
    assert res.exit_code == 5
    assert "CUDA_VISIBLE_DEVICES names device 9" in res.stderr and "0,1,2,3,4,5,6,7" in res.stderr


@pytest.mark.parametrize(
    ("emit", "first"),
    [
        ("numactl", f'rank0() {{ numactl --physcpubind={SPLIT_2S[4]} --membind=1 "$@"; }}'),
        # the devices in rank order, then each rank's CPUs under names of its own
        ("env", "export CUDA_VISIBLE_DEVICES=4,0"),
        ("taskset", f'rank0() {{ taskset -c {SPLIT_2S[4]} "$@"; }}'),
    ],
)
def test_emit_lines_for_gpus(gpu_hosts: GpuHosts, emit: str, first: str, cli: Cli) -> None:
    res = cli(
        "plan",
        "--sysroot",
        gpu_hosts.root("2-socket-smt"),
        "--policy",
        "exclusive",
        "--visible-devices",
        "4,0",
        "--emit",
        emit,
    )
    assert res.exit_code == 0, res.stderr
    lines = [line for line in res.stdout.strip().splitlines() if not line.startswith("#")]
    assert lines[0] == first
    assert len([x for x in lines if "_preferred" not in x]) == (3 if emit == "env" else 2)
    if emit == "env":
        assert lines[1] == f"export ASCENDTUNE_CPUS_RANK0={SPLIT_2S[4]} ASCENDTUNE_MEMBIND_RANK0=1"
    assert "# rank 1, GPU 0" in res.stdout.splitlines()
    assert "ASCEND" not in res.stdout.replace("ASCENDTUNE_", "")


def test_cpu_affinity_conf_is_refused_on_a_gpu_host(gpu_hosts: GpuHosts, cli: Cli) -> None:
    res = cli("plan", "--sysroot", gpu_hosts.root("2-socket-smt"), "--emit", "cpu-affinity-conf")
    assert res.exit_code == 2 and res.stdout == ""
    assert "for Ascend NPUs" in res.stderr and "nvidia" in res.stderr


def test_vllm_ascend_policy_on_a_gpu_host_is_exit_5(gpu_hosts: GpuHosts, cli: Cli) -> None:
    res = cli("plan", "--sysroot", gpu_hosts.root("2-socket-smt"), "--policy", "vllm-ascend")
    assert res.exit_code == 5 and res.stdout == ""
    [line] = res.stderr.strip().splitlines()
    assert "vllm-ascend plans Ascend NPUs" in line and "nvidia" in line and "numa-local" in line


def test_compare_on_the_dgx_demo(cli: Cli) -> None:
    res = cli("plan", "--demo", "dgx-h100", "--policy", "compare")
    assert res.exit_code == 0, res.stderr
    for policy in ("numa-local", "numa-slice", "node", "socket", "exclusive", "core-complex"):
        assert policy in res.stdout
    assert "vllm-ascend" not in res.stdout  # it plans NPUs only
