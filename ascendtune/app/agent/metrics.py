"""The agent's metrics, described once: the collector exports exactly these, and the docs table
(docs/metrics.md, written by scripts.regen) is generated from this list.

Cardinality is bounded by construction: per worker process (a handful per host; the series of an
exited worker are dropped), per device, per NUMA node, per doctor check. No per-thread series."""

from __future__ import annotations

from typing import NamedTuple

WORKER_LABELS = ("host", "service", "pid", "rank", "device", "target")
# what outlives a worker's PID (restarts are counted per device, not per process)
DEVICE_LABELS = ("host", "service", "rank", "device", "target")


class Metric(NamedTuple):
    name: str  # the exposed name (counters end in _total)
    kind: str  # "gauge" or "counter"
    labels: tuple[str, ...]
    help: str


METRICS: tuple[Metric, ...] = (
    Metric(
        "ascendtune_worker_threads",
        "gauge",
        WORKER_LABELS,
        "Threads of the worker process, read from the kernel after the agent's pass.",
    ),
    Metric(
        "ascendtune_worker_threads_bound",
        "gauge",
        WORKER_LABELS,
        "Threads of the worker whose CPU mask is the one the plan gives them.",
    ),
    Metric(
        "ascendtune_worker_cpu_seconds_total",
        "counter",
        (*WORKER_LABELS, "placement"),
        "CPU time the worker's threads ran since the agent first saw it; placement on_plan or "
        "off_plan (no_plan when the plan has no rank for it).",
    ),
    Metric(
        "ascendtune_worker_migrations_total",
        "counter",
        WORKER_LABELS,
        "Moves of the worker's threads between CPUs (the kernel's nr_migrations).",
    ),
    Metric(
        "ascendtune_worker_context_switches_total",
        "counter",
        (*WORKER_LABELS, "kind"),
        "Context switches of the worker's threads; kind voluntary or involuntary.",
    ),
    Metric(
        "ascendtune_worker_memory_bytes",
        "gauge",
        (*WORKER_LABELS, "node"),
        "Resident memory of the worker per NUMA node (/proc/PID/numa_maps).",
    ),
    Metric(
        "ascendtune_worker_memory_local_ratio",
        "gauge",
        WORKER_LABELS,
        "Share of the worker's memory on its plan's NUMA nodes (0 to 1).",
    ),
    Metric(
        "ascendtune_worker_binder_conflicts_total",
        "counter",
        WORKER_LABELS,
        "Threads the agent had put on the plan that something else moved off it since.",
    ),
    Metric(
        "ascendtune_worker_threads_rebound_total",
        "counter",
        WORKER_LABELS,
        "Threads the agent put back on the plan after its first pass (new threads, moved ones).",
    ),
    Metric(
        "ascendtune_worker_restarts_total",
        "counter",
        DEVICE_LABELS,
        "Times the worker of a device came back under a new PID.",
    ),
    Metric(
        "ascendtune_worker_bind_failures_total",
        "counter",
        DEVICE_LABELS,
        "Passes in which the worker of a device could not be bound (no rank in the plan, EPERM).",
    ),
    Metric(
        "ascendtune_npu_irq_on_plan",
        "gauge",
        ("host", "device"),
        "1 when the NPU's SQ and CQ interrupts are on its rank's IRQ CPUs, 0 when not "
        "(absent when it cannot be told).",
    ),
    Metric(
        "ascendtune_doctor_check",
        "gauge",
        ("host", "check", "status"),
        "1 for the status doctor gives the host check now (ok, warn, fail, skip), 0 for the others.",
    ),
    Metric(
        "ascendtune_agent_info",
        "gauge",
        ("host", "service", "version", "policy", "plan", "mode"),
        "Always 1: the agent's version, its plan and whether it binds (mode keep) or only "
        "observes.",
    ),
    Metric(
        "ascendtune_agent_plan_ok",
        "gauge",
        ("host",),
        "1 while the agent has a plan for the workers, 0 while it cannot make one (see its log).",
    ),
    Metric(
        "ascendtune_agent_samples_total",
        "counter",
        ("host",),
        "Samples the agent has taken (one per interval).",
    ),
    Metric(
        "ascendtune_agent_sample_cpu_seconds_total",
        "counter",
        ("host",),
        "CPU time the agent spent sampling, binding and exporting (its own cost).",
    ),
    Metric(
        "ascendtune_agent_last_sample_timestamp_seconds",
        "gauge",
        ("host",),
        "Unix time of the agent's last sample.",
    ),
)

BY_NAME = {m.name: m for m in METRICS}
DOCTOR_STATUSES = ("ok", "warn", "fail", "skip")


def markdown_table() -> str:
    """docs/metrics.md's table: one row per metric."""
    rows = ["| metric | type | labels | what it says |", "|---|---|---|---|"]
    for m in METRICS:
        rows.append(f"| `{m.name}` | {m.kind} | {', '.join(m.labels)} | {m.help} |")
    return "\n".join(rows) + "\n"
