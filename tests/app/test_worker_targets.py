"""Which CPUs `bind --workers` gives each worker when no plan file is given: the policy's plan
of the host; with `--policy auto` on a host where vLLM-Ascend binds nothing at all (the x86
300I Duo demo: it binds only on ARM), the NUMA-local plan, said in the source line."""

from __future__ import annotations

import pytest

from ascendtune.app.bind import resolve_target
from ascendtune.app.hosts import open_root
from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.app.workers import WorkersOptions, resolve_targets
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import InvalidInput
from ascendtune.host.reader import read_host


def _targets(policy: str) -> tuple[object, ...]:
    source = HostSource(demo="atlas-300i-duo")
    root = open_root(source)
    t = resolve_targets(
        WorkersOptions(source=source, plan=PlanOptions(policy=policy)), root, read_host(root)
    )
    return t.source, t.by_device, t.unbound


def test_auto_binds_numa_local_where_vllm_ascend_binds_nothing() -> None:
    source, by_device, unbound = _targets("auto")
    assert isinstance(source, str) and source.startswith("numa-local plan of demo")
    assert "vLLM-Ascend binds nothing on this host (this host is x86_64" in source
    assert source.endswith("numa-local stands in)")
    assert sorted(by_device) == list(range(8)) and unbound == {}  # type: ignore[call-overload]


def test_vllm_ascend_given_leaves_every_worker_unbound_with_the_reason() -> None:
    source, by_device, unbound = _targets("vllm-ascend")
    assert isinstance(source, str) and source.startswith("vllm-ascend plan of demo")
    assert by_device == {}
    assert isinstance(unbound, dict) and sorted(unbound) == list(range(8))
    assert all("binds CPUs only on ARM" in why for why in unbound.values())


def _rank_target(policy: str) -> object:
    return resolve_target(
        cpus=None,
        rank=0,
        plan_file=None,
        source=HostSource(demo="atlas-300i-duo"),
        plan=PlanOptions(policy=policy),
        plan_opts_given=[],
        dry_run=True,
    )


def test_bind_rank_with_auto_binds_numa_local_where_vllm_ascend_binds_nothing() -> None:
    t = _rank_target("auto")
    assert format_cpulist(t.cpus) == "0-7,64-71"  # type: ignore[attr-defined]
    assert t.source.startswith("numa-local plan of demo")  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match=r"gives this rank no CPU \(this host is x86_64"):
        _rank_target("vllm-ascend")


def test_doctor_compares_workers_with_the_plan_bind_would_apply() -> None:
    from ascendtune.app.doctor import plan_facts

    source = HostSource(demo="atlas-300i-duo")
    root = open_root(source)
    host = read_host(root)
    auto = plan_facts(host, None, PlanOptions(), root)
    assert auto.policy == "numa-local" and auto.note and "x86_64" in auto.note
    assert auto.bind_command(0, 42) == "ascendtune bind --rank 0 --pid 42 --policy numa-local"
    given = plan_facts(host, None, PlanOptions(policy="vllm-ascend"), root)
    assert given.policy == "vllm-ascend" and given.note is None
