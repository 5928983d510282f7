"""`ascendtune explain KEY` and the listing: one source of truth beside the version tables, every
version's default, the rules' interactions, did-you-mean, and the committed reference page."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ascendtune.app.explain import markdown
from ascendtune.cli.app import app
from ascendtune.core import versions
from ascendtune.core.vllm_config import explain_data
from ascendtune.core.vllm_config.rules import RULES
from ascendtune.core.vllm_log import parse_text
from tests import schemas

runner = CliRunner()
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}
TOP = Path(__file__).resolve().parents[1]


def run(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args), env=ENV)
    return r.exit_code, r.stdout, r.stderr


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


def test_overlap_shared_expert_json() -> None:
    code, out, _ = run("explain", "multistream_overlap_shared_expert", "--json")
    assert code == 0
    doc = schemas.loads("explain", out)
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


def test_cpu_binding_says_when_and_how_it_fails() -> None:
    code, out, _ = run("explain", "enable_cpu_binding")
    assert code == 0
    assert "end of warm-up" in out
    assert "Bind cpus failed in rank1" in out and "Skip binding cpu." in out
    assert "[cpu_bind_mode]" in out  # log lines are printed as text, not Rich markup
    assert "start-up goes on" in out
    doc = schemas.loads("explain", run("explain", "enable_cpu_binding", "--json")[1])
    assert doc["when"] == "warmup" and doc["side"] == "host"
    assert all(r["default"] is True for r in doc["versions"].values())
    assert {"cpu-binding-not-arm", "two-cpu-binders"} <= {i["rule"] for i in doc["interactions"]}


def test_dsa_overlap_default_on() -> None:
    doc = schemas.loads("explain", run("explain", "multistream_dsv4_dsa_overlap", "--json")[1])
    assert all(r["default"] is True for r in doc["versions"].values())
    assert doc["side"] == "device"


def test_nested_key_and_its_spelling_on_older_lines() -> None:
    doc = schemas.loads(
        "explain", run("explain", "scheduler_config.profiling_chunk_config.min_chunk", "--json")[1]
    )
    v = doc["versions"]
    assert v["main-2026-09"] == {**v["main-2026-09"], "present": True, "default": 4096}
    assert v["v0.23.0"]["status"] == "elsewhere"
    assert v["v0.23.0"]["path"] == "profiling_chunk_config.min_chunk"
    assert "profiling-min-chunk-clamped" in {i["rule"] for i in doc["interactions"]}


def test_versions_differ_where_the_tables_do() -> None:
    doc = schemas.loads("explain", run("explain", "enable_fused_mc2", "--json")[1])
    assert doc["versions"]["v0.23.0"]["choices"] == [0, 1, 2]
    assert doc["versions"]["main-2026-09"]["choices"] == [0, 1]
    mega = schemas.loads("explain", run("explain", "mega_moe_max_tokens", "--json")[1])["versions"]
    assert mega["v0.23.0"]["default"] == 65536 and mega["main-2026-08"]["default"] == 131072
    fc1 = schemas.loads("explain", run("explain", "enable_flashcomm1", "--json")[1])["versions"]
    assert fc1["v0.23.0"]["present"] and not fc1["main-2026-09"]["present"]
    assert fc1["main-2026-09"]["status"] == "removed"


def test_legacy_top_level_key_is_deprecated_on_main() -> None:
    doc = schemas.loads("explain", run("explain", "enable_balance_scheduling", "--json")[1])
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
def test_unknown_key_did_you_mean(key: str, hint: str) -> None:
    code, out, err = run("explain", key)
    assert code == 2 and not out
    assert "did you mean" in err and hint in err
    assert len(err.strip().splitlines()) == 1


def test_removed_key_says_so() -> None:
    # the modelled versions no longer read it; the releases' own source says when it went
    code, out, err = run("explain", "torchair_graph_config")
    assert code == 0 and not err
    assert "no longer read (torchair graph mode was removed" in out
    assert "v0.12.0rc1     gone" in out


# -- the listing --------------------------------------------------------------------------------


def test_listing_groups_every_key_of_the_target() -> None:
    doc = schemas.loads("explain", run("explain", "--json", "--target", "v0.23.0")[1])
    assert doc["target"] == "v0.23.0"
    listed = [k["key"] for g in doc["groups"] for k in g["keys"]]
    assert sorted(listed) == sorted(versions.get("v0.23.0").config.all_paths())
    titles = [g["title"] for g in doc["groups"]]
    assert titles[0] == "CPU binding" and "Scheduler" in titles


def test_listing_default_target_is_the_newest_and_text_output() -> None:
    code, out, _ = run("explain")
    assert code == 0 and versions.NEWEST in out and "enable_cpu_binding" in out


def test_search() -> None:
    doc = schemas.loads("explain", run("explain", "--search", "overlap", "--json")[1])
    keys = {k["key"] for g in doc["groups"] for k in g["keys"]}
    assert "multistream_overlap_shared_expert" in keys
    assert "weight_nz_mode" not in keys
    code, out, _ = run("explain", "--search", "nosuchwordanywhere")
    assert code == 0 and "no key" in out


def test_bad_target_is_a_usage_error() -> None:
    code, _, err = run("explain", "--target", "v9")
    assert code == 2 and "known targets" in err


# -- the reference page -------------------------------------------------------------------------


def test_reference_page_is_fresh() -> None:
    committed = (TOP / "docs" / "config-reference.md").read_text()
    assert markdown() == committed, (
        "regenerate: python3 -m ascendtune explain --markdown > docs/config-reference.md"
    )


def test_markdown_option_prints_the_page() -> None:
    code, out, _ = run("explain", "--markdown")
    assert code == 0 and out == markdown()
    for d in explain_data.DOCS:
        assert f"`{d.path}`" in out
