"""The committed per-release schema files (ascendtune/core/vllm_ascend/config_schemas/) and check-config
run against them: the data decides which keys exist, the hand-written rules keep their version
ranges, and no rule reads a key that a release in its range does not have.

The check-config cases restate what the releases' own tests/ut/test_ascend_config.py set up and
assert (defaults, nested and legacy scheduler keys, lax booleans, refused unknown keys)."""

from __future__ import annotations

import ast
import inspect
import re
from functools import cache
from typing import Any

import pytest
from ascendtune.core.vllm_config.versions import VERSIONS

from ascendtune.core.vllm_config import checker, extracted, rules
from ascendtune.core.vllm_config.model import Facts, Report
from ascendtune.core.vllm_config.schema import Version, walk

RELEASES = extracted.available()


@cache
def ver(release: str) -> Version:
    return extracted.version(release, extracted.nearest_base(release, VERSIONS))


def check(release: str, config: dict[str, Any], **facts: Any) -> Report:
    return checker.check(config, ver(release), Facts(**facts))


def serious(report: Report) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(f.code, f.severity, f.keys) for f in report.findings if f.severity != "info"]


# --- the data files -----------------------------------------------------------------------------


def test_every_release_from_0_9_1rc1_has_a_data_file() -> None:
    assert RELEASES[0] == "0.9.1rc1"
    assert RELEASES[-1] == "0.30.0rc2"
    for must in ("0.9.1", "0.13.0", "0.18.0", "0.23.0.post1", "0.26.0rc1", "0.30.0rc1"):
        assert must in RELEASES
    assert len(RELEASES) == 39


@pytest.mark.parametrize("release", RELEASES)
def test_data_file_names_its_release_extractor_and_sdist(release: str) -> None:
    from scripts.extract_schema import EXTRACTOR_VERSION

    doc = extracted.load(release)
    assert doc["release"] == release
    assert doc["extractor_version"] == EXTRACTOR_VERSION
    assert doc["sdist"]["filename"] == f"vllm_ascend-{release}.tar.gz"
    assert re.fullmatch(r"[0-9a-f]{64}", doc["sdist"]["sha256"])
    assert doc["style"] in ("get", "typed")
    assert doc["unknown_keys"] in ("ignored", "refused")
    assert "parse_errors" not in doc
    for path, entry in extracted.entries(doc["keys"]):
        assert entry["type"] in ("bool", "int", "float", "str", "list", "dict", "section", "any")
        assert entry["source"], path
        # what the extractor could not tell is said, never left out silently
        if entry["type"] != "section":
            assert "default" in entry or "default" in entry.get("unknown", []), path


def test_release_order() -> None:
    order = ["0.9.1rc1", "0.9.1rc3", "0.9.1", "0.9.2rc1", "0.10.0rc1", "0.23.0rc1", "0.23.0"]
    order += ["0.23.0.post1", "0.24.0rc1", "0.30.0rc2"]
    assert sorted(reversed(order), key=extracted.release_key) == order
    assert extracted.release_key("0.25.2.dev3") < extracted.release_key("0.25.2rc1")
    with pytest.raises(ValueError):
        extracted.release_key("main-2026-09")


def test_styles_switch_at_0_27_1rc1() -> None:
    typed = [r for r in RELEASES if extracted.typed(r)]
    assert typed[0] == "0.27.1rc1"
    assert typed == list(RELEASES[RELEASES.index("0.27.1rc1") :])
    for r in typed:
        assert extracted.load(r)["unknown_keys_exception"] == "vllm_omni"


def test_what_the_issue_lists_between_0_27_1rc1_and_0_30_0rc2() -> None:
    old, new = extracted.paths("0.27.1rc1"), extracted.paths("0.30.0rc2")
    for key in (
        "multistream_engram_overlap",
        "ascend_compilation_config.enable_super_kernel",
        "eplb_config.stair_config",
        "ascend_warmup_config",
        "kvpp_config",
        "enable_force_eplb",
        "enable_sparse_li_c4",
    ):
        assert key in new and key not in old, key
    assert old["c8_enable_reshape_optim"]["default"] is False
    assert new["c8_enable_reshape_optim"]["default"] is True
    assert "enable_reduce_sample" in old and "enable_reduce_sample" not in new
    # its default depends on the hardware: the data says it cannot tell
    assert new["multistream_engram_overlap"]["unknown"] == ["default"]


def test_long_lived_lines_read_from_their_own_source() -> None:
    v13 = extracted.paths("0.13.0")
    assert v13["enable_cpu_binding"]["default"] is False
    assert "torchair_graph_config" not in extracted.paths("0.13.0")
    assert "torchair_graph_config.enable_super_kernel" in extracted.paths("0.9.1")
    v18 = extracted.paths("0.18.0")
    assert v18["enable_cpu_binding"]["default"] is True
    assert v18["eplb_config"]["unknown_keys"] == "refused"


# --- rules against the data ---------------------------------------------------------------------


def _rule_keys() -> dict[str, set[str]]:
    """Config keys each registered rule names: string constants in its function, module-level
    string constants it uses, and those of the module's plain helpers it calls."""
    tree = ast.parse(inspect.getsource(rules))
    consts: dict[str, str] = {}
    funcs: dict[str, ast.FunctionDef] = {}
    for st in tree.body:
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and isinstance(st.value, ast.Constant)
            and isinstance(st.value.value, str)
        ):
            consts[st.targets[0].id] = st.value.value
        if isinstance(st, ast.FunctionDef):
            funcs[st.name] = st

    def strings(fn: ast.FunctionDef, depth: int = 0) -> set[str]:
        out: set[str] = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                out.add(n.value)
            if isinstance(n, ast.Name) and n.id in consts:
                out.add(consts[n.id])
            if (
                depth == 0
                and isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id in funcs
                and not funcs[n.func.id].decorator_list
            ):
                out |= strings(funcs[n.func.id], 1)
        return out

    known: set[str] = set()
    for r in RELEASES:
        known |= set(extracted.paths(r))
    for v in VERSIONS.values():
        known |= {p for p, _ in walk(v.keys)}
    out: dict[str, set[str]] = {}
    for fn in funcs.values():
        for d in fn.decorator_list:
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "rule":
                code = d.args[0].value  # type: ignore[attr-defined]
                out[code] = {
                    s for s in strings(fn) if s in known or f"scheduler_config.{s}" in known
                }
    return out


RULE_KEYS = _rule_keys()


def test_the_rule_key_scan_sees_the_rules() -> None:
    assert set(RULE_KEYS) == set(rules.RULES)
    assert "enable_reduce_sample" in RULE_KEYS["reduce-sample-experimental"]
    assert "xlite_graph_config.enabled" in RULE_KEYS["xlite-speculative"]
    assert {"enable_fused_mc2", "multistream_overlap_shared_expert"} <= RULE_KEYS[
        "fused-mc2-disables-overlap"
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_no_rule_names_a_key_its_release_lacks(release: str) -> None:
    v = ver(release)
    have = set(extracted.paths(release))
    gone = {r.path for r in v.removed} | set(v.legacy)
    missing = [
        (code, key)
        for code in v.rules
        for key in sorted(RULE_KEYS[code])
        if key not in have and v.scheduler + key not in have and key not in gone
    ]
    assert not missing, f"{release}: rules name keys it does not have: {missing}"


def test_rule_ranges_end_where_the_key_went() -> None:
    assert "reduce-sample-experimental" in ver("0.29.0rc1").rules
    assert "reduce-sample-experimental" not in ver("0.30.0rc2").rules
    assert "c8-reshape-needs-li-c8" not in ver("0.28.0rc1").rules
    assert "c8-reshape-needs-li-c8" in ver("0.29.0rc1").rules
    # before v0.23.0 no rules are modelled: the key table is all that is checked
    assert ver("0.18.0").rules == ()
    assert "no cross-key rules" in ver("0.18.0").source


def test_hand_tables_agree_with_their_release_on_key_types() -> None:
    """Where a hand table and the data share a key, the type the data gives wins only when the
    two agree; this keeps the hand table's bounds. A disagreement is listed here on purpose."""
    for name in ("v0.23.0", "v0.24.0rc1", "v0.25.1rc1", "v0.26.0rc1", "v0.27.1rc1"):
        hand = VERSIONS[name]
        data = extracted.paths(name)
        for path, key in walk(hand.keys):
            entry = data.get(path)
            if entry is None or entry["type"] in ("any", "section") or key.type == "any":
                continue
            assert key.type == entry["type"] or (key.type, entry["type"]) in {
                ("section", "dict"),
                ("dict", "section"),
            }, (name, path, key.type, entry["type"])


# --- check-config on the data -------------------------------------------------------------------


def test_engram_overlap_is_a_0_30_0rc2_key() -> None:
    report = check("0.30.0rc2", {"multistream_engram_overlap": True})
    assert serious(report) == []
    assert report.effective["multistream_engram_overlap"] is True


def test_engram_overlap_is_refused_by_0_27_1rc1() -> None:
    report = check("0.27.1rc1", {"multistream_engram_overlap": True})
    assert serious(report) == [("unknown-key", "error", ("multistream_engram_overlap",))]
    # with vLLM-Omni installed the typed config only warns (the line's exception)
    omni = check("0.27.1rc1", {"multistream_engram_overlap": True}, with_vllm_omni=True)
    assert serious(omni) == [("unknown-key-omni", "warning", ("multistream_engram_overlap",))]


def test_engram_overlap_is_ignored_by_the_get_style_lines() -> None:
    report = check("0.18.0", {"multistream_engram_overlap": True})
    assert serious(report) == [("unknown-key", "warning", ("multistream_engram_overlap",))]
    assert "silently ignores" in report.findings[0].message


def test_defaults_of_an_empty_config() -> None:
    # as the 0.30 unit tests assert of init_ascend_config with no additional config
    eff = check("0.30.0rc2", {}).effective
    assert eff["multistream_overlap_shared_expert"] is False
    assert eff["enable_kv_nz"] is False
    assert eff["weight_nz_mode"] == 1
    assert eff["mega_moe_max_tokens"] == 65536
    assert eff["ascend_compilation_config"]["fuse_norm_quant"] is True
    assert eff["ascend_fusion_config"]["fusion_ops_gmmswigluquant"] is True
    assert eff["rl_config"]["enabled"] is False
    assert eff["kvpp_config"]["size"] == 1
    # and of 0.18.0's
    eff18 = check("0.18.0", {}).effective
    assert eff18["ascend_compilation_config"]["fuse_norm_quant"] is True
    assert eff18["enable_kv_nz"] is False


def test_explicit_values_are_kept() -> None:
    cfg = {
        "ascend_compilation_config": {"fuse_norm_quant": False},
        "ascend_fusion_config": {"fusion_ops_gmmswigluquant": False},
        "multistream_overlap_shared_expert": True,
        "eplb_config": {"num_redundant_experts": 2},
        "refresh": True,
        "enable_kv_nz": False,
    }
    for release in ("0.18.0", "0.30.0rc2"):
        report = check(release, cfg)
        assert serious(report) == [], release
        assert report.effective["eplb_config"]["num_redundant_experts"] == 2
        assert report.effective["ascend_compilation_config"]["fuse_norm_quant"] is False


def test_mega_moe_max_tokens_must_be_positive() -> None:
    for bad in (0, -1):
        report = check("0.30.0rc2", {"mega_moe_max_tokens": bad})
        assert ("out-of-range", "error", ("mega_moe_max_tokens",)) in serious(report)
    # a numeric string is coerced by the typed config
    report = check("0.30.0rc2", {"mega_moe_max_tokens": "65536"})
    assert serious(report) == []
    assert report.effective["mega_moe_max_tokens"] == 65536


def test_nested_scheduler_config() -> None:
    cfg = {
        "scheduler_config": {
            "enable_balance_scheduling": True,
            "recompute_scheduler_enable": True,
            "short_request_first_config": {"enabled": True, "threshold": 512},
            "profiling_chunk_config": {"enabled": False},
        }
    }
    report = check("0.30.0rc2", cfg, kv_role="kv_consumer")
    sched = report.effective["scheduler_config"]
    assert sched["short_request_first_config"]["threshold"] == 512
    assert sched["profiling_chunk_config"]["enabled"] is False
    assert not [f for f in report.findings if f.code in ("unknown-key", "wrong-type")]


def test_legacy_top_level_scheduler_keys_with_string_values() -> None:
    cfg = {
        "recompute_scheduler_enable": "false",
        "short_request_first_config": {"enabled": "true", "threshold": "512"},
        "profiling_chunk_config": {"enabled": "false"},
        "batch_job_sched_config": {"enabled": "false"},
    }
    report = check("0.30.0rc2", cfg)
    sched = report.effective["scheduler_config"]
    assert sched["recompute_scheduler_enable"] is False
    assert sched["short_request_first_config"] == {
        **sched["short_request_first_config"],
        "enabled": True,
        "threshold": 512,
    }
    assert sched["batch_job_sched_config"]["enabled"] is False
    assert {f.code for f in report.findings} >= {"deprecated-key"}
    assert not [f for f in report.findings if f.severity == "error"]


def test_unknown_nested_keys_are_refused_by_typed_sub_configs() -> None:
    for cfg, path in (
        ({"rl_config": {"refresh": False}}, "rl_config.refresh"),
        ({"ascend_fusion_config": {"nope": True}}, "ascend_fusion_config.nope"),
        ({"scheduler_config": {"nope": 1}}, "scheduler_config.nope"),
        ({"eplb_config": {"stair_config": {"nope": 1}}}, "eplb_config.stair_config.nope"),
    ):
        report = check("0.30.0rc2", cfg)
        assert ("unknown-key", "error", (path,)) in serious(report), path
        # even with vLLM-Omni installed: the exception covers top-level keys only
        omni = check("0.30.0rc2", cfg, with_vllm_omni=True)
        assert ("unknown-key", "error", (path,)) in serious(omni), path


def test_lax_booleans_of_the_typed_config() -> None:
    report = check("0.30.0rc2", {"enable_cpu_binding": "false", "rl_config": {"enabled": "true"}})
    assert report.effective["enable_cpu_binding"] is False
    assert report.effective["rl_config"]["enabled"] is True
    assert not [f for f in report.findings if f.code == "wrong-type"]
    # the same string is only truthy on a get-style line: it counts as true there
    old = check("0.18.0", {"enable_cpu_binding": "false"})
    assert ("unchecked-type", "warning", ("enable_cpu_binding",)) in serious(old)


def test_hand_bounds_survive_where_the_data_agrees() -> None:
    report = check("0.30.0rc2", {"finegrained_tp_config": {"lmhead_tensor_parallel_size": -1}})
    assert ("out-of-range", "error", ("finegrained_tp_config.lmhead_tensor_parallel_size",)) in (
        serious(report)
    )
    report = check("0.30.0rc2", {"weight_nz_mode": 5})
    assert ("out-of-range", "error", ("weight_nz_mode",)) in serious(report)


def test_typed_literal_choices_come_from_the_source() -> None:
    report = check("0.30.0rc2", {"mc2_comm_alg": "ring"})
    assert ("out-of-range", "error", ("mc2_comm_alg",)) in serious(report)
    assert serious(check("0.30.0rc2", {"mc2_comm_alg": "fullmesh"})) == []


def test_derived_fields_are_dropped_not_refused() -> None:
    report = check("0.30.0rc2", {"pd_tp_ratio": 4})
    assert serious(report) == [("removed-key", "warning", ("pd_tp_ratio",))]


def test_fused_mc2_still_turns_shared_expert_overlap_off() -> None:
    cfg = {"enable_fused_mc2": 1, "multistream_overlap_shared_expert": True}
    for release in ("0.23.0", "0.26.0rc1", "0.30.0rc2"):
        report = check(release, cfg)
        assert report.effective["multistream_overlap_shared_expert"] is False, release


# --- explain KEY: the key's life ----------------------------------------------------------------


def events(key: str) -> list[tuple[str, str, Any]]:
    return [(e.release, e.what, e.default) for e in extracted.history(key)]


def test_history_of_enable_cpu_binding() -> None:
    # off on the oldest lines, gone between 0.9.2rc1 and 0.11.0rc0, on from 0.15.0rc1
    assert events("enable_cpu_binding") == [
        ("0.9.1rc2", "added", False),
        ("0.9.2rc1", "removed", None),
        ("0.11.0rc1", "added", False),
        ("0.15.0rc1", "default", True),
    ]


def test_history_of_keys_that_went_and_came_back() -> None:
    assert events("c8_enable_reshape_optim") == [
        ("0.21.0rc1", "added", False),
        ("0.28.0rc1", "removed", None),
        ("0.29.0rc1", "added", True),
    ]
    assert events("enable_reduce_sample")[-1] == ("0.30.0rc1", "removed", None)


def test_history_says_when_a_default_cannot_be_read() -> None:
    (added,) = extracted.history("multistream_engram_overlap")
    assert added.release == "0.30.0rc1" and not added.known
    assert added.to_json() == {
        "release": "v0.30.0rc1",
        "event": "added",
        "default": None,
        "default_unknown": True,
        "type": "bool",
    }


def test_spans_name_the_releases_that_read_a_key() -> None:
    assert extracted.spans("c8_enable_reshape_optim") == "v0.21.0rc1 to v0.27.1rc1, v0.29.0rc1 on"
    assert extracted.spans("torchair_graph_config") == "v0.9.1rc1 to v0.11.0"
    assert extracted.spans("no_such_key") == ""


def test_registry_seam_for_entry() -> None:
    own = extracted.for_entry("v0.26.0rc1", VERSIONS["v0.26.0rc1"])
    assert own is not None and own.name == "v0.26.0rc1" and "its own table" in own.source
    # a later release borrowing an older table keeps its rules, minus the ranges that ended
    later = extracted.for_entry("v0.30.0rc2", VERSIONS["v0.27.1rc1"], "borrowed from v0.27.1rc1")
    assert later is not None and "borrowed from v0.27.1rc1" in later.source
    assert "reduce-sample-experimental" not in later.rules
    # an older release never borrows a newer release's rules
    old = extracted.for_entry("v0.18.0", VERSIONS["v0.23.0"], "borrowed")
    assert old is not None and old.rules == ()
    assert extracted.for_entry("main-2026-09", VERSIONS["main-2026-09"]) is None
