"""The schemas under schemas/ are generated from ascendtune.app.documents and are current, and
every demo's topo, plan (with --emit too), plan --policy compare, doctor, check-config, explain
binding and bind --workers --dry-run JSON validates."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ascendtune.app import documents
from ascendtune.host.demos import list_demos
from scripts import gen_schemas
from tests.support.cli import CLI, Cli
from tests.support.schemas import SCHEMA_DIR, checked, loads

DEMOS = [name for name, _ in list_demos()]
CONFIG = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true, "torchair": {}}'


def test_committed_schemas_are_current() -> None:
    wanted = gen_schemas.schemas()
    have = {p.name: p.read_text() for p in SCHEMA_DIR.glob("*.schema.json")}
    assert sorted(have) == sorted(wanted), "run python -m scripts.regen"
    for name, text in wanted.items():
        assert have[name] == text, f"schemas/{name} is stale: run python -m scripts.regen"


def test_key_list_is_current() -> None:
    text = gen_schemas.KEY_LIST.read_text()
    assert gen_schemas.keys_with_section(text) == text, "run python -m scripts.regen"


def test_check_mode_agrees() -> None:
    assert gen_schemas.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(documents.DOCUMENTS))
def test_every_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_key_is_described() -> None:
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                assert isinstance(sub, dict) and sub.get("description"), f"{where}.{key}"
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}[{i}]")

    for name in documents.DOCUMENTS:
        walk(json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text()), name)


def test_a_drifted_document_fails() -> None:
    from ascendtune import api

    doc = api.topo(demo="atlas-800i-a2")
    checked("topo", doc)
    with pytest.raises(AssertionError, match="cpus_online"):
        checked("topo", {**doc, "cpus_online": "0-3 and 8"})
    with pytest.raises(AssertionError, match="unexpected"):
        checked("topo", {**doc, "surprise": 1})
    with pytest.raises(AssertionError, match="schema_version"):
        checked("topo", {**doc, "schema_version": 2})


def _cli(*args: str) -> str:
    res = CLI(*args)
    assert res.exit_code in (0, 1), (args, res.exit_code, res.stdout, res.stderr)
    return res.stdout


@pytest.mark.parametrize("demo", DEMOS)
def test_every_demo_validates(demo: str) -> None:
    loads("topo", _cli("topo", "--demo", demo, "--json"))
    plan = loads("plan", _cli("plan", "--demo", demo, "--json"))
    assert plan["host"]["root"] == f"demo:{demo}"
    compare = loads("plan-compare", _cli("plan", "--demo", demo, "--policy", "compare", "--json"))
    for doc in compare["policies"].values():
        if "error" not in doc:
            # a policy's plan is the plan document without host (the compare document has it)
            assert "host" not in doc
            checked("plan", {"schema_version": 1, "host": compare["host"], **doc})
    loads("doctor", _cli("doctor", "--demo", demo, "--json"))
    loads("check-config", _cli("check-config", "--sysroot", _demo_path(demo), "--json", CONFIG))
    # numa-local: vLLM-Ascend binds nothing on some demos (the x86 300I Duo), and a plan that
    # binds no rank has nothing to emit
    emitted = loads(
        "plan",
        _cli("plan", "--demo", demo, "--policy", "numa-local", "--emit", "taskset", "--json"),
    )
    assert emitted["emit"]["kind"] == "taskset" and emitted["emit"]["lines"]


@pytest.mark.parametrize("demo", DEMOS)
def test_every_demo_explain_binding_validates(demo: str, cli: Cli) -> None:
    res = cli("explain", "binding", "--demo", demo, "--json")
    if demo == "dgx-h100":
        # vLLM-Ascend's binding is for Ascend NPUs: nothing printed, a plan error
        assert res.exit_code == 5 and not res.stdout, res.stderr
        return
    assert res.exit_code == 0, res.stderr
    doc = loads("explain", res.stdout)
    assert doc["host"]["root"] == f"demo:{demo}" and doc["steps"]


@pytest.mark.parametrize("demo", DEMOS)
def test_every_demo_bind_workers_dry_run_validates(demo: str, cli: Cli) -> None:
    res = cli("bind", "--workers", "--dry-run", "--demo", demo, "--json")
    if demo != "container-a2-half":
        # the other demos run no worker: nothing printed, nothing found (exit 3)
        assert res.exit_code == 3 and not res.stdout, res.stderr
        return
    assert res.exit_code == 0, res.stderr
    doc = loads("bind-workers", res.stdout)
    assert doc["dry_run"] and len(doc["workers"]) == 2


def test_every_explain_form_validates() -> None:
    from ascendtune.core.vllm_config import explain_data

    for key in [d.path for d in explain_data.DOCS]:
        assert loads("explain", _cli("explain", key, "--json"))["key"] == key
    listing = loads("explain", _cli("explain", "--json"))
    assert listing["count"] == sum(len(g["keys"]) for g in listing["groups"])
    loads("explain", _cli("explain", "--json", "--search", "overlap", "--target", "v0.23.0"))


def _demo_path(demo: str) -> str:
    import ascendtune.demos

    return str(Path(ascendtune.demos.__file__).parent / f"{demo}.tar.gz")


@pytest.mark.parametrize("doc", ["README.md", "docs/json.md"])
def test_links_stay_inside_the_repository(doc: str) -> None:
    """Every link of the README and of the key list names a file of the repository (none out
    to the web, none above the checkout), and the key list links each schema."""
    import re

    top = gen_schemas.TOP.resolve()
    path = top / doc
    text = path.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert any("schemas/" in t for t in targets)
    for t in targets:
        if t.startswith("#"):
            continue
        assert "://" not in t and not t.startswith("/"), t
        target = (path.parent / t.split("#", 1)[0]).resolve()
        assert target.is_relative_to(top) and target.exists(), t
    assert "SPEC" not in text
    if doc == "docs/json.md":
        for name in documents.DOCUMENTS:
            assert f"(../schemas/{name}.schema.json)" in text, name
