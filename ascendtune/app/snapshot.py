"""`snapshot`: capture a host (live, sysroot or demo) into a folder or archive, read it back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascendtune.app.documents import SnapshotDocument
    from ascendtune.host.sysroot import Root


def snapshot(root: Root, dest: str) -> dict[str, Any]:
    """Write root's capture to dest and replay it; returns the summary `snapshot --json` prints."""
    from ascendtune.app.documents import plain
    from ascendtune.host import snapshot as snap
    from ascendtune.host.reader import read_host
    from ascendtune.host.sysroot import open_root

    cap = snap.capture(root)
    path = snap.write(cap, dest)
    # read it back: a snapshot that does not replay is worse than none
    host = read_host(open_root(str(path)))
    doc: SnapshotDocument = {
        "path": str(path),
        "files": len(cap.files),
        "links": len(cap.links),
        "missing": cap.missing,
        "accelerators": len(host.accelerators),
        "cpus_online": len(host.cpus_online),
    }
    return plain(doc)
