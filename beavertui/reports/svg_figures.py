"""SVG figures beyond the p sweep and swing: how sessions ended (stagnation modes), the speedups of correct
repairs, pass@k over the feedback levels, history windows and few-shot examples, and the models' ranks
behind Kendall's tau.

Drawn as reports/svg.py draws (same fonts, palette, text-width estimate, white canvas sized to its text),
from the numbers engine/metrics/figures.py lays out. Every figure ends with notes saying what it counts
and what it leaves out; with nothing to draw it says so in place of the plot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from beavertui.engine.metrics.figures import SPEEDUP_EDGES, STAGNATION_PARTS
from beavertui.reports.svg import FONT, PALETTE, _doc, text_width

#: One colour per part of a stagnation-mode bar (STAGNATION_PARTS' order).
PART_COLOUR: dict[str, str] = {
    "repaired": "#2ca02c",
    "duplicate_code": "#d62728",
    "code_cycle": "#ff7f0e",
    "category_oscillation": "#9467bd",
    "no_progress": "#8c564b",
    "ran to K": "#7f7f7f",
}
NOTE_SIZE = 11


def _title(w: float, title: str) -> str:
    return f'<text x="{w / 2:.1f}" y="22" text-anchor="middle" font-size="15" {FONT}>{escape(title)}</text>'


def wrap(text: str, width: float, size: float = NOTE_SIZE) -> list[str]:
    """``text`` cut at spaces into lines no wider than ``width`` pixels (by text_width's estimate)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        cand = f"{line} {word}" if line else word
        if line and text_width(cand, size) > width:
            lines.append(line)
            line = word
        else:
            line = cand
    if line:
        lines.append(line)
    return lines


def _notes(notes: Sequence[str], x: float, top: float, width: float) -> tuple[list[str], float]:
    """The notes as text lines (class ``note``) from ``top``, wrapped to ``width``; the height they take."""
    body: list[str] = []
    y = top
    for note in notes:
        for line in wrap(note, width):
            y += 15
            body.append(
                f'<text x="{x:.1f}" y="{y:.1f}" font-size="{NOTE_SIZE}" class="note" {FONT}>{escape(line)}</text>'
            )
        y += 3
    return body, y - top


def empty_svg(title: str, message: str, notes: Sequence[str] = ()) -> str:
    """A figure with nothing to plot: its title and the line saying why, in place of the plot."""
    w = max(640.0, 60 + text_width(title, 15), 60 + text_width(message, 12))
    body = [_title(w, title)]
    body.append(
        f'<text x="{w / 2:.1f}" y="60" text-anchor="middle" font-size="12" class="empty" {FONT}>'
        f"{escape(message)}</text>"
    )
    lines, h = _notes(notes, 20, 70, w - 40)
    return _doc(w, 80 + h, body + lines)


STAGNATION_TITLE = "How sessions ended: repaired, stopped by a stagnation detector, or ran to K"
STAGNATION_NOTE = (
    "Each bar: one (model, protocol) group's trajectories (a session each), as Table 1 counts them. repaired: "
    "the loop ended in success (under a gate after the run, a correct attempt at any speed; under an in-loop "
    "gate, an attempt that met it); duplicate_code, code_cycle, category_oscillation, no_progress: the detector "
    "that stopped a trajectory that never succeeded; ran to K: never succeeded and no detector fired (the "
    "budget was spent). The detectors' shares of the part that never succeeded are the stagnation_rate."
)


def stagnation_svg(modes: Sequence[Mapping[str, Any]], left_out: Sequence[str] = ()) -> str:
    """Horizontal stacked bars, one per group (engine.metrics.figures.stagnation_modes): the share of its
    trajectories in each part, in percent; ``left_out``: a note per group not drawn."""
    notes = [STAGNATION_NOTE, *left_out]
    if not modes:
        return empty_svg(STAGNATION_TITLE, "No iterative session to break down.", notes)
    row_h = 24
    labels = [f"{m['label']} (n={m['n']})" for m in modes]
    left = max([120.0] + [text_width(lb, 11) + 16 for lb in labels])
    pw = 460
    top = 40
    legend = [f"{part}" for part in STAGNATION_PARTS]
    legend_w = sum(30 + text_width(lb, 11) for lb in legend)
    w = max(left + pw + 40, 60 + text_width(STAGNATION_TITLE, 15), 40 + min(legend_w, 900))
    plot_bottom = top + row_h * len(modes)
    body = [_title(w, STAGNATION_TITLE)]
    for i in range(6):
        xv = left + pw * i / 5
        body.append(f'<line x1="{xv:.1f}" y1="{top}" x2="{xv:.1f}" y2="{plot_bottom}" stroke="#ddd"/>')
        body.append(
            f'<text x="{xv:.1f}" y="{plot_bottom + 15}" text-anchor="middle" font-size="11" {FONT}>{20 * i}%</text>'
        )
    body.append(
        f'<text x="{left + pw / 2:.1f}" y="{plot_bottom + 32}" text-anchor="middle" font-size="12" {FONT}>'
        "share of the group's trajectories (%)</text>"
    )
    for i, (m, label) in enumerate(zip(modes, labels, strict=True)):
        yv = top + row_h * i
        body.append(
            f'<text x="{left - 8:.1f}" y="{yv + 16}" text-anchor="end" font-size="11" {FONT}>{escape(label)}</text>'
        )
        x0 = left
        for part in STAGNATION_PARTS:
            share = float(m["shares"][part])
            if m["counts"][part] == 0:
                continue
            width = pw * share
            body.append(
                f'<rect x="{x0:.1f}" y="{yv + 4}" width="{width:.1f}" height="{row_h - 8}" '
                f'fill="{PART_COLOUR[part]}" data-group="{i + 1}" data-part="{escape(part)}" '
                f'data-count="{m["counts"][part]}"><title>{escape(part)}: {m["counts"][part]} of {m["n"]} '
                f"({100 * share:.1f}%)</title></rect>"
            )
            if text_width(f"{100 * share:.0f}%", 10) + 4 <= width:
                body.append(
                    f'<text x="{x0 + width / 2:.1f}" y="{yv + 16}" text-anchor="middle" font-size="10" '
                    f'fill="white" {FONT}>{100 * share:.0f}%</text>'
                )
            x0 += width
    # the legend: one swatch per part, wrapped onto as many lines as the width needs
    ly = plot_bottom + 56
    lx = 20.0
    for part in STAGNATION_PARTS:
        item = 30 + text_width(part, 11)
        if lx + item > w - 10:
            lx, ly = 20.0, ly + 18
        body.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="14" height="10" fill="{PART_COLOUR[part]}"/>')
        body.append(
            f'<text x="{lx + 20:.1f}" y="{ly}" font-size="11" class="legend" {FONT}>{escape(part)}</text>'
        )
        lx += item
    lines, h = _notes(notes, 20, ly + 6, w - 40)
    return _doc(w, ly + 6 + h + 10, body + lines)


SPEEDUP_TITLE = "Speedups of correct repairs (candidate over reference), per model and protocol"


def _fmt_edge(v: float) -> str:
    if v >= 1:
        return f"{v:g}" if v == int(v) else f"{v:.2g}"
    return f"1/{1 / v:g}" if abs(1 / v - round(1 / v)) < 1e-9 else f"{v:.2g}"


def speedup_svg(hists: Sequence[Mapping[str, Any]], left_out: Sequence[str] = ()) -> str:
    """One histogram panel per group (engine.metrics.figures.speedup_histograms): the count of correct
    repairs per speedup bin on a log scale, the group's gate p and 1.0x marked; the repairs at or above the
    gate in the pass colour, those below it in the below-gate colour (the session pages' two colours)."""
    from beavertui.reports.palette import BELOW_GATE_COLOUR, CATEGORY_COLOUR

    at_gate = CATEGORY_COLOUR["passed"]

    notes = [
        "Per group: its trajectories with a correct attempt that counts (flagged ones aside), by the speedup "
        "its pass@k(p) is held against p (its best correct attempt's, the reference's median time over the "
        "candidate's; x reference, bins a factor of sqrt(2) apart, the first and last open-ended). Bars below "
        "the gate p (dashed) are correct repairs the gate does not count: degenerate under a gate after the "
        "run. Degenerate_rate itself reads the first correct attempt at iteration >= 2 against 1.0x (dotted), "
        "timing noise allowed for.",
        *left_out,
    ]
    if not hists:
        return empty_svg(SPEEDUP_TITLE, "No correct repair to show.", notes)
    edges = SPEEDUP_EDGES
    lo, hi = math.log2(edges[0]), math.log2(edges[-1])
    left, pw, ph = 60.0, 560.0, 110.0
    gap = 64.0
    top = 40.0
    heads = [
        f"{h['label']}: {h['n']} repair(s), {h['below_gate']} below the gate p = {h['gate']:g}"
        + (f", {h['unspeeded']} without a speedup (not drawn)" if h["unspeeded"] else "")
        for h in hists
    ]
    w = max(left + pw + 30, 60 + text_width(SPEEDUP_TITLE, 15), max(20 + text_width(t, 11) for t in heads))

    def x(v: float) -> float:
        return left + pw * (math.log2(min(max(v, edges[0]), edges[-1])) - lo) / (hi - lo)

    body = [_title(w, SPEEDUP_TITLE)]
    for i, (h, head) in enumerate(zip(hists, heads, strict=True)):
        y0 = top + i * (ph + gap)
        body.append(
            f'<text x="20" y="{y0 + 12:.1f}" font-size="11" class="panel" {FONT}>{escape(head)}</text>'
        )
        py = y0 + 20
        top_count = max(max(h["counts"]), 1)
        step = max(1, math.ceil(top_count / 4))
        for c in range(0, top_count + 1, step):
            yv = py + ph * (1 - c / top_count)
            body.append(f'<line x1="{left}" y1="{yv:.1f}" x2="{left + pw}" y2="{yv:.1f}" stroke="#eee"/>')
            body.append(
                f'<text x="{left - 6}" y="{yv + 4:.1f}" text-anchor="end" font-size="10" {FONT}>{c}</text>'
            )
        for b, count in enumerate(h["counts"]):
            xa, xb = x(edges[b]), x(edges[b + 1])
            below = h["counts_below_gate"][b]
            base = py + ph
            # a bin's repairs below the gate at the foot of its bar, in the below-gate colour
            for part, n, fill in (("below", below, BELOW_GATE_COLOUR), ("at", count - below, at_gate)):
                if n == 0:
                    continue
                bh = ph * n / top_count
                what = "below the gate" if part == "below" else "at or above the gate"
                body.append(
                    f'<rect x="{xa + 1:.1f}" y="{base - bh:.1f}" width="{xb - xa - 2:.1f}" height="{bh:.1f}" '
                    f'fill="{fill}" data-group="{i + 1}" data-bin="{b}" data-part="{part}" data-count="{n}">'
                    f"<title>{_fmt_edge(edges[b])}x to {_fmt_edge(edges[b + 1])}x: {n} {what}</title></rect>"
                )
                base -= bh
        body.append(f'<rect x="{left}" y="{py:.1f}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
        gx = x(h["gate"]) if h["gate"] > 0 else left
        body.append(
            f'<line x1="{gx:.1f}" y1="{py - 4:.1f}" x2="{gx:.1f}" y2="{py + ph:.1f}" stroke="#333" '
            f'stroke-width="1.5" stroke-dasharray="5,3" class="gate" data-gate="{h["gate"]:g}"/>'
        )
        body.append(
            f'<line x1="{x(1.0):.1f}" y1="{py:.1f}" x2="{x(1.0):.1f}" y2="{py + ph:.1f}" stroke="#333" '
            f'stroke-dasharray="1,2"/>'
        )
        for b, e in enumerate(edges):
            if b % 2 == 0:
                body.append(
                    f'<text x="{x(e):.1f}" y="{py + ph + 14:.1f}" text-anchor="middle" font-size="10" {FONT}>'
                    f"{_fmt_edge(e)}</text>"
                )
    bottom = top + (len(hists) - 1) * (ph + gap) + 20 + ph + 34
    body.append(
        f'<text x="{left + pw / 2:.1f}" y="{bottom:.1f}" text-anchor="middle" font-size="12" {FONT}>'
        "speedup (x reference, log scale); bar height: repairs (trajectories)</text>"
    )
    ly = bottom + 22
    lx = 20.0
    for fill, what in (
        (at_gate, "at or above the gate p"),
        (BELOW_GATE_COLOUR, "below the gate p: correct, not counted"),
    ):
        body.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="14" height="10" fill="{fill}"/>')
        body.append(
            f'<text x="{lx + 20:.1f}" y="{ly}" font-size="11" class="legend" {FONT}>{escape(what)}</text>'
        )
        lx += 40 + text_width(what, 11)
    lines, h_notes = _notes(notes, 20, ly + 4, w - 40)
    return _doc(w, ly + 4 + h_notes + 10, body + lines)


LEVELS_TITLE = "pass@k over the feedback levels, the history windows and the few-shot examples, per model"
LEVEL_AXIS_NAME = {
    "feedback": "feedback level (L0 nothing back ... L3 the full report, L4 profiler metrics)",
    "history": "history window H (earlier turns the prompt keeps)",
    "few_shot": "few-shot examples: strategy and K examples (none: no examples)",
}
LEVEL_NONE = {
    "feedback": "No runs of one model that differ only in the feedback level.",
    "history": "No runs of one model that differ only in the history window.",
    "few_shot": "No runs of one model that differ only in the few-shot examples.",
}
LEVELS_NONE = "No runs vary the feedback level, the history window or the few-shot examples."


def levels_svg(panels: Sequence[Mapping[str, Any]]) -> str:
    """One line panel per level axis (engine.metrics.figures.level_panels): pass@k (%) of each model at
    each value of the axis it ran, the other settings fixed, a polyline per segment of its line (the
    few-shot axis: one per strategy, under a row naming the strategies); a panel without runs says so."""
    from beavertui.reports.svg import DASHES, MARKERS, _marker

    notes = [
        "pass@k at each protocol's own gate, from groups run separately that differ only in this setting (the "
        "swing entries from runs); a line joins the values its model ran, a value it did not run is no point. "
        "The gate axis read from one group's sweep is p_sweep.svg's. Few-shot: a line joins the K of one "
        "strategy (matched, random, curated), none is a point of its own; the legend's swing is over every value.",
    ]
    if not any(p["lines"] for p in panels):
        return empty_svg(LEVELS_TITLE, LEVELS_NONE, notes)
    left, pw, ph, top = 60.0, 480.0, 220.0, 58.0
    models = sorted({ln["model"] for p in panels for ln in p["lines"]})
    legend_w = max(
        (
            36 + text_width(f"{ln['label']} (swing {100 * ln['swing']:.1f} pp)", 11)
            for p in panels
            for ln in p["lines"]
        ),
        default=0.0,
    )
    w = max(left + pw + 40, 60 + text_width(LEVELS_TITLE, 15), left + legend_w + 20)
    body = [_title(w, LEVELS_TITLE)]
    y0 = top
    for panel in panels:
        axis = panel["axis"]
        if not panel["lines"]:
            body.append(
                f'<text x="{left:.1f}" y="{y0 + 16:.1f}" font-size="12" class="empty" data-axis="{axis}" {FONT}>'
                f"{escape(LEVEL_NONE[axis])}</text>"
            )
            y0 += 44  # clear of the next panel's "pass@k (%)" above its frame
            continue
        values = list(panel["values"])
        step = pw / max(1, len(values))

        def x(v: str, values: list[str] = values, step: float = step) -> float:
            return left + step * (values.index(v) + 0.5)

        def y(v: float, y0: float = y0) -> float:
            return y0 + ph * (1 - v)

        for i in range(6):
            v = i / 5
            body.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ddd"/>')
            body.append(
                f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" {FONT}>{100 * v:.0f}%</text>'
            )
        # a few-shot value "matched K3" is ticked K3, its strategy written once under its ticks
        strands: dict[str, list[str]] = {}
        for v in values:
            strand, _, tick = v.partition(" ") if axis == "few_shot" else ("", "", v)
            strands.setdefault(strand, []).append(v)
            body.append(
                f'<text x="{x(v):.1f}" y="{y0 + ph + 16:.1f}" text-anchor="middle" font-size="11" {FONT}>'
                f"{escape(tick or v)}</text>"
            )
        below = 0.0
        for strand, members in strands.items():
            if not strand or members == [strand]:
                continue
            if members[0] != values[0]:  # a strategy's values apart from those before them
                sx = x(members[0]) - step / 2
                body.append(
                    f'<line x1="{sx:.1f}" y1="{y0:.1f}" x2="{sx:.1f}" y2="{y0 + ph:.1f}" stroke="#bbb" '
                    'stroke-dasharray="3,3"/>'
                )
            mid = (x(members[0]) + x(members[-1])) / 2
            body.append(
                f'<text x="{mid:.1f}" y="{y0 + ph + 32:.1f}" text-anchor="middle" font-size="11" '
                f'class="strand" {FONT}>{escape(strand)}</text>'
            )
            below = 16.0
        body.append(f'<rect x="{left}" y="{y0:.1f}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
        body.append(
            f'<text x="{left + pw / 2:.1f}" y="{y0 + ph + 34 + below:.1f}" text-anchor="middle" font-size="12" '
            f"{FONT}>{escape(LEVEL_AXIS_NAME[axis])}</text>"
        )
        body.append(
            f'<text x="{left - 6:.1f}" y="{y0 - 8:.1f}" text-anchor="start" font-size="12" {FONT}>pass@k (%)</text>'
        )
        legend_top = y0 + ph + 56 + below
        for i, ln in enumerate(panel["lines"]):
            colour = PALETTE[models.index(ln["model"]) % len(PALETTE)]
            dash = DASHES[i % len(DASHES)]
            kind = MARKERS[i % len(MARKERS)]
            style = f' stroke-dasharray="{dash}"' if dash else ""
            for seg in ln["segments"]:
                pts = " ".join(f"{x(v):.1f},{y(pk):.1f}" for v, pk in seg)
                body.append(
                    f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{style} '
                    f'data-axis="{axis}" data-series="{i + 1}" data-values="'
                    + escape(" ".join(f"{v.replace(' ', '_')}={pk:.6g}" for v, pk in seg))
                    + '"/>'
                )
            body += [_marker(kind, x(v), y(pk), 4.0, colour) for v, pk in ln["points"]]
            ly = legend_top + 18 * i
            body.append(
                f'<line x1="{left}" y1="{ly - 4:.1f}" x2="{left + 24}" y2="{ly - 4:.1f}" stroke="{colour}" '
                f'stroke-width="2"{style}/>'
            )
            body.append(_marker(kind, left + 12, ly - 4, 4, colour))
            entry = f"{ln['label']} (swing {100 * ln['swing']:.1f} pp)"
            body.append(
                f'<text x="{left + 32}" y="{ly:.1f}" font-size="11" class="legend" {FONT}>{escape(entry)}</text>'
            )
        y0 = legend_top + 18 * len(panel["lines"]) + 30
    lines, h = _notes(notes, 20, y0, w - 40)
    return _doc(w, y0 + h + 10, body + lines)


RANKS_TITLE = "Models' ranks by pass@k under each protocol, with Kendall's tau-b between them"


def _tau(t: Mapping[str, Any]) -> str:
    return "undefined" if t["tau"] is None else f"{t['tau']:.2f}"


def ranks_svg(charts: Sequence[Mapping[str, Any]]) -> str:
    """A bump chart per set of Kendall entries (engine.metrics.figures.rank_charts): each model's rank
    (1 the highest pass@k) in each column, a line joining a model's ranks (each drawn up to 3 px from the
    next, so tied models' lines stay apart), each adjacent pair's tau-b between its columns and every pair's in
    the panel's heading."""
    notes = [
        "Rank 1 is the highest pass@k among the models of a column (pass@k at the protocol's own gate; along a "
        "p sweep, pass@k at that p); models with equal pass@k share the mean of their ranks, the ties tau-b "
        "counts. Each tau-b is the Kendall table's: over the models present in both columns (undefined where "
        "every model ties). A model with no group under a column has no point there; lines are drawn a few "
        "pixels apart so that models of equal rank stay visible.",
    ]
    if not charts:
        return empty_svg(
            RANKS_TITLE, "No two protocols with two models in common: no Kendall's tau to draw.", notes
        )
    models = sorted({m for c in charts for m in c["ranks"]})
    left, top, row, colw = 60.0, 40.0, 26.0, 120.0
    body: list[str] = []
    heads: list[str] = []
    width = 60 + text_width(RANKS_TITLE, 15)
    for c in charts:
        heads.append(c["title"])
        width = max(width, 20 + text_width(c["title"], 12))
        pw = colw * max(1, len(c["columns"]) - 1)
        width = max(width, left + pw + 80)
        for m, rk in c["ranks"].items():
            width = max(width, left + 36 + text_width(_legend_line(m, rk, c["scores"][m]), 11))
    w = max(width, 640.0)
    y0 = top
    for n, (c, title) in enumerate(zip(charts, heads, strict=True)):
        body.append(
            f'<text x="20" y="{y0 + 12:.1f}" font-size="12" class="panel" {FONT}>{escape(title)}</text>'
        )
        pairs = ", ".join(
            f"{c['columns'][t['a']]}-{c['columns'][t['b']]} {_tau(t)} ({t['n_models']} models)"
            for t in c["taus"]
        )
        lines, h = _notes([f"Kendall's tau-b: {pairs}"], 20, y0 + 14, w - 40)
        body += [ln.replace('class="note"', 'class="taus"') for ln in lines]
        cols = c["columns"]
        n_models = len(c["ranks"])
        py = y0 + 14 + h + 26  # room for the tau of each adjacent pair above the plot

        def x(i: int) -> float:
            return left + colw * i

        def y(r: float, py: float = py) -> float:
            return py + row * (r - 1)

        for r in range(1, n_models + 1):
            body.append(
                f'<line x1="{left - 10}" y1="{y(r):.1f}" x2="{x(len(cols) - 1) + 10:.1f}" y2="{y(r):.1f}" stroke="#eee"/>'
            )
            body.append(
                f'<text x="{left - 16}" y="{y(r) + 4:.1f}" text-anchor="end" font-size="11" {FONT}>{r}</text>'
            )
        body.append(
            f'<text x="{left - 16}" y="{py - 12:.1f}" text-anchor="end" font-size="11" {FONT}>rank</text>'
        )
        for i, name in enumerate(cols):
            body.append(
                f'<text x="{x(i):.1f}" y="{y(n_models) + 22:.1f}" text-anchor="middle" font-size="11" '
                f'class="column" {FONT}>{escape(name)}</text>'
            )
        for t in c["taus"]:
            if abs(t["a"] - t["b"]) == 1:
                mid = (x(t["a"]) + x(t["b"])) / 2
                body.append(
                    f'<text x="{mid:.1f}" y="{py - 12:.1f}" text-anchor="middle" font-size="10" class="tau" '
                    f"{FONT}>tau {_tau(t)}</text>"
                )
        for k, (m, rk) in enumerate(c["ranks"].items()):
            colour = PALETTE[models.index(m) % len(PALETTE)]
            # each model's line a little apart from the others', so models of equal rank stay visible
            off = min(3.0, 16.0 / n_models) * (k - (n_models - 1) / 2)
            pts = [(x(i), y(r) + off) for i, r in enumerate(rk) if r is not None]
            body.append(
                f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" fill="none" '
                f'stroke="{colour}" stroke-width="2.5" data-chart="{n + 1}" data-model="{escape(m)}" '
                f'data-ranks="{" ".join("-" if r is None else f"{r:g}" for r in rk)}"/>'
            )
            body += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="4" fill="{colour}"/>' for a, b in pts]
        ly = y(n_models) + 44
        for i, (m, rk) in enumerate(c["ranks"].items()):
            colour = PALETTE[models.index(m) % len(PALETTE)]
            body.append(
                f'<line x1="{left}" y1="{ly + 18 * i - 4:.1f}" x2="{left + 24}" y2="{ly + 18 * i - 4:.1f}" '
                f'stroke="{colour}" stroke-width="2.5"/>'
            )
            body.append(
                f'<text x="{left + 32}" y="{ly + 18 * i:.1f}" font-size="11" class="legend" {FONT}>'
                f"{escape(_legend_line(m, rk, c['scores'][m]))}</text>"
            )
        y0 = ly + 18 * n_models + 20
    body.insert(0, _title(w, RANKS_TITLE))
    lines, h = _notes(notes, 20, y0 - 10, w - 40)
    return _doc(w, y0 + h, body + lines)


def _legend_line(model: str, ranks: Sequence[float | None], scores: Sequence[float | None]) -> str:
    rk = ", ".join("-" if r is None else f"{r:g}" for r in ranks)
    sc = ", ".join("-" if s is None else f"{100 * s:.1f}%" for s in scores)
    return f"{model}: rank {rk} (pass@k {sc})"
