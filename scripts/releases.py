"""List and fetch vLLM-Ascend source distributions from the package index pip is configured with.

    python -m scripts.releases list [--since 0.9.1rc1]   # every sdist on the index, oldest first
    python -m scripts.releases fetch 0.18.0 0.30.0rc2     # download into the cache (sha256 checked)
    python -m scripts.releases show 0.18.0 vllm_ascend/ascend_config.py   # one file, to stdout

The index is pip's own: `index-url` and `extra-index-url` from pip's configuration (files and
PIP_* variables), else pip's default index. It is spoken to through the Simple Repository API
(`pypi-simple`, extra `releases`): `pip download` cannot fetch these sdists, because preparing
their metadata needs torch. Downloads go to a cache shared by every process (default
~/.cache/ascendtune/sdists, env ASCENDTUNE_RELEASE_CACHE), written to a temporary file and renamed
into place once its sha256 equals the index's digest. Files are read out of the .tar.gz in
memory; nothing is extracted, and nothing from a release is ever copied into this repository.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROJECT = "vllm-ascend"
CACHE_ENV = "ASCENDTUNE_RELEASE_CACHE"
TIMEOUT_S = 120


class ReleaseError(Exception):
    """A release could not be listed, fetched or read; the message says which and why."""


@dataclass(frozen=True)
class Sdist:
    version: str
    filename: str
    url: str
    sha256: str | None
    index: str


# --- pip's configuration ------------------------------------------------------------------------


def index_urls() -> list[str]:
    """The indexes pip would ask: its index-url (or pip's default), then its extra-index-urls."""
    values = _pip_config()
    main = _pick(values, "index-url")
    extra = _pick(values, "extra-index-url")
    if main is None:
        from pip._internal.models.index import PyPI

        main = PyPI.simple_url
    urls = [main.strip()]
    urls += [u for u in (extra or "").split() if u and u not in urls]
    return urls


def _pip_config() -> dict[str, str]:
    """pip's merged configuration: files (global < user < site) and PIP_* variables."""
    from pip._internal.configuration import Configuration

    conf = Configuration(isolated=False)
    conf.load()
    return {k: str(v) for k, v in conf.items()}


def _pick(values: dict[str, str], key: str) -> str | None:
    # the environment overrides files; a `download` or `install` section overrides `global`
    for section in (":env:", "download", "install", "global"):
        v = values.get(f"{section}.{key}")
        if v:
            return v
    return None


# --- listing ------------------------------------------------------------------------------------


def version_key(version: str) -> object:
    from packaging.version import Version

    return Version(version)


def list_sdists(indexes: Sequence[str] | None = None) -> list[Sdist]:
    """Every vllm-ascend sdist the indexes serve, oldest version first (the first index wins)."""
    found: dict[str, Sdist] = {}
    answered = []
    for url in indexes or index_urls():
        packages = _project_packages(url)
        if packages is None:
            continue
        answered.append(url)
        for pkg in packages:
            if pkg.package_type != "sdist" or not pkg.version or pkg.filename in found:
                continue
            found[pkg.filename] = Sdist(
                pkg.version, pkg.filename, pkg.url, pkg.digests.get("sha256"), url
            )
    if not answered:
        raise ReleaseError(
            f"no configured index serves {PROJECT} (asked: {', '.join(indexes or index_urls())})"
        )
    by_version: dict[str, Sdist] = {}
    for s in found.values():
        by_version.setdefault(s.version, s)
    return sorted(by_version.values(), key=lambda s: version_key(s.version))  # type: ignore[arg-type,return-value]


def _project_packages(url: str) -> list | None:  # type: ignore[type-arg]
    """The project's files on one index; None where that index does not have the project."""
    try:
        from pypi_simple import NoSuchProjectError, ProjectPage, PyPISimple
    except ImportError as e:
        raise ReleaseError("pypi-simple is not installed: pip install -e '.[releases]'") from e
    if url.startswith("file://"):
        # a local index (a folder of project folders): read its page where it exists
        folder = Path(url[len("file://") :]) / PROJECT
        page = folder / "index.html"
        if not page.is_file():
            return None
        return list(
            ProjectPage.from_html(PROJECT, page.read_text(), base_url=page.as_uri()).packages
        )
    try:
        with PyPISimple(url) as client:
            return list(client.get_project_page(PROJECT, timeout=TIMEOUT_S).packages)
    except NoSuchProjectError:
        return None
    except Exception as e:  # requests' errors: the index did not answer
        raise ReleaseError(f"index {url} did not answer for {PROJECT}: {e}") from e


def find(version: str, sdists: Iterable[Sdist] | None = None) -> Sdist:
    version = version.removeprefix("v")
    listing = list(sdists) if sdists is not None else list_sdists()
    for s in listing:
        if s.version == version:
            return s
    raise ReleaseError(
        f"{PROJECT} {version} has no source distribution on the index "
        f"(newest: {listing[-1].version if listing else 'none'})"
    )


# --- the cache ----------------------------------------------------------------------------------


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    path = Path(env) if env else Path.home() / ".cache" / "ascendtune" / "sdists"
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(sdist: Sdist) -> Path:
    """The sdist in the cache, downloaded first if missing or different from the index's digest."""
    if not sdist.sha256:
        raise ReleaseError(f"{sdist.filename}: the index gives no sha256 digest; refusing it")
    path = cache_dir() / sdist.filename
    if path.is_file() and sha256_of(path) == sdist.sha256:
        return path
    if sdist.url.startswith("file://"):
        data = Path(sdist.url[len("file://") :].split("#", 1)[0]).read_bytes()
    else:
        data = _download(sdist.url)
    got = hashlib.sha256(data).hexdigest()
    if got != sdist.sha256:
        raise ReleaseError(
            f"{sdist.filename}: downloaded sha256 {got} differs from the index's {sdist.sha256}"
        )
    # temp file in the same folder, then rename: a reader never sees half a file
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{sdist.filename}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _download(url: str) -> bytes:
    import requests

    try:
        r = requests.get(url, timeout=TIMEOUT_S)
        r.raise_for_status()
    except requests.RequestException as e:
        raise ReleaseError(f"download of {url.split('#', 1)[0]} failed: {e}") from e
    return r.content


_LISTING: list[Sdist] = []


def fetch_version(version: str) -> tuple[Sdist, Path]:
    """The sdist of one version, from the cache or the index (the listing is asked once per
    process)."""
    if not _LISTING:
        _LISTING.extend(list_sdists())
    sdist = find(version, _LISTING)
    return sdist, fetch(sdist)


# --- reading an sdist ---------------------------------------------------------------------------


def read_members(path: Path, wanted: Iterable[str] | None = None) -> dict[str, bytes]:
    """Files of the sdist by their path inside the project (top folder stripped), in memory.

    `wanted`: exact paths, or folder prefixes ending in "/"; None reads every .py file."""
    want = list(wanted) if wanted is not None else None
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                parts = member.name.split("/", 1)
                if len(parts) != 2:
                    continue
                rel = parts[1]
                if want is None:
                    if not rel.endswith(".py"):
                        continue
                elif not any(rel == w or (w.endswith("/") and rel.startswith(w)) for w in want):
                    continue
                f = tar.extractfile(member)
                if f is not None:
                    out[rel] = f.read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ReleaseError(f"{path.name}: not a readable .tar.gz ({e})") from e
    return out


def blob_id(data: bytes) -> str:
    """What `git hash-object` says of a file with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# --- command line -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m scripts.releases", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="every sdist on the index")
    ls.add_argument("--since", help="oldest version to list")
    fe = sub.add_parser("fetch", help="download into the cache")
    fe.add_argument("versions", nargs="+")
    sh = sub.add_parser("show", help="print one file of a release")
    sh.add_argument("version")
    sh.add_argument("path")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            for s in list_sdists():
                if args.since and version_key(s.version) < version_key(args.since):  # type: ignore[operator]
                    continue
                print(f"{s.version}\t{s.filename}\t{s.sha256}")
        elif args.cmd == "fetch":
            listing = list_sdists()
            for v in args.versions:
                path = fetch(find(v, listing))
                print(path)
        else:
            _, path = fetch_version(args.version)
            data = read_members(path, [args.path]).get(args.path)
            if data is None:
                raise ReleaseError(f"{args.version} has no {args.path}")
            sys.stdout.buffer.write(data)
    except ReleaseError as e:
        print(f"releases: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
