"""The binder chain of a real process of this machine: a child started with OMP_PROC_BIND=TRUE
pins itself to the first CPU of its mask before it starts its threads (what libgomp does at
`import torch`, emulated: no torch here), and `explain binders --pid` finds it pinned and names
the cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import schemas
from tests.support.children import CHILD, assert_ready, masks, needs_cpus_0_1
from tests.support.cli import Cli

pytestmark = needs_cpus_0_1


@pytest.fixture
def omp_child() -> Iterator[subprocess.Popen[str]]:
    first = min(os.sched_getaffinity(0))
    spec = {"initial": [first], "threads": 3, "names": ["acl_thread", "release_thread", ""]}
    env = {**os.environ, "OMP_PROC_BIND": "TRUE"}
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert_ready(p)
        yield p
    finally:
        p.kill()
        p.wait(timeout=10)


def test_a_child_pinned_by_omp_proc_bind_is_found_with_its_cause(
    omp_child: subprocess.Popen[str], cli: Cli
) -> None:
    first = min(os.sched_getaffinity(0))
    assert set(masks(omp_child.pid).values()) == {frozenset({first})}  # the emulation held
    r = cli("explain", "binders", "--pid", str(omp_child.pid), "--json")
    assert r.exit_code == 0, r.output
    doc = schemas.loads("explain", r.stdout)
    (w,) = doc["workers"]
    assert w["pid"] == omp_child.pid
    assert w["observed"]["main"] == w["observed"]["acl"] == str(first)
    assert w["predicted"]["main"] == str(first)
    assert w["winner"] == "openmp"
    f = next(f for f in w["findings"] if f["code"] == "binders-pin-first-cpu")
    assert "OMP_PROC_BIND=TRUE" in f["message"] and f"CPU {first}" in f["message"]
    assert f["hint"].startswith("OMP_PROC_BIND=false")


def test_the_same_child_without_the_variable_is_pinned_for_no_known_reason(cli: Cli) -> None:
    first = min(os.sched_getaffinity(0))
    spec = {"initial": [first], "threads": 2}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "KMP_"))}
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert_ready(p)
        r = cli("explain", "binders", "--pid", str(p.pid), "--json")
        (w,) = json.loads(r.stdout)["workers"]
        codes = [f["code"] for f in w["findings"]]
        assert "binders-pin-first-cpu" not in codes
        assert "binders-pinned-one-cpu" in codes
    finally:
        p.kill()
        p.wait(timeout=10)
