"""Where the time of a batch went, from its session files alone: stages, timing waits, quiet stretches.

    python3 bench/batch_timeline.py RUN_DIR [--segment last|all] [--json] [--startlogs DIR]

Every stage event carries the time it ended and, for builds, runs and sanitizer runs, its duration; a timing
stage carries its own wall time (``wall_s``). From those this prints, for the chosen stretch of the run:
- sessions that ended in it, and when (seconds from the stretch's first event);
- the count and summed duration of each stage kind (build, run, sanitize) and of the timing stages;
- how long each correct attempt waited for its timing stage: the timing event's time minus its wall time
  minus the end of the attempt's last run or sanitizer run;
- the correct attempts still waiting for their timing stage when the stretch ended (a cut run), and since
  when;
- what the timing stages waited behind: the runs and sanitizer runs of 30 s or more that were on a GPU
  while some correct attempt waited to be timed (the longest five);
- the longest stretch in which no stage of any session ended, and which sessions were in flight then;
- with ``--startlogs DIR`` (the machine's kept broken-start checks), the checks made in the stretch: each
  session's check of its broken start is a whole attempt that no session file records, so its stages are
  counted from the check's kept file (checks kept before the files said what they cost are left out);
- with ``--startlogs DIR`` too, the checks that began in the stretch and were cut in flight (their process
  ended before they did, so they are lost): the stages each had finished, from its in-flight note;
- an attempt that resubmits the broken start is judged by that check, not run again: its stages (marked
  ``reused``) are left out of the stage counts and waits above, and counted apart.

``--segment last`` (the default) keeps only the events since the run was last started or resumed (run.json's
``created`` and ``resumed`` times): a run resumed on another machine is a new stretch, and the time between
machines is not the batch's. The numbers are only as good as the clock of the machine that wrote them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beavertui.batch.rundir import stamp_seconds  # noqa: E402
from beavertui.engine.session.events import (  # noqa: E402
    Built,
    Ran,
    Sanitized,
    SessionEnd,
    SessionHeader,
    Timed,
    TimingResult,
    Verdict,
)

#: A run or sanitizer run at least this long, on a GPU while a correct attempt waits to be timed, is named as
#: what the timing waited behind (seconds).
LONG_S = 30.0
from beavertui.engine.session.store import read_session  # noqa: E402


def events_of(run: Path) -> list[tuple[float, str, Any]]:
    out: list[tuple[float, str, Any]] = []
    for f in sorted(run.rglob("*.jsonl")):
        header, events, _problem = read_session(f)
        if header is None:
            continue
        name = header.task.id
        out.append((header.t, name, header))
        out.extend((e.t, name, e) for e in events)
    out.sort(key=lambda x: x[0])
    return out


def last_start(run: Path) -> float | None:
    """When the run was last started or resumed (epoch seconds), from its run.json; None if unknown."""
    try:
        doc = json.loads((run / "run.json").read_text(encoding="utf-8"))
        stamps = [doc.get("created"), *(doc.get("resumed") or [])]
        got = [t for t in map(stamp_seconds, stamps) if t is not None]
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return max(got) if got else None


def segment(evs: list[tuple[float, str, Any]], since: float | None) -> list[tuple[float, str, Any]]:
    return evs if since is None else [e for e in evs if e[0] >= since]


def _docs(folder: Path, pattern: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(folder.rglob(pattern)):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def start_checks(folder: Path, since: float | None, until: float | None) -> list[dict[str, Any]]:
    """The kept broken-start checks under ``folder`` (a startlogs/ folder) made between ``since`` and
    ``until`` that say what they cost (``began`` and ``stages``; checks kept by older versions do not)."""
    return [
        doc
        for doc in _docs(folder, "*.json")
        if isinstance(doc.get("made"), (int, float))
        and not (since is not None and doc["made"] < since)
        and not (until is not None and doc["made"] > until)
        and isinstance(doc.get("began"), (int, float))
        and isinstance(doc.get("stages"), list)
    ]


def cut_checks(folder: Path, since: float | None) -> list[dict[str, Any]]:
    """The checks under ``folder`` that began after ``since`` and were still under way when their process
    ended (their in-flight note was never removed): lost, since a check is kept only once it ends."""
    return [
        doc
        for doc in _docs(folder, "*.inflight.json")
        if doc.get("in_flight")
        and isinstance(doc.get("began"), (int, float))
        and (since is None or doc["began"] >= since)
    ]


def analyse(
    evs: list[tuple[float, str, Any]],
    checks: list[dict[str, Any]] | None = None,
    cut: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if not evs:
        return {"events": 0}
    t0 = evs[0][0]
    stages: dict[str, list[float]] = {"build": [], "run": [], "sanitize": []}
    timing_wall: list[float] = []
    waits: list[tuple[float, str]] = []
    last_run_end: dict[tuple[str, int], float] = {}
    ended: list[tuple[float, str]] = []
    started: dict[str, float] = {}
    stage_ends: list[tuple[float, str]] = []
    windows: list[tuple[float, float]] = []  # (from, to) of every wait for a timing stage
    long_runs: list[tuple[float, float, str, str]] = []  # (start, end, task, stage) of runs of LONG_S or more
    passed: dict[tuple[str, int], float] = {}  # a passing run's end, until its attempt is timed or judged
    reused: set[tuple[str, int]] = set()  # attempts judged by their start check (its stages ran then)
    paused: list[float] = []  # seconds each run stopped while its GPU was held alone was stopped (paused_s)
    builds_paused: list[float] = []  # seconds each build was stopped while a GPU was held for timing
    alone: list[float] = []  # seconds of each run made again alone after running out of memory beside others
    timed_again = 0  # timing stages made again for their memory (their note says so)
    models_built: list[float] = []  # kernelbench timing: seconds building models with the GPU held
    stopping = 0  # timing stages that stopped the runs on their GPU (their note says so)
    stopping_builds = 0  # timing stages that stopped builds (--builds-in-timing)
    over_reruns = 0  # timing stages that stopped a run made again alone for its memory
    for t, name, e in evs:
        if isinstance(e, SessionHeader):
            started.setdefault(name, t)
            continue
        started.setdefault(name, t)
        if isinstance(e, (Built, Ran, Sanitized, Timed)) and e.result.reused:
            reused.add((name, e.iteration))
            continue
        if isinstance(e, (Built, Ran, Sanitized)):
            stages[e.kind if e.kind != "sanitize" else "sanitize"].append(e.result.duration_s)
            stage_ends.append((t, name))
            if e.result.paused_s:
                (builds_paused if isinstance(e, Built) else paused).append(e.result.paused_s)
            if isinstance(e, (Ran, Sanitized)):
                last_run_end[(name, e.iteration)] = max(t, last_run_end.get((name, e.iteration), t))
                took = e.result.duration_s or 0.0
                if took >= LONG_S:
                    long_runs.append((t - took, t, name, e.kind))
            if isinstance(e, Ran) and e.result.rerun_alone:
                alone.append(e.result.duration_s or 0.0)
            if isinstance(e, Ran) and e.result.rc == 0 and not e.result.timed_out:
                passed[(name, e.iteration)] = t
        elif isinstance(e, Timed):
            wall = e.result.wall_s or 0.0
            timing_wall.append(wall)
            r = e.result
            stopping += r.runs_stopped > 0 and not r.rerun_stopped
            stopping_builds += r.builds_stopped > 0
            over_reruns += r.rerun_stopped
            timed_again += r.timed_again is not None
            built = r.models_built_held_s
            if built is not None:
                models_built.append(built)
            stage_ends.append((t, name))
            ran = last_run_end.get((name, e.iteration))
            passed.pop((name, e.iteration), None)
            if ran is not None:
                waits.append((max(0.0, t - wall - ran), name))
                windows.append((ran, t - wall))
        elif isinstance(e, Verdict):
            passed.pop((name, e.iteration), None)  # judged without a timing stage (none was needed)
            if (name, e.iteration) in reused:
                stage_ends.append((t, name))
        elif isinstance(e, SessionEnd):
            ended.append((t - t0, name))
    t_end = evs[-1][0]
    still = sorted(((t_end - t, name, t - t0) for (name, _it), t in passed.items()), reverse=True)
    windows += [(t, t_end) for (_n, _i), t in passed.items()]
    behind = sorted(
        {
            (round(b - a, 1), name, kind, round(a - t0, 1), round(b - t0, 1))
            for a, b, name, kind in long_runs
            if any(a < w1 and b > w0 for w0, w1 in windows)
        },
        reverse=True,
    )[:5]
    check_stages: dict[str, list[float]] = {"build": [], "run": [], "sanitize": [], "timing": []}
    check_walls: list[tuple[float, str, float]] = []
    for c in checks or []:
        for st in c["stages"]:
            if isinstance(st, dict) and st.get("stage") in check_stages:
                check_stages[str(st["stage"])].append(float(st.get("duration_s") or 0.0))
        check_walls.append(
            (float(c["made"]) - float(c["began"]), str(c.get("task", "?")), float(c["began"]) - t0)
        )
        for ev in c.get("events") or []:
            result = (ev.get("result") or {}) if isinstance(ev, dict) else {}
            got = result.get("paused_s")
            if got:
                (builds_paused if result.get("stage") == "build" else paused).append(float(got))
            if result.get("rerun_alone"):
                alone.append(float(result.get("duration_s") or 0.0))
            timed = isinstance(ev, dict) and ev.get("kind") == "timing"
            built = timing_of(result).models_built_held_s if timed else None
            if built is not None:
                models_built.append(built)
        stage_ends.append((float(c["made"]), str(c.get("task", "?"))))
    cut_stages: dict[str, list[float]] = {"build": [], "run": [], "sanitize": [], "timing": []}
    for c in cut or []:
        for st in c.get("stages") or []:
            if isinstance(st, dict) and st.get("stage") in cut_stages:
                cut_stages[str(st["stage"])].append(float(st.get("duration_s") or 0.0))
    stage_ends.sort()
    quiet = (0.0, t0, t0)
    ends = [t0] + [t for t, _ in stage_ends]
    for a, b in itertools.pairwise(ends):
        if b - a > quiet[0]:
            quiet = (b - a, a, b)
    finished = {n for _, n in ended}
    ended_by_then = {n for t, n in ended if t + t0 <= quiet[1]}
    in_flight = [n for n, s in started.items() if s <= quiet[1] and n not in ended_by_then]

    def summary(xs: list[float]) -> dict[str, float | int]:
        return {
            "count": len(xs),
            "sum_s": round(sum(xs), 1),
            "median_s": round(statistics.median(xs), 2) if xs else 0.0,
        }

    return {
        "events": len(evs),
        "span_s": round(evs[-1][0] - t0, 1),
        "sessions_seen": len(started),
        "sessions_ended": len(finished),
        "ended_at_s": [round(t, 1) for t, _ in ended],
        "stages": {k: summary(v) for k, v in stages.items()},
        "timing": summary(timing_wall),
        "reused_attempts": len(reused),
        "paused": {**summary(paused), "timing_stages_that_stopped_runs": stopping},
        "builds_paused": {**summary(builds_paused), "timing_stages_that_stopped_builds": stopping_builds},
        "reruns_alone": summary(alone),
        "timed_again_for_memory": timed_again,
        "timing_over_reruns_alone": over_reruns,
        "models_built_held": {
            **summary(models_built),
            "max_s": round(max(models_built, default=0.0), 1),
            "over_2_s": sum(x > 2.0 for x in models_built),
        },
        "timing_wait": {
            **summary([w for w, _ in waits]),
            "max_s": round(max((w for w, _ in waits), default=0.0), 1),
            "longest": sorted(waits, reverse=True)[:5],
        },
        "timing_still_waiting": {
            "count": len(still),
            "longest": [
                {"task": n, "waiting_s": round(w, 1), "since_s": round(f, 1)} for w, n, f in still[:5]
            ],
        },
        "timing_behind": [
            {"task": n, "stage": k, "duration_s": d, "from_s": a, "to_s": b} for d, n, k, a, b in behind
        ],
        "start_checks": {
            "count": len(check_walls),
            "wall_sum_s": round(sum(w for w, _, _ in check_walls), 1),
            "stages": {k: summary(v) for k, v in check_stages.items()},
            "longest": [
                {"task": n, "wall_s": round(w, 1), "began_s": round(b, 1)}
                for w, n, b in sorted(check_walls, reverse=True)[:5]
            ],
        },
        "start_checks_cut": {
            "count": len(cut or []),
            "stages": {k: summary(v) for k, v in cut_stages.items()},
            "earliest": [
                {
                    "task": str(c.get("task", "?")),
                    "began_s": round(float(c["began"]) - t0, 1),
                    "last_stage_end_s": round(float(c.get("updated") or c["began"]) - t0, 1),
                    "stages_done": len(c.get("stages") or []),
                }
                for c in sorted(cut or [], key=lambda c: float(c["began"]))[:5]
            ],
        },
        "quiet": {
            "longest_s": round(quiet[0], 1),
            "from_s": round(quiet[1] - t0, 1),
            "to_s": round(quiet[2] - t0, 1),
            "sessions_in_flight": len(in_flight),
        },
    }


def timing_of(result: dict[str, Any]) -> TimingResult:
    """A kept check's timing result (its JSON object); one kept before timing facts were fields (version 1
    of the session format: no ``driver_phases_s``) is read as a version-1 session's is."""
    version = 2 if "driver_phases_s" in result else 1
    return TimingResult.model_validate(result, context={"format_version": version})


def _stage_counts(stages: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{k} {v['count']} ({v['sum_s']} s)" for k, v in stages.items() if v["count"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--segment", choices=("last", "all"), default="last")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--startlogs", type=Path, default=None, metavar="DIR",
        help="the kept broken-start checks of the machine (a startlogs/ folder): each session's check of its "
        "broken start is not an attempt and is in no session file; its stages are counted from here",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if not args.run.is_dir():
        print(f"batch_timeline: {args.run}: not a folder", file=sys.stderr)
        return 2
    since = last_start(args.run) if args.segment == "last" else None
    evs = segment(events_of(args.run), since)
    checks = start_checks(args.startlogs, since, evs[-1][0] if evs else None) if args.startlogs else None
    cut = cut_checks(args.startlogs, since) if args.startlogs else None
    doc = analyse(evs, checks, cut)
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    if not doc["events"]:
        print("no session events")
        return 1
    s, q, w = doc["stages"], doc["quiet"], doc["timing_wait"]
    print(f"stretch: {doc['span_s']} s (wall clock of the machine), {doc['sessions_seen']} sessions seen, "
          f"{doc['sessions_ended']} ended")  # fmt: skip
    print(f"ended at (s): {', '.join(str(t) for t in doc['ended_at_s']) or '-'}")
    for k in ("build", "run", "sanitize"):
        print(f"{k:9} {s[k]['count']:4} stages, {s[k]['sum_s']:7.1f} s summed, median {s[k]['median_s']} s")
    t = doc["timing"]
    print(
        f"{'timing':9} {t['count']:4} stages, {t['sum_s']:7.1f} s summed, median {t['median_s']} s (wall_s)"
    )
    print(f"wait for timing: median {w['median_s']} s, max {w['max_s']} s over {w['count']} timed attempts")
    p = doc["paused"]
    if p["count"] or p["timing_stages_that_stopped_runs"]:
        print(f"runs stopped (SIGSTOP) while their GPU was held alone for a timing stage (or, in batches made "
              f"before runs made again alone stopped stopping them, for such a run; start checks' included): {p['count']}, "
              f"{p['sum_s']} s stopped summed; timing stages that stopped runs: "
              f"{p['timing_stages_that_stopped_runs']}")  # fmt: skip
    ra = doc["reruns_alone"]
    if ra["count"]:
        print(f"runs made again alone, after running out of GPU memory beside other runs (start checks' included): "
              f"{ra['count']}, {ra['sum_s']} s summed")  # fmt: skip
    if doc.get("timing_over_reruns_alone"):
        print(f"timing stages that stopped a run made again alone for its memory, rather than wait for its end: "
              f"{doc['timing_over_reruns_alone']}")  # fmt: skip
    if doc["timed_again_for_memory"]:
        print(f"timing stages made again holding their GPU's memory (out of memory beside the runs stopped for "
              f"them): {doc['timed_again_for_memory']}")  # fmt: skip
    mb = doc["models_built_held"]
    if mb["count"]:
        print(f"kernelbench timing stages, models built with the GPU held (a candidate's extension compiled there "
              f"when its pre-build did not serve): median {mb['median_s']} s, max {mb['max_s']} s, "
              f"over 2 s in {mb['over_2_s']} of {mb['count']}")  # fmt: skip
    bp = doc["builds_paused"]
    if bp["count"] or bp["timing_stages_that_stopped_builds"]:
        print(f"builds stopped (SIGSTOP) while a GPU was held alone for timing: {bp['count']}, {bp['sum_s']} s "
              f"stopped summed; timing stages that stopped builds: {bp['timing_stages_that_stopped_builds']}")  # fmt: skip
    if doc["reused_attempts"]:
        print(f"attempts judged by their start check (the broken start resubmitted; not counted above, their "
              f"stages ran in the check): {doc['reused_attempts']}")  # fmt: skip
    still = doc["timing_still_waiting"]
    if still["count"]:
        longest = ", ".join(f"{x['task']} {x['waiting_s']} s" for x in still["longest"])
        print(
            f"still waiting for timing when the stretch ended: {still['count']} correct attempts ({longest})"
        )
    for x in doc["timing_behind"]:
        print(
            f"  behind: {x['task']} {x['stage']} {x['duration_s']} s (from {x['from_s']} s to {x['to_s']} s)"
        )
    if args.startlogs:
        c = doc["start_checks"]
        parts = _stage_counts(c["stages"])
        print(f"start checks: {c['count']} made in the stretch, {c['wall_sum_s']} s of wall time summed"
              f"{'; stages: ' + parts if parts else ''}")  # fmt: skip
        for x in c["longest"]:
            print(f"  {x['task']}: {x['wall_s']} s from {x['began_s']} s")
        c = doc["start_checks_cut"]
        if c["count"]:
            parts = _stage_counts(c["stages"])
            print(f"start checks cut in flight (lost: a check is kept only once it ends): {c['count']}"
                  f"{'; their finished stages: ' + parts if parts else ''}")  # fmt: skip
            for x in c["earliest"]:
                print(f"  {x['task']}: from {x['began_s']} s, {x['stages_done']} stages done, the last "
                      f"ending at {x['last_stage_end_s']} s")  # fmt: skip
    print(f"longest stretch with no stage ending: {q['longest_s']} s (from {q['from_s']} s to {q['to_s']} s), "
          f"{q['sessions_in_flight']} sessions in flight")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
