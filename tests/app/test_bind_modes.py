"""`bind`'s mode rules (app.bind.bind_mode): which options go with which mode, and the error of
the first rule broken, decided from the options alone before any host is read."""

from __future__ import annotations

import pytest

from ascendtune.app.bind import MODE_OPTIONS, NOT_WITH_WORKERS, bind_mode
from ascendtune.core.errors import UsageError


def given(*opts: str) -> dict[str, bool]:
    unknown = set(opts) - set(MODE_OPTIONS)
    assert not unknown, unknown
    return {o: o in opts for o in MODE_OPTIONS}


@pytest.mark.parametrize(
    ("opts", "mode"),
    [
        (("--pid",), "pid"),
        (("--pid", "--rank", "--migrate-memory", "--keep-partial"), "pid"),
        (("-- CMD",), "launch"),
        (("-- CMD", "--cpus", "--membind"), "launch"),
        (("--pid", "--show"), "show"),
        (("--pid", "--show", "--rank"), "show"),
        (("--workers",), "workers"),
        (("--workers", "--dry-run"), "workers"),
        (("--workers", "--watch"), "watch"),
        (("--workers", "--watch", "--for"), "watch"),
    ],
)
def test_each_mode_and_the_options_it_takes(opts: tuple[str, ...], mode: str) -> None:
    assert bind_mode(given(*opts)) == mode


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (("--watch",), "give --workers --watch"),
        (("--watch", "--pid"), "give --workers --watch"),
        (("--workers", "--for"), "--for bounds --watch"),
        (("--show",), "--show reads a running process: give --pid PID"),
        (("--pid", "-- CMD"), "not both"),
        (("--pid", "--membind"), "for a running process use --migrate-memory"),
        (("-- CMD", "--migrate-memory"), "for a command being started use --membind"),
        ((), "say what to bind"),
        (("--rank",), "say what to bind"),
    ],
)
def test_a_broken_rule_is_a_usage_error(opts: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        bind_mode(given(*opts))


@pytest.mark.parametrize("opt", NOT_WITH_WORKERS)
def test_workers_find_the_processes_themselves(opt: str) -> None:
    with pytest.raises(UsageError, match=f"{opt} do not go with it"):
        bind_mode(given("--workers", opt))
    with pytest.raises(UsageError, match="--pid, --rank do not go with it"):
        bind_mode(given("--workers", "--watch", "--rank", "--pid"))


def test_another_hosts_plan_allows_only_a_dry_run_on_a_process() -> None:
    for opts in (("--pid",), ("-- CMD",)):
        with pytest.raises(UsageError, match="--demo x plans another host"):
            bind_mode(given(*opts), foreign="--demo x")
        assert bind_mode(given(*opts, "--dry-run"), foreign="--demo x") in ("pid", "launch")
    assert bind_mode(given("--pid", "--show"), foreign="--sysroot d") == "show"
    # --workers reads the foreign root itself and refuses there (require_live)
    assert bind_mode(given("--workers"), foreign="--sysroot d") == "workers"
