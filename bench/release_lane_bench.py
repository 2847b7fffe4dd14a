"""The release batch with its timing inline against the timing lane: what each session waited for.

    python3 bench/release_lane_bench.py summary RUN_DIR [RUN_DIR ...] [--json]

For each run directory (a batch's sessions, e.g. the two of scripts/gpu-release-lane.sh: ``inline``, made
with ``--inline-timing``, and ``lane``), read from its session files alone:

- per session, when its loop ended and when it was final (its last end: with the lane, after its timing was
  appended), in seconds since the run's first session began; how many were final within 300 s;
- the longest stretch in which some correct attempt waited for its timing while no timing stage ran: an
  attempt waits from the end of its correctness run (inline) or its pending verdict (lane) to the start of
  its timing stage (the Timed event's time less its wall time); the stretches are the waiting time not
  covered by any timing stage; an attempt still waiting when the files end waits until the run's last event
  (of any session);
- timing stages: how many, their median wall time.

The numbers are the session files' own time stamps (wall clock of the machine that ran the batch).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beavertui.engine.session.events import Ran, SessionEnd, Timed, Verdict  # noqa: E402
from beavertui.engine.session.store import read_session  # noqa: E402

#: The issue's target: every session final within this many seconds of the batch's start.
TARGET_S = 300.0


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif b > a:
            out.append((a, b))
    return out


def _minus(spans: list[tuple[float, float]], cover: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of ``spans`` (disjoint, sorted) not covered by ``cover`` (disjoint, sorted)."""
    out = []
    for a, b in spans:
        start = a
        for c, d in cover:
            if d <= start or c >= b:
                continue
            if c > start:
                out.append((start, c))
            start = max(start, d)
        if start < b:
            out.append((start, b))
    return out


def summary(run: Path, scale: float = 1.0) -> dict[str, object]:
    """What one run directory's session files say (see the module's docstring); every duration divided by
    ``scale`` (bench/batch_bench.py: a simulation's time scale)."""
    sessions = []
    waits: list[tuple[float, float]] = []
    stages: list[tuple[float, float]] = []
    open_waits: list[float] = []
    """Correct attempts still waiting for their timing when the run's files end."""
    last_event = 0.0
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, _problem = read_session(path)
        if header is None or header.t is None:
            continue
        ends = [e for e in events if isinstance(e, SessionEnd)]
        ready: dict[int, float] = {}
        for e in events:
            t = e.t
            if t is None:
                continue
            it = getattr(e, "iteration", None)
            if isinstance(e, Ran) and it is not None and e.result.rc == 0:
                ready[it] = t  # the correctness run ended: an inline timing may start from here
            elif isinstance(e, Verdict) and e.timing_pending and it is not None:
                ready[it] = t
            elif isinstance(e, Timed) and it is not None:
                began = t - (e.result.wall_s or 0.0)
                stages.append((began, t))
                if it in ready and e.result.reused is None:
                    waits.append((ready.pop(it), began))
        for it, t in ready.items():  # correct, never timed in this run: it waits to the run's last event
            verdicts = [e for e in events if isinstance(e, Verdict) and e.iteration == it]
            if verdicts and verdicts[-1].timing_pending:
                open_waits.append(t)
        last_event = max([last_event, *(e.t for e in events if e.t is not None)])
        sessions.append(
            {
                "session": str(path.relative_to(run)),
                "started": header.t,
                "loop_end": ends[0].t if ends else None,
                "final": ends[-1].t if ends and not ends[-1].timing_pending else None,
            }
        )
    if not sessions:
        return {"run": str(run), "sessions": 0}
    t0 = min(float(s["started"]) for s in sessions)  # type: ignore[arg-type]
    finals = sorted((float(s["final"]) - t0) / scale for s in sessions if s["final"] is not None)  # type: ignore[arg-type]
    loops = sorted((float(s["loop_end"]) - t0) / scale for s in sessions if s["loop_end"] is not None)  # type: ignore[arg-type]
    waits += [(t, last_event) for t in open_waits]  # they wait until the run's last event, in any session
    idle = _minus(_union(waits), _union(stages))
    longest = max(idle, key=lambda ab: ab[1] - ab[0], default=None)
    walls = [(b - a) / scale for a, b in stages]
    return {
        "run": str(run),
        "sessions": len(sessions),
        "final": len(finals),
        "final_within_300s": sum(1 for f in finals if f <= TARGET_S),
        "last_final_s": round(finals[-1], 1) if finals else None,
        "loop_end_s": {
            "median": round(statistics.median(loops), 1) if loops else None,
            "max": round(loops[-1], 1) if loops else None,
        },
        "final_s": [round(f, 1) for f in finals],
        "longest_wait_without_timing_s": round((longest[1] - longest[0]) / scale, 1) if longest else 0.0,
        "longest_wait_at_s": round((longest[0] - t0) / scale, 1) if longest else None,
        "timing_stages": len(stages),
        "timing_stage_median_s": round(statistics.median(walls), 2) if walls else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("summary",))
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [summary(r) for r in a.runs]
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(
            f"{r['run']}: {r.get('final', 0)}/{r['sessions']} sessions final, {r.get('final_within_300s', 0)} "
            f"within {TARGET_S:g} s (last at {r.get('last_final_s')} s; loops ended by {r.get('loop_end_s')}); "
            f"longest wait for timing with no timing stage running {r.get('longest_wait_without_timing_s')} s; "
            f"{r.get('timing_stages')} timing stages, median {r.get('timing_stage_median_s')} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
