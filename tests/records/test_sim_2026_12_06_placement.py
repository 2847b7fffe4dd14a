"""The simulation of the release batch before and after one unpausable run per GPU and a timing GPU
(2026-12-06: docs/lab/sim-2026-12-06-placement.md, docs/data/sim-2026-12-06-placement): every figure the lab
file and scheduling.md quote comes out of the bench's raw outputs."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from tests.records.sim_outputs import flat, release_stages, run, two_gpus_over_one, wait

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "sim-2026-12-06-placement"


LAB = flat(ROOT / "docs" / "lab" / "sim-2026-12-06-placement.md")
RUNS = "abcde"
SIDES = ("before", "after")
DESIGNS = ("inline", "lane")


def _run(side: str, gpus: int, x: str) -> dict[str, Any]:
    return run(DATA, f"{side}-gpus{gpus}-{x}")


def _design(side: str, gpus: int, x: str, design: str) -> dict[str, Any]:
    return _run(side, gpus, x)["result"][design]


def _span(values: list[float], unit: str = " s") -> str:
    return f"{min(values)} to {max(values)}{unit}"


def test_every_run_drove_the_release_stages_and_every_session_was_final() -> None:
    for side in SIDES:
        for gpus in (1, 2):
            for x in RUNS:
                r = _run(side, gpus, x)["result"]
                assert (r["stages"], r["gpus"], r["tasks"], r["iterations"]) == ("release", gpus, 65, 2)
                assert r["timing_stages_from"] == {"alone": 65, "batch": 0, "median": 0}
                for design in DESIGNS:
                    d = r[design]
                    assert (d["attempts"], d["passed"], d["sessions"]["final"]) == (130, 65, 65)
                    assert (
                        sum(d["by_gpu"]["timing"].values()) == 65 and sum(d["by_gpu"]["run"].values()) == 100
                    )
                    if gpus == 1:  # one GPU: everything on it
                        assert d["by_gpu"] == {"run": {"0": 100}, "timing": {"0": 65}}
                assert r["lane"]["lane"] == {"appended": 65, "failed": 0}


def test_the_table_is_the_raw_outputs() -> None:
    for gpus in (1, 2):
        for design, label in (("inline", "timing inline"), ("lane", "timing lane")):
            for side in SIDES:
                rows = [_design(side, gpus, x, design) for x in RUNS]
                walls = ", ".join(str(r["sim_wall_s"]) for r in rows)
                lasts = ", ".join(str(r["sessions"]["last_final_s"]) for r in rows)
                waits = ", ".join(str(wait(r)) for r in rows)
                line = f"| {gpus} | {label} | {side} | {walls} | {lasts} | {waits} |"
                assert line in LAB, line


def _changes(gpus: int, design: str) -> list[float]:
    """Each run's makespan after against the run before it, in percent (negative: sooner)."""
    return [
        round(
            100
            * (
                _design("after", gpus, x, design)["sim_wall_s"]
                / _design("before", gpus, x, design)["sim_wall_s"]
                - 1
            ),
            1,
        )
        for x in RUNS
    ]


def test_two_gpus_final_sooner_and_where_the_stages_went() -> None:
    lane, inline = _changes(2, "lane"), _changes(2, "inline")
    assert (statistics.median(lane), statistics.median(inline)) == (-6.2, -11.6)
    assert (max(lane), min(lane), max(inline), min(inline)) == (-1.5, -7.4, -11.1, -12.7)
    assert (
        "final a median 6.2% sooner with the timing lane (from 1.5% to 7.4% sooner) and 11.6% sooner with timing inline (11.1% to 12.7%)"
        in LAB
    )

    def on0(side: str, kind: str) -> list[int]:
        return [_design(side, 2, x, d)["by_gpu"][kind].get("0", 0) for x in RUNS for d in DESIGNS]

    def drains(side: str, design: str) -> list[int]:
        return [_design(side, 2, x, design)["runs_to_timing"] for x in RUNS]

    assert (min(on0("after", "timing")), max(on0("after", "timing"))) == (34, 43)
    assert (min(on0("after", "run")), max(on0("after", "run"))) == (5, 32)
    assert (min(on0("before", "timing")), max(on0("before", "timing"))) == (23, 42)
    assert (min(on0("before", "run")), max(on0("before", "run"))) == (29, 66)
    assert (
        "the timing GPU held 34 to 43 of the 65 timing stages and 5 to 32 of the 100 correctness runs (23 to 42 and 29 to 66 before)"
        in LAB
    )
    assert (min(drains("after", "inline")), max(drains("after", "inline"))) == (4, 6)
    assert (min(drains("after", "lane")), max(drains("after", "lane"))) == (3, 5)
    assert sorted(set(drains("before", "inline"))) == [17, 18] and sorted(set(drains("before", "lane"))) == [
        9,
        10,
    ]
    assert "4 to 6 times with timing inline and 3 to 5 with the lane (17 or 18 and 9 or 10 before)" in LAB

    def waits(side: str, kind: str, stat: str, designs: tuple[str, ...] = DESIGNS) -> list[float]:
        return [_design(side, 2, x, d)["wait_s"][kind][stat] for x in RUNS for d in designs]

    assert _span(waits("after", "run", "median_s")) == "0.8 to 3.3 s"
    assert _span(waits("before", "run", "median_s")) == "20.9 to 47.5 s"
    assert _span(waits("after", "timing", "median_s", ("inline",))) == "35.5 to 52.4 s"
    assert max(waits("after", "timing", "max_s", ("inline",))) == 161.2
    assert _span(waits("before", "timing", "median_s", ("inline",))) == "4.8 to 6.8 s"
    assert max(waits("before", "timing", "max_s", ("inline",))) == 50.0
    assert _span(waits("after", "timing", "median_s", ("lane",))) == "10.9 to 14.8 s"
    assert _span(waits("before", "timing", "median_s", ("lane",))) == "5.9 to 8.9 s"
    for words in (
        "Correctness runs waited a median of 0.8 to 3.3 s for a GPU (20.9 to 47.5 s before)",
        "inline a median of 35.5 to 52.4 s and at most 161.2 s (4.8 to 6.8 s and at most 50.0 s before), with the lane a median of 10.9 to 14.8 s (5.9 to 8.9 s before)",
    ):
        assert words in LAB, words


def test_the_wait_without_timing_and_the_300_s_target() -> None:
    def waits(side: str, gpus: int) -> list[float]:
        return [wait(_design(side, gpus, x, d)) for x in RUNS for d in DESIGNS]

    assert _span(waits("after", 2)) == "2.7 to 23.8 s" and _span(waits("before", 2)) == "3.2 to 19.1 s"
    assert all(w < 30 for side in SIDES for w in waits(side, 2))
    assert (
        "on two GPUs: 2.7 to 23.8 s after, 3.2 to 19.1 s before, under the 30 s target in all twenty runs"
        in LAB
    )
    assert "(2.7 to 23.8 s, against 3.2 to 19.1 s before)" in LAB
    ratios = {side: [two_gpus_over_one(DATA, side, x) for x in RUNS] for side in SIDES}
    assert (min(ratios["after"]), max(ratios["after"])) == (2.0, 2.08)
    assert (min(ratios["before"]), max(ratios["before"])) == (1.87, 2.01)
    assert "2.00x to 2.08x after (lane, run by run), 1.87x to 2.01x before" in LAB
    lasts = {
        side: [_design(side, 2, x, d)["sessions"]["last_final_s"] for x in RUNS for d in DESIGNS]
        for side in SIDES
    }
    assert all(t <= 300 for side in SIDES for t in lasts[side])
    assert (max(lasts["after"]), max(lasts["before"])) == (274.0, 300.0)
    assert "in all 10 runs after (at most 274.0 s) and in all 10 before (at most 300.0 s)" in LAB


def test_one_gpu_differs_by_the_load_alone() -> None:
    every = _changes(1, "inline") + _changes(1, "lane")
    assert (min(every), max(every)) == (-3.0, 2.6)
    assert (statistics.median(_changes(1, "inline")), statistics.median(_changes(1, "lane"))) == (0.8, 0.1)
    assert "from 3.0% sooner to 2.6% later, medians 0.8% (inline) and 0.1% (lane) later" in LAB
    waits = {side: [wait(_design(side, 1, x, d)) for x in RUNS for d in DESIGNS] for side in SIDES}
    assert _span(waits["before"] + waits["after"]) == "26.1 to 33.3 s"
    assert (sum(w > 30 for w in waits["before"]), sum(w > 30 for w in waits["after"])) == (5, 1)
    assert all(wait(_design(side, 1, x, "inline")) <= 30 for side in SIDES for x in RUNS)
    assert (
        "26.1 to 33.3 s over the twenty runs: over 30 s in 5 runs before and 1 after, all with the timing lane"
        in LAB
    )
    loads = [_run(side, g, x)["load"][0] for side in SIDES for g in (1, 2) for x in RUNS]
    assert f"{min(loads):.1f} to {max(loads):.1f}" == "4.6 to 6.1"
    assert "the 1-minute load average at each run's end: 4.6 to 6.1" in LAB


def test_the_strict_timing_gpu_and_the_stage_times_it_is_weighed_by() -> None:
    strict = [json.loads((DATA / f"strict-gpus2-{x}.json").read_text())["result"] for x in "abc"]
    for r in strict:
        assert r["gpus"] == 2
        for d in DESIGNS:
            assert r[d]["by_gpu"]["timing"] == {"0": 65} and r[d]["sessions"]["final"] == 65
    lasts = [r[d]["sessions"]["last_final_s"] for r in strict for d in DESIGNS]
    walls = [r[d]["sim_wall_s"] for r in strict for d in DESIGNS]
    after_lasts = [_design("after", 2, x, d)["sessions"]["last_final_s"] for x in RUNS for d in DESIGNS]
    after_walls = [_design("after", 2, x, d)["sim_wall_s"] for x in RUNS for d in DESIGNS]
    assert _span(lasts) == "442.0 to 463.4 s" and _span(walls) == "443.7 to 464.3 s"
    assert _span(after_lasts) == "261.9 to 274.0 s" and _span(after_walls) == "263.1 to 274.6 s"
    assert "final at 442.0 to 463.4 s (makespans 443.7 to 464.3 s), against 261.9 to 274.0 s with it" in LAB
    stages = release_stages()
    timing = [float(st["timing"]) for st in stages.values() if float(st["timing"]) > 0]
    sanitize = [float(st["sanitize"]) for st in stages.values() if float(st["sanitize"]) > 0]
    assert round(sum(timing), 1) == 412.2 and round(statistics.median(timing), 2) == 2.84
    assert "hold a GPU 412.2 s in all" in LAB and "2.84 s at the median" in LAB
    assert (
        len(sanitize),
        round(sum(sanitize), 1),
        round(statistics.median(sanitize), 2),
        round(max(sanitize), 1),
    ) == (
        42,
        106.8,
        1.56,
        13.5,
    )
    assert "the release's 42 sanitizer runs hold 106.8 s in all, 1.56 s at the median, 13.5 s at most" in LAB


def test_what_the_reference_documents_quote() -> None:
    sched = flat(ROOT / "docs" / "scheduling.md")
    for words in (
        "final a median 6.2% (timing lane) and 11.6% (inline) sooner",
        "(412.2 s of holds) made it 443.7 to 464.3 s against 263.1 to 274.6 s",
        "17 or 18 times (inline timing) where it now does 4 to 6",
        "a median of 20.9 to 47.5 s for a GPU where they now wait 0.8 to 3.3 s",
        "inline, a median of 35.5 to 52.4 s against 4.8 to 6.8 s",
        "sim-2026-12-06-placement.md",
    ):
        assert words in sched, words
    perf = flat(ROOT / "docs" / "performance.md")
    assert "sim-2026-12-06-placement.md" in perf
    assert "**2.00x to 2.08x** (1.87x to 2.01x on the code before it" in perf
    assert "every session final by 274.0 s on two GPUs" in perf
    index = flat(ROOT / "docs" / "lab" / "README.md")
    assert "[sim-2026-12-06-placement](sim-2026-12-06-placement.md)" in index
    assert "a median 6.2% (lane) and 11.6% (inline) sooner on two GPUs" in index
