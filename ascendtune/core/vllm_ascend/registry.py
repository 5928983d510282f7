"""Every vLLM-Ascend version ascendtune models: one entry per published release from 0.9.1rc1 on
(rc and post releases included) and per main snapshot, oldest first.

An entry holds what a version does with CPUs (`Binding`: which `cpu_binding.py` it ships, how its
worker calls it, whether `enable_cpu_binding` is on by default, what data parallel does to the
device list) and its additional-config schema (`config`). Adding a release is adding one entry to
`ENTRIES` in its place: the newest is the last entry, and option choices, completions, help text,
`explain versions` and the README's list are derived from this list.

Facts were read in each release's source distribution (`vllm_ascend/cpu_binding.py`,
`worker/worker*.py`, `ascend_config.py`, `Dockerfile`'s VLLM_TAG); release dates are the
registry's upload dates. Evidence: "git" (read in the source), "PR" (read in a PR or issue
thread), "inferred" (reasoned from those); /work/shared/VLLM_ASCEND_VERSIONS.md.
"""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from ascendtune.core.vllm_config.schema import Version as ConfigRules

Evidence = Literal["git", "PR", "inferred"]

# how a worker picks the NPU whose CPU pool it gets
VISIBLE_INDEX = "visible-index"  # devices[local_rank]: ASCEND_RT_VISIBLE_DEVICES as given, else
# every NPU of `npu-smi info -m` sorted (the 0.9.1 and 0.11-0.13 allocator)
SORTED_BUSY = "sorted-busy"  # running_npu_list[local_rank]: sorted busy NPUs ∩ visible
DEVICE_ID = "device-id"  # bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(...))
# what data parallel does to the device list a worker sees
DP_NARROWED = "narrowed"  # vLLM <= 0.23: the launcher narrows ASCEND_RT_VISIBLE_DEVICES per engine
DP_RESTART = "restart"  # vLLM >= 0.24: list not narrowed, each engine's local ranks restart at 0

# when the worker calls the binding
RUNS_AT_START = "worker start"  # NPUWorker.__init__; a failure is logged at info level
RUNS_AT_DEVICE = "device set-up"  # _init_device, before the model loads
RUNS_AFTER_WARMUP = "after warm-up"  # end of compile_or_warm_up_model

# the fix of the DP/rank mapping, and the lines that carry it
BINDING_FIX = "PR 15517 (main), 15518 (releases/v0.26.0rc), 15596 (releases/v0.27.1rc)"


class Fact(NamedTuple):
    """One modelled fact of a version and how well it is known."""

    what: str
    evidence: Evidence
    note: str = ""


class Binding(NamedTuple):
    """vLLM-Ascend's built-in CPU binding on one version."""

    impl: str | None  # git blob prefix of its cpu_binding.py; None: the version ships none
    call: str  # how the worker calls it ("" when there is nothing to call)
    npu_of_rank: str  # VISIBLE_INDEX, SORTED_BUSY or DEVICE_ID
    dp: str  # DP_NARROWED or DP_RESTART
    device_ids_flag: bool  # vLLM's --device-ids exists (vLLM >= 0.24, upstream PR #45026)
    on_by_default: bool  # `enable_cpu_binding`'s default
    runs: str  # RUNS_AT_START, RUNS_AT_DEVICE or RUNS_AFTER_WARMUP ("" without a binding)
    migrate_memory: bool = True  # memory follows the pool (0.30: off when Engram offloads to CPU)
    impl_evidence: Evidence = "git"  # "inferred": the file was not read, impl names its twin

    @property
    def dp_overlap(self) -> bool:
        """Every DP engine binds its local ranks to the first entries of the unnarrowed list."""
        return self.npu_of_rank == SORTED_BUSY and self.dp == DP_RESTART

    @property
    def ships(self) -> bool:
        return self.impl is not None


class VllmAscendVersion(NamedTuple):
    name: str  # what --target takes
    vllm: str  # the paired vLLM
    source: str  # the release, commit or branch it was read from
    binding: Binding
    # the hand-written check-config table this entry's schema comes from (loaded on first use:
    # `plan` and `bind` never need the tables), and, when that table was written for another
    # entry, which one and why it stands in
    table: "Callable[[], ConfigRules]"
    table_note: str = ""
    facts: tuple[Fact, ...] = ()
    package_versions: tuple[str, ...] = ()  # `Version:` values of vllm_ascend's METADATA
    released: str | None = None  # the registry's upload date, or the snapshot's commit date

    @property
    def config(self) -> "ConfigRules":
        """Its check-config schema (ascendtune.core.vllm_ascend.schemas.config_of)."""
        from ascendtune.core.vllm_ascend.schemas import config_of

        return config_of(self)

    @property
    def inferred(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if f.evidence == "inferred")

    @property
    def is_release(self) -> bool:
        return bool(self.package_versions)


# --- the hand tables (ascendtune.core.vllm_ascend.tables), named by attribute --------------------


def _v0_23_0() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.V0_23_0


def _v0_24_0rc1() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.V0_24_0RC1


def _v0_25_1rc1() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.V0_25_1RC1


def _v0_26_0rc1() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.V0_26_0RC1


def _main_2026_08() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.MAIN_2026_08


def _v0_27_1rc1() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.V0_27_1RC1


def _main_2026_09() -> "ConfigRules":
    from ascendtune.core.vllm_ascend import tables

    return tables.MAIN_2026_09


# --- binding per cpu_binding.py --------------------------------------------------------------------

_OLD_CALL = "bind_cpus(local_rank, ratio=1.0)"
_CALL = "bind_cpus(local_rank)"
_NPU_CALL = "bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(local_rank))"
_MIGRATE_CALL = (
    "bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(local_rank), "
    "migrate_memory=not engram_config.cpu_offload)"
)


_OLD = ("2cb1e84a", "280e516e")  # 0.9.1 and 0.11-0.13: whole process, ratio=1.0
_AT_DEVICE = ("062ff4f9", "c09e740a", "abb80aa1", "10967e04")  # 0.14.0rc1 to 0.18.0


def _binding(impl: str | None, vllm: str, *, on: bool = True) -> Binding:
    """The binding of a version whose cpu_binding.py has blob `impl`, paired with vLLM `vllm`."""
    new_vllm = _vllm_at_least(vllm, 24)
    dp = DP_RESTART if new_vllm else DP_NARROWED
    if impl is None:
        return Binding(None, "", VISIBLE_INDEX, dp, new_vllm, False, "")
    if impl in _OLD:
        return Binding(impl, _OLD_CALL, VISIBLE_INDEX, dp, new_vllm, on, RUNS_AT_START)
    runs = RUNS_AT_DEVICE if impl in _AT_DEVICE else RUNS_AFTER_WARMUP
    if impl in ("cc55125b", "daab93aa"):
        return Binding(impl, _NPU_CALL, DEVICE_ID, dp, new_vllm, on, runs)
    if impl == "7ed2022f":
        return Binding(impl, _MIGRATE_CALL, DEVICE_ID, dp, new_vllm, on, runs, migrate_memory=False)
    return Binding(impl, _CALL, SORTED_BUSY, dp, new_vllm, on, runs)


def _vllm_at_least(vllm: str, minor: int) -> bool:
    parts = vllm.lstrip("v").split(".")
    return len(parts) > 1 and parts[0] == "0" and parts[1].isdigit() and int(parts[1]) >= minor


_NO_BINDING = Fact("ships no cpu_binding.py: vLLM-Ascend binds no CPU", "git")
_OLD_ALLOC = Fact(
    "allocator: each NPU's NUMA node from PCI, the node's CPUs split among its NPUs, the whole "
    "process bound, no roles; the worker passes ratio=1.0",
    "git",
)
# the blobs that read npu-smi by position (the planner's Impl.positional_npu_smi; a test keeps
# the two in step)
POSITIONAL_NPU_SMI = frozenset(
    {"2cb1e84a", "280e516e", "062ff4f9", "c09e740a", "abb80aa1", "10967e04", "2d5ba9ec", "7b815e31"}
)
_POSITIONAL = Fact(
    "reads npu-smi by position, not by header: `info -m`'s third cell as the Chip Logic ID "
    "(a Slot ID column, as on Ascend 950, shifts it) and, from 0.14.0rc1, each process row's "
    'first cell as "<npu> <chip>" (a table keyed by NPU ID alone fails: IndexError)',
    "git",
)
_OFF = Fact("enable_cpu_binding defaults to false", "git")
_ON = Fact("enable_cpu_binding defaults to true", "git")
_NARROWED_DP = Fact(
    "vLLM narrows ASCEND_RT_VISIBLE_DEVICES per DP engine (the platform's device_control_env_var)",
    "inferred",
    "read for vLLM 0.23; assumed for the older vLLMs, whose launcher sets it the same way",
)
_NARROWED_DP_23 = Fact("vLLM 0.23 narrows ASCEND_RT_VISIBLE_DEVICES per DP engine", "PR")
_RESTART_DP = Fact("DP engines' local ranks restart at 0 over the unnarrowed list", "git")
_COMMON = Fact("binding runs after warm-up; any failure is the warning 'Skip binding cpu.'", "git")
_RUNS = {
    RUNS_AT_START: Fact(
        "binding runs in NPUWorker.__init__; any failure is logged at info level "
        "('Skip binding cpu.')",
        "git",
    ),
    RUNS_AT_DEVICE: Fact(
        "binding runs when the worker sets up its device (_init_device), before the model "
        "loads; any failure is the warning 'Skip binding cpu.'",
        "git",
    ),
    RUNS_AFTER_WARMUP: _COMMON,
}


def _borrowed(table: str, why: str) -> str:
    return f"{table}'s hand table stands in ({why}); not read from this release"


_BELOW_OLDEST = "no hand table at or below this release: the oldest, v0.23.0's, is the nearest"


def _release(
    pkg: str,
    released: str,
    vllm: str,
    impl: str | None,
    table: "Callable[[], ConfigRules]",
    table_note: str,
    *facts: Fact,
    on: bool = True,
) -> VllmAscendVersion:
    """A published release `pkg`, read from its source distribution."""
    binding = _binding(impl, vllm, on=on)
    known = [_NO_BINDING] if impl is None else []
    if impl in _OLD:
        known.append(_OLD_ALLOC)
    if impl in POSITIONAL_NPU_SMI:
        known.append(_POSITIONAL)
    if impl is not None:
        known += [_ON if binding.on_by_default else _OFF, _RUNS[binding.runs]]
        if binding.dp == DP_RESTART:
            known.append(_RESTART_DP)
        else:
            known.append(_NARROWED_DP_23 if vllm == "v0.23.0" else _NARROWED_DP)
    return VllmAscendVersion(
        name=f"v{pkg}",
        vllm=vllm,
        source=f"release {pkg} (source distribution)",
        binding=binding,
        table=table,
        table_note=table_note,
        facts=(*known, *facts),
        package_versions=(pkg,),
        released=released,
    )


def _old(
    pkg: str, released: str, vllm: str, impl: str | None, *, on: bool = True
) -> VllmAscendVersion:
    table_note = _borrowed("v0.23.0", _BELOW_OLDEST)
    return _release(pkg, released, vllm, impl, _v0_23_0, table_note, on=on)


def _after_main_09(pkg: str, released: str, vllm: str, impl: str) -> VllmAscendVersion:
    return _release(
        pkg,
        released,
        vllm,
        impl,
        _main_2026_09,
        _borrowed("main-2026-09", "the nearest hand table below; typed AscendConfig [git]"),
    )


ENTRIES: tuple[VllmAscendVersion, ...] = (
    _old("0.9.1rc1", "2025-06-22", "v0.9.1", None),
    _old("0.9.1rc2", "2025-08-06", "v0.9.1", "2cb1e84a", on=False),
    _old("0.9.1rc3", "2025-08-22", "v0.9.1", "2cb1e84a", on=False),
    _old("0.9.1", "2025-09-03", "v0.9.1", "2cb1e84a", on=False),
    _old("0.9.2rc1", "2025-07-11", "v0.9.2", None),
    _old("0.10.0rc1", "2025-08-07", "v0.10.0", None),
    _old("0.10.1rc1", "2025-09-04", "v0.10.1.1", None),
    _old("0.10.2rc1", "2025-09-15", "v0.10.2", None),
    _old("0.11.0rc0", "2025-09-29", "v0.11.0rc3", None),
    _old("0.11.0rc1", "2025-11-10", "v0.11.0", "280e516e", on=False),
    _old("0.11.0rc2", "2025-11-21", "v0.11.0", "280e516e", on=False),
    _old("0.11.0rc3", "2025-12-03", "v0.11.0", "280e516e", on=False),
    _old("0.11.0", "2025-12-16", "v0.11.0", "280e516e", on=False),
    _old("0.12.0rc1", "2025-12-13", "v0.12.0", "280e516e", on=False),
    _old("0.13.0rc1", "2025-12-27", "v0.13.0", "280e516e", on=False),
    _old("0.13.0rc2", "2026-02-01", "v0.13.0", "280e516e", on=False),
    _old("0.13.0rc3", "2026-04-24", "v0.13.0", "280e516e", on=False),
    _old("0.13.0", "2026-02-05", "v0.13.0", "280e516e", on=False),
    _old("0.14.0rc1", "2026-02-01", "v0.14.1", "062ff4f9", on=False),
    _old("0.15.0rc1", "2026-02-27", "v0.15.0", "c09e740a"),
    _old("0.16.0rc1", "2026-03-10", "v0.16.0", "abb80aa1"),
    _old("0.17.0rc1", "2026-03-15", "v0.17.0", "abb80aa1"),
    _old("0.18.0rc1", "2026-04-01", "v0.18.0", "abb80aa1"),
    _old("0.18.0", "2026-04-30", "v0.18.0", "10967e04"),
    _old("0.19.1rc1", "2026-04-30", "v0.19.1", "2d5ba9ec"),
    _old("0.20.2rc1", "2026-06-03", "v0.20.2", "2d5ba9ec"),
    # its Dockerfile pins vLLM v0.22.1
    _old("0.21.0rc1", "2026-06-16", "v0.22.1", "7b815e31"),
    _old("0.22.1rc1", "2026-06-30", "v0.22.1", "5a947c7b"),
    _old("0.23.0rc1", "2026-07-19", "v0.23.0", "0cbc0e2b"),
    _release(
        "0.23.0",
        "2026-08-16",
        "v0.23.0",
        "0cbc0e2b",
        _v0_23_0,
        "",
        Fact("rank r binds the r-th NPU of the sorted busy list", "git"),
        Fact("enable_fused_mc2 accepts 0/1/2; unknown keys silently ignored", "git"),
    ),
    _release(
        "0.23.0.post1",
        "2026-09-22",
        "v0.23.0",
        "0cbc0e2b",
        _v0_23_0,
        _borrowed("v0.23.0", "the nearest hand table below"),
    ),
    _release(
        "0.24.0rc1",
        "2026-08-04",
        "v0.24.0",
        "0cbc0e2b",
        _v0_24_0rc1,
        "",
        Fact("piecewise/NONE graph modes switch off enable_npugraph_ex only", "git"),
    ),
    _release(
        "0.25.1rc1",
        "2026-08-19",
        "v0.25.1",
        "0cbc0e2b",
        _v0_25_1rc1,
        "",
        Fact("no backport of the binding fix to releases/v0.25.1rc was found", "PR"),
    ),
    _release(
        "0.26.0rc1",
        "2026-09-03",
        "v0.26.0",
        "cc55125b",
        _v0_26_0rc1,
        "",
        Fact("carries the binding fix (PR 15518): the worker passes npu_id", "git"),
    ),
    # main at 182b75ea: after releases/v0.26.0rc branched (07-30), before v0.27.1rc (09-01)
    VllmAscendVersion(
        name="main-2026-08",
        vllm="main (0.27.1 by 2026-08-27)",
        source="main 182b75ea (2026-08-22)",
        binding=_binding("8448cd77", "v0.27.1"),
        table=_main_2026_08,
        facts=(
            Fact("cpu_binding.py = 0.23.0's (0cbc0e2b) plus the /proc/irq warning", "git"),
            _ON,
            _COMMON,
            _RESTART_DP,
        ),
        released="2026-08-22",
    ),
    _release(
        "0.27.1rc1",
        "2026-09-24",
        "v0.27.1",
        "daab93aa",
        _v0_27_1rc1,
        "",
        Fact("typed AscendConfig (pydantic @config, PR 13838): unknown keys refused", "git"),
        Fact("vLLM-Omni exception (PR 15515) present", "git"),
        Fact("gdn/kda_prefill_backend not stripped (PR 16661 came later)", "git"),
    ),
    # main at a71b766ce: after releases/v0.27.1rc branched, before 0.28.0rc1 was released
    VllmAscendVersion(
        name="main-2026-09",
        vllm="main (0.27.1)",
        source="main a71b766ce (2026-09-23)",
        binding=_binding("cc55125b", "v0.27.1")._replace(impl_evidence="inferred"),
        table=_main_2026_09,
        facts=(
            Fact("bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(...))", "git"),
            Fact(
                "pools and rank mapping as cc55125b (0.26.0rc1)",
                "inferred",
                "a71b766ce's cpu_binding.py was not read; PR 15518 is PR 15517's backport",
            ),
            _ON,
            _COMMON,
            _RESTART_DP,
            Fact(
                "npu_id is in the container's numbering (not the host's physical id)",
                "inferred",
                "from #16309's Ascend950DT cases; not confirmed on A2/A3",
            ),
            Fact("vLLM-Omni exception (PR 15515) present", "inferred"),
            Fact(
                "gdn/kda_prefill_backend stripped (PR 16661): not known",
                "inferred",
                "check-config warns that start-up aborts unless the build carries it",
            ),
        ),
        released="2026-09-23",
    ),
    _after_main_09("0.28.0rc1", "2026-10-09", "v0.28.0", "daab93aa"),
    _after_main_09("0.29.0rc1", "2026-10-09", "v0.29.0", "daab93aa"),
    _after_main_09("0.30.0rc1", "2026-10-12", "v0.30.0", "7ed2022f"),
    _after_main_09("0.30.0rc2", "2026-10-13", "v0.30.0", "7ed2022f"),
)

VERSIONS: dict[str, VllmAscendVersion] = {v.name: v for v in ENTRIES}
NEWEST: VllmAscendVersion = ENTRIES[-1]
# what `plan --policy vllm-ascend` modelled before versions existed (SPEC section 5); the planner
# uses it when a request names no target, so existing plans keep their meaning
PLANNER_DEFAULT: VllmAscendVersion = VERSIONS["main-2026-08"]


def spans(names: Iterable[str]) -> str:
    """Registry names in words, runs of consecutive entries as ranges: "v0.9.1rc1 to v0.23.0,
    main-2026-08" (registry order; unknown names kept at the end as given)."""
    wanted = set(names)
    runs: list[list[str]] = []
    prev = False
    for e in ENTRIES:
        if e.name in wanted:
            if prev:
                runs[-1].append(e.name)
            else:
                runs.append([e.name])
        prev = e.name in wanted
    out = [r[0] if len(r) == 1 else f"{r[0]} to {r[-1]}" for r in runs]
    return ", ".join(out + sorted(wanted - set(VERSIONS)))
