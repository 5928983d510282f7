"""The vendor registry (ascendtune.core.vendors): one profile per Vendor, what each profile says,
what registering a third vendor takes, and NUMA guesses that never override a tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import pytest

from ascendtune.core import vendors
from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.doctor import WorkerFacts
from ascendtune.core.model import Accelerator, Host, Soc, Source, Vendor
from ascendtune.core.planner import PlanRequest, make_plan
from ascendtune.core.vendors import ascend
from ascendtune.core.vendors.base import (
    Command,
    ToolCheck,
    VendorInput,
    VendorProfile,
    VendorReading,
    placed_by_affinity,
)
from ascendtune.host import pci, snapshot, workers
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, command_file
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI

FIXTURES = Path(__file__).parents[1] / "fixtures"


# ---------------------------------------------------------------------------- the registry


def test_every_vendor_has_one_profile() -> None:
    assert {p.vendor for p in vendors.profiles()} == set(Vendor)
    for v in Vendor:
        assert vendors.profile(v).vendor is v
        assert vendors.profile(v.value) is vendors.profile(v)  # as JSON documents carry it
    with pytest.raises(KeyError):
        vendors.profile("acme")


def test_ascend_profile() -> None:
    p = vendors.profile(Vendor.HUAWEI)
    assert p is vendors.ASCEND
    assert (p.word, p.tool, p.visible_devices_env) == (
        "NPU",
        "npu-smi",
        "ASCEND_RT_VISIBLE_DEVICES",
    )
    assert p.pci_vendor_id == "0x19e5" and p.pci_class_prefix == "0x12"
    assert [c.argv for c in p.commands] == [
        ("npu-smi", "info"),
        ("npu-smi", "info", "-m"),
        ("npu-smi", "info", "-t", "topo"),
    ]
    assert p.tools == ("npu-smi",)
    assert p.fallbacks("npu-smi") == ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi")
    assert p.device_file == "davinci" and p.documents == ()
    assert p.thread_roles and p.processes_from == "npu-smi"
    assert (p.default_policy, p.card_columns, p.merge_device_notes) == ("vllm-ascend", True, False)
    from ascendtune.core.planner import compare_policies

    assert compare_policies(Vendor.HUAWEI) == ("vllm-ascend", "numa-local", "numa-slice")
    # one table: names and SoC families of the same ids
    assert p.device_names["0xd802"] == "Ascend 910B"
    assert ascend.SOC_OF_DEVICE_ID == {
        "0xd802": Soc.A2,
        "0xd803": Soc.A3,
        "0xd500": Soc.P310,
        "0xd806": Soc.A5,
    }
    assert set(ascend.SOC_OF_DEVICE_ID) <= set(p.device_names)
    # Huawei NICs (0x1822) without a class file are not NPUs; with one, the class decides
    assert p.is_accelerator("0xd801", None) and not p.is_accelerator("0x1822", None)
    assert p.is_accelerator("0x1822", "0x120000") and not p.is_accelerator("0xd802", "0x020000")
    assert p.device_file_number("/dev/davinci3") == 3
    assert p.device_file_number("/dev/davinci_manager") is None


def test_nvidia_profile() -> None:
    p = vendors.profile(Vendor.NVIDIA)
    assert p is vendors.NVIDIA
    assert (p.word, p.tool, p.visible_devices_env) == ("GPU", "nvidia-smi", "CUDA_VISIBLE_DEVICES")
    assert p.pci_vendor_id == "0x10de" and p.pci_class_prefix == "0x03"
    assert [c.argv for c in p.commands] == [("nvidia-smi", "topo", "-m")]
    assert p.fallbacks("nvidia-smi") == ()
    assert p.documents == ("commands/nvml.json",)
    assert p.device_file == "nvidia" and not p.thread_roles and p.processes_from == "nvml"
    assert (p.default_policy, p.card_columns, p.merge_device_notes) == ("numa-local", False, True)
    assert "GH200" in p.cpuless_node_note
    # NVSwitches are no GPUs, even without a class file; unknown GPU ids are
    assert not p.is_accelerator("0x22a3", None) and p.is_accelerator("0x9999", None)
    assert not p.is_accelerator("0x2330", "0x068000")
    assert p.device_file_number("/dev/nvidia7") == 7
    assert p.device_file_number("/dev/nvidiactl") is None
    assert p.device_file_number("/dev/nvidia-uvm") is None
    assert p.device_name(None) == "NVIDIA GPU"


def test_profiles_are_frozen() -> None:
    # a NamedTuple (cheap to define at start-up): no attribute can be set or added
    with pytest.raises(AttributeError):
        vendors.ASCEND.word = "GPU"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        vendors.ASCEND.extra = 1  # type: ignore[attr-defined]
    assert vendors.ASCEND.word == "NPU"


def test_by_pci_vendor_and_device_file() -> None:
    assert vendors.by_pci_vendor("0x19E5\n") is vendors.ASCEND
    assert vendors.by_pci_vendor("0x10de") is vendors.NVIDIA
    assert vendors.by_pci_vendor("0x8086") is None
    assert vendors.by_device_file("/dev/davinci2") == (vendors.ASCEND, 2)
    assert vendors.by_device_file("/dev/nvidia0") == (vendors.NVIDIA, 0)
    assert vendors.by_device_file("/dev/null") is None


def _host(*accs: Accelerator) -> Host:
    return Host(
        cpus_online=frozenset({0}),
        cpus={},
        cpus_allowed=frozenset({0}),
        mems_allowed=None,
        numa_nodes=(),
        accelerators=accs,
    )


def _acc(vendor: Vendor, i: int) -> Accelerator:
    return Accelerator(vendor, i, i, None, "x", None, None, frozenset(), None)


def test_vendor_of_a_host() -> None:
    assert vendors.vendor_of(None) is vendors.ASCEND
    assert vendors.vendor_of(_host()) is vendors.ASCEND  # no device: the tool's own vendor
    assert vendors.vendor_of(_host(_acc(Vendor.NVIDIA, 0))) is vendors.NVIDIA
    # both on one host: the first registered wins, as the planner always did (npus or gpus)
    both = _host(_acc(Vendor.NVIDIA, 0), _acc(Vendor.HUAWEI, 1))
    assert vendors.vendor_of(both) is vendors.ASCEND
    assert vendors.NVIDIA.accelerators(both) == (both.accelerators[0],)
    assert vendors.NVIDIA.soc_of(both) is Soc.GPU


# ---------------------------------------------------------------------------- a third vendor


class FakeVendor(str, Enum):
    """Stands for a new member of Vendor (an Enum cannot grow at run time)."""

    ACME = "acme"


ACME_TOPO = Command(("acme-smi", "topo"), ("/opt/acme/bin/acme-smi",))


def _acme_read(inp: VendorInput) -> VendorReading:
    """`acme-smi topo` prints `<index> <bus id> <cpulist>` per device."""
    text = inp.text(ACME_TOPO) or ""
    out = []
    by_bus = {d.bus_id: d for d in inp.pci}
    for line in text.splitlines():
        idx, bus, cpus = line.split()
        aff = parse_cpulist(cpus)
        dev = by_bus.get(bus)
        numa, nsrc = placed_by_affinity(aff, Source.SYSFS, inp.nodes)
        out.append(
            Accelerator(
                vendor=FakeVendor.ACME,  # type: ignore[arg-type]
                logical_id=int(idx),
                npu_id=int(idx),
                chip_id=None,
                name=ACME.device_name(dev),
                bus_id=bus,
                numa_node=numa,
                cpu_affinity=aff,
                affinity_source=Source.SYSFS,
                tool_affinity=aff,
                numa_source=nsrc,
            )
        )
    return VendorReading(accelerators=tuple(out), notes=("acme-smi read",))


ACME = VendorProfile(
    vendor=FakeVendor.ACME,  # type: ignore[arg-type]
    word="XPU",
    tool="acme-smi",
    pci_vendor_id="0x1234",
    pci_class_prefix="0x12",
    device_names={"0x0001": "Acme X1"},
    generic_name="Acme XPU",
    known_ids_only=True,
    not_accelerators=frozenset(),
    device_file="acme",
    visible_devices_env="ACME_VISIBLE_DEVICES",
    commands=(ACME_TOPO,),
    documents=(),
    processes_from="acme-smi",
    thread_roles=False,
    default_policy="numa-local",
    card_columns=False,
    merge_device_notes=True,
    cpuless_node_note="",
    read=_acme_read,
    soc_of=lambda host: Soc.UNKNOWN,
)


@pytest.fixture
def acme() -> Iterator[VendorProfile]:
    vendors.register(ACME)
    yield ACME
    vendors.unregister(ACME.vendor)  # type: ignore[arg-type]


def _acme_host(sb: SysrootBuilder) -> SysrootBuilder:
    sb.cpus("0-7").nodes_even(2, 4).allowed("0-7", "0-1")
    sb.pci("0000:41:00.0", vendor="0x1234", device="0x0001", numa_node=1, local_cpulist="4-7")
    sb.pci("0000:42:00.0", vendor="0x1234", device="0x0bad", numa_node=1)  # an Acme NIC
    sb.command("acme-smi_topo", "0 0000:41:00.0 4-7\n")
    sb.proc(77, comm="acme-worker", cpus_allowed="0-7", fds={5: "/dev/acme0", 6: "/dev/acmectl"})
    return sb


def test_a_registered_vendor_is_read_filtered_found_and_captured(
    acme: VendorProfile, sysroot: SysrootBuilder
) -> None:
    """Everything the host layer does for a vendor comes from its profile: no host file names it."""
    root = DirRoot(_acme_host(sysroot).root)
    assert vendors.profiles()[-1] is acme
    # the PCI filter: known ids only (the NIC is left out)
    assert [d.bus_id for d in pci.pci_from_sysfs(root)] == ["0000:41:00.0"]
    host = read_host(root)
    (a,) = host.accelerators
    assert (a.vendor, a.logical_id, a.name, format_cpulist(a.cpu_affinity)) == (
        FakeVendor.ACME,
        0,
        "Acme X1",
        "4-7",
    )
    assert (a.numa_node, a.numa_source) == (1, Source.SYSFS)
    assert "acme-smi read" in host.notes
    assert dict(host.tools) == {"acme-smi": None}
    assert vendors.vendor_of(host) is acme
    # worker discovery: /dev/acme0 is a device, /dev/acmectl is not
    (w,) = workers.find_workers(root, host)
    assert (w.pid, w.devices, w.vendor, w.found_by) == (77, (0,), "acme", ("fd",))
    # doctor's word for the worker
    from ascendtune.core.doctor.workers import _dev_word

    assert _dev_word(WorkerFacts(77, (0,), ("fd",), vendor="acme")) == "XPU"
    # snapshot: its command replays, its PCI device's files are captured, its variable recorded
    cap = snapshot.capture(root)
    assert command_file(list(ACME_TOPO.argv)) in cap.files
    assert "sys/bus/pci/devices/0000:41:00.0/local_cpulist" in cap.files
    assert "ACME_VISIBLE_DEVICES" in snapshot.env_keys()


def test_unregister_keeps_the_built_in_vendors(acme: VendorProfile) -> None:
    vendors.unregister(Vendor.NVIDIA)
    assert vendors.profile(Vendor.NVIDIA) is vendors.NVIDIA
    vendors.unregister(acme.vendor)  # type: ignore[arg-type]
    assert {p.vendor for p in vendors.profiles()} == set(Vendor)


# ---------------------------------------------------------------------------- NUMA guesses


def _no_node_files_dgx(sb: SysrootBuilder) -> SysrootBuilder:
    """Eight GPUs on two sockets, read from a sysroot that has no sys/devices/system/node."""
    sb.cpus("0-127", smt=2, sockets=2).allowed("0-127")
    for i in range(8):
        sb.pci(f"0000:{0x18 + 0x10 * i:02x}:00.0", vendor="0x10de", device="0x2330")
    topo = (FIXTURES / "nvidia" / "topo_m_8gpu_nv18_two_nodes.txt").read_text()
    return sb.command("nvidia-smi_topo_-m", topo)


def test_a_guessed_node_never_widens_the_affinity_nvidia_smi_printed(
    sysroot: SysrootBuilder,
) -> None:
    """Without node files one node 0 holding every CPU is assumed; it used to stand in for the
    hardware affinity of node-0 GPUs (0-31,64-95 became 0-127) while node-1 GPUs kept theirs."""
    host = read_host(DirRoot(_no_node_files_dgx(sysroot).root))
    (node,) = host.numa_nodes
    assert node.guessed and node.id == 0 and format_cpulist(node.cpus) == "0-127"
    got = {
        a.logical_id: (format_cpulist(a.cpu_affinity), a.affinity_source, a.numa_node)
        for a in host.gpus
    }
    near, far = "0-31,64-95", "32-63,96-127"
    assert got == {
        g: (near if g < 4 else far, Source.NVIDIA_SMI, 0 if g < 4 else 1) for g in range(8)
    }
    # the node nvidia-smi printed is the tool's word, not a guess
    assert {a.numa_source for a in host.gpus} == {Source.NVIDIA_SMI}
    assert not any("hardware affinity taken as the CPUs of its NUMA node" in n for n in host.notes)


def test_a_node_placed_on_the_guessed_node_is_marked_a_guess(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-15").allowed("0-15")
    sysroot.pci("0000:18:00.0", vendor="0x10de", device="0x2330", local_cpulist="0-7")
    sysroot.pci("0000:c1:00.0", local_cpulist="8-15")  # an Ascend NPU, no npu-smi
    host = read_host(DirRoot(sysroot.root))
    for a in host.accelerators:
        assert (a.numa_node, a.numa_source, a.affinity_source) == (0, Source.GUESS, Source.SYSFS)


def test_real_nodes_keep_the_affinity_source(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-15").nodes_even(2, 8).allowed("0-15", "0-1")
    sysroot.pci("0000:18:00.0", vendor="0x10de", device="0x2330", local_cpulist="8-15")
    (a,) = read_host(DirRoot(sysroot.root)).gpus
    assert (a.numa_node, a.numa_source) == (1, Source.SYSFS)
    assert not any(n.guessed for n in read_host(DirRoot(sysroot.root)).numa_nodes)


def test_the_guessed_host_still_plans(sysroot: SysrootBuilder) -> None:
    host = read_host(DirRoot(_no_node_files_dgx(sysroot).root))
    plan = make_plan(host, PlanRequest(policy="node"))
    assert len(plan.ranks) == 8
    assert json.dumps(vendors.links_json(host.links))  # links came from nvidia-smi


# ---------------------------------------------------------------------------- kept equal to cli/


def test_front_end_fields_match_what_the_app_decides() -> None:
    """The application layer takes these from the profiles."""
    from ascendtune.app import plan as app_plan
    from ascendtune.core.planner import POLICIES

    npu, gpu = _host(_acc(Vendor.HUAWEI, 0)), _host(_acc(Vendor.NVIDIA, 0))
    assert app_plan.resolve_policy(npu, "auto") == "vllm-ascend"
    assert app_plan.resolve_policy(gpu, "auto") == "numa-local"
    for host in (npu, gpu, _host()):
        assert app_plan.resolve_policy(host, "auto") == vendors.vendor_of(host).default_policy
    for p in vendors.profiles():
        assert p.default_policy in POLICIES and p.vendor in POLICIES[p.default_policy].vendors


def test_a_new_vendor_compares_the_policies_its_profile_names(
    acme: VendorProfile, sysroot: SysrootBuilder
) -> None:
    """`plan --policy compare` on a vendor the planner never heard of: the profile's families
    (ascendtune's own by default), no edit of the planner."""
    from ascendtune.core.planner import POLICIES, compare_policies

    assert acme.compare_families == ("ascendtune",)
    assert compare_policies(acme.vendor) == ("numa-local", "numa-slice")
    assert acme.vendor in POLICIES["numa-local"].vendors
    assert acme.vendor not in POLICIES["vllm-ascend"].vendors
    res = CLI("plan", "--sysroot", str(_acme_host(sysroot).root), "--policy", "compare", "--json")
    assert res.exit_code == 0, res.output
    assert list(json.loads(res.stdout)["policies"]) == ["numa-local", "numa-slice"]


def test_link_codes_and_their_legend_are_the_profiles() -> None:
    nv, npu = vendors.NVIDIA, vendors.ASCEND
    assert nv.link_key("NV18") == "NV#" and nv.link_short("NV18") == "N18"
    assert nv.link_key("NVX") is None and nv.link_short("NVX") == "NVX"
    assert npu.link_short("HCCS") == "HC" and npu.link_key("NV4") is None
    assert list(npu.links)[:4] == ["HCCS", "HCCS_SW", "SIO", "UB"]
    assert set(vendors.PCIE_LINKS) <= set(npu.links) & set(nv.links)


def test_the_tools_map_and_what_topo_shows_of_it() -> None:
    host = Host(frozenset({0}), {}, frozenset({0}), None, (), tools={"npu-smi": "24.1"})
    assert vendors.ASCEND.tool_document(host) == {"found": True, "version": "24.1"}
    assert vendors.NVIDIA.tool_document(host) == {"found": False}
    assert vendors.ASCEND.topo_header(host) == "npu-smi 24.1"
    assert vendors.NVIDIA.topo_header(host) is None  # no GPU: nothing to say of nvidia-smi


def test_a_vendor_tool_check_is_a_doctor_row(acme: VendorProfile, sysroot: SysrootBuilder) -> None:
    from ascendtune.core.doctor.host_rules import host_rules

    assert "acme_smi" not in [r.id for r in host_rules()]  # no check declared: no row
    vendors.register(acme._replace(tool_check=ToolCheck("install acme-tools", "nothing binds")))
    ids = [r.id for r in host_rules()]
    assert ids.index("acme_smi") == ids.index("npu_smi") + 1  # the vendor rows, in order
    res = CLI("doctor", "--sysroot", str(_acme_host(sysroot).root), "--json")
    rows = {c["id"]: c for c in json.loads(res.stdout)["checks"]}
    assert (rows["acme_smi"]["status"], rows["acme_smi"]["value"]) == ("ok", "acme-smi found")
    assert rows["npu_smi"]["detail"] == "no Ascend NPU on this host"
