"""The kubelet's view of this node, read under the root: its state files and configuration
(`files`), and its PodResources API over the unix socket (`api`, grpcio imported on use)."""
