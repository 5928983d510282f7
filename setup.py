"""The compiled parts: `log`'s scan loops (ascendtune/core/vllm_log/_scanc.c), bind's per-thread
mask loops (ascendtune/host/affinity/_affinityc.c), a sysroot folder's common reads
(ascendtune/host/roots/_walkc.c) and an archive's plain members (ascendtune/host/roots/_tarc.c).
Optional: where no C compiler is found the install still succeeds and `log`, `bind`, the sysroot
reader and the archive reader run the same loops in Python."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ascendtune.core.vllm_log._scanc",
            ["ascendtune/core/vllm_log/_scanc.c"],
            optional=True,
        ),
        Extension(
            "ascendtune.host.affinity._affinityc",
            ["ascendtune/host/affinity/_affinityc.c"],
            optional=True,
        ),
        Extension(
            "ascendtune.host.roots._walkc",
            ["ascendtune/host/roots/_walkc.c"],
            optional=True,
        ),
        Extension(
            "ascendtune.host.roots._tarc",
            ["ascendtune/host/roots/_tarc.c"],
            optional=True,
        ),
    ]
)
