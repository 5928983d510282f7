"""`doctor` rules: host checks and the audit of running accelerator workers, judged from facts.

Pure: the host layer (ascendtune.host.facts, ascendtune.host.workers) reads the files, these
modules turn the facts into rows: `facts` (what is judged), `host_rules` (the table of host
checks), `persist` (fixes that survive a reboot), `irq` (NPU interrupt rows), `workers` (the
worker audit and overlaps), `report` (rows, summary, exit status).
"""

from __future__ import annotations

from ascendtune.core.doctor.facts import (
    Ancestor,
    DoctorInput,
    FileValue,
    HostFacts,
    PlanFacts,
    ThreadFacts,
    WorkerFacts,
)
from ascendtune.core.doctor.host_rules import HOST_CHECK_IDS, HOST_RULES, TOOLS, Rule, host_checks
from ascendtune.core.doctor.irq import IRQ_CHECK_ID, npu_irq_checks
from ascendtune.core.doctor.report import SECTIONS, STATUSES, Check, Status, exit_code, summary
from ascendtune.core.doctor.workers import redact_command, same_job, worker_checks

__all__ = [
    "HOST_CHECK_IDS",
    "HOST_RULES",
    "IRQ_CHECK_ID",
    "SECTIONS",
    "STATUSES",
    "TOOLS",
    "Ancestor",
    "Check",
    "DoctorInput",
    "FileValue",
    "HostFacts",
    "PlanFacts",
    "Rule",
    "Status",
    "ThreadFacts",
    "WorkerFacts",
    "exit_code",
    "host_checks",
    "npu_irq_checks",
    "redact_command",
    "same_job",
    "summary",
    "worker_checks",
]
