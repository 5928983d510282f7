"""ascendtune.api returns exactly what each command's --json prints, for every demo host; and
every demo survives a snapshot round trip with the same documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ascendtune import api
from ascendtune.cli.app import app
from ascendtune.core.errors import AscendtuneError, UsageError
from ascendtune.host.demos import DEMOS
from tests import schemas

runner = CliRunner()


def cli_json(*args: str) -> dict[str, Any]:
    res = runner.invoke(app, [*args, "--json"])
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
        "plan", "--demo", "atlas-800i-a2", "--policy", "numa-local", "--visible-devices", "6,4",
        "--ranks", "1",
    )


def test_api_check_config_equals_cli() -> None:
    cfg = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true}'
    res = runner.invoke(app, ["check-config", cfg, "--json"])
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
def test_demo_snapshot_round_trip(name: str, tmp_path: Path) -> None:
    """Capture each demo the way `snapshot` does; the replay gives the same documents."""
    for dest in (tmp_path / "dir", tmp_path / "host.tar.gz"):
        res = runner.invoke(app, ["snapshot", str(dest), "--demo", name, "--json"])
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
