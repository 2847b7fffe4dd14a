"""Where a batch's time went on its GPUs, from the run's stage log (RUN_DIR/stages.jsonl).

    python3 bench/stage_log_bench.py summary RUN_DIR [--json]
    python3 bench/stage_log_bench.py timeline RUN_DIR [--window S] [--json]

The batch logs every stage its placement gave (batch/placement.py): builds and ``prepare`` (a build slot for
what a timing needs) on CPU slots; ``run``, ``alone``, ``sanitize``, ``profile``, ``timing`` and
``timing_memory`` on a GPU, each with when it was asked for, granted and given back. From that alone:

- per stage kind: how many, their hold (median, sum) and their wait for the slot (median, max), and how many
  were never granted (the run was cut while they waited);
- per GPU, the run's span split by what held the GPU: a timing (or a run alone for its memory), a sanitizer or
  profiler run (with or without runs beside it), correctness runs only, nothing while a GPU stage waited
  (time the schedule lost), or nothing; the five add up to the span;
- how long some build waited for a slot (a new session starts only while none does);
- the timing stages' waits split the same way by what held their GPU while they waited (with one GPU, the
  GPU; with several, the one they were granted);
- per GPU, how many timing stages it held and the most sanitizer and profiler runs it ran at once (the pool
  runs at most one unless they are stopped for timing; with two GPUs or more, the first serves timing).

``timeline`` cuts the span into windows of S seconds (default 25) and gives, per GPU and window, the seconds
some stage of each kind held the GPU (the union of that kind's holds: six runs side by side for 2 s count 2 s),
the seconds nothing held it, how many stages of each kind waited for it at some time in the window (asked, not
yet granted) and the longest of those waits by the window's end. With several GPUs a stage counts on the GPU
it was granted; one never granted is in no window's count.

Times are the stage log's (wall clock of the machine that ran the batch), in seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# the bench beside it: one union of time spans for both
from release_lane_bench import _union

GPU_STAGES = ("run", "alone", "sanitize", "profile", "timing", "timing_memory")
EXCLUSIVE = ("timing", "timing_memory", "alone")
INSTRUMENTED = ("sanitize", "profile")
STATES = ("exclusive", "instrumented", "runs", "idle while stages waited", "idle")
"""What held a GPU, in this order; no name has a comma, as the summary joins them with commas."""


def read(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "stages.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path}: no stage log (a batch on the local toolchain writes one)")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line torn by a kill
    return out


def _state(held: dict[str, int]) -> str:
    if any(held[k] for k in EXCLUSIVE):
        return "exclusive"
    if any(held[k] for k in INSTRUMENTED):
        return "instrumented"
    if held["run"]:
        return "runs"
    return "idle"


def _span(entries: list[dict[str, Any]]) -> tuple[float, float]:
    """From the first stage asked to the last given back (or asked, for a line without an end)."""
    return min(e["asked"] for e in entries), max(e.get("ended", e["asked"]) for e in entries)


def _gpus(entries: list[dict[str, Any]]) -> list[str]:
    return sorted({str(e["gpu"]) for e in entries if e.get("gpu") is not None})


def _on(e: dict[str, Any], gpu: str, gpus: list[str]) -> bool:
    """Whether a stage counts on ``gpu``: the one it was granted, or the only one for a stage never granted."""
    return e.get("gpu", gpus[0] if len(gpus) == 1 else None) == gpu


def _timeline(
    entries: list[dict[str, Any]], gpu: str, start: float, end: float
) -> list[tuple[float, float, str]]:
    """(from, to, state) spans of ``gpu`` over the run from ``start`` to ``end``, with idle split by whether
    a GPU stage waited; before the first GPU stage is asked and after the last ends, the GPU is idle."""
    marks: list[tuple[float, int, str, str]] = []  # (time, +1/-1, what, kind: held or waiting)
    for e in entries:
        if e["stage"] not in GPU_STAGES:
            continue
        ended = e.get("ended", end)
        if "began" in e and e.get("gpu") == gpu:
            marks += [(e["began"], 1, e["stage"], "held"), (ended, -1, e["stage"], "held")]
        marks += [(e["asked"], 1, "", "waiting"), (e.get("began", ended), -1, "", "waiting")]
    marks.sort(key=lambda m: (m[0], m[1]))
    held: dict[str, int] = defaultdict(int)
    waiting, spans, last = 0, [], start

    def state() -> str:
        s = _state(held)
        return "idle while stages waited" if s == "idle" and waiting > 0 else s

    for t, step, what, kind in marks:
        if t > last:
            spans.append((last, t, state()))
        if kind == "held":
            held[what] += step
        else:
            waiting += step
        last = max(last, t)
    if end > last:
        spans.append((last, end, state()))
    return spans


def _overlap(spans: list[tuple[float, float, str]], a: float, b: float) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for x, y, state in spans:
        lo, hi = max(a, x), min(b, y)
        if hi > lo:
            out[state] += hi - lo
    return out


def summary(run_dir: Path) -> dict[str, Any]:
    entries = read(run_dir)
    if not entries:
        raise SystemExit(f"{run_dir}: the stage log is empty")
    start, end = _span(entries)
    kinds: dict[str, Any] = {}
    for stage in sorted({e["stage"] for e in entries}):
        these = [e for e in entries if e["stage"] == stage]
        got = [e for e in these if "began" in e]
        holds = [e["ended"] - e["began"] for e in got]
        waits = [e["began"] - e["asked"] for e in got]
        kinds[stage] = {
            "n": len(these),
            "never_granted": len(these) - len(got),
            "hold_median_s": round(statistics.median(holds), 3) if holds else None,
            "hold_sum_s": round(sum(holds), 1),
            "wait_median_s": round(statistics.median(waits), 3) if waits else None,
            "wait_max_s": round(max(waits), 1) if waits else None,
            "cached": sum(bool(e.get("cached")) for e in these) if stage == "build" else None,
        }
    gpus = _gpus(entries)
    per_gpu: dict[str, Any] = {}
    timing_waits: dict[str, float] = defaultdict(float)
    for gpu in gpus:
        spans = _timeline(entries, gpu, start, end)
        split = _overlap(spans, start, end)
        per_gpu[gpu] = {s: round(split.get(s, 0.0), 1) for s in STATES}
        for e in entries:
            if e["stage"] in ("timing", "timing_memory") and _on(e, gpu, gpus):
                for s, v in _overlap(spans, e["asked"], e.get("began", end)).items():
                    timing_waits[s] += v
    placed = {gpu: _placed([e for e in entries if "began" in e and e.get("gpu") == gpu], end) for gpu in gpus}
    # a session starts only while no build waits for a slot (batch/admission.py): how long one waited
    build_waits = [(e["asked"], e.get("began", end)) for e in entries if e["stage"] in ("build", "prepare")]
    waited = sum(b - a for a, b in _union(build_waits))
    return {
        "run": str(run_dir),
        "span_s": round(end - start, 1),
        "build_waiting_s": round(waited, 1),
        "stages": kinds,
        "gpus": per_gpu,
        "timing_waits_s": {s: round(v, 1) for s, v in timing_waits.items()},
        "placed": placed,
    }


def _placed(held: list[dict[str, Any]], end: float) -> dict[str, int]:
    """Of the stages granted one GPU: how many timing stages, and the most sanitizer and profiler runs at once
    (one ending as another begins at the same moment does not count as at once)."""
    marks = sorted(
        (t, step)
        for e in held
        if e["stage"] in INSTRUMENTED
        for t, step in ((e["began"], 1), (e.get("ended", end), -1))
    )
    now = most = 0
    for _t, step in marks:
        now += step
        most = max(most, now)
    timing = sum(e["stage"] in ("timing", "timing_memory") for e in held)
    return {"timing": timing, "instrumented_at_once": most}


def render(d: dict[str, Any]) -> str:
    lines = [f"{d['run']}: {d['span_s']} s from the first stage asked to the last given back"]
    lines.append("stage          n  never  hold med   hold sum   wait med   wait max")
    for stage, k in d["stages"].items():
        med = "-" if k["hold_median_s"] is None else f"{k['hold_median_s']:.2f} s"
        wmed = "-" if k["wait_median_s"] is None else f"{k['wait_median_s']:.2f} s"
        wmax = "-" if k["wait_max_s"] is None else f"{k['wait_max_s']:.1f} s"
        extra = f"  ({k['cached']} from the compile cache)" if k["cached"] else ""
        lines.append(
            f"{stage:<13}{k['n']:>3}{k['never_granted']:>7}{med:>10}{k['hold_sum_s']:>9.1f} s{wmed:>11}{wmax:>11}"
            + extra
        )
    lines.append(
        f"a build waited for a slot {d['build_waiting_s']:.1f} s of the {d['span_s']} s"
        " (no session starts meanwhile)"
    )
    for gpu, split in d["gpus"].items():
        parts = ", ".join(f"{s} {split[s]:.1f} s" for s in STATES if s in split)
        lines.append(f"GPU {gpu}: {parts}")
    for gpu, n in d["placed"].items():
        lines.append(
            f"GPU {gpu} held {n['timing']} timing stages and ran at most {n['instrumented_at_once']} sanitizer"
            " or profiler runs at once"
        )
    if d["timing_waits_s"]:
        parts = ", ".join(f"{s} {d['timing_waits_s'][s]:.1f} s" for s in STATES if s in d["timing_waits_s"])
        lines.append(f"timing stages waited behind: {parts}")
    return "\n".join(lines)


def timeline(run_dir: Path, window_s: float = 25.0) -> dict[str, Any]:
    """Per GPU and window of ``window_s`` seconds from the first stage asked: the seconds some stage of each
    GPU kind held the GPU, the seconds nothing did, and the stages of each kind that waited for it."""
    if not window_s > 0:
        raise SystemExit(f"--window {window_s:g}: a window is a positive number of seconds")
    entries = read(run_dir)
    if not entries:
        raise SystemExit(f"{run_dir}: the stage log is empty")
    start, end = _span(entries)
    gpus = _gpus(entries)
    kinds = [k for k in GPU_STAGES if any(e["stage"] == k for e in entries)]
    per_gpu: dict[str, list[dict[str, Any]]] = {}
    for gpu in gpus:
        mine = [e for e in entries if e["stage"] in kinds and _on(e, gpu, gpus)]
        held = {
            k: _union([(e["began"], e.get("ended", end)) for e in mine if e["stage"] == k and "began" in e])
            for k in kinds
        }
        busy = _union([span for spans in held.values() for span in spans])
        tagged = [(x, y, k) for k, spans in [*held.items(), ("", busy)] for x, y in spans]  # "": any kind
        # a wait: from asked to granted (or to its end, never granted); none when it was granted at once
        waits = [(e["stage"], e["asked"], e.get("began", e.get("ended", end))) for e in mine]
        rows = []
        for i in range(math.ceil((end - start) / window_s)):
            a, b = start + i * window_s, min(start + (i + 1) * window_s, end)
            there = [(k, x, y) for k, x, y in waits if y > x and x < b and y > a]
            got = _overlap(tagged, a, b)
            rows.append(
                {
                    "from_s": round(a - start, 1),
                    "to_s": round(b - start, 1),
                    "held_s": {k: round(got.get(k, 0.0), 1) for k in kinds},
                    "idle_s": round(b - a - got.get("", 0.0), 1),
                    "waiting": {k: sum(1 for w in there if w[0] == k) for k in kinds},
                    "longest_wait_s": round(max((min(y, b) - x for _, x, y in there), default=0.0), 1),
                }
            )
        per_gpu[gpu] = rows
    return {
        "run": str(run_dir),
        "span_s": round(end - start, 1),
        "window_s": window_s,
        "kinds": kinds,
        "gpus": per_gpu,
    }


def render_timeline(d: dict[str, Any]) -> str:
    kinds = d["kinds"]
    lines = [
        f"{d['run']}: {d['span_s']} s from the first stage asked, in windows of {d['window_s']:g} s",
        "held: seconds some stage of the kind held the GPU; waiting: stages of the kind that waited for it in the"
        " window; longest: the longest of those waits by the window's end",
    ]
    width = max(8, *(len(k) + 2 for k in kinds))
    for gpu, rows in d["gpus"].items():
        lines.append(f"GPU {gpu}")
        lines.append(
            f"{'window s':<12}"
            + "".join(f"{k:>{width}}" for k in [*kinds, "idle"])
            + "  | waiting"
            + "".join(f"{k:>{width}}" for k in kinds)
            + f"{'longest':>{width + 2}}"
        )
        for r in rows:
            lines.append(
                f"{r['from_s']:g}-{r['to_s']:g}".ljust(12)
                + "".join(f"{r['held_s'][k]:>{width}.1f}" for k in kinds)
                + f"{r['idle_s']:>{width}.1f}"
                + "  |        "
                + "".join(f"{r['waiting'][k]:>{width}}" for k in kinds)
                + f"{r['longest_wait_s']:>{width}.1f} s"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary", help="where the run's GPU time went")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--json", action="store_true")
    t = sub.add_parser("timeline", help="what held each GPU and what waited for it, window by window")
    t.add_argument("run_dir", type=Path)
    t.add_argument("--window", type=float, default=25.0, help="seconds per window (default 25)")
    t.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.cmd == "timeline":
        d = timeline(args.run_dir, args.window)
        print(json.dumps(d, indent=1) if args.json else render_timeline(d))
        return 0
    d = summary(args.run_dir)
    print(json.dumps(d, indent=1) if args.json else render(d))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
