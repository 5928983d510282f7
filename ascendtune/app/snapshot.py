"""`snapshot`: capture a host (live, sysroot or demo) into a folder or archive, read it back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascendtune.app.documents import SnapshotDocument
    from ascendtune.host.sysroot import Root


def snapshot(root: Root, dest: str, *, force: bool = False) -> dict[str, Any]:
    """Write root's capture to dest (replacing what is there with force); returns the summary
    `snapshot --json` prints. write() reads the capture back before it renames it into place,
    so a snapshot that does not replay is never left behind."""
    from ascendtune.app.documents import plain
    from ascendtune.host import snapshot as snap
    from ascendtune.host.reader import read_host
    from ascendtune.host.sysroot import MemRoot

    cap = snap.capture(root)
    path = snap.write(cap, dest, force=force)
    # the counts come from the capture in memory: write() has already read the files back
    host = read_host(MemRoot(dict(cap.files), dict(cap.links)))
    doc: SnapshotDocument = {
        "path": str(path),
        "files": len(cap.files),
        "links": len(cap.links),
        "missing": cap.missing,
        "accelerators": len(host.accelerators),
        "cpus_online": len(host.cpus_online),
    }
    return plain(doc)
