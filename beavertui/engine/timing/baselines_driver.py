"""Time a task's PyTorch equivalent as named baselines, in one process (run on the GPU machine).

Usage: ``python baselines_driver.py --module FILE [--args JSON] [--style native|kernelbench] [--trials N]
[--warmup W] [--variants eager,compile,compile_ro,graph,vendor] [--admit-file PATH] [--go-file PATH]
[--go-timeout S]``.

FILE defines ``Model``, ``get_inputs`` and ``get_init_inputs`` (a kernelbench problem.py, or a bundled
task's ``_torch/<family>.py``); both functions are called with the keyword arguments of ``--args`` (the
task's timing shape and type), ``VendorModel`` where the task declares a vendor baseline. The inputs are
drawn once, seeded, with CUDA as torch's default device (on the host, then copied, where that fails). The
variants, each built from the same seeded initial inputs:

- ``eager``: ``Model`` called as is;
- ``compile``: ``torch.compile(model)``; ``compile_ro``: ``torch.compile(model, mode="reduce-overhead")``
  (``torch.compiler.cudagraph_mark_step_begin()`` before each call, outside the timed span);
- ``graph``: the eager call captured once into a ``torch.cuda.CUDAGraph`` and replayed. Where FILE also
  defines ``GraphModel`` (a capturable form of the same computation, for a ``Model`` that reads a value back
  to the host, which a capture cannot), the graph variant captures and replays ``GraphModel`` instead, always:
  before anything is captured, ``Model`` and ``GraphModel`` are each called once on the inputs and their
  outputs must be equal (``max_abs_diff`` 0, in float64), else the variant fails
  with a one-line reason and no time. The result's ``graph_replays`` then names the class and the first
  line of its docstring (null where the graph variant replays ``Model``);
- ``vendor``: ``VendorModel`` called as is.

Each variant gets W untimed calls first (compilation and capture happen there), and its output is compared
with eager's (``max_abs_diff``, in float64, ``DIFF_CHUNK`` elements at a time: the comparison of a 7 GiB
float32 output then holds under 0.5 GiB more, where the whole of it in float64 took 42 GiB). Then N trials,
each one timed call of every variant in turn (the order reversed on odd trials). Before every timed call the
L2 cache is flushed by writing a buffer of at least 256 MiB (twice the L2 when larger); the call is timed
with CUDA events on the current stream. Style
``kernelbench`` synchronises the GPU after the flush and before the start event (the kernelbench family's
driver); ``native`` queues the start event and the call behind the flush (the bundled tasks' in-process
timing, so the host's launch latency hides behind the flush). A variant that fails (torch.compile refuses
the model, the capture fails, out of memory) carries ``error`` and the others go on, all under
``torch.no_grad()``.

Before anything touches the GPU, the driver sizes what it will hold there and prints
``BEAVER_BASELINES_SIZED {json}``: ``input_bytes`` (get_inputs drawn on torch's ``meta`` device, as
kernelbench_driver.py's ``meta_bytes`` does; where the meta device cannot draw them, drawn on the host, seeded,
and measured, then kept to be copied when within 2 GiB), and, from ``Model`` built and called on the meta
device, ``output_bytes`` and ``weight_bytes`` (its parameters and buffers), each null where the meta device
cannot tell. With ``--admit-file``, it then waits until PATH exists (at most ``--go-timeout`` seconds): the
caller admits it to the GPU when its memory fits beside the drivers already there.

One line is printed: ``BEAVER_BASELINES {json}`` with ``variants`` (per name ``samples_ms`` or ``error``,
and ``max_abs_diff``), ``torch``, ``device``, ``trials``, ``warmup``, ``flush_bytes``, ``style``, ``sized``
(the sizes above), ``peak_reserved_bytes`` (``torch.cuda.max_memory_reserved()`` at the end: the most GPU
memory its allocator held, the CUDA context not counted) and ``phases_s`` (host seconds of each phase).
When nothing can be timed at all (torch is not importable, no GPU is visible, FILE fails to load), the line
carries only ``error`` (one line saying why) and ``skip``, and the exit status is 3.

With ``--go-file``, every variant is built and warmed up first, ``BEAVER_BASELINES_READY`` is printed, and the
trials wait until PATH exists (at most ``--go-timeout`` seconds): several drivers compile side by side while
only one at a time is timed.

One variant at a time. Holding every variant from its warm-up to its trials, a driver holds the inputs, each
variant's output and model, the compiled functions and the memory pools of CUDA Graph and reduce-overhead
together: a kernelbench problem of 7 GiB in and out held 63 GiB on an H100 before reduce-overhead ran out of
memory. The admit file may hold a JSON object ``{"need_bytes": N, "room_bytes": R}``: the caller's estimate
of what the driver holds with all its variants, and the GPU memory it is given. Where N exceeds R, the
driver prints its ready line at once (nothing warmed up), waits for its go, then takes the variants one at a
time: build, warm up, compare with eager, the N timed calls in a row (the same flush, events and style as
above), then release it (its output, model, compiled function, CUDA graph and memory pool dropped,
``gc.collect()``, ``torch._dynamo.reset()`` and the reduce-overhead graph trees reset after a torch.compile
variant, ``torch.cuda.empty_cache()``) before the next; only the inputs and eager's output (for the
comparison) stay. The result then carries ``one_at_a_time``: one line saying why. A variant that still runs
out of memory by itself carries its one-line ``error``, and the next is built after it is released.

This file is a standalone script: it imports only the standard library, torch and its sibling script
kernelbench_driver.py (loaded by path, for the sizing), never beavertui.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import json
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path, where beavertui's timing/profile.py would stand
# for the standard library's `profile` (torch.compile imports cProfile, which imports it): leave it out.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

TAG = "BEAVER_BASELINES"
READY = "BEAVER_BASELINES_READY"
SIZED = "BEAVER_BASELINES_SIZED"
#: The class a module may define as the capturable form of ``Model`` for the graph variant.
GRAPH_MODEL = "GraphModel"
VARIANTS = ("eager", "compile", "compile_ro", "graph", "vendor")
STYLES = ("native", "kernelbench")
POLL_S = 0.01
#: Elements of an output compared with eager's at a time (as float64: 128 MiB per operand).
DIFF_CHUNK = 1 << 24


def emit(doc: dict[str, Any]) -> None:
    print(f"{TAG} {json.dumps(doc, allow_nan=False)}", flush=True)


def one_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip().replace("\n", " ")[:300]


def load_module(path: Path) -> types.ModuleType:
    mod = types.ModuleType("beaver_baseline_problem")
    mod.__file__ = str(path)
    sys.modules[mod.__name__] = mod
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), mod.__dict__)
    return mod


def sibling(name: str) -> types.ModuleType:
    """The script ``name``.py beside this one, loaded by path (this folder is not on sys.path, see above)."""
    spec = importlib.util.spec_from_file_location(f"beaver_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sizes(
    problem: types.ModuleType, torch: Any, args: dict[str, Any], seed: int
) -> tuple[dict[str, int | None], list[Any] | None]:
    """(sizes, host inputs): the bytes of the inputs, of Model's output and of its weights, drawn and built
    on the meta device without memory (see the module's docstring); the host inputs where only the host could
    draw them and they are small enough to keep, else None."""
    kb = sibling("kernelbench_driver")
    host = None
    size = kb.meta_bytes(problem, torch, **args)
    if size is None:  # a get_inputs that reads values: drawn on the host, seeded, as the driver would
        torch.manual_seed(seed)
        host = list(problem.get_inputs(**args))
        size = kb.nbytes(host, torch)
        if size > kb.AHEAD_MAX_BYTES:  # too large to keep while waiting: drawn again once admitted
            host = None
    out: int | None = None
    weights: int | None = None
    try:
        with torch.device("meta"), torch.no_grad():
            model = problem.Model(*problem.get_init_inputs(**args))
            weights = kb.nbytes([*model.parameters(), *model.buffers()], torch)
            out = kb.nbytes(model(*problem.get_inputs(**args)), torch)
    except Exception:
        pass  # the meta device cannot build or call it: left unknown
    return {"input_bytes": size, "output_bytes": out, "weight_bytes": weights}, host


def _cuda(x: Any, torch: Any) -> Any:
    return x.cuda() if isinstance(x, torch.Tensor) else x


def draw_inputs(problem: types.ModuleType, torch: Any, args: dict[str, Any], seed: int) -> list[Any]:
    """The seeded inputs, made on the GPU (on the host and copied where that fails)."""
    try:
        torch.manual_seed(seed)
        with torch.device("cuda"):
            return list(problem.get_inputs(**args))
    except Exception:
        torch.cuda.empty_cache()
    torch.manual_seed(seed)
    return [_cuda(x, torch) for x in problem.get_inputs(**args)]


def graph_replays(problem: types.ModuleType) -> dict[str, str] | None:
    """What the graph variant captures where it is not ``Model``: the class and its docstring's first line."""
    cls = getattr(problem, GRAPH_MODEL, None)
    if cls is None:
        return None
    doc = (cls.__doc__ or "").strip()
    return {"class": GRAPH_MODEL, "doc": doc.splitlines()[0].strip()[:300] if doc else ""}


def differs(want: Any, got: Any, torch: Any) -> str | None:
    """How ``got`` (GraphModel's output) differs from ``want`` (Model's), in a few words; None where equal."""
    if not (isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor)):
        return "its output and Model's are not both tensors, so they cannot be compared"
    if tuple(got.shape) != tuple(want.shape):
        return f"its output has shape {tuple(got.shape)}, Model's {tuple(want.shape)}"
    # compared in float64, a chunk at a time: exact for any float32 value and any integer below 2**53
    diff = max_abs_diff(want, got, torch)
    if diff is None:
        return "its output and Model's cannot be compared (sparse)"
    if diff == 0.0:
        return None
    return f"its output differs from Model's on the same inputs (max abs diff {diff})"


class GraphForm:
    """The graph variant's model where the module defines GraphModel: that form, and Model to check it by."""

    def __init__(self, form: Any, model: Any) -> None:
        self.form = form
        self.model: Any = model

    def checked(self, inputs: list[Any], torch: Any) -> Any:
        """GraphModel, once its output on ``inputs`` equals Model's (RuntimeError with one line where it does
        not); Model is dropped."""
        want = self.model(*inputs)
        got = self.form(*inputs)
        torch.cuda.synchronize()
        self.model = None
        why = differs(want, got, torch)
        if why is not None:
            raise RuntimeError(f"{GRAPH_MODEL} is not Model's computation: {why}; not timed")
        return self.form


def build(name: str, problem: types.ModuleType, torch: Any, init: list[Any], seed: int) -> Any:
    """The module of variant ``name`` (its callable is made by ``callable_of``); for ``graph`` where the
    module defines GraphModel, a GraphForm."""
    if name == "graph" and getattr(problem, GRAPH_MODEL, None) is not None:
        eager = build("eager", problem, torch, init, seed)
        torch.manual_seed(seed)
        return GraphForm(getattr(problem, GRAPH_MODEL)(*init).cuda().eval(), eager)
    cls = getattr(problem, "VendorModel" if name == "vendor" else "Model", None)
    if cls is None:
        raise RuntimeError("the module defines no VendorModel" if name == "vendor" else "no Model")
    torch.manual_seed(seed)
    model = cls(*init).cuda().eval()
    if name == "compile":
        return torch.compile(model)
    if name == "compile_ro":
        return torch.compile(model, mode="reduce-overhead")
    return model


def _replay(graph: Any, model: Any) -> None:
    """Replay ``graph``; ``model`` is passed only to live as long as the graph (the captured kernels read its
    weights)."""
    graph.replay()


def callable_of(
    name: str, model: Any, inputs: list[Any], torch: Any, warmup: int
) -> tuple[Callable[[], Any], Callable[[], None], Any]:
    """(call, before, output): the timed call, what runs before it outside the timed span, and the output
    of the last warm-up call (for the comparison with eager). The warm-up calls are made here."""

    def before() -> None:
        return None

    if name == "compile_ro":
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
        if mark is not None:
            before = mark
    if name == "graph":
        if isinstance(model, GraphForm):
            model = model.checked(inputs, torch)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(warmup, 1)):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(*inputs)
        graph.replay()
        torch.cuda.synchronize()
        return functools.partial(_replay, graph, model), before, out
    out = None
    for _ in range(max(warmup, 1)):
        before()
        out = model(*inputs)
    torch.cuda.synchronize()
    if isinstance(out, torch.Tensor):
        out = out.clone()
    return (lambda: model(*inputs)), before, out


def max_abs_diff(a: Any, b: Any, torch: Any) -> float | None:
    """The largest absolute difference of two outputs of the same shape, in float64, ``DIFF_CHUNK`` elements at
    a time (the whole output in float64 would take twice its memory per operand); None where they cannot be
    compared (not tensors, other shapes, sparse)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        if a.is_sparse or b.is_sparse:
            return None
        n = a.numel()
        if not n:
            return 0.0
        fa, fb = a.reshape(-1), b.reshape(-1)
        worst = 0.0
        for i in range(0, n, DIFF_CHUNK):
            d = float((fa[i : i + DIFF_CHUNK].double() - fb[i : i + DIFF_CHUNK].double()).abs().max().item())
            if d != d:  # NaN: the outputs differ beyond measure
                return d
            worst = max(worst, d)
        return worst
    return None


def timed_call(
    call: Callable[[], Any],
    before: Callable[[], None],
    flush: Any,
    style: str,
    start: Any,
    end: Any,
    torch: Any,
) -> float:
    """One timed call, ms: what runs before it, the L2 flush, the call between two CUDA events."""
    before()
    if style == "kernelbench":
        torch.cuda.synchronize()
        flush.zero_()
        torch.cuda.synchronize()
    else:
        flush.zero_()
    start.record()
    call()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end))


def release(name: str, torch: Any) -> None:
    """Give back what a variant held once its references are gone: Python's cycles collected, after a
    torch.compile variant its compiled code and reduce-overhead's CUDA graph trees (their memory pools), the
    allocator's cached blocks."""
    gc.collect()
    if name in ("compile", "compile_ro"):
        dynamo = getattr(torch, "_dynamo", None)
        if dynamo is not None:
            dynamo.reset()
        try:  # torch._dynamo.reset() resets them through inductor's backend; said here too, where it does not
            from torch._inductor.cudagraph_trees import reset_cudagraph_trees

            reset_cudagraph_trees()
        except Exception:
            pass
        gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def one_at_a_time_why(admit: Path | None, variants: int) -> str | None:
    """Why the variants are to be taken one at a time (see the module's docstring), from the admit file; None:
    side by side."""
    if admit is None:
        return None
    try:
        doc = json.loads(admit.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a bare go ("admitted"): side by side
    if not isinstance(doc, dict):
        return None
    need, room = doc.get("need_bytes"), doc.get("room_bytes")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (need, room)):
        return None
    assert isinstance(need, int) and isinstance(room, int)
    if need <= room:
        return None
    return (
        f"estimated {need / 2**30:.1f} GiB of GPU memory with its {variants} variants held together, more than "
        f"the {room / 2**30:.1f} GiB it was given: each variant warmed up, timed and released before the next"
    )


def wait_for_go(path: Path, timeout_s: float, line: str = READY) -> None:
    print(line, flush=True)
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no go ({path.name}) within {timeout_s:g} s")
        time.sleep(POLL_S)


def given_go(a: argparse.Namespace, phase: Callable[[str], None]) -> bool:
    """Wait for the go when the recorder gives one (``--go-file``); False when none came in time (said)."""
    if a.go_file is None:
        return True
    try:
        wait_for_go(a.go_file, a.go_timeout)
    except TimeoutError as exc:
        emit({"error": str(exc), "skip": True})
        return False
    phase("waited_for_go")
    return True


def warm(
    name: str, problem: types.ModuleType, torch: Any, init: list[Any], inputs: list[Any], a: argparse.Namespace,
    reference_out: Any,
) -> tuple[Callable[[], Any], Callable[[], None], Any, float | None]:  # fmt: skip
    """(call, before, output, max_abs_diff) of variant ``name`` built and warmed up; its difference from
    ``reference_out`` (eager's output; for eager itself, from its own)."""
    model = build(name, problem, torch, init, a.seed)
    call, before, out = callable_of(name, model, inputs, torch, a.warmup)
    ref = out if name == "eager" else reference_out
    return call, before, out, max_abs_diff(out, ref, torch) if ref is not None else None


def side_by_side(
    wanted: list[str], problem: types.ModuleType, torch: Any, init: list[Any], inputs: list[Any],
    a: argparse.Namespace, flush_bytes: int, result: dict[str, dict[str, Any]], phase: Callable[[str], None],
) -> bool:  # fmt: skip
    """Every variant warmed up, then (the go given) the trials, each one call of every variant in turn; the
    entries in ``result``. False when no go came (said)."""
    ready: list[tuple[str, Callable[[], Any], Callable[[], None]]] = []
    reference_out = None
    for name in wanted:
        try:
            call, before, out, diff = warm(name, problem, torch, init, inputs, a, reference_out)
            if name == "eager":
                reference_out = out
            result[name] = {"samples_ms": [], "max_abs_diff": diff}
            ready.append((name, call, before))
        except Exception as exc:
            result[name] = {"error": one_line(exc)}
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        phase(f"warm_{name}")
    flush = torch.empty(flush_bytes // 8, dtype=torch.int64, device="cuda")
    if not given_go(a, phase):
        return False
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    failed: set[str] = set()
    for trial in range(a.trials):
        order = ready if trial % 2 == 0 else list(reversed(ready))
        for name, call, before in order:
            if name in failed:
                continue
            try:
                result[name]["samples_ms"].append(timed_call(call, before, flush, a.style, start, end, torch))
            except Exception as exc:
                failed.add(name)
                result[name] = {"error": f"during the trials: {one_line(exc)}"}
                torch.cuda.synchronize()
    phase("trials")
    return True


def one_variant(
    name: str, problem: types.ModuleType, torch: Any, init: list[Any], inputs: list[Any], a: argparse.Namespace,
    flush: Any, reference_out: Any, phase: Callable[[str], None],
) -> tuple[dict[str, Any], Any]:  # fmt: skip
    """(entry, output) of variant ``name`` built, warmed up and timed by itself: its N calls in a row. The
    output is returned for eager only (the others' are compared with it); everything else the variant held
    is dropped when this returns, for ``release``."""
    try:
        call, before, out, diff = warm(name, problem, torch, init, inputs, a, reference_out)
    except Exception as exc:
        phase(f"warm_{name}")
        return {"error": one_line(exc)}, None
    phase(f"warm_{name}")
    entry: dict[str, Any] = {"samples_ms": [], "max_abs_diff": diff}
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    try:
        for _ in range(a.trials):
            entry["samples_ms"].append(timed_call(call, before, flush, a.style, start, end, torch))
    except Exception as exc:
        entry = {"error": f"during the trials: {one_line(exc)}"}
        torch.cuda.synchronize()
    phase(f"trials_{name}")
    return entry, out if name == "eager" else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--module", type=Path, required=True)
    ap.add_argument(
        "--args", default="{}", help="JSON object: keyword arguments of get_inputs/get_init_inputs"
    )
    ap.add_argument("--style", choices=STYLES, default="native")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--variants", default="eager,compile,compile_ro,graph")
    ap.add_argument("--admit-file", type=Path, default=None)
    ap.add_argument("--go-file", type=Path, default=None)
    ap.add_argument("--go-timeout", type=float, default=600.0)
    a = ap.parse_args(argv)
    wanted = [v for v in a.variants.split(",") if v]
    unknown = [v for v in wanted if v not in VARIANTS]
    if unknown or not wanted:
        emit({"error": f"unknown variants {unknown}: expected some of {', '.join(VARIANTS)}", "skip": True})
        return 3
    try:
        args = json.loads(a.args)
        if not isinstance(args, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        emit({"error": f"--args is not a JSON object: {exc}", "skip": True})
        return 3
    phases: dict[str, float] = {}
    mark = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(now - mark[0], 3)
        mark[0] = now

    try:
        import torch
    except Exception as exc:
        emit({"error": f"torch is not importable here ({one_line(exc)}): PyTorch baselines need it",
              "skip": True})  # fmt: skip
        return 3
    if not torch.cuda.is_available():
        emit({"error": "torch sees no CUDA device: PyTorch baselines need a GPU", "skip": True})
        return 3
    try:
        problem = load_module(a.module)
        phase("import")
        sized, host = sizes(problem, torch, args, a.seed)
        phase("sized")
    except Exception as exc:
        emit({"error": f"{a.module.name}: {one_line(exc)}", "skip": True})
        return 3
    if a.admit_file is not None:
        try:
            wait_for_go(a.admit_file, a.go_timeout, f"{SIZED} {json.dumps(sized)}")
        except TimeoutError as exc:
            emit({"error": f"not admitted: {exc}", "skip": True})
            return 3
        phase("waited_for_room")
    else:
        print(f"{SIZED} {json.dumps(sized)}", flush=True)
    try:
        inputs = (
            [_cuda(x, torch) for x in host] if host is not None else draw_inputs(problem, torch, args, a.seed)
        )
        torch.manual_seed(a.seed)
        init = [_cuda(x, torch) for x in problem.get_init_inputs(**args)]
        torch.cuda.synchronize()
        phase("inputs")
    except Exception as exc:
        emit({"error": f"{a.module.name}: {one_line(exc)}", "skip": True})
        return 3
    result: dict[str, dict[str, Any]] = {}
    alone = one_at_a_time_why(a.admit_file, len(wanted))
    with torch.no_grad():
        flush_bytes = max(
            256 << 20, 2 * int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
        )
        if alone is not None:
            flush = torch.empty(flush_bytes // 8, dtype=torch.int64, device="cuda")
            if not given_go(a, phase):
                return 3
            reference_out = None
            for name in wanted:
                result[name], out = one_variant(
                    name, problem, torch, init, inputs, a, flush, reference_out, phase
                )
                if name == "eager":
                    reference_out = out
                del out
                release(name, torch)
                phase(f"released_{name}")
        elif not side_by_side(wanted, problem, torch, init, inputs, a, flush_bytes, result, phase):
            return 3  # no go came (said)
    emit(
        {
            "style": a.style,
            "variants": result,
            "graph_replays": graph_replays(problem) if "graph" in wanted else None,
            "trials": a.trials,
            "warmup": a.warmup,
            "flush_bytes": flush_bytes,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0),
            "sized": sized,
            **({"one_at_a_time": alone} if alone is not None else {}),
            "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()),
            "phases_s": phases,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
