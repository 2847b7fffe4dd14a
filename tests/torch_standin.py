"""A stand-in ``torch`` for running the named-baselines driver (beavertui/engine/timing/baselines_driver.py)
as the real script, in its own process, on a machine without a GPU.

Its CUDA events read a simulated clock that each call advances by a fixed cost per variant: an eager call
2 ms, a ``torch.compile`` call 1 ms (``reduce-overhead``: 0.8 ms), a CUDA Graph replay 1.5 ms (or the
``replay_cost`` of the model last called inside its capture, where it has one; every tensor's dtype is
float32), a vendor model
1.2 ms. ``STANDIN_IMPORT_S`` seconds pass before its import ends; ``STANDIN_COMPILE_FAILS=1`` makes ``torch.compile`` refuse every model; ``STANDIN_OOM_ONCE=PATH`` makes the
first eager call of the first process that finds no file at PATH run out of memory (and creates it); ``STANDIN_CALLS`` names a file
that each call appends its variant to (the order of the trials).

GPU memory: a tensor made on the GPU (under ``torch.device("cuda")``, by ``.cuda()``, ``empty(device="cuda")``,
``clone``, ``double``, arithmetic on GPU tensors) holds its bytes (4 a float32 element, 8 an int64 or float64
one) until it is garbage; ``reshape`` and slices are views that hold nothing. Each model holds its output's
bytes from its first call on (the allocator's cached blocks, a CUDA graph's pool) until it is garbage, except a
``torch.compile(mode="reduce-overhead")`` model, whose bytes stay in its CUDA graph trees' pool until
``torch._dynamo.reset()``. With ``STANDIN_GPU_BYTES=N`` and ``STANDIN_GPU_LEDGER=DIR`` the processes share a
GPU of N bytes: each writes what it holds to DIR/<pid>, with when it started (a pid reused by another process
is not counted), and an allocation that would take the live processes' sum above N raises "CUDA out of
memory", as torch's allocator does. Under
``torch.device("meta")`` nothing is held and no model call has a side effect (the drivers size their inputs
there). ``torch.cuda.max_memory_reserved()`` is the most this process held; each ``torch._dynamo.reset()`` is
logged as ``dynamo_reset`` to ``STANDIN_CALLS``. Nothing here measures anything real: it
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
_device = ["cpu"]  # torch's default device (the innermost torch.device context)
_held = [0]  # GPU bytes this process holds
_peak = [0]
_called = [None]  # the model called last (what a CUDA graph captures)


_gone = [False]  # this process's ledger entry removed (it is ending): not written again


def _stat(pid):
    # (state, start time in clock ticks) of a process: a pid reused by another process starts at another time
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return fields[0], fields[19]


def _alive(pid, started):
    try:
        state, start = _stat(pid)
    except (OSError, IndexError):
        return False
    return state != "Z" and start == started


def _forget():
    folder = os.environ.get("STANDIN_GPU_LEDGER")
    if folder:
        _gone[0] = True
        try:
            os.remove(os.path.join(folder, str(os.getpid())))
        except OSError:
            pass


def _ledger(nbytes):
    # hold nbytes more (less, where negative) of the shared GPU, or run out of memory where it has no room
    import atexit
    import fcntl

    total = int(os.environ["STANDIN_GPU_BYTES"])
    folder = os.environ["STANDIN_GPU_LEDGER"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if nbytes > 0:
            others = 0
            for name in os.listdir(folder):
                if name.isdigit() and int(name) != os.getpid():
                    with open(os.path.join(folder, name)) as fh:
                        held, started = (fh.read().split() + ["0", ""])[:2]
                    if _alive(int(name), started):
                        others += int(held)
            if others + _held[0] + nbytes > total:
                raise RuntimeError(
                    f"stand-in: CUDA out of memory. Tried to allocate {nbytes / 2**30:.2f} GiB. GPU 0 has a "
                    f"total capacity of {total / 2**30:.2f} GiB, of which other processes hold "
                    f"{others / 2**30:.2f} GiB and this one {_held[0] / 2**30:.2f} GiB"
                )
            if not _registered[0]:
                atexit.register(_forget)
                _registered[0] = True
        _held[0] += nbytes
        if not _gone[0]:
            with open(os.path.join(folder, str(os.getpid())), "w") as fh:
                fh.write(f"{_held[0]} {_stat(os.getpid())[1]}")


_registered = [False]


def _alloc(nbytes):
    # hold nbytes of the GPU, or run out of memory where the shared GPU has no room for them
    if os.environ.get("STANDIN_GPU_BYTES") and os.environ.get("STANDIN_GPU_LEDGER"):
        _ledger(nbytes)
    else:
        _held[0] += nbytes
    _peak[0] = max(_peak[0], _held[0])


def _free(nbytes):
    # give nbytes of the GPU back (a tensor or model that became garbage)
    if os.environ.get("STANDIN_GPU_BYTES") and os.environ.get("STANDIN_GPU_LEDGER"):
        _ledger(-nbytes)
    else:
        _held[0] -= nbytes


_ro_pool = [0]  # bytes held by reduce-overhead's CUDA graph trees, until torch._dynamo.reset()


def _log(name):
    path = os.environ.get("STANDIN_CALLS")
    if path:
        with open(path, "a") as fh:
            fh.write(name + "\\n")


def _out_of_memory_once(variant):
    # STANDIN_OOM_ONCE=PATH: the first eager call of the process that creates PATH (one, however many race)
    # runs out of memory
    path = os.environ.get("STANDIN_OOM_ONCE")
    if path and variant == "eager" and not os.path.exists(path):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        raise RuntimeError("stand-in: CUDA out of memory. Tried to allocate 4.06 GiB")


class Tensor:
    shape = (4,)
    is_sparse = False
    dtype = float32

    def __init__(self, value=0.0, n=4, itemsize=4, device="cpu"):
        self.value = value
        self.n = n
        self.itemsize = itemsize
        self.device = device
        self._owns = 0
        if device == "cuda":
            _alloc(n * itemsize)
            self._owns = n * itemsize

    def __del__(self):
        try:
            if self._owns:
                _free(self._owns)
        except Exception:  # the interpreter ending
            pass

    def _view(self, n):
        v = Tensor.__new__(Tensor)
        v.value, v.n, v.itemsize, v.device, v._owns, v._base = self.value, n, self.itemsize, self.device, 0, self
        return v

    def reshape(self, *shape):
        return self._view(self.n)

    def __getitem__(self, key):
        return self._view(len(range(*key.indices(self.n))))

    def cuda(self):
        if self.device == "cuda":
            return self
        return Tensor(self.value, self.n, self.itemsize, "cuda")

    def clone(self):
        return Tensor(self.value, self.n, self.itemsize, self.device)

    def double(self):
        return Tensor(self.value, self.n, 8, self.device)

    def __sub__(self, other):
        return Tensor(self.value - other.value, self.n, self.itemsize, self.device)

    def abs(self):
        return Tensor(abs(self.value), self.n, self.itemsize, self.device)

    def max(self):
        return Tensor(self.value, 1, self.itemsize, self.device)

    def item(self):
        return self.value

    def numel(self):
        return self.n

    def element_size(self):
        return self.itemsize

    def zero_(self):
        return self


def manual_seed(seed):
    pass


def empty(n, dtype=None, device=None):
    return Tensor(0.0, n, 8 if dtype == int64 else 4, device or _device[0])


def ones(n):
    return Tensor(1.0, n, 4, _device[0])


class device:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.before = _device[0]
        _device[0] = self.name
        return self

    def __exit__(self, *exc):
        _device[0] = self.before
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

        def parameters(self):
            return []

        def buffers(self):
            return []

        def __call__(self, *args):
            _called[0] = self
            if _device[0] == "meta":  # sizing: shapes only
                return self.forward(*args)
            _out_of_memory_once(self.variant)
            out = self.forward(*args)
            if not getattr(self, "_holds", 0):  # its output, held from the first call on
                _alloc(out.n * out.itemsize)
                self._holds = out.n * out.itemsize
                if self.variant == "compile_ro":  # in the CUDA graph trees' pool, not the model
                    _ro_pool[0] += self._holds
                    self._holds = -1
            _clock[0] += self.cost
            _log(self.variant)
            return out

        def __del__(self):
            try:
                if getattr(self, "_holds", 0) > 0:
                    _free(self._holds)
            except Exception:  # the interpreter ending
                pass


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


class _dynamo:
    @staticmethod
    def reset():
        if _ro_pool[0]:
            _free(_ro_pool[0])
            _ro_pool[0] = 0
        _log("dynamo_reset")


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

    @staticmethod
    def max_memory_reserved():
        return _peak[0]

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
        captured = None

        def replay(self):
            _clock[0] += getattr(self.captured, "replay_cost", 1.5)
            _log("graph")

    class graph:
        def __init__(self, g):
            self.g = g

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.g.captured = _called[0]
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
