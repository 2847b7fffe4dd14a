"""The H100 calls of the night of 2026-12-05 to 12-06 (docs/data/h100-2026-12-06, docs/lab/h100-2026-12-06.md):
the minimal fixes of the release's 65 CUPTI instances resumed a third time (its hunk phase, and the replay that
restored cuda_110's record, the fixes the package ships), the release's nvcc families with the timing lane after
the drain rules were deleted, read back through its sessions and stage log, and the long CUPTI timing stages
with their phases. Every figure the lab file quotes comes out of these files, through the product's readers
and the bench scripts. (The scores of the recorded H200 release run against the shipped fixes are
tests/records/test_release_minimal_fix_scoring.py's.)"""

from __future__ import annotations

import fnmatch
import json
import re
import statistics
import sys
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.session.events import SessionEnd
from tests.cli_in_process import run_script
from tests.conftest import extract_run
from tests.records.test_h100_2026_12_05 import _sessions
from tests.records.test_h100_2026_12_05_late import _jsonl, _rate

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import minimal_fixes_figures as mf  # noqa: E402
import release_lane_bench as rl  # noqa: E402
import stage_log_bench as sl  # noqa: E402

DATA = ROOT / "docs" / "data" / "h100-2026-12-06"
LATE = ROOT / "docs" / "data" / "h100-2026-12-05-late"
H200 = ROOT / "docs" / "data" / "h200-2026-12-04"
LAB = " ".join((ROOT / "docs" / "lab" / "h100-2026-12-06.md").read_text(encoding="utf-8").split())
"""The lab file's text, its line breaks as spaces."""
SLUG = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"
KNOWN = ROOT / "beavertui" / "engine" / "corpus" / "known"
SHIPPED = KNOWN / "fixes" / SLUG
TASKS = ROOT / "bench" / "release-cupti-tasks.txt"
NVCC = ["cuda_*", "cudabench_*", "cublas_*", "cusparse_*", "cusolver_*", "cufft_[0-9]*"]
CUDA_110 = "cuda_110__logic_error__957be815"


def _steps(folder: str, data: Path = DATA) -> str:
    return (data / folder / "steps.log").read_text(encoding="utf-8")


def _patch_lines(patch: Path) -> int:
    """Lines a fix's patch removes from the broken start or adds from the reference."""
    body = [x for x in patch.read_text(encoding="utf-8").splitlines() if not x.startswith(("---", "+++"))]
    return sum(x.startswith(("-", "+")) for x in body)


def _short(task: str) -> str:
    return task.split("__")[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store after the minimal-fix call: its H100 folder."""
    into = tmp_path_factory.mktemp("store")
    with tarfile.open(DATA / "minimal-fixes-3" / "store.tgz") as tar:
        tar.extractall(into, filter="data")
    return into / "store" / SLUG


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(DATA / "release-lane" / "lane-out.tgz", tmp_path_factory.mktemp("lane"), ".")


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same lane run of the evening before (h100-2026-12-05-late)."""
    return extract_run(LATE / "release-lane" / "lane-out.tgz", tmp_path_factory.mktemp("before"), ".")


# ---------------------------------------------------------------------------------------------------------
# Minimal fixes


def test_the_hunk_phase_took_the_whole_call() -> None:
    hunks = _jsonl(DATA / "minimal-fixes-3" / "hunks.jsonl")
    steps = _steps("minimal-fixes-3")
    assert len(hunks) == 65
    # 1,029 oracle calls in 461 s, as the steps say and the per-instance records add up
    calls, secs = _rate(steps, "hunk phase")
    assert (calls, secs) == (1029, 461) == (sum(r["calls"] for r in hunks.values()), 461)
    assert f"{calls:,} oracle calls in {secs} s" in LAB
    assert round(calls / secs, 1) == 2.2
    # the two calls before, in their hunk phases: 1.2 and 1.5 a second
    rates = [_rate(_steps(f, LATE), "hunk phase") for f in ("minimal-fixes-1", "minimal-fixes-2")]
    assert [round(c / s, 1) for c, s in rates] == [1.2, 1.5]
    # 35 instances asked the GPU, the other 30 went over their kept answers only
    asked = sum(r["calls"] > 0 for r in hunks.values())
    assert (asked, 65 - asked) == (35, 30)
    assert f"{asked} instances asked the GPU; the other {65 - asked} went over their kept answers" in LAB
    assert "no time left for the line phases (-24 s)" in steps
    assert "minimize: 437 s of oracle calls, 12 workers, 6 runs on the GPU at once" in steps
    assert "previous store.tgz unpacked: 134 answer files" in steps
    assert "merged .release/prev/compile-only/: 65 answer files" in steps
    # 64 past the hunk phase, cuda_122 cut in it
    phases = Counter(r["phase"] for r in hunks.values())
    assert phases == {"lines": 64, "hunks": 1}
    assert [_short(t) for t, r in hunks.items() if r["phase"] == "hunks"] == ["cuda_122"]
    # 42 verified after it, against 18 after the hunk phases of the two calls before
    verified = sum(r["verified"] for r in hunks.values())
    earlier = _jsonl(LATE / "minimal-fixes-2" / "hunks.jsonl")
    assert (verified, sum(r["verified"] for r in earlier.values())) == (42, 18)
    assert "42 of 65 tasks have one (42 verified)" in steps
    assert all(r["minimality"] == "hunks" for r in hunks.values() if r["verified"])


def test_the_hunk_phase_made_cuda_110_worse_and_the_replay_restored_it(store: Path) -> None:
    after_two = _jsonl(LATE / "minimal-fixes-2" / "minimize.jsonl")[CUDA_110]
    hunks = _jsonl(DATA / "minimal-fixes-3" / "hunks.jsonl")
    replay = _jsonl(DATA / "minimal-fixes-3" / "replay.jsonl")
    # after the second call: "minimal", 25 of 57 lines, 1-minimal over lines
    assert (after_two["status"], after_two["lines"], after_two["reference_lines"], after_two["minimality"]) == (
        "minimal", 25, 57, "lines"
    )  # fmt: skip
    # this call's hunk phase (hunks only) wrote the hunk phase's fix: 55 lines, 1-minimal over hunks only
    h = hunks[CUDA_110]
    assert (h["lines"], h["minimality"], h["verified"], h["calls"]) == (55, "hunks", True, 0)
    assert "line phase not run yet (hunks only)" in h["why"]
    record = json.loads((store / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
    assert (record[CUDA_110]["lines"], record[CUDA_110]["minimality"]) == (55, "hunks")
    assert _patch_lines(store / CUDA_110 / "minimal_fix.patch") == 55
    # the replay asked no oracle and rebuilt the line phase's record from the kept answers: every one it
    # needed was kept (the same 135 questions as the second call's)
    assert sum(r["calls"] for r in replay.values()) == 0
    r = replay[CUDA_110]
    assert (r["status"], r["phase"], r["minimality"], r["lines"], r["reference_lines"]) == (
        "minimal", "done", "lines", 25, 57
    )  # fmt: skip
    assert r["asked"] == after_two["asked"] == 135
    # every other instance as the hunk phase left it; 42 verified, 41 over hunks and 1 over lines
    same = ("verified", "lines", "minimality", "hunks", "speedup", "correct")
    assert [t for t in hunks if any(hunks[t][k] != replay[t][k] for k in same)] == [CUDA_110]
    fixed = {t: x for t, x in replay.items() if x["verified"]}
    assert len(fixed) == 42 and Counter(x["minimality"] for x in fixed.values()) == {"hunks": 41, "lines": 1}
    assert [_short(t) for t, x in fixed.items() if x["minimality"] == "lines"] == ["cuda_110"]
    assert "42 verified, 41 of them 1-minimal over hunks, 1 (cuda_110, 25 lines) over lines" in LAB


def test_the_fixes_size_and_the_figures_script(store: Path) -> None:
    tasks = mf._ids(TASKS)
    assert len(tasks) == 65
    # the store after the call, through the figures script: what the call printed and saved
    script = ROOT / "scripts" / "minimal_fixes_figures.py"
    out = run_script(script, store, "--tasks", TASKS, check=True).stdout
    assert out.strip() == (DATA / "minimal-fixes-3" / "figures.md").read_text(encoding="utf-8").strip()
    got = json.loads(run_script(script, store, "--tasks", TASKS, "--json", check=True).stdout)
    assert got == json.loads((DATA / "minimal-fixes-3" / "figures.json").read_text(encoding="utf-8"))
    # the replay's 42 (cuda_110 at 25 lines): the same medians, the share still 96%
    replay = mf.figures({"tasks": _jsonl(DATA / "minimal-fixes-3" / "replay.jsonl")}, tasks)
    for f in (got, replay):
        assert f["verified"] == 42 and f["instances"] == 65
        assert (f["median_fix_lines"], f["median_reference_lines"]) == (146.5, 153.5)
        assert round(100 * f["median_share_of_reference"]) == 96
    assert replay["by_minimality"] == {"lines": 1, "hunks": 41}
    assert "a median 146.5 lines against 153.5 lines" in LAB and "(median share 96%)" in LAB
    # against what: 42 of the 65 usable instances with a drop-in reference, and of the 70 the H200 can use
    verdicts = json.loads((KNOWN / "nvidia_h200_sm_90_cuda_13_0.json").read_text(encoding="utf-8"))
    nvcc = [v for v in verdicts if any(fnmatch.fnmatch(v["task_id"], p) for p in NVCC)]
    usable = [v for v in nvcc if v["verdict"] in ("usable", "usable_relabelled")]
    drop_in = {v["task_id"] for v in usable if v["reference_kind"] == "drop_in"}
    others = [v for v in usable if v["reference_kind"] != "drop_in"]
    assert (len(usable), len(drop_in), len(others)) == (70, 65, 5) and drop_in == set(tasks)
    assert {(v["family"], v["reference_kind"]) for v in others} == {("cudabench", "none")}
    assert (round(100 * 42 / 65), round(100 * 42 / 70)) == (65, 60)


def test_the_23_without_a_fix() -> None:
    hunks = _jsonl(DATA / "minimal-fixes-3" / "hunks.jsonl")
    replay = _jsonl(DATA / "minimal-fixes-3" / "replay.jsonl")
    none = {t for t, r in hunks.items() if not r["verified"]}
    assert none == {t for t, r in replay.items() if not r["verified"]}  # the replay restored no other
    without = [r for r in hunks.values() if not r["verified"]]
    assert len(without) == 23 and not any(r["found"] for r in without)
    done = [r for r in without if r["phase"] == "lines"]
    # every hunk of the reference kept; their line phases have not run
    every = [r for r in done if r["hunks"] == r["reference_hunks"]]
    assert len(every) == 12
    assert all(r["why"].startswith("line phase not run yet (hunks only)") for r in every)
    fewer = [r for r in done if r["hunks"] < r["reference_hunks"]]
    # correct and timed at >= 0.7x, fewer hunks, yet no fix: what they left out is no line of code
    no_code = [r for r in fewer if r["correct"] and r["speedup"] is not None and r["speedup"] >= 0.7]
    assert len(no_code) == 7 and all(r["lines"] < r["reference_lines"] for r in no_code)
    # a correct set not timed at the gate yet
    untimed = [_short(r["task_id"]) for r in fewer if r["correct"] and r["speedup"] is None]
    assert sorted(untimed) == ["cusolver_22", "cusparse_26"]
    below = [r for r in fewer if r["speedup"] is not None and r["speedup"] < 0.7]
    assert [(_short(r["task_id"]), f"{r['speedup']:.3f}x", r["correct"]) for r in below] == [
        ("cuda_198", "0.640x", True)
    ]
    cut = [r for r in without if r["phase"] == "hunks"]
    assert [_short(r["task_id"]) for r in cut] == ["cuda_122"]
    assert "budget ran out in the hunk phase" in cut[0]["why"]
    assert len(every) + len(no_code) + len(untimed) + len(below) + len(cut) == 23
    assert "12 needed every hunk" in LAB and "7 left out only hunks" in LAB
    assert "2 (cusolver_22, cusparse_26)" in LAB and "correct at 0.640x" in LAB


def test_the_replays_42_stay_among_what_the_package_ships(store: Path) -> None:
    """The package shipped the replay's 42 after this night; the calls of the next
    (tests/records/test_h100_2026_12_06b_minimal_fixes.py) kept every one, each the same or smaller."""
    replay = _jsonl(DATA / "minimal-fixes-3" / "replay.jsonl")
    shipped = json.loads((SHIPPED / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
    verified = {t for t, r in replay.items() if r["verified"]}
    assert len(verified) == 42 and verified <= set(shipped)
    for t in verified:
        s, r = shipped[t], replay[t]
        assert s["verified"] and s["lines"] <= r["lines"], t
        # a fix only grows smaller by its line phase: the same size, or 1-minimal over lines now
        assert s["lines"] == r["lines"] or s["minimality"] == "lines", t
    assert (shipped[CUDA_110]["lines"], shipped[CUDA_110]["minimality"], shipped[CUDA_110]["hunks"]) == (
        25, "lines", 4
    )  # fmt: skip
    assert shipped[CUDA_110]["why"].endswith("25 of 57 changed lines of the reference, in 4 of 6 hunks")
    # the 18 shipped after the two calls before are among them
    earlier = _jsonl(LATE / "minimal-fixes-2" / "hunks.jsonl")
    assert {t for t, r in earlier.items() if r["verified"]} <= set(shipped)


# ---------------------------------------------------------------------------------------------------------
# The release's nvcc families with the timing lane


def test_the_lane_run_against_the_evening_before(lane: Path, before: Path) -> None:
    run = lane / "sessions" / "lane"
    s = rl.summary(run)
    assert s == json.loads((DATA / "release-lane" / "summary.json").read_text(encoding="utf-8"))[0] | {
        "run": str(run)
    }
    b = rl.summary(before / "sessions" / "lane")
    rows = [
        ("sessions", 74, 74),
        ("final", 65, 45),
        ("final_within_300s", 36, 30),
        ("last_final_s", 495.8, 496.1),
        ("timing_stages", 58, 45),
        ("timing_stage_median_s", 2.14, 3.08),
        ("longest_wait_without_timing_s", 24.8, 45.1),
        ("longest_wait_at_s", 270.6, 162.1),
    ]
    assert [(k, s[k], b[k]) for k, _, _ in rows] == rows
    assert (
        f"| final, timing included | {s['final']} ({s['final_within_300s']} within 300 s, the last at "
        f"{s['last_final_s']} s) | {b['final']} ({b['final_within_300s']} within 300 s, the last at "
        f"{b['last_final_s']} s) |"
    ) in LAB
    assert (
        f"| longest wait for timing with no timing stage running | {s['longest_wait_without_timing_s']} s (at "
        f"{s['longest_wait_at_s']} s) | {b['longest_wait_without_timing_s']} s (at {b['longest_wait_at_s']} s) |"
    ) in LAB
    # the same command, tasks, known set and protocol as the evening before
    now, then = (json.loads((r / "sessions" / "lane" / "run.json").read_text()) for r in (lane, before))
    differ = {k for k in now.keys() | then.keys() if now.get(k) != then.get(k)}
    assert differ == {"host", "summary", "created"}
    assert "for 498 s" in _steps("release-lane") and "for 498 s" in _steps("release-lane", LATE)
    # at the stop: 3 sessions cut before their first attempt, 6 finished loops with a timing pending
    sessions = _sessions(run)
    ends = {h.task.id: [e for e in ev if isinstance(e, SessionEnd)] for h, ev in sessions}
    cut = {h.task.id: ev for h, ev in sessions if not ends[h.task.id]}
    assert sorted(map(_short, cut)) == ["cusolver_6", "cusparse_2", "cusparse_27"]
    assert all(ev == [] for ev in cut.values())  # not a reply, not a check
    said = (lane / "lane.log").read_text(encoding="utf-8")
    assert all(f"cut: {t} (scripted:@alternate, sample 0): 128 s in flight; no attempt yet" in said
               for t in cut)  # fmt: skip
    pending = [t for t, e in ends.items() if e and e[-1].timing_pending]
    assert len(pending) == 6 and len(sessions) - s["final"] == len(cut) + len(pending) == 9
    assert (now["summary"]["running"], now["summary"]["timing_pending"]) == (3, 6)
    metrics = (DATA / "release-lane" / "metrics-lane.txt").read_text(encoding="utf-8")
    assert "3 unfinished session(s) left out of every rate" in metrics
    assert "6 timing(s) pending in 6 session(s), left out of every rate" in metrics


def test_what_held_the_gpu(lane: Path, before: Path) -> None:
    run = lane / "sessions" / "lane"
    d = sl.summary(run)
    assert d == json.loads((DATA / "release-lane" / "stages-lane.json").read_text(encoding="utf-8")) | {
        "run": str(run), "placed": d["placed"]
    }  # fmt: skip
    printed = (DATA / "release-lane" / "stages.txt").read_text(encoding="utf-8").splitlines()
    assert set(printed[1:]) <= set(sl.render(d).splitlines())  # the summary as the call printed it
    assert d["span_s"] == 496.6
    assert d["gpus"]["0"] == {
        "exclusive": 357.3, "instrumented": 38.6, "runs": 97.7, "idle while stages waited": 0.0, "idle": 3.0
    }  # fmt: skip
    t, r = d["stages"]["timing"], d["stages"]["run"]
    assert (t["n"], t["hold_sum_s"], round(t["hold_median_s"], 2), t["wait_max_s"]) == (64, 357.3, 2.15, 46.8)
    assert (round(r["wait_median_s"], 1), r["wait_max_s"]) == (30.3, 241.0)
    # no profiler: what the GPU held instrumented was sanitizer runs
    assert set(d["stages"]) == {"build", "prepare", "run", "sanitize", "timing"}
    # the 64: the lane's 58 (rank -1) and 6 the start checks of tasks with no H100 verdict timed
    entries = sl.read(run)
    timing = [e for e in entries if e["stage"] == "timing"]
    checks = {e["task"] for e in timing if e["rank"] != -1}
    assert (len(timing) - len(checks), len(checks)) == (58, 6)
    h100 = {v["task_id"] for v in json.loads((KNOWN / f"{SLUG}.json").read_text(encoding="utf-8"))}
    assert not checks & h100
    assert (
        "timing stages held GPU 0 alone for 357.3 s (64 stages, median 2.15 s" in LAB
        and "sanitizer runs 38.6 s, correctness runs 97.7 s; it was idle 3.0 s" in LAB
    )
    # the evening before
    e = sl.summary(before / "sessions" / "lane")
    assert (e["gpus"]["0"]["exclusive"], e["gpus"]["0"]["runs"], e["stages"]["run"]["wait_max_s"]) == (
        388.7, 41.3, 301.6
    )  # fmt: skip


def test_the_timeline_windows(lane: Path) -> None:
    d = sl.timeline(lane / "sessions" / "lane", 25.0)
    printed = (lane / "timeline.txt").read_text(encoding="utf-8").splitlines()
    # as the call printed it, but its first line (the run's folder)
    assert sl.render_timeline(d).splitlines()[1:] == printed[1:]
    rows = d["gpus"]["0"]
    # windows that timing held throughout: none two in a row before 300 s; 300-325 and 325-350 both
    full = [r["from_s"] for r in rows if r["held_s"]["timing"] == r["to_s"] - r["from_s"]]
    assert full == [75.0, 150.0, 225.0, 300.0, 325.0]
    assert "(75-100, 150-175, 225-250); from 300 s to 350 s two did" in LAB
    # from 375 s, cuda_21's stopped run counts as a run holding the GPU while timing holds it too
    late = [r for r in rows if r["from_s"] >= 375.0]
    assert all(r["held_s"]["run"] + r["held_s"]["timing"] > r["to_s"] - r["from_s"] for r in late)
    assert [r["held_s"]["run"] for r in late[:4]] == [25.0] * 4


def test_timing_stopped_the_runs_from_373_s(lane: Path) -> None:
    entries = sl.read(lane / "sessions" / "lane")
    t0 = min(e["asked"] for e in entries)
    timing = sorted((e for e in entries if e["stage"] == "timing"), key=lambda e: e["began"])
    stopped = [e for e in timing if e.get("stopped_runs")]
    assert len(stopped) == 21 and round(stopped[0]["began"] - t0, 1) == 373.3
    # every one from then, none before
    assert stopped == [e for e in timing if e["began"] >= stopped[0]["began"]]
    # cuda_21's run, 366.4 s to 495.7 s, in flight through each of those holds
    (run,) = [
        e for e in entries if e["stage"] == "run" and e["task"] == "cuda_21__memory_crash__a550b786"
        and e["ended"] - e["began"] > 100
    ]  # fmt: skip
    assert (round(run["began"] - t0, 1), round(run["ended"] - t0, 1)) == (366.4, 495.7)
    assert all(run["began"] < e["began"] and e["ended"] < run["ended"] for e in stopped)
    # a task with no H100 verdict, whose reference then failed with an illegal memory access
    h100 = {v["task_id"] for v in json.loads((KNOWN / f"{SLUG}.json").read_text(encoding="utf-8"))}
    assert run["task"] not in h100
    (events,) = [ev for h, ev in _sessions(lane / "sessions" / "lane") if h.task.id == run["task"]]
    end = [e for e in events if isinstance(e, SessionEnd)][-1]
    assert end.stop_reason == "unusable"
    assert (end.detail or "").startswith("the reference fails here: illegal_memory_access")
    assert "From 373.3 s on, 21 timing stages stopped the runs" in LAB and "from 366.4 s to 495.7 s" in LAB


# ---------------------------------------------------------------------------------------------------------
# The long CUPTI timing stages


def test_the_long_timing_stage(tmp_path: Path) -> None:
    folder = DATA / "timing-long"
    out = tmp_path / "summary.json"
    bench = ROOT / "bench" / "release_timing_bench.py"
    text = run_script(bench, "summary", "--json", out, folder, check=True).stdout
    assert text.strip() == (folder / "summary.md").read_text(encoding="utf-8").strip()
    s = json.loads(out.read_text())
    assert s == json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    raw = json.loads((folder / "release-stage.json").read_text(encoding="utf-8"))
    assert "H100 80GB HBM3" in raw["machine"]["gpus"] and raw["modes"] == ["on"]
    # one of the eight timed, cuda_167; the seven others not reached
    assert len(raw["order"]) == 8 and [t for t, r in raw["tasks"].items() if "on" in r] == [raw["order"][0]]
    assert _short(raw["order"][0]) == "cuda_167" and len(s["left_out"]) == 7
    on = raw["tasks"][raw["order"][0]]["on"]
    assert (s["held_alone_s"]["on"]["sum"], on["runs"], on["method"]) == (25.5, 3, "cupti")
    assert [p["who"] for p in on["phases"]] == ["reference", "candidate"] * 3  # interleaved
    assert (min(on["processes"]), max(on["processes"])) == (4.172, 4.478)
    assert (f"{on['speedup']:.3f}x", f"{100 * on['reference_cv']:.2f}%", f"{100 * on['candidate_cv']:.2f}%") == (
        "0.998x", "0.74%", "0.48%"
    )  # fmt: skip
    # where a run's time goes: the median phases of its 6 runs
    ph = s["modes"]["on"]["phases"]
    assert (round(ph["held_s"], 1), round(ph["to_first_kernel_s"], 2), round(ph["last_kernel_to_exit_s"], 2)) == (
        4.2, 0.21, 0.05
    )  # fmt: skip
    assert {p["kernels_s"] for p in on["phases"]} == {0.0001}  # 0.1 ms a run
    assert s["modes"]["on"]["kernel_share"] == {"runs": 6, "held_s": 25.529, "kernels_s": 0.001, "share": 0.0}
    # between the first kernel and the last, host work: 3.8 s a run at the median (3.82 to 3.95 s)
    host = [p["cuda_to_exit_s"] - p["to_first_kernel_s"] - p["kernels_s"] - p["last_kernel_to_exit_s"]
            for p in on["phases"]]  # fmt: skip
    assert (round(statistics.median(host), 1), round(min(host), 2), round(max(host), 2)) == (3.8, 3.82, 3.95)
    assert "3.8 s a run at the median (3.82 to 3.95 s)" in LAB
    # the one-GPU floor it compares with: the H200's 65 stages held the GPU alone 412.2 s
    walls: dict[str, float] = {}
    for name in ("release-stage", "release-stage-rest", "release-stage-long", "release-stage-216"):
        rows: dict[str, Any] = json.loads((H200 / name / "release-stage.json").read_text())["tasks"]
        walls |= {t: r["on"]["wall_s"] for t, r in rows.items() if "speedup" in r.get("on", {})}
    assert (len(walls), round(sum(walls.values()), 1)) == (65, 412.2)
    # the eight long instances: the H200's stages over 20 s
    assert sorted(raw["order"]) == sorted(t for t, w in walls.items() if w > 20.0)


def test_the_calls_steps() -> None:
    last = {f: re.findall(r"^\[(\d+) s\]", _steps(f), re.M)[-1] for f in
            ("minimal-fixes-3", "release-lane", "timing-long")}  # fmt: skip
    assert last == {"minimal-fixes-3": "465", "release-lane": "503", "timing-long": "39"}
    assert "(465 s of command time" in LAB and "(503 s, at" in LAB and "(39 s, at" in LAB
    for folder in ("minimal-fixes-3", "release-lane", "timing-long"):
        assert "start: 1 GPU(s), 16 cores, Build cuda_13.0" in _steps(folder)
    for folder in ("minimal-fixes-3", "timing-long"):
        gpus = (DATA / folder / "gpus.csv").read_text(encoding="utf-8")
        assert "NVIDIA H100 80GB HBM3, 9.0, 580.159.04" in gpus
    assert "long: rc 0 (1 timings)" in _steps("timing-long")
