"""kernel-check: static analysis and a dynamic harness for JIT-style CUDA kernels."""

__version__ = "0.1.0"
