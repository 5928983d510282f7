"""Every generated file of the repository, made by one command.

    python -m scripts.regen           # rewrite each generated file that is stale
    python -m scripts.regen --check   # regenerate into a temporary folder; list each stale file
                                      # and exit 1, exit 0 when every file is current

What is generated, in this order (the goldens and the README's sample outputs are rendered from
the demo archives made first, so one run settles everything):

    ascendtune/demos/*.tar.gz    the demo hosts (scripts/make_demos.py)
    ascendtune/demos/*.json      their indexes, what `--demo` loads (scripts/make_demos.py)
    completions/ascendtune.*     bash, zsh and fish completion (scripts/gen_completions.py)
    schemas/*.schema.json        JSON Schemas of the documents (scripts/gen_schemas.py)
    tests/golden/*.txt           rendered demo output at 80 and 200 columns (scripts/gen_golden.py)
    tests/golden/json/*.json     the demos' --json documents (scripts/gen_golden_json.py)
    docs/config-reference.md     `ascendtune explain --markdown`
    docs/metrics.md              the agent's metrics table (ascendtune/app/agent/metrics.py)
    docs/json.md                 the key list of every JSON document (scripts/gen_schemas.py)
    README.md                    its version table (scripts/gen_versions.py) and its two sample
                                 outputs

A file the generators no longer make (a golden of a removed demo, a schema of a removed
document) is stale too: it is removed. The single scripts still run on their own.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python scripts/regen.py` too
    sys.path.insert(0, str(REPO))

from scripts import (  # noqa: E402
    gen_completions,
    gen_golden,
    gen_golden_json,
    gen_schemas,
    gen_versions,
    make_demos,
)

Files = dict[str, bytes]  # path relative to the repository -> content


class Part(NamedTuple):
    """One kind of generated file: the files it owns (a glob under a folder) and how to make
    them."""

    name: str
    folder: str
    pattern: str
    make: Callable[[Path], Files]  # given the temporary tree already holding earlier parts
    same: Callable[[bytes, bytes], bool] = bytes.__eq__


def _demos(_tmp: Path) -> Files:
    return {
        f"ascendtune/demos/{name}.tar.gz": make_demos.build(name) for name in make_demos.BUILDERS
    }


def _demo_indexes(tmp: Path) -> Files:
    # from the archives the part above just made
    return {
        f"ascendtune/demos/{name}.json": make_demos.index(
            (tmp / "ascendtune" / "demos" / f"{name}.tar.gz").read_bytes()
        )
        for name in make_demos.BUILDERS
    }


def _same_archive(committed: bytes, fresh: bytes) -> bool:
    # the tar stream, not the gzip bytes: another zlib may compress the same stream differently
    try:
        return committed == fresh or gzip.decompress(committed) == gzip.decompress(fresh)
    except (OSError, EOFError):
        return False


def _completions(_tmp: Path) -> Files:
    return {
        f"completions/ascendtune.{shell}": gen_completions.script(shell).encode()
        for shell in gen_completions.SHELLS
    }


def _schemas(_tmp: Path) -> Files:
    return {f"schemas/{name}": text.encode() for name, text in gen_schemas.schemas().items()}


def _golden(_tmp: Path) -> Files:
    return {
        f"tests/golden/{name}": gen_golden.render(args, width).encode()
        for name, args, width in gen_golden.cases()
    }


def _golden_json(_tmp: Path) -> Files:
    return {
        f"tests/golden/json/{name}": gen_golden_json.render(args).encode()
        for name, args in gen_golden_json.cases()
    }


def _invoke(args: list[str], width: int) -> str:
    from typer.testing import CliRunner

    from ascendtune.cli.app import app

    res = CliRunner().invoke(app, args, env={"COLUMNS": str(width), "NO_COLOR": "1"})
    if res.exit_code not in (0, 1):  # doctor exits 1 when a check fails
        raise RuntimeError(f"ascendtune {shlex.join(args)} exited {res.exit_code}: {res.output}")
    return res.stdout


def _config_reference(_tmp: Path) -> Files:
    return {"docs/config-reference.md": _invoke(["explain", "--markdown"], 200).encode()}


METRICS_HEAD = """# The metrics of `ascendtune agent`

Generated from `ascendtune/app/agent/metrics.py` by `python -m scripts.regen`; do not edit.
Served on `/metrics` (default `127.0.0.1:9477`) or written with `--textfile` for
node_exporter's textfile collector. An empty label (`rank` of a worker the plan has no rank
for) is left out of the series. Alert rules: `deploy/prometheus/ascendtune-rules.yml`; a
Grafana dashboard beside vLLM's TPOT and TTFT: `deploy/grafana/ascendtune-dashboard.json`.

"""


def _metrics(_tmp: Path) -> Files:
    from ascendtune.app.agent.metrics import markdown_table

    return {"docs/metrics.md": (METRICS_HEAD + markdown_table()).encode()}


# a README sample: the command in an sh block, its output (at 80 columns) in the text block after
SAMPLE = re.compile(r"(```sh\n(ascendtune [^\n]+)\n```\n\n```text\n)(.+?)(```)", flags=re.S)


def readme_samples(text: str) -> str:
    """The README with each sample output rendered again, trailing blanks off each line (as
    tests/e2e/test_readme.py compares them)."""

    def fresh(m: re.Match[str]) -> str:
        out = _invoke(shlex.split(m.group(2))[1:], 80)
        return m.group(1) + "".join(line.rstrip() + "\n" for line in out.splitlines()) + m.group(4)

    return SAMPLE.sub(fresh, text)


def _json_keys(_tmp: Path) -> Files:
    return {
        "docs/json.md": gen_schemas.keys_with_section(gen_schemas.KEY_LIST.read_text()).encode()
    }


def _readme(_tmp: Path) -> Files:
    text = (REPO / "README.md").read_text()
    return {"README.md": readme_samples(gen_versions.readme_with_section(text)).encode()}


PARTS = (
    Part("demo hosts", "ascendtune/demos", "*.tar.gz", _demos, _same_archive),
    Part("demo indexes", "ascendtune/demos", "*.json", _demo_indexes),
    Part("completions", "completions", "ascendtune.*", _completions),
    Part("schemas", "schemas", "*.schema.json", _schemas),
    Part("goldens", "tests/golden", "*.txt", _golden),
    Part("JSON goldens", "tests/golden/json", "*.json", _golden_json),
    Part("config reference", "docs", "config-reference.md", _config_reference),
    Part("agent metrics", "docs", "metrics.md", _metrics),
    Part("JSON keys", "docs", "json.md", _json_keys),
    Part("README", ".", "README.md", _readme),
)


@contextmanager
def demos_from(folder: Path) -> Iterator[None]:
    """`--demo NAME` reads NAME.json from `folder` (the demos just made) instead of the
    package's own, so a --check run renders the goldens from what the demo parts would write."""
    from ascendtune.host import demos

    saved = demos.DEMO_DIR
    demos.DEMO_DIR = str(folder)
    try:
        yield
    finally:
        demos.DEMO_DIR = saved


def regenerate(
    root: Path, *, write: bool, only: tuple[str, ...] = (), log: Callable[[str], None] = print
) -> list[str]:
    """Make every part into a temporary tree and compare it with `root`; the stale paths
    (relative to root), each with why. With `write`, stale files in root are rewritten and
    files no part makes any more are removed."""
    stale: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ascendtune-regen-") as name:
        tmp = Path(name)
        for part in PARTS:
            if only and part.name not in only:
                continue
            started = time.perf_counter()
            made = tmp / "ascendtune" / "demos"
            with demos_from(made) if made.is_dir() else nullcontext():
                files = part.make(tmp)
            for rel, data in files.items():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_bytes(data)
                path = root / rel
                if not path.is_file():
                    stale.append(f"{rel} (missing)")
                elif not part.same(path.read_bytes(), data):
                    stale.append(f"{rel} (differs)")
                else:
                    continue
                if write:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
            for path in sorted((root / part.folder).glob(part.pattern)):
                rel = path.relative_to(root).as_posix()
                if rel not in files:
                    stale.append(f"{rel} (no longer generated)")
                    if write:
                        path.unlink()
            log(f"{part.name}: {len(files)} files, {time.perf_counter() - started:.1f} s")
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m scripts.regen",
        description="Regenerate every generated file (demos, completions, schemas, goldens, "
        "JSON goldens, the config reference, the README's generated parts).",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing: list each stale file and exit 1 if there is one",
    )
    ap.add_argument("--quiet", "-q", action="store_true", help="print only stale files")
    args = ap.parse_args(argv)
    log: Callable[[str], None] = (lambda _line: None) if args.quiet else print
    stale = regenerate(REPO, write=not args.check, log=log)
    if args.check:
        for s in stale:
            print(f"stale: {s}", file=sys.stderr)
        if stale:
            print(
                f"{len(stale)} generated files are stale: run `python -m scripts.regen` "
                "and review the diff",
                file=sys.stderr,
            )
            return 1
        log("every generated file is current")
        return 0
    for s in stale:
        print(f"wrote {s}" if "no longer" not in s else f"removed {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
