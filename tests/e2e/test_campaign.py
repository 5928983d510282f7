"""The campaign (scripts/campaign.py): a fast seeded slice of every family finds nothing but
inputs, and its judge does see each kind of fault it counts (issue 27, "campaign")."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from scripts import campaign as c

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/dev/full").exists(),
    reason="the campaign forks and writes to /dev/full (Linux)",
)


def test_a_seeded_slice_of_every_family_finds_only_inputs(tmp_path: Path) -> None:
    table, found = c.campaign(seed=27, cases=2 * len(c.FAMILIES), work=tmp_path)
    total = c.totals(table)
    assert total["inputs"] == 2 * len(c.FAMILIES)
    assert all(row["inputs"] == 2 for row in table.values()), table
    faults = {k: v for k, v in total.items() if k != "inputs" and v}
    assert not faults, (faults, [(f.family, f.argv[:6], f.faults, f.code, f.err) for f in found])


def _case(**kw: object) -> c.Case:
    return c.Case("t", ["topo"], frozenset({0, 5}), **kw)  # type: ignore[arg-type]


def _outcome(code: int | None, out: bytes = b"", err: bytes = b"", hung: bool = False) -> c.Outcome:
    return c.Outcome(code, out, err, hung, 0.1)


@pytest.mark.parametrize(
    ("case", "outcome", "fault"),
    [
        (_case(), _outcome(1, err=b"Traceback (most recent call last):\n  x"), "tracebacks"),
        (_case(), _outcome(None, hung=True), "hangs"),
        (_case(), _outcome(70, err=b"ascendtune: internal error: TypeError: x"), "internal errors"),
        (_case(), _outcome(3, err=b"ascendtune: error: x"), "wrong exit codes"),
        (c.Case("t", ["x"], frozenset({5})), _outcome(0), "false successes"),
        (
            _case(secrets=("sk-planted",)),
            _outcome(0, out=b"--api-key sk-planted"),
            "leaked secrets",
        ),
        (_case(json=True), _outcome(0, out=b'{"a": NaN}'), "partial outputs"),
        (_case(json=True), _outcome(0, out=b'{"a": 1'), "partial outputs"),
        (_case(min_samples=1), _outcome(0, out=b""), "partial outputs"),
    ],
)
def test_the_judge_counts_each_fault(case: c.Case, outcome: c.Outcome, fault: str) -> None:
    got = c.judge(case, outcome)
    assert got[fault] == 1, got
    assert got["inputs"] == 1


def test_the_judge_counts_files_left_behind(tmp_path: Path) -> None:
    (tmp_path / ".snap.tmp-1-abcd").mkdir()
    case = c.Case("t", ["snapshot"], frozenset({5}), scratch=tmp_path, dest=tmp_path / "snap")
    assert c.judge(case, _outcome(5))["files left behind"] == 1


def test_a_case_that_does_not_end_is_killed_and_counted_as_a_hang(tmp_path: Path) -> None:
    import os

    argv = ["watch", "--pid", str(os.getpid()), "--cpus", "0", "--interval", "0.1"]
    case = c.Case("t", argv, frozenset({0}), timeout_s=3)
    res = c.run(case, tmp_path)
    assert res.hung and res.code is None
    assert c.judge(case, res)["hangs"] == 1


def test_a_signal_reaches_the_case(tmp_path: Path) -> None:
    import os

    argv = ["watch", "--pid", str(os.getpid()), "--cpus", "0", "--interval", "0.1", "--json"]
    case = c.Case(
        "t",
        argv,
        frozenset({0}),
        signal=(signal.SIGTERM, 0.5),
        signal_after_output=True,
        json_lines=True,
        min_samples=1,
    )
    res = c.run(case, tmp_path)
    assert res.code == 0, res.err
    assert c.judge(case, res) == {**dict.fromkeys(c.COUNTS, 0), "inputs": 1}
