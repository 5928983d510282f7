"""Where the kubelet keeps its configuration and its managers' checkpoints, relative to a root.

A module of its own, apart from the parsers (`core.k8s.config`, `core.k8s.state`): a host that
is no Kubernetes node is told from these paths alone, without importing the parsers
(docs/startup.md)."""

CONFIG_FILE = "var/lib/kubelet/config.yaml"
CPU_MANAGER_FILE = "var/lib/kubelet/cpu_manager_state"
MEMORY_MANAGER_FILE = "var/lib/kubelet/memory_manager_state"
DEVICE_CHECKPOINT_FILE = "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
# the managers' checkpoints: any of them there makes the root a Kubernetes node
CHECKPOINT_FILES = (CPU_MANAGER_FILE, MEMORY_MANAGER_FILE, DEVICE_CHECKPOINT_FILE)
SOCKET = "var/lib/kubelet/pod-resources/kubelet.sock"
# what the API answered, as `snapshot` saved it (a captured host has no socket to ask)
API_ANSWER = "var/lib/kubelet/pod-resources/ascendtune-answer.json"
