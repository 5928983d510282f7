"""A package's names handed out on first use: each is imported from its submodule when asked
for, then kept. For packages whose start-up paths need only a few of their modules
(docs/startup.md says when that is allowed). And an optional module (the compiled loops an
install without a C compiler lacks) imported at its first use, or None."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: name -> that name of submodule homes[name]."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def optional_module(name: str, cache: list[Any]) -> Any | None:
    """Module `name` imported at the first call and kept in `cache` (a list of the caller's, so
    a test can put None there); None where it cannot be imported."""
    if not cache:
        try:
            cache.append(importlib.import_module(name))
        except ImportError:
            cache.append(None)
    return cache[0]
