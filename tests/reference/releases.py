"""Source distributions of vLLM-Ascend releases for the reference tier: fetched once into a
shared cache (never into the repo), read in place from the archive.

Kept small on purpose: scripts/releases.py (helper "src") is to own fetching; this module is the
one place the tier asks for an archive, so it can be swapped for that one.
"""

from __future__ import annotations

import functools
import os
import tarfile
import tempfile
from pathlib import Path

PROJECT = "vllm-ascend"
CACHE_ENV = "ASCENDTUNE_RELEASE_CACHE"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ascendtune" / "sdists")


def _index_url() -> str:
    """The index pip is configured with (its default when none is set)."""
    from pip._internal.configuration import Configuration
    from pip._internal.models.index import PyPI

    conf = Configuration(isolated=False)
    conf.load()
    for key in ("global.index-url", ":env:.index-url", "install.index-url"):
        try:
            return str(conf.get_value(key))
        except Exception:
            continue
    return PyPI.simple_url


def sdist(version: str) -> Path:
    """The cached sdist of vllm_ascend==version, downloaded (atomically) when absent. A failed
    download raises: the tier fails rather than skips."""
    target = cache_dir() / f"vllm_ascend-{version}.tar.gz"
    if target.exists():
        return target
    from pypi_simple import PyPISimple

    target.parent.mkdir(parents=True, exist_ok=True)
    with PyPISimple(endpoint=_index_url().rstrip("/") + "/") as client:
        page = client.get_project_page(PROJECT)
        pkgs = [p for p in page.packages if p.version == version and p.package_type == "sdist"]
        if not pkgs:
            raise RuntimeError(f"no sdist of {PROJECT} {version} on the index")
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(fd)
        try:
            client.download_package(pkgs[0], path=tmp, verify=True)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def member(version: str, path: str) -> bytes | None:
    """The bytes of path (relative to the package root, e.g. vllm_ascend/cpu_binding.py) in that
    release's sdist, or None when it has no such file."""
    return _sources(version).get(path)


@functools.cache
def _sources(version: str) -> dict[str, bytes]:
    """Every .py file of the release's sdist, read in one pass over the archive."""
    out: dict[str, bytes] = {}
    with tarfile.open(sdist(version)) as tar:
        for m in tar:
            parts = m.name.split("/", 1)
            if len(parts) == 2 and parts[1].endswith(".py") and m.isfile():
                f = tar.extractfile(m)
                if f:
                    out[parts[1]] = f.read()
    return out


def members(version: str, prefix: str) -> dict[str, bytes]:
    """Every file under prefix in that release's sdist, keyed by path from the package root."""
    return {p: b for p, b in _sources(version).items() if p.startswith(prefix)}
