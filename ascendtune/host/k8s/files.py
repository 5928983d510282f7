"""The kubelet's files under the root: its configuration, the CPU, memory and device managers'
checkpoints, the pods' names (var/log/pods) and the annotations a pod's downward-API volume
holds. Each file is parsed by ascendtune.core.k8s; one that cannot be parsed is reported, never
fatal (the files are the fallback the Kubernetes docs call fragile)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from ascendtune.core.errors import AscendtuneError
from ascendtune.core.k8s.paths import (
    API_ANSWER,
    CHECKPOINT_FILES,
    CONFIG_FILE,
    CPU_MANAGER_FILE,
    DEVICE_CHECKPOINT_FILE,
    MEMORY_MANAGER_FILE,
)
from ascendtune.host.k8s import is_kubernetes_node, socket_path
from ascendtune.host.roots import Root

if TYPE_CHECKING:
    from ascendtune.core.k8s import state
    from ascendtune.core.k8s.config import KubeletConfig

KUBELET_DIR = "var/lib/kubelet"
POD_LOGS = "var/log/pods"  # NAMESPACE_NAME_UID folders: a pod's name from its UID
# the names of those folders, as `snapshot` saved them (a snapshot holds files, not folders)
POD_NAMES = "var/lib/kubelet/ascendtune-pod-names.json"
PODS_DIR = "var/lib/kubelet/pods"
DOWNWARD_API = "volumes/kubernetes.io~downward-api"
MAX_PODS = 4096
_UID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class KubeletFiles(NamedTuple):
    config: KubeletConfig | None
    config_file: str | None
    cpu: state.CpuManagerState | None
    memory: state.MemoryManagerState | None
    devices: state.DeviceCheckpoint | None
    names: Mapping[str, tuple[str, str]]  # pod UID -> (namespace, name)
    annotations: Mapping[str, Mapping[str, str]]  # pod UID -> annotations
    annotation_files: tuple[str, ...]  # where they were read (snapshot captures them)
    problems: tuple[str, ...]  # files present that could not be read


def kubelet_args(root: Root) -> list[str] | None:
    """The command line of a kubelet process on this root (None: none runs, or none was
    captured)."""
    for pid in root.listdir("proc") or []:
        if not pid.isdigit():
            continue
        if (root.read_text(f"proc/{pid}/comm") or "").strip() != "kubelet":
            continue
        return (root.read_text(f"proc/{pid}/cmdline") or "").split("\0")
    return None


def config_file(root: Root, args: list[str] | None = None) -> str:
    """The kubelet's --config, where a kubelet process on this root names one, else the
    kubeadm default."""
    if args is None:
        args = kubelet_args(root) or []
    for i, arg in enumerate(args):
        if arg.startswith("--config="):
            return arg.split("=", 1)[1].lstrip("/")
        if arg == "--config" and i + 1 < len(args):
            return args[i + 1].lstrip("/")
    return CONFIG_FILE


def read_files(root: Root) -> KubeletFiles:
    # the parsers imported here: a host that is no Kubernetes node (is_kubernetes_node) needs
    # only their paths (core.k8s.paths; docs/startup.md)
    from ascendtune.core.k8s import state
    from ascendtune.core.k8s.config import parse_kubelet_config, with_flags

    problems: list[str] = []

    def parsed(rel: str, parse):  # type: ignore[no-untyped-def]
        try:
            text = root.read_text(rel)
        except AscendtuneError as e:  # larger than the bound on one file
            problems.append(f"{rel}: {e.message}")
            return None
        if text is None:
            return None
        try:
            return parse(text, rel)
        except AscendtuneError as e:
            problems.append(e.message if e.message.startswith(rel) else f"{rel}: {e.message}")
            return None

    args = kubelet_args(root) or []
    cfg_rel = config_file(root, args)
    config = parsed(cfg_rel, parse_kubelet_config)
    if config is not None:
        config = with_flags(config, args)
    names = pod_names(root)
    annotations, files = pod_annotations(root)
    return KubeletFiles(
        config,
        cfg_rel if config is not None else None,
        parsed(CPU_MANAGER_FILE, state.parse_cpu_manager_state),
        parsed(MEMORY_MANAGER_FILE, state.parse_memory_manager_state),
        parsed(DEVICE_CHECKPOINT_FILE, state.parse_device_checkpoint),
        names,
        annotations,
        files,
        tuple(problems),
    )


def pod_names(root: Root) -> dict[str, tuple[str, str]]:
    """UID -> (namespace, name) from the kubelet's log folders NAMESPACE_NAME_UID (names and
    namespaces hold no `_`; the UID is the last field)."""
    out: dict[str, tuple[str, str]] = {}
    entries = root.listdir(POD_LOGS)
    if entries is None:
        entries = _saved_names(root)
    for entry in entries[:MAX_PODS]:
        parts = entry.split("_")
        if len(parts) == 3 and _UID.match(parts[2]):
            out[parts[2]] = (parts[0], parts[1])
    return out


def pod_processes(root: Root, uids: set[str], cap: int = 64) -> dict[str, list[tuple[int, str]]]:
    """UID -> (PID, comm) of the processes whose cgroup path names the pod: `pod<UID>` with
    the cgroupfs driver, `pod<UID with _ for ->` with the systemd one. At most cap a pod."""
    out: dict[str, list[tuple[int, str]]] = {}
    if not uids:
        return out
    forms = {u.replace("-", "_"): u for u in uids} | {u: u for u in uids}
    pattern = re.compile(r"pod(" + "|".join(re.escape(f) for f in forms) + r")\b")
    for pid in root.listdir("proc") or []:
        if not pid.isdigit():
            continue
        try:
            cgroup = root.read_text(f"proc/{pid}/cgroup")
        except AscendtuneError:
            continue
        m = pattern.search(cgroup or "")
        if m is None:
            continue
        found = out.setdefault(forms[m.group(1)], [])
        if len(found) < cap:
            comm = (root.read_text(f"proc/{pid}/comm") or "").strip()
            found.append((int(pid), comm))
    return {u: sorted(p) for u, p in out.items()}


def _saved_names(root: Root) -> list[str]:
    import json

    try:
        doc = json.loads(root.read_text(POD_NAMES) or "[]")
    except (ValueError, AscendtuneError):
        return []
    return [str(e) for e in doc] if isinstance(doc, list) else []


def capture(root: Root) -> dict[str, str]:
    """What `snapshot` saves of the kubelet (path -> text): its configuration and the kubelet
    process that names it, the managers' checkpoints, the pods' annotations (secrets masked)
    and names, and, where the socket answers, what the PodResources API said."""
    import json

    from ascendtune.core.k8s.annotations import redact_annotations
    from ascendtune.core.redact import redact_args

    if not is_kubernetes_node(root):
        return {}
    out: dict[str, str] = {}
    for pid in root.listdir("proc") or []:
        if pid.isdigit() and (root.read_text(f"proc/{pid}/comm") or "").strip() == "kubelet":
            out[f"proc/{pid}/comm"] = "kubelet\n"
            cmdline = root.read_text(f"proc/{pid}/cmdline") or ""
            out[f"proc/{pid}/cmdline"] = "\0".join(redact_args(cmdline.split("\0")))
    for rel in (config_file(root), *CHECKPOINT_FILES):
        try:
            text = root.read_text(rel)
        except AscendtuneError:
            continue
        if text is not None:
            out[rel] = text
    _annotations, files = pod_annotations(root)
    for rel in files:
        text = root.read_text(rel)
        if text is not None:
            out[rel] = redact_annotations(text)
    names = root.listdir(POD_LOGS)
    if names is not None:
        out[POD_NAMES] = json.dumps(sorted(names)[:MAX_PODS], indent=1) + "\n"
    sock = socket_path(root)
    if sock is not None:
        from ascendtune.host.k8s import api

        answer = api.ask(sock)
        if isinstance(answer, api.ApiAnswer):
            out[API_ANSWER] = json.dumps(api.answer_document(answer), indent=1) + "\n"
    elif (saved := root.read_text(API_ANSWER)) is not None:
        out[API_ANSWER] = saved
    return out


def pod_annotations(root: Root) -> tuple[dict[str, dict[str, str]], tuple[str, ...]]:
    """UID -> annotations, from each pod's downward-API volumes (a file of `key="value"`
    lines; the kubelet keeps the volume's files on the node)."""
    # imported here: it brings core.redact's patterns, which `topo` on a host that is no
    # Kubernetes node never uses (docs/startup.md)
    from ascendtune.core.k8s import annotations

    out: dict[str, dict[str, str]] = {}
    files: list[str] = []
    for uid in (root.listdir(PODS_DIR) or [])[:MAX_PODS]:
        base = f"{PODS_DIR}/{uid}/{DOWNWARD_API}"
        for volume in root.listdir(base) or []:
            for name in root.listdir(f"{base}/{volume}") or []:
                if name.startswith(".."):
                    continue
                rel = f"{base}/{volume}/{name}"
                try:
                    text = root.read_text(rel)
                except AscendtuneError:
                    continue
                if text is None:
                    continue
                found = annotations.parse_annotations(text)
                if any(k.startswith("huawei.com/") for k in found) or name == "annotations":
                    out.setdefault(uid, {}).update(found)
                    files.append(rel)
    return out, tuple(files)
