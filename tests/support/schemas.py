"""Validate `--json` documents against the committed schemas under schemas/.

Every test that parses a command's JSON goes through `loads(name, text)` or `checked(name, doc)`
(name: the file stem under schemas/, `plan`, `plan-compare`, `bind`, ...), so a document that
drifts from its schema fails the test that printed it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def checked(name: str, doc: Any) -> Any:
    """doc, after validating it against schemas/NAME.schema.json (AssertionError: every error)."""
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [
            f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in errors[:20]
        ]
        raise AssertionError(f"{name} document does not match its schema:\n" + "\n".join(lines))
    return doc


def loads(name: str, text: str) -> Any:
    """json.loads(text), validated as a NAME document."""
    return checked(name, json.loads(text))


def plan_kind(doc: Any) -> str:
    """`plan --json` prints a plan, or with --policy compare every policy's."""
    return "plan-compare" if isinstance(doc, dict) and "policies" in doc else "plan"


COMMANDS = (
    "topo", "plan", "doctor", "check-config", "bind", "snapshot", "log", "watch", "explain",
    "fleet",
)  # fmt: skip


def bind_kind(args: tuple[str, ...] | list[str]) -> str:
    """`bind --workers` and `bind --pid P --show` print documents of their own."""
    if "--workers" in args:
        return "bind-workers"
    return "bind-show" if "--show" in args else "bind"


def loads_cli(args: tuple[str, ...] | list[str], text: str) -> Any:
    """json.loads(text) of `ascendtune ARGS --json`, validated as that command's document."""
    command = next(a for a in args if a in COMMANDS)
    doc = json.loads(text)
    if command == "plan":
        return checked(plan_kind(doc), doc)
    return checked(bind_kind(args) if command == "bind" else command, doc)
