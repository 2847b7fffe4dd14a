"""The classified log: the category badge, the error signature, and the build/run output with the decisive
lines highlighted; a key switches to the raw output of every stage."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from beavertui.engine.session.describe import (
    command_text,
    duration_text,
    reuse_text,
    stage_failed,
    stage_status,
)
from beavertui.engine.session.events import StageResult
from beavertui.tui.caps import STAGES, TEXT_CHARS, append_capped, cap_items, cap_line, cap_text
from beavertui.tui.panes.base import Pane
from beavertui.tui.style import badge
from beavertui.tui.view import View

#: Classified view shows logs up to this many lines whole; longer ones around the decisive lines only.
WHOLE_LOG_LINES = 120
CONTEXT = 4
#: Decisive lines shown (and matched against the log) at most.
DECISIVE_SHOWN = 50
DECISIVE = "bold black on #f0c674"


def stage_line(r: StageResult) -> Text:
    t = Text(f"── {r.stage} ", style="bold")
    t.append(f"{stage_status(r)} · {duration_text(r)}", style="red" if stage_failed(r) else "green")
    if r.cached:
        t.append(" · cached", style="cyan")
    if r.reused:
        t.append(f" · {reuse_text(r)}", style="cyan")
    t.append(f"\n   $ {cap_line(command_text(r))}\n", style="dim")
    return t


def is_decisive(line: str, decisive: list[str]) -> bool:
    s = line.strip()
    return bool(s) and any(d.strip() and (d.strip() == s or d.strip() in s) for d in decisive)


def highlight_log(log: str, decisive: list[str], search: str = "") -> Text:
    log, note = cap_text(log)
    decisive = [d for d in decisive[:DECISIVE_SHOWN] if len(d) <= 2000]
    lines = log.rstrip("\n").split("\n") if log else []
    if not lines:
        return Text("   (no output)\n", style="dim italic")
    hits = [i for i, line in enumerate(lines) if is_decisive(line, decisive)]
    keep: set[int] | None = None
    if len(lines) > WHOLE_LOG_LINES and hits:
        keep = {j for i in hits for j in range(i - CONTEXT, i + CONTEXT + 1)}
    out = Text(f"   {note}\n", style="bold yellow") if note else Text()
    skipped = 0
    for i, line in enumerate(lines):
        if keep is not None and i not in keep:
            skipped += 1
            continue
        if skipped:
            out.append(f"   … {skipped} lines …\n", style="dim")
            skipped = 0
        style = DECISIVE if i in hits else ""
        row = Text(f"   {line}\n", style=style)
        if search:
            row.highlight_words([search], style="reverse", case_sensitive=False)
        out.append_text(row)
    if skipped:
        out.append(f"   … {skipped} lines …\n", style="dim")
    return out


class LogPane(Pane):
    TITLE = "Classified log"

    def render_key(self, view: View) -> tuple[object, ...]:
        return (view.state.events, view.cursor, view.raw_log, view.search)

    def subtitle(self, view: View) -> str:
        self.border_title = "Raw log" if view.raw_log else "Classified log"
        return "r: classified" if view.raw_log else "r: raw"

    def cost(self, view: View) -> int:
        """Lines of output to draw, about (80 characters a line)."""
        a = view.attempt
        if a is None:
            return 0
        logs = [e.result.log for e in (a.build, a.run) if e is not None]
        return sum(min(len(log), 2 * TEXT_CHARS) for log in logs) // 80

    def render_view(self, view: View) -> RenderableType:
        a = view.attempt
        if a is None:
            return Text("No attempt yet.", style="dim")
        stages = [e.result for e in (a.build, a.run) if e is not None]
        if view.raw_log:
            sanitize, more_runs = cap_items(a.sanitize, STAGES - len(stages))
            stages += [s.result for s in sanitize]
            out = Text()
            for r in stages:
                out.append_text(stage_line(r))
                shown, _note = cap_text(r.log)
                out.append(shown if shown.endswith("\n") or not shown else shown + "\n")
                if r.log_bytes > len(r.log.encode()):
                    out.append(f"   [{r.log_bytes} bytes written, head and tail kept]\n", style="dim")
            if more_runs:
                out.append(f"… {more_runs:,} more sanitizer runs not shown\n", style="bold yellow")
            if not stages:
                out.append("No stage has run yet.", style="dim")
            return out
        out = Text()
        v = a.verdict
        decisive = v.decisive if v else []
        if v is not None:
            out.append_text(badge(v.category, v.success, pending=v.timing_pending))
            reason = cap_line(v.reason)
            told = v.reason in (v.category, "timing pending" if v.timing_pending else v.category)
            out.append(f"  {reason}\n" if v.reason and not told else "\n", style="bold")
            if v.signature:
                out.append("signature ", style="dim")
                out.append(f"{cap_line(v.signature)}\n", style="bold")
            append_capped(out, v.flags, lambda f: f"flag {cap_line(str(f))}", "bold magenta", "flags")
            if decisive:
                out.append("decisive\n", style="dim")
                for d in decisive[:DECISIVE_SHOWN]:
                    out.append(f"   {cap_line(d)}\n", style=DECISIVE)
                if len(decisive) > DECISIVE_SHOWN:
                    out.append(f"   … {len(decisive) - DECISIVE_SHOWN:,} more decisive lines\n", style="dim")
        else:
            out.append(f"classifying… (stage: {a.stage})\n", style="dim italic")
        append_capped(
            out, a.infra_errors, lambda e: f"infrastructure error ({e.source}): {cap_line(e.detail)}", "bold red",
            "infrastructure errors",
        )  # fmt: skip
        for r in stages:
            out.append_text(stage_line(r))
            out.append_text(highlight_log(r.log, decisive, view.search))
        return out
