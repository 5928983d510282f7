"""The reference tier: every distinct vLLM-Ascend cpu_binding.py, run unchanged from its
release's sdist, against every demo, 240 hypothesis-generated hosts (60 each of A2, A3,
310P and 950), 60 Ascend 950 hosts its cluster allocator can bind (most in npu-smi's 950
layout), 60 of the generated hosts again with npu-smi's columns laid out otherwise, and a few
hand-made edge hosts; ascendtune's `plan --policy vllm-ascend` must agree with it on every rank
(bound or not, the NPU, main/acl/release CPUs, and the IRQ CPUs wherever it steered IRQs).

Run with `python3 -m pytest -m reference tests/reference` (it downloads the sdists once into
the shared cache; a failed download fails the tier)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, Pci, SelfProc, adjacent
from ascendtune.synth.standard import DEMO_SPECS
from ascendtune.synth.text import LEGEND_910_93
from tests.reference import harness as h
from tests.reference import hostgen

pytestmark = pytest.mark.reference

DEMOS = (
    ("atlas-800i-a2", "A2"),
    ("atlas-800i-a3", "A3"),
    ("atlas-300i-duo", "_310P"),
    ("container-a2-half", "A2"),
    ("ascend-950", "A5"),
)
PER_FAMILY = 60
A5_BINDABLE = 60
RELAID = 15


def demo_cases() -> list[h.Case]:
    return [h.Case(f"demo:{name}", DEMO_SPECS[name]("demo"), fam) for name, fam in DEMOS]


def crowded_cases() -> list[h.Case]:
    """Sixteen NPUs whose PCI devices sit on a node of ten CPUs, in a cpuset whose first range
    stops short of the whole: 0.9.1-0.13.0 compute an empty share and psutil reads
    cpu_affinity([]) as the first a-b range of Cpus_allowed_list (a random draw found it)."""
    node_cpus = {0: frozenset(range(10)), 1: frozenset(range(10, 20))}
    chips = tuple(
        Chip(i // 2, i % 2, i, "Ascend910", f"0000:{0x01 + 0x10 * (i // 2) + i % 2:02X}:00.0")
        for i in range(16)
    )
    out = []
    for allowed in ("0-8,10-12", "4,10-19", "0-19"):
        spec = HostSpec(
            cpus=Cpus(frozenset(range(20)), threads=adjacent(list(range(20)), smt=2)),
            nodes=tuple(Node(n, cs) for n, cs in node_cpus.items()),
            pci=tuple(
                Pci(
                    c.bus.lower(),
                    device="0xd803",
                    pci_class="0x120000",
                    numa_node=1 if c.logical_id < 14 else 0,
                    local_cpus=node_cpus[1 if c.logical_id < 14 else 0],
                )
                for c in chips
            ),
            self_proc=SelfProc(allowed, "0"),
            npu_smi=NpuSmi(chips, layout="a3", phy_col=True, label="Phy-ID", legend=LEGEND_910_93),
            meta={"arch": "aarch64"},
            meta_indent=None,
        )
        out.append(h.Case(f"crowded:{allowed}", spec, "A3", note="empty NUMA share"))
    return out


@pytest.fixture(scope="module")
def generated() -> list[h.Case]:
    drawn = [c for fam in hostgen.FAMILIES for c in hostgen.draw_cases(fam, PER_FAMILY)]
    # the first RELAID of each family again, npu-smi's columns laid out otherwise
    relaid = hostgen.relayout([c for i, c in enumerate(drawn) if i % PER_FAMILY < RELAID])
    return drawn + hostgen.a5_cases(A5_BINDABLE) + relaid


def _blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("impl", h.IMPLS, ids=lambda i: f"{i.blob}-{i.release}")
def test_release_is_that_implementation(impl: h.Impl) -> None:
    source = h.modules(impl)["vllm_ascend.cpu_binding"].encode()
    assert _blob(source).startswith(impl.blob)


@pytest.mark.parametrize("impl", h.IMPLS, ids=lambda i: f"{i.blob}-{i.release}")
def test_plan_matches_the_release(impl: h.Impl, generated: list[h.Case]) -> None:
    cases = demo_cases() + crowded_cases() + generated
    tally = h.compare(impl, cases)
    print(
        f"{impl.blob} ({impl.release}): {tally.cases} hosts, {tally.ranks} ranks, "
        f"{tally.bound} bound, {tally.skipped} not bound, {tally.irq_checked} IRQ pairs, "
        f"{tally.memory_moved} page migrations, bound by family {tally.bound_by_family}, "
        f"{len(tally.diffs)} differences"
    )
    assert tally.cases >= 200 + len(DEMOS)
    assert not tally.diffs, "\n".join(map(str, tally.diffs[:10]))
    # the tier must exercise both outcomes, or it proves little; and bind on every family the
    # release binds at all (0.22.1rc1 on: Ascend 950 too)
    assert tally.bound > 0 and tally.skipped > 0
    since_950 = tuple(int(x) for x in impl.release.split(".")[:2]) >= (0, 22)
    families = {"A2", "A3", "_310P"} | ({"A5"} if since_950 else set())
    assert families <= set(tally.bound_by_family), tally.bound_by_family


@pytest.mark.parametrize("blob", ["0cbc0e2b", "cc55125b"])
def test_whole_cli_matches_the_release(blob: str, tmp_path: object) -> None:
    """`ascendtune plan --json` as a user runs it (a separate process, the demo sysroot) gives
    the release's own binding for every rank."""
    impl = h.BY_BLOB[blob]
    case = h.Case("demo:atlas-800i-a2", DEMO_SPECS["atlas-800i-a2"]("demo"), "A2")
    ref = h.run_reference(impl, [case])[case.id]
    target = h.target_for(impl).name
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "ascendtune", "plan", "--demo", "atlas-800i-a2"),
            *("--policy", "vllm-ascend", "--target", target, "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "", "NO_COLOR": "1", "PYTHONPATH": str(h.REPO)},
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["ranks"]) == len(ref) == 8
    for rank, r in zip(doc["ranks"], ref, strict=True):
        out = h.reference_outcome(r, None, impl)
        assert out.bound
        assert rank["logical_id"] == out.npu
        assert h.cpus(rank["roles"]["main"]) == frozenset(out.main)
        assert h.cpus(rank["roles"]["acl"]) == frozenset(out.acl)
        assert h.cpus(rank["roles"]["release"]) == frozenset(out.release)
        assert out.irq is not None and h.cpus(rank["roles"]["irq"]) == frozenset(out.irq)
