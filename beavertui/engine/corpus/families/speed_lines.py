"""Testbench speed lines: the ``Ref time`` / ``Kernel time`` / ``Speedup`` lines a testbench prints, the speed
of the families timed by their testbench (``speed == "testbench_lines"``: cutlass and the applied families)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_REF = re.compile(
    r"Ref time:\s*([0-9.eE+-]+)\s*ms(?:\s*\(avg over (\d+) trials, min:\s*([0-9.eE+-]+)\s*ms\))?"
)
_KER = re.compile(
    r"Kernel time:\s*([0-9.eE+-]+)\s*ms(?:\s*\(avg over (\d+) trials, min:\s*([0-9.eE+-]+)\s*ms\))?"
)
_SPD = re.compile(r"Speedup:\s*([0-9.eE+-]+|inf|nan)\s*x", re.I)


@dataclass(frozen=True)
class SpeedLines:
    """The speed lines of one testbench run, one entry per problem size."""

    reference_ms: tuple[float, ...]
    """Reference time per size (the min over the testbench's trials when printed, else its mean)."""
    candidate_ms: tuple[float, ...]
    """Candidate (``Kernel time``) per size, same rule."""
    speedups: tuple[float, ...]
    """The printed ``Speedup:`` per size."""

    @property
    def speedup(self) -> float | None:
        """Geometric mean of the per-size speedups (None without any positive one)."""
        good = [s for s in self.speedups if s > 0 and math.isfinite(s)]
        return math.exp(sum(math.log(s) for s in good) / len(good)) if good else None

    @staticmethod
    def _geo(xs: tuple[float, ...]) -> float | None:
        good = [x for x in xs if x > 0 and math.isfinite(x)]
        return math.exp(sum(math.log(x) for x in good) / len(good)) if good else None

    @property
    def reference(self) -> float | None:
        """Geometric mean of the reference times (ms); candidate x speedup when only those were printed
        (the applied runner prints ``Kernel time`` and ``Speedup``)."""
        got = self._geo(self.reference_ms)
        cand, sp = self._geo(self.candidate_ms), self.speedup
        return got if got is not None else (cand * sp if cand is not None and sp else None)

    @property
    def candidate(self) -> float | None:
        """Geometric mean of the candidate times (ms); reference / speedup when none was printed."""
        got = self._geo(self.candidate_ms)
        ref, sp = self._geo(self.reference_ms), self.speedup
        return got if got is not None else (ref / sp if ref is not None and sp else None)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def parse_speed_lines(log: str) -> SpeedLines:
    """Every ``Ref time`` / ``Kernel time`` / ``Speedup`` line of a testbench log, in order."""
    ref = tuple(_num(m.group(3) or m.group(1)) for m in _REF.finditer(log))
    ker = tuple(_num(m.group(3) or m.group(1)) for m in _KER.finditer(log))
    spd = tuple(_num(m.group(1)) for m in _SPD.finditer(log))
    return SpeedLines(ref, ker, spd)
