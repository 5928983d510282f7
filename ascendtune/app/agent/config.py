"""The agent's configuration: a TOML file (`--config`), then the flags, which win; SIGHUP reads
the file again (the flags still win)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from ascendtune.core.errors import InvalidInput, UsageError

DEFAULT_PORT = 9477
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
MODES = ("keep", "observe")
LOG_FORMATS = ("logfmt", "json")


class AgentConfig(NamedTuple):
    listen: str = DEFAULT_LISTEN  # "" serves no HTTP (textfile only)
    textfile: str = ""  # a .prom file for node_exporter's textfile collector, rewritten each sample
    interval_s: float = 5.0
    doctor_interval_s: float = 60.0
    service: str = "vllm"  # the `service` label: which server these workers belong to
    mode: str = "keep"  # keep: bind and keep bound; observe: only read and export
    policy: str = "auto"
    target: str = "auto"
    plan_file: str = ""
    visible_devices: str = ""
    log_format: str = "logfmt"


# TOML key -> (field, type); the file spells durations in seconds
_KEYS: dict[str, tuple[str, type]] = {
    "listen": ("listen", str),
    "textfile": ("textfile", str),
    "interval": ("interval_s", float),
    "doctor_interval": ("doctor_interval_s", float),
    "service": ("service", str),
    "mode": ("mode", str),
    "policy": ("policy", str),
    "target": ("target", str),
    "plan": ("plan_file", str),
    "visible_devices": ("visible_devices", str),
    "log_format": ("log_format", str),
}


def _toml(text: str, source: str) -> dict[str, Any]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, from PyPI (the agent extra)
        import tomli as tomllib
    try:
        doc: dict[str, Any] = tomllib.loads(text)
        return doc
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(
            f"{source}: not valid TOML: {e}", "see `ascendtune agent --help`"
        ) from None


def from_file(path: Path) -> dict[str, Any]:
    """The fields a config file sets (keys of AgentConfig)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise InvalidInput(
            f"--config {path}: cannot read it ({e.strerror})", "give a readable TOML file"
        ) from None
    raw = _toml(text, str(path))
    doc = raw.get("agent", raw) if isinstance(raw.get("agent"), dict) else raw
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in _KEYS:
            raise InvalidInput(
                f"{path}: unknown key {key!r}", f"known keys: {', '.join(sorted(_KEYS))}"
            )
        field, kind = _KEYS[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InvalidInput(
                f"{path}: {key} = {value!r}: expected a {'number' if kind is float else 'string'}",
                "see `ascendtune agent --help`",
            )
        out[field] = value
    return out


def build(path: Path | None, flags: dict[str, Any]) -> AgentConfig:
    """The file's values, then the flags given (None: not given), checked."""
    values: dict[str, Any] = from_file(path) if path is not None else {}
    values.update({k: v for k, v in flags.items() if v is not None})
    return check(AgentConfig(**values))


def check(cfg: AgentConfig) -> AgentConfig:
    if cfg.mode not in MODES:
        raise UsageError(f"mode {cfg.mode!r}: expected one of {', '.join(MODES)}")
    if cfg.log_format not in LOG_FORMATS:
        raise UsageError(f"log format {cfg.log_format!r}: expected one of {', '.join(LOG_FORMATS)}")
    for name, v in (("interval", cfg.interval_s), ("doctor interval", cfg.doctor_interval_s)):
        if not v > 0:
            raise UsageError(f"{name} {v}: expected more than 0 seconds")
    if cfg.listen:
        listen_address(cfg.listen)
    if not cfg.listen and not cfg.textfile:
        raise UsageError(
            "the agent would export nowhere: give --listen ADDR:PORT or --textfile FILE"
        )
    return cfg


def listen_address(text: str) -> tuple[str, int]:
    """`127.0.0.1:9477`, `[::1]:9477`, `:9477` (every address) -> (address, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {text}: expected ADDRESS:PORT such as {DEFAULT_LISTEN}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)
