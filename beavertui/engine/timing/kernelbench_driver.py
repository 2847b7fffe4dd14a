"""Time a kernelbench candidate against its PyTorch eager reference, in one process (run on the GPU machine).

Usage: ``python kernelbench_driver.py --problem problem.py --solution solution.py [--trials N] [--warmup W]
[--reference-only] [--go-file PATH [--go-timeout S] [--ahead-max-bytes B]]``. Run in the work dir of a candidate that already passed
the task's own eval.

Both models are built from the same seeded initial inputs and called on the same seeded inputs. After W
warm-up calls of each (and one more after the allocator's cache is emptied), N trials are taken; a trial is
one call of each model, in alternating order (even trials reference first, odd trials candidate first).
Before every timed call the GPU is synchronised and the L2 cache flushed by writing a buffer of at least
256 MiB (twice the L2 size when that is larger); the call is timed with CUDA events on the current stream. One line is printed:
``BEAVER_KB_TIMING {json}`` with the method, the per-call samples (ms) of each side, what was done, and
``phases_s``: the host seconds of each phase (``import``: torch imported and the task's problem.py loaded;
``inputs``: the task's seeded get_inputs on the host; models built; ``to_device``: the inputs copied to the
GPU; warm-up, timed trials).
When something fails, the line carries ``error`` and ``side`` (``reference`` or ``candidate``, ``go`` when no
go came) instead.

With ``--go-file``, the driver starts ahead of the GPU being held: it imports torch and loads problem.py (the
task's own, trusted file) and draws the inputs on the host, prints ``BEAVER_KB_READY``, then waits until PATH exists (at most ``--go-timeout``
seconds, else the error line and exit status 1). Nothing touches CUDA before the go, and the candidate's
solution is not loaded before it (its module-level code could run GPU work while another process is timed).
PATH holds JSON: ``{"env": {NAME: VALUE}, "unset": [NAME]}``, applied to the environment before the first
CUDA call (the GPU to use, ``CUDA_VISIBLE_DEVICES``, is known only when it is held). The driver then prints
``BEAVER_KB_GO`` and goes on as without the option; ``phases_s`` adds ``waited_for_go`` and the result
carries ``before_go``: the phases that ran before the go came (``import``, ``inputs``, ``waited_for_go``).
Inputs larger than ``--ahead-max-bytes`` (default 2 GiB) are not kept while the driver waits, so that drivers
waiting for their GPU cannot exhaust the host's memory: their size is read first on torch's ``meta`` device
(``inputs_sized``), and they are not drawn before the go; once it came they are drawn, with the same seed, on
the GPU (get_inputs with CUDA as torch's default device: the same shapes and distributions, made in
milliseconds instead of the host's seconds with the GPU held; ``inputs_gpu``), or on the host where that
fails (``inputs`` after the go). Where the meta device cannot size them they are drawn on the host ahead and,
too large, dropped (``inputs_dropped``). Without ``--go-file`` (the GPU held from the start) inputs above that
size are drawn on the GPU at once, the same way.

This file is a standalone script: it imports only the standard library and torch, never beavertui.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path, where beavertui's timing/profile.py would stand
# for the standard library's `profile` (torch.compile imports cProfile, which imports it): leave it out.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

METHOD = "torch_events_l2flush_interleaved"
TAG = "BEAVER_KB_TIMING"
READY = "BEAVER_KB_READY"
GO = "BEAVER_KB_GO"
#: How often the go file is looked for, seconds.
POLL_S = 0.005
#: The most bytes of inputs a driver started ahead of the GPU hold keeps on the host while it waits (a task's
#: inputs reach 17 GB: several drivers waiting with such inputs would exhaust the host's memory).
AHEAD_MAX_BYTES = 2 << 30


def _emit(doc: dict[str, Any]) -> None:
    print(f"{TAG} {json.dumps(doc, allow_nan=False)}", flush=True)


def load_module(path: Path, name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), mod.__dict__)
    return mod


def _to_cuda(xs: Any, torch: Any) -> list[Any]:
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]


def nbytes(xs: Any, torch: Any) -> int:
    """The bytes of the tensors of ``xs`` (a tensor, or a list or tuple of anything)."""
    if isinstance(xs, torch.Tensor):
        return int(xs.numel() * xs.element_size())
    if isinstance(xs, (list, tuple)):
        return sum(nbytes(x, torch) for x in xs)
    return 0


def meta_bytes(problem: types.ModuleType, torch: Any, **args: Any) -> int | None:
    """The bytes of the task's get_inputs (called with ``args``), drawn on torch's ``meta`` device (shapes and
    dtypes, no memory, no time); None when that fails (a get_inputs that reads a tensor's values). The
    named-baselines driver sizes its inputs with it too."""
    try:
        with torch.device("meta"):
            xs = list(problem.get_inputs(**args))
    except Exception:
        return None
    return nbytes(xs, torch)


def _draw_on_gpu(problem: types.ModuleType, torch: Any, seed: int) -> list[Any] | None:
    """The task's seeded get_inputs with CUDA as torch's default device: tensors of the same shapes, dtypes
    and distributions as on the host, made by the GPU in milliseconds where the host takes seconds (a 6 GiB
    ``torch.rand`` takes the host about 10 s, while the GPU is held). Their values are not the host's (the
    GPU's generator is another), which the timing does not need: both models are called on the same inputs.
    None when that fails (a get_inputs that reads a tensor's values on the host, too little GPU memory):
    the caller draws them on the host then."""
    try:
        torch.manual_seed(seed)
        with torch.device("cuda"):
            return list(problem.get_inputs())
    except Exception:
        torch.cuda.empty_cache()
        return None


def _wait_for_go(path: Path, timeout_s: float) -> None:
    """Wait until ``path`` exists, then apply the environment it names; TimeoutError after ``timeout_s``."""
    print(READY, flush=True)
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no go ({path.name}) within {timeout_s:g} s")
        time.sleep(POLL_S)
    go = json.loads(path.read_text(encoding="utf-8") or "{}")
    for name in go.get("unset", []):
        os.environ.pop(str(name), None)
    os.environ.update({str(k): str(v) for k, v in (go.get("env") or {}).items()})
    print(GO, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", type=Path, required=True)
    ap.add_argument("--solution", type=Path, required=True)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--reference-only", action="store_true")
    ap.add_argument("--go-file", type=Path, default=None)
    ap.add_argument("--go-timeout", type=float, default=600.0)
    ap.add_argument("--ahead-max-bytes", type=int, default=AHEAD_MAX_BYTES)
    args = ap.parse_args(argv)
    side = "reference"
    phases: dict[str, float] = {}
    mark = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(now - mark[0], 3)
        mark[0] = now

    try:
        import torch

        problem = load_module(args.problem, "beaver_kb_problem")
        phase("import")
        # The inputs are sized on the meta device, then those within --ahead-max-bytes are drawn on the host
        # (the task's get_inputs, seeded: the same tensors as when drawn after the models, since the seed is
        # set again right before), so that a driver started ahead of the GPU hold makes them before its go;
        # large ones would take seconds of CPU, and are drawn on the GPU once it is held. A get_inputs that
        # makes its tensors on a GPU fails here when none is visible (ahead of the hold): the driver then
        # ends before it is ready, and the timing starts one with the GPU held.
        side = "inputs"
        host_inputs: list[Any] | None = None
        sized = meta_bytes(problem, torch)
        if sized is not None and sized > args.ahead_max_bytes:
            # too large to keep while waiting: drawn on the GPU once it is held (at once without a go file)
            phase("inputs_sized")
        else:
            torch.manual_seed(args.seed)
            host_inputs = list(problem.get_inputs())
            size = nbytes(host_inputs, torch)
            if args.go_file is not None and size > args.ahead_max_bytes:
                host_inputs = None  # too large to keep while waiting: drawn again once the GPU is held
                phase("inputs_dropped")
            else:
                phase("inputs")
        if args.go_file is not None:
            side = "go"
            _wait_for_go(args.go_file, args.go_timeout)
            phase("waited_for_go")
        ahead = list(phases)  # the phases before the go (none without one)
        if host_inputs is None:
            side = "inputs"
            host_inputs = _draw_on_gpu(problem, torch, args.seed)
            if host_inputs is not None:
                phase("inputs_gpu")
            else:
                torch.manual_seed(args.seed)
                host_inputs = list(problem.get_inputs())
                phase("inputs")
        side = "reference"
        torch.manual_seed(args.seed)
        init = _to_cuda(problem.get_init_inputs(), torch)
        torch.manual_seed(args.seed)
        ref = problem.Model(*init).cuda().eval()
        models = [("reference", ref)]
        if not args.reference_only:
            side = "candidate"
            solution = load_module(args.solution, "beaver_kb_solution")
            torch.manual_seed(args.seed)
            cand = solution.ModelNew(*init).cuda().eval()
            models.append(("candidate", cand))
        phase("models")
        side = "inputs"
        inputs = _to_cuda(host_inputs, torch)
        torch.cuda.synchronize()
        phase("to_device")
        props = torch.cuda.get_device_properties(0)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        flush_bytes = max(256 << 20, 2 * l2)
        flush = torch.empty(flush_bytes // 8, dtype=torch.int64, device="cuda")
        samples: dict[str, list[float]] = {who: [] for who, _ in models}
        diff = None
        with torch.no_grad():
            for who, m in models:
                side = who
                for _ in range(args.warmup):
                    m(*inputs)
                torch.cuda.synchronize()
            if len(models) == 2:
                a, b = models[0][1](*inputs), models[1][1](*inputs)
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
                    diff = float((a.float() - b.float()).abs().max().item())
            torch.cuda.empty_cache()
            # One untimed call of each model after emptying the cache: otherwise the first timed call of each
            # pays the allocator's cudaMalloc of its outputs and intermediates, an outlier that raises the CV.
            for who, m in models:
                side = who
                m(*inputs)
            torch.cuda.synchronize()
            phase("warmup")
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            for trial in range(args.trials):
                order = models if trial % 2 == 0 else list(reversed(models))
                for who, m in order:
                    side = who
                    torch.cuda.synchronize()
                    flush.zero_()
                    torch.cuda.synchronize()
                    start.record()
                    m(*inputs)
                    end.record()
                    torch.cuda.synchronize()
                    samples[who].append(float(start.elapsed_time(end)))
        phase("trials")
        _emit(
            {
                "method": METHOD,
                "reference_ms": samples["reference"],
                "candidate_ms": samples.get("candidate", []),
                "trials": args.trials,
                "warmup": args.warmup,
                "flush_bytes": flush_bytes,
                "interleaved": len(models) == 2,
                "max_abs_diff": diff,
                "device": torch.cuda.get_device_name(0),
                "torch": torch.__version__,
                "phases_s": phases,
                "before_go": ahead if args.go_file is not None else [],
            }
        )
        return 0
    except BaseException as exc:  # the reason goes to the caller in one line, whatever it is
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        _emit({"method": METHOD, "error": last[:500], "side": side})
        return 1


if __name__ == "__main__":
    sys.exit(main())
