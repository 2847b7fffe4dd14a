"""Architecture selection (fixture version)."""
import os

_ARCH = {"Volta": "7.0", "Turing": "7.5", "Ampere": "8.0", "Ada": "8.9", "Hopper": "9.0", "Blackwell": "10.0"}


def set_gpu_arch(arch_list):
    unknown = [a for a in arch_list if a not in _ARCH]
    if unknown:
        raise ValueError(f"unknown GPU architecture {unknown}")
    os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(_ARCH[a] for a in arch_list)
