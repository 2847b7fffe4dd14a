"""The simulations of 2026-12-05 of the turns of timing and runs, before (2215622) and after (90e5879's pool)
(docs/data/sim-2026-12-05-turns, docs/lab/sim-2026-12-05-turns.md): every figure the lab file quotes comes out
of the bench's raw outputs."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "sim-2026-12-05-turns"
LAB = " ".join((ROOT / "docs" / "lab" / "sim-2026-12-05-turns.md").read_text(encoding="utf-8").split())
"""The lab file, its white space made single spaces (its lines are wrapped)."""


def _runs(mode: str, side: str, folder: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"{mode}-{side}-*.json"))]


def _lane(mode: str, design: str, side: str, folder: Path = DATA) -> list[dict[str, Any]]:
    return [r["result"][design] for r in _runs(mode, side, folder)]


def _span(rows: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> str:
    lo, hi = min(get(r) for r in rows), max(get(r) for r in rows)
    return f"{lo:.1f}" if lo == hi else f"{lo:.1f}-{hi:.1f}"


def _mean(rows: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float:
    return statistics.mean(get(r) for r in rows)


def _wall(r: dict[str, Any]) -> float:
    return float(r["sim_wall_s"])


def _final(r: dict[str, Any]) -> float:
    return float(r["sessions"]["final_median_s"])


def _cell(rows: list[dict[str, Any]], what: str) -> str:
    """One cell of the lab's lane tables, as written there."""
    if what == "wall":
        return ", ".join(f"{_wall(r):.1f}" for r in rows)
    if what == "r->t":
        return ", ".join(str(r["runs_to_timing"]) for r in rows)
    if what in ("run", "timing"):
        med = _span(rows, lambda r: r["wait_s"][what]["median_s"])
        return f"{med} / {_span(rows, lambda r: r['wait_s'][what]['max_s'])}"
    if what == "loop":
        return _span(rows, lambda r: r["sessions"]["loop_end_s"]["max"])
    if what == "final":
        return _span(rows, _final)
    assert what == "without"
    return _span(rows, lambda r: r["sessions"]["longest_wait_without_timing_s"])


@pytest.mark.parametrize("mode", ["lane-h200", "lane-fixture"])
def test_lane_tables(mode: str) -> None:
    cols = [_lane(mode, d, s) for d in ("inline", "lane") for s in ("before", "after")]
    assert all(len(c) == 3 for c in cols)
    # both pools ran the same work: 200 attempts, the same runs and timing stages
    n = {(r["attempts"], r["wait_s"]["run"]["n"], r["wait_s"]["timing"]["n"]) for c in cols for r in c}
    assert n == ({(200, 164, 107)} if mode == "lane-h200" else {(200, 160, 80)})
    timings = 107 if mode == "lane-h200" else 80
    assert all(r["lane"] == {"appended": timings, "failed": 0} for c in cols[2:] for r in c)
    for what, label in (
        ("wall", "all sessions final (makespan), s"),
        ("r->t", "GPU from runs to timing (`r->t`)"),
        ("run", "correctness run's wait: median / longest, s"),
        ("timing", "timing stage's wait: median / longest, s"),
        ("loop", "last loop ended, s"),
        ("final", "median session final, s"),
        ("without", "longest wait for timing, no timing stage running, s"),
    ):
        row = f"| {label} | " + " | ".join(_cell(c, what) for c in cols) + " |"
        section = LAB.split("(`lane --stages h200`" if mode == "lane-h200" else "(`lane --timing-s 3.2`")[1]
        assert row in section.split(" ## ")[0], row


def test_lane_means_and_shares() -> None:
    h = {(d, s): _lane("lane-h200", d, s) for d in ("inline", "lane") for s in ("before", "after")}
    before, after = _mean(h["lane", "before"], _wall), _mean(h["lane", "after"], _wall)
    assert (
        f"makespan is {100 * (after / before - 1):.1f}% longer (mean {after:.1f} s against {before:.1f} s)"
        in LAB
    )
    before, after = _mean(h["lane", "before"], _final), _mean(h["lane", "after"], _final)
    assert f"final {100 * (after / before - 1):.1f}% later ({after:.1f} s against {before:.1f} s)" in LAB
    before, after = _mean(h["inline", "before"], _wall), _mean(h["inline", "after"], _wall)
    assert (
        f"makespan is {100 * (after / before - 1):.1f}% longer ({after:.1f} s against {before:.1f} s)" in LAB
    )
    busy = [r["gpu_busy"] for rows in h.values() for r in rows]
    assert f"({min(busy):.3f} to {max(busy):.3f} in every run)" in LAB
    f = {(d, s): _lane("lane-fixture", d, s) for d in ("inline", "lane") for s in ("before", "after")}
    before, after = _mean(f["lane", "before"], _wall), _mean(f["lane", "after"], _wall)
    assert f"with the lane it is the same ({after:.1f} s against {before:.1f} s, mean)" in LAB
    before, after = _mean(f["inline", "before"], _wall), _mean(f["inline", "after"], _wall)
    assert (
        f"inline it is {100 * (1 - after / before):.1f}% shorter ({after:.1f} s against {before:.1f} s)"
        in LAB
    )
    before, after = _mean(f["lane", "before"], _final), _mean(f["lane", "after"], _final)
    assert (
        f"{100 * (after / before - 1):.1f}% later with the lane ({after:.1f} s against {before:.1f} s)" in LAB
    )


def test_performance_modes() -> None:
    sim = {s: _runs("simulate", s) for s in ("before", "after")}
    h200 = {s: _runs("h200", s) for s in ("before", "after")}
    assert all(len(v) == 2 for v in (*sim.values(), *h200.values()))

    def sim40(side: str) -> list[dict[str, Any]]:  # 40 x 5 on one GPU, twice in each run
        return [
            x for r in sim[side] for x in (r["result"]["40x5_1gpu"]["scheduled"], r["result"]["gpus"]["1"])
        ]

    for side in ("before", "after"):
        rows = sim40(side)
        assert "; ".join(", ".join(f"{_wall(x):.1f}" for x in rows[i : i + 2]) for i in (0, 2)) in LAB
    b, a = _mean(sim40("before"), _wall), _mean(sim40("after"), _wall)
    assert f"40 x 5 is {100 * (a / b - 1):.1f}% slower ({a:.1f} s against {b:.1f} s" in LAB

    def h(side: str, key: str) -> list[float]:
        return [
            _wall(r["result"]["40x5_1gpu"]["scheduled"])
            if key == "1"
            else _wall(r["result"]["with_early_stop"]["scheduled"])
            if key == "early"
            else _wall(r["result"]["gpus"][key])
            for r in h200[side]
        ]

    shares = {
        k: 100 * (statistics.mean(h("after", k)) / statistics.mean(h("before", k)) - 1) for k in h200_keys()
    }
    assert (
        f"7.6% on one GPU ({statistics.mean(h('after', '1')):.1f} s against {statistics.mean(h('before', '1')):.1f} s"
        in LAB
    )
    assert round(shares["1"], 1) == 7.6
    assert f"{shares['2']:.1f}% on two, {shares['4']:.1f}% on four, {shares['8']:.1f}% on eight" in LAB
    assert f"{shares['early']:.1f}% with the early stop" in LAB
    for side in ("before", "after"):
        assert f"{h(side, '1')[0]:.1f}, {h(side, '1')[1]:.1f} s" in LAB
        ratios = [r["result"]["40x5_1gpu"]["speedup"] for r in h200[side]]
        assert f"{ratios[0]:.2f}x, {ratios[1]:.2f}x" in LAB
        naive = [r["result"]["40x5_1gpu"]["naive"]["sim_wall_s"] for r in h200[side]]
        assert f"{naive[0]:.1f} and {naive[1]:.1f} s {side}" in LAB
        two = sorted(round(x / y, 2) for x, y in zip(h(side, "1"), h(side, "2"), strict=True))
        assert f"{two[0]:.2f}x and {two[1]:.2f}x {side}" in LAB
        switches = sorted({r["result"]["40x5_1gpu"]["scheduled"]["runs_to_timing"] for r in h200[side]})
        assert f"| {switches[0]}-{switches[-1]} |" in LAB or f"| {switches[0]} |" in LAB


def h200_keys() -> tuple[str, ...]:
    return ("1", "2", "4", "8", "early")


def test_first_set_under_load() -> None:
    first = DATA / "first"
    lane = {s: _lane("lane-h200", "lane", s, first) for s in ("before", "after")}
    inline = {s: _lane("lane-h200", "inline", s, first) for s in ("before", "after")}
    quoted = (
        f"makespan {_span(lane['before'], _wall)} s before, {_span(lane['after'], _wall)} s after",
        f"longest correctness-run wait {_span(lane['before'], lambda r: r['wait_s']['run']['max_s'])} s before, "
        f"{_span(lane['after'], lambda r: r['wait_s']['run']['max_s'])} s after",
        f"median session final {_span(lane['before'], _final)} s before, {_span(lane['after'], _final)} s after",
        f"Inline: makespan {_span(inline['before'], _wall)} s before, {_span(inline['after'], _wall)} s after",
    )
    for q in quoted:
        assert q in LAB, q


def test_the_bounded_turns_figures() -> None:
    folder = DATA / "bounded"
    turns = json.loads((folder / "lane-h200-turns-1.json").read_text())["result"]
    bounded = [json.loads((folder / f"lane-h200-bounded-{i}.json").read_text())["result"] for i in (1, 2)]
    for r in [turns, *bounded]:
        assert r["stages"] == "h200" and r["lane"]["passed"] == r["inline"]["passed"] == 40
    row = " | ".join(f"{_wall(r['lane']):.1f} s" for r in [turns, *bounded])
    assert f"| lane: all sessions final | {row} |" in LAB
    row = " | ".join(f"{r['lane']['wait_s']['run']['max_s']:.1f} s" for r in [turns, *bounded])
    assert f"| lane: longest wait of a correctness run | {row} |" in LAB
    row = " | ".join(f"{_wall(r['inline']):.1f} s" for r in [turns, *bounded])
    assert f"| inline: all sessions final | {row} |" in LAB
    row = " | ".join(f"{r['inline']['wait_s']['timing']['max_s']:.1f} s" for r in [turns, *bounded])
    assert f"| inline: longest wait of a timing stage | {row} |" in LAB
