"""The one compiled part: `log`'s scan loops (ascendtune/core/vllm_log/_scanc.c). Optional: where
no C compiler is found the install still succeeds and `log` runs the same scan in Python."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ascendtune.core.vllm_log._scanc",
            ["ascendtune/core/vllm_log/_scanc.c"],
            optional=True,
        )
    ]
)
