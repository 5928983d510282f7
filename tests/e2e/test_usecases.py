"""One use case per command: the CLI and `ascendtune.api` call the same `run(options)`, so they
print and return the same document; the exit status comes from the report alone; one
definition of the schema version; the API's typed keywords are the option records' fields."""

from __future__ import annotations

import ast
import gzip
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from ascendtune import api
from ascendtune.app import check_config, options
from ascendtune.app.plan import CompareReport
from ascendtune.core.errors import PlanError, UsageError
from ascendtune.core.jsondoc import SCHEMA_VERSION
from tests.support import schemas
from tests.support.cli import CLI
from tests.support.fleethosts import fleet_of_four
from tests.support.planner_hosts import Hosts
from tests.support.planner_hosts import hosts_fixture as hosts_fixture  # the `hosts` fixture

PACKAGE = Path(__file__).resolve().parents[2] / "ascendtune"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_log"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ASCENDTUNE_SYSROOT"):
        monkeypatch.delenv(name, raising=False)


def cli(*args: str) -> tuple[int, Any]:
    """`ascendtune ARGS --json`: its exit status and its document (validated by its schema)."""
    res = CLI(*args, "--json")
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, schemas.loads_cli(args, res.stdout)


# ---- the typed keywords are the records' fields -----------------------------------------------


def _fields(record: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(record)
    return {name: hints[name] for name in record._fields}


@pytest.mark.parametrize(
    ("keywords", "record", "named"),
    [
        (api.PlanKeywords, options.PlanOptions, {"policy"}),
        (
            api.CheckConfigKeywords,
            check_config.CheckConfigOptions,
            {"config", "config_source", "target"},
        ),
    ],
)
def test_api_keywords_are_the_records_fields(keywords: Any, record: type, named: set[str]) -> None:
    """mypy checks `api.plan(visible_devices=...)` against the TypedDict: it must name exactly
    the record's fields, with the same types (the API's functions name the others themselves)."""
    want = {k: v for k, v in _fields(record).items() if k not in named}
    assert typing.get_type_hints(keywords) == want
    assert not keywords.__required_keys__  # every one optional, as every field has a default


# ---- the API and the CLI give the same document ---------------------------------------------


def test_plan_emit_through_both(hosts: Hosts) -> None:
    root = hosts.root("a2")
    code, doc = cli("plan", "--sysroot", root, "--policy", "numa-local", "--emit", "taskset")
    assert code == 0 and doc["emit"]["kind"] == "taskset" and doc["emit"]["lines"]
    assert api.plan(sysroot=root, policy="numa-local", emit="taskset") == doc
    report = api.plan_report(sysroot=root, policy="numa-local", emit="taskset")
    assert not isinstance(report, CompareReport)
    assert report.emitted is not None and list(report.emitted.lines) == doc["emit"]["lines"]


def test_doctor_options_through_both() -> None:
    args = ("doctor", "--demo", "container-a2-half", "--section", "workers")
    code, doc = cli(*args, "--policy", "numa-local", "--target", "v0.23.0")
    got = api.doctor(
        demo="container-a2-half", section="workers", policy="numa-local", target="v0.23.0"
    )
    assert got == doc and doc["sections"] == ["workers"] and doc["policy"] == "numa-local"
    assert code == api.doctor_report(demo="container-a2-half", section="workers").exit_code


def test_check_config_facts_through_both(tmp_path: Path) -> None:
    cfg = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true}'
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(cfg)
    code, doc = cli("check-config", "--file", str(cfg_file), "--tp", "4", "--dp", "2", "--strict")
    assert api.check_config(file=str(cfg_file), tp=4, dp=2, strict=True) == doc
    report = api.check_config_report(json.loads(cfg), tp=4, dp=2, strict=True)
    assert report.exit_code == code


def test_snapshot_through_both(tmp_path: Path) -> None:
    code, doc = cli("snapshot", str(tmp_path / "a"), "--demo", "dgx-h100")
    got = api.snapshot(tmp_path / "b", demo="dgx-h100")
    assert code == 0 and got["path"] == str(tmp_path / "b")
    assert {**got, "path": doc["path"]} == doc
    assert (
        api.topo(sysroot=got["path"])["accelerators"] == api.topo(demo="dgx-h100")["accelerators"]
    )


@pytest.mark.parametrize("log", ["a2_tp4_bound.log", "fail_too_few_cpus.log"])
def test_log_through_both_and_its_exit_status(log: str, tmp_path: Path) -> None:
    path = LOGS / log
    code, doc = cli("log", str(path), "--demo", "atlas-800i-a2")
    assert api.log(path, demo="atlas-800i-a2") == doc
    report = api.log_report(path, demo="atlas-800i-a2")
    assert report.exit_code == code == (1 if doc["summary"]["failed"] else 0)
    packed = tmp_path / "x.log.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert api.log(packed, demo="atlas-800i-a2") == doc


def test_fleet_compare_through_both_and_its_exit_status(tmp_path: Path) -> None:
    nodes = [str(p) for p in fleet_of_four(tmp_path)]
    code, doc = cli("fleet", "compare", *nodes, "--view", "doctor")
    assert api.fleet_compare(*nodes) == doc
    assert code == api.fleet_compare_report(*nodes).exit_code == 1  # node-d differs and fails
    with pytest.raises(UsageError, match="--view snapshot"):
        api.fleet_compare(*nodes, view="snapshot")


def test_explain_forms_through_both() -> None:
    for args, got in [
        (("explain", "enable_cpu_binding"), api.explain("enable_cpu_binding")),
        (("explain", "--search", "numa"), api.explain(search="numa")),
        (
            ("explain", "binding", "--demo", "atlas-800i-a2", "--rank", "2"),
            api.explain_binding(demo="atlas-800i-a2", rank=2),
        ),
    ]:
        code, doc = cli(*args)
        assert code == 0 and got == doc, args


def test_watch_once_through_the_api_is_a_watch_document() -> None:
    import os

    pid = os.getpid()
    doc = schemas.checked("watch", api.watch([pid], cpus="0", interval_s=0.05))
    (worker,) = doc["workers"]
    assert worker["pid"] == pid and worker["plan_cpus"] == "0"
    with pytest.raises(UsageError, match="say what to watch"):
        api.watch()


# ---- the exit status from the report alone ----------------------------------------------------


@pytest.mark.parametrize("name", ["atlas-800i-a2", "container-a2-half", "dgx-h100"])
def test_doctor_exit_status_is_the_reports(name: str) -> None:
    report = api.doctor_report(demo=name)
    res = CLI("doctor", "--demo", name)
    assert (
        res.exit_code == report.exit_code == (1 if api.document(report)["summary"]["fail"] else 0)
    )


def test_compare_that_cannot_plan_ends_with_its_error(hosts: Hosts) -> None:
    """The document is printed, then the error's one line and its status; the report function
    returns the report holding that error, the document function raises it."""
    root = hosts.root("a2-small")
    report = api.plan_report(sysroot=root, policy="compare", ranks=1)
    assert isinstance(report.error, PlanError) and report.exit_code == 5
    res = CLI("plan", "--sysroot", root, "--policy", "compare", "--ranks", "1", "--json")  # fmt: skip
    assert res.exit_code == report.exit_code
    assert res.stderr.strip() == f"ascendtune: error: {report.error.message}"
    assert json.loads(res.stdout)["policies"].keys() == report.plans.keys()
    with pytest.raises(PlanError, match="no policy can plan"):
        api.plan(sysroot=root, policy="compare", ranks=1)
    with pytest.raises(PlanError):
        api.document(report)


def test_check_config_strict_makes_warnings_problems() -> None:
    cfg = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true}'
    lax = api.check_config_report(cfg, arch="aarch64", env={})
    strict = api.check_config_report(cfg, arch="aarch64", env={}, strict=True)
    assert lax.has_warnings and not lax.has_errors
    assert (lax.exit_code, strict.exit_code) == (0, 1)
    for extra, want in (([], 0), (["--strict"], 1)):
        res = CLI("check-config", cfg, "--arch", "aarch64", *extra)
        assert res.exit_code == want, res.output


def test_document_of_something_else_is_refused() -> None:
    with pytest.raises(TypeError, match="not a report"):
        api.document(object())  # type: ignore[arg-type]


# ---- one schema version ---------------------------------------------------------------------


def test_schema_version_is_defined_once_and_stamped_by_one_function() -> None:
    """Only core/jsondoc.py defines SCHEMA_VERSION or writes a `"schema_version": ...` pair;
    every other module goes through `versioned()` (the printer, the API, fleet's node reports)."""
    where: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            assigned = isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "SCHEMA_VERSION" for t in node.targets
            )
            keyed = isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "schema_version" for k in node.keys
            )
            if assigned or keyed:
                where.append(str(path.relative_to(PACKAGE)))
    assert where == ["core/jsondoc.py", "core/jsondoc.py"]
    assert api.topo(demo="dgx-h100")["schema_version"] == SCHEMA_VERSION


# ---- renamed keys: the new name, and the old one beside it for one schema version ------------

RENAMED = {  # schema -> (where in it, new name, old name)
    "plan": ("PlanRank", "pool_device", "logical_id"),
    "topo": ("TopoAccelerator", "card_id", "npu_id"),
}


@pytest.mark.parametrize("demo", ["atlas-800i-a3", "container-a2-half", "dgx-h100"])
def test_renamed_keys_carry_their_old_names_alike(demo: str) -> None:
    topo = api.topo(demo=demo)
    rows = topo["accelerators"] + topo["processes"]
    assert rows and all(r["card_id"] == r["npu_id"] for r in rows)
    assert any(r["card_id"] is not None for r in rows)
    plans = [api.plan(demo=demo)] + [
        p for p in api.plan(demo=demo, policy="compare")["policies"].values() if "ranks" in p
    ]
    ranks = [r for p in plans for r in p["ranks"]]
    assert ranks and all(r["pool_device"] == r["logical_id"] for r in ranks)


def test_pool_device_is_where_the_pool_comes_from(hosts: Hosts) -> None:
    """Where vLLM-Ascend binds rank r to the r-th of the sorted visible list, the pool is
    another device's: the new name says which, and the old one says the same."""
    doc = api.plan(
        sysroot=hosts.root("a2"), target="main-2026-08", env={"ASCEND_RT_VISIBLE_DEVICES": "6,4"}
    )
    got = [(r["device"], r["pool_device"], r["logical_id"]) for r in doc["ranks"]]
    assert got == [(6, 4, 4), (4, 6, 6)]


@pytest.mark.parametrize("schema", sorted(RENAMED))
def test_schemas_mark_the_old_names_deprecated(schema: str) -> None:
    where, new, old = RENAMED[schema]
    props = json.loads((schemas.SCHEMA_DIR / f"{schema}.schema.json").read_text())["$defs"][where]
    props = props["properties"]
    assert props[old]["deprecated"] is True and f"`{new}`" in props[old]["description"]
    assert "deprecated" not in props[new]
    assert list(props).index(new) == list(props).index(old) - 1  # printed just before it


def test_document_of_every_kind_of_report() -> None:
    """api.document takes what each *_report returns, and nothing else of the app layer."""
    from ascendtune.app.hosts import Loaded, load
    from ascendtune.app.source import HostSource

    for report, name in [
        (api.topo_report(demo="dgx-h100"), "topo"),
        (api.plan_report(demo="dgx-h100", policy="compare"), "plan-compare"),
        (api.explain_report(search="numa"), "explain"),
        (api.check_config_report("{}"), "check-config"),
    ]:
        schemas.checked(name, api.document(report))
    loaded = load(HostSource(demo="dgx-h100"))
    assert isinstance(loaded, Loaded)
    with pytest.raises(TypeError, match="Loaded"):
        api.document(loaded)  # type: ignore[arg-type]


def test_mypy_checks_the_api_keywords(tmp_path: Path) -> None:
    """A misspelt or mistyped keyword is a type error for the caller, not a runtime surprise."""
    import subprocess
    import sys

    use = tmp_path / "use.py"
    use.write_text(
        "from ascendtune import api\n"
        'ok = api.plan(demo="atlas-800i-a2", policy="numa-local", visible_devices="6,4", ranks=1)\n'
        'misspelt = api.plan(demo="atlas-800i-a2", visible_device="6,4")\n'
        'mistyped = api.doctor(demo="atlas-800i-a2", ranks="two")\n'
        'fact = api.check_config("{}", tp="4")\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(use)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PACKAGE.parent,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [e.split(":")[1] for e in errors] == ["3", "4", "5"], done.stdout
    assert '"visible_device"' in errors[0] and '"ranks"' in errors[1] and '"tp"' in errors[2]
