"""Roots the tool reads a host through: the live `/`, a captured folder, or an archive.

Every read goes through a Root with paths relative to it (SPEC.md section 2), so a live host and
a captured one take the same code path. Commands are run on a live root and read from
`commands/` under a captured one. `base` (the Root interface, Folder, the bounds), `walker`
(DirRoot: live `/` or a folder), `memroot` (MemRoot), `archive` (a .tar.gz read into a MemRoot).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.core.lazy import lazy_names
from ascendtune.host.roots.base import (
    MAX_FILE_BYTES,
    CommandOutput,
    Folder,
    Root,
    command_file,
    error_file,
    read_capped,
)
from ascendtune.host.roots.walker import DirRoot

if TYPE_CHECKING:
    from ascendtune.host.roots.archive import (
        MAX_ARCHIVE_BYTES,
        MAX_ARCHIVE_MEMBERS,
        open_archive,
        read_archive_file,
    )
    from ascendtune.host.roots.memroot import MemRoot

# loaded on first use: the live root (a bind, a live doctor) reads no archive (docs/startup.md)
_HOME = {
    "MAX_ARCHIVE_BYTES": "archive",
    "MAX_ARCHIVE_MEMBERS": "archive",
    "open_archive": "archive",
    "read_archive_file": "archive",
    "MemRoot": "memroot",
}

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_ARCHIVE_MEMBERS",
    "MAX_FILE_BYTES",
    "CommandOutput",
    "DirRoot",
    "Folder",
    "MemRoot",
    "Root",
    "command_file",
    "error_file",
    "open_archive",
    "open_root",
    "read_archive_file",
    "read_capped",
]


__getattr__ = lazy_names(__name__, _HOME)


_TOP_LEVEL = ("sys", "proc", "commands", "meta.json", "etc")


_FOLDERS = ("sys", "proc", "commands", "etc")


def _not_empty(root: Root, sysroot: str) -> Root:
    """An empty folder (or archive) is no captured host: every command would guess from nothing;
    one whose sys/ (or proc/, commands/) is a file is not one either, and is said so, not read
    as a host where nothing could be checked."""
    top = set(root.listdir(".") or [])
    for name in sorted(top.intersection(_FOLDERS)):
        if root.listdir(name) is None and root.read_text(name) is not None:
            raise InvalidInput(
                f"sysroot {sysroot}: {name} is a file, where a captured host has a folder",
                "give a folder or .tar.gz written by `ascendtune snapshot`",
            )
    if not top.intersection(_TOP_LEVEL):
        raise MissingError(
            f"sysroot {sysroot} holds no captured host (none of sys/, proc/, commands/, meta.json)",
            "give a folder or .tar.gz written by `ascendtune snapshot`",
        )
    return root


def open_root(sysroot: str | None) -> Root:
    """The live host (None or "/"), a sysroot folder, or a sysroot archive (.tar, .tar.gz, .tgz)."""
    if sysroot is None or os.path.abspath(sysroot) == "/":
        return DirRoot("/", live=True)
    p = Path(sysroot)
    if p.is_dir():
        if not os.access(p, os.R_OK | os.X_OK):
            raise PermissionDenied(
                f"sysroot {sysroot} cannot be read: permission denied",
                "run as its owner (snapshot writes it readable by its owner only), or copy it",
            )
        return _not_empty(DirRoot(p), sysroot)
    if p.exists():
        from ascendtune.host.roots.archive import open_archive, read_archive_file

        return _not_empty(open_archive(read_archive_file(p), str(p)), sysroot)
    raise MissingError(
        f"sysroot {sysroot} does not exist",
        "give a folder or .tar.gz written by `ascendtune snapshot`",
    )
