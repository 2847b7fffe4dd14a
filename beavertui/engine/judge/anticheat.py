"""Anti-cheat checks: evidence that a candidate scored without doing the work, as Verdict flags.

Every check is a pure function of text the attempt already produced (the candidate and reference sources,
the test and benchmark logs), so the same flags come out of a live GPU attempt and of recorded logs. A flag
is a Flag (session/events.py): its name and its evidence in words. What each flag means and where its evidence comes from:

- ``output_not_written`` / ``partial_output``: the corpus harness poisons the output (0xFF bytes) before
  every launch and, after the checked launch, prints ``BEAVER_POISON_LEFT <buffer> <k> of <n>``: how many
  output elements still hold the poison (corpus/_common/beaver.cuh, ``poison_left``). In a timing run, a
  buffer in which the reference's own output also holds the poison pattern is not flagged partial (the
  pattern is a value of the correct output there: int32 scans pass through -1).
- ``library_call`` / ``no_kernel``: static reading of the sources (code/features.py): the candidate
  hands the work to a library (cuBLAS, cuDNN, torch/ATen ops, thrust, cub, CUTLASS device GEMMs) that the
  reference does not call, or has no ``__global__`` kernel (or never launches one) where the reference has
  one. These are heuristics over text: they flag for review, they do not fail the attempt.
- ``side_stream``: per timed run the harness prints ``BEAVER_TIME_MS`` (CUDA events around the launch on
  the legacy default stream) and ``BEAVER_HOST_MS`` (host clock from before the start event to a full
  device synchronisation). Work left on a non-blocking stream or queued by a host thread is outside the
  events but inside the host time. Flagged when the median per-run gap host - event exceeds
  max(0.1 ms, 0.5 x the candidate's median event time) and the reference, timed the same way in the same
  session, does not show a comparable gap.
- ``cached_result``: in timing mode every harness checks the output of the last timed launch against that
  launch's own fresh inputs and exits non-zero when it is wrong; a candidate benchmark run that exits
  non-zero after printing its samples replayed a stored result (or otherwise stopped computing). Such an
  attempt is never scored as correct.
- ``timing_run_failed``: the candidate passed the correctness run but its timing run failed the harness's
  check at the timing size before any timed launch (a solution right only at the checked size); or, where
  the timing run is the task's own test command (CUPTI, ncu, a testbench's speed lines) or calls the
  candidate's code as it does (kernelbench's driver), that run exited non-zero (not out of memory) and the
  test command run again as the correctness run ran it failed too (a candidate right only at times: a
  race). Never scored as correct.
- ``harness_modified`` (runner.WorkDir.verify, also after timing) and ``implausible_speedup`` (timing.py,
  localtool's hardware floor) are produced where their evidence lives; they are listed here for
  completeness.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable

from beavertui.engine.code.features import extract, strip_source
from beavertui.engine.session.facts import Flag

POISON_RE = re.compile(r"^BEAVER_POISON_LEFT\s+(\S+)\s+(\d+)\s+of\s+(\d+)\s*$", re.M)
_TIMED_RE = re.compile(r"^BEAVER_(TIME|HOST)_MS\s+([0-9.eE+-]+)\s*$", re.M)
#: Host time may exceed event time by this much (ms) without suspicion: launch and synchronisation cost.
SIDE_STREAM_FLOOR_MS = 0.1
#: ... or by this fraction of the event time, whichever is larger.
SIDE_STREAM_FRACTION = 0.5
#: Ways a source launches a kernel: triple chevrons, the runtime/driver launch calls, CUDA graph kernel nodes.
_LAUNCH = re.compile(
    r"<<<|\bcudaLaunch\w*|\bcuLaunch\w*|\bcudaGraph(?:Add)?KernelNode\w*|\bcudaGraphLaunch\b"
)
_GLOBAL = re.compile(r"\b__global__\b")
_EVIDENCE = re.compile(r"MISMATCH|FAILED|FAIL\b|[Ee]rror|differ", re.M)

FLAG_NAMES: tuple[str, ...] = (
    "output_not_written",
    "partial_output",
    "library_call",
    "no_kernel",
    "side_stream",
    "cached_result",
    "timing_run_failed",
    "harness_modified",
    "implausible_speedup",
    "harness_skipped",
    "foreign_include",
)
#: Flags that make an attempt incorrect (its output or its testbench cannot be trusted), not merely suspect.
DISQUALIFYING: frozenset[str] = frozenset(
    {"cached_result", "timing_run_failed", "harness_modified", "harness_skipped", "foreign_include"}
)


def is_flagged(flags: Iterable[Flag]) -> bool:
    """Whether a verdict's flags include an anti-cheat finding (``unstable_timing`` and the like do not
    count): such an attempt's success is counted apart in the metrics, never as a success."""
    return any(f.name in FLAG_NAMES for f in flags)


def first_of_each_kind(flags: Iterable[Flag]) -> list[Flag]:
    """The first flag of each name, in order (the first evidence of each kind)."""
    out: list[Flag] = []
    for f in flags:
        if f.name not in {x.name for x in out}:
            out.append(f)
    return out


def merge(*groups: Iterable[Flag]) -> list[Flag]:
    """Flags of several checks, in order, without repeating a name with the same evidence."""
    out: list[Flag] = []
    for group in groups:
        for f in group:
            if f not in out:
                out.append(f)
    return out


# ------------------------------------------------------------------ output coverage


def poison_counts(log: str) -> dict[str, int]:
    """Per output buffer, the most elements a run log's ``BEAVER_POISON_LEFT`` lines found still poisoned."""
    out: dict[str, int] = {}
    for m in POISON_RE.finditer(log):
        name = _buffer(m.group(1))
        out[name] = max(out.get(name, 0), int(m.group(2)))
    return out


def _buffer(name: str) -> str:
    """The buffer a poison line names (the timing drivers' ``out_timed`` is ``out`` after the timed launches)."""
    return name.removesuffix("_timed")


def poison_flags(log: str, suffix: str = "", reference_log: str | None = None) -> list[Flag]:
    """``output_not_written`` / ``partial_output`` from the ``BEAVER_POISON_LEFT`` lines of a run log.

    ``reference_log``: the reference's runs of the same timing. Where the reference's own output left
    elements of a buffer holding the poison bit pattern, that pattern is a value the task's correct output
    takes (an int32 prefix sum passing through -1), so a partial count there is not evidence and is not
    flagged; a buffer left wholly untouched always is."""
    legit = poison_counts(reference_log) if reference_log else {}
    out: list[Flag] = []
    seen: set[str] = set()
    for m in POISON_RE.finditer(log):
        name, left, total = m.group(1), int(m.group(2)), int(m.group(3))
        if name in seen or total == 0 or left == 0:
            continue
        seen.add(name)
        kind = "output_not_written" if left >= total else "partial_output"
        if kind == "partial_output" and legit.get(_buffer(name), 0) > 0:
            continue
        out.append(Flag(name=kind, detail=f"{left} of {total} elements untouched ({name}{suffix})"))
    return out


# ------------------------------------------------------------------ static reading


def _has_kernel(source: str) -> bool:
    """A ``__global__`` function in the source, also inside strings (inline CUDA of Python harnesses)."""
    no_comments = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    return bool(_GLOBAL.search(no_comments))


def static_flags(candidate: str, reference: str | None) -> list[Flag]:
    """``library_call`` and ``no_kernel`` of a candidate against its task's reference (None: no flags)."""
    if reference is None or not _has_kernel(reference):
        return []
    cand, ref = extract(candidate), extract(reference)
    out: list[Flag] = []
    new = [c for c in cand.library_calls if c not in ref.library_calls]
    if new:
        more = f" (+{len(new) - 3} more)" if len(new) > 3 else ""
        out.append(Flag(name="library_call", detail=", ".join(new[:3]) + more))
    if not _has_kernel(candidate):
        out.append(
            Flag(name="no_kernel", detail="the candidate defines no __global__ kernel (the reference does)")
        )
    else:
        code, _ = strip_source(candidate)
        ref_code, _ = strip_source(reference)
        if _LAUNCH.search(ref_code) and not _LAUNCH.search(code) and _GLOBAL.search(code):
            out.append(Flag(name="no_kernel", detail="a __global__ kernel is defined but never launched"))
    return out


# ------------------------------------------------------------------ timing-side checks


def timed_pairs(log: str) -> list[tuple[float, float]]:
    """(event ms, host ms) per timed run: each ``BEAVER_TIME_MS`` with the ``BEAVER_HOST_MS`` after it."""
    pairs: list[tuple[float, float]] = []
    event: float | None = None
    for m in _TIMED_RE.finditer(log):
        try:
            value = float(m.group(2))
        except ValueError:
            continue
        if m.group(1) == "TIME":
            event = value
        elif event is not None:
            pairs.append((event, value))
            event = None
    return pairs


def host_times(log: str) -> list[float]:
    """Every ``BEAVER_HOST_MS`` value that follows a ``BEAVER_TIME_MS`` line, milliseconds."""
    return [h for _, h in timed_pairs(log)]


def _gap(event: list[float], host: list[float]) -> tuple[float, float, float] | None:
    n = min(len(event), len(host))
    if n == 0:
        return None
    gaps = [host[i] - event[i] for i in range(n)]
    return statistics.median(gaps), statistics.median(event[:n]), statistics.median(host[:n])


def side_stream_flag(
    cand_event: list[float],
    cand_host: list[float],
    ref_event: list[float] | None = None,
    ref_host: list[float] | None = None,
) -> Flag | None:
    """``side_stream`` when the candidate's host time exceeds its event time by more than launch overhead
    explains, and the reference (same harness, same session) does not show a comparable gap."""
    c = _gap(cand_event, cand_host)
    if c is None:
        return None
    gap, event, host = c
    if gap <= max(SIDE_STREAM_FLOOR_MS, SIDE_STREAM_FRACTION * event):
        return None
    r = _gap(ref_event or [], ref_host or [])
    ref_note = ""
    if r is not None:
        r_gap, r_event, r_host = r
        if r_gap > max(SIDE_STREAM_FLOOR_MS, SIDE_STREAM_FRACTION * r_event) and r_gap >= 0.5 * gap:
            return None  # the reference's launch has the same host-side cost: not hidden work
        ref_note = f"; reference host {r_host:.4g} ms vs event {r_event:.4g} ms"
    return Flag(
        name="side_stream",
        detail=f"host {host:.4g} ms vs event {event:.4g} ms (medians per timed run{ref_note})",
    )


def side_stream_of_pairs(cand: list[tuple[float, float]], ref: list[tuple[float, float]]) -> Flag | None:
    """side_stream_flag over (event ms, host ms) pairs of timed launches (timed_pairs)."""
    return side_stream_flag(
        [e for e, _ in cand], [h for _, h in cand], [e for e, _ in ref], [h for _, h in ref]
    )


def cached_result_flag(rc: int | None, log: str, timed_out: bool = False) -> Flag | None:
    """``cached_result`` when a candidate's benchmark run printed samples and then failed (the check of
    its last timed launch against that launch's fresh inputs)."""
    if timed_out or rc is None or rc == 0 or "BEAVER_TIME_MS" not in log:
        return None
    evidence = failure_evidence(log[log.rfind("BEAVER_TIME_MS") :], rc)
    return Flag(
        name="cached_result", detail=f"the last timed launch's output is wrong for its inputs: {evidence}"
    )


def failure_evidence(log: str, rc: int | None) -> str:
    """The first line of a log that says what failed (a mismatch, a CUDA error), else the exit status."""
    hit = next((ln.strip() for ln in log.splitlines() if _EVIDENCE.search(ln)), None)
    return hit[:160] if hit else f"exit status {rc}"


# ------------------------------------------------------------------ includes


#: Every file a source names to the preprocessor: ``#include "x"``, ``#include <x>``, and the operand of
#: ``__has_include`` (``#if __has_include("../reference.cu")``), also behind line continuations and
#: ``# include`` spacing.
_INCLUDE = re.compile(r'(?:#\s*include(?:_next)?|__has_include(?:_next)?\s*\()\s*["<]([^">\n]+)[">]')
#: Suffixes of code, not of an interface: including one brings its definitions in.
_SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".py", ".inl", ".o", ".so", ".a")


_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def included(source: str) -> list[str]:
    """The files a source names to the preprocessor, in order (comments left out, strings kept)."""
    joined = source.replace("\\\n", "")
    code = _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", joined)
    return [m.group(1).strip() for m in _INCLUDE.finditer(code)]


def include_flags(candidate: str, allowed_source: str, protected: Iterable[str]) -> list[Flag]:
    """``foreign_include`` for each file the candidate names to the preprocessor that brings in the task's
    reference or harness: a path outside the work dir (absolute, or through ``..``), a source file rather than a
    header, or a file named like the reference or a harness source (``protected``: base names), unless the
    broken start (``allowed_source``) names it too. ``__has_include`` counts: probing for the reference is
    how a candidate includes it only where it is installed."""
    allowed = set(included(allowed_source))
    names = {n.lower() for n in protected}
    found: list[str] = []
    for target in included(candidate):
        if target in allowed or target in found:
            continue
        base = target.replace("\\", "/").rsplit("/", 1)[-1].lower()
        outside = target.startswith(("/", "~")) or ".." in target.replace("\\", "/").split("/")
        if outside or base.endswith(_SOURCE_SUFFIXES) or base in names:
            found.append(target)
    if not found:
        return []
    shown = ", ".join(f'"{t}"' for t in found[:3]) + (f" (+{len(found) - 3} more)" if len(found) > 3 else "")
    return [
        Flag(
            name="foreign_include",
            detail=f"{shown} (the task's reference or harness, or code outside the work dir)",
        )
    ]
