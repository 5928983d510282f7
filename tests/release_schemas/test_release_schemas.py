"""The release tier: every committed schema file equals what scripts/extract_schema.py reads from
its release's sdist today (fetched from pip's index into the shared cache).

Deselected unless asked for (tests/release_schemas/conftest.py): it downloads about 300 MB the
first time. Run it with `python3 -m pytest -m releases tests/release_schemas`; a failed download
fails it, it never skips."""

from __future__ import annotations

import pytest

from ascendtune.core.vllm_config import extracted

pytestmark = pytest.mark.releases


@pytest.mark.parametrize("release", extracted.available())
def test_committed_schema_is_what_the_extractor_reads(release: str) -> None:
    from scripts import extract_schema

    doc = extract_schema.from_release(release)
    committed = extract_schema.schema_path(release).read_text()
    assert extract_schema.render(doc) == committed, (
        f"{release}: regenerate with python -m scripts.extract_schema {release}"
    )
