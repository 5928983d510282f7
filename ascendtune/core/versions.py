"""The vLLM-Ascend versions ascendtune models, as one registry every command shares.

Each entry pairs a release line (or a main snapshot) with its vLLM, its CPU-binding behaviour
(allocator, how a rank finds its NPU, what data parallel does to the device list) and its
additional-config rule set (ascendtune.core.vllm_config.versions). Adding a version is adding an
entry to VERSIONS. Facts carry their evidence: "git" (read in the source), "PR" (read in a PR or
issue thread), "inferred" (reasoned from those); /work/shared/VLLM_ASCEND_VERSIONS.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.vllm_config.schema import Version as ConfigRules

Evidence = Literal["git", "PR", "inferred"]

# how a worker picks the NPU whose CPU pool it gets
SORTED_BUSY = "sorted-busy"  # running_npu_list[local_rank]: sorted busy NPUs ∩ visible
DEVICE_ID = "device-id"  # bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(...))
# what data parallel does to the device list a worker sees
DP_NARROWED = "narrowed"  # vLLM 0.23: the launcher narrows ASCEND_RT_VISIBLE_DEVICES per engine
DP_RESTART = "restart"  # vLLM >= 0.24: list not narrowed, each engine's local ranks restart at 0

# the fix of the DP/rank mapping, and the lines that carry it
BINDING_FIX = "PR 15517 (main), 15518 (releases/v0.26.0rc), 15596 (releases/v0.27.1rc)"


class Fact(NamedTuple):
    """One modelled fact of a version and how well it is known."""

    what: str
    evidence: Evidence
    note: str = ""


class Binding(NamedTuple):
    allocator: str  # which cpu_binding.py the pools come from
    npu_of_rank: str  # SORTED_BUSY or DEVICE_ID
    dp: str  # DP_NARROWED or DP_RESTART
    device_ids_flag: bool  # vLLM's --device-ids exists (vLLM >= 0.24, upstream PR #45026)

    @property
    def dp_overlap(self) -> bool:
        """Every DP engine binds its local ranks to the first entries of the unnarrowed list."""
        return self.npu_of_rank == SORTED_BUSY and self.dp == DP_RESTART


class VllmAscendVersion(NamedTuple):
    name: str  # what --target takes
    vllm: str  # the paired vLLM
    source: str  # the commit, tag or branch it was read from
    binding: Binding
    config_key: str  # its check-config rule set in ascendtune.core.vllm_config.versions
    facts: tuple[Fact, ...] = ()
    package_versions: tuple[str, ...] = ()  # `Version:` values of vllm_ascend's METADATA

    @property
    def config(self) -> ConfigRules:
        """Its check-config rule set (read on first use: `plan` and `bind` never need the
        tables, which cost about 7 ms to import)."""
        from ascendtune.core.vllm_config import versions as config_versions

        return config_versions.VERSIONS[self.config_key]

    @property
    def inferred(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if f.evidence == "inferred")


_ALLOC = "cpu_binding.py as of main 182b75ea (identical on every release line) [git]"


def _sorted(dp: str, ids: bool) -> Binding:
    return Binding(_ALLOC, SORTED_BUSY, dp, ids)


_FIXED = Binding(_ALLOC, DEVICE_ID, DP_RESTART, True)
_COMMON = (
    Fact("allocator, pools, modes and role split identical to main 182b75ea", "git"),
    Fact("binding runs after warm-up; any failure is the warning 'Skip binding cpu.'", "git"),
)

VERSIONS: dict[str, VllmAscendVersion] = {
    v.name: v
    for v in (
        VllmAscendVersion(
            "v0.23.0",
            "v0.23.0",
            "tag v0.23.0 (5cb98caa)",
            _sorted(DP_NARROWED, False),
            "v0.23.0",
            (
                *_COMMON,
                Fact("vLLM 0.23 narrows ASCEND_RT_VISIBLE_DEVICES per DP engine", "PR"),
                Fact("rank r binds the r-th NPU of the sorted busy list", "git"),
                Fact("enable_fused_mc2 accepts 0/1/2; unknown keys silently ignored", "git"),
            ),
            ("0.23.0",),
        ),
        VllmAscendVersion(
            "v0.24.0rc1",
            "v0.24.0",
            "tag v0.24.0rc1",
            _sorted(DP_RESTART, True),
            "v0.24.0rc1",
            (
                *_COMMON,
                Fact("DP engines' local ranks restart at 0 over the unnarrowed list", "git"),
                Fact("piecewise/NONE graph modes switch off enable_npugraph_ex only", "git"),
            ),
            ("0.24.0rc1",),
        ),
        VllmAscendVersion(
            "v0.25.1rc1",
            "v0.25.1",
            "tag v0.25.1rc1",
            _sorted(DP_RESTART, True),
            "v0.25.1rc1",
            (
                *_COMMON,
                Fact("DP engines' local ranks restart at 0 over the unnarrowed list", "git"),
                Fact("no backport of the binding fix to releases/v0.25.1rc was found", "PR"),
            ),
            ("0.25.1rc1",),
        ),
        VllmAscendVersion(
            "v0.26.0rc1",
            "v0.26.0",
            "branch releases/v0.26.0rc (before PR 15518)",
            # [inferred] v0.26.0rc1 was tagged before 2026-09-01 (feedback issue #14766 is from
            # 08-22), so it lacks PR 15518; a later v0.26.0 RC would carry the fix
            _sorted(DP_RESTART, True),
            "v0.26.0rc1",
            (
                *_COMMON,
                Fact(
                    "the rc1 tag lacks the binding fix of PR 15518",
                    "inferred",
                    "its feedback issue (#14766) dates from 2026-08-22, the fix from 09-01",
                ),
            ),
            ("0.26.0rc1",),
        ),
        VllmAscendVersion(
            "v0.27.1rc1",
            "v0.27.1",
            "release v0.27.1rc1 (branch not in the snapshot)",
            # [inferred] PR 15596 merged into releases/v0.27.1rc on 2026-09-02; the rc1 feedback
            # issue #16014 opened 09-08, so the tag most likely carries it
            _FIXED,
            "v0.27.1rc1",
            (
                *_COMMON,
                Fact(
                    "carries the binding fix (PR 15596)",
                    "inferred",
                    "merged 2026-09-02, feedback issue #16014 opened 09-08",
                ),
                Fact("typed AscendConfig (PR 13838): unknown keys refused", "inferred"),
                Fact("vLLM-Omni exception (PR 15515) present", "inferred"),
                Fact("gdn/kda_prefill_backend not stripped (PR 16661 came later)", "inferred"),
            ),
            ("0.27.1rc1",),
        ),
        VllmAscendVersion(
            "main-2026-08",
            "main (0.27.1 by 2026-08-27)",
            "main 182b75ea (2026-08-22)",
            _sorted(DP_RESTART, True),
            "main-2026-08",
            (
                *_COMMON,
                Fact("DP engines' local ranks restart at 0 over the unnarrowed list", "git"),
            ),
        ),
        VllmAscendVersion(
            "main-2026-09",
            "main (0.27.1)",
            "main a71b766ce (2026-09-23)",
            _FIXED,
            "main-2026-09",
            (
                *_COMMON,
                Fact("bind_cpus(local_rank, npu_id=device_id_to_physical_device_id(...))", "git"),
                Fact(
                    "an NPU without a process in npu-smi's table: binding skipped",
                    "inferred",
                    "the merged diff of PR 15517 is not visible; only the outcome is known",
                ),
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
        ),
    )
}

NEWEST = "main-2026-09"
# what `plan --policy vllm-ascend` modelled before versions existed (SPEC section 5); the planner
# uses it when a request names no target, so existing plans keep their meaning
PLANNER_DEFAULT = "main-2026-08"


def names() -> list[str]:
    """Every --target value but auto, oldest first (completion values)."""
    return list(VERSIONS)


def get(name: str) -> VllmAscendVersion:
    v = VERSIONS.get(name)
    if v is None:
        raise UsageError(
            f"unknown --target {name!r}",
            "known targets: " + ", ".join(["auto", *VERSIONS]),
        )
    return v


def newest() -> VllmAscendVersion:
    return VERSIONS[NEWEST]


def from_package_version(version: str) -> VllmAscendVersion | None:
    """The entry for a vllm_ascend distribution's `Version:` (0.25.1rc1 → v0.25.1rc1). A dev or
    local build (0.26.0rc2.dev12+g182b75ea) maps to the release line it names when it is known."""
    v = version.strip()
    for entry in VERSIONS.values():
        if v in entry.package_versions:
            return entry
    base = v.split("+", 1)[0].split(".dev", 1)[0]
    for entry in VERSIONS.values():
        if base in entry.package_versions:
            return entry
    return None
