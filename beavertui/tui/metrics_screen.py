"""The metrics screen: the tables of `beavertui metrics` and its figures.

It computes exactly what the command prints (commands/metrics.py ``compute`` and ``with_tables``) in a
thread worker, so a large run paints at once and fills in. The plots draw the same numbers as the SVG
files (reports/svg.py, reports/svg_figures.py): pass@k in percent against the speedup threshold p, one
line per (model, protocol); the swing of pass@k per protocol axis in percentage points, one bar per
(model, axis); how each group's sessions ended (repaired, each stagnation detector, ran to K) in percent;
the speedups of correct repairs per log-scale bin, the gates marked; and pass@k in percent over the
feedback levels, over the history windows and over the few-shot examples (strategy x K), a line per model;
and the models' ranks under the
protocols of one Kendall's tau comparison, with tau between them (engine/metrics/figures.py).
Without textual-plotext the screen shows the tables and one line saying how to get the plots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from beavertui.tui.fitted import FittedTables
from beavertui.tui.footer import Footer

try:
    from textual_plotext import PlotextPlot
except ImportError:  # the optional `plot` extra is not installed
    PlotextPlot = None  # type: ignore[misc, assignment]

PLOT_HINT = 'plots of the p sweep and of swing need textual-plotext: pip install "beavertui[plot]"'
SWEEP_TITLE = "pass@k (%) by speedup threshold p"
SWING_TITLE = "Swing of pass@k (pp)"
SWING_NONE = "Swing: none (one protocol per axis)"

STAGNATION_TITLE = "How sessions ended (% of trajectories)"
STAGNATION_NONE = "How sessions ended: no iterative session"
SPEEDUP_TITLE = "Speedups of correct repairs (gate p: vertical line)"
SPEEDUP_NONE = "Speedups of correct repairs: none"
RANKS_NONE = "Ranks: no Kendall's tau (no two protocols with two models in common)"
LEVEL_TITLE = {
    "feedback": "pass@k (%) by feedback level",
    "history": "pass@k (%) by history window",
    "few_shot": "pass@k (%) by few-shot strategy (m: matched, r: random, c: curated) and K",
}
LEVEL_NONE = {
    "feedback": "Feedback levels: no runs that differ only in them",
    "history": "History windows: no runs that differ only in them",
    "few_shot": "Few-shot examples: no runs that differ only in them",
}
#: A model's colour on a level plot, kept over the segments of its line (the few-shot strategies).
LEVEL_COLOURS = ("blue+", "red+", "green+", "orange+", "magenta+", "cyan+", "yellow+", "gray+")

Series = tuple[str, list[float], list[float]]


def sweep_series(groups: Sequence[Any]) -> list[Series]:
    """Per (model, protocol): its label, the p values where pass@k is defined, pass@k there in percent."""
    out = []
    for g in groups:
        pts = [(p, 100 * v) for p, v in g.p_sweep.items() if v is not None]
        out.append((f"{g.model} | {g.protocol.short()}", [p for p, _ in pts], [v for _, v in pts]))
    return out


def legend_labels(groups: Sequence[Any]) -> list[str]:
    """Short curve labels that fit a terminal legend: only what differs between the groups."""
    models = {g.model for g in groups}
    protocols = {g.protocol for g in groups}
    if len(groups) > 1 and len(models) == 1:
        return [g.protocol.short() for g in groups]
    if len(groups) > 1 and len(protocols) == 1:
        return [g.model for g in groups]
    return [_short(f"{g.model} | {g.protocol.short()}", 40) for g in groups]


def swing_bars(entries: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
    """Per (model, axis, fixed rest): its label and the swing in percentage points. An axis read from one
    group's p sweep names that group's protocol; a named pairing says so."""
    from beavertui.reports.svg import swing_labels

    return [(label, 100 * float(e["swing"])) for label, e in zip(swing_labels(entries), entries, strict=True)]


def _short(label: str, width: int = 26) -> str:
    """A bar label that leaves the plot room, never longer than ``width``: the model shortened first, then
    the axis (a label as wide as the plot left plotext no room for the bar, and it failed)."""
    if len(label) <= width:
        return label
    model, _, rest = label.partition(" | ")
    if not rest:
        return label[: width - 1] + "…"
    keep = max(4, width - len(rest) - 4)
    out = f"{model[:keep]}… | {rest}"
    return out if len(out) <= width else out[: width - 1] + "…"


class ReportReady(Message):
    def __init__(self, report: Any, error: str | None) -> None:
        super().__init__()
        self.report, self.error = report, error


class MetricsScreen(Screen[None]):
    """The metrics of a run directory or attempts table, with the two plots."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("r", "refresh", "Recompute"),
    ]

    def __init__(
        self,
        source: Path,
        source_models: Path | None = None,
        *,
        report: Any = None,
        resamples: int = 1000,
        seed: int | None = None,
        by: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.source = source
        self.source_models = source_models
        self.report = report
        self.resamples, self.seed, self.by = resamples, seed, tuple(by)
        self.error: str | None = None
        self.series: list[Series] = []
        self.bars: list[tuple[str, float]] = []
        self.modes: list[dict[str, Any]] = []
        """engine.metrics.figures.stagnation_modes of the groups shown."""
        self.hists: list[dict[str, Any]] = []
        """engine.metrics.figures.speedup_histograms of the groups shown."""
        self.levels: list[dict[str, Any]] = []
        """engine.metrics.figures.level_panels of the swing shown."""
        self.ranks: list[dict[str, Any]] = []
        """engine.metrics.figures.rank_charts of the groups shown; the plot draws ``rank_chart()``."""
        """engine.metrics.figures.level_panels of the swing shown."""
        self._plots: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="metrics-status")
        with VerticalScroll(id="metrics-body"):
            yield FittedTables(id="metrics-main")
            if PlotextPlot is not None:
                names = (
                    "p-sweep",
                    "swing",
                    "stagnation",
                    "speedups",
                    "feedback",
                    "history",
                    "few_shot",
                    "ranks",
                )
                self._plots = [PlotextPlot(id=name) for name in names]
                with Horizontal(id="metrics-plots", classes="plots"):
                    yield from self._plots[:2]
                with Horizontal(id="metrics-plots-ended", classes="plots"):
                    yield from self._plots[2:4]
                with Horizontal(id="metrics-plots-levels", classes="plots"):
                    yield from self._plots[4:6]
                with Horizontal(id="metrics-plots-ranks", classes="plots"):
                    yield from self._plots[6:8]
            else:
                yield Static(Text(PLOT_HINT, style="yellow"), id="metrics-plot-hint")
            yield FittedTables(id="metrics-tables")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#metrics-body", VerticalScroll).focus()
        if self.report is not None and self.report.tables:
            self._show(self.report)
        else:
            self._show_plots(False)  # no empty frames while the first computation runs
            self.action_refresh()

    def on_unmount(self) -> None:
        # textual-plotext subscribes each plot to the app's theme signal with a callback that holds the plot,
        # and Textual drops a subscription only when the theme changes: without this, every metrics screen
        # ever opened stayed in memory with its two plots (tests/tui/test_long_use.py)
        for plot in self._plots:
            self.app.theme_changed_signal.unsubscribe(plot)
        self._plots = []

    def action_refresh(self) -> None:
        self.query_one("#metrics-status", Static).update(
            Text(f"{self.source} · computing the metrics…", style="yellow")
        )
        self._compute()

    @work(thread=True, exclusive=True, group="metrics")
    def _compute(self) -> None:
        from beavertui.engine.errors import BeaverError
        from beavertui.service.metrics import compute, with_tables

        try:
            report = with_tables(
                compute(self.source, self.source_models),
                resamples=self.resamples,
                seed=self.seed,
                by=self.by,
            )
        except BeaverError as exc:
            self.post_message(ReportReady(None, str(exc)))
            return
        self.post_message(ReportReady(report, None))

    def on_report_ready(self, message: ReportReady) -> None:
        if message.error is not None:
            self.error = message.error
            self.query_one("#metrics-status", Static).update(Text(message.error, style="bold red"))
            # what an earlier computation showed is not what the source gives now: nothing stays under
            # the error (the tables and plots of before read as this source's numbers)
            self.report, self.series, self.bars, self.modes, self.hists = None, [], [], [], []
            self.levels, self.ranks = [], []
            for tables in self.query(FittedTables):
                tables.set_tables([])
            self._show_plots(False)
            return
        self.error = None
        self._show(message.report)

    def _show(self, report: Any) -> None:
        from beavertui.service.metrics import NO_CODE

        self.report = report
        text = Text()
        text.append(str(report.source), style="bold")
        text.append(
            f" · {len(report.table)} attempts · {len(report.groups)} (model, protocol) groups"
            f" · {len(report.swing)} swings · {len(report.kendall)} Kendall pairs"
        )
        if report.cells is None:
            text.append(f" · {NO_CODE}", style="dim")
        for line in report.notes():
            text.append(f"\n{line}", style="yellow")
        self.query_one("#metrics-status", Static).update(text)
        # fitted to the screen's width as the command line fits them to the terminal's (reports/fit.py)
        self.query_one("#metrics-main", FittedTables).set_tables(report.tables[:1])
        self.query_one("#metrics-tables", FittedTables).set_tables(report.tables[1:])
        self.series = sweep_series(report.groups)
        self.bars = swing_bars(report.swing)
        from beavertui.engine.metrics.figures import (
            level_panels,
            rank_charts,
            speedup_histograms,
            stagnation_modes,
        )

        self.modes = stagnation_modes(report.groups)
        self.hists = speedup_histograms(report.groups)
        self.levels = level_panels(report.swing)
        self.ranks = rank_charts(report.groups, report.kendall)
        self._show_plots(True)
        if PlotextPlot is not None:
            self._plot_sweep(report.groups)
            self._plot_swing()
            self._plot_stagnation()
            self._plot_speedups()
            for panel in self.levels:
                self._plot_levels(panel)
            self._plot_ranks()

    def _show_plots(self, shown: bool) -> None:
        """The plots (or the line saying they need the plot extra) shown, or hidden with no numbers."""
        for widget in self.query(".plots, #metrics-plot-hint"):
            widget.display = shown

    def _plot_sweep(self, groups: Sequence[Any]) -> None:
        from beavertui.engine.metrics.compute import P_SWEEP

        assert PlotextPlot is not None
        widget = self.query_one("#p-sweep", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        plt.title(SWEEP_TITLE)
        plt.xlabel("speedup threshold p (x reference)")
        for label, (_full, xs, ys) in zip(legend_labels(groups), self.series, strict=True):
            if xs:
                plt.plot(xs, ys, label=label, marker="braille")
        gates = sorted({g.protocol.gate for g in groups})
        for gate in gates:
            plt.vline(gate, "gray")
        plt.xticks(list(P_SWEEP), [f"{p:g}" for p in P_SWEEP])
        plt.xlim(0, max(P_SWEEP))
        plt.ylim(0, 100)
        plt.yticks([0, 20, 40, 60, 80, 100], ["0%", "20%", "40%", "60%", "80%", "100%"])
        widget.refresh()

    def _plot_swing(self) -> None:
        assert PlotextPlot is not None
        widget = self.query_one("#swing", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        if not self.bars:
            plt.title(SWING_NONE)
        else:
            plt.title(SWING_TITLE)
            plt.bar(
                [_short(label) for label, _ in self.bars],
                [value for _, value in self.bars],
                orientation="horizontal",
                width=0.6,
            )
            top = max(v for _, v in self.bars)
            plt.xlim(0, 100 if top > 50 else max(10.0, top * 1.2))
            plt.xlabel("percentage points")
        widget.refresh()

    def _plot_stagnation(self) -> None:
        from beavertui.engine.metrics.figures import STAGNATION_PARTS

        assert PlotextPlot is not None
        widget = self.query_one("#stagnation", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        if not self.modes:
            plt.title(STAGNATION_NONE)
        else:
            plt.title(STAGNATION_TITLE)
            plt.stacked_bar(  # type: ignore[call-arg]  # plotext takes labels=; its stub says label=
                [_short(m["label"]) for m in self.modes],
                [[100 * m["shares"][part] for m in self.modes] for part in STAGNATION_PARTS],
                labels=list(STAGNATION_PARTS),
                orientation="horizontal",
                width=0.6,
            )
            plt.xlim(0, 100)
            plt.xlabel("% of the group's trajectories")
        widget.refresh()

    def _plot_speedups(self) -> None:
        import math

        from beavertui.engine.metrics.figures import SPEEDUP_EDGES

        assert PlotextPlot is not None
        widget = self.query_one("#speedups", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        if not self.hists:
            plt.title(SPEEDUP_NONE)
        else:
            plt.title(SPEEDUP_TITLE)
            # bin b is drawn at x = b + 1 (plotext's bar positions); a speedup v at its log-scale place
            lo = math.log2(SPEEDUP_EDGES[0])

            def at(v: float) -> float:
                return 0.5 + (math.log2(max(v, SPEEDUP_EDGES[0])) - lo) / 0.5

            plt.multiple_bar(  # type: ignore[call-arg]  # plotext takes labels=; its stub says label=
                list(range(1, len(SPEEDUP_EDGES))),
                [h["counts"] for h in self.hists],
                labels=[_short(h["label"], 40) for h in self.hists],
            )
            for gate in sorted({h["gate"] for h in self.hists}):
                plt.vline(at(gate), "gray")
            ticks = list(range(0, len(SPEEDUP_EDGES), 4))
            plt.xticks([t + 0.5 for t in ticks], [f"{SPEEDUP_EDGES[t]:.3g}" for t in ticks])
            plt.xlabel("speedup (x reference, log scale)")
            plt.ylabel("repairs")
        widget.refresh()

    def _plot_levels(self, panel: Mapping[str, Any]) -> None:
        assert PlotextPlot is not None
        axis = panel["axis"]
        widget = self.query_one(f"#{axis}", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        if not panel["lines"]:
            plt.title(LEVEL_NONE[axis])
        else:
            plt.title(LEVEL_TITLE[axis])
            values = list(panel["values"])
            for i, line in enumerate(panel["lines"]):
                # a plot call per segment (few-shot: per strategy), the model's colour and label kept
                for j, seg in enumerate(line["segments"]):
                    plt.plot(
                        [values.index(v) + 1 for v, _ in seg],
                        [100 * pk for _, pk in seg],
                        label=_short(line["label"], 30) if j == 0 else "",
                        marker="braille",
                        color=LEVEL_COLOURS[i % len(LEVEL_COLOURS)],
                    )
            ticks = [
                v.replace("matched ", "m:").replace("random ", "r:").replace("curated ", "c:") for v in values
            ]
            plt.xticks(list(range(1, len(values) + 1)), ticks if axis == "few_shot" else values)
            plt.xlim(0.5, len(values) + 0.5)
            plt.ylim(0, 100)
        widget.refresh()

    def rank_chart(self) -> dict[str, Any] | None:
        """The rank chart the screen draws: the first across separate runs or a pairing, else the first
        along a p sweep (the SVG and the page draw them all)."""
        across = [c for c in self.ranks if c["from"] != "p_sweep"]
        charts = across or self.ranks
        return charts[0] if charts else None

    def _plot_ranks(self) -> None:
        assert PlotextPlot is not None
        widget = self.query_one("#ranks", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        chart = self.rank_chart()
        if chart is None:
            plt.title(RANKS_NONE)
        else:
            cols = chart["columns"]
            taus = ", ".join(
                f"{cols[t['a']]}-{cols[t['b']]} {'-' if t['tau'] is None else format(t['tau'], '.2f')}"
                for t in chart["taus"]
                if abs(t["a"] - t["b"]) == 1
            )
            more = len(self.ranks) - 1
            plt.title(
                f"Ranks by pass@k: {chart['title']} · tau-b {taus}"
                + (f" · {more} more chart(s) in ranks.svg" if more else "")
            )
            for model, rk in chart["ranks"].items():
                pts = [(i + 1, -r) for i, r in enumerate(rk) if r is not None]
                plt.plot([a for a, _ in pts], [b for _, b in pts], label=_short(model, 30), marker="braille")
            n = len(chart["ranks"])
            plt.xticks(list(range(1, len(cols) + 1)), cols)
            plt.yticks([-r for r in range(1, n + 1)], [str(r) for r in range(1, n + 1)])
            plt.xlim(0.5, len(cols) + 0.5)
            plt.ylim(-n - 0.5, -0.5)
            plt.ylabel("rank (1 = highest pass@k)")
        widget.refresh()

    def plotted(self, plot_id: str) -> tuple[list[Any], list[Any], list[str]]:
        """The data plotext holds for a plot (x lists, y lists, labels): what is drawn, for checks."""
        assert PlotextPlot is not None
        monitor = self.query_one(f"#{plot_id}", PlotextPlot).plt._active.monitor  # type: ignore[attr-defined]
        return list(monitor.x), list(monitor.y), list(monitor.label)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()
