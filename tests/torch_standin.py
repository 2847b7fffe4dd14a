"""A stand-in ``torch`` for running the named-baselines driver (beavertui/engine/timing/baselines_driver.py)
as the real script, in its own process, on a machine without a GPU.

Its CUDA events read a simulated clock that each call advances by a fixed cost per variant: an eager call
2 ms, a ``torch.compile`` call 1 ms (``reduce-overhead``: 0.8 ms), a CUDA Graph replay 1.5 ms, a vendor model
1.2 ms. ``STANDIN_IMPORT_S`` seconds pass before its import ends; ``STANDIN_COMPILE_FAILS=1`` makes ``torch.compile`` refuse every model; ``STANDIN_OOM_ONCE=PATH`` makes the
first eager call of the first process that finds no file at PATH run out of memory (and creates it); ``STANDIN_CALLS`` names a file
that each call appends its variant to (the order of the trials). Nothing here measures anything real: it
checks the driver's control flow (which variants, their order, their failures, the go handshake), not
timing. ``write(folder)`` puts it at ``folder/torch/__init__.py``; ``block(folder)`` puts a ``torch`` there
that fails to import, as where torch is not installed.
"""

from __future__ import annotations

from pathlib import Path

STANDIN = """
import os
import time

time.sleep(float(os.environ.get("STANDIN_IMPORT_S", "0")))

__version__ = "stand-in"
int64 = "int64"
float32 = "float32"
_clock = [0.0]


def _log(name):
    path = os.environ.get("STANDIN_CALLS")
    if path:
        with open(path, "a") as fh:
            fh.write(name + "\\n")


def _out_of_memory_once(variant):
    # STANDIN_OOM_ONCE=PATH: the first eager call of the first process to find no PATH runs out of memory
    path = os.environ.get("STANDIN_OOM_ONCE")
    if path and variant == "eager" and not os.path.exists(path):
        open(path, "w").close()
        raise RuntimeError("stand-in: CUDA out of memory. Tried to allocate 4.06 GiB")


class Tensor:
    shape = (4,)
    is_sparse = False

    def __init__(self, value=0.0):
        self.value = value

    def cuda(self):
        return self

    def clone(self):
        return Tensor(self.value)

    def double(self):
        return self

    def __sub__(self, other):
        return Tensor(self.value - other.value)

    def abs(self):
        return Tensor(abs(self.value))

    def max(self):
        return self

    def item(self):
        return self.value

    def numel(self):
        return 4

    def zero_(self):
        return self


def manual_seed(seed):
    pass


def empty(n, dtype=None, device=None):
    return Tensor()


def ones(n):
    return Tensor(1.0)


class device:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class nn:
    class Module:
        cost = 2.0
        variant = "eager"

        def cuda(self):
            return self

        def eval(self):
            return self

        def __call__(self, *args):
            _out_of_memory_once(self.variant)
            _clock[0] += self.cost
            _log(self.variant)
            return self.forward(*args)


class _Compiled(nn.Module):
    def __init__(self, inner, mode):
        self.inner = inner
        self.cost = 0.8 if mode == "reduce-overhead" else 1.0
        self.variant = "compile_ro" if mode == "reduce-overhead" else "compile"

    def forward(self, *args):
        return self.inner.forward(*args)


def compile(model, mode=None):
    if os.environ.get("STANDIN_COMPILE_FAILS") == "1":
        raise RuntimeError("stand-in: torch.compile refuses this model")
    return _Compiled(model, mode)


class compiler:
    @staticmethod
    def cudagraph_mark_step_begin():
        pass


class _Props:
    L2_cache_size = 50 << 20


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    def get_device_properties(i):
        return _Props()

    @staticmethod
    def get_device_name(i):
        return "stand-in GPU"

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = _clock[0]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t

    class Stream:
        def wait_stream(self, other):
            pass

    @staticmethod
    def current_stream():
        return cuda.Stream()

    class stream:
        def __init__(self, s):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class CUDAGraph:
        def replay(self):
            _clock[0] += 1.5
            _log("graph")

    class graph:
        def __init__(self, g):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
"""

PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x


class VendorModel(torch.nn.Module):
    cost = 1.2
    variant = "vendor"

    def forward(self, x):
        return x


def get_inputs(n, dtype):
    return [torch.ones(n)]


def get_init_inputs(**_):
    return []
"""


def write(folder: Path) -> Path:
    """The stand-in at ``folder/torch/__init__.py``; returns ``folder`` (for PYTHONPATH)."""
    (folder / "torch").mkdir(parents=True, exist_ok=True)
    (folder / "torch" / "__init__.py").write_text(STANDIN)
    return folder


def block(folder: Path) -> Path:
    """A ``torch`` at ``folder/torch`` that fails to import; returns ``folder`` (for PYTHONPATH)."""
    (folder / "torch").mkdir(parents=True, exist_ok=True)
    (folder / "torch" / "__init__.py").write_text('raise ImportError("No module named torch")\n')
    return folder
