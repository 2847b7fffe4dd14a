"""SVG plots of the p sweep (curves) and of swing per axis (bars), written here: no plotting library.

Each function returns the SVG document as a string; colours come from a fixed palette so a model keeps
its colour across figures. Why not matplotlib: docs/architecture.md.

Nothing is clipped: the canvas grows to hold the legend and the bar labels, whose widths are estimated
from their length at a generous width per character (``CHAR_EM`` of the font size; a test measures every
text in a real browser). Curves that lie on one another stay visible: each series has its own dash
pattern, marker shape and marker size (the first drawn largest, so later ones sit inside it), and the
legend says which curves are identical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from beavertui.engine.metrics.compute import P_SWEEP, GroupMetrics

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)
DASHES = ("", "8,4", "2,3", "10,3,2,3", "5,5", "1,2", "12,4,4,4")
"""Stroke dash patterns, one per series in turn: identical curves show each other through the gaps."""
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "triangle-down")
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
CHAR_EM = 0.62
"""Estimated width of a character in ems: above DejaVu Sans's widest common glyphs' average."""


def text_width(text: str, size: float) -> float:
    """An upper estimate of the drawn width of ``text`` at font size ``size`` (pixels)."""
    return len(text) * size * CHAR_EM


def _doc(width: float, height: float, body: list[str]) -> str:
    w, h = round(width), round(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}">\n<rect width="100%" height="100%" fill="white"/>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


def _marker(kind: str, x: float, y: float, r: float, colour: str) -> str:
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" fill="{colour}"/>'
    if kind in ("triangle", "triangle-down"):
        s = 1 if kind == "triangle" else -1
        pts = f"{x:.1f},{y - s * r * 1.2:.1f} {x - r * 1.1:.1f},{y + s * r * 0.8:.1f} {x + r * 1.1:.1f},{y + s * r * 0.8:.1f}"
        return f'<polygon points="{pts}" fill="{colour}"/>'
    if kind == "diamond":
        pts = f"{x:.1f},{y - r * 1.3:.1f} {x + r:.1f},{y:.1f} {x:.1f},{y + r * 1.3:.1f} {x - r:.1f},{y:.1f}"
        return f'<polygon points="{pts}" fill="{colour}"/>'
    return (
        f'<path d="M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}L{x + r:.1f},{y - r:.1f}" '
        f'stroke="{colour}" stroke-width="2"/>'
    )


def p_sweep_svg(groups: Sequence[GroupMetrics], title: str = "pass@k by speedup threshold p") -> str:
    """One curve per (model, protocol): pass@k (%) against p, the legend below the plot."""
    left, top, pw, ph = 60, 40, 560, 330
    n = len(groups)
    xmax = max(P_SWEEP)

    def x(p: float) -> float:
        return left + pw * p / xmax

    def y(v: float) -> float:
        return top + ph * (1 - v)

    labels = [f"{g.model} | {g.protocol.short()}" for g in groups]
    curves = [tuple((p, v) for p, v in g.p_sweep.items() if v is not None) for g in groups]
    first_of: dict[tuple[tuple[float, float], ...], int] = {}
    for i, c in enumerate(curves):
        if c:
            first_of.setdefault(c, i)
    shift = [0.0] * n
    for i, c in enumerate(curves):
        if c and first_of[c] != i:
            shift[i] = 2.0 * sum(1 for j in range(i) if curves[j] == c)
            labels[i] += f" (same curve as {first_of[c] + 1}, drawn {shift[i]:g} px lower)"
    legend_top = top + ph + 56
    row = 18
    legend_w = max((36 + text_width(f"{i + 1}. {lb}", 11) for i, lb in enumerate(labels)), default=0)
    w = max(left + pw + 30, left + legend_w + 20, 60 + text_width(title, 15))
    h = legend_top + row * n + 12
    body = [f'<text x="{w / 2:.1f}" y="22" text-anchor="middle" font-size="15" {FONT}>{escape(title)}</text>']
    for i in range(6):
        v = i / 5
        body.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ddd"/>')
        body.append(
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" {FONT}>{100 * v:.0f}%</text>'
        )
    for p in P_SWEEP:
        body.append(
            f'<line x1="{x(p):.1f}" y1="{top + ph}" x2="{x(p):.1f}" y2="{top + ph + 4}" stroke="#333"/>'
        )
        body.append(
            f'<text x="{x(p):.1f}" y="{top + ph + 17}" text-anchor="middle" font-size="11" {FONT}>{p:g}</text>'
        )
    body.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    body.append(
        f'<text x="{left + pw / 2}" y="{top + ph + 36}" text-anchor="middle" font-size="12" {FONT}>speedup threshold p (x reference)</text>'
    )
    for i, g in enumerate(groups):
        colour = PALETTE[i % len(PALETTE)]
        gate = g.protocol.gate
        body.append(
            f'<line x1="{x(gate):.1f}" y1="{top}" x2="{x(gate):.1f}" y2="{top + ph}" stroke="{colour}" stroke-dasharray="3,3" stroke-opacity="0.5"/>'
        )
    for i, c in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        dash = DASHES[i % len(DASHES)]
        kind = MARKERS[i % len(MARKERS)]
        radius = max(2.0, 5.0 - 0.6 * i)  # the first drawn largest: a later identical point sits inside
        if c:
            path = " ".join(f"{x(p):.1f},{y(v) + shift[i]:.1f}" for p, v in c)
            style = f' stroke-dasharray="{dash}"' if dash else ""
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{style} '
                f'data-series="{i + 1}"/>'
            )
            body += [_marker(kind, x(p), y(v) + shift[i], radius, colour) for p, v in c]
        ly = legend_top + row * i
        style = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(
            f'<line x1="{left}" y1="{ly - 4}" x2="{left + 24}" y2="{ly - 4}" stroke="{colour}" stroke-width="2"{style}/>'
        )
        body.append(_marker(kind, left + 12, ly - 4, 4, colour))
        body.append(
            f'<text x="{left + 32}" y="{ly}" font-size="11" class="legend" {FONT}>'
            f"{escape(f'{i + 1}. {labels[i]}')}</text>"
        )
    return _doc(w, h, body)


def swing_labels(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per swing entry: ``model | axis``, with what tells it apart from the others: ``[p sweep of
    PROTOCOL]`` for an axis read from one group's p sweep, ``[pairing]`` for a named pairing, and the
    other settings where one axis was swept under several."""
    from beavertui.engine.metrics.table import ProtocolKey

    def label_of(e: Mapping[str, Any]) -> str:
        base = f"{e['model']} | {e['axis']}"
        if e.get("from") == "p_sweep":
            return f"{base} [p sweep of {ProtocolKey.from_mapping(e['fixed']).short()}]"
        return f"{base} [pairing]" if e.get("from") == "pairing" else base

    labels = [label_of(e) for e in entries]
    out = []
    for label, e in zip(labels, entries, strict=True):
        if labels.count(label) > 1:  # the same axis swept under several settings of the others
            label += " (" + " ".join(f"{k}={v}" for k, v in e["fixed"].items()) + ")"
        out.append(label)
    return out


def swing_svg(entries: Sequence[Mapping[str, Any]], title: str = "Swing of pass@k per protocol axis") -> str:
    """Horizontal bars: one per (model, axis, fixed rest), length = swing in percentage points; the label
    column as wide as its longest label."""
    row_h = 22
    labels = swing_labels(entries)
    left = max([120.0] + [text_width(lb, 11) + 16 for lb in labels])
    pw = 440
    top = 40
    w = max(left + pw + 60, 60 + text_width(title, 15))
    h = top + row_h * max(1, len(entries)) + 40
    body = [f'<text x="{w / 2:.1f}" y="22" text-anchor="middle" font-size="15" {FONT}>{escape(title)}</text>']
    for i in range(6):
        xv = left + pw * i / 5
        body.append(f'<line x1="{xv:.1f}" y1="{top}" x2="{xv:.1f}" y2="{h - 35}" stroke="#ddd"/>')
        body.append(
            f'<text x="{xv:.1f}" y="{h - 20}" text-anchor="middle" font-size="11" {FONT}>{20 * i} pp</text>'
        )
    models = sorted({e["model"] for e in entries})
    for i, (e, label) in enumerate(zip(entries, labels, strict=True)):
        colour = PALETTE[models.index(e["model"]) % len(PALETTE)]
        yv = top + row_h * i
        length = pw * max(0.0, float(e["swing"]))
        body.append(
            f'<text x="{left - 8:.1f}" y="{yv + 15}" text-anchor="end" font-size="11" {FONT}>{escape(label)}</text>'
        )
        body.append(
            f'<rect x="{left:.1f}" y="{yv + 4}" width="{length:.1f}" height="{row_h - 8}" fill="{colour}"/>'
        )
        body.append(
            f'<text x="{left + length + 4:.1f}" y="{yv + 15}" font-size="10" {FONT}>{100 * float(e["swing"]):.1f}</text>'
        )
    return _doc(w, h, body)
