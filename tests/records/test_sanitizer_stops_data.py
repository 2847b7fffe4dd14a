"""The H200 records behind the rule that a timing stage waits for a sanitizer run instead of stopping it
(docs/data/h200-2026-12-04/release-cufft-*, sanitizer-stop-probe; docs/lab/h200-2026-12-04.md), recomputed: which
sanitizer runs were stopped, when, and whether they ended, from the batches' process snapshots
(bench/procs_watch.py) and kept start checks; the batch with the new rule; the probe of stops alone."""

from __future__ import annotations

import json
import statistics
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "h200-2026-12-04"
sys.path.insert(0, str(ROOT / "bench"))

import procs_watch  # noqa: E402


def _unpacked(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    with tarfile.open(DATA / name / "batch-out.tgz") as t:
        t.extractall(out, filter="data")
    return out


def _runs(root: Path) -> dict[str, procs_watch.SanitizerRun]:
    return {r.work[:40]: r for r in procs_watch.read(root / "procs.log")}


def _checks(root: Path) -> dict[str, dict[str, Any]]:
    """Each kept start check's stages (build, run, sanitize) by task, and the in-flight notes of cut ones."""
    out: dict[str, dict[str, Any]] = {}
    for f in sorted(root.glob("startlogs/*/*.json")):
        d = json.loads(f.read_text())
        stages = d.get("stages") if f.name.endswith(".inflight.json") else None
        if stages is None:
            stages = [
                e["result"]
                for e in d.get("events", [])
                if isinstance(e.get("result"), dict) and "stage" in e["result"]
            ]
        out[d["task"][:40]] = {"stages": stages, "in_flight": f.name.endswith(".inflight.json")}
    return out


C2D, R2C, C16K = (
    "cufft_samples_c2c_2d_1024x1024_fp32__per",
    "cufft_samples_r2c_1d_1024_fp32__perf_bro",
    "cufft_samples_c2c_1d_16384_fp32__perf_br",
)


def _sanitizer_runs_stopped_in_their_first_seconds_did_not_go_on(tmp_path: Path) -> None:
    """Batch with the former rule (sanitizer runs stopped for timing): the two stopped 7 and 4 s in ran to
    their 300 s limit, their harness still at its build step; the one stopped 11 s in ended."""
    root = _unpacked("release-cufft-watch", tmp_path)
    runs = _runs(root)
    assert runs[C2D].stops[0] == (104, 7) and runs[R2C].stops[0] == (104, 4)
    assert runs[C16K].stops == [(104, 11)] and runs[C16K].last_seen_s == 104
    assert all(runs[k].target_cpu_pct is not None and runs[k].target_cpu_pct > 90 for k in (C2D, R2C))
    checks = _checks(root)
    for k in (C2D, R2C):
        san = [s for s in checks[k]["stages"] if s["stage"] == "sanitize"]
        assert len(san) == 1 and san[0]["timed_out"] and 300.0 <= san[0]["duration_s"] < 300.1
        assert 26.2 < san[0]["paused_s"] < 26.3
        assert san[0]["log"].strip().endswith("[Eval] Compiling solution...")
    assert "cut: cufft_samples_c2c_2d_1024x1024" in (DATA / "release-cufft-watch" / "batch.log").read_text()


def _the_same_batch_with_every_run_stoppable_again_left_two_sanitizer_runs_hung(tmp_path: Path) -> None:
    """--pause-for-timing all on a fresh cache: stopped 7 and 2 s in, both still running 184 and 188 s in
    when the call's budget cut the batch; their checks' runs had ended (said before the sanitizer)."""
    root = _unpacked("release-cufft-stopall", tmp_path)
    runs = _runs(root)
    assert runs[C16K].stops[0] == (73, 7) and runs[C2D].stops[0] == (73, 2)
    assert runs[C16K].running_at_end and runs[C2D].running_at_end
    assert (runs[C16K].last_elapsed_s, runs[C2D].last_elapsed_s) == (188, 184)
    assert runs[R2C].stops == [(73, 8)] and not runs[R2C].running_at_end
    checks = _checks(root)
    for k in (C16K, C2D):
        assert checks[k]["in_flight"] and [s["stage"] for s in checks[k]["stages"]] == ["build", "run"]


def _with_sanitizer_runs_waited_for_every_session_ended(tmp_path: Path) -> None:
    root = _unpacked("release-cufft-nostop", tmp_path)
    assert (
        "9/9 sessions (0 already done), 8 passed" in (DATA / "release-cufft-nostop" / "batch.log").read_text()
    )
    assert all(not r.stops for r in _runs(root).values())
    san = [s for c in _checks(root).values() for s in c["stages"] if s["stage"] == "sanitize"]
    assert len(san) == 4 and not any(s["timed_out"] or s.get("paused_s") for s in san)
    assert (min(s["duration_s"] for s in san), max(s["duration_s"] for s in san)) == (7.6299, 15.3104)
    walls = [
        json.loads(line)["result"]["wall_s"]
        for f in root.glob("sessions/**/*.jsonl")
        for line in f.read_text().splitlines()
        if json.loads(line).get("kind") == "timing"
    ]
    assert (len(walls), min(walls), statistics.median(walls), max(walls)) == (9, 2.962, 3.316, 3.646)


def _runs_after_a_cached_applied_build_compiled_again(tmp_path: Path) -> None:
    """On a machine whose compile cache held the reference submissions' builds, those builds were restored
    (0.05-0.08 s) and the test runs after them compiled both extensions again: 50 to 73 s each."""
    root = _unpacked("release-cufft-stopall-warm", tmp_path)
    builds, runs = [], []
    for f in root.glob("sessions/**/*.jsonl"):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("kind") == "build" and e["result"].get("cached"):
                builds.append(e["result"]["duration_s"])
            if e.get("kind") == "run" and not e["result"].get("reused"):
                runs.append(e["result"]["duration_s"])
    assert len(builds) == 8 and max(builds) < 0.1
    assert len(runs) == 8 and (round(min(runs), 1), round(statistics.median(runs), 1), round(max(runs), 1)) == (
        50.0, 58.6, 72.7,
    )  # fmt: skip


def _stops_alone_did_not_hang_a_sanitizer_run(part: str) -> None:
    """The probe (bench/sanitizer_stop_probe.py) on an idle H200: every case, stopped 0.1 to 4 s in for 10 or
    15 s or not at all, with the sanitizer's launch timeout or without, ended with exit 0."""
    got = json.loads((DATA / "sanitizer-stop-probe" / part).read_text())
    assert got and all(r["rc"] == 0 and not r["timed_out"] for r in got.values())
    stopped = [r for r in got.values() if r["stop_at_s"] is not None]
    assert stopped and all(r["stopped"] and r["paused_s"] >= 10.0 for r in stopped)


def _fresh(tmp_path: Path, n: int) -> Path:
    """A folder of its own under the test's, for each check that writes."""
    d = tmp_path / str(n)
    d.mkdir()
    return d


def test_the_sanitizer_stop_records_read_back(tmp_path: Path) -> None:
    """The records of docs/data/h200-2026-12-04 (release-cufft-*, sanitizer-stop-probe), recomputed,
    one check each. It fails only if the archive or the bench scripts that read it change."""
    _sanitizer_runs_stopped_in_their_first_seconds_did_not_go_on(_fresh(tmp_path, 1))
    _the_same_batch_with_every_run_stoppable_again_left_two_sanitizer_runs_hung(_fresh(tmp_path, 2))
    _with_sanitizer_runs_waited_for_every_session_ended(_fresh(tmp_path, 3))
    _runs_after_a_cached_applied_build_compiled_again(_fresh(tmp_path, 4))
    _stops_alone_did_not_hang_a_sanitizer_run("probe-1.json")
    _stops_alone_did_not_hang_a_sanitizer_run("probe-2.json")
