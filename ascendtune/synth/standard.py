"""The standard synthetic hosts: Atlas 800I A2 (8x 910B3), Atlas 800I A3 (8 cards x 2 dies),
Atlas 300I Duo (4 cards x 2 310P3), Ascend 950 and DGX-H100 style GPU hosts, and the demos
shipped in ascendtune/demos/ (scripts/make_demos.py writes those from `DEMO_SPECS`).

The readings (power, temperature, memory use, PIDs) are made up; the layouts are real ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ascendtune.core.cpulist import format_cpulist
from ascendtune.synth.spec import (
    DOCKER_CAPS,
    HOST_CAPS,
    Chip,
    Cpus,
    Gpu,
    HostSpec,
    Knobs,
    Node,
    NpuProcess,
    NpuSmi,
    NvidiaSmi,
    Pci,
    Process,
    SelfProc,
    Task,
    adjacent,
    upper_half,
)
from ascendtune.synth.text import LEGEND_910_93

# ---------------------------------------------------------------- Atlas 800I A2

# NPU -> (bus id as npu-smi prints it, NUMA node): the pairs of a real 910B3 box, on nodes
# 6, 4, 0, 2 of an 8-node, 192-CPU Kunpeng 920 host (4 sockets of 48 cores)
A2_NPUS = (
    (0, "0000:C1:00.0", 6),
    (1, "0000:C2:00.0", 6),
    (2, "0000:81:00.0", 4),
    (3, "0000:82:00.0", 4),
    (4, "0000:01:00.0", 0),
    (5, "0000:02:00.0", 0),
    (6, "0000:41:00.0", 2),
    (7, "0000:42:00.0", 2),
)
A2_BUS = tuple(bus for _, bus, _ in A2_NPUS)
A2_NODE = tuple(node for _, _, node in A2_NPUS)
A2_AFFINITY = tuple(f"{24 * n}-{24 * n + 23}" for n in A2_NODE)
A2_NODES = {n: frozenset(range(24 * n, 24 * n + 24)) for n in range(8)}
THP = "always [madvise] never"
THP_DEFRAG = "always defer defer+madvise [madvise] never"


def a2_chips(
    affinity: Sequence[str | None] = A2_AFFINITY, name: str = "910B3", **kw: object
) -> tuple[Chip, ...]:
    """8 chips, NPU i = logical i, at A2_BUS[i], with the topo affinity given."""
    return tuple(
        Chip(i, 0, i, name, A2_BUS[i], affinity=a, **kw)  # type: ignore[arg-type]
        for i, a in enumerate(affinity)
    )


def npu_pci(bus: str, device: str, node: int, local: frozenset[int], *, full: bool = True) -> Pci:
    """An Ascend NPU's PCI function (full: class file and local_cpus bitmap too)."""
    return Pci(
        bus,
        device=device,
        pci_class="0x120000" if full else None,
        numa_node=node,
        local_cpus=local,
        mask=full,
    )


def a2_pci(*, full: bool = False) -> tuple[Pci, ...]:
    """The 8 NPUs as sysfs sees them (full: class file and local_cpus bitmap too)."""
    return tuple(
        npu_pci(bus, "0xd802", node, A2_NODES[node], full=full) for _, bus, node in A2_NPUS
    )


def atlas_800i_a2(
    *,
    allowed: str = "0-191",
    pci: bool = True,
    topology: bool = True,
    chips: Sequence[Chip] | None = None,
) -> HostSpec:
    """A plain Atlas 800I A2 for tests: 192 CPUs (4 sockets, no SMT), 8 nodes of 24."""
    return HostSpec(
        cpus=Cpus(
            frozenset(range(192)),
            threads=upper_half(range(192), sockets=4) if topology else (),
        ),
        nodes=tuple(Node(n, c) for n, c in A2_NODES.items()),
        pci=a2_pci() if pci else (),
        self_proc=SelfProc(allowed, "0-7"),
        npu_smi=NpuSmi(tuple(chips) if chips is not None else a2_chips()),
        meta={"arch": "aarch64", "hostname": "a2"},
        meta_indent=None,
    )


def atlas_800i_a3(*, allowed: str = "0-255") -> HostSpec:
    """Atlas 800I A3 for tests: 8 cards x 2 dies = 16 logical NPUs named `Ascend910`, 4 nodes
    of 32 cores with SMT (threads 2k, 2k+1 are one core); 4 logical NPUs per node."""
    chips = tuple(
        Chip(
            i // 2,
            i % 2,
            i,
            "Ascend910",
            f"0000:{0x9D - 2 * i:02X}:00.0",
            affinity=format_cpulist(range(i // 4 * 64, i // 4 * 64 + 64)),
        )
        for i in range(16)
    )
    return HostSpec(
        cpus=Cpus(frozenset(range(256)), threads=adjacent(range(256), sockets=4, core_ids=None)),
        nodes=tuple(Node(n, frozenset(range(64 * n, 64 * n + 64))) for n in range(4)),
        self_proc=SelfProc(allowed, "0-3"),
        npu_smi=NpuSmi(chips, layout="a3", phy_col=True),
        meta={"arch": "aarch64"},
        meta_indent=None,
    )


def ascend_950(*, allowed: str = "0-383", affinity: Sequence[str | None] | None = None) -> HostSpec:
    """Ascend 950 (the vLLM-Ascend unit test's layout): 384 CPUs with SMT 2 on 4 nodes of 96;
    NPUs 0,1,6,7 on node 3 (288-383), NPUs 2-5 on node 1 (96-191)."""
    aff = A5_AFFINITY if affinity is None else affinity
    chips = tuple(
        Chip(i, 0, i, "Ascend950DT", f"0000:{i + 1:02x}:00.0", affinity=a)
        for i, a in enumerate(aff)
    )
    return HostSpec(
        cpus=Cpus(frozenset(range(384)), threads=adjacent(range(384), sockets=2, core_ids=None)),
        nodes=tuple(Node(n, frozenset(range(96 * n, 96 * n + 96))) for n in range(4)),
        self_proc=SelfProc(allowed, "0-3"),
        npu_smi=NpuSmi(chips, logic_col=False, phy_col=True),
        meta={"arch": "aarch64"},
        meta_indent=None,
    )


A5_AFFINITY = ("288-383", "288-383", "96-191", "96-191", "96-191", "96-191", "288-383", "288-383")


def atlas_300i_duo() -> HostSpec:
    """Atlas 300I Duo x4 (two 310P3 chips per card), 4 nodes of 48: cards 1,2 on node 0 and
    cards 4,8 on node 2; both chips of a card share its bus id and affinity."""
    cards = [(1, "0000:01:00.0", "0-47"), (2, "0000:41:00.0", "0-47")]
    cards += [(4, "0000:81:00.0", "96-143"), (8, "0000:C1:00.0", "96-143")]
    chips = tuple(
        Chip(npu, chip, 2 * k + chip, "310P3", bus, affinity=aff)
        for k, (npu, bus, aff) in enumerate(cards)
        for chip in (0, 1)
    )
    return HostSpec(
        cpus=Cpus(frozenset(range(192))),
        nodes=tuple(Node(n, frozenset(range(48 * n, 48 * n + 48))) for n in range(4)),
        self_proc=SelfProc("0-191", "0-3"),
        npu_smi=NpuSmi(chips, layout="310p"),
        meta={"arch": "aarch64"},
        meta_indent=None,
    )


def dgx_h100(*, nodes: int = 2, cores: int = 56) -> HostSpec:
    """A DGX-H100 style host: 8 GPUs (4 per socket) on NVLink, 2 sockets with SMT; sysfs
    and nvidia-smi agree on each GPU's node and CPUs."""
    n = 2 * nodes * cores
    per = n // (2 * nodes)
    node_cpus = [
        frozenset(range(k * per, (k + 1) * per))
        | frozenset(range(n // 2 + k * per, n // 2 + (k + 1) * per))
        for k in range(nodes)
    ]
    gpus = [k * nodes // 8 for k in range(8)]
    return HostSpec(
        cpus=Cpus(frozenset(range(n)), threads=upper_half(range(n), smt=2, sockets=nodes)),
        nodes=tuple(Node(i, c) for i, c in enumerate(node_cpus)),
        pci=tuple(
            Pci(
                f"0000:{0x18 + 0x10 * g:02x}:00.0",
                vendor="0x10de",
                device="0x2330",
                numa_node=node,
                local_cpus=node_cpus[node],
                driver="nvidia",
            )
            for g, node in enumerate(gpus)
        ),
        nvidia_smi=NvidiaSmi(tuple(Gpu(format_cpulist(node_cpus[k]), k) for k in gpus)),
        meta={"arch": "x86_64"},
        meta_indent=None,
    )


# ---------------------------------------------------------------- the demos

TOOLS_ASCEND: dict[str, str | None] = {
    "npu-smi": "/usr/local/sbin/npu-smi",
    "nvidia-smi": None,
    "numactl": "/usr/bin/numactl",
    "migratepages": "/usr/bin/migratepages",
    "taskset": "/usr/bin/taskset",
    "lscpu": "/usr/bin/lscpu",
    "irqbalance": "/usr/sbin/irqbalance",
}


def demo_meta(description: str, **meta: object) -> dict[str, object]:
    """meta.json as `ascendtune snapshot` writes it (tools, env, proc_scanned included)."""
    meta["description"] = description
    meta.setdefault("tools", TOOLS_ASCEND)
    meta.setdefault("env", {"LANG": "C.UTF-8"})
    # the demo holds every process doctor would capture: one absent here was absent there
    meta.setdefault("proc_scanned", True)
    return meta


def node_mem_kb(gib: int, nid: int) -> int:
    """MemTotal of a node: a little under its DIMMs (firmware and kernel keep some)."""
    return gib * 1024 * 1024 - 1_835_008 - 65_536 * ((nid * 7) % 5)


def demo_nodes(nodes: dict[int, frozenset[int]], gib: int) -> tuple[Node, ...]:
    out = []
    for nid, cpus in sorted(nodes.items()):
        total = node_mem_kb(gib, nid)
        free = total - total // 9 - 1_048_576 * (nid % 3)
        out.append(Node(nid, cpus, total, free, full=True))
    return tuple(out)


def demo_self(
    cpus: range | list[int],
    mems: range | list[int],
    cgroup: str,
    *,
    caps: str = HOST_CAPS,
    seccomp: int = 0,
) -> SelfProc:
    return SelfProc(frozenset(cpus), frozenset(mems), cgroup, caps=caps, seccomp=seccomp, full=True)


def threads_of(rows: Sequence[tuple[int, str, Sequence[int]]]) -> tuple[Task, ...]:
    return tuple(Task(tid, name, frozenset(cpus)) for tid, name, cpus in rows)


A2_POWER = (101.2, 93.4, 99.8, 97.1, 98.9, 100.3, 102.6, 95.8)
A2_TEMP = (42, 40, 41, 41, 44, 45, 44, 43)
A2_HBM_IDLE = (3312, 3308, 3311, 3309, 3310, 3308, 3313, 3309)
A2_KNOBS = Knobs(1, 60, 500000, THP, THP_DEFRAG)
A2_IRQBALANCE = Process(
    1634,
    "irqbalance",
    threads_of([(1634, "irqbalance", range(192)), (1641, "gmain", range(192))]),
    cmdline=("/usr/sbin/irqbalance", "--foreground"),
    ppid=1,
    mems=frozenset(range(8)),
    caps=HOST_CAPS,
    seccomp=0,
    vm_rss_kb=3_904,
    full=True,
)
# The Kunpeng's on-die NIC: a Huawei PCI device that is not an NPU.
A2_NIC = Pci(
    "0000:7d:00.0",
    device="0xa222",
    pci_class="0x020000",
    numa_node=0,
    local_cpus=A2_NODES[0],
    driver="hns3",
    mask=True,
)


def _a2_demo_base(**kw: object) -> HostSpec:
    """The parts of the A2 host that a container on it sees unchanged (sysfs, kernel knobs)."""
    return HostSpec(
        cpus=Cpus(
            frozenset(range(192)),
            threads=upper_half(range(192), sockets=4, core_ids="socket"),
            governor="ondemand",
        ),
        nodes=demo_nodes(A2_NODES, 128),
        node_lists=True,
        pci=(*a2_pci(full=True), A2_NIC),
        knobs=A2_KNOBS,
        **kw,  # type: ignore[arg-type]
    )


OPENEULER_OS_RELEASE = (
    'NAME="openEuler"\nVERSION="22.03 (LTS-SP3)"\nID="openEuler"\nVERSION_ID="22.03"\n'
    'PRETTY_NAME="openEuler 22.03 (LTS-SP3)"\nANSI_COLOR="0;31"\n'
)


def a2_irq_files(cpus: str = "0-191") -> dict[str, str]:
    """The NPU interrupts of the A2 as its driver lists them (proc/interrupts, each device's
    msi_irqs), each on `cpus`: the kernel's default affinity, before anything pinned them."""
    from ascendtune.synth.tools import npu_irqs

    interrupts, msi = npu_irqs(list(A2_BUS))
    files = {"proc/interrupts": interrupts}
    for bus, irqs in msi.items():
        for irq in irqs:
            files[f"sys/bus/pci/devices/{bus}/msi_irqs/{irq}"] = "msix\n"
            files[f"proc/irq/{irq}/smp_affinity_list"] = cpus + "\n"
    return files


def demo_atlas_800i_a2(description: str) -> HostSpec:
    chips = tuple(
        Chip(
            npu,
            0,
            npu,
            "910B3",
            bus,
            affinity=A2_AFFINITY[npu],
            power=A2_POWER[npu],
            temp=A2_TEMP[npu],
            mem_used=A2_HBM_IDLE[npu],
        )
        for npu, bus, _ in A2_NPUS
    )
    return _a2_demo_base(
        self_proc=demo_self(range(192), range(8), "/user.slice/user-0.slice/session-3.scope"),
        processes=(A2_IRQBALANCE,),
        files={**a2_irq_files(), "etc/os-release": OPENEULER_OS_RELEASE},
        npu_smi=NpuSmi(chips, version="24.1.rc1"),
        meta=demo_meta(
            description,
            hostname="atlas-800i-a2-demo",
            arch="aarch64",
            tools={**TOOLS_ASCEND, "numactl": None, "migratepages": None},
            kernel="5.10.0-182.0.0.95.oe2203sp3.aarch64",
            os="openEuler 22.03 (LTS-SP3)",
            captured_by="ascendtune demo",
            npu_smi_version="24.1.rc1",
        ),
    )


API_PID, ENGINE_PID, WORKER_PIDS = 3418201, 3418529, (3418790, 3418914)


def worker_threads(pid: int, bound: bool) -> tuple[Task, ...]:
    """A vLLM-Ascend worker's threads. Bound as vLLM-Ascend binds NPU 0 of a pool 0-23 split in two:
    IRQ 0-1 (left to the NPU's interrupts), main 2-9, acl_thread 10, release_thread 11."""
    everything = list(range(24))
    main = list(range(2, 10)) if bound else everything
    return threads_of(
        [
            (pid, "VLLM::Worker_TP", main),
            (pid + 2, "python3", main),
            (pid + 3, "python3", main),
            (pid + 5, "ZMQbg/Reaper", main),
            (pid + 6, "ZMQbg/IO/0", main),
            (pid + 71, "acl_thread", [10] if bound else everything),
            (pid + 72, "release_thread", [11] if bound else everything),
        ]
    )


def _container_proc(
    pid: int,
    comm: str,
    cmdline: Sequence[str],
    ppid: int,
    tasks: tuple[Task, ...],
    rss_kb: int,
    fds: dict[int, str] | None = None,
    environ: tuple[tuple[str, str], ...] = (),
) -> Process:
    return Process(
        pid,
        comm,
        tasks,
        cmdline=tuple(cmdline),
        ppid=ppid,
        mems=frozenset([0]),
        fds=fds or {},
        caps=DOCKER_CAPS,
        seccomp=2,
        vm_rss_kb=rss_kb,
        full=True,
        environ=environ,
    )


# the workers' environment as a snapshot records it (secrets masked): torch_npu's
# CPU_AFFINITY_CONF left in the image, which skips binding inside the 0-23 cpuset
CONTAINER_WORKER_ENV = (
    ("PATH", "/usr/local/python3.11.10/bin:/usr/local/bin:/usr/bin:/bin"),
    ("HOME", "/root"),
    ("HCCL_OP_EXPANSION_MODE", "AIV"),
    ("CPU_AFFINITY_CONF", "1"),
    ("HF_TOKEN", "***"),
)


def demo_container_a2_half(description: str) -> HostSpec:
    """The A2 from inside a container given davinci4, davinci5 and cpuset 0-23."""
    # npu-smi shows the mounted cards by their host NPU ids; CANN numbers them 0, 1 inside.
    chips = (
        Chip(
            4,
            0,
            0,
            "910B3",
            "0000:01:00.0",
            affinity="0-23",
            power=187.3,
            temp=52,
            aicore=38,
            mem_used=61_874,
        ),
        Chip(
            5,
            0,
            1,
            "910B3",
            "0000:02:00.0",
            affinity="0-23",
            power=184.9,
            temp=53,
            aicore=37,
            mem_used=61_690,
        ),
    )
    procs = (
        NpuProcess(4, 0, WORKER_PIDS[0], "VLLMWorker_TP0", 58_240),
        NpuProcess(5, 0, WORKER_PIDS[1], "VLLMWorker_TP1", 58_056),
    )
    serve = [
        "/usr/bin/python3",
        "/usr/local/bin/vllm",
        "serve",
        "/models/Qwen2.5-32B-Instruct",
        "--served-model-name",
        "qwen2.5-32b",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "32768",
        "--port",
        "8000",
    ]
    processes = [
        A2_IRQBALANCE,
        _container_proc(
            API_PID, "vllm", serve, 3418177, threads_of([(API_PID, "vllm", range(24))]), 2_411_520
        ),
        _container_proc(
            ENGINE_PID,
            "VLLM::EngineCor",
            ["VLLM::EngineCore"],
            API_PID,
            threads_of([(ENGINE_PID, "VLLM::EngineCor", range(24))]),
            3_170_304,
        ),
    ]
    for rank, pid in enumerate(WORKER_PIDS):
        fds = {
            0: "/dev/null",
            1: "pipe:[91823411]",
            2: "pipe:[91823412]",
            3: "anon_inode:[eventpoll]",
            24: "/dev/davinci_manager",
            25: "/dev/devmm_svm",
            26: "/dev/hisi_hdc",
            27: f"/dev/davinci{4 + rank}",
            31: f"socket:[9183{rank}077]",
        }
        # comm is cut to 15 characters, so both workers share it; cmdline tells them apart
        processes.append(
            _container_proc(
                pid,
                "VLLM::Worker_TP",
                [f"VLLM::Worker_TP{rank}"],
                ENGINE_PID,
                worker_threads(pid, bound=(rank == 0)),
                9_830_400,
                fds,
                CONTAINER_WORKER_ENV,
            )
        )
    return _a2_demo_base(  # sysfs and /proc/sys are the host's: neither is namespaced
        self_proc=demo_self(range(24), [0], "/", caps=DOCKER_CAPS, seccomp=2),
        processes=tuple(processes),
        npu_smi=NpuSmi(chips, version="24.1.rc1", processes=procs),
        meta=demo_meta(
            description,
            hostname="vllm-qwen-7f9c2d4b1e",
            # a slim container image: no numactl, and vLLM's own env
            tools={**TOOLS_ASCEND, "numactl": None, "migratepages": None, "irqbalance": None},
            env={"LANG": "C.UTF-8", "ASCEND_RT_VISIBLE_DEVICES": "0,1"},
            arch="aarch64",
            kernel="5.10.0-182.0.0.95.oe2203sp3.aarch64",
            os="Ubuntu 22.04.5 LTS (container on openEuler 22.03 LTS-SP3)",
            captured_by="ascendtune demo",
            npu_smi_version="24.1.rc1",
            container="docker, --device /dev/davinci4 /dev/davinci5, --cpuset-cpus 0-23, "
            "--cpuset-mems 0, --pid=host",
        ),
    )


# ---- Atlas 800I A3: 8 cards x 2 dies (910_93), 4 sockets x 40 cores x 2 threads, 8 nodes

A3_NODES = {n: frozenset(range(40 * n, 40 * n + 40)) for n in range(8)}
# card k, die d -> bus (as a real A3 box numbers them: card 0 at 9D/9F down to card 7 at 81/83)
A3_BUS = {(k, d): f"0000:{0x9D - 4 * k + 2 * d:02X}:00.0" for k in range(8) for d in range(2)}


def a3_link(a: int, b: int) -> str:
    # the two dies of one card talk over SIO; cards reach each other through the HCCS switch
    return "SIO" if a // 2 == b // 2 else "HCCS_SW"


def demo_atlas_800i_a3(description: str) -> HostSpec:
    chips = tuple(
        Chip(
            k,
            d,
            2 * k + d,
            "Ascend910",
            A3_BUS[(k, d)],
            power=None if d else 163.5 + (k * 37 % 11) / 2,
            temp=35 + (k + d) % 3,
            mem_used=3140 + (k * 3) % 9 if d == 0 else 2880 + (k * 5) % 9,
        )
        for k in range(8)
        for d in range(2)
    )
    # npu-smi has no affinity for A3; the PCI device's local_cpulist is the only hint
    pci = tuple(
        npu_pci(A3_BUS[(k, d)], "0xd803", k, A3_NODES[k]) for k in range(8) for d in range(2)
    )
    return HostSpec(
        # SMT on ARM numbers a core's two threads next to each other: CPU 2k and 2k+1
        cpus=Cpus(
            frozenset(range(320)), threads=adjacent(range(320), sockets=4), governor="performance"
        ),
        nodes=demo_nodes(A3_NODES, 256),
        node_lists=True,
        pci=pci,
        knobs=Knobs(0, 0, 5000000, THP, THP_DEFRAG),
        self_proc=demo_self(range(320), range(8), "/user.slice/user-0.slice/session-1.scope"),
        npu_smi=NpuSmi(
            chips,
            version="25.2.1",
            layout="a3",
            phy_col=True,
            link=a3_link,
            label="Phy-ID",
            legend=LEGEND_910_93,
        ),
        meta=demo_meta(
            description,
            hostname="atlas-800i-a3-demo",
            arch="aarch64",
            kernel="5.10.0-182.0.0.95.r1941_123.hce2.aarch64",
            os="Huawei Cloud EulerOS 2.0",
            captured_by="ascendtune demo",
            npu_smi_version="25.2.1",
            soc_version="Ascend910_9382",  # what torch_npu reports; npu-smi only says "Ascend910"
        ),
    )


# ---- x86_64 host with 4x Atlas 300I Duo (310P3, two chips per card)

DUO_NODES = {
    0: frozenset(range(0, 32)) | frozenset(range(64, 96)),
    1: frozenset(range(32, 64)) | frozenset(range(96, 128)),
}
# card (NPU id as npu-smi prints it) -> (bus, socket/node); NPU ids of 310P cards are sparse
DUO_CARDS = (
    (1, "0000:01:00.0", 0),
    (2, "0000:02:00.0", 0),
    (4, "0000:81:00.0", 1),
    (5, "0000:82:00.0", 1),
)


def demo_atlas_300i_duo(description: str) -> HostSpec:
    chips = tuple(
        Chip(
            npu,
            d,
            2 * i + d,
            "310P3",
            bus,
            affinity=DUO_NODES[node],
            power=None,
            temp=44 + (i + 2 * d) % 5,
            mem_used=1420 + 37 * i + 61 * d,
            mem_total=44280 if d == 0 else 43693,
        )
        for i, (npu, bus, node) in enumerate(DUO_CARDS)
        for d in range(2)
    )
    node_of_card = {i: node for i, (_, _, node) in enumerate(DUO_CARDS)}

    def duo_link(a: int, b: int) -> str:
        if a // 2 == b // 2:
            return "PIX"  # the two chips of a card sit behind the card's own PCIe switch
        return "PHB" if node_of_card[a // 2] == node_of_card[b // 2] else "SYS"

    # one PCI function per card: npu-smi prints the card's Bus-Id for both of its chips
    pci = tuple(npu_pci(bus, "0xd500", node, DUO_NODES[node]) for _, bus, node in DUO_CARDS)
    return HostSpec(
        cpus=Cpus(
            frozenset(range(128)),
            threads=upper_half(range(128), smt=2, sockets=2, core_ids="socket"),
            governor="powersave",
        ),
        nodes=demo_nodes(DUO_NODES, 256),
        node_lists=True,
        pci=pci,
        knobs=Knobs(1, 60, None, THP, THP_DEFRAG),
        self_proc=demo_self(range(128), range(2), "/user.slice/user-1000.slice/session-4.scope"),
        npu_smi=NpuSmi(chips, version="24.1.rc2", layout="310p", link=duo_link),
        meta=demo_meta(
            description,
            hostname="atlas-300i-duo-demo",
            arch="x86_64",
            kernel="5.15.0-105-generic",
            os="Ubuntu 22.04.4 LTS",
            captured_by="ascendtune demo",
            npu_smi_version="24.1.rc2",
        ),
    )


# ---- NVIDIA DGX H100: 8x H100 SXM5, NV18 all-to-all, 2x Xeon 8480C (56 cores, SMT)

DGX_NODES = {
    0: frozenset(range(0, 56)) | frozenset(range(112, 168)),
    1: frozenset(range(56, 112)) | frozenset(range(168, 224)),
}
DGX_GPU_BUS = ("1b", "43", "52", "61", "9d", "c3", "d1", "df")
DGX_NVSWITCH_BUS = ("05", "06", "07", "08")


def _dgx_nic_link(a: str, b: str) -> str:
    sock = {"GPU": 4, "NIC": 4}
    if a[3:] == b[3:]:
        return "PXB"  # each GPU and its ConnectX-7 share a PCIe switch
    return "NODE" if int(a[3:]) // sock[a[:3]] == int(b[3:]) // sock[b[:3]] else "SYS"


def demo_dgx_h100(description: str) -> HostSpec:
    def nvidia(bus: str, device: str, pci_class: str, node: int) -> Pci:
        return Pci(
            f"0000:{bus}:00.0",
            vendor="0x10de",
            device=device,
            pci_class=pci_class,
            numa_node=node,
            local_cpus=DGX_NODES[node],
            driver="nvidia",
            mask=True,
        )

    pci = [nvidia(bus, "0x2330", "0x030200", g // 4) for g, bus in enumerate(DGX_GPU_BUS)]
    # NVSwitches are NVIDIA PCI devices too (bridges), below GPU0's address: not GPUs
    pci += [nvidia(bus, "0x22a3", "0x068000", 0) for bus in DGX_NVSWITCH_BUS]
    return HostSpec(
        cpus=Cpus(
            frozenset(range(224)),
            threads=upper_half(range(224), smt=2, sockets=2, core_ids="socket"),
            governor="performance",
            # Sapphire Rapids: one L3 per socket, shared by its 56 cores and their siblings
            llc=(DGX_NODES[0], DGX_NODES[1]),
        ),
        nodes=demo_nodes(DGX_NODES, 1024),
        node_lists=True,
        pci=tuple(pci),
        knobs=Knobs(1, 60, None, THP, THP_DEFRAG),
        self_proc=demo_self(range(224), range(2), "/user.slice/user-1000.slice/session-7.scope"),
        nvidia_smi=NvidiaSmi(
            tuple(Gpu(format_cpulist(DGX_NODES[g // 4]), g // 4) for g in range(8)),
            nics=tuple(f"mlx5_{n}" for n in range(8)),
            nic_link=_dgx_nic_link,
        ),
        meta=demo_meta(
            description,
            hostname="dgx-h100-demo",
            tools={**TOOLS_ASCEND, "npu-smi": None, "nvidia-smi": "/usr/bin/nvidia-smi"},
            arch="x86_64",
            kernel="5.15.0-1053-nvidia",
            os="DGX OS 6 (Ubuntu 22.04.4 LTS)",
            captured_by="ascendtune demo",
            nvidia_driver_version="535.183.01",
        ),
    )


def demo_ascend_950(description: str) -> HostSpec:
    """The Ascend 950 layout (8 NPUs, 384 CPUs with SMT on 4 nodes), as a captured host."""
    nodes = {n: frozenset(range(96 * n, 96 * n + 96)) for n in range(4)}
    node_of = {a: int(a.split("-")[0]) // 96 for a in A5_AFFINITY}
    buses = [f"0000:{i + 1:02X}:00.0" for i in range(len(A5_AFFINITY))]
    chips = tuple(
        Chip(i, 0, i, "Ascend950DT", bus, affinity=a)
        for i, (bus, a) in enumerate(zip(buses, A5_AFFINITY, strict=True))
    )
    pci = tuple(
        npu_pci(bus, "0xd806", node_of[a], nodes[node_of[a]])
        for bus, a in zip(buses, A5_AFFINITY, strict=True)
    )
    return HostSpec(
        cpus=Cpus(
            frozenset(range(384)), threads=adjacent(range(384), sockets=2), governor="performance"
        ),
        nodes=demo_nodes(nodes, 256),
        node_lists=True,
        pci=pci,
        knobs=Knobs(0, 0, 50000, THP, THP_DEFRAG),
        self_proc=demo_self(range(384), range(4), "/user.slice/user-0.slice/session-2.scope"),
        npu_smi=NpuSmi(
            chips,
            version="25.5.0",
            logic_col=False,
            phy_col=True,
            slot_col=True,
            npu_id_procs=True,
        ),
        meta=demo_meta(
            description,
            hostname="ascend-950-demo",
            arch="aarch64",
            tools=TOOLS_ASCEND,
            kernel="6.6.0-28.0.0.34.oe2403.aarch64",
            os="openEuler 24.03 (LTS)",
            captured_by="ascendtune demo",
            npu_smi_version="25.5.0",
        ),
        files={"etc/os-release": OPENEULER_OS_RELEASE},
    )


DEMO_SPECS: dict[str, Callable[[str], HostSpec]] = {
    "atlas-800i-a2": demo_atlas_800i_a2,
    "atlas-800i-a3": demo_atlas_800i_a3,
    "atlas-300i-duo": demo_atlas_300i_duo,
    "container-a2-half": demo_container_a2_half,
    "ascend-950": demo_ascend_950,
    "dgx-h100": demo_dgx_h100,
}
