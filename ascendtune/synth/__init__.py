"""One kit for synthetic hosts: a declarative spec (`spec`), the text of every file and tool
output in the real formats (`text`), a sysroot writer (`render`, `Tree`: a folder, a
{path: bytes} mapping, deterministic tar / tar.gz), the Host a reader should see (`expect`)
and the standard hosts (`standard`). Tests, benchmarks and scripts/make_demos.py build their
hosts here; nothing under ascendtune/core, host, app or cli imports it."""
