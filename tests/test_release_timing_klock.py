"""bench/release_timing_bench.py ``run --klock K``: the hold per call (beaver_cupti.c's kernel lock) against the
hold per process, planned, alternated and summed up on CPU.

The GPU timings themselves come from a GPU machine (scripts/gpu-release-timing.sh --part klock); here the
rounds are run with a timing function that records what it was asked and when, and the summary reads result
files written as the bench writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.cli_in_process import run_script

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "release_timing_bench.py"


def _bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "bench"))
    import release_timing_bench

    return release_timing_bench


def test_rounds_alternate_which_design_goes_first() -> None:
    rtb = _bench()
    assert rtb.klock_rounds(list("abcdefg"), 3) == [["a", "b", "c"], ["d", "e", "f"], ["g"]]
    assert [rtb.design_order(r) for r in range(3)] == [
        ("alone", "klock"), ("klock", "alone"), ("alone", "klock"),
    ]  # fmt: skip
    env = rtb.klock_environment(Path("/tmp/l/gpu.lock"), {"PATH": "/usr/bin"})
    assert env == {
        "PATH": "/usr/bin",
        "BEAVER_KERNEL_LOCK": "/tmp/l/gpu.lock",
        "BEAVER_KERNEL_LOCK_MODE": "ex",
    }


def test_a_round_times_its_tasks_one_after_another_then_all_at_once_and_the_budget_cuts_whole_rounds() -> (
    None
):
    """The kernel-lock design's stages of a round run at the same time: each waits at a barrier of the round's
    size, which only all of them together pass; one stage at a time, never two at once."""
    rtb = _bench()
    ids = [f"t{i}" for i in range(7)]
    groups = rtb.klock_rounds(ids, 3)
    barriers = {tuple(g): threading.Barrier(len(g), timeout=30) for g in groups}
    calls: list[tuple[str, str]] = []
    failures: list[str] = []
    active, most = [0], [0]
    guard = threading.Lock()

    def time_one(tid: str, design: str) -> None:
        with guard:
            calls.append((tid, design))
            active[0] += 1
            most[0] = max(most[0], active[0]) if design == "alone" else most[0]
        try:
            if design == "klock":
                (group,) = [g for g in barriers if tid in g]
                barriers[group].wait()
        except threading.BrokenBarrierError:
            failures.append(tid)
        finally:
            with guard:
                active[0] -= 1

    starts = iter([True, True, False])
    rounds: list[dict[str, Any]] = []
    left = rtb.klock_schedule(ids, 3, lambda: next(starts), time_one, rounds.append)
    assert not failures and most[0] == 1
    assert left == ["t6"]  # the third round is not started: its task is left for a later run
    assert [r["tasks"] for r in rounds] == [["t0", "t1", "t2"], ["t3", "t4", "t5"]]
    assert [r["order"] for r in rounds] == [["alone", "klock"], ["klock", "alone"]]
    assert all(r["alone_wall_s"] >= 0 and r["klock_wall_s"] >= 0 for r in rounds)
    # round 0: one at a time in the task order, then the three at once; round 1 the other way round
    assert calls[:3] == [("t0", "alone"), ("t1", "alone"), ("t2", "alone")]
    assert sorted(calls[3:6]) == [("t0", "klock"), ("t1", "klock"), ("t2", "klock")]
    assert sorted(calls[6:9]) == [("t3", "klock"), ("t4", "klock"), ("t5", "klock")]
    assert calls[9:] == [("t3", "alone"), ("t4", "alone"), ("t5", "alone")]


def _timing(ref: list[float], cand: list[float], wall: float) -> dict[str, Any]:
    sp = statistics.median(ref) / statistics.median(cand)
    cv = lambda xs: statistics.stdev(xs) / statistics.mean(xs)  # noqa: E731
    return {
        "wall_s": wall, "method": "cupti", "runs": len(ref), "speedup": round(sp, 4),
        "reference_ms": statistics.median(ref), "candidate_ms": statistics.median(cand),
        "reference_cv": round(cv(ref), 4), "candidate_cv": round(cv(cand), 4),
        "reference_samples": ref, "candidate_samples": cand, "phases": [],
    }  # fmt: skip


def _folder(tmp_path: Path, klock_b: list[float]) -> Path:
    """Two rounds of two tasks: a and b; b's candidate under the lock has the samples given."""
    base = [1.00, 1.01, 0.99]
    waits = [{"lock_calls": 40, "lock_wait_s": w, "lock_held_s": 0.02} for w in (0.5, 1.5, 1.0)]
    tasks = {
        "a": {"family": "cuda", "alone": _timing(base, base, 3.0), "klock": _timing(base, [1.0, 1.012, 0.99], 3.4)},
        "b": {"family": "cuda", "alone": _timing(base, base, 5.0), "klock": _timing(base, klock_b, 5.5)},
        "c": {"family": "cuda", "not_reached": ["alone", "klock"]},
    }  # fmt: skip
    doc = {
        "modes": ["on"], "klock": 2, "klock_mode": "ex", "order": ["a", "b", "c"], "tasks": tasks,
        "rounds": [
            {"tasks": ["a"], "order": ["alone", "klock"], "alone_wall_s": 3.1, "klock_wall_s": 3.5},
            {"tasks": ["b"], "order": ["klock", "alone"], "alone_wall_s": 5.1, "klock_wall_s": 5.6},
        ],
    }  # fmt: skip
    tasks["a"]["klock"]["phases"] = waits
    d = tmp_path / "rs"
    d.mkdir()
    (d / "release-stage.json").write_text(json.dumps(doc))
    return d


def _summary(tmp_path: Path, d: Path) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "summary.json"
    proc = run_script(BENCH, "summary", "--json", out, d, check=True)
    return proc.stdout, json.loads(out.read_text())["klock"]


def test_the_summary_counts_speedups_that_moved_beyond_their_interval_and_says_what_adoption_needs(
    tmp_path: Path,
) -> None:
    # b's candidate 9% faster under the lock, every run within 1%: beyond any interval of three such runs
    text, k = _summary(tmp_path, _folder(tmp_path, [0.91, 0.92, 0.90]))
    assert k["rounds"] == 2 and k["alone"]["wall_s"] == 8.2 and k["klock"]["wall_s"] == 9.1
    assert k["wall_klock_over_alone"] == round(9.1 / 8.2, 3)
    assert k["tasks"]["a"]["differs"] is False and k["tasks"]["b"]["differs"] is True
    assert k["tasks"]["b"]["ratio"] == round(_timing([1.0, 1.01, 0.99], [0.91, 0.92, 0.90], 0)["speedup"], 4)
    assert k["differ"] == 1 and k["adoptable"] is False
    assert "1 of 2 tasks' speedups differ between the designs" in text
    assert "does not meet what adopting it needs" in text
    assert "- c: not reached in mode(s) alone, klock" in text
    assert k["lock"] == {"runs": 3, "calls": 120, "median_wait_s": 1.0, "wait_s": 3.0, "held_s": 0.06}
    assert "Under the lock, 3 runs held the GPU for 120 calls, 0.06 s in all, and waited for it 3.0 s" in text


def test_a_set_with_the_same_speedups_and_a_lower_wall_meets_it(tmp_path: Path) -> None:
    d = _folder(tmp_path, [1.0, 1.011, 0.99])
    doc = json.loads((d / "release-stage.json").read_text())
    for r in doc["rounds"]:
        r["klock_wall_s"] = r["alone_wall_s"] / 2.5
    (d / "release-stage.json").write_text(json.dumps(doc))
    text, k = _summary(tmp_path, d)
    assert k["differ"] == 0 and k["wall_klock_over_alone"] == 0.4 and k["adoptable"] is True
    assert "The kernel lock meets what adopting it needs on this set" in text
    # a task whose interval is not known (one run a side) cannot show it
    doc["tasks"]["a"]["klock"]["reference_samples"] = [1.0]
    (d / "release-stage.json").write_text(json.dumps(doc))
    text, k = _summary(tmp_path, d)
    assert k["tasks"]["a"]["interval"] is None and k["adoptable"] is False
    assert "(1 without an interval)" in text


def test_a_design_that_failed_is_left_out_with_why(tmp_path: Path) -> None:
    """A timing that failed under the lock (a process that could not set the lock up ends with status 98)
    is listed with its reason, as a mode's failure is: the table alone would show one task fewer timed."""
    d = _folder(tmp_path, [1.0, 1.011, 0.99])
    doc = json.loads((d / "release-stage.json").read_text())
    why = "SpeedupUnavailable: cupti timing of the reference produced no samples (rc 98)"
    doc["tasks"]["b"]["klock"] = {"error": why, "wall_s": 0.2}
    (d / "release-stage.json").write_text(json.dumps(doc))
    text, k = _summary(tmp_path, d)
    assert k["klock"]["timed"] == 1
    assert f"- b [klock]: {why}" in text
    assert json.loads((tmp_path / "summary.json").read_text())["left_out"]["b [klock]"] == why


def test_a_folder_after_another_keeps_what_neither_reached_and_drops_a_build_timed_later(
    tmp_path: Path,
) -> None:
    """--after: the second folder times what the first did not reach; a task neither reached is still
    listed as not reached, one whose build failed in the first and timed in the second is not left out, and
    one the second tried and failed is listed with its error, not as not reached."""
    first = _folder(tmp_path, [1.0, 1.011, 0.99])
    doc = json.loads((first / "release-stage.json").read_text())
    doc["tasks"]["d"] = {"family": "cuda", "not_reached": ["alone", "klock"]}
    doc["tasks"]["e"] = {"family": "cuda", "error": "candidate build failed (rc 1): out of memory"}
    doc["tasks"]["f"] = {"family": "cuda", "not_reached": ["alone", "klock"]}
    (first / "release-stage.json").write_text(json.dumps(doc))
    base = [1.00, 1.01, 0.99]
    second = tmp_path / "rs2"
    second.mkdir()
    later = {
        "klock": 2, "klock_mode": "ex", "order": ["c", "d", "e"],
        "tasks": {
            "c": {"family": "cuda", "alone": _timing(base, base, 2.0), "klock": _timing(base, base, 2.1)},
            "d": {"family": "cuda", "not_reached": ["alone", "klock"]},
            "e": {"family": "cuda", "alone": _timing(base, base, 2.0), "klock": _timing(base, base, 2.2)},
            "f": {"family": "cuda", "alone": {"error": "SpeedupUnavailable: no samples", "wall_s": 0.1},
                  "klock": _timing(base, base, 2.2)},
        },
        "rounds": [{"tasks": ["c", "e"], "order": ["alone", "klock"], "alone_wall_s": 4.0, "klock_wall_s": 2.3}],
    }  # fmt: skip
    (second / "release-stage.json").write_text(json.dumps(later))
    out = tmp_path / "summary.json"
    proc = run_script(BENCH, "summary", "--json", out, first, second, check=True)
    doc = json.loads(out.read_text())
    assert doc["klock"]["klock"]["timed"] == 5 and doc["klock"]["rounds"] == 3
    # f was reached in the second folder: its failure is listed with why, not as a task not reached
    assert doc["left_out"] == {
        "d": "not reached in mode(s) alone, klock (the run's budget)",
        "f [alone]": "SpeedupUnavailable: no samples",
    }
    assert "- d: not reached in mode(s) alone, klock" in proc.stdout


#: The release's eight long CUPTI instances, as the H200 timed them one stage at a time with their runs
#: started ahead (docs/data/h200-2026-12-04: release-stage, release-stage-rest, release-stage-long,
#: release-stage-216): the stages over 20 s.
H200 = ROOT / "docs" / "data" / "h200-2026-12-04"


def _script(tmp_path: Path, *argv: str) -> tuple[int, str, Path]:
    """scripts/gpu-release-timing.sh run for real from a copy of the repository's root whose release
    (``.release/a/data``) holds no task: it gets through its steps, the bench stops at the tasks it was
    asked for, and the summary and the archive are still made. Returns its status, steps.log and $OUT."""
    root = tmp_path / "root"
    (root / "scripts").mkdir(parents=True)
    (root / ".release" / "a" / "data").mkdir(parents=True)
    for name in ("gpu-release-timing.sh", "gpu-common.sh"):
        shutil.copy(ROOT / "scripts" / name, root / "scripts" / name)
    for name in ("bench", "beavertui"):
        (root / name).symlink_to(ROOT / name)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("KLOCK", "MODES", "LOAD")} | {"OUT": str(out)}
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "gpu-release-timing.sh"), *argv],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, (out / "w" / "steps.log").read_text(), out


def test_the_long_part_runs_the_eight_long_stages_in_rounds_sized_from_their_recorded_times(
    tmp_path: Path,
) -> None:
    """--part klock-long: the A/B on the eight long instances, in the order of part long, rounds started only
    while 270 s are left. Rounds of 4 in that order held the H200 100.0 s and 131.7 s one stage at a time: a
    round starts only with room for its stages one at a time and as long again at once."""
    rc, steps, out = _script(tmp_path, "--part", "klock-long")
    assert rc == 0, steps
    (start,) = re.findall(r"klock-long: start \((\d+) s, rounds of 4 until (\d+) s\)", steps)
    b, until = map(int, start)
    assert 505 <= b <= 510 and b - until == 270  # budget 540, 30 s kept for the summary
    # the bench was asked for the long set's globs, in part long's order (the first one it could not find)
    assert "no task of the corpus matches 'cuda_167__*'" in (out / "w" / "rs.log").read_text()
    assert (out / "rs.tgz").is_file() and (out / "rs" / "summary.md").is_file()
    # the recorded long stages, in the bench's order of those globs, two rounds of 4
    rtb = _bench()
    walls: dict[str, float] = {}
    for name in ("release-stage", "release-stage-rest", "release-stage-long", "release-stage-216"):
        rows = json.loads((H200 / name / "release-stage.json").read_text())["tasks"]
        walls |= {t: r["on"]["wall_s"] for t, r in rows.items() if "speedup" in r.get("on", {})}
    long = sorted(t for t, w in walls.items() if w > 20.0)
    globs = [
        "cuda_167__*",
        "cuda_173__*",
        "cuda_193__*",
        "cuda_194__*",
        "cuda_204__*",
        "cuda_207__*",
        "cuda_216__*",
    ]
    order = rtb.wanted(argparse.Namespace(task=globs, tasks=None), sorted(walls))
    assert len(long) == 8 and sorted(order) == long
    rounds = [round(sum(walls[t] for t in g), 1) for g in rtb.klock_rounds(order, 4)]
    assert rounds == [100.0, 131.7]
    assert all(2 * r <= b - until for r in rounds)


def test_the_short_part_leaves_the_eight_long_ones_out(tmp_path: Path) -> None:
    rc, steps, out = _script(tmp_path, "--part", "klock")
    assert rc == 0, steps
    (start,) = re.findall(r"klock: start \((\d+) s, rounds of 4 until (\d+) s\)", steps)
    assert int(start[0]) - int(start[1]) == 150

    def ids(f: Path) -> list[str]:
        return [ln.strip() for ln in f.read_text().splitlines() if ln.strip() and not ln.startswith("#")]

    picked, cupti = ids(out / "w" / "klock-tasks.txt"), ids(ROOT / "bench" / "release-cupti-tasks.txt")
    long = {"cuda_167", "cuda_173", "cuda_193", "cuda_194", "cuda_204", "cuda_207", "cuda_216"}
    assert picked == [t for t in cupti if t.split("__")[0] not in long]
    assert (len(cupti), len(picked)) == (65, 57)
