"""Every command, described once: the module that registers it and its one-sentence summary.

Root `--help` and the completion of command names read this table, so they import no command
module; each command's own help starts with the same summary (`describe`), so the two cannot
say different things. Adding a command is a row here and its module with a `register(app)`.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    module: str  # its register(app) adds the command
    summary: str  # one sentence, whole: root --help, completion, and the head of its own help


COMMANDS: dict[str, Command] = {
    "topo": Command(
        "ascendtune.cli.topo",
        "Show accelerators, links, NUMA nodes, and the cpuset beside each device's CPU affinity.",
    ),
    "plan": Command(
        "ascendtune.cli.plan",
        "Compute per-rank CPU affinity: exactly as vLLM-Ascend would bind, or a better policy.",
    ),
    "bind": Command(
        "ascendtune.cli.bind",
        "Bind every thread of a running process (--pid) to one rank's CPUs, verified, or start a "
        "command already bound (`ascendtune bind --rank 0 -- vllm serve ...`).",
    ),
    "check-config": Command(
        "ascendtune.cli.check_config",
        "Validate a vLLM-Ascend --additional-config JSON against the rules of one vLLM-Ascend "
        "version: what makes it refuse to start (error), what it silently changes or ignores "
        "(warning), what depends on the host or deployment (info).",
    ),
    "doctor": Command(
        "ascendtune.cli.doctor",
        "Check this host for inference (governor, NUMA balancing, swap, THP, irqbalance, cpuset, "
        "capabilities, tools) and audit how running NPU workers are bound.",
    ),
    "snapshot": Command(
        "ascendtune.cli.snapshot",
        "Capture everything ascendtune reads from this host into DIR (or DIR.tar.gz).",
    ),
    "watch": Command(
        "ascendtune.cli.watch",
        "See where each thread of a process really runs: CPUs, migrations, context switches, "
        "time off the plan and off the device's node, noisy neighbours, memory per node, and "
        "which binder set each thread's mask.",
    ),
    "log": Command(
        "ascendtune.cli.log",
        "Per rank: whether CPU binding ran, the plan it printed, or why it failed; the config "
        "checked.",
    ),
    "explain": Command(
        "ascendtune.cli.explain",
        "Explain a vLLM-Ascend --additional-config KEY (dotted for nested keys): host or device "
        "side, when it acts, its type and default on every known version, what it interacts with "
        "(the rules check-config applies), how to see that it took effect, and how it fails.",
    ),
    "fleet": Command(
        "ascendtune.cli.fleet",
        "The same answers for every node of a Ray cluster, or for a folder of snapshots: nodes "
        "grouped by topology, what differs from the majority.",
    ),
    "agent": Command(
        "ascendtune.cli.agent",
        "Run as a node service: keep every worker bound across restarts, re-check NPU "
        "interrupts, serve Prometheus metrics.",
    ),
}


def describe(name: str, more: str = "", *, paragraph: bool = True) -> str:
    """The help of command `name`: its summary, then `more` (a paragraph of its own, or with
    paragraph=False the rest of the summary's paragraph)."""
    summary = COMMANDS[name].summary
    if not more:
        return summary
    return summary + ("\n\n" if paragraph else " ") + more
