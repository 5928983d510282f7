"""PEP 440 version ordering, enough to place a reported vllm_ascend version among releases.

A version is release numbers, an optional pre-release (a, b, rc), post and dev parts and a local
label (`0.25.2.dev3+gabc1234`). `parse` returns a key that sorts as PEP 440 orders versions (the
local label left out: it only names a build of the public version before it), or None for text
that is not a version. Written here because start-up cannot pay for `packaging`, which no core
dependency brings.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

_PATTERN = r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>a|alpha|b|beta|c|rc|pre|preview)[-_.]?(?P<pre_n>\d+)?)?
    (?P<post>(?:-(?P<post_n1>\d+))|(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post_n2>\d+)?))?
    (?P<dev>[-_.]?dev[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$"""
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")
MAX_DIGITS = 64


class Parsed(NamedTuple):
    key: tuple[Any, ...]  # sorts in PEP 440 order
    public: str  # normalised public version (no local label)
    local: str | None  # the local label, lower case
    is_dev: bool
    is_pre: bool


@functools.cache
def _compiled() -> re.Pattern[str]:
    # on first use: start-up stays light. ASCII: PEP 440's digits are 0-9 (`\d` would take
    # Arabic-Indic or full-width ones, which int() then reads as a real release)
    return re.compile(_PATTERN, re.VERBOSE | re.IGNORECASE | re.ASCII)


def parse(text: str) -> Parsed | None:
    m = _compiled().match(text)
    if m is None:
        return None
    if any(len(n) > MAX_DIGITS for n in re.findall(r"[0-9]+", text)):
        return None  # no release is numbered in thousands of digits (int() refuses past 4,300)
    release = tuple(int(p) for p in m["release"].split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0)) if m["pre_l"] else None
    post_s = m["post_n1"] or m["post_n2"]
    post = int(post_s) if post_s is not None else (0 if m["post"] else None)
    dev = int(m["dev_n"] or 0) if m["dev"] else None
    # PEP 440: X.devN < XaN < XbN < XrcN < X < X.postN; a dev release precedes its base
    if pre is None and post is None and dev is not None:
        pre_key: tuple[float, int] = (-_INF, 0)
    elif pre is None:
        pre_key = (_INF, 0)
    else:
        pre_key = (pre[0], pre[1])
    post_key = (-_INF,) if post is None else (post,)
    dev_key = (_INF,) if dev is None else (dev,)
    key = (int(m["epoch"] or 0), release, pre_key, post_key, dev_key)
    local = m["local"].lower() if m["local"] else None
    return Parsed(key, _public(m, pre, post, dev), local, dev is not None, pre is not None)


def _public(
    m: re.Match[str], pre: tuple[int, int] | None, post: int | None, dev: int | None
) -> str:
    out = (f"{m['epoch']}!" if m["epoch"] else "") + ".".join(
        str(int(p)) for p in m["release"].split(".")
    )
    if pre is not None:
        out += ("a", "b", "rc")[pre[0]] + str(pre[1])
    if post is not None:
        out += f".post{post}"
    if dev is not None:
        out += f".dev{dev}"
    return out
