"""bench/release_lane_bench.py on the H200 run of 2026-12-05 (docs/data/h200-2026-12-05/release-lane): the
release's nvcc families, scripted:@alternate, K = 2, first with each timing inside its session, then with
the timing lane at one worker per GPU. The numbers docs/lab/h200-2026-12-05.md quotes come out of the
session files: with one worker the lane's GPU sat idle between timings while every loop had ended."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from tests.conftest import extract_run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import release_lane_bench as rl  # noqa: E402

ARCHIVE = ROOT / "docs" / "data" / "h200-2026-12-05" / "release-lane" / "lane-out.tgz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(ARCHIVE, tmp_path_factory.mktemp("lane"), "sessions")


def test_the_lane_with_one_worker_left_most_timings_pending(runs: Path) -> None:
    lane = rl.summary(runs / "lane")
    assert (lane["sessions"], lane["final"], lane["timing_stages"]) == (65, 19, 19)
    assert lane["loop_end_s"]["max"] == pytest.approx(128.8, abs=0.1)  # type: ignore[index]
    assert lane["last_final_s"] == pytest.approx(248.3, abs=0.1)
    assert lane["timing_stage_median_s"] == pytest.approx(2.41, abs=0.01)
    finals = sorted(lane["final_s"])  # type: ignore[arg-type]
    # with every loop ended, one timing every 6 to 13 s (once 25 s, behind a 19 s timing)
    gaps = sorted(round(b - a, 1) for a, b in itertools.pairwise(finals) if a > 128.8)
    assert len(gaps) == 11 and gaps[0] == pytest.approx(5.8) and gaps[-2] == pytest.approx(12.8)
    assert gaps[-1] == pytest.approx(25.0)


def test_inline_timing_finished_fewer_sessions_in_its_half(runs: Path) -> None:
    inline = rl.summary(runs / "inline")
    assert (inline["sessions"], inline["final"]) == (46, 28)
    assert inline["timing_stage_median_s"] == pytest.approx(2.25, abs=0.01)


def test_on_an_h100_never_checked_the_timings_stopped_behind_the_broken_starts_checks(
    tmp_path: Path,
) -> None:
    """The lane at four workers per GPU on an H100 with no known verdicts (release-lane-h100): timings
    appended until 143 s, then none while correct attempts waited, as sessions sat at their broken start's
    check; the attempts still pending when the files end count as waiting until the run's last event."""
    runs = extract_run(ARCHIVE.parent.parent / "release-lane-h100" / "lane-out.tgz", tmp_path, "sessions")
    lane = rl.summary(runs / "lane")
    assert (lane["sessions"], lane["final"], lane["timing_stages"]) == (81, 26, 19)
    assert lane["longest_wait_without_timing_s"] == pytest.approx(108.6, abs=0.1)
    assert lane["longest_wait_at_s"] == pytest.approx(143.4, abs=0.2)
