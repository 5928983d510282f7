"""A sysroot under construction: files and symlinks by path, written to a folder, to an
in-memory {path: bytes} mapping, or to a deterministic tar / tar.gz archive."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path


class Tree:
    """Files (text) and symlinks of one sysroot, by path relative to its root."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.links: dict[str, str] = {}

    def file(self, rel: str, text: str) -> None:
        self.files[rel] = text

    def link(self, rel: str, target: str) -> None:
        self.links[rel] = target

    def mapping(self) -> dict[str, bytes]:
        """Every file's bytes by path (symlinks are in `links`)."""
        return {p: t.encode() for p, t in self.files.items()}

    def write(self, root: Path) -> Path:
        """Write the files and symlinks under root (created if missing); return root."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in self.files.items():
            write_file(root, rel, text)
        for rel, target in self.links.items():
            write_link(root, rel, target)
        return root

    def tar(self) -> bytes:
        """An uncompressed ustar archive: members sorted, every stamp fixed (mtime 0, root)."""
        buf = io.BytesIO()
        entries = sorted([(p, "f") for p in self.files] + [(p, "l") for p in self.links])
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for path, kind in entries:
                info = tarfile.TarInfo(path)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                if kind == "l":
                    info.type = tarfile.SYMTYPE
                    info.linkname = self.links[path]
                    info.mode = 0o777
                    tar.addfile(info)
                else:
                    data = self.files[path].encode()
                    info.size = len(data)
                    info.mode = 0o644
                    tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def tar_gz(self) -> bytes:
        """tar() gzipped at level 9 with gzip mtime 0 and no name: the same bytes every run."""
        return gzip_bytes(self.tar())


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=buf, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def write_file(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def write_link(root: Path, rel: str, target: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.symlink_to(target)
