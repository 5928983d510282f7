"""The former home of the Root classes: they live in ascendtune.host.roots now. This module only
hands out their names for code not yet moved to the new one (the application and CLI layers,
tests); nothing new imports it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ascendtune.host import roots

    return getattr(roots, name)
