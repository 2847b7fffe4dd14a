"""beavertui: evaluate and watch language models repair broken CUDA kernels."""

__version__ = "0.1.0"
