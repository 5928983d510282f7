"""`snapshot`: capture a host (live, sysroot or demo) into a folder or archive, read it back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.source import THIS_HOST, HostSource

if TYPE_CHECKING:
    from ascendtune.app.documents import SnapshotDocument
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.host.roots import Root


class SnapshotOptions(NamedTuple):
    """`snapshot DIR`: where to write the capture (a folder, or DIR.tar.gz), of which host."""

    dest: str
    force: bool = False  # replace what is at dest
    source: HostSource = THIS_HOST


class SnapshotReport(NamedTuple):
    """What was written where, and what the capture holds."""

    path: str
    files: int
    links: int
    missing: list[str]  # paths absent on the captured host
    accelerators: int
    cpus_online: int

    @property
    def exit_code(self) -> int:
        return 0

    @property
    def error(self) -> AscendtuneError | None:
        return None


# names that promise an archive snapshot does not write: a folder of that name would mislead
# whoever opens it (or attaches it to a bug report)
OTHER_ARCHIVES = (".zip", ".tar.xz", ".tar.bz2", ".tar.zst", ".txz", ".xz", ".bz2",
                  ".7z", ".rar", ".zst")  # fmt: skip


def check_dest(dest: str) -> None:
    """A usage error for a destination named like an archive other than .tar.gz."""
    from ascendtune.core.errors import UsageError

    low = dest.lower().rstrip("/")
    if low.endswith((".tar.gz", ".tgz", ".tar")):
        return
    kind = next((s for s in OTHER_ARCHIVES if low.endswith(s)), None)
    if kind is not None or (low.endswith(".gz")):
        raise UsageError(
            f"snapshot {dest}: a snapshot is a folder or a tar archive (.tar.gz, .tgz, .tar), not {kind or '.gz'}",
            "give DIR, DIR.tar.gz or DIR.tar",
        )


def run(opts: SnapshotOptions) -> SnapshotReport:
    """`snapshot DIR`: capture the host opts.source names into opts.dest."""
    from ascendtune.app.hosts import open_root

    check_dest(opts.dest)
    return snapshot(open_root(opts.source), opts.dest, force=opts.force)


def snapshot(root: Root, dest: str, *, force: bool = False) -> SnapshotReport:
    """Write root's capture to dest (replacing what is there with force). write() reads the
    capture back before it renames it into place, so a snapshot that does not replay is never
    left behind."""
    from ascendtune.host import snapshot as snap
    from ascendtune.host.reader import read_host
    from ascendtune.host.roots import MemRoot

    cap = snap.capture(root)
    path = snap.write(cap, dest, force=force)
    # the counts come from the capture in memory: write() has already read the files back
    host = cap.host or read_host(MemRoot(dict(cap.files), dict(cap.links)))
    return SnapshotReport(
        str(path),
        len(cap.files),
        len(cap.links),
        list(cap.missing),
        len(host.accelerators),
        len(host.cpus_online),
    )


def document(report: SnapshotReport) -> dict[str, Any]:
    """`snapshot --json` without schema_version (the printer adds it)."""
    from ascendtune.app.documents import plain

    doc: SnapshotDocument = {
        "path": report.path,
        "files": report.files,
        "links": report.links,
        "missing": report.missing,
        "accelerators": report.accelerators,
        "cpus_online": report.cpus_online,
    }
    return plain(doc)
