"""Kubernetes: what the kubelet gave each pod (CPUs, devices, memory, policies), read from its
state files or its PodResources API, and whether each container's CPUs sit on its NPUs' NUMA
node. Pure: parsers of text and bytes, the model, the alignment and its fixes."""
