"""The metrics screen: the tables of `beavertui metrics`, the p-sweep curves and the swing bars.

The expected numbers come from the metrics engine itself (compute_groups, swing) over the same source,
so the checks say that what is drawn is what the command computes, on the demo run, on the sessions
recorded on an H200, and on a gate sweep run here with the scripted model and a recorded toolchain.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

import beavertui.tui.metrics_screen as ms
from beavertui.cli import main
from beavertui.engine.metrics.compute import compute_groups
from beavertui.engine.metrics.figures import (
    STAGNATION_PARTS,
    level_panels,
    rank_charts,
    speedup_histograms,
    stagnation_modes,
)
from beavertui.engine.metrics.swing import swing
from beavertui.reports.render import pct
from beavertui.reports.tables import Rate, main_tables
from beavertui.service.metrics import load_source
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from beavertui.tui.fitted import FittedTables
from beavertui.tui.metrics_screen import MetricsScreen
from tests.reports.axis_runs import FEW_SHOT, MODELS, axis_table, few_shot_table
from tests.tui.conftest import SIZE, wait_for

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "data" / "analysis" / "demo_run"
H200 = ROOT / "tests" / "data" / "h200_batch_run"
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"


def text_of(widget: Any, width: int = 118) -> str:
    con = Console(width=width, file=io.StringIO(), record=True)
    con.print(widget.text(width) if isinstance(widget, FittedTables) else widget.content)
    return con.export_text()


def drawn(widget: Any) -> list[str]:
    """The lines the widget draws on screen, at its size (not scrolled: every line of its content)."""
    from textual.geometry import Region

    region = Region(0, 0, widget.size.width, widget.size.height)
    return [strip.text for strip in widget.render_lines(region)]


async def shown(pilot, app) -> MetricsScreen:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: isinstance(app.screen, MetricsScreen) and app.screen.report is not None)
    await pilot.pause()
    return app.screen


def expected(source: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    groups = compute_groups(load_source(source, None))
    return groups, swing(groups)


async def check_screen(source: Path) -> SimpleNamespace:
    groups, sw = expected(source)
    app = BeaverApp(lambda: MetricsScreen(source))
    async with app.run_test(size=SIZE) as pilot:
        screen = await shown(pilot, app)
        assert screen.query_one("#p-sweep") is not None and screen.query_one("#swing") is not None
        # the main table: every rate as the terminal prints it, interval included
        main = "\n".join(drawn(screen.query_one("#metrics-main")))
        assert "Repair rates per model and protocol" in main
        assert screen.query_one("#metrics-main", FittedTables).tables == screen.report.tables[:1]
        rows = main_tables(groups)[0].rows
        for i in (3, 4, 5):  # pass@1, pass@k, debug@k
            cells = [r[i] for r in rows]
            assert all(isinstance(c, Rate) for c in cells)
            for c in cells:  # percent with its bootstrap interval, each whole on one line
                value, _, interval = pct(c).partition(" ")
                assert value in main and (not interval or interval in main), pct(c)
        # the p-sweep curves: one per group, pass@k in percent at each p where it is defined
        want = [
            (
                f"{g.model} | {g.protocol.short()}",
                [p for p, v in g.p_sweep.items() if v is not None],
                [100 * v for v in g.p_sweep.values() if v is not None],
            )
            for g in groups
        ]
        assert screen.series == want
        xs, ys, labels = screen.plotted("p-sweep")
        # the legend keeps what tells the curves apart (the protocol when one model ran several)
        assert len(labels) == len([w for w in want if w[1]])
        assert all(label.split("…")[0] in w[0] for label, w in zip(labels, want, strict=False))
        assert xs == [w[1] for w in want if w[1]] and ys == [w[2] for w in want if w[2]]
        # the swing bars: one per (model, axis), in percentage points
        assert [v for _, v in screen.bars] == [100 * e["swing"] for e in sw]
        bx, _by, _ = screen.plotted("swing")
        assert [max(x) for x in bx] == [v for _, v in screen.bars]
        # how sessions ended: per group, each part's share in percent, stacked (plotext draws the parts last
        # to first, each bar reaching the sum of the parts up to its own)
        modes = stagnation_modes(groups)
        assert screen.modes == modes
        if modes:
            sx, _sy, slabels = screen.plotted("stagnation")
            assert [lb for lb in slabels if lb] == list(reversed(STAGNATION_PARTS))
            for j, upto in enumerate(range(len(STAGNATION_PARTS), 0, -1)):
                reach = [max(x) for x in sx[j * len(modes) : (j + 1) * len(modes)]]
                want_reach = [100 * sum(m["shares"][q] for q in STAGNATION_PARTS[:upto]) for m in modes]
                assert reach == pytest.approx(want_reach)
        # the speedups of correct repairs: per group, its count in each bin
        hists = speedup_histograms(groups)
        assert screen.hists == hists
        if hists:
            _hx, hy, _ = screen.plotted("speedups")
            assert [max(y) for y in hy] == [c for h in hists for c in h["counts"]]
        # pass@k over the feedback levels and the history windows: a line per swing entry of that axis
        levels = level_panels(screen.report.swing)
        assert screen.levels == levels
        for panel in levels:
            if panel["lines"]:
                # a plot call per segment of a line (the few-shot axis: per strategy), the model's label once
                lx, ly, llabels = screen.plotted(panel["axis"])
                segments = [seg for ln in panel["lines"] for seg in ln["segments"]]
                assert [(v, pk) for seg in segments for v, pk in seg] == [
                    p for ln in panel["lines"] for p in ln["points"]
                ]
                assert ly == [[100 * pk for _, pk in seg] for seg in segments]
                assert lx == [[panel["values"].index(v) + 1 for v, _ in seg] for seg in segments]
                assert len([lb for lb in llabels if lb]) == len(panel["lines"])
        # the models' ranks of one Kendall comparison: a line per model through its ranks (drawn negated)
        charts = rank_charts(screen.report.groups, screen.report.kendall)
        assert screen.ranks == charts
        chart = screen.rank_chart()
        if chart is not None:
            _rx, ry, rlabels = screen.plotted("ranks")
            assert ry == [[-r for r in rk if r is not None] for rk in chart["ranks"].values()]
            assert len([lb for lb in rlabels if lb]) == len(chart["ranks"])
        rest = text_of(screen.query_one("#metrics-tables"))
        assert "pass@k by speedup threshold p" in rest
        seen = SimpleNamespace(
            series=screen.series,
            bars=screen.bars,
            report=screen.report,
            swing_xs=bx,
            modes=modes,
            hists=hists,
            levels=levels,
            rank_chart=screen.rank_chart(),
        )
        await pilot.press("escape")
    return seen


async def test_demo_run() -> None:
    screen = await check_screen(DEMO)
    assert len(screen.series) == 1
    assert [h["n"] for h in screen.hists] == [2]  # its two repairs, 0.97x and 0.02x
    # one group: its only swing is the gate axis read from its own p sweep
    ((label, value),) = screen.bars
    assert label == f"scripted:vec_scale_demo.toml | gate [p sweep of {screen.series[0][0].split(' | ')[1]}]"
    assert value == 100.0


async def test_demo_sessions_ended_six_ways() -> None:
    """sessions/demo: six models, each session ended its own way (two detectors, the budget, repairs)."""
    screen = await check_screen(ROOT / "sessions" / "demo")
    ended = sorted(part for m in screen.modes for part, n in m["counts"].items() if n)
    assert ended == ["code_cycle", "no_progress", "ran to K", "repaired", "repaired", "repaired"]
    assert len(screen.hists) == 4


async def test_feedback_and_history_sweeps_draw_their_lines(tmp_path: Path) -> None:
    """Three models over L0..L3 and H1..H4 (tests/reports/axis_runs.py): a line per model on each axis."""
    screen = await check_screen(axis_table(tmp_path))
    assert [p["axis"] for p in screen.levels] == ["feedback", "history", "few_shot"]
    assert [len(p["lines"]) for p in screen.levels] == [3, 3, 0]
    # the rank plot draws the feedback chart, the first across separate runs
    assert screen.rank_chart["columns"] == ["L0", "L1", "L2", "L3"]


async def test_few_shot_runs_draw_a_line_per_model_over_the_strategies(tmp_path: Path) -> None:
    """Three models over none and matched/random/curated x K1/3/5 (tests/reports/axis_runs.py): the
    few-shot plot draws each model's pass@k, a segment per strategy, as the groups have it."""
    screen = await check_screen(few_shot_table(tmp_path))
    assert [len(p["lines"]) for p in screen.levels] == [0, 0, 3]
    panel = screen.levels[2]
    pk = {(g.model, g.protocol.few_shot): g.pass_at_k for g in screen.report.groups}
    for line in panel["lines"]:
        assert [len(seg) for seg in line["segments"]] == [1, 3, 3, 3]
        drawn = {v.replace(" ", "_"): x for v, x in line["points"]}
        assert drawn == {v: pk[(line["model"], v)] for v in FEW_SHOT}
        assert drawn == pytest.approx({v: n[MODELS.index(line["model"])] / 3 for v, n in FEW_SHOT.items()})


async def test_h200_run() -> None:
    screen = await check_screen(H200)
    assert len(screen.report.table) > 0 and screen.series[0][2][0] > screen.series[0][2][-1]


async def test_gate_sweep_draws_swing_bars(tmp_path: Path) -> None:
    code = main(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            "--models",
            "scripted:vec_scale_demo.toml",
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp_path),
            "--run-id",
            "gate",
            "--protocol",
            "gate",
            "--quiet",
        ]
    )
    assert code == 3  # at p = 1 (in the loop) the three-reply script runs out: that session has no verdict
    run = tmp_path / "gate"
    _groups, sw = expected(run)
    assert sw, "a gate sweep gives a swing over the gate axis"
    screen = await check_screen(run)
    labels = [label for label, _ in screen.bars]
    assert labels.count("scripted:vec_scale_demo.toml | gate") == 1  # the runs along the in-loop gate
    sweeps = [
        lb for lb in labels if lb.startswith("scripted:vec_scale_demo.toml | gate [p sweep of iterative K5")
    ]
    # and each run's own p sweep: the p = 1 session, cut by its model with budget left, is in no rate
    assert len(sweeps) == 3 and len(labels) == 4
    assert not any("p1 in-loop" in lb for lb in sweeps)
    assert [max(x) for x in screen.swing_xs] == [100 * e["swing"] for e in sw]
    assert len(screen.series) == 4
    assert [(xs, ys) for label, xs, ys in screen.series if label.endswith("p1 in-loop")] == [([], [])]


async def test_browser_key_opens_metrics_of_the_folder() -> None:
    app = BeaverApp(lambda: BrowserScreen(DEMO, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        browser = app.screen
        await pilot.press("m")
        screen = await shown(pilot, app)
        assert screen.source == DEMO and len(screen.series) == 1
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is browser


async def test_without_plotext_the_tables_and_one_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ms, "PlotextPlot", None)
    app = BeaverApp(lambda: MetricsScreen(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        screen = await shown(pilot, app)
        assert not screen.query("#p-sweep") and not screen.query("#swing") and not screen.query(".plots")
        hint = text_of(screen.query_one("#metrics-plot-hint"))
        assert 'pip install "beavertui[plot]"' in hint
        assert "Repair rates per model and protocol" in text_of(screen.query_one("#metrics-main"))
        assert len(screen.series) == 1  # the numbers are there, only not drawn


async def test_a_bad_source_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a short path whatever the temporary folder (a parallel run's is longer): the line must fit the screen
    monkeypatch.chdir(tmp_path)
    app = BeaverApp(lambda: MetricsScreen(Path("missing")))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: isinstance(app.screen, MetricsScreen) and app.screen.error is not None)
        assert "no such run directory" in str(screen.error)
        assert text_of(screen.query_one("#metrics-status"), width=400).count("\n") == 1


def test_tui_needs_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(DEMO), "--tui"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--tui needs a terminal" in err


async def test_breakdowns_and_recompute() -> None:
    app = BeaverApp(lambda: MetricsScreen(H200, by=["family"]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await shown(pilot, app)
        first = screen.report
        assert "Repair rates per family" in text_of(screen.query_one("#metrics-tables"), width=200)
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.report is not first)
        assert screen.series == ms.sweep_series(screen.report.groups)


def _words(tables: list[Any]) -> set[str]:
    """Every word the tables print: titles, column names, cells (a rate's value and interval), notes."""
    out: set[str] = set()
    for t in tables:
        out.update(t.title.split())
        for i, name in enumerate(t.columns):
            if any(row[i] for row in t.rows if not isinstance(row[i], Rate)) or any(
                isinstance(row[i], Rate) for row in t.rows
            ):  # the fitter leaves out a column empty in every row
                out.update(name.split())
        for row in t.rows:
            for c in row:
                out.update((pct(c) if isinstance(c, Rate) else c).split())
        out.update(t.note.split())
    return out


@pytest.mark.parametrize("columns", [80, 160, 250])
async def test_tables_fit_the_screen_with_no_word_split(columns: int) -> None:
    """At 80 columns the main table turns into one block per group, at 160 and 250 it wraps or fits:
    every word the tables hold is drawn whole on one line, and no drawn line is wider than the screen."""
    app = BeaverApp(lambda: MetricsScreen(H200, by=["family"]))
    async with app.run_test(size=(columns, 50)) as pilot:
        screen = await shown(pilot, app)
        tables = screen.report.tables
        assert len(tables) >= 3
        text: list[str] = []
        for wid in ("#metrics-main", "#metrics-tables"):
            widget = screen.query_one(wid, FittedTables)
            assert columns - 4 <= widget.size.width <= columns
            lines = drawn(widget)
            assert lines and all(len(ln.rstrip()) <= widget.size.width for ln in lines)
            text += lines
        tokens = {w for ln in text for w in ln.split()}
        missing = sorted(_words(tables) - tokens)
        assert not missing, f"words split or cut at {columns} columns: {missing[:10]}"
        main = drawn(screen.query_one("#metrics-main", FittedTables))
        blocks = any("one block per model" in ln for ln in main)
        assert blocks == (columns == 80), "the main table: one block per group at 80 columns, columns above"


async def test_a_recompute_that_fails_leaves_no_numbers_of_before(tmp_path: Path) -> None:
    """'r' on a folder whose sessions are gone: the error line replaced the status, and the tables and
    plots of the computation before stayed under it, read as this folder's numbers. They are cleared, and
    the plots (empty frames before the first computation too) hidden."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    app = BeaverApp(lambda: MetricsScreen(run))
    async with app.run_test(size=SIZE) as pilot:
        screen = await shown(pilot, app)
        assert "Repair rates per model and protocol" in "\n".join(drawn(screen.query_one("#metrics-main")))
        assert screen.query_one("#metrics-plots").display
        shutil.rmtree(run)
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.error is not None)
        await pilot.pause()
        assert screen.report is None and screen.series == [] and screen.bars == []
        assert not "".join(drawn(screen.query_one("#metrics-main"))).strip()
        assert not text_of(screen.query_one("#metrics-tables")).strip()
        assert not screen.query_one("#metrics-plots").display
        shutil.copytree(DEMO, run)  # the sessions back: the numbers and plots come back
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.report is not None)
        await pilot.pause()
        assert screen.query_one("#metrics-plots").display and screen.series
