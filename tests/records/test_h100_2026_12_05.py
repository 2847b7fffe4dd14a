"""The H100 runs of 2026-12-05 (docs/data/h100-2026-12-05, docs/lab/h100-2026-12-05.md): the release's nvcc
families and kernelbench instances on a GPU with no known verdicts, and the named baselines there. Every
figure the lab file quotes comes out of these files, through the product's readers and the bench scripts."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

from beavertui.engine.session.events import Request, SessionEnd, SessionHeader, Timed
from beavertui.engine.session.store import read_session
from tests.conftest import extract_run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import release_lane_bench as rl  # noqa: E402

DATA = ROOT / "docs" / "data" / "h100-2026-12-05"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(DATA / "release-lane" / "lane-out.tgz", tmp_path_factory.mktemp("lane"), ".")


def _sessions(run: Path) -> list[tuple[SessionHeader, list[object]]]:
    out = []
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, _ = read_session(path)
        assert header is not None
        out.append((header, events))
    return out


def test_the_nvcc_lane_run_finished_42_of_77(lane: Path) -> None:
    s = rl.summary(lane / "sessions" / "lane")
    assert (s["sessions"], s["final"], s["final_within_300s"]) == (77, 42, 32)
    assert s["last_final_s"] == pytest.approx(406.2, abs=0.1)
    assert s["loop_end_s"] == {"median": pytest.approx(126.2, abs=0.1), "max": pytest.approx(406.8, abs=0.1)}
    assert s["longest_wait_without_timing_s"] == pytest.approx(31.8, abs=0.1)
    assert s["longest_wait_at_s"] == pytest.approx(23.1, abs=0.1)
    assert (s["timing_stages"], s["timing_stage_median_s"]) == (35, pytest.approx(2.43, abs=0.01))
    assert sum(1 for t in s["final_s"] if t <= 252.0) == 29  # type: ignore[union-attr]
    said = (lane / "lane.log").read_text(encoding="utf-8")
    assert "55/81 sessions done" in said and "22 were running and are cut" in said


def test_sessions_started_in_three_waves_while_timing_held_the_gpu_224_s(lane: Path) -> None:
    sessions = _sessions(lane / "sessions" / "lane")
    t0 = min(h.t for h, _ in sessions)
    starts = sorted(round(h.t - t0) for h, _ in sessions)
    waves = {w: sum(1 for s in starts if w <= s < w + 5) for w in (0, 93, 257)}
    assert waves == {0: 32, 93: 21, 257: 24} and sum(waves.values()) == len(starts)
    timings = [e for _, ev in sessions for e in ev if isinstance(e, Timed)]
    walls = sorted(t.result.wall_s or 0.0 for t in timings)
    assert len(walls) == 35 and sum(walls) == pytest.approx(223.7, abs=0.1)
    assert [round(w, 1) for w in walls[-6:]] == [8.0, 21.3, 24.8, 29.1, 30.9, 33.3]
    # the five longest at 3 runs a side, cuda_20 (8.0 s) at 5
    longest = sorted(timings, key=lambda t: t.result.wall_s or 0.0)[-6:]
    assert [t.result.runs for t in longest] == [5, 3, 3, 3, 3, 3]
    stopped = [
        int(m.group(1)) for t in timings if (m := re.search(r"(\d+) builds? stopped", t.result.note or ""))
    ]
    assert max(stopped) == 16
    # from a session's header to its first turn: the start check (the reference's run first, on this GPU)
    checks = [
        next(e.t for e in ev if isinstance(e, Request)) - h.t
        for h, ev in sessions
        if any(isinstance(e, Request) for e in ev)
    ]
    assert 10.0 < min(checks) < 11.0 and 229.0 < max(checks) < 231.0
    cut = [ev for _, ev in sessions if not any(isinstance(e, SessionEnd) for e in ev)]
    assert len(cut) == 22 and sum(not any(isinstance(e, Request) for e in ev) for ev in cut) == 15


def test_the_verdicts_the_batch_stored_on_the_h100(lane: Path) -> None:
    found = [json.loads(p.read_text()) for p in (lane / "verdicts-lane").rglob("*.json")]
    assert {r["gpu"] for r in found} == {"nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"}
    counts = {
        v: sum(1 for r in found if r["verdict"] == v) for v in ("usable", "usable_relabelled", "unusable")
    }
    assert counts == {"usable": 36, "usable_relabelled": 19, "unusable": 7}
    assert sum(1 for r in found if r.get("reference_run_s") is not None) == 59


def test_kernelbench_on_the_fresh_h100_finished_2_sessions(tmp_path: Path) -> None:
    run = extract_run(DATA / "release-kernelbench" / "lane-out.tgz", tmp_path, ".")
    s = rl.summary(run / "sessions" / "kernelbench")
    assert (s["sessions"], s["final"], s["timing_stages"]) == (34, 2, 2)
    assert s["longest_wait_without_timing_s"] == pytest.approx(80.7, abs=0.1)
    sessions = _sessions(run / "sessions" / "kernelbench")
    waiting = [h for h, ev in sessions if not any(isinstance(e, Request) for e in ev)]
    assert len(waiting) == 32  # at their start checks until the stop
    t0 = min(h.t for h, _ in sessions)
    assert sum(h.t - t0 < 1.0 for h in waiting) == 30  # 30 of them from the start, the whole 509 s
    first_turn = {
        h.task.id.split("__")[0]: next(e.t for e in ev if isinstance(e, Request)) - t0
        for h, ev in sessions
        if any(isinstance(e, Request) for e in ev)
    }
    assert {k: round(v) for k, v in first_turn.items()} == {
        "kernelbench_level1_58": 82,
        "kernelbench_level1_16": 149,
    }
    ends = [ev[-1] for _, ev in sessions if ev and isinstance(ev[-1], SessionEnd)]
    assert sorted(round(e.best_speedup or 0, 2) for e in ends if e.success) == [1.0, 1.0]
    said = (run / "kernelbench.log").read_text(encoding="utf-8")
    assert "83 task(s) not validated on nvidia_h100_80gb_hbm3_sm_90_cuda_13_0" in said


def test_the_named_baselines_on_the_h100(tmp_path: Path) -> None:
    with tarfile.open(DATA / "baselines" / "baselines.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    native = (tmp_path / "bl" / "native-table.md").read_text(encoding="utf-8")
    assert "41 tasks, 38 with eager, torch.compile (both modes) and CUDA Graph times" in native
    run = (tmp_path / "bl" / "native-run.md").read_text(encoding="utf-8")
    incomplete = [line.split("|")[1].strip() for line in run.splitlines() if "graph: " in line]
    assert incomplete == ["histogram_00", "histogram_01", "histogram_02"]
    assert all("cudaErrorStreamCaptureInvalidated" in line for line in run.splitlines() if "graph: " in line)
    kb = (tmp_path / "bl" / "kernelbench-table.md").read_text(encoding="utf-8")
    assert "62 tasks, 4 with eager, torch.compile (both modes) and CUDA Graph times" in kb
    kb_run = (tmp_path / "bl" / "kernelbench-run.md").read_text(encoding="utf-8")
    assert "32 of 62 tasks stored" in kb_run
    log = (tmp_path / "bl" / "kernelbench.log").read_text(encoding="utf-8")
    assert log.count("not timed again alone within the time budget") == 24


def test_the_committed_h100_baselines_render_the_table_docs_analysis_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from beavertui.cli import main

    slug = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"
    assert main(["corpus", "baselines", "--table", "--gpu-slug", slug, "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "41 tasks, 38 with eager, torch.compile (both modes) and CUDA Graph times" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    docs = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert len(table) == 43 and "\n".join(table) in docs
    # as CSV: the same times, one number a cell (the vendor's library in a column of its own)
    assert main(["corpus", "baselines", "--table", "--gpu-slug", slug, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    md = {cells[0]: cells for cells in ([c.strip() for c in ln.strip("|").split("|")] for ln in table[2:])}
    assert [r["task"] for r in rows] == list(md)
    for r in rows:
        shown = md[r["task"]]
        for i, name in enumerate(
            ("reference", "eager", "compile", "compile-ro", "graph", "vendor", "roofline")
        ):
            cell = r[f"{name} ms"]
            assert (cell == "") == (shown[i + 1] == "-"), (r["task"], name)
            if cell:
                assert float(cell) == pytest.approx(float(shown[i + 1].split()[0]), rel=1e-3), (
                    r["task"],
                    name,
                )
        if r["vendor ms"]:
            assert f"({r['vendor library']})" in shown[6]
    # the sets are the ones this call stored on the GPU, unchanged
    with tarfile.open(DATA / "baselines" / "baselines.tgz") as tar:
        for member in tar.getmembers():
            if member.name.startswith("corpus/") and member.isfile():
                data = tar.extractfile(member)
                assert data is not None and (ROOT / member.name).read_bytes() == data.read(), member.name
