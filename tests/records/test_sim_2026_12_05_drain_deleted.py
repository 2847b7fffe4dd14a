"""The simulation of the release batch before and after the drain rules were deleted (2026-12-05, late:
docs/lab/sim-2026-12-05-drain-deleted.md, docs/data/sim-2026-12-05-drain-deleted): every figure the lab file
quotes comes out of the bench's raw outputs."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from tests.records.sim_outputs import flat, release_stages, run, two_gpus_over_one, wait

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "sim-2026-12-05-drain-deleted"
LAB = flat(ROOT / "docs" / "lab" / "sim-2026-12-05-drain-deleted.md")
"""The lab file, its white space made single spaces (its lines are wrapped)."""
RUNS = "abcde"
SIDES = ("before", "after")


def _run(side: str, gpus: int, x: str) -> dict[str, Any]:
    return run(DATA, f"{side}-gpus{gpus}-{x}")


def _design(side: str, gpus: int, x: str, design: str) -> dict[str, Any]:
    return _run(side, gpus, x)["result"][design]


def test_every_run_drove_the_release_stages_with_the_rules_on_before_and_none_after() -> None:
    for side in SIDES:
        for gpus in (1, 2):
            for x in RUNS:
                r = _run(side, gpus, x)["result"]
                assert (r["stages"], r["gpus"], r["tasks"], r["iterations"]) == ("release", gpus, 65, 2)
                assert r["timing_stages_from"] == {"alone": 65, "batch": 0, "median": 0}
                for design in ("inline", "lane"):
                    d = r[design]
                    assert (d["attempts"], d["passed"], d["sessions"]["final"]) == (130, 65, 65)
                assert r["lane"]["lane"] == {"appended": 65, "failed": 0}
                # before: the bench said the rules it ran with (the defaults); after: there are none to say
                assert r.get("drain") == ({"patience_s": 10.0, "hang_s": 60.0} if side == "before" else None)
    assert "every session was final in all 40" in LAB


def test_the_table_is_the_raw_outputs() -> None:
    for gpus in (1, 2):
        for design, label in (("inline", "timing inline"), ("lane", "timing lane")):
            for side, rules in (("before", "on"), ("after", "deleted")):
                rows = [_design(side, gpus, x, design) for x in RUNS]
                walls = ", ".join(str(r["sim_wall_s"]) for r in rows)
                lasts = ", ".join(str(r["sessions"]["last_final_s"]) for r in rows)
                waits = ", ".join(str(wait(r)) for r in rows)
                line = f"| {gpus} | {label} | {rules} | {walls} | {lasts} | {waits} |"
                assert line in LAB, line


def test_the_waits_and_delays_it_states() -> None:
    def waits(side: str, gpus: int) -> list[float]:
        return [wait(_design(side, gpus, x, d)) for x in RUNS for d in ("inline", "lane")]

    assert (min(waits("after", 1)), max(waits("after", 1))) == (27.1, 27.9)
    assert (min(waits("before", 1)), max(waits("before", 1))) == (32.4, 49.5)
    assert (min(waits("after", 2)), max(waits("after", 2))) == (3.4, 16.5)
    assert (min(waits("before", 2)), max(waits("before", 2))) == (4.6, 25.9)
    assert all(w < 30 for w in waits("after", 1)) and all(w > 30 for w in waits("before", 1))
    for words in (
        "27.1 to 27.9 s on one GPU, under the 30 s target in all ten runs (32.4 to 49.5 s with them)",
        "On two GPUs: 3.4 to 16.5 s without, 4.6 to 25.9 s with.",
    ):
        assert words in LAB, words
    later = {
        (gpus, d): [
            round(
                100
                * (
                    _design("after", gpus, x, d)["sim_wall_s"] / _design("before", gpus, x, d)["sim_wall_s"]
                    - 1
                ),
                1,
            )
            for x in RUNS
        ]
        for gpus in (1, 2)
        for d in ("inline", "lane")
    }
    medians = {k: statistics.median(v) for k, v in later.items()}
    assert medians == {(1, "inline"): 3.2, (1, "lane"): 5.2, (2, "inline"): 5.6, (2, "lane"): 6.5}
    every = [p for v in later.values() for p in v]
    assert (min(every), max(every)) == (-1.5, 7.7)
    assert "by a median of 3.2% (timing inline) and 5.2% (lane) on one GPU, 5.6% and 6.5% on two" in LAB
    assert "from 1.5% sooner to 7.7% later" in LAB
    assert "median 3.2 to 6.5% later" in LAB


def test_two_gpus_against_one_and_the_300_s_target() -> None:
    ratios = {side: [two_gpus_over_one(DATA, side, x) for x in RUNS] for side in SIDES}
    assert (min(ratios["after"]), max(ratios["after"])) == (1.85, 2.01)
    assert (min(ratios["before"]), max(ratios["before"])) == (1.85, 1.99)
    assert "1.85x to 2.01x without the rules (lane, run by run), 1.85x to 1.99x with them" in LAB
    lasts = {
        side: [_design(side, 2, x, d)["sessions"]["last_final_s"] for x in RUNS for d in ("inline", "lane")]
        for side in SIDES
    }
    assert sum(t <= 300 for t in lasts["after"]) == 9 and max(lasts["after"]) == 302.4
    assert sum(t <= 300 for t in lasts["before"]) == 10 and max(lasts["before"]) == 294.9
    assert (
        "in 9 of the 10 runs without the rules (the last at 302.4 s in one), and in all 10 with them" in LAB
    )
    assert "(at most 294.9 s)" in LAB


def test_the_load_and_the_longest_hold() -> None:
    loads = [_run(side, g, x)["load"][0] for side in SIDES for g in (1, 2) for x in RUNS]
    assert f"{min(loads):.1f} to {max(loads):.1f}" == "2.4 to 4.8"
    assert "the 1-minute load average at each run's end: 2.4 to 4.8" in LAB
    stages = release_stages()
    longest = max(float(st["run"]) + float(st["sanitize"]) for st in stages.values())
    assert round(longest, 1) == 27.0
    assert "its correctness and sanitizer run, 27.0 s" in LAB


def test_what_the_reference_documents_quote() -> None:
    for doc in ("scheduling.md", "performance.md"):
        text = flat(ROOT / "docs" / doc)
        assert "27.1 to 27.9 s" in text and "32.4 to 49.5 s" in text, doc
        assert "final a median 3.2 to 6.5% later" in text, doc
        assert "sim-2026-12-05-drain-deleted.md" in text, doc
    index = flat(ROOT / "docs" / "lab" / "README.md")
    assert (
        "27.1 to 27.9 s on one GPU (32.4 to 49.5 s before), the batch final a median 3.2 to 6.5% later"
        in index
    )
