"""ascendtune.api returns exactly what each command's --json prints, for every demo host; and
every demo survives a snapshot round trip with the same documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ascendtune import api
from ascendtune.core.errors import AscendtuneError, UsageError
from ascendtune.host.demos import DEMOS
from tests.support import schemas
from tests.support.cli import CLI, Cli


def cli_json(*args: str) -> dict[str, Any]:
    res = CLI(*args, "--json")
    assert res.exit_code in (0, 1), res.output
    doc = schemas.loads_cli(args, res.stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("name", list(DEMOS))
def test_api_topo_equals_cli(name: str) -> None:
    assert api.topo(demo=name) == cli_json("topo", "--demo", name)


@pytest.mark.parametrize("name", list(DEMOS))
@pytest.mark.parametrize("policy", ["auto", "numa-local", "compare"])
def test_api_plan_equals_cli(name: str, policy: str) -> None:
    assert api.plan(demo=name, policy=policy) == cli_json(
        "plan", "--demo", name, "--policy", policy
    )


@pytest.mark.parametrize("name", list(DEMOS))
def test_api_doctor_equals_cli(name: str) -> None:
    assert api.doctor(demo=name) == cli_json("doctor", "--demo", name)


def test_api_plan_options_travel_typed() -> None:
    doc = api.plan(demo="atlas-800i-a2", policy="numa-local", visible_devices="6,4", ranks=1)
    assert [r["device"] for r in doc["ranks"]] == [6]
    assert doc == cli_json(
        "plan",
        "--demo",
        "atlas-800i-a2",
        "--policy",
        "numa-local",
        "--visible-devices",
        "6,4",
        "--ranks",
        "1",
    )


def test_api_check_config_equals_cli(cli: Cli) -> None:
    cfg = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true}'
    res = cli("check-config", cfg, "--json")
    assert api.check_config(cfg) == schemas.loads("check-config", res.stdout)
    assert schemas.checked("check-config", api.check_config(json.loads(cfg))) == json.loads(
        res.stdout
    )


def test_api_raises_the_projects_errors() -> None:
    with pytest.raises(UsageError):
        api.plan(demo="atlas-800i-a2", policy="fastest")
    with pytest.raises(AscendtuneError):
        api.topo(demo="no-such-demo")
    with pytest.raises(AscendtuneError):
        api.check_config("{not json")


def _without_root(doc: dict[str, Any]) -> dict[str, Any]:
    # documents name where they read the host; the replay reads it from another place by design
    return {k: v for k, v in doc.items() if k not in ("root", "host")}


@pytest.mark.parametrize("name", list(DEMOS))
def test_demo_snapshot_round_trip(name: str, tmp_path: Path, cli: Cli) -> None:
    """Capture each demo the way `snapshot` does; the replay gives the same documents."""
    for dest in (tmp_path / "dir", tmp_path / "host.tar.gz"):
        res = cli("snapshot", str(dest), "--demo", name, "--json")
        assert res.exit_code == 0, res.output
        path = schemas.loads("snapshot", res.stdout)["path"]
        assert _without_root(api.topo(sysroot=path)) == _without_root(api.topo(demo=name))
        assert schemas.checked("topo", api.topo(sysroot=path))["host"]["source"] == "sysroot"
        for policy in ("auto", "compare"):
            assert _without_root(api.plan(sysroot=path, policy=policy)) == _without_root(
                api.plan(demo=name, policy=policy)
            )
        assert _without_root(api.doctor(sysroot=path)) == _without_root(api.doctor(demo=name))
        schemas.checked("doctor", api.doctor(sysroot=path))


# ---- explain, explain binding, log, bind --workers --dry-run ----------------------------------

LOGS = Path(__file__).parents[1] / "fixtures" / "vllm_log"


@pytest.mark.parametrize(
    ("key", "target", "search"),
    [
        ("enable_cpu_binding", None, None),
        ("scheduler_config.profiling_chunk_config.min_chunk", None, None),
        (None, None, None),
        (None, "v0.23.0", "overlap"),
    ],
)
def test_api_explain_equals_cli(key: str | None, target: str | None, search: str | None) -> None:
    args = ["explain", *([key] if key else [])]
    args += [*(["--target", target] if target else []), *(["--search", search] if search else [])]
    assert api.explain(key, target=target, search=search) == cli_json(*args)


@pytest.mark.parametrize("name", [n for n in DEMOS if n != "dgx-h100"])
def test_api_explain_binding_equals_cli(name: str) -> None:
    assert api.explain_binding(demo=name) == cli_json("explain", "binding", "--demo", name)


def test_api_explain_binding_options_travel_typed() -> None:
    doc = api.explain_binding(demo="atlas-800i-a2", rank=1, visible_devices="6,4", target="v0.23.0")
    assert doc["rank"] == 1 and doc["target"] == "v0.23.0"
    assert doc == cli_json(
        "explain", "binding", "--demo", "atlas-800i-a2", "--rank", "1", "--visible-devices",
        "6,4", "--target", "v0.23.0",
    )  # fmt: skip


def test_api_explain_binding_raises() -> None:
    with pytest.raises(AscendtuneError, match="Ascend NPUs"):
        api.explain_binding(demo="dgx-h100")
    with pytest.raises(UsageError, match="--rank 99"):
        api.explain_binding(demo="atlas-800i-a2", rank=99)
    with pytest.raises(UsageError):
        api.explain("no_such_key_at_all")


@pytest.mark.parametrize("name", list(DEMOS))
def test_api_bind_workers_dry_run_equals_cli(name: str, cli: Cli) -> None:
    res = cli("bind", "--workers", "--dry-run", "--demo", name, "--json")
    if res.exit_code == 3:  # no worker runs on this demo
        with pytest.raises(AscendtuneError, match="no accelerator worker found"):
            api.bind_workers_dry_run(demo=name)
        return
    assert res.exit_code == 0, res.stderr
    doc = api.bind_workers_dry_run(demo=name)
    assert doc == schemas.loads("bind-workers", res.stdout)
    assert doc["dry_run"] and doc["workers"]


@pytest.mark.parametrize(
    "log", ["a2_tp4_bound.log", "fail_too_few_cpus.log", "a3_tp8_global_slice.log"]
)
def test_api_log_equals_cli(log: str, tmp_path: Path) -> None:
    import gzip

    path = LOGS / log
    want = cli_json("log", str(path))
    assert api.log(str(path)) == want == api.log(path)
    assert api.log(path.read_text()) == want, "the log's text reads as the file does"
    packed = tmp_path / f"{log}.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert api.log(packed) == want
    for extra in (["--demo", "atlas-800i-a2"], ["--target", "v0.23.0"]):
        kw: dict[str, Any] = {extra[0][2:]: extra[1]}
        assert api.log(path, **kw) == cli_json("log", str(path), *extra)


def test_api_log_raises_the_commands_errors(tmp_path: Path) -> None:
    with pytest.raises(AscendtuneError, match="no such log file"):
        api.log(str(tmp_path / "absent.log"))
    with pytest.raises(AscendtuneError, match="is a directory"):
        api.log(tmp_path)
    blob = tmp_path / "core"
    blob.write_bytes(b"\x00" * 4096)
    with pytest.raises(AscendtuneError, match="binary content"):
        api.log(blob)
    with pytest.raises(UsageError):
        api.log(LOGS / "a2_tp4_bound.log", target="v9.9.9")
