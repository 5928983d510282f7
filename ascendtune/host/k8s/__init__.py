"""The kubelet's view of this node, read under the root: its state files and configuration
(`files`), and its PodResources API over the unix socket (`api`, grpcio imported on use).

Whether the root is a Kubernetes node at all is told here, from the kubelet's paths alone:
`topo` and `doctor` on a host that is none import neither `files` nor `app.k8s`
(docs/startup.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.errors import AscendtuneError
from ascendtune.core.k8s.paths import API_ANSWER, CHECKPOINT_FILES, SOCKET

if TYPE_CHECKING:
    from ascendtune.host.roots import Root


def is_kubernetes_node(root: Root) -> bool:
    """A kubelet's checkpoint, a captured API answer or the PodResources socket is there (its
    configuration file alone does not count)."""

    def there(rel: str) -> bool:
        try:
            return root.read_text(rel) is not None
        except AscendtuneError:  # there, but past the bound on one file: read_files says so
            return True

    return any(there(f) for f in (*CHECKPOINT_FILES, API_ANSWER)) or socket_path(root) is not None


def socket_path(root: Root) -> str | None:
    """The PodResources socket's path on this machine, when the root is a folder that holds
    one (the live `/`, or a test's tree): never through a symlink out of the root."""
    import os
    import stat

    base = getattr(root, "path", None)
    if base is None:
        return None
    path = os.path.join(os.fspath(base), SOCKET)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return path if stat.S_ISSOCK(st.st_mode) else None
