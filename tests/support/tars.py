"""Tar archives of given members, written by tarfile in a given format, for the archive reader's
tests."""

from __future__ import annotations

import io
import tarfile


def tar_of(
    fmt: int,
    members: list[tuple[str, str, str]],
    top: str = "",
    *,
    insert: bytes = b"",
    at: int = -1,
) -> bytes:
    """A tar of members (name, "file" | "link" | "dir", text or link target; a text's bytes no
    UTF-8 kept as surrogate escapes), each name under top; insert written raw before member at."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt, encoding="utf-8") as tar:
        for i, (name, kind, payload) in enumerate(members):
            if i == at and insert:
                raw.write(insert)
                tar.offset += len(insert)
            info = tarfile.TarInfo(top + name)
            if kind == "file":
                data = payload.encode("utf-8", "surrogateescape")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.SYMTYPE if kind == "link" else tarfile.DIRTYPE
                info.linkname = payload
                tar.addfile(info)
    return raw.getvalue()
