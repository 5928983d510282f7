"""scripts/releases.py against a local index made in tmp_path: pip's configuration decides the
index, downloads land in the cache only whole and with the index's sha256, files are read out of
the .tar.gz without extracting it. No network."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from scripts import releases

pytest.importorskip("pypi_simple", reason="pip install -e '.[test]' installs pypi-simple")


def make_sdist(path: Path, version: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"vllm_ascend-{version}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path, dict[str, str]]:
    """A file:// Simple index with two vllm-ascend sdists; the cache in tmp_path."""
    files = tmp_path / "files"
    files.mkdir()
    digests = {}
    for version in ("0.9.1", "0.10.0rc1"):
        data = make_sdist(
            files / f"vllm_ascend-{version}.tar.gz",
            version,
            {
                "vllm_ascend/ascend_config.py": f"# {version}\n".encode(),
                "vllm_ascend/cpu_binding.py": b"def bind_cpus(rank): pass\n",
                "tests/ut/test_x.py": b"",
            },
        )
        digests[version] = hashlib.sha256(data).hexdigest()
    page = tmp_path / "simple" / "vllm-ascend"
    page.mkdir(parents=True)
    links = "".join(
        f'<a href="{(files / f"vllm_ascend-{v}.tar.gz").as_uri()}#sha256={d}">'
        f"vllm_ascend-{v}.tar.gz</a>\n"
        for v, d in digests.items()
    )
    (page / "index.html").write_text(f"<html><body>{links}</body></html>")
    monkeypatch.setenv(releases.CACHE_ENV, str(tmp_path / "cache"))
    return (tmp_path / "simple").as_uri(), tmp_path, digests


def test_index_comes_from_pip_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "file:///srv/index-a/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///srv/b file:///srv/c")
    assert releases.index_urls() == [
        "file:///srv/index-a/simple",
        "file:///srv/b",
        "file:///srv/c",
    ]


def test_pip_default_index_when_nothing_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from pip._internal.models.index import PyPI

    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    assert releases.index_urls() == [PyPI.simple_url]


def test_listing_is_oldest_first(index: tuple[str, Path, dict[str, str]]) -> None:
    url, _, digests = index
    listed = releases.list_sdists([url])
    assert [s.version for s in listed] == ["0.9.1", "0.10.0rc1"]
    assert listed[0].sha256 == digests["0.9.1"]


def test_an_index_without_the_project_is_skipped(
    index: tuple[str, Path, dict[str, str]], tmp_path: Path
) -> None:
    url, _, _ = index
    empty = (tmp_path / "empty").as_uri()
    assert [s.version for s in releases.list_sdists([empty, url])] == ["0.9.1", "0.10.0rc1"]
    with pytest.raises(releases.ReleaseError, match="no configured index"):
        releases.list_sdists([empty])


def test_fetch_caches_and_reads_members(index: tuple[str, Path, dict[str, str]]) -> None:
    url, tmp, _ = index
    sdist = releases.find("v0.9.1", releases.list_sdists([url]))
    path = releases.fetch(sdist)
    assert path.parent == tmp / "cache"
    assert releases.sha256_of(path) == sdist.sha256
    # a second fetch uses the cache (the source may be gone)
    shutil.rmtree(tmp / "files")
    assert releases.fetch(sdist) == path
    got = releases.read_members(path, ["vllm_ascend/ascend_config.py"])
    assert got == {"vllm_ascend/ascend_config.py": b"# 0.9.1\n"}
    assert set(releases.read_members(path)) == {
        "vllm_ascend/ascend_config.py",
        "vllm_ascend/cpu_binding.py",
        "tests/ut/test_x.py",
    }
    assert set(releases.read_members(path, ["vllm_ascend/"])) == {
        "vllm_ascend/ascend_config.py",
        "vllm_ascend/cpu_binding.py",
    }
    assert not list((tmp / "cache").glob("*.part"))


def test_a_digest_mismatch_is_a_loud_error_and_leaves_nothing(
    index: tuple[str, Path, dict[str, str]],
) -> None:
    url, tmp, _ = index
    sdist = releases.find("0.10.0rc1", releases.list_sdists([url]))
    bad = dataclasses.replace(sdist, sha256="0" * 64)
    with pytest.raises(releases.ReleaseError, match="differs from the index"):
        releases.fetch(bad)
    assert list((tmp / "cache").iterdir()) == []


def test_an_unknown_release_names_the_newest(index: tuple[str, Path, dict[str, str]]) -> None:
    url, _, _ = index
    with pytest.raises(releases.ReleaseError, match=r"0\.31\.0.*newest: 0\.10\.0rc1"):
        releases.find("0.31.0", releases.list_sdists([url]))


def test_blob_id_is_what_git_says(tmp_path: Path) -> None:
    data = b"def bind_cpus(rank):\n    pass\n"
    assert releases.blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    if shutil.which("git") is None:
        return
    f = tmp_path / "x.py"
    f.write_bytes(data)
    out = subprocess.run(
        ["git", "hash-object", str(f)], capture_output=True, text=True, check=True, timeout=30
    )
    assert releases.blob_id(data) == out.stdout.strip()
