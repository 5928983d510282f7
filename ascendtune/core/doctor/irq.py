"""`npu_irq:N` rows: is each NPU's SQ/CQ interrupt on the IRQ CPUs of its rank's plan?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.doctor.facts import (
    INTERRUPTS,
    IRQBALANCE_CONFIGS,
    OS_RELEASE,
    DoctorInput,
    PlanFacts,
)
from ascendtune.core.doctor.persist import irqbalance_ban
from ascendtune.core.doctor.report import Check, Status, join_ids
from ascendtune.core.errors import ParseError
from ascendtune.core.model import Accelerator
from ascendtune.core.parsers.interrupts import (
    CQ_IRQ_NAME,
    NPU_IRQ_NAMES,
    SQ_IRQ_NAME,
    Interrupts,
    affinities,
    npu_irqs,
    parse_interrupts,
)
from ascendtune.core.planner.model import RankPlan

IRQ_CHECK_ID = "npu_irq"
# the files the rows read beside each interrupt's affinity and each NPU's msi_irqs (which the
# host layer finds from proc/interrupts itself); the persistent fix reads irqbalance's config
IRQ_READS = (INTERRUPTS, *IRQBALANCE_CONFIGS, OS_RELEASE)
IRQ_EXPECTED = "each NPU's sq_send_trigger_irq and cq_update_irq on its rank's IRQ CPUs"


def _irq_skip(detail: str, value: str | None = None, cid: str = IRQ_CHECK_ID) -> Check:
    return Check(cid, "skip", value, IRQ_EXPECTED, None, "host", detail)


def npu_irq_checks(inp: DoctorInput) -> list[Check]:
    """One `npu_irq:N` row per Ascend NPU: are its SQ/CQ interrupts where the plan puts them?

    vLLM-Ascend pins them to the first two CPUs of the rank's pool (the rank whose pool is
    NPU N's); doctor reads proc/irq/IRQ/smp_affinity_list. One `npu_irq` row says why not."""
    inp = inp._replace(facts=inp.facts.only(IRQ_READS))
    host, facts = inp.host, inp.facts
    if host is None:
        return [_irq_skip(f"host unreadable: {inp.host_error}")]
    if not host.npus:
        return [_irq_skip("no Ascend NPU on this host")]
    interrupts = facts.text(INTERRUPTS)
    if interrupts is None:
        return [
            _irq_skip(
                "proc/interrupts is missing: cannot tell where the NPU interrupts land "
                "(a sysroot captured before ascendtune recorded it?)"
            )
        ]
    try:
        parsed = parse_interrupts(interrupts, source=INTERRUPTS, keep=NPU_IRQ_NAMES)
    except ParseError as e:
        return [_irq_skip(str(e))]
    if not any(ln.named(SQ_IRQ_NAME) for ln in parsed.lines):
        return [
            _irq_skip(
                f"no {SQ_IRQ_NAME} line in proc/interrupts: the Ascend driver is not loaded "
                "here, or this driver version names its interrupts otherwise"
            )
        ]
    affs = affinities(facts.irq_affinity)
    return [_npu_irq_row(a, parsed, affs, inp) for a in sorted(host.npus, key=_logical)]


def _logical(a: Accelerator) -> int:
    return a.logical_id


def _irq_rank(plan: PlanFacts, logical_id: int) -> RankPlan | None:
    if plan.plan is None:
        return None
    return next((r for r in plan.plan.ranks if r.logical_id == logical_id), None)


def _on(cpus: CpuSet | None) -> str:
    return "?" if cpus is None else format_cpulist(cpus) or "none"


def _npu_irq_row(
    a: Accelerator, parsed: Interrupts, affs: Mapping[int, CpuSet | None], inp: DoctorInput
) -> Check:
    cid = f"{IRQ_CHECK_ID}:{a.logical_id}"
    plan, facts = inp.plan, inp.facts
    if not a.bus_id:
        return _irq_skip(f"NPU {a.logical_id} has no PCI address here", cid=cid)
    bus = a.bus_id.lower()
    msi = facts.msi_irqs.get(bus)
    found = npu_irqs(parsed, bus, msi)
    if found.sq is None or found.cq is None:
        where = (
            f"sys/bus/pci/devices/{bus}/msi_irqs"
            if msi is not None
            else f"lines naming PCI {bus} (no msi_irqs listing recorded)"
        )
        return _irq_skip(
            f"none of the {found.sq_candidates} {SQ_IRQ_NAME} lines belongs to NPU "
            f"{a.logical_id} ({where})",
            cid=cid,
        )
    sq, cq = found.sq, found.cq
    sq_on, cq_on = affs.get(sq), affs.get(cq)
    value = (
        f"NPU {a.logical_id} (PCI {bus}): {SQ_IRQ_NAME} IRQ {sq} on CPUs {_on(sq_on)}, "
        f"{CQ_IRQ_NAME} IRQ {cq} on CPUs {_on(cq_on)}"
    )
    data: dict[str, Any] = {
        "device": a.logical_id,
        "pci": bus,
        "sq_irq": sq,
        "cq_irq": cq,
        "sq_cpus": None if sq_on is None else format_cpulist(sq_on),
        "cq_cpus": None if cq_on is None else format_cpulist(cq_on),
        "found_by": found.found_by,
    }
    notes: list[str] = []
    if not found.cq_named:
        notes.append(
            f"IRQ {cq} (sq + 1, which vLLM-Ascend takes as {CQ_IRQ_NAME}) is not named "
            f"{CQ_IRQ_NAME} in proc/interrupts"
        )
    rank = _irq_rank(plan, a.logical_id)
    if rank is None:
        why = (
            f"no plan to compare with: {plan.error}"
            if plan.plan is None
            else f"NPU {a.logical_id} has no rank in the {plan.policy} plan (not visible, or "
            "no process on it)"
        )
        return Check(cid, "skip", value, IRQ_EXPECTED, None, "host", why, data)
    irq_cpus = rank.roles.irq
    if not irq_cpus:
        return Check(
            cid, "skip", value, IRQ_EXPECTED, None, "host",
            f"the {plan.policy} plan reserves no IRQ CPUs for rank {rank.rank} "
            "(Ascend 950, or --no-irq-reserve)", data,
        )  # fmt: skip
    want_sq, want_cq = irq_cpus[0], irq_cpus[1] if len(irq_cpus) > 1 else irq_cpus[0]
    expected = (
        f"{plan.policy} rank {rank.rank}: IRQ {sq} on CPU {want_sq}, IRQ {cq} on CPU {want_cq}"
    )
    data.update(plan_rank=rank.rank, expected_sq_cpu=want_sq, expected_cq_cpu=want_cq)
    if sq_on is None or cq_on is None:
        missing = [str(i) for i, on in ((sq, sq_on), (cq, cq_on)) if on is None]
        return Check(
            cid, "skip", value, expected, None, "host",
            f"proc/irq/{{{','.join(missing)}}}/smp_affinity_list (and smp_affinity) unreadable",
            data,
        )  # fmt: skip
    allowed = frozenset(irq_cpus)
    ranks = plan.plan.ranks if plan.plan is not None else ()
    workers_cpus = frozenset(
        c for r in ranks for c in (*r.roles.main, *r.roles.acl, *r.roles.release)
    )
    off = (sq_on | cq_on) - allowed
    status: Status
    if not off:
        status = "ok"
    elif off & workers_cpus:
        status = "fail"
        notes.insert(
            0,
            f"they land on CPUs {format_cpulist(off & workers_cpus)} where the plan runs worker "
            "threads: every operator launch and completion interrupts them (vLLM-Ascend pins "
            "them at start only where /proc/irq is writable: a container needs --privileged)",
        )
    else:
        status = "warn"
        notes.insert(
            0,
            f"on CPUs {format_cpulist(off)}, off the plan's IRQ CPUs {format_cpulist(allowed)} "
            "but clear of its worker threads",
        )
    pids = facts.irqbalance_pids or ()
    fix = (
        f"echo {want_sq} > /proc/irq/{sq}/smp_affinity_list && "
        f"echo {want_cq} > /proc/irq/{cq}/smp_affinity_list"
    )
    if pids:
        notes.append(
            f"irqbalance is running (PID {join_ids(pids)}) and rebalances every 10 s: it undoes "
            "this pinning unless stopped or kept off these CPUs"
        )
        if status == "ok":
            status = "warn"
        fix = "systemctl stop irqbalance && " + fix
    if status == "ok":
        return Check(cid, "ok", value, expected, None, "host", "; ".join(notes) or None, data)
    persistent = (
        irqbalance_ban(inp)
        if pids or facts.irqbalance_config
        else "# IRQ numbers may change at boot: vLLM-Ascend re-pins them at each start "
        "(enable_cpu_binding, /proc/irq writable); or run the echo lines from a boot unit"
    )
    return Check(
        cid, status, value, expected, fix, "host", "; ".join(notes), data,
        fix_persistent=persistent, fix_on_host=bool(facts.container),
    )  # fmt: skip


class NpuIrqPlacement(NamedTuple):
    """Where an NPU's SQ/CQ interrupts may fire now (found as the `npu_irq` rows find them)."""

    logical_id: int
    sq: int
    cq: int
    cpus: CpuSet  # the sq interrupt's affinity with the cq one's

    @property
    def irqs(self) -> str:
        return f"{SQ_IRQ_NAME} IRQ {self.sq}, {CQ_IRQ_NAME} IRQ {self.cq}"


def npu_irq_placements(
    npus: Sequence[Accelerator],
    interrupts: str | None,
    irq_affinity: Mapping[int, tuple[str | None, str | None]],
    msi_irqs: Mapping[str, frozenset[int]],
) -> list[NpuIrqPlacement]:
    """Each Ascend NPU's SQ/CQ interrupts and the CPUs they may fire on, from the texts the
    `npu_irq` rows read (proc/interrupts, proc/irq/N/smp_affinity_list, msi_irqs); an NPU
    whose interrupts or affinities cannot be told is left out."""
    if interrupts is None:
        return []
    try:
        parsed = parse_interrupts(interrupts, source=INTERRUPTS, keep=NPU_IRQ_NAMES)
    except ParseError:
        return []
    affs = affinities(irq_affinity)
    out = []
    for a in sorted(npus, key=_logical):
        if not a.bus_id:
            continue
        bus = a.bus_id.lower()
        found = npu_irqs(parsed, bus, msi_irqs.get(bus))
        if found.sq is None or found.cq is None:
            continue
        sq_on, cq_on = affs.get(found.sq), affs.get(found.cq)
        if sq_on is None or cq_on is None:
            continue
        out.append(NpuIrqPlacement(a.logical_id, found.sq, found.cq, sq_on | cq_on))
    return out
