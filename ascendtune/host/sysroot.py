"""The former home of the Root classes: they live in ascendtune.host.roots now. This module only
re-exports them for code not yet moved to the new name (the application and CLI layers, tests);
nothing new imports it."""

from __future__ import annotations

from ascendtune.host.roots import (
    CommandOutput,
    DirRoot,
    Folder,
    MemRoot,
    Root,
    command_file,
    error_file,
    open_archive,
    open_root,
    read_capped,
)

__all__ = [
    "CommandOutput",
    "DirRoot",
    "Folder",
    "MemRoot",
    "Root",
    "command_file",
    "error_file",
    "open_archive",
    "open_root",
    "read_capped",
]
