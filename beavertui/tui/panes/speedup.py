"""The speedup pane: the attempt's candidate and reference times, CV, speedup against the gate p, and a
bar chart of speedup across iterations with the gate marked (plain Unicode, so it renders everywhere)."""

from __future__ import annotations

import math
import statistics

from rich.console import RenderableType
from rich.text import Text

from beavertui.tui.caps import ITEMS, MEDIAN_SAMPLES, SAMPLES, append_capped, cap_line
from beavertui.tui.panes.base import Pane
from beavertui.tui.style import SHORT, colour, speed
from beavertui.tui.view import View

BLOCKS = " ▏▎▍▌▋▊▉█"
SPARK = "▁▂▃▄▅▆▇█"
BAR_WIDTH = 30


def bar(value: float, scale: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar in eighths of a cell (none for a value or scale that is not a finite number)."""
    if not (math.isfinite(value) and math.isfinite(scale) and scale > 0):
        return ""
    eighths = max(0, min(width * 8, round(value / scale * width * 8)))
    full, part = divmod(eighths, 8)
    return "█" * full + (BLOCKS[part] if part else "")


def sparkline(values: list[float], width: int = SAMPLES) -> str:
    """One block per value, the first SAMPLES values at most and no wider than ``width`` (an ellipsis says
    there were more)."""
    limit = max(1, min(SAMPLES, width))
    more = "…" if len(values) > limit else ""
    values = [v for v in values[: limit - 1 if more and limit < SAMPLES else limit] if math.isfinite(v)]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * len(SPARK)))] for v in values) + more


def against(out: Text, view: View, candidate_ms: float, gate: float) -> None:
    """The candidate's speedup against each named baseline of the session's header: its stored time, the
    speedup (the roofline's: the fraction reached) and how the time was measured."""
    from beavertui.engine.timing.named_baselines import SHORT, speedup_against

    h = view.state.header
    if not h.baselines:
        return
    out.append("against baselines stored for this GPU (their median over the candidate's)\n", style="dim")
    named = h.protocol.gate_baseline
    for b in h.baselines:
        s = speedup_against(b.median_ms, candidate_ms)
        out.append(f"  {SHORT[b.name]:<10}", style="bold" if b.name == named else "dim")
        out.append(f"{b.median_ms:9.3f} ms  ")
        if s is None:
            out.append("    -   ", style="dim")
        elif b.name == "roofline":
            out.append(f"{100 * s:5.1f}% of the roofline", style="bold")
        else:
            ok = s >= gate
            out.append(
                f"{s:7.2f}x", style=("bold green" if ok else "bold red") if b.name == named else "bold"
            )
        out.append(f"  {cap_line(b.method, 60)}: {cap_line(b.note, 200)}\n", style="dim")


class SpeedupPane(Pane):
    TITLE = "Speedup"

    def render_view(self, view: View) -> RenderableType:
        gate = view.state.header.protocol.gate
        # A narrow pane (80 columns) draws shorter bars and sparklines, or none, rather than wrap them onto
        # a second line: a wrapped bar no longer lines up with the gate, and the pane holds six lines there.
        room = self.scrollable_content_region.width or 80
        bar_width = max(8, min(BAR_WIDTH, room - 23))
        spark = room - 34  # after "candidate  0.307 ms  CV 0.8%"; none below 6 samples
        spark = spark if spark >= 6 else 0
        out = Text()
        a = view.attempt
        t = a.timing.result if a is not None and a.timing is not None else None
        if t is None and a is not None and a.verdict is not None and a.verdict.timing_pending:
            out.append(f"iteration {view.cursor}: timing pending", style="bold yellow")
            out.append(
                " (correct; the batch's timing lane times it after the loop and appends its speedup)\n",
                style="dim",
            )
        elif t is None:
            why = "not measured" if a is None or a.verdict is None else f"not measured ({a.verdict.reason})"
            out.append(f"iteration {view.cursor}: {why}\n", style="dim")
        else:
            out.append("candidate ", style="dim")
            out.append(f"{t.candidate_ms:9.3f} ms", style="bold")
            out.append(f"  CV {t.candidate_cv * 100:.1f}%  ", style="red" if t.candidate_cv > 0.03 else "dim")
            out.append((sparkline(t.candidate_samples, spark) if spark else "") + "\n", style="cyan")
            out.append("reference ", style="dim")
            out.append(f"{t.reference_ms:9.3f} ms", style="bold")
            out.append(f"  CV {t.reference_cv * 100:.1f}%  ", style="red" if t.reference_cv > 0.03 else "dim")
            out.append((sparkline(t.reference_samples, spark) if spark else "") + "\n", style="cyan")
            ok = t.speedup >= gate
            out.append("speedup   ", style="dim")
            out.append(f"{t.speedup:7.2f}x", style="bold green" if ok else "bold red")
            out.append(f"  {'≥' if ok else '<'} gate {gate:g}x  ", style="dim")
            out.append("passes the gate" if ok else "BELOW GATE", style="green" if ok else "bold red")
            named = view.state.header.protocol.gate_baseline
            if (
                named != "reference"
            ):  # the loop judged the reference; the protocol's numbers judge the baseline
                out.append(
                    f"\n          against the reference, as the loop judged it; this protocol's gate applies to "
                    f"{named} (p-vs={named}), below: metrics judge it there",
                    style="yellow",
                )
            out.append(
                f"\n          medians of {len(t.candidate_samples)} interleaved runs ({t.method})\n",
                style="dim",
            )
            for flag, on in (("unstable (CV > 3%)", t.unstable), ("implausible: audit", t.implausible)):
                if on:
                    out.append(f"          {flag}\n", style="bold magenta")
            if t.candidate_host_samples:
                samples = t.candidate_host_samples
                host = statistics.median(samples[:MEDIAN_SAMPLES])
                out.append(f"host      {host:9.3f} ms", style="dim")
                out.append("  median from launch to full device sync (side-stream check)", style="dim")
                if len(samples) > MEDIAN_SAMPLES:
                    out.append(f" of the first {MEDIAN_SAMPLES:,} of {len(samples):,} samples", style="dim")
                out.append("\n")
            if t.note:
                out.append(f"          {cap_line(t.note)}\n", style="dim")
            against(out, view, t.candidate_ms, gate)
        if a is not None and a.verdict is not None:
            append_capped(
                out,
                a.verdict.flags,
                lambda f: f"flag      {cap_line(str(f))}",
                "bold magenta",
                "flags",
                " " * 10,
            )
        out.append("\n")
        speeds = [a.verdict.speedup for a in view.state.attempts if a.verdict and a.verdict.speedup]
        scale = max([gate * 1.25, 1.0, *speeds])
        gate_col = round(gate / scale * bar_width)
        out.append(f"  it  {'speedup across iterations':<{bar_width}}\n", style="dim")
        for att in view.state.attempts:
            v = att.verdict
            here = att.iteration == view.cursor
            row = Text(f"{'▶' if here else ' '} {att.iteration:>2}  ", style="bold yellow" if here else "")
            if v is None:
                row.append(f"{att.stage}…", style="dim")
            elif v.speedup is None and v.timing_pending:
                row.append(f"{'':<{gate_col}}│", style="dim")
                row.append(" — timing pending", style="yellow")
            elif v.speedup is None:
                row.append(f"{'':<{gate_col}}│", style="dim")
                row.append(f" — {SHORT.get(v.category, v.category)}", style=colour(v.category))
            else:
                b = bar(v.speedup, scale, bar_width)
                cells = b.ljust(bar_width)
                left, right = cells[:gate_col], cells[gate_col + 1 :]
                mark = cells[gate_col] if cells[gate_col] != " " else "│"
                style = colour(v.category, v.success)
                row.append(left, style=style)
                row.append(mark, style=style if mark != "│" else "dim")
                row.append(right.rstrip(), style=style)
                row.append(f" {speed(v.speedup)}", style="bold green" if v.success else "bold red")
                if not v.success and v.correct:
                    row.append(" below gate", style="red")
            if v is not None and v.flags:
                names = dict.fromkeys(cap_line(f.name, 80) for f in v.flags[:ITEMS])
                row.append(" ⚑ " + ", ".join(names) + (" …" if len(v.flags) > ITEMS else ""), style="magenta")
            row.append("\n")
            out.append_text(row)
        mark = f"      {'':<{gate_col}}└ gate {gate:g}x"
        scale_text = f"scale 0–{scale:.2f}x"
        if len(mark) + len(scale_text) + 3 <= room:
            out.append(f"{mark} ({scale_text})\n", style="dim")
        else:  # the scale on a line of its own rather than wrapped
            out.append(f"{mark}\n      {scale_text}\n", style="dim")
        return out
