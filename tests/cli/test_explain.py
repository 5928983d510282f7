"""`ascendtune explain KEY` and the listing: one source of truth beside the version tables, every
version's default, the rules' interactions, did-you-mean, and the committed reference page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendtune.app.explain import markdown
from ascendtune.core import vllm_ascend as versions
from ascendtune.core.vllm_config import explain_data
from ascendtune.core.vllm_config.rules import RULES
from ascendtune.core.vllm_log import parse_text
from tests.support import schemas
from tests.support.cli import Cli

TOP = Path(__file__).resolve().parents[2]


def every_path() -> set[str]:
    out: set[str] = set()
    for v in versions.VERSIONS.values():
        out |= set(v.config.all_paths())
    return out


# -- one source of truth -----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(versions.VERSIONS))
def test_every_key_of_every_version_is_explained(name: str) -> None:
    docs = explain_data.by_path()
    missing = [p for p in versions.VERSIONS[name].config.all_paths() if p not in docs]
    assert not missing, f"{name}: keys without an explanation in explain_data.py: {missing}"


def test_no_explanation_names_a_key_no_version_has() -> None:
    known = every_path()
    stray = [p for p in explain_data.by_path() if p not in known]
    assert not stray, f"explain_data.py explains keys no version has: {stray}"


def test_one_entry_per_key() -> None:
    spellings = [p for d in explain_data.DOCS for p in (d.path, *d.also)]
    assert len(spellings) == len(set(spellings))


def test_rule_keys_cover_every_rule_and_name_real_keys() -> None:
    assert set(explain_data.RULE_KEYS) == set(RULES)
    known = every_path()
    for code, keys in explain_data.RULE_KEYS.items():
        assert keys, code
        assert set(keys) <= known, (code, set(keys) - known)


def test_every_entry_is_filled_in() -> None:
    for d in explain_data.DOCS:
        assert d.concern in explain_data.CONCERNS, d.path
        assert d.side in ("host", "device", "both"), d.path
        assert d.when in explain_data.WHEN_WORDS, d.path
        assert d.summary and not d.summary.endswith("."), d.path


def test_log_examples_are_lines_the_log_reader_knows() -> None:
    for d in explain_data.DOCS:
        for line in d.log:
            report = parse_text(line.example + "\n")
            assert report.binding_seen, line.example
            if line.binding:
                assert [w.binding for w in report.workers] == [line.binding], line.example


# -- explain KEY --------------------------------------------------------------------------------


def test_overlap_shared_expert_json(cli: Cli) -> None:
    r = cli("explain", "multistream_overlap_shared_expert", "--json")
    assert r.exit_code == 0
    doc = schemas.loads("explain", r.stdout)
    assert doc["key"] == "multistream_overlap_shared_expert"
    assert doc["side"] == "device" and doc["when"] == "per_step"
    assert set(doc["versions"]) == set(versions.VERSIONS)
    for row in doc["versions"].values():
        assert row == {**row, "present": True, "default": False}
    rules = {i["rule"]: i for i in doc["interactions"]}
    assert "enable_fused_mc2" in rules["fused-mc2-disables-overlap"]["keys"]
    assert any("enable_fused_mc2" in i["keys"] for i in doc["interactions"])
    assert doc["verify"] and doc["summary"]
    assert "HCCL" in doc["detail"] and "default stream" in doc["detail"]


def test_cpu_binding_says_when_and_how_it_fails(cli: Cli) -> None:
    r = cli("explain", "enable_cpu_binding")
    assert r.exit_code == 0
    assert "end of warm-up" in r.stdout
    assert "Bind cpus failed in rank1" in r.stdout and "Skip binding cpu." in r.stdout
    assert "[cpu_bind_mode]" in r.stdout  # log lines are printed as text, not Rich markup
    assert "start-up goes on" in r.stdout
    doc = schemas.loads("explain", cli("explain", "enable_cpu_binding", "--json").stdout)
    assert doc["when"] == "warmup" and doc["side"] == "host"
    # the default the registry read in each release: off up to v0.14.0rc1, absent where the
    # release ships no binding
    defaults = {n: (r["status"], r["default"]) for n, r in doc["versions"].items()}
    assert defaults["v0.10.0rc1"] == ("absent", None)
    assert defaults["v0.13.0"] == defaults["v0.14.0rc1"] == ("present", False)
    assert defaults["v0.15.0rc1"] == defaults["main-2026-09"] == ("present", True)
    assert "v0.9.1rc2 … v0.9.1" in r.stdout and "present, bool, default false" in r.stdout
    assert {"cpu-binding-not-arm", "two-cpu-binders"} <= {i["rule"] for i in doc["interactions"]}


def test_dsa_overlap_default_on(cli: Cli) -> None:
    doc = schemas.loads("explain", cli("explain", "multistream_dsv4_dsa_overlap", "--json").stdout)
    assert all(r["default"] is True for r in doc["versions"].values())
    assert doc["side"] == "device"


def test_nested_key_and_its_spelling_on_older_lines(cli: Cli) -> None:
    doc = schemas.loads(
        "explain",
        cli("explain", "scheduler_config.profiling_chunk_config.min_chunk", "--json").stdout,
    )
    v = doc["versions"]
    assert v["main-2026-09"] == {**v["main-2026-09"], "present": True, "default": 4096}
    assert v["v0.23.0"]["status"] == "elsewhere"
    assert v["v0.23.0"]["path"] == "profiling_chunk_config.min_chunk"
    assert "profiling-min-chunk-clamped" in {i["rule"] for i in doc["interactions"]}


def test_versions_differ_where_the_tables_do(cli: Cli) -> None:
    doc = schemas.loads("explain", cli("explain", "enable_fused_mc2", "--json").stdout)
    assert doc["versions"]["v0.23.0"]["choices"] == [0, 1, 2]
    assert doc["versions"]["main-2026-09"]["choices"] == [0, 1]
    mega = schemas.loads("explain", cli("explain", "mega_moe_max_tokens", "--json").stdout)[
        "versions"
    ]
    assert mega["v0.23.0"]["default"] == 65536 and mega["main-2026-08"]["default"] == 131072
    fc1 = schemas.loads("explain", cli("explain", "enable_flashcomm1", "--json").stdout)["versions"]
    assert fc1["v0.23.0"]["present"] and not fc1["main-2026-09"]["present"]
    assert fc1["main-2026-09"]["status"] == "removed"


def test_legacy_top_level_key_is_deprecated_on_main(cli: Cli) -> None:
    doc = schemas.loads("explain", cli("explain", "enable_balance_scheduling", "--json").stdout)
    assert doc["versions"]["v0.23.0"]["status"] == "present"
    assert doc["versions"]["main-2026-08"]["status"] == "deprecated"


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("enable_cpu_bindng", "enable_cpu_binding"),
        ("scheduler_config.profiling_chunk_config.min_chnk", "profiling_chunk_config.min_chunk"),
        ("eplb_config.dynamic_eplbb", "eplb_config.dynamic_eplb"),
    ],
)
def test_unknown_key_did_you_mean(key: str, hint: str, cli: Cli) -> None:
    r = cli("explain", key)
    assert r.exit_code == 2 and not r.stdout
    assert "did you mean" in r.stderr and hint in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_removed_key_says_so(cli: Cli) -> None:
    # the modelled versions no longer read it; the releases' own source says when it went
    r = cli("explain", "torchair_graph_config")
    assert r.exit_code == 0 and not r.stderr
    assert "no longer read (torchair graph mode was removed" in r.stdout
    assert "v0.12.0rc1     gone" in r.stdout


# -- the listing --------------------------------------------------------------------------------


def test_listing_groups_every_key_of_the_target(cli: Cli) -> None:
    doc = schemas.loads("explain", cli("explain", "--json", "--target", "v0.23.0").stdout)
    assert doc["target"] == "v0.23.0"
    listed = [k["key"] for g in doc["groups"] for k in g["keys"]]
    assert sorted(listed) == sorted(versions.get("v0.23.0").config.all_paths())
    titles = [g["title"] for g in doc["groups"]]
    assert titles[0] == "CPU binding" and "Scheduler" in titles


def test_listing_default_target_is_the_newest_and_text_output(cli: Cli) -> None:
    r = cli("explain")
    assert (
        r.exit_code == 0 and versions.NEWEST.name in r.stdout and "enable_cpu_binding" in r.stdout
    )


def test_search(cli: Cli) -> None:
    doc = schemas.loads("explain", cli("explain", "--search", "overlap", "--json").stdout)
    keys = {k["key"] for g in doc["groups"] for k in g["keys"]}
    assert "multistream_overlap_shared_expert" in keys
    assert "weight_nz_mode" not in keys
    r = cli("explain", "--search", "nosuchwordanywhere")
    assert r.exit_code == 0 and "no key" in r.stdout


def test_bad_target_is_a_usage_error(cli: Cli) -> None:
    r = cli("explain", "--target", "v9")
    assert r.exit_code == 2 and "explain versions" in r.stderr


# -- the reference page -------------------------------------------------------------------------


def test_reference_page_is_fresh() -> None:
    committed = (TOP / "docs" / "config-reference.md").read_text()
    assert markdown() == committed, "regenerate: python -m scripts.regen"


def test_markdown_option_prints_the_page(cli: Cli) -> None:
    r = cli("explain", "--markdown")
    assert r.exit_code == 0 and r.stdout == markdown()
    for d in explain_data.DOCS:
        assert f"`{d.path}`" in r.stdout


def test_explain_shows_the_life_of_an_undocumented_key(cli: Cli) -> None:
    r = cli("explain", "multistream_engram_overlap")
    assert r.exit_code == 0, r.stderr
    assert "v0.30.0rc1     appears, bool, default unknown" in r.stdout
    hist = json.loads(cli("explain", "--json", "enable_cpu_binding").stdout)["history"]
    assert {"release": "v0.15.0rc1", "event": "default", "default": True, "before": False} in hist
