"""The NPU interrupt CPUs against the kubelet's reservation, judged from the model: which
interrupts count as pinned, whole cores in the fragment, the kubelet's --reserved-cpus flag,
the options the fragment keeps, and the CPU manager `none`."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.doctor.irq import NpuIrqPlacement
from ascendtune.core.k8s.align import assess
from ascendtune.core.k8s.config import DEFAULT, parse_kubelet_config, with_flags
from ascendtune.core.k8s.irq import irq_findings, pinned, reservation_fragment
from ascendtune.core.k8s.view import SOURCE_FILES, ContainerGrant, DeviceRef, KubeletView, PodGrant
from ascendtune.core.model import Host
from ascendtune.host.reader import read_host
from ascendtune.host.roots import open_root
from ascendtune.synth.standard import atlas_800i_a3
from tests.support.builder import SysrootBuilder


@pytest.fixture(scope="module")
def a3(tmp_path_factory: pytest.TempPathFactory) -> Host:
    """16 NPUs, 4 nodes of 64 CPUs, SMT: CPUs 2k and 2k+1 are one core."""
    root = tmp_path_factory.mktemp("a3")
    SysrootBuilder(root).spec(atlas_800i_a3())
    return read_host(open_root(str(root)))


def view(policy: str = "static", reserved: str | None = "0-1", **options: str) -> KubeletView:
    cfg = DEFAULT._replace(
        cpu_manager_policy=policy,
        cpu_manager_options=MappingProxyType(options),
        reserved_cpus=None if reserved is None else parse_cpulist(reserved),
    )
    pod = PodGrant(
        "uid-b",
        "b",
        "ns",
        (ContainerGrant("c", parse_cpulist("64-95"), (DeviceRef("huawei.com/Ascend910", "Ascend910-4"),)),),
    )  # fmt: skip
    return KubeletView(SOURCE_FILES, cfg, policy, None, None, (pod,))


def irq(npu: int, cpus: str) -> NpuIrqPlacement:
    return NpuIrqPlacement(npu, 1000 + 2 * npu, 1001 + 2 * npu, parse_cpulist(cpus))


def test_an_interrupt_on_every_cpu_is_not_pinned(a3: Host) -> None:
    got = pinned([irq(0, "0-255"), irq(1, "2"), irq(2, "")], a3)
    assert [p.logical_id for p in got] == [1]
    v = view()
    assessments, node = irq_findings(v, a3, assess(v, a3), [irq(0, "0-255")])
    assert node == [] and all(f.code != "k8s_irq_in_pod" for a in assessments for f in a.findings)


def test_the_fragment_reserves_whole_cores(a3: Host) -> None:
    v = view(reserved="0-1", **{"full-pcpus-only": "true"})
    _, (f,) = irq_findings(v, a3, assess(v, a3), [irq(9, "130")])
    assert (
        f.code == "k8s_irq_unreserved" and "NPU 9's interrupts are pinned on CPU 130" in f.message
    )
    assert f.fragment == (
        'reservedSystemCPUs: "0-1,130-131"\ncpuManagerPolicyOptions:\n'
        '  full-pcpus-only: "true"\n  strict-cpu-reservation: "true"'
    )


def test_a_foreign_npus_interrupt_in_a_pod_names_it(a3: Host) -> None:
    v = view()
    assessments, node = irq_findings(v, a3, assess(v, a3), [irq(12, "70")])
    (f,) = [f for f in assessments[0].findings if f.code == "k8s_irq_in_pod"]
    assert f.severity == "warn" and f.message.startswith("ns/b container c, exclusive CPUs 64-95:")
    assert "CPU 70 takes NPU 12's interrupts (sq_send_trigger_irq IRQ 1024, cq_update_irq IRQ 1025, an NPU it does not hold)" in f.message  # fmt: skip
    assert node[0].fragment == f.fragment and f.fragment is not None
    assert f.fragment.startswith('reservedSystemCPUs: "0-1,70-71"')


def test_reserved_but_held_by_a_pod_says_the_state_predates_it(a3: Host) -> None:
    v = view(reserved="0-1,70-71")
    assessments, node = irq_findings(v, a3, assess(v, a3), [irq(12, "70")])
    assert node == []
    (f,) = [f for f in assessments[0].findings if f.code == "k8s_irq_in_pod"]
    assert f.fragment is None and "predate the reservation" in (f.fix or "")


def test_the_cpu_manager_none_says_nothing(a3: Host) -> None:
    v = view(policy="none", reserved=None)
    assessments, node = irq_findings(v, a3, assess(v, a3), [irq(12, "70"), irq(1, "3")])
    assert node == []
    assert assessments == assess(v, a3)


def test_the_reserved_cpus_flag_overrides_the_file() -> None:
    cfg = parse_kubelet_config('reservedSystemCPUs: "0-1"\n')
    assert with_flags(cfg, ["/usr/bin/kubelet", "--config=/var/lib/kubelet/config.yaml"]) == cfg
    got = with_flags(cfg, ["/usr/bin/kubelet", "--reserved-cpus=0-3"])
    assert got.reserved_cpus == frozenset(range(4)) and got.reserved_flag
    assert any("--reserved-cpus=0-3 overrides reservedSystemCPUs" in n for n in got.notes)
    got = with_flags(DEFAULT, ["kubelet", "--reserved-cpus", "4,6"])
    assert got.reserved_cpus == frozenset({4, 6}) and got.notes == ()
    bad = with_flags(cfg, ["kubelet", "--reserved-cpus=x-y"])
    assert bad.reserved_cpus == frozenset({0, 1}) and bad.notes and not bad.reserved_flag


def test_the_fragment_keeps_strict_when_on() -> None:
    cfg = DEFAULT._replace(cpu_manager_options=MappingProxyType({"strict-cpu-reservation": "true"}))
    assert reservation_fragment(cfg, frozenset({0, 1})) == 'reservedSystemCPUs: "0-1"'
