"""The H100 calls of the evening of 2026-12-05 (docs/data/h100-2026-12-05-late, docs/lab/h100-2026-12-05-late.md):
the minimal fixes of the release's 65 CUPTI instances over two calls, the named baselines, and the release's nvcc
families with the timing lane and the partial H100 known set, read back through its stage log. Every figure the
lab file quotes comes out of these files, through the product's readers and the bench scripts."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.session.events import Request, SessionEnd
from tests.conftest import extract_run
from tests.records.test_h100_2026_12_05 import _sessions

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import release_lane_bench as rl  # noqa: E402
import stage_log_bench as sl  # noqa: E402

DATA = ROOT / "docs" / "data" / "h100-2026-12-05-late"
EARLIER = ROOT / "docs" / "data" / "h100-2026-12-05"
SLUG = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"


def _jsonl(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {r["task_id"]: r for r in rows}


def _calls(folder: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], str]:
    """A minimal-fix call's outcomes after its hunk phase and at its end, and its steps."""
    d = DATA / folder
    return (
        _jsonl(d / "hunks.jsonl"),
        _jsonl(d / "minimize.jsonl"),
        (d / "steps.log").read_text(encoding="utf-8"),
    )


def _rate(steps: str, phase: str) -> tuple[int, int]:
    """(oracle calls, seconds) of a phase's summary line: 'hunk phase' or the end ('minimal fixes: ...' alone)."""
    lines = [line for line in steps.splitlines() if "oracle calls in" in line]
    line = next(x for x in lines if ("hunk phase" in x) == (phase == "hunk phase"))
    m = re.search(r"(\d+) oracle calls in (\d+) s", line)
    assert m is not None
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize(
    ("folder", "hunk", "end", "verified", "reached", "completed", "fewer_hunks"),
    [
        # call 1: a fresh store (the compile-only answers merged); call 2 resumed from call 1's store
        ("minimal-fixes-1", (340, 277), (636, 189), (10, 3), (26, 8), 18, 14),
        ("minimal-fixes-2", (268, 181), (153, 122), (18, 12), (39, 9), 30, 23),
    ],
)
def test_the_minimal_fix_calls_on_the_h100(
    folder: str,
    hunk: tuple[int, int],
    end: tuple[int, int],
    verified: tuple[int, int],
    reached: tuple[int, int],
    completed: int,
    fewer_hunks: int,
) -> None:
    hunks, final, steps = _calls(folder)
    assert len(hunks) == len(final) == 65
    # oracle calls and seconds per phase, as the steps say and as the per-instance records add up
    assert (_rate(steps, "hunk phase"), _rate(steps, "end")) == (hunk, end)
    assert (
        sum(r["calls"] for r in hunks.values()) == hunk[0]
        and sum(r["calls"] for r in final.values()) == end[0]
    )
    assert round(hunk[0] / hunk[1], 2) == {340: 1.23, 268: 1.48}[hunk[0]]
    assert round(end[0] / end[1], 2) == {636: 3.37, 153: 1.25}[end[0]]
    # the hunk phase reached (began) how many instances, and cut how many of those in it
    phases = [r["phase"] for r in hunks.values()]
    assert (65 - phases.count("start"), phases.count("hunks")) == reached
    done = [r for r in hunks.values() if r["phase"] == "lines"]
    assert len(done) == completed and sum(r["hunks"] < r["reference_hunks"] for r in done) == fewer_hunks
    # every verified fix after the hunk phase left out a hunk; the others that did are correct at >= 0.7x but
    # no fix by the record's rule (what they left out is no line of code of the reference's diff)
    fixed = [r for r in done if r["verified"]]
    assert all(r["hunks"] < r["reference_hunks"] and r["minimality"] == "hunks" for r in fixed)
    others = [r for r in done if r["hunks"] < r["reference_hunks"] and not r["verified"]]
    assert len(others) == fewer_hunks - len(fixed)
    assert all(r["correct"] and r["speedup"] >= 0.7 for r in others)
    assert all("no hunk of the reference could be left out" not in r["why"] for r in others)
    # verified after the hunk phase, and in the record at the end of the call
    assert (len(fixed), sum(r["verified"] for r in final.values())) == verified
    lost = [t for t, r in hunks.items() if r["verified"] and not final[t]["verified"]]
    assert len(lost) == verified[0] - verified[1]
    assert not [t for t, r in final.items() if r["verified"] and not hunks[t]["verified"]]
    # each lost one: the line phase's record holds a smaller set, not timed; none has a fix any more
    shrunk = [t for t in lost if final[t]["phase"] == "lines" and "not timed yet" in final[t]["why"]]
    assert all(final[t]["lines"] < hunks[t]["lines"] and not final[t]["found"] for t in shrunk)
    assert len(shrunk) == {10: 6, 18: 6}[verified[0]]
    assert len(others) == {10: 4, 18: 5}[verified[0]]
    figures = json.loads((DATA / folder / "figures.json").read_text(encoding="utf-8"))
    assert figures["verified"] == verified[1] and figures["instances"] == 65
    if folder == "minimal-fixes-2":
        assert figures["by_minimality"] == {"lines": 1, "hunks": 11}
        assert [t.split("__")[0] + ("" if "compile_error" not in t else " compile") for t in lost] == [
            "cuda_164 compile", "cusparse_4 compile", "cuda_196 compile", "cuda_107 compile", "cuda_17 compile",
            "cuda_59",
        ]  # fmt: skip
        assert final["cuda_110__logic_error__957be815"]["minimality"] == "lines"


def test_the_cut_that_lost_cuda_216_began_no_search_at_the_gate() -> None:
    hunks, final, _ = _calls("minimal-fixes-1")
    t = "cuda_216__compile_error__dfb98af7"
    assert hunks[t]["verified"] and (hunks[t]["lines"], hunks[t]["hunks"], hunks[t]["reference_hunks"]) == (
        51,
        1,
        3,
    )
    assert final[t]["phase"] == "start" and final[t]["lines"] is None
    assert "the correct set the screen found was 0.202x the reference's speed" in final[t]["why"]
    assert "budget ran out before the search began" in final[t]["why"]
    # call 2 ended its line phase with the fix again
    _, again, _ = _calls("minimal-fixes-2")
    assert again[t]["verified"] and again[t]["phase"] == "lines"


def test_the_figures_came_from_the_stores_records(tmp_path: Path) -> None:
    for folder in ("minimal-fixes-1", "minimal-fixes-2"):
        with tarfile.open(DATA / folder / "store.tgz") as tar:
            tar.extractall(tmp_path / folder, filter="data")
        gpu = tmp_path / folder / "store" / SLUG
        out = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "minimal_fixes_figures.py"), str(gpu),
             "--tasks", str(ROOT / "bench" / "release-cupti-tasks.txt")],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert out.strip() == (DATA / folder / "figures.md").read_text(encoding="utf-8").strip()
        record = json.loads((gpu / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
        ends = _jsonl(DATA / folder / "minimize.jsonl")
        assert {t: e["verified"] for t, e in record.items() if t in ends} == {
            t: e["verified"] for t, e in ends.items()
        }
    steps = (DATA / "minimal-fixes-2" / "steps.log").read_text(encoding="utf-8")
    assert "previous store.tgz unpacked: 110 answer files" in steps


def test_where_the_searches_stood_after_the_two_calls() -> None:
    """docs/analysis.md, "Minimal fixes of the release": where call 2 left the 65 searches (a replay of its
    store, ``corpus minimize --replay``, gives the same phases and counts), the candidates the kept
    compile-only answers failed without the GPU, and the fixes the package ships from these calls."""
    hunks, final, _ = _calls("minimal-fixes-2")
    phases = Counter(r["phase"] for r in final.values())
    assert phases == {"lines": 29, "done": 1, "hunks": 9, "start": 26}  # 30 past the hunk phase, 9 cut in it
    assert sum(r["asked"] for r in final.values()) == 1580
    ahead = [
        re.search(r"(\d+) candidates failed by their kept compile-only build", r["why"])
        for r in final.values()
    ]
    assert (sum(int(m.group(1)) for m in ahead if m), sum(m is not None for m in ahead)) == (261, 17)
    shipped = json.loads(
        (
            ROOT / "beavertui" / "engine" / "corpus" / "known" / "fixes" / SLUG / "minimal_fixes.json"
        ).read_text(encoding="utf-8")
    )["tasks"]
    # these calls' 18 are all still shipped; the later calls' line phases made 8 more of them 1-minimal over
    # lines (h100-2026-12-06b), none larger
    these = {t for t, r in hunks.items() if r["verified"]}
    assert len(these) == 18 and these <= set(shipped)
    assert Counter(shipped[t]["minimality"] for t in these) == {"hunks": 9, "lines": 9}
    assert all(shipped[t]["lines"] <= hunks[t]["lines"] for t in these)
    assert (
        shipped["cuda_110__logic_error__957be815"]["minimality"]
        == final["cuda_110__logic_error__957be815"]["minimality"]
    )


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(DATA / "release-lane" / "lane-out.tgz", tmp_path_factory.mktemp("lane"), ".")


def _stages(lane: Path) -> tuple[list[dict[str, Any]], float]:
    entries = sl.read(lane / "sessions" / "lane")
    return entries, min(e["asked"] for e in entries)


def test_the_nvcc_lane_run_finished_45_of_74(lane: Path) -> None:
    s = rl.summary(lane / "sessions" / "lane")
    assert (s["sessions"], s["final"], s["final_within_300s"]) == (74, 45, 30)
    assert s["last_final_s"] == pytest.approx(496.1, abs=0.1)
    assert s["longest_wait_without_timing_s"] == pytest.approx(45.1, abs=0.1)
    assert s["longest_wait_at_s"] == pytest.approx(162.1, abs=0.1)
    assert (s["timing_stages"], s["timing_stage_median_s"]) == (45, pytest.approx(3.08, abs=0.01))
    assert sum(1 for t in s["final_s"] if t <= 418.0) == 40  # type: ignore[union-attr]
    earlier = extract_run(EARLIER / "release-lane" / "lane-out.tgz", lane.parent / "earlier", ".")
    before = rl.summary(earlier / "sessions" / "lane")
    assert (before["sessions"], before["final"], before["final_within_300s"]) == (77, 42, 32)
    assert before["longest_wait_without_timing_s"] == pytest.approx(31.8, abs=0.1)
    assert before["longest_wait_at_s"] == pytest.approx(23.1, abs=0.1)
    assert (before["timing_stages"], before["timing_stage_median_s"]) == (35, pytest.approx(2.43, abs=0.01))
    assert "for 418 s" in (EARLIER / "release-lane" / "steps.log").read_text(encoding="utf-8")
    assert "for 498 s" in (DATA / "release-lane" / "steps.log").read_text(encoding="utf-8")
    said = (lane / "lane.log").read_text(encoding="utf-8")
    assert "48/74 sessions done" in said and "26 were running and are cut" in said
    # 86 instances of the nvcc families: 7 unusable by the H100's known verdicts and the 5 cudabench ones
    # without a reference skipped (the earlier run, before the known set, skipped only those 5)
    assert "12 task(s) skipped" in said
    assert said.count(f"unusable on {SLUG} (the package's known verdicts)") == 7
    assert said.count("the family has no reference solution") == 5
    assert f"24 task(s) not validated on {SLUG} yet" in said
    # the timing lane's stages: rank -1 in the stage log
    entries, _ = _stages(lane)
    assert {e.get("rank") for e in entries if e["stage"] in ("timing", "prepare")} == {-1}


def test_sessions_started_when_the_timing_stretches_ended(lane: Path) -> None:
    sessions = _sessions(lane / "sessions" / "lane")
    t0 = min(h.t for h, _ in sessions)
    starts = sorted(h.t - t0 for h, _ in sessions)
    waves = [sum(1 for s in starts if a <= s < a + 5) for a in (0, 162, 478)]
    assert waves == [32, 23, 19] and sum(waves) == len(starts) == 74
    entries, s0 = _stages(lane)
    assert round(s0 - t0, 1) == 0.2  # the first session started 0.2 s before the first stage was asked
    timing_ends = [e["ended"] for e in entries if e["stage"] == "timing"]
    second = min(h.t for h, _ in sessions if h.t - t0 > 5)
    third = min(h.t for h, _ in sessions if h.t - t0 > 300)
    # the second and third waves within 2 s and 4 s of a timing stage that ended a stretch (161.1 s, 476.2 s)
    before_second = max(e for e in timing_ends if e <= second)
    before_third = max(e for e in timing_ends if e <= third)
    assert second - before_second < 2.0 and third - before_third < 4.0
    assert (round(before_second - s0, 1), round(before_third - s0, 1)) == (161.1, 476.2)
    cut = [ev for _, ev in sessions if not any(isinstance(e, SessionEnd) for e in ev)]
    assert len(cut) == 26 and sum(not any(isinstance(e, Request) for e in ev) for ev in cut) == 19


def test_the_stage_log_summary(lane: Path) -> None:
    d = sl.summary(lane / "sessions" / "lane")
    assert d["span_s"] == 495.8
    assert d["gpus"]["0"] == {
        "exclusive": 388.7, "instrumented": 59.3, "runs": 41.3, "idle while stages waited": 2.7, "idle": 3.9
    }  # fmt: skip
    t = d["stages"]["timing"]
    assert (t["n"], t["hold_sum_s"], t["wait_max_s"]) == (45, 388.7, 75.0)
    assert d["stages"]["run"]["n"] == 84 and d["stages"]["run"]["wait_max_s"] == 301.6
    assert d["stages"]["sanitize"]["wait_max_s"] == 140.9
    assert d["build_waiting_s"] == 36.7
    said = (lane / "stages.txt").read_text(encoding="utf-8")  # as the call printed it, before the fix
    assert "GPU 0: exclusive 388.7 s, instrumented 59.3 s, runs 41.3 s, idle, stages waiting 2.7 s" in said


def test_the_timing_lane_held_the_gpu_while_the_runs_waited(lane: Path) -> None:
    rows = sl.timeline(lane / "sessions" / "lane", 25.0)["gpus"]["0"]
    by = {r["from_s"]: r for r in rows}
    assert len(rows) == 20 and rows[-1]["to_s"] == 495.8
    # 75-150 s and 225-475 s: timing alone, but for 10.3 s of runs in 325-350 s
    for a in (100.0, 125.0, *(225.0 + 25 * k for k in range(10))):
        if a == 325.0:
            assert (by[a]["held_s"]["timing"], by[a]["held_s"]["run"]) == (14.7, 10.3)
            continue
        assert by[a]["held_s"] == {"run": 0.0, "sanitize": 0.0, "timing": 25.0}, a
    assert by[75.0]["held_s"]["timing"] == 24.4
    assert [by[225.0 + 25 * k]["waiting"]["run"] for k in range(10)] == [18] * 5 + [11] * 5
    assert min(by[a]["waiting"]["run"] for a in (75.0, 100.0, 125.0)) == 10
    assert [by[a]["longest_wait_s"] for a in (125.0, 450.0, 475.0)] == [137.2, 299.7, 301.6]
    assert round(sum(by[a]["held_s"]["timing"] for a in (75.0, 100.0, 125.0)), 1) == 74.4  # of the 75 s
    # the lab file shows the command's table as it prints it (but its first line, the run's folder)
    printed = sl.render_timeline(sl.timeline(lane / "sessions" / "lane", 25.0)).splitlines()[1:]
    assert "\n".join(printed) in (ROOT / "docs" / "lab" / "h100-2026-12-05-late.md").read_text(
        encoding="utf-8"
    )


def test_the_runs_of_the_later_sessions_waited_up_to_302_s(lane: Path) -> None:
    entries, t0 = _stages(lane)
    runs = [e for e in entries if e["stage"] == "run" and 44 <= e["rank"] <= 54]
    assert len(runs) == 11
    assert (round(min(e["asked"] for e in runs) - t0, 1), round(max(e["asked"] for e in runs) - t0, 1)) == (
        175.3,
        213.3,
    )
    assert (round(min(e["began"] for e in runs) - t0, 1), round(max(e["began"] for e in runs) - t0, 1)) == (
        476.2,
        481.2,
    )
    worst = max(runs, key=lambda e: e["began"] - e["asked"])
    assert (worst["task"], round(worst["began"] - worst["asked"], 1)) == (
        "cuda_227__memory_crash__96f90a9e",
        301.6,
    )
    (r42,) = [e for e in entries if e["stage"] == "run" and e["rank"] == 42]
    assert (round(r42["asked"] - t0, 1), round(r42["began"] - t0, 1)) == (171.0, 331.1)
    # the gap after cuda_20's timing (329.1-339.3 s): runs by session rank, whose sessions then queued the
    # six timing stages to 476.2 s
    gap = [e for e in entries if e["stage"] in ("run", "sanitize") and 224.5 < e["began"] - t0 < 476.0]
    assert (
        len(gap) == 7
        and {e["stage"] for e in gap} == {"run"}
        and (min(e["rank"] for e in gap), max(e["rank"] for e in gap)) == (32, 42)
    )
    later = sorted(e["asked"] - t0 for e in gap if e["rank"] != 42)
    assert (round(later[0], 1), round(later[-1], 1)) == (223.8, 229.3)
    after = [e for e in entries if e["stage"] == "timing" and 339.0 < e["began"] - t0 < 476.0]
    assert {e["task"] for e in after} == {e["task"] for e in gap if e["rank"] != 42} and len(after) == 6
    assert round(min(e["began"] for e in after) - t0, 1) == 339.3
    # each timing stage from 224.5 s on handed the GPU to another timing stage already waiting (timing first),
    # but for cuda_20's at 329.1 s, after which the runs had the GPU 10.2 s, until 339.3 s
    timings = sorted((e for e in entries if e["stage"] == "timing"), key=lambda e: e["began"])
    stretch = [e for e in timings if 224.0 <= e["began"] - t0 < 476.0]
    none_waiting = [
        e["task"] for e in stretch
        if not any(o["asked"] < e["ended"] and o["began"] >= e["ended"] - 1e-6 for o in timings if o is not e)
    ]  # fmt: skip
    assert none_waiting == ["cuda_20__memory_crash__f1025423", "cuda_204__compile_error__33efd336"]
    assert round(stretch[0]["began"] - t0, 1) == 224.5 and round(stretch[-1]["ended"] - t0, 1) == 476.2
    assert len(stretch) == 19 and round(sum(e["ended"] - e["began"] for e in stretch), 1) == 241.3
    at = {e["task"].split("__")[0]: (round(e["began"] - t0, 1), round(e["ended"] - t0, 1)) for e in stretch}
    assert at["cuda_20"][1] == 329.1 and min(b for b, _ in at.values() if b > 329.1) == 339.3
    assert at["cuda_193"][0] == 354.1 and at["cuda_207"][0] == at["cuda_193"][1]
    assert at["cuda_204"][0] == at["cuda_207"][1]
    early = {
        e["task"].split("__")[0]: round(e["ended"] - e["began"], 1) for e in timings if e["began"] - t0 < 150
    }
    assert (early["cuda_167"], early["cuda_173"]) == (39.6, 31.8)
    longest = sorted(stretch, key=lambda e: e["ended"] - e["began"])[-5:]
    assert [(e["task"].split("__")[0], round(e["ended"] - e["began"], 1)) for e in longest] == [
        ("cuda_173", 28.7), ("cuda_194", 38.3), ("cuda_207", 38.5), ("cuda_193", 39.1), ("cuda_204", 44.4)
    ]  # fmt: skip


def test_the_named_baselines_on_the_h100_again(tmp_path: Path) -> None:
    with tarfile.open(DATA / "baselines" / "baselines.tgz") as tar:
        tar.extractall(tmp_path / "late", filter="data")
    with tarfile.open(EARLIER / "baselines" / "baselines.tgz") as tar:
        tar.extractall(tmp_path / "early", filter="data")
    bl = tmp_path / "late" / "bl"
    assert "41 of 41 tasks stored" in (bl / "native-run.md").read_text(encoding="utf-8")
    native = (bl / "native-table.md").read_text(encoding="utf-8")
    assert "41 tasks, 38 with eager, torch.compile (both modes) and CUDA Graph times" in native
    # the same 41 sets as the first call's: eager and graph agree, torch.compile less so
    ratios: dict[str, list[float]] = {}
    for path in (tmp_path / "late" / "corpus").glob(f"*/baselines/named/{SLUG}.json"):
        new = json.loads(path.read_text(encoding="utf-8"))
        old = json.loads(
            (tmp_path / "early" / path.relative_to(tmp_path / "late")).read_text(encoding="utf-8")
        )
        before = {t["name"]: t["median_ms"] for t in old["times"]}
        for t in new["times"]:
            if t["median_ms"] and before.get(t["name"]):
                ratios.setdefault(t["name"], []).append(t["median_ms"] / before[t["name"]])
    summary = {
        k: (len(v), round(statistics.median(v), 3), round(min(v), 2), round(max(v), 2))
        for k, v in ratios.items()
    }
    assert summary["eager"] == (41, 1.002, 0.88, 1.03) and summary["graph"] == (38, 1.002, 0.98, 1.03)
    assert summary["compile"] == (41, 0.979, 0.46, 1.59) and summary["compile_ro"] == (41, 0.986, 0.6, 1.42)
    assert round(1 / min(ratios["compile"]), 1) == 2.2
    assert (
        round(1 - min(ratios["eager"] + ratios["graph"]), 3) == 0.124
        and max(ratios["eager"] + ratios["graph"]) < 1.124
    )
    # kernelbench: 48 s to start drivers (258 s less WARM_S 150 and 60, the script at 483a7eb)
    steps = (DATA / "baselines" / "steps.log").read_text(encoding="utf-8")
    assert "kernelbench: start (258 s)" in steps and 258 - 150 - 60 == 48
    assert "kernelbench: rc 0 (6 sets)" in steps and "[201 s] end" in steps
    run = (bl / "kernelbench-run.md").read_text(encoding="utf-8")
    assert "6 of 62 tasks stored" in run and run.count("not reached within the time budget") == 56
    table = (bl / "kernelbench-table.md").read_text(encoding="utf-8")
    assert "62 tasks, 3 with eager, torch.compile (both modes) and CUDA Graph times" in table
    log = (bl / "kernelbench.log").read_text(encoding="utf-8")
    assert "3 driver(s) warm up side by side (an estimated 71.1 GiB of the 71.7 GiB" in log
    alone = [
        line for line in log.splitlines() if "needs an estimated 113.5 GiB" in line and "timed alone" in line
    ]
    assert [line.split("__")[0] for line in alone] == ["kernelbench_level1_36", "kernelbench_level1_37"]
    oom = [line for line in log.splitlines() if "compile_ro: torch.OutOfMemoryError" in line]
    assert [line.split("__")[0] for line in oom] == ["kernelbench_level1_36", "kernelbench_level1_37"]
    assert all("Tried to allocate 14.00 GiB" in line and "this process has 70.7" in line for line in oom)


def test_the_calls_steps() -> None:
    def steps(folder: str) -> str:
        return (DATA / folder / "steps.log").read_text(encoding="utf-8")

    last = {f: re.findall(r"^\[(\d+) s\]", steps(f), re.M)[-1] for f in
            ("minimal-fixes-1", "baselines", "release-lane", "minimal-fixes-2")}  # fmt: skip
    assert last == {
        "minimal-fixes-1": "470",
        "baselines": "201",
        "release-lane": "505",
        "minimal-fixes-2": "308",
    }
    for folder, oracle_s in (("minimal-fixes-1", 438), ("minimal-fixes-2", 268)):
        assert f"minimize: {oracle_s} s of oracle calls, 12 workers, 6 runs on the GPU at once" in steps(
            folder
        )
        assert "merged .release/prev/compile-only/: 65 answer files" in steps(folder)
        assert SLUG in steps(folder)
