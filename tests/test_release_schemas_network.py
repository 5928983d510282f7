"""The network tier: every committed schema file equals what scripts/extract_schema.py reads from
its release's sdist today (the sdist fetched from pip's index into the shared cache).

Off by default (it downloads about 300 MB the first time); `.ci/run` runs it with
`ASCENDTUNE_RELEASE_TIER=1 python3 -m pytest -m releases tests/test_release_schemas_network.py`.
There a failed download fails the test; it never skips."""

from __future__ import annotations

import os

import pytest

from ascendtune.core.vllm_config import extracted

ENABLED = os.environ.get("ASCENDTUNE_RELEASE_TIER") == "1"

pytestmark = [
    pytest.mark.releases,
    pytest.mark.skipif(not ENABLED, reason="the release tier runs with ASCENDTUNE_RELEASE_TIER=1"),
]


@pytest.mark.parametrize("release", extracted.available())
def test_committed_schema_is_what_the_extractor_reads(release: str) -> None:
    from scripts import extract_schema

    doc = extract_schema.from_release(release)
    committed = extract_schema.schema_path(release).read_text()
    assert extract_schema.render(doc) == committed, (
        f"{release}: regenerate with python -m scripts.extract_schema {release}"
    )
