"""The forms the agent is installed in (`plan --emit systemd-unit`, `--emit daemonset`), each as
lines that run as pasted: the file in a quoted here-document, then the command that starts it.

What the agent needs and nothing more: CAP_SYS_NICE to set other processes' affinity, and
CAP_SYS_PTRACE only because the kernel asks it to read another user's /proc/PID/{fd,numa_maps}
(the agent never attaches to a process); the host's /proc (hostPID), the kubelet's state
read-only, a metrics port."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ascendtune.app.agent.config import DEFAULT_PORT

AGENT_EMITS = ("systemd-unit", "daemonset")
UNIT = "ascendtune-agent.service"
EXEC = "/usr/local/bin/ascendtune"
IMAGE = "ascendtune:0.1.0"
# the plan options the agent takes itself; any other (--reserve, --soc, ...) needs a plan file
AGENT_PLAN_OPTIONS = ("--policy", "--target", "--visible-devices")
LABELS = {"app.kubernetes.io/name": "ascendtune-agent", "app.kubernetes.io/component": "node-agent"}


def agent_args(plan_args: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the agent's plan options of plan_args, those it does not take)."""
    kept: list[str] = []
    left: list[str] = []
    i = 0
    while i < len(plan_args):
        a = plan_args[i]
        takes_value = i + 1 < len(plan_args) and not plan_args[i + 1].startswith("--")
        pair = [a, plan_args[i + 1]] if takes_value else [a]
        (kept if a in AGENT_PLAN_OPTIONS else left).extend(pair)
        i += len(pair)
    return kept, left


def _left_note(left: Sequence[str]) -> list[str]:
    if not left:
        return []
    return [
        f"# {' '.join(left)}: not an agent option; to keep them, write the plan to a file "
        "(`ascendtune plan ... --json > /etc/ascendtune/plan.json`) and run the agent with "
        "--plan /etc/ascendtune/plan.json"
    ]


def unit_text(args: Sequence[str]) -> str:
    """The systemd unit of `ascendtune agent ARGS`."""
    exec_start = " ".join([EXEC, "agent", *args, "--listen", f"127.0.0.1:{DEFAULT_PORT}"])
    return "\n".join(
        [
            "[Unit]",
            "Description=ascendtune agent: keep inference workers bound, export host metrics",
            "After=network-online.target",
            "Wants=network-online.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart={exec_start}",
            "ExecReload=/bin/kill -HUP $MAINPID",
            "Restart=on-failure",
            "RestartSec=5s",
            "KillSignal=SIGTERM",
            "CapabilityBoundingSet=CAP_SYS_NICE CAP_SYS_PTRACE",
            "AmbientCapabilities=CAP_SYS_NICE CAP_SYS_PTRACE",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "ProtectKernelTunables=yes",
            "ProtectKernelModules=yes",
            "ProtectControlGroups=yes",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
            "LockPersonality=yes",
            "MemoryMax=256M",
            "CPUQuota=50%",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
            "",
        ]
    )


def daemonset(args: Sequence[str]) -> dict[str, Any]:
    """A DaemonSet running `ascendtune agent ARGS` on every node, metrics on port DEFAULT_PORT."""
    mounts = [
        ("kubelet", "/var/lib/kubelet", "Directory"),
        ("ascend-driver", "/usr/local/Ascend/driver", "DirectoryOrCreate"),
        ("npu-smi", "/usr/local/sbin/npu-smi", "FileOrCreate"),
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "ascendtune-agent", "namespace": "kube-system", "labels": LABELS},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "hostPID": True,
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "agent",
                            "image": IMAGE,
                            "command": ["ascendtune"],
                            "args": ["agent", *args, "--listen", f"0.0.0.0:{DEFAULT_PORT}"],
                            "ports": [
                                {
                                    "name": "metrics",
                                    "containerPort": DEFAULT_PORT,
                                    "protocol": "TCP",
                                }
                            ],
                            "securityContext": {
                                "runAsUser": 0,
                                "privileged": False,
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {
                                    "drop": ["ALL"],
                                    "add": ["SYS_NICE", "SYS_PTRACE"],
                                },
                            },
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "64Mi"},
                                "limits": {"cpu": "500m", "memory": "256Mi"},
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/metrics", "port": "metrics"},
                                "periodSeconds": 30,
                            },
                            "volumeMounts": [
                                {"name": n, "mountPath": p, "readOnly": True} for n, p, _ in mounts
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": n, "hostPath": {"path": p, "type": t}} for n, p, t in mounts
                    ],
                },
            },
        },
    }


def emit_agent(kind: str, plan_args: Sequence[str]) -> list[str]:
    """The lines of `plan --emit systemd-unit` / `--emit daemonset`."""
    args, left = agent_args(plan_args)
    out = _left_note(left)
    if kind == "systemd-unit":
        out += [
            f"# the agent as a service; ExecStart assumes {EXEC} (see `command -v ascendtune`)",
            'unitdir="${SYSTEMD_UNIT_DIR:-/etc/systemd/system}"',
            f"cat > \"$unitdir/{UNIT}\" <<'EOF'",
            *unit_text(args).splitlines(),
            "EOF",
            'if [ "$unitdir" = /etc/systemd/system ]; then systemctl daemon-reload; fi',
            f'if [ "$unitdir" = /etc/systemd/system ]; then systemctl enable --now {UNIT}; fi',
        ]
        return out
    doc = json.dumps(daemonset(args), indent=2)
    return [
        *out,
        f"# the agent on every node; set the image to the one your registry holds ({IMAGE} here)",
        "# Prometheus: a PodMonitor selecting app.kubernetes.io/name=ascendtune-agent, port metrics",
        "kubectl apply -f - <<'EOF'",
        *doc.splitlines(),
        "EOF",
    ]
