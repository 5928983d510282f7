"""ascendtune: see, predict, apply and verify CPU binding for NPU/GPU inference hosts."""

__version__ = "0.1.0"
