"""Read a vLLM / vLLM-Ascend server log: per worker, the CPU binding it printed or why it failed.

Pure: `parse_log` takes byte lines (`split_lines` cuts a byte stream into capped lines) and returns
a frozen `LogReport`; `compare_with_plan` sets the logged pools beside ascendtune's prediction.
The formats are those of vLLM-Ascend's `cpu_binding.py` and `worker.py` on v0.13.0 … main and the
release lines v0.18.0 … v0.26.0rc, and vLLM's record prefixes and start-up lines. A line this
package does not know is skipped, never an error.

`model` (what is reported, and the bounds), `records` (lines into records), `patterns` (the
messages and their markers), `causes` (why a binding failed), `parser`, `scan` (a big log
through the markers: `parse_chunks`), `findings`, `compare` (with a plan).
"""

from __future__ import annotations

from ascendtune.core.vllm_log.causes import CAUSES, UNKNOWN_CAUSE, Cause, cause_of
from ascendtune.core.vllm_log.compare import check_target, compare_with_plan, plan_request
from ascendtune.core.vllm_log.model import (
    MAX_LINE_BYTES,
    MAX_LINES,
    MAX_LITERAL_CHARS,
    MAX_WORKERS,
    IrqBinding,
    LoggedPlan,
    LogReport,
    WorkerLog,
)
from ascendtune.core.vllm_log.parser import LogParser, parse_log, parse_text
from ascendtune.core.vllm_log.patterns import safe_literal
from ascendtune.core.vllm_log.records import Record, records, split_lines
from ascendtune.core.vllm_log.scan import parse_blocks, parse_chunks

__all__ = [
    "CAUSES",
    "MAX_LINES",
    "MAX_LINE_BYTES",
    "MAX_LITERAL_CHARS",
    "MAX_WORKERS",
    "UNKNOWN_CAUSE",
    "Cause",
    "IrqBinding",
    "LogParser",
    "LogReport",
    "LoggedPlan",
    "Record",
    "WorkerLog",
    "cause_of",
    "check_target",
    "compare_with_plan",
    "parse_blocks",
    "parse_chunks",
    "parse_log",
    "parse_text",
    "plan_request",
    "records",
    "safe_literal",
    "split_lines",
]
