"""The analysis pane: edit precision and bug recall of the attempt at the cursor, and which static
performance features its candidate kept or lost against the broken start and the reference.

Edit precision and recall are defined for correct attempts only (docs/analysis.md); the feature table is
shown for every attempt with code, so a reader sees a repair drifting towards degeneration before it
passes. Below, one line per attempt up to the cursor. Numbers come from beavertui.engine.analysis.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from beavertui.engine.analysis.degeneration import compare, runtime_geometry
from beavertui.engine.code.features import FEATURES, PERF_FEATURES, extract
from beavertui.engine.session.state import AttemptState
from beavertui.tui.panes.base import Pane
from beavertui.tui.view import View


def _code(a: AttemptState) -> str | None:
    return a.candidate.code if a.candidate is not None else None


def attempt_row(view: View, a: AttemptState) -> tuple[str, str, str, str]:
    """(iteration, edit precision, bug recall, lost features) of one attempt, as plain cells."""
    task = view.state.header.task
    code = _code(a)
    if code is None:
        return (str(a.iteration), "-", "-", "no code")
    from beavertui.engine.analysis.report import analyse  # numpy: loaded when the pane is first shown

    analysis = analyse(task, a)
    if analysis is not None:
        e = analysis.edit
        prec = "n/a" if e is None or e.precision is None else f"{e.precision:.0%}"
        rec = "n/a" if e is None or e.recall is None else f"{e.recall:.0%}"
        deg = analysis.degeneration
    else:
        prec = rec = "-"  # only correct attempts are scored
        log = a.run.result.log if a.run is not None else ""
        deg = compare(
            code, task.broken_start, task.reference, candidate_runtime=runtime_geometry(log) or None
        )
    lost = ", ".join(deg.lost) or "none"
    if deg.degenerate:
        lost += " (degenerate)" if analysis is not None else " (would be degenerate)"
    return (str(a.iteration), prec, rec, lost)


def _calls(calls: tuple[str, ...]) -> str:
    """The first three library calls of a side, and how many more; "·" for none."""
    if not calls:
        return "·"
    more = f" +{len(calls) - 3}" if len(calls) > 3 else ""
    return ", ".join(calls[:3]) + more


class AnalysisPane(Pane):
    TITLE = "Analysis"

    def subtitle(self, view: View) -> str:
        return "edit precision · lost features"

    def render_view(self, view: View) -> RenderableType:
        a = view.attempt
        task = view.state.header.task
        if a is None or _code(a) is None:
            return Text("No candidate at this iteration.", style="dim")
        code = _code(a)
        assert code is not None
        parts: list[RenderableType] = []
        from beavertui.engine.analysis.report import analyse

        analysis = analyse(task, a)
        head = Text()
        head.append(f"iteration {a.iteration}: ", style="bold")
        if analysis is None:
            head.append("not scored (edit precision and recall are for correct attempts)", style="dim")
        elif analysis.edit is None:
            head.append(
                f"edit unscored: no verified minimal fix ({analysis.unscored or 'none'})", style="dim"
            )
        else:
            e = analysis.edit
            p = "n/a" if e.precision is None else f"{e.precision:.0%}"
            r = "n/a" if e.recall is None else f"{e.recall:.0%}"
            head.append(f"edit precision {p}", style="bold")
            head.append(f" ({e.needed}/{e.changed} changed lines needed, tolerance {e.tolerance})  ")
            head.append(f"bug recall {r}", style="bold")
            head.append(f" ({e.recovered}/{len(e.blocks)} minimal-fix blocks)")
        parts.append(head)
        run_log = a.run.result.log if a.run is not None else ""
        runtime = runtime_geometry(run_log) or None
        deg = compare(code, task.broken_start, task.reference, candidate_runtime=runtime)
        verdict = Text()
        if deg.degenerate:
            verdict.append("degenerate: ", style="bold red")
            verdict.append("lost " + ", ".join(deg.lost), style="red")
        elif deg.lost:
            verdict.append("lost " + ", ".join(deg.lost) + " (not a performance feature)", style="yellow")
        else:
            verdict.append("no feature of the reference lost", style="green")
        if analysis is None and deg.degenerate:
            verdict.append("  (if it passed)", style="dim")
        parts.append(verdict)
        table = Table(box=None, pad_edge=False, header_style="bold", expand=False)
        table.add_column("feature")
        table.add_column("broken")
        table.add_column("reference")
        table.add_column("candidate")
        start = extract(task.broken_start)
        ref = extract(task.reference) if task.reference is not None else None
        cand = extract(code)
        for f in FEATURES:
            if f == "library_call":
                continue
            in_ref = ref.has(f) if ref is not None else None
            if not (start.has(f) or in_ref or cand.has(f)):
                continue
            lost = f in deg.lost
            style = "bold red" if lost and f in (*PERF_FEATURES, "kernel") else ("yellow" if lost else "")
            table.add_row(
                Text(f, style=style),
                "yes" if start.has(f) else "·",
                "—" if in_ref is None else ("yes" if in_ref else "·"),
                Text("LOST" if lost else ("yes" if cand.has(f) else "·"), style=style),
            )
        if start.library_calls or (ref is not None and ref.library_calls) or cand.library_calls:
            # each side's own calls: a blank under broken or reference read as "none there"
            table.add_row(
                "library calls",
                _calls(start.library_calls),
                "—" if ref is None else _calls(ref.library_calls),
                _calls(cand.library_calls),
            )
        parts.append(table)
        per = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
        for col in ("it", "precision", "recall", "lost (vs reference)"):
            per.add_column(col)
        for att in view.attempts_upto():
            row = attempt_row(view, att)
            per.add_row(*row, style="bold" if att.iteration == view.cursor else "")
        parts.append(Text("per attempt", style="dim"))
        parts.append(per)
        return Group(*parts)
