"""Read and change the CPU affinity of every thread of a live process, and launch a command bound.

`masks` (the kernel interfaces: Tasks, libc), `process` (who a PID is, and whether it can be
bound), `cpus` (what a target is checked against, through a Root), `bind` (every thread bound and
verified), `survey` (masks read back: the dry run, --show), `memory` (migratepages), `launch`.

Each name below is loaded from its module on first use: a bind by --pid needs neither the dry
run, the launch nor migratepages (about 5 ms of imports on a loaded machine, docs/startup.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.lazy import lazy_names

if TYPE_CHECKING:
    from ascendtune.host.affinity.bind import (
        DEFAULT_MAX_PASSES,
        PendingBind,
        begin_bind,
        bind_process,
        finish_bind,
        settle,
        tail_margin,
    )
    from ascendtune.host.affinity.cpus import cpuset_cpus, numa_nodes_of, online_cpus
    from ascendtune.host.affinity.launch import exec_command, resolve_command, set_own_affinity
    from ascendtune.host.affinity.masks import EPERM_HINT, PROC, Tasks, errno_text
    from ascendtune.host.affinity.memory import (
        MigrateResult,
        migrate_memory,
        migratepages_path,
        nodes_text,
        numactl_path,
    )
    from ascendtune.host.affinity.process import (
        ProcessIdentity,
        process_dying,
        process_identity,
        process_stopped,
        require_process,
    )
    from ascendtune.host.affinity.survey import (
        survey_process,
        thread_masks,
        thread_names_and_masks,
    )

_HOME = {
    "DEFAULT_MAX_PASSES": "bind",
    "PendingBind": "bind",
    "begin_bind": "bind",
    "bind_process": "bind",
    "finish_bind": "bind",
    "settle": "bind",
    "tail_margin": "bind",
    "cpuset_cpus": "cpus",
    "numa_nodes_of": "cpus",
    "online_cpus": "cpus",
    "exec_command": "launch",
    "resolve_command": "launch",
    "set_own_affinity": "launch",
    "EPERM_HINT": "masks",
    "PROC": "masks",
    "Tasks": "masks",
    "errno_text": "masks",
    "MigrateResult": "memory",
    "migrate_memory": "memory",
    "migratepages_path": "memory",
    "nodes_text": "memory",
    "numactl_path": "memory",
    "ProcessIdentity": "process",
    "process_dying": "process",
    "process_identity": "process",
    "process_stopped": "process",
    "require_process": "process",
    "survey_process": "survey",
    "thread_masks": "survey",
    "thread_names_and_masks": "survey",
}

__all__ = [
    "DEFAULT_MAX_PASSES",
    "EPERM_HINT",
    "PROC",
    "MigrateResult",
    "PendingBind",
    "ProcessIdentity",
    "Tasks",
    "begin_bind",
    "bind_process",
    "cpuset_cpus",
    "errno_text",
    "exec_command",
    "finish_bind",
    "migrate_memory",
    "migratepages_path",
    "nodes_text",
    "numa_nodes_of",
    "numactl_path",
    "online_cpus",
    "process_dying",
    "process_identity",
    "process_stopped",
    "require_process",
    "resolve_command",
    "set_own_affinity",
    "settle",
    "survey_process",
    "tail_margin",
    "thread_masks",
    "thread_names_and_masks",
]


__getattr__ = lazy_names(__name__, _HOME)
