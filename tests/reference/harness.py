"""The differential harness: one synthetic host, two answers. The release's own cpu_binding.py
runs in tests/reference/sandbox.py (a subprocess) against the host's rendered files and command
outputs; ascendtune plans the same host (its sysroot, in memory); `compare` lists every rank
where the two disagree on the outcome (bound or not), the NPU, the pools and roles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any

from ascendtune.core import vllm_ascend
from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.errors import AscendtuneError
from ascendtune.core.planner import PlanRequest, make_plan
from ascendtune.core.planner import impls as planner_impls
from ascendtune.host.reader import read_host
from ascendtune.host.roots import MemRoot
from ascendtune.synth import tools
from ascendtune.synth.render import render
from ascendtune.synth.spec import HostSpec, NpuProcess
from ascendtune.synth.text import board
from tests.reference import releases

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Impl:
    """One distinct cpu_binding.py: its blob, the release the tier runs, how its worker calls
    it ("ratio": bind_cpus(rank, ratio=1.0); "rank": bind_cpus(rank); "npu_id": with
    npu_id=device_id_to_physical_device_id(rank); "migrate": and migrate_memory=)."""

    blob: str
    release: str
    call: str
    siblings: tuple[str, ...] = ()  # the release's own pure modules cpu_binding imports


IMPLS: tuple[Impl, ...] = (
    Impl("2cb1e84a", "0.9.1", "ratio"),
    Impl("280e516e", "0.13.0", "ratio"),
    Impl("062ff4f9", "0.14.0rc1", "rank"),
    Impl("c09e740a", "0.15.0rc1", "rank"),
    Impl("abb80aa1", "0.18.0rc1", "rank"),
    Impl("10967e04", "0.18.0", "rank"),
    Impl("2d5ba9ec", "0.20.2rc1", "rank"),
    Impl("7b815e31", "0.21.0rc1", "rank"),
    Impl("5a947c7b", "0.22.1rc1", "rank"),
    Impl("0cbc0e2b", "0.25.1rc1", "rank"),
    Impl("cc55125b", "0.26.0rc1", "npu_id"),
    Impl("daab93aa", "0.29.0rc1", "npu_id", ("hardware", "device_config", "hardware_profile")),
    Impl("7ed2022f", "0.30.0rc2", "migrate", ("hardware", "device_config", "hardware_profile")),
)
BY_BLOB = {i.blob: i for i in IMPLS}


def modules(impl: Impl) -> dict[str, str]:
    """The release's modules the sandbox executes, read from its sdist (never written out)."""
    out = {"vllm_ascend.cpu_binding": _text(impl.release, "vllm_ascend/cpu_binding.py")}
    for name in impl.siblings:
        out[f"vllm_ascend.device.{name}"] = _text(impl.release, f"vllm_ascend/device/{name}.py")
    return out


def _text(release: str, path: str) -> str:
    data = releases.member(release, path)
    if data is None:
        raise RuntimeError(f"vllm_ascend {release} has no {path}")
    return data.decode()


# ------------------------------------------------------------------ one host, one job


@dataclass
class Case:
    """A host and a job on it: the visible list (None: the variable unset), the NPUs with a
    process in npu-smi's table, and the vLLM-Ascend build's device family."""

    id: str
    spec: HostSpec
    family: str  # "A2", "A3", "_310P", "A5": what the installed vllm_ascend was built for
    visible: tuple[int, ...] | None = None
    busy: tuple[int, ...] | None = None  # None: every NPU the job drives
    engram_offload: bool = False
    irq_writable: bool = True
    tools: tuple[str, ...] = ("npu-smi", "lscpu", "lspci", "taskset", "migratepages", "ps")
    note: str = ""
    _tree: Any = field(default=None, repr=False)
    _host: Any = field(default=None, repr=False)

    @property
    def arch(self) -> str:
        return str((self.spec.meta or {}).get("arch", "aarch64"))

    def busy_ids(self) -> tuple[int, ...]:
        return self.busy if self.busy is not None else tuple(self.job())

    def tree(self) -> Any:
        """The host's sysroot, npu-smi's process table listing exactly the busy NPUs (binding
        runs after warm-up, when the job's own workers show there)."""
        if self._tree is None:
            smi = self.spec.npu_smi
            assert smi is not None
            busy = set(self.busy_ids())
            procs = tuple(
                NpuProcess(c.npu_id, c.chip_id, 50000 + c.logical_id, "python3")
                for c in smi.chips
                if c.logical_id in busy
            )
            self.spec = dc_replace(self.spec, npu_smi=dc_replace(smi, processes=procs))
            self._tree = render(self.spec)
        return self._tree

    def host(self) -> Any:
        """The host read from tree(), once: every release's payload and prediction of this
        case reads the same tree (read_host is pure; the Host it gives is not changed)."""
        if self._host is None:
            tree = self.tree()
            self._host = read_host(MemRoot(dict(tree.files), dict(tree.links)))
        return self._host

    def logical_ids(self) -> list[int]:
        assert self.spec.npu_smi is not None
        return sorted(c.logical_id for c in self.spec.npu_smi.chips)

    def job(self) -> list[int]:
        return list(self.visible) if self.visible is not None else self.logical_ids()


def payload(case: Case, impl: Impl) -> dict[str, Any]:
    """What the sandbox needs to answer the release's reads and commands for this case."""
    tree = case.tree()
    spec = case.spec
    smi = spec.npu_smi
    assert smi is not None
    files = {"/" + p: t for p, t in tree.files.items() if p.startswith(("proc/", "sys/"))}
    commands: dict[str, str] = {}
    for name, argv in (
        ("npu-smi_info", "npu-smi info"),
        ("npu-smi_info_-m", "npu-smi info -m"),
        ("npu-smi_info_-t_topo", "npu-smi info -t topo"),
    ):
        body = tree.files.get(f"commands/{name}.txt")
        if body is not None:
            commands[argv] = body
    for chip in smi.chips:
        text = board(chip)
        commands[f"npu-smi info -t board -i {chip.npu_id} -c {chip.chip_id}"] = text
        if chip.chip_id == min(c.chip_id for c in smi.chips if c.npu_id == chip.npu_id):
            commands[f"npu-smi info -t board -i {chip.npu_id}"] = text
    commands["lscpu"] = tools.lscpu(spec, case.arch)
    commands["lscpu -e=CPU,NODE"] = tools.lscpu_e(spec)
    for dev in spec.pci:
        commands[f"lspci -s {dev.bdf.lower()} -vvv"] = tools.lspci_vvv(dev)
    buses = sorted({c.bus.lower() for c in smi.chips})
    interrupts, msi = tools.npu_irqs(buses)
    files["/proc/interrupts"] = interrupts
    dirs = {f"/sys/bus/pci/devices/{bus}/msi_irqs": names for bus, names in msi.items()}
    env = {}
    if case.visible is not None:
        env["ASCEND_RT_VISIBLE_DEVICES"] = ",".join(map(str, case.visible))
    host = case.host()
    calls = []
    for rank, _device in enumerate(case.job()):
        kwargs: dict[str, Any] = {}
        if impl.call == "ratio":
            kwargs["ratio"] = 1.0
        if impl.call in ("npu_id", "migrate"):
            # vLLM's device_id_to_physical_device_id(local_rank): the rank-th entry of the
            # visible list, else the rank itself
            kwargs["npu_id"] = case.visible[rank] if case.visible is not None else rank
        if impl.call == "migrate":
            kwargs["migrate_memory"] = not case.engram_offload
        calls.append({"args": [rank], "kwargs": kwargs})
    return {
        "id": case.id,
        "files": files,
        "dirs": dirs,
        "commands": commands,
        "tools": list(case.tools),
        "env": env,
        "arch": case.arch,
        "device_type": case.family,
        "irq_writable": case.irq_writable,
        "allowed": sorted(host.cpus_allowed),
        "online": sorted(host.cpus_online),
        "calls": calls,
        "irq_owner": {
            irq: bus for bus, names in msi.items() for irq in names
        },  # not read by the sandbox; kept for the comparison
    }


def run_reference(impl: Impl, cases: Sequence[Case]) -> dict[str, list[dict[str, Any]]]:
    """Every case through the release's own code, in one sandbox process."""
    job = {
        "modules": modules(impl),
        "main": "vllm_ascend.cpu_binding",
        "cases": [payload(c, impl) for c in cases],
    }
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(REPO / "tests" / "reference" / "sandbox.py")],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"sandbox failed ({proc.returncode}): {proc.stderr[-3000:]}")
    out: dict[str, list[dict[str, Any]]] = json.loads(proc.stdout)
    for c, p in zip(cases, job["cases"], strict=True):
        for r in out[c.id]:
            r["irq_owner"] = p["irq_owner"]
    return out


# ------------------------------------------------------------------ the two outcomes


@dataclass(frozen=True)
class Outcome:
    """What one rank ends up with: bound or not, and the CPUs of each role."""

    bound: bool
    npu: int | None = None
    main: tuple[int, ...] = ()
    acl: tuple[int, ...] = ()
    release: tuple[int, ...] = ()
    irq: tuple[int, ...] | None = None  # None: not observed
    why: str = ""
    memory: tuple[int, ...] | None = None  # the nodes migratepages moved memory to

    def key(self) -> tuple[Any, ...]:
        return (self.bound, self.main, self.acl, self.release) if self.bound else (False,)


def _mask_cpu(mask: str) -> int:
    groups = mask.strip().split(",")
    value = 0
    for g in groups:
        value = (value << 32) | int(g, 16)
    return value.bit_length() - 1


def reference_outcome(r: dict[str, Any], own_bus: str | None, impl: Impl) -> Outcome:
    if all(r.get(k) is None for k in ("main", "acl", "release")):
        return Outcome(False, why=r.get("error") or "; ".join(r.get("log", [])[-2:]))
    npu = None
    for line in r.get("log", []):
        for marker in ("Ascend 950 NPU", "NPU"):
            if line.startswith(f"INFO: {marker}") and ("main=[" in line or "worker=[" in line):
                npu = int(line.split(marker, 1)[1].split(":", 1)[0])
                break
        if npu is not None:
            break
        if line.startswith("INFO: rank_id:") and "device_id:" in line:
            npu = int(line.split("device_id:", 1)[1].split(",", 1)[0])
            break
    irq: tuple[int, ...] | None = None
    # the IRQ CPUs it steered for its own NPU: the log line names them, the write made them
    written = {_mask_cpu(m) for m in r.get("irq", {}).values()}
    for line in r.get("log", []):
        if npu is not None and line.startswith(f"INFO: NPU{npu}(PCI ") and "IRQ_ID=" in line:
            sq = int(line.split("-> CPU", 2)[1].split(",", 1)[0])
            cq = int(line.split("-> CPU", 2)[2].strip())
            if {sq, cq} <= written:
                irq = (sq, cq)
    main = tuple(r["main"] or ())
    acl = tuple(r["acl"]) if r.get("acl") is not None and r["acl"] != r["main"] else ()
    rel = tuple(r["release"]) if r.get("release") is not None and r["release"] != r["main"] else ()
    memory = None
    if r.get("migrate"):
        memory = tuple(int(n) for n in r["migrate"][-1][2].split(","))
    return Outcome(True, npu, main, acl, rel, irq, r.get("error") or "", memory)


def target_for(impl: Impl) -> vllm_ascend.VllmAscendVersion:
    """The registry entry of the release the tier ran."""
    entry = vllm_ascend.get(f"v{impl.release}")
    assert entry.binding.impl == impl.blob, (entry.name, entry.binding.impl, impl.blob)
    return entry


def predict(case: Case, impl: Impl) -> tuple[list[Outcome], str]:
    """ascendtune's plan of the case for impl's release, per rank; and the plan's mode."""
    host = case.host()
    job = case.job()
    busy = case.busy_ids()
    req = PlanRequest(
        policy="vllm-ascend",
        visible=case.visible,
        busy=busy,
        target=target_for(impl),
        engram_offload=case.engram_offload,
    )
    try:
        plan = make_plan(host, req)
    except AscendtuneError as e:
        return [Outcome(False, why=f"refused: {e.message}")] * len(job), "refused"
    refusal = planner_impls.refusal(plan)
    out = []
    for rp in plan.ranks:
        if rp.skipped is not None or refusal is not None:
            out.append(Outcome(False, why=rp.skipped or refusal or ""))
            continue
        roles = rp.roles
        out.append(
            Outcome(
                True,
                rp.logical_id,
                tuple(roles.main),
                tuple(roles.acl),
                tuple(roles.release),
                tuple(roles.irq),
                memory=rp.memory_nodes,
            )
        )
    return out, plan.mode


@dataclass
class Diff:
    case: str
    rank: int
    what: str
    reference: Outcome
    ascendtune: Outcome

    def __str__(self) -> str:
        return (
            f"{self.case} rank {self.rank}: {self.what}\n  reference:  {self.reference}\n"
            f"  ascendtune: {self.ascendtune}"
        )


@dataclass
class Tally:
    cases: int = 0
    ranks: int = 0
    bound: int = 0
    skipped: int = 0
    irq_checked: int = 0
    memory_moved: int = 0
    diffs: list[Diff] = field(default_factory=list)
    bound_by_family: dict[str, int] = field(default_factory=dict)


def compare(impl: Impl, cases: Sequence[Case], tally: Tally | None = None) -> Tally:
    tally = tally or Tally()
    results = run_reference(impl, cases)
    for case in cases:
        smi = case.spec.npu_smi
        assert smi is not None
        bus_of = {c.logical_id: c.bus.lower() for c in smi.chips}
        predicted, _mode = predict(case, impl)
        tally.cases += 1
        for rank, (r, mine) in enumerate(zip(results[case.id], predicted, strict=True)):
            tally.ranks += 1
            ref = reference_outcome(r, bus_of.get(mine.npu) if mine.npu is not None else None, impl)
            if ref.bound:
                tally.bound += 1
                tally.bound_by_family[case.family] = tally.bound_by_family.get(case.family, 0) + 1
                tally.memory_moved += ref.memory is not None
            else:
                tally.skipped += 1
            what = ""
            if ref.key() != mine.key():
                what = "outcome" if ref.bound != mine.bound else "roles"
            elif ref.bound and ref.npu is not None and mine.npu is not None and ref.npu != mine.npu:
                what = "npu"
            elif ref.bound and ref.memory != mine.memory:
                what = "memory"
            elif ref.bound and ref.irq is not None:
                tally.irq_checked += 1
                if ref.irq != mine.irq:
                    what = "irq"
            if what:
                tally.diffs.append(Diff(case.id, rank, what, ref, mine))
    return tally


def cpus(text: str) -> frozenset[int]:
    return parse_cpulist(text)


def chunks(items: Sequence[Case], size: int) -> Iterable[Sequence[Case]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
