"""What every timing method shares: reading samples (``BEAVER_TIME_MS`` lines, ncu's CSV), their statistics,
the errors a timing raises, and the one constructor of TimingResult (timing_result)."""

from __future__ import annotations

import csv
import io
import math
import re
import statistics

from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import Flag, StageResult, TimingResult
from beavertui.engine.session.legacy import DRIVER_PHASES

#: One timed run's event time. ``BEAVER_HOST_MS`` lines (host time to a full device sync, anticheat.py)
#: are not samples: they only serve the side-stream check.
TIME_RE = re.compile(r"^BEAVER_TIME_MS\s+([0-9.eE+-]+)\s*$", re.M)
CV_LIMIT = 0.03
IMPLAUSIBLE = 10.0
#: Kernels of the framework around a Python harness (torch itself), not of the solution.
FRAMEWORK_KERNEL = re.compile(r"at::native::|at::cuda::|at_cuda_detail|c10::|\bvoid at::")


def stats(samples: list[float]) -> tuple[float, float]:
    """(median, coefficient of variation) of samples; CV is stdev/mean as a fraction."""
    if not samples:
        raise ValueError("no samples")
    med = statistics.median(samples)
    mean = statistics.fmean(samples)
    cv = statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0
    return med, cv


def parse_times(log: str) -> list[float]:
    """Every ``BEAVER_TIME_MS`` value of a benchmark log, milliseconds."""
    out = []
    for m in TIME_RE.finditer(log):
        try:
            value = float(m.group(1))
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:  # 0, negative, 1e999: not a time
            out.append(value)
    return out


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, milliseconds) per profiled kernel of ``ncu --csv --print-units base`` output."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = csv.DictReader(io.StringIO(text[start:]))
    out = []
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        unit = (row.get("Metric Unit") or "ns").strip()
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(
            unit, 1e-6
        )
        out.append((row.get("Kernel Name") or "?", value * scale))
    return out


_SANITIZER_WRAP = re.compile(
    r"\S*python3?\s+\S*run_sanitizer\.py\s+|\bcompute-sanitizer(?:\s+--?[\w-]+(?:[= ](?!\./)\S+)?)*\s+"
)


def timing_command(test_command: str) -> str:
    """The test command without a sanitizer wrapper (a harness that runs compute-sanitizer itself)."""
    return _SANITIZER_WRAP.sub("", test_command)


class SpeedupUnavailable(BeaverError):
    """No speedup can be measured, through no fault of the candidate nor of the machine: the reference does
    not build or time here, or the family has none. A correct attempt keeps its correctness; its speedup is
    null with this reason and it counts at p = 0 only."""


def driver_phases(doc: dict[str, object]) -> tuple[dict[str, float], list[str]]:
    """The kernelbench driver's host seconds per phase (``phases_s``) and those it ran before its go
    (``before_go``), as far as they are numbers and names of DRIVER_PHASES."""
    phases = doc.get("phases_s")
    before = doc.get("before_go")
    known = dict(DRIVER_PHASES)
    got = (
        {k: float(v) for k, v in phases.items() if k in known and isinstance(v, (int, float))}
        if isinstance(phases, dict)
        else {}
    )
    early = [k for k in before if k in got] if isinstance(before, list) else []
    return got, early


def phases_note(doc: dict[str, object]) -> str:
    """``; host seconds: torch import 2.1, ...`` from the driver's ``phases_s`` (empty without them). The
    phases a driver started ahead of the GPU hold ran before its go (``before_go``: the torch import and the
    wait) are named apart: ``; host seconds before the GPU was held: torch import 3.5, ...; with it held: ...``."""
    phases = doc.get("phases_s")
    if not isinstance(phases, dict):
        return ""
    before = doc.get("before_go")
    early = set(before) if isinstance(before, list) else set()
    parts = [
        (k in early, f"{label} {float(phases[k]):.1f}")
        for k, label in DRIVER_PHASES
        if isinstance(phases.get(k), (int, float))
    ]
    if not parts:
        return ""
    if not early:
        return f"; host seconds: {', '.join(text for _, text in parts)}"
    held = ", ".join(text for ahead, text in parts if not ahead) or "none"
    ahead = ", ".join(text for ahead, text in parts if ahead)
    return f"; host seconds before the GPU was held: {ahead}; with it held: {held}"


class CandidateTimingFailed(BeaverError):
    """The candidate's own timing run failed its harness's check before any timed launch (for example a
    candidate that is right at the correctness size only): a failure of the candidate, not of the machine."""

    def __init__(self, result: StageResult, evidence: str) -> None:
        super().__init__(f"the candidate's timing run failed (rc {result.rc}): {evidence}")
        self.result = result
        self.evidence = evidence


class CandidateNoSamples(BeaverError):
    """A candidate's CUPTI run or testbench run that gave no samples, raised out of a chain of runs started
    ahead or parked (which ends them) so that runs.TimedRuns.candidate_failure can decide whose failure it was."""

    def __init__(self, error: BeaverError, result: StageResult) -> None:
        super().__init__(str(error))
        self.error = error
        self.result = result


def kernels_ms(rows: list[tuple[str, float]], python: bool) -> float | None:
    """The summed milliseconds of profiled kernels (name, ms), a Python harness's framework kernels
    (FRAMEWORK_KERNEL) left out; None when none is left."""
    kept = [ms for name, ms in rows if not (python and FRAMEWORK_KERNEL.search(name))]
    return sum(kept) if kept else None


def timing_result(
    method: str,
    reference: list[float],
    candidate: list[float],
    *,
    speedup: float | None = None,
    note: str | None = None,
    flags: list[Flag] | None = None,
    candidate_host: list[float] | None = None,
    reference_host: list[float] | None = None,
    runs: int | None = None,
    remeasured: bool = False,
    driver: dict[str, object] | None = None,
) -> TimingResult:
    """The TimingResult of samples in milliseconds: medians, CVs, the speedup (reference over candidate
    median, unless ``speedup`` is given: a testbench's own lines), unstable above CV_LIMIT, implausible
    above IMPLAUSIBLE. A testbench that prints no reference times stands for its reference by the candidate
    median times its speedup. ``driver``: the kernelbench driver's result object, whose phases are kept."""
    phases, before = driver_phases(driver or {})
    cm, ccv = stats(candidate) if candidate else (0.0, 0.0)
    rm, rcv = stats(reference) if reference else (cm * (speedup or 0.0), 0.0)
    if speedup is None:
        speedup = rm / cm if cm > 0 else math.inf
    return TimingResult(
        method=method,
        candidate_ms=cm,
        reference_ms=rm,
        candidate_cv=ccv,
        reference_cv=rcv,
        speedup=speedup,
        candidate_samples=candidate,
        reference_samples=reference or [rm],
        unstable=max(rcv, ccv) > CV_LIMIT,
        implausible=speedup > IMPLAUSIBLE,
        note=note,
        candidate_host_samples=candidate_host or [],
        reference_host_samples=reference_host or [],
        flags=flags or [],
        runs=runs,
        remeasured=remeasured,
        driver_phases_s=phases,
        driver_before_go=before,
    )
