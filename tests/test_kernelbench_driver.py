"""The kernelbench timing driver's sampling, without a GPU: torch is a stand-in whose CUDA events read a
simulated clock, and whose model calls cost 1 ms, plus 0.5 ms while the caching allocator is cold (after
``torch.cuda.empty_cache()``, until a call has allocated again), as a first cudaMalloc does. The driver runs
as the real script, in its own process. (tests/test_release_real.py runs it against torch on the GPU.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from beavertui.engine.timing.speedup import DRIVER_PHASES, phases_note

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "beavertui" / "engine" / "timing" / "kernelbench_driver.py"

TORCH = """
__version__ = "stand-in"
int64 = "int64"
_clock = [0.0]
_cold = [True]


class Tensor:
    shape = (4,)

    def cuda(self):
        return self

    def float(self):
        return self

    def __sub__(self, other):
        return self

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return 0.0

    def zero_(self):
        return self


def manual_seed(seed):
    pass


def empty(n, dtype=None, device=None):
    return Tensor()


class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class nn:
    class Module:
        def cuda(self):
            return self

        def eval(self):
            return self

        def __call__(self, *args):
            _clock[0] += 1.0 + (0.5 if _cold[0] else 0.0)
            _cold[0] = False
            return Tensor()


class _Props:
    L2_cache_size = 60 << 20


class cuda:
    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = _clock[0]

        def elapsed_time(self, end):
            return end.t - self.t

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        _cold[0] = True

    @staticmethod
    def get_device_properties(i):
        return _Props()

    @staticmethod
    def get_device_name(i):
        return "stand-in GPU"
"""

PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x


def get_init_inputs():
    return []


def get_inputs():
    return [torch.Tensor()]
"""


def test_no_timed_call_pays_the_cold_allocator(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(TORCH)
    (tmp_path / "problem.py").write_text(PROBLEM)
    (tmp_path / "solution.py").write_text(PROBLEM + "\nModelNew = Model\n")
    p = subprocess.run(
        [sys.executable, str(DRIVER), "--problem", "problem.py", "--solution", "solution.py", "--trials", "8"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(site)}, timeout=60,
    )  # fmt: skip
    line = next(x for x in p.stdout.splitlines() if x.startswith("BEAVER_KB_TIMING "))
    doc = json.loads(line.split(" ", 1)[1])
    assert "error" not in doc, doc
    assert doc["reference_ms"] == [1.0] * 8 and doc["candidate_ms"] == [1.0] * 8, doc
    assert doc["interleaved"] and doc["warmup"] == 3
    # where the host's time went, phase by phase, as the timing's note shows it
    assert list(doc["phases_s"]) == [k for k, _ in DRIVER_PHASES]
    assert all(isinstance(v, float) and v >= 0 for v in doc["phases_s"].values())
    note = phases_note(doc)
    assert note.startswith("; host seconds: torch import ") and note.endswith(
        f"timed trials {doc['phases_s']['trials']:.1f}"
    )
    assert (
        phases_note({}) == ""
        and phases_note({"phases_s": {"inputs": 2.25}}) == "; host seconds: inputs made 2.2"
    )
