"""The simulation of 2026-12-05 of the release batch on one GPU and on two (docs/lab/sim-2026-12-05-release-gpus.md,
docs/data/sim-2026-12-05-release-gpus): every figure the lab file quotes comes out of the bench's raw outputs, and
the stage times it drove come out of the recorded H200 files as the bench reads them."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.records.sim_outputs import check_release_run, flat, run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "sim-2026-12-05-release-gpus"
LAB = flat(ROOT / "docs" / "lab" / "sim-2026-12-05-release-gpus.md")
"""The lab file, its white space made single spaces (its lines are wrapped)."""


def _run(name: str) -> dict[str, Any]:
    return run(DATA, name)


def _design(name: str, design: str) -> dict[str, Any]:
    return _run(name)["result"][design]


@pytest.fixture(scope="module")
def bench() -> Any:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import batch_bench

        return batch_bench
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_the_stage_times_are_the_recorded_ones(bench: Any, tmp_path: Path) -> None:
    with tarfile.open(bench.RELEASE_RUN) as tar:
        tar.extractall(tmp_path, filter="data")
    ids, stages, sources = bench.release_stages(tmp_path / "sessions" / "lane")
    assert len(ids) == 65 and len(stages) == 130 and sources == {"alone": 65, "batch": 0, "median": 0}
    sums = {
        k: round(sum(float(st[k]) for st in stages.values()), 1)
        for k in ("build", "run", "sanitize", "timing")
    }
    assert sums == {"build": 710.0, "run": 182.4, "sanitize": 106.8, "timing": 412.2}
    assert sum(float(st["timing"]) > 0 for st in stages.values()) == 65  # one correct attempt a session
    for k, v in sums.items():
        words = {
            "build": "s of builds",
            "run": "s of runs",
            "sanitize": "s of sanitizer runs",
            "timing": "s in all",
        }[k]
        assert f"{v:,.1f} {words}" in LAB, (k, v)
    assert "412.2 s in all" in (ROOT / "docs" / "performance.md").read_text()  # the floor it states


def test_every_run_drove_the_release_stages_and_finished_every_session() -> None:
    for name, gpus in (("gpus1-a", 1), ("gpus1-b", 1), ("gpus2-a", 2), ("gpus2-b", 2)):
        check_release_run(_run(name)["result"], gpus)


def test_the_table_is_the_raw_outputs() -> None:
    for gpus, design, label in (
        (1, "inline", "timing inline"),
        (1, "lane", "timing lane"),
        (2, "inline", "timing inline"),
        (2, "lane", "timing lane"),
    ):
        rows = [_design(f"gpus{gpus}-{x}", design) for x in ("a", "b")]

        def cell(get: Any, rows: list[dict[str, Any]] = rows) -> str:
            return ", ".join(str(get(r)) for r in rows)

        line = (
            f"| {gpus} | {label} | {cell(lambda r: r['sim_wall_s'])} | {cell(lambda r: r['sessions']['final'])} | "
            f"{cell(lambda r: r['sessions']['last_final_s'])} | {cell(lambda r: r['gpu_busy'])} | "
            f"{cell(lambda r: r['sessions']['longest_wait_without_timing_s'])} |"
        )
        assert line in LAB, line


def test_the_ratios_and_margins_it_states() -> None:
    one = {x: _design(f"gpus1-{x}", "lane")["sim_wall_s"] for x in ("a", "b")}
    two = {x: _design(f"gpus2-{x}", "lane")["sim_wall_s"] for x in ("a", "b")}
    assert [round(one[x] / two[x], 2) for x in ("a", "b")] == [1.94, 1.94]
    across = sorted(round(one[x] / two[y], 2) for x in ("a", "b") for y in ("a", "b"))
    assert (across[0], across[-1]) == (1.87, 2.01)
    one_i = {x: _design(f"gpus1-{x}", "inline")["sim_wall_s"] for x in ("a", "b")}
    two_i = {x: _design(f"gpus2-{x}", "inline")["sim_wall_s"] for x in ("a", "b")}
    assert [round(one_i[x] / two_i[x], 2) for x in ("a", "b")] == [1.99, 1.94]
    across_i = sorted(round(one_i[x] / two_i[y], 2) for x in ("a", "b") for y in ("a", "b"))
    assert (across_i[0], across_i[-1]) == (1.93, 2.0)
    lasts = [
        _design(f"gpus2-{x}", d)["sessions"]["last_final_s"] for x in ("a", "b") for d in ("inline", "lane")
    ]
    assert (min(lasts), max(lasts)) == (273.4, 282.1)
    assert (round(300 - max(lasts)), round(300 - min(lasts))) == (18, 27)
    busy = [_design(f"gpus1-{x}", d)["gpu_busy"] for x in ("a", "b") for d in ("inline", "lane")]
    assert (min(busy), max(busy)) == (0.975, 0.986)
    loads = [_run(n)["load"][0] for n in ("gpus1-a", "gpus1-b", "gpus2-a", "gpus2-b")]
    assert (round(min(loads), 1), round(max(loads), 1)) == (3.0, 5.0)
    for words in (
        "1.94x",
        "across the pairs 1.87x to 2.01x",
        "1.99x and 1.94x inline",
        "1.93x to 2.00x",
        "273.4 to 282.1 s",
        "97.5 to 98.6%",
        "3.0 to 5.0",
    ):
        assert words in LAB, words


def test_the_drain_rules_on_and_off_as_the_lab_says(bench: Any, tmp_path: Path) -> None:
    rows = {(n, x): _run(f"drain-{n}-{x}")["result"] for n in ("on", "off") for x in ("a", "b")}
    for (n, _x), r in rows.items():
        want = {"patience_s": 10.0, "hang_s": 60.0} if n == "on" else {"patience_s": 1e9, "hang_s": 1e9}
        assert r["drain"] == want and r["gpus"] == 1
        assert all(r[d]["sessions"]["final"] == 65 for d in ("inline", "lane"))
    for n, label in (("on", "on (10 s, 60 s)"), ("off", "off")):
        for design, words in (("inline", "timing inline"), ("lane", "timing lane")):
            walls = ", ".join(str(rows[(n, x)][design]["sim_wall_s"]) for x in ("a", "b"))
            waits = ", ".join(
                str(rows[(n, x)][design]["sessions"]["longest_wait_without_timing_s"]) for x in ("a", "b")
            )
            assert f"| {label} | {words} | {walls} | {waits} |" in LAB
    later = {
        d: [
            round(100 * (rows[("off", x)][d]["sim_wall_s"] / rows[("on", x)][d]["sim_wall_s"] - 1), 1)
            for x in ("a", "b")
        ]
        for d in ("inline", "lane")
    }
    assert later == {"inline": [4.3, 3.8], "lane": [2.6, 2.1]}
    assert "by 4.3% and 3.8% inline and 2.6% and 2.1% with the lane" in LAB
    off = [
        rows[("off", x)][d]["sessions"]["longest_wait_without_timing_s"]
        for x in ("a", "b")
        for d in ("inline", "lane")
    ]
    on = [
        rows[("on", x)][d]["sessions"]["longest_wait_without_timing_s"]
        for x in ("a", "b")
        for d in ("inline", "lane")
    ]
    assert f"{min(off)} to {max(off)} s against {min(on)} to {max(on)} s" in LAB
    loads = [rows[k] and _run(f"drain-{k[0]}-{k[1]}")["load"][0] for k in rows]
    assert f"{min(loads):.1f} to {max(loads):.1f}" in LAB
    # the holds the rules meet: a session's run and sanitizer run, summed
    with tarfile.open(bench.RELEASE_RUN) as tar:
        tar.extractall(tmp_path, filter="data")
    _ids, stages, _ = bench.release_stages(tmp_path / "sessions" / "lane")
    holds = [float(st["run"]) + float(st["sanitize"]) for st in stages.values()]
    assert sum(h > 10 for h in holds) == 6 and round(max(holds), 1) == 27.0
    assert "6 of the 130 last over 10 s (up to 27.0 s)" in LAB


def test_the_ranges_the_summaries_quote() -> None:
    """The in-short line, the lab index row and performance.md quote the makespans rounded to whole seconds:
    532 to 553 s on one GPU and 275 to 285 s on two (the sessions' last finals, 273.4 to 282.1 s, are another
    figure)."""
    walls = {
        g: [_design(f"gpus{g}-{x}", d)["sim_wall_s"] for x in ("a", "b") for d in ("inline", "lane")]
        for g in (1, 2)
    }
    one = f"{round(min(walls[1]))} to {round(max(walls[1]))} s"
    two = f"{round(min(walls[2]))} to {round(max(walls[2]))} s"
    assert (one, two) == ("532 to 553 s", "275 to 285 s")
    assert f"bound by its GPU work, {one}; on two it takes {two}" in LAB
    index = flat(ROOT / "docs" / "lab" / "README.md")
    assert f"one GPU runs at its floor ({one[:-2]} s), two take {two} (1.94x)" in index
    perf = flat(ROOT / "docs" / "performance.md")
    assert f"one GPU takes {one}, busy 97.5 to 98.6% of it, and two take {two}" in perf
    lane = [_design(f"gpus{g}-{x}", "lane")["sim_wall_s"] for g in (1, 2) for x in ("a", "b")]
    assert lane == [532.1, 552.9, 274.7, 284.8]
    assert "532.1 and 552.9 s on one GPU against 274.7 and 284.8 s on two, **1.94x** in each pair" in perf


def test_what_scheduling_md_quotes_of_the_drain_rules() -> None:
    rows = {(n, x): _run(f"drain-{n}-{x}")["result"] for n in ("on", "off") for x in ("a", "b")}
    sooner = [
        100 * (1 - rows[("on", x)][d]["sim_wall_s"] / rows[("off", x)][d]["sim_wall_s"])
        for x in ("a", "b")
        for d in ("inline", "lane")
    ]
    assert (round(min(sooner)), round(max(sooner))) == (2, 4)
    waits = {
        n: [
            rows[(n, x)][d]["sessions"]["longest_wait_without_timing_s"]
            for x in ("a", "b")
            for d in ("inline", "lane")
        ]
        for n in ("on", "off")
    }
    text = flat(ROOT / "docs" / "scheduling.md")
    assert (
        f"final {round(min(sooner))} to {round(max(sooner))}% sooner than without, and that wait is "
        f"{min(waits['on'])} to {max(waits['on'])} s with them against {min(waits['off'])} to {max(waits['off'])} s"
    ) in text


def test_the_timing_under_build_load_it_extrapolates() -> None:
    """412.2 s of stages at the 1.24x a build load of 12 threads gave on the H200 (test_release_timing_bench.py
    recomputes 1.236 from its files): about 511 s, about 256 s on each of two GPUs."""
    assert (round(412.2 * 1.24), round(412.2 * 1.24 / 2)) == (511, 256)
    assert "made each stage 1.24x as long" in LAB
    assert "the 412.2 s would be about 511 s, and two GPUs would have about 256 s of timing each" in LAB
