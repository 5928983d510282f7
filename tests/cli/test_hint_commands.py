"""Every `ascendtune ...` command the tool can print (in a hint, a detail, a note, a fix, help)
names a real command with options it has and values they take (issue 26 item 11: a hint named
`--with-vllm-omni`, which check-config lacked, and planner hints said `--policy` to `explain
binding`, which has none).

The commands come from the package's own string literals (every message, hint and fix is one,
an f-string's fields read as a placeholder) and from the fixes doctor prints for every demo.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ascendtune
from ascendtune.app.doctor import SECTION_NAMES
from ascendtune.app.emit import EMITS
from ascendtune.app.hosts import demo_names
from ascendtune.cli.app import app
from ascendtune.core.policies import POLICY_NAMES
from tests.support.cli import Cli

PKG = Path(ascendtune.__file__).parent
QUOTED = re.compile(r"`(ascendtune [^`]+)`")
FIELD = "X"  # an f-string's {field}: a placeholder, as R or PID are
CHOICES = {
    "--policy": {*POLICY_NAMES, "auto", "compare"},
    "--emit": set(EMITS),
    "--section": set(SECTION_NAMES),
}


def _texts(node: ast.AST) -> Iterator[str]:
    parts = {id(v) for n in ast.walk(node) if isinstance(n, ast.JoinedStr) for v in n.values}
    for n in ast.walk(node):
        if isinstance(n, ast.JoinedStr):
            yield "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else FIELD
                for v in n.values
            )
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in parts:
            yield n.value


def printed_commands() -> list[tuple[str, str]]:
    """(file, command) of each `ascendtune ...` the package's strings quote."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        for text in _texts(ast.parse(path.read_text())):
            for m in QUOTED.finditer(text):
                out.append((str(path.relative_to(PKG)), m.group(1)))
            # a fix: a whole command (not a piece a caller completes, ending in an option)
            # (prose that merely starts with the name, quoting commands in backticks, is not one)
            if (
                text.startswith("ascendtune ")
                and "`" not in text
                and " --" in text
                and text.split()[-1][:2] != "--"
            ):
                out.append((str(path.relative_to(PKG)), text))
    return out


def _placeholder(word: str) -> bool:
    return word in (FIELD, "...") or word.isupper() or any(c in word for c in ("...", "|", "<"))


def check(command: str) -> str | None:
    """Why command is not one ascendtune takes, or None."""
    try:
        words = shlex.split(command.split("  #", 1)[0], comments=True)
    except ValueError as e:
        return f"does not split: {e}"
    import click

    group: Any = _root()
    ctx = click.Context(group)
    words = words[1:]
    cmd = group
    while words and hasattr(cmd, "list_commands") and not words[0].startswith("-"):
        if _placeholder(words[0]):  # `ascendtune fleet VIEW`, `ascendtune CMD --help`
            return None
        sub = cmd.get_command(ctx, words[0])
        if sub is None:
            return f"no command {words[0]!r}"
        cmd, words = sub, words[1:]
    opts: dict[str, Any] = {}
    for p in cmd.params:
        for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())):
            opts[o] = p
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            break
        if not w.startswith("-") or w == "-":
            continue
        name, eq, value = w.partition("=")
        if name not in opts and name != "--help":
            return f"{cmd.name} has no option {name}"
        p = opts.get(name)
        if p is None or getattr(p, "is_flag", False) or getattr(p, "count", False):
            continue
        if not eq:
            if i >= len(words) and name == "--demo":
                continue  # `--demo` alone picks the default demo
            if i >= len(words):
                return f"{name} lacks its value"
            value, i = words[i], i + 1
        choice = getattr(p.type, "choices", None)
        allowed = set(choice) if choice else CHOICES.get(name)
        if allowed and not _placeholder(value) and value not in allowed:
            return f"{name} {value}: not one of {sorted(allowed)}"
    return None


def _root() -> Any:
    import typer.main

    return typer.main.get_command(app)


def test_the_checker_catches_what_the_issue_found() -> None:
    assert check("ascendtune check-config --with-vllm-omni '{}'") is None
    assert "no option --policy" in (check("ascendtune explain binding --policy x") or "")
    assert "no option --frobnicate" in (check("ascendtune plan --frobnicate") or "")
    assert "not one of" in (check("ascendtune plan --policy best") or "")
    assert "no command" in (check("ascendtune plans") or "")
    assert check("ascendtune bind --rank R --pid PID  # for each worker") is None


@pytest.mark.parametrize(("where", "command"), printed_commands())
def test_every_quoted_command_exists(where: str, command: str) -> None:
    assert check(command) is None, (where, command, check(command))


def test_every_doctor_fix_and_emit_of_every_demo_exists(cli: Cli) -> None:
    seen = 0
    for demo, _ in demo_names():
        doc = json.loads(cli("doctor", "--demo", demo, "--json").stdout)
        texts = [t for c in doc["checks"] for t in (c["fix"], c["detail"]) if t]
        if demo != "dgx-h100":
            emit = cli("plan", "--demo", demo, "--emit", "vllm", "--cmdline", "vllm serve m")
            texts += emit.stdout.splitlines()
        for text in texts:
            for part in re.split(r" && |`", text.lstrip("# ")):
                if part.startswith("ascendtune "):
                    assert check(part) is None, (demo, part, check(part))
                    seen += 1
    assert seen >= 5


def test_explain_binding_hints_name_plan_for_a_policy(cli: Cli) -> None:
    # vLLM-Ascend's binding on a GPU host: the planner's hint names a policy, which only
    # `plan` takes
    res = cli("explain", "binding", "--demo", "dgx-h100")
    assert res.exit_code == 5 and "--policy" in res.stderr
    hint = res.stderr[res.stderr.index("(use ") :]
    assert check(hint[5:].split(" or ")[0]) is None, hint
    assert "use ascendtune plan --policy numa-local" in res.stderr
