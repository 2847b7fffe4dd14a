"""The evidence patterns of docs/format.md (categories): which log lines point at which category.

Tables of compiled regular expressions only, in the order classify.py consults them. Adding a new
kind of evidence means adding a pattern here and a recorded log under tests/data/logs that shows it.
"""

from __future__ import annotations

import re

_I = re.I | re.M

BUILD_ENV = [
    re.compile(r"fatal error: .+: No such file or directory", _I),
    re.compile(r"catastrophic error: cannot open source file", _I),
    re.compile(r"cannot find -l\S+", _I),
    re.compile(r"error while loading shared libraries", _I),
    re.compile(r"(nvcc|g\+\+|gcc|make|ninja|cmake): (command )?not found", _I),
    re.compile(r"Unsupported gpu architecture", _I),
    re.compile(r"ModuleNotFoundError: No module named", _I),
    re.compile(r"No CUDA (GPUs are available|runtime is found)", _I),
    re.compile(r"CUDA_HOME environment variable is not set", _I),
    re.compile(r"Ninja is required to load C\+\+ extensions", _I),
]
INTEGRATION = [
    re.compile(r"undefined reference to", _I),
    re.compile(r"nvlink error\s*:\s*Undefined reference", _I),
    re.compile(r"multiple definition of", _I),
    re.compile(r"linkage specification is incompatible with previous", _I),
    re.compile(r"error.*\(declared at line \d+ of \"?(?![^\"\n]*solution)[^\"\n]+\"?\)", _I),
    re.compile(r"^(?!\S*solution)\S+:\d+:\d+: note: previous declaration of", _I),
    re.compile(r"undefined symbol: ", _I),
    re.compile(r"(has no attribute|cannot import name) '?(ModelNew|Model|get_inputs|get_init_inputs)'?", _I),
    re.compile(r"NameError: name '(ModelNew|get_inputs|get_init_inputs)' is not defined", _I),
]
BUILD_ERROR = re.compile(
    r"(\berror\b\s*:|\berror\s+[A-Z]?\d+\s*:|catastrophic error|fatal error|\bError building extension\b|"
    r"^make(\[\d+\])?: \*\*\*|collect2: error|^Traceback \(most recent call last\))",
    re.M,
)
#: Evidence that the test command built something itself (JIT extension, make) and that build failed.
RUN_BUILD = [
    re.compile(r"Error building extension", re.I),
    re.compile(r"\bcompiled=False\b"),
    re.compile(r"Failed to compile custom CUDA kernel", re.I),
    re.compile(r"^\S+\.(cu|cuh|cpp|cc|h|hpp)\(\d+\): (error|catastrophic error)", re.M),
    re.compile(r"^\S+\.(cu|cuh|cpp|cc|h|hpp):\d+(:\d+)?: (fatal )?error:", re.M),
    re.compile(r"ninja: build stopped", re.I),
    re.compile(r"static check(er)? (failed|rejected)", re.I),
    # a Python harness that cannot find the candidate's class or function, or load its extension
    re.compile(
        r"(has no attribute|cannot import name) '?(ModelNew|Model|get_inputs|get_init_inputs)'?", re.I
    ),
    re.compile(r"NameError: name '(ModelNew|get_inputs|get_init_inputs)' is not defined", re.I),
    re.compile(r"ImportError: .*undefined symbol: ", re.I),
]
#: A GPU that is gone or broken (the driver's words): on a machine whose GPU was seen when the session
#: started, a run that says so is the GPU's failure, not the candidate's (judge/gpu_fault.py); read from the
#: logs alone (``beavertui classify``) it is the machine's lack, ``environment_dependency``.
GPU_LOST = [
    re.compile(r"no CUDA-capable device is detected|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE", _I),
    re.compile(r"CUDA driver version is insufficient|cudaErrorInsufficientDriver", _I),
    re.compile(r"No CUDA GPUs are available|Found no NVIDIA driver", _I),
    re.compile(r"GPU has fallen off the bus", _I),
    re.compile(r"uncorrectable ECC error", _I),
    re.compile(
        r"CUDA-capable device(s|\(s\))? (is/are|are|is) busy or unavailable|cudaErrorDevicesUnavailable", _I
    ),
]
#: Sticky CUDA errors: the process's context is unusable afterwards, and the cause is the candidate's bug or
#: a failing GPU (judge/gpu_fault.py runs a known-good kernel on the GPU to tell which).
STICKY = [
    re.compile(r"an illegal memory access was encountered", _I),
    re.compile(r"unspecified launch failure", _I),
    re.compile(r"misaligned address", _I),
    re.compile(r"an illegal instruction was encountered", _I),
    re.compile(r"hardware stack error", _I),
    re.compile(r"the launch timed out and was terminated", _I),
    re.compile(r"initialization error", _I),
    re.compile(r"unknown error", _I),
]
RUN_ENV = [
    re.compile(r"no kernel image is available for execution", _I),
    re.compile(r"cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU", _I),
    *GPU_LOST,
    re.compile(r"unsupported toolchain|cudaErrorUnsupportedPtxVersion", _I),
    re.compile(r"ModuleNotFoundError: No module named", _I),
    re.compile(r"error while loading shared libraries", _I),
    re.compile(r"(python3?|nvcc|make|compute-sanitizer): (command )?not found", _I),
]
OOM = [
    re.compile(r"out of memory", _I),
    re.compile(r"cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|OutOfMemoryError", _I),
]


def out_of_memory(text: str) -> bool:
    """Whether ``text`` says the GPU ran out of memory."""
    return any(r.search(text) for r in OOM)


IMA = [
    re.compile(r"an illegal memory access was encountered", _I),
    re.compile(r"cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS", _I),
    re.compile(r"Invalid __(global|shared|local)__ (read|write|atomic)", _I),
    re.compile(r"^=+ .*out of bounds|(Address|Access to) 0x[0-9a-f]+ is out of bounds", _I),
    re.compile(r"misaligned address|cudaErrorMisalignedAddress|is misaligned", _I),
    re.compile(r"cudaErrorInvalidAddressSpace|operation not supported on global/shared address space", _I),
    re.compile(r"unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED", _I),
    re.compile(r"Segmentation fault|SIGSEGV", _I),
]
FUNCTIONAL = re.compile(
    r"(Assertion .* failed|AssertionError|device-side assert|assert(ion)? failed|mismatch|MISMATCH|\bFAIL(ED)?\b|"
    r"incorrect|not correct|wrong|does not match|max(imum)?[ _](abs[ _])?(diff|err)|correctness=False|"
    r"Floating point exception|Error|error|exception)",
    re.M,
)
SIGNAL_NAMES = {
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    11: "SIGSEGV",
    15: "SIGTERM",
}
