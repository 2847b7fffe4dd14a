"""bench/timing_floor_bench.py summary over the H200 runs recorded in docs/data: the 40-task ratio is claimed
only when finished naive pieces cover the scheduled run's tasks; until then the lower bound they give. Each
finished scheduled run gets its own ratio against the same naive pieces; bench/batch_timeline.py over the
session files of the two finished scheduled runs gives the waits and stops docs/lab/h200-2026-12-02.md quotes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli_in_process import run_script

ROOT = Path(__file__).resolve().parents[2]
#: the scheduled run and naive pieces 1/8 (tasks 1-5) and 6-28 of 40; the last folder holds pieces 29-40
DATA = [ROOT / "docs/data/h200-2026-12-02/timing-bench", ROOT / "docs/data/h200-2026-12-03/timing-bench"]
REST = ROOT / "docs/data/h200-2026-12-03b/timing-bench"
#: the scheduled run again, after the idle wait after a stop became 5 s (30 s with a sanitizer run stopped)
AGAIN = ROOT / "docs/data/h200-2026-12-04/timing-bench"
#: the same with --builds-in-timing stop
BUILDS_STOP = ROOT / "docs/data/h200-2026-12-04/timing-bench-builds-stop"
#: the same batch with sanitizer runs waited for, not stopped, for timing (--pause-for-timing runs, the default
#: since the sixth session of 2026-12-04; its result predates the field that records it)
RUNS_RULE = ROOT / "docs/data/h200-2026-12-04b/timing-bench-runs-rule"


def finished(dirs: list[Path]) -> tuple[dict, list[dict]]:  # type: ignore[type-arg]
    batches = [json.loads(p.read_text()) for d in dirs for p in d.glob("batch-*.json")]
    scheduled = next(
        b for b in batches if b["mode"] == "scheduled" and not b["cut_by_budget"] and b["rc"] == 0
    )
    naive = [b for b in batches if b["mode"] == "naive" and not b["cut_by_budget"] and b["rc"] == 0]
    return scheduled, naive


def summary(tmp_path: Path, *dirs: Path, process: bool = False) -> tuple[str, dict]:  # type: ignore[type-arg]
    """bench/timing_floor_bench.py summary in this process, or with ``process`` as ``python3 SCRIPT``."""
    out = tmp_path / "summary.json"
    argv = ["summary", "--json", str(out), *map(str, dirs)]
    if process:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench/timing_floor_bench.py"), *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )
    else:
        proc = run_script(ROOT / "bench/timing_floor_bench.py", *argv)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


def _the_recorded_pieces_give_a_lower_bound_and_no_ratio(tmp_path: Path) -> None:
    text, got = summary(tmp_path, *DATA)
    scheduled, naive = finished(DATA)
    tasks = {t for b in naive for t in b["tasks"]}
    assert len(tasks) < len(scheduled["tasks"])  # not covered yet: no ratio may be claimed
    (ratio,) = [r for r in got["ratios"] if r.get("scheduled_s") == scheduled["wall_s"]]
    assert "speedup" not in ratio and ratio["naive_tasks_run"] == len(tasks)
    # the naive side so far: the pieces' session walls, each finished piece once
    assert ratio["naive_s_so_far"] == round(sum(b["session_wall_s_sum"] for b in naive), 1)
    assert ratio["at_least"] == round(ratio["naive_s_so_far"] / scheduled["wall_s"], 2)
    assert f"at least {ratio['at_least']}x" in text and "not claimed" in text
    # the cut scheduled run is named as such, never as a side of a ratio
    assert "that run was cut or failed" in text
    assert not (DATA[0] / "summary.json").exists()  # nothing is written into the data folders


def _all_recorded_pieces_cover_the_40_tasks_and_give_the_ratio(tmp_path: Path) -> None:
    text, got = summary(tmp_path, *DATA, REST)
    scheduled, naive = finished([*DATA, REST])
    # every task of the scheduled run once, each piece finished with its sessions passed
    assert sorted(t for b in naive for t in b["tasks"]) == sorted(scheduled["tasks"])
    assert all(b["summary"]["passed"] == len(b["tasks"]) for b in naive)
    (ratio,) = [r for r in got["ratios"] if r.get("scheduled_s") == scheduled["wall_s"]]
    naive_s = round(sum(b["session_wall_s_sum"] for b in naive), 1)
    assert ratio["naive_s"] == naive_s and ratio["scheduled_s"] == scheduled["wall_s"]
    assert ratio["speedup"] == round(naive_s / scheduled["wall_s"], 2)
    assert ratio["speedup"] >= 3.0  # the target, on the recorded H200 data
    assert f"{naive_s} s / {scheduled['wall_s']} s = **{ratio['speedup']:.2f}x**" in text
    assert "at least" not in text  # a whole cover gives the ratio, not a bound
    assert (
        "| ratio for the scheduled run (builds going on during timing) of 539.0 s | not claimed: that run was cut or failed"
        in text
    )


def test_a_cut_naive_piece_is_not_counted(tmp_path: Path) -> None:
    _, got = summary(tmp_path, DATA[0], process=True)  # slice 1/8 finished, slice 2/8 cut by its budget
    (ratio,) = [r for r in got["ratios"] if "naive_tasks_run" in r]
    assert ratio["naive_tasks_run"] == 5


def test_the_recorded_stage_runs_are_summed_up_from_their_tasks_and_failures_are_named(
    tmp_path: Path,
) -> None:
    import statistics

    runs = ROOT / "docs/data/h200-2026-12-01"
    text, got = summary(tmp_path, runs / "run11", runs / "run13")
    for name in ("run11", "run13"):
        data = json.loads((runs / name / "stage.json").read_text())
        walls = [r["wall_s"] for r in data["tasks"].values() if "speedup" in r]
        assert f"median {round(statistics.median(walls), 3)} s, max {max(walls)} s" in text
    # run 11's old-way timings all failed: said so, never printed as a time
    assert "None s" not in text
    assert "| flashattn_v2_00: before / after | not measured (CandidateTimingFailed" in text
    assert "| flashattn_v2_00: before / after | 2.854 s / " in text  # run 13's, measured
    assert len(got["stage"]) == 2


def _each_finished_scheduled_run_gets_its_ratio_against_the_same_naive_pieces(tmp_path: Path) -> None:
    text, got = summary(tmp_path, *DATA, REST, AGAIN)
    again = json.loads((AGAIN / "batch-scheduled.json").read_text())
    assert again["rc"] == 0 and not again["cut_by_budget"] and again["side_budget_ms"] == 0.0
    assert again["summary"]["passed"] == 40 and again["attempts"] == 200 and again["timing_stages"] == 107
    assert again["wall_s"] == 465.9 and again["summary"]["gpu_busy_fraction"] == {"0": 0.982}
    by_wall = {r["scheduled_s"]: r for r in got["ratios"]}
    assert sorted(by_wall) == [465.9, 528.9]  # the cut run of 539.0 s gets none
    assert {r["naive_s"] for r in by_wall.values()} == {2807.8}
    assert {r["naive_process_walls_s"] for r in by_wall.values()} == {2853.4}
    assert (by_wall[528.9]["speedup"], by_wall[465.9]["speedup"]) == (5.31, 6.03)
    assert [round(by_wall[w]["naive_process_walls_s"] / w, 2) for w in (465.9, 528.9)] == [6.12, 5.39]
    assert "2807.8 s / 465.9 s = **6.03x**" in text and "2807.8 s / 528.9 s = **5.31x**" in text
    assert (
        "| ratio for the scheduled run (builds going on during timing) of 539.0 s | not claimed: that run was cut or failed"
        in text
    )


def _timeline(tmp_path: Path, folder: Path, name: str = "scheduled") -> tuple[dict, list[dict]]:  # type: ignore[type-arg]
    """batch_timeline's analysis of a recorded scheduled run, and its session files' events (as dicts)."""
    import tarfile

    sys.path.insert(0, str(ROOT / "bench"))
    import batch_timeline as bt

    out = tmp_path / folder.parent.name / folder.name
    with tarfile.open(folder / f"sessions-{name}.tar.gz") as tar:
        tar.extractall(out, filter="data")
    run = out / "sessions" / name
    evs = bt.segment(bt.events_of(run), bt.last_start(run))
    doc = bt.analyse(evs)
    events = [json.loads(ln) for f in sorted(run.rglob("*.jsonl")) for ln in f.read_text().splitlines()]
    for e in events:
        e["t"] -= evs[0][0]  # seconds from the run's first event, as the timeline counts them
    return doc, events


def _paused(doc: dict) -> tuple[int, float, int]:  # type: ignore[type-arg]
    """A timeline's runs stopped for timing: how many, their seconds stopped, the timing stages that did it."""
    p = doc["paused"]
    return p["count"], p["sum_s"], p["timing_stages_that_stopped_runs"]


def _the_waits_and_stops_of_the_two_scheduled_runs(tmp_path: Path) -> None:
    """The timing waits of the run with the 5 s idle wait against the run before it, and its stops: the
    ones that idled the GPU did so within 0.7 s; a stop that did not (a hung run among those stopped) held
    its runs 5 s when no sanitizer run was among them, 30 s when one was."""
    import re

    new, events = _timeline(tmp_path, AGAIN)
    old, _ = _timeline(tmp_path, DATA[0])
    assert (new["span_s"], old["span_s"]) == (464.5, 527.4)
    assert (new["timing_wait"]["median_s"], new["timing_wait"]["max_s"]) == (29.12, 70.6)
    assert (old["timing_wait"]["median_s"], old["timing_wait"]["max_s"]) == (46.12, 81.8)
    assert (new["timing"]["count"], new["timing"]["sum_s"], new["timing"]["median_s"]) == (107, 115.1, 0.57)
    assert _paused(new) == (31, 598.0, 25)
    assert _paused(old) == (36, 685.0, 27)
    notes = [(e.get("result") or {}).get("note") or "" for e in events if e["kind"] == "timing"]
    idle = [
        float(m) for n in notes for m in re.findall(r"no kernel ran on the GPU ([0-9.]+) s after the stop", n)
    ]
    assert len(idle) == 25 and (min(idle), max(idle)) == (0.6, 0.7)
    stopped = [e for e in events if e["kind"] in ("run", "sanitize") and (e["result"] or {}).get("paused_s")]
    assert len(stopped) == 31

    def span(e: dict) -> tuple[float, float]:  # type: ignore[type-arg]
        # a hung run and a sanitizer run are the last GPU stage of their attempt: their event marks their end
        r = e["result"]
        return e["t"] - r["duration_s"] - r["paused_s"], e["t"]

    def beside(e: dict) -> list[float]:  # type: ignore[type-arg]
        """How long the sanitizer runs in flight with ``e`` were stopped."""
        a, b = span(e)
        return [
            x["result"]["paused_s"]
            for x in stopped
            if x["kind"] == "sanitize" and span(x)[0] < b and a < span(x)[1]
        ]

    hung = [e for e in stopped if e["kind"] == "run" and e["result"]["timed_out"]]
    # a stop that did not idle the GPU: 5 s with no sanitizer run stopped beside the hung run, 30 s with one
    five = [e for e in hung if 5.0 <= e["result"]["paused_s"] < 6.0]
    thirty = [e for e in hung if e["result"]["paused_s"] >= 30.0]
    assert len(five) == 2 and len(thirty) == 7 and len(five) + len(thirty) == len(hung)
    assert all(not [p for p in beside(e) if p >= 5.0] for e in five)
    assert all([p for p in beside(e) if p >= 30.0] for e in thirty)
    # the 7 hung runs held 30 s fall in 5 stops (runs stopped together overlap in time)
    spans = sorted(span(e) for e in thirty)
    groups = 1 + sum(b[0] > max(x[1] for x in spans[: k + 1]) for k, b in enumerate(spans[1:]))
    assert groups == 5
    # three short stops no timing stage's note names: each holds a correctness run re-run alone (out of
    # memory beside other runs), which takes the GPU alone as a timing stage does
    short = [e for e in stopped if e["result"]["paused_s"] < 1.0]
    assert sorted(round(e["result"]["paused_s"], 2) for e in short) == [0.58] * 3 + [0.77] * 2 + [0.88] * 4
    alone = [round(e["t"], 1) for e in events if e["kind"] == "run" and e["result"].get("rerun_alone")]
    for t in (105.1, 283.5, 363.0):
        assert t in alone and any(span(e)[0] < t < span(e)[1] for e in short)
    # the one run stopped 30 s that was not hung, flashattn_v2_07's first: what stopped it the files do not say
    (odd,) = [
        e
        for e in stopped
        if e["kind"] == "run" and not e["result"]["timed_out"] and e["result"]["paused_s"] >= 30
    ]
    assert odd["iteration"] == 1 and odd["result"]["paused_s"] == 30.1503


def _scheduled_runs_with_builds_stopped_or_going_are_told_apart(tmp_path: Path) -> None:
    """A scheduled run records its --builds-in-timing; the summary names it beside the run and its ratio. A
    run recorded before the setting existed had its builds go on, and is named so."""
    sys.path.insert(0, str(ROOT / "bench"))
    import timing_floor_bench as tfb

    again = json.loads((AGAIN / "batch-scheduled.json").read_text())
    assert "builds_in_timing" not in again
    assert tfb.builds_words(again) == " (builds going on during timing)"
    text, got = summary(tmp_path, *DATA, REST, AGAIN, BUILDS_STOP)
    assert "| scheduled (builds stopped for timing), 40 tasks | 477.2 s" in text
    assert "scheduled (builds going on during timing), 40 tasks | 2807.8 s / 465.9 s = **6.03x**" in text
    assert "scheduled (builds stopped for timing), 40 tasks | 2807.8 s / 477.2 s = **5.88x**" in text
    assert sorted((r["scheduled_s"], r["builds_in_timing"], r["speedup"]) for r in got["ratios"] if "speedup" in r) == [
        (465.9, "go", 6.03), (477.2, "stop", 5.88), (528.9, "go", 5.31),
    ]  # fmt: skip
    one = {"builds_in_timing": "auto", "summary": {"gpu_busy_fraction": {"0": 0.9}}}
    assert tfb.builds_words(one) == " (builds stopped for timing: auto, on one GPU)"
    two = {"builds_in_timing": "auto", "summary": {"gpu_busy_fraction": {"0": 0.9, "1": 0.8}}}
    assert tfb.builds_words(two) == " (builds going on during timing: auto, on several GPUs)"


def _the_40_task_batch_with_builds_stopped_for_timing(tmp_path: Path) -> None:
    """The same 40-task batch with --builds-in-timing stop (the default on one GPU), one H200: all passed in
    477.2 s, against 465.9 s with builds going on (2026-12-04, an earlier call). 89 of its 107 timing stages
    stopped builds (51 builds, 373.5 s stopped in all); the timing stages themselves took no less."""
    run = json.loads((BUILDS_STOP / "batch-scheduled-builds-stop.json").read_text())
    assert run["builds_in_timing"] == "stop" and run["rc"] == 0 and not run["cut_by_budget"]
    assert run["summary"]["passed"] == 40 and run["attempts"] == 200 and run["timing_stages"] == 107
    assert run["side_budget_ms"] == 0.0 and "H200" in run["machine"]["gpus"]
    new, events = _timeline(tmp_path, BUILDS_STOP, "scheduled-builds-stop")
    old, _ = _timeline(tmp_path, AGAIN)
    assert (new["span_s"], old["span_s"]) == (475.6, 464.5)
    assert new["builds_paused"]["count"] == 51 and new["builds_paused"]["sum_s"] == 373.5
    assert new["builds_paused"]["timing_stages_that_stopped_builds"] == 89
    notes = [(e.get("result") or {}).get("note") or "" for e in events if e["kind"] == "timing"]
    assert sum("builds stopped (SIGSTOP) for this timing" in n for n in notes) == 89
    # timing stages: the same count, a little shorter; the wait for them longer
    assert (new["timing"]["count"], new["timing"]["median_s"], old["timing"]["median_s"]) == (107, 0.52, 0.57)
    assert (new["timing_wait"]["median_s"], old["timing_wait"]["median_s"]) == (37.0, 29.12)
    assert (new["stages"]["build"]["sum_s"], old["stages"]["build"]["sum_s"]) == (466.1, 428.6)


def test_several_gpus_against_one_are_told_in_sessions_per_minute(tmp_path: Path) -> None:
    """A finished scheduled run on two GPUs is held against the finished runs of the same tasks on one GPU
    (sessions per minute, here the walls' ratio) and gets no naive ratio, which is of one GPU; a run on two
    GPUs with no one-GPU run of its tasks claims nothing."""
    again = json.loads((AGAIN / "batch-scheduled.json").read_text())
    folder = tmp_path / "two"
    folder.mkdir()
    two = {
        **again, "wall_s": 250.0, "builds_in_timing": "auto", "gpus_asked": "0,1",
        "summary": {**again["summary"], "gpu_busy_fraction": {"0": 0.9, "1": 0.8}},
        "machine": {**again["machine"], "gpus": "GPU 0: NVIDIA H200\nGPU 1: NVIDIA H200", "cpus": 32},
    }  # fmt: skip
    (folder / "batch-scheduled-gpus-0-1.json").write_text(json.dumps(two))
    fewer = {**two, "tasks": two["tasks"][:10], "summary": {**two["summary"], "done": 10}}
    (folder / "batch-scheduled-gpus-0-1-fewer.json").write_text(json.dumps(fewer))
    cut = {**two, "wall_s": 300.0, "cut_by_budget": True, "summary": {**two["summary"], "done": 31}}
    (folder / "batch-scheduled-gpus-0-1-cut.json").write_text(json.dumps(cut))
    text, got = summary(tmp_path, AGAIN, BUILDS_STOP, folder)
    assert (
        "| scheduled (builds going on during timing: auto, on several GPUs) on 2 GPUs, 40 tasks | 250.0 s"
        in text
    )
    rates = {(r["one_gpu_wall_s"], r["ratio"]) for r in got["scaling"]}
    assert rates == {(465.9, round(465.9 / 250.0, 2)), (477.2, round(477.2 / 250.0, 2))}
    assert all(
        r["gpus"] == 2 and not r["same_machine"] and r["sessions_per_min"] == 9.6 for r in got["scaling"]
    )
    assert (
        "(different machines; 32 and 16 CPUs) | 9.60 / 5.15 per minute (250.0 s and 465.9 s) = **1.86x**"
        in text
    )
    assert "over one GPU (10 tasks) | not claimed: no finished run of the same tasks on one GPU" in text
    assert "/ 250.0 s = " not in text  # no naive ratio for a run on two GPUs
    assert (
        "over one GPU, run of 300.0 s | not claimed: that run was cut, failed or left sessions unfinished"
        in text
    )
    assert len(got["scaling"]) == 2


def _stopped(events: list[dict], kind: str) -> tuple[int, int]:  # type: ignore[type-arg]
    """How many stages of ``kind`` a run recorded, and how many of them were stopped (SIGSTOP) at some point."""
    stages = [e for e in events if e["kind"] == kind]
    return len(stages), sum(1 for e in stages if e["result"].get("paused_s"))


def _the_40_task_batch_with_sanitizer_runs_waited_for(tmp_path: Path) -> None:
    """The 40-task batch again (2026-12-04, seventh session) with sanitizer runs waited for rather than
    stopped: all 40 passed in 406.1 s, 6.91x the naive side. None of its 36 sanitizer runs was stopped,
    against 14 of 36 in each of the two runs before it; its timing stages stopped runs twice, against 58
    times in the run with builds stopped."""
    run = json.loads((RUNS_RULE / "batch-scheduled.json").read_text())
    assert run["builds_in_timing"] == "auto" and run["rc"] == 0 and not run["cut_by_budget"]
    assert run["summary"]["passed"] == 40 and run["attempts"] == 200 and run["timing_stages"] == 106
    assert run["side_budget_ms"] == 0.0 and "H200" in run["machine"]["gpus"] and run["wall_s"] == 406.1
    text, got = summary(tmp_path, *DATA, REST, RUNS_RULE)
    assert (
        "scheduled (builds stopped for timing: auto, on one GPU), 40 tasks | 2807.8 s / 406.1 s = **6.91x**"
        in text
    )
    assert sorted(r["speedup"] for r in got["ratios"] if "speedup" in r) == [5.31, 6.91]
    new, events = _timeline(tmp_path, RUNS_RULE)
    old, old_events = _timeline(tmp_path, BUILDS_STOP, "scheduled-builds-stop")
    _, before_events = _timeline(tmp_path, AGAIN)
    assert _stopped(events, "sanitize") == (36, 0)
    assert _stopped(old_events, "sanitize") == _stopped(before_events, "sanitize") == (36, 14)
    assert _paused(new) == (13, 46.4, 2)
    assert _paused(old) == (54, 653.4, 58)
    assert (new["span_s"], new["timing"]["count"], new["timing"]["median_s"]) == (404.8, 106, 0.59)
    assert (new["timing_wait"]["median_s"], old["timing_wait"]["median_s"]) == (29.04, 37.0)
    assert (new["builds_paused"]["count"], new["builds_paused"]["sum_s"]) == (43, 311.7)


def test_a_scheduled_result_names_its_rule_for_runs_beside_timing() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import timing_floor_bench as tfb

    one = {"builds_in_timing": "auto", "summary": {"gpu_busy_fraction": {"0": 0.9}}}
    assert tfb.builds_words({**one, "pause_for_timing": "runs"}) == (
        " (builds stopped for timing: auto, on one GPU; runs stopped for timing, sanitizer runs waited for)"
    )
    assert tfb.builds_words({"builds_in_timing": "go", "pause_for_timing": "all"}) == (
        " (builds going on during timing; runs and sanitizer runs stopped for timing)"
    )
    assert tfb.builds_words(one) == " (builds stopped for timing: auto, on one GPU)"  # not recorded: not said


def _fresh(tmp_path: Path, n: int) -> Path:
    """A folder of its own under the test's, for each check that writes."""
    d = tmp_path / str(n)
    d.mkdir()
    return d


def test_the_timing_bench_records_read_back(tmp_path: Path) -> None:
    """The timing-bench records of docs/data/h200-2026-12-02 to -04b, recomputed through
    bench/timing_floor_bench.py and bench/batch_timeline.py, one check each.
    It fails only if the archive or the bench scripts that read it change."""
    _the_recorded_pieces_give_a_lower_bound_and_no_ratio(_fresh(tmp_path, 1))
    _all_recorded_pieces_cover_the_40_tasks_and_give_the_ratio(_fresh(tmp_path, 2))
    _each_finished_scheduled_run_gets_its_ratio_against_the_same_naive_pieces(_fresh(tmp_path, 3))
    _the_waits_and_stops_of_the_two_scheduled_runs(_fresh(tmp_path, 4))
    _scheduled_runs_with_builds_stopped_or_going_are_told_apart(_fresh(tmp_path, 5))
    _the_40_task_batch_with_builds_stopped_for_timing(_fresh(tmp_path, 6))
    _the_40_task_batch_with_sanitizer_runs_waited_for(_fresh(tmp_path, 7))
