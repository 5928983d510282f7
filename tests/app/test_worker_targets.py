"""Which CPUs `bind --workers` gives each worker when no plan file is given: the policy's plan
of the host; with `--policy auto` on a host where vLLM-Ascend binds nothing at all (the x86
300I Duo demo: it binds only on ARM), the NUMA-local plan, said in the source line."""

from __future__ import annotations

from ascendtune.app.hosts import open_root
from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.app.workers import WorkersOptions, resolve_targets
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
    assert "vLLM-Ascend binds nothing on this host: this host is x86_64" in source
    assert sorted(by_device) == list(range(8)) and unbound == {}  # type: ignore[call-overload]


def test_vllm_ascend_given_leaves_every_worker_unbound_with_the_reason() -> None:
    source, by_device, unbound = _targets("vllm-ascend")
    assert isinstance(source, str) and source.startswith("vllm-ascend plan of demo")
    assert by_device == {}
    assert isinstance(unbound, dict) and sorted(unbound) == list(range(8))
    assert all("binds CPUs only on ARM" in why for why in unbound.values())
