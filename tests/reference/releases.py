"""Source distributions of vLLM-Ascend releases for the reference tier, read in place from the
archive. Fetching is scripts/releases.py's: pip's configured index, the shared cache (never the
repo), sha256 checked against the index's digest, written atomically; a failed download raises,
so the tier fails rather than skips."""

from __future__ import annotations

import functools
from pathlib import Path

from scripts import releases as fetcher


def cache_dir() -> Path:
    return fetcher.cache_dir()


def sdist(version: str) -> Path:
    """The cached sdist of vllm_ascend==version, downloaded when absent."""
    _, path = fetcher.fetch_version(version)
    return path


def member(version: str, path: str) -> bytes | None:
    """The bytes of path (relative to the package root, e.g. vllm_ascend/cpu_binding.py) in that
    release's sdist, or None when it has no such file."""
    return _sources(version).get(path)


@functools.cache
def _sources(version: str) -> dict[str, bytes]:
    """Every .py file of the release's sdist, read in one pass over the archive."""
    return fetcher.read_members(sdist(version))


def members(version: str, prefix: str) -> dict[str, bytes]:
    """Every file under prefix in that release's sdist, keyed by path from the package root."""
    return {p: b for p, b in _sources(version).items() if p.startswith(prefix)}
