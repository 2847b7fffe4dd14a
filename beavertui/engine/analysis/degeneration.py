"""Repair by degeneration, read in the code: which of the reference's performance features a candidate lost.

Compares the static features (features.py) of a candidate with those of the reference and the broken
start, optionally overriding the launch reading with the grid and block sizes a harness printed at run
time. A passing repair that lost a performance feature, deleted the kernel or handed the work to a
library is degenerate. Pure: no files, no processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from beavertui.engine.code.features import FEATURES, PERF_FEATURES, extract

_RUNTIME = re.compile(
    r"grid\s*[=:]?\s*\(?\s*(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?\s*\)?[\s,;]+block\s*[=:]?\s*\(?\s*"
    r"(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?",
    re.I,
)


def runtime_geometry(log: str) -> list[tuple[int, int]]:
    """(blocks, threads per block) of each launch a harness printed as ``grid=(x,y,z) block=(x,y,z)``."""
    out = []
    for m in _RUNTIME.finditer(log):
        g = [int(x) for x in m.groups()[:3] if x]
        b = [int(x) for x in m.groups()[3:] if x]
        out.append((_prod(g), _prod(b)))
    return out


def _prod(xs: list[int]) -> int:
    total = 1
    for x in xs:
        total *= x
    return total


@dataclass(frozen=True)
class Degeneration:
    """How a candidate's features compare with the reference's (and the broken start's)."""

    lost: tuple[str, ...]
    """Reference features the candidate lacks, plus ``library_substitution`` when it hands the work to a
    library the reference does not call."""
    removed: tuple[str, ...]
    """Of ``lost``, those the broken start still had (the repair itself removed them)."""
    gained: tuple[str, ...]
    """Features the candidate has and the reference lacks."""
    degenerate: bool
    """A performance feature, the kernel itself or the kernel's own implementation was lost."""


def compare(
    candidate: str,
    broken_start: str,
    reference: str | None,
    *,
    candidate_runtime: list[tuple[int, int]] | None = None,
    reference_runtime: list[tuple[int, int]] | None = None,
) -> Degeneration:
    """Compare a candidate with the reference (the broken start stands in when there is no reference).

    Runtime geometry, a list of (blocks, threads per block) per launch as the harness printed it,
    overrides the static ``parallel_launch`` reading of its side: a candidate whose every launch ran one
    thread in all lacks it, whatever its source suggests.
    """
    start = extract(broken_start)
    ref = extract(reference) if reference is not None else start
    cand = extract(candidate)
    cand_present = set(cand.present)
    ref_present = set(ref.present)
    for present, runs in ((cand_present, candidate_runtime), (ref_present, reference_runtime)):
        if runs and "kernel" in present:
            if max(b * t for b, t in runs) > 1:
                present.add("parallel_launch")
            else:
                present.discard("parallel_launch")
    lost = [f for f in FEATURES if f != "library_call" and f in ref_present and f not in cand_present]
    if set(cand.library_calls) - set(ref.library_calls):
        lost.append("library_substitution")
    start_present = set(start.present) | {"library_substitution"}
    gained = tuple(f for f in FEATURES if f in cand_present and f not in ref_present)
    degenerate = any(f in PERF_FEATURES or f in ("kernel", "library_substitution") for f in lost)
    return Degeneration(tuple(lost), tuple(f for f in lost if f in start_present), gained, degenerate)


def degeneration(candidate: str, broken_start: str, reference: str | None) -> tuple[list[str], bool]:
    """(lost features, degenerate) of a candidate; ``compare`` gives the details."""
    result = compare(candidate, broken_start, reference)
    return list(result.lost), result.degenerate
