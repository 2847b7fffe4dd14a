"""SVG plots of the p sweep (curves) and of swing per axis (bars), written by hand: no plotting library.

Each function returns the SVG document as a string; colours come from a fixed palette so a model keeps
its colour across figures.
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
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def _doc(width: int, height: int, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">\n<rect width="100%" height="100%" fill="white"/>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


def p_sweep_svg(groups: Sequence[GroupMetrics], title: str = "pass@k by speedup threshold p") -> str:
    """One curve per (model, protocol): pass@k (%) against p."""
    w, h = 760, 420 + 18 * max(0, len(groups) - 8)
    left, right, top, bottom = 60, 250, 40, 50
    pw, ph = w - left - right, 420 - top - bottom
    xmax = max(P_SWEEP)

    def x(p: float) -> float:
        return left + pw * p / xmax

    def y(v: float) -> float:
        return top + ph * (1 - v)

    body = [f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15" {FONT}>{escape(title)}</text>']
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
        pts = [(x(p), y(v)) for p, v in g.p_sweep.items() if v is not None]
        if pts:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            body += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in pts]
        gate = g.protocol.gate
        body.append(
            f'<line x1="{x(gate):.1f}" y1="{top}" x2="{x(gate):.1f}" y2="{top + ph}" stroke="{colour}" stroke-dasharray="3,3" stroke-opacity="0.5"/>'
        )
        ly = top + 10 + 18 * i
        label = f"{g.model} | {g.protocol.short()}"
        body.append(f'<rect x="{left + pw + 12}" y="{ly - 8}" width="12" height="4" fill="{colour}"/>')
        body.append(f'<text x="{left + pw + 28}" y="{ly - 3}" font-size="10" {FONT}>{escape(label)}</text>')
    return _doc(w, h, body)


def swing_svg(entries: Sequence[Mapping[str, Any]], title: str = "Swing of pass@k per protocol axis") -> str:
    """Horizontal bars: one per (model, axis, fixed rest), length = swing in percentage points."""
    row_h = 22
    w = 760
    left, top = 300, 40
    h = top + row_h * max(1, len(entries)) + 40
    pw = w - left - 60
    body = [f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15" {FONT}>{escape(title)}</text>']
    for i in range(6):
        xv = left + pw * i / 5
        body.append(f'<line x1="{xv:.1f}" y1="{top}" x2="{xv:.1f}" y2="{h - 35}" stroke="#ddd"/>')
        body.append(
            f'<text x="{xv:.1f}" y="{h - 20}" text-anchor="middle" font-size="11" {FONT}>{20 * i} pp</text>'
        )
    models = sorted({e["model"] for e in entries})
    for i, e in enumerate(entries):
        colour = PALETTE[models.index(e["model"]) % len(PALETTE)]
        yv = top + row_h * i
        length = pw * max(0.0, float(e["swing"]))
        label = f"{e['model']} | {e['axis']}"
        body.append(
            f'<text x="{left - 8}" y="{yv + 15}" text-anchor="end" font-size="11" {FONT}>{escape(label)}</text>'
        )
        body.append(
            f'<rect x="{left}" y="{yv + 4}" width="{length:.1f}" height="{row_h - 8}" fill="{colour}"/>'
        )
        body.append(
            f'<text x="{left + length + 4:.1f}" y="{yv + 15}" font-size="10" {FONT}>{100 * float(e["swing"]):.1f}</text>'
        )
    return _doc(w, h, body)
