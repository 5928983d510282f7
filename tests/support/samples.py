"""Real tool outputs gathered from public sources, read in place from ../shared/samples (beside
the repository; ASCENDTUNE_SAMPLES names another folder). They are other projects' data: never
copied into this repository.

Without that folder every test that reads a sample skips, and the run ends with one line saying
how many and why (tests/conftest.py); with it, a sample that is missing fails its test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = Path(os.environ.get("ASCENDTUNE_SAMPLES") or REPO.parent / "shared" / "samples")
# every skip for want of the folder starts with this (the end-of-run line counts them)
SKIP_REASON = "../shared/samples is absent"


def sample(name: str) -> str:
    """Text of one sample; skips the test when the samples folder is absent."""
    if not SAMPLES.is_dir():
        pytest.skip(f"{SKIP_REASON}: {name}")
    path = SAMPLES / name
    if not path.is_file():
        pytest.fail(f"{path} is missing from the samples folder (renamed or removed?)")
    return path.read_text()


def sample_files(pattern: str) -> list[Path]:
    """The samples matching a glob, for corpora that also run without them (then: none)."""
    return sorted(SAMPLES.glob(pattern)) if SAMPLES.is_dir() else []


def skipped_line(count: int) -> str:
    return (
        f"{count} tests skipped: they read real tool outputs from ../shared/samples, which is not "
        f"at {SAMPLES} (check it out beside the repository or set ASCENDTUNE_SAMPLES=DIR); "
        "the parser fuzz corpora ran without those samples"
    )
