"""The stagnation pane: the four detectors (off, armed, fired) as of the cursor, with how close each is,
the candidate-hash history and the category track. Only the Stalled events decide "fired"; the progress
counts shown beside armed detectors are a reading aid computed from the same verdicts and hashes."""

from __future__ import annotations

import itertools

from rich.console import RenderableType
from rich.text import Text

from beavertui.engine.session.protocol import DETECTORS
from beavertui.tui.caps import cap_line
from beavertui.tui.panes.base import Pane
from beavertui.tui.style import badge
from beavertui.tui.view import View


def progress(view: View, detector: str) -> str:
    s = view.state.header.protocol.stagnation
    done = [a for a in view.attempts_upto() if a.verdict is not None]
    hashes = [a.candidate.sha256 for a in view.attempts_upto() if a.candidate and a.candidate.sha256]
    if detector == "duplicate_code":
        repeats = len(hashes) - len(set(hashes))
        return f"{repeats} repeated hash" + ("es" if repeats != 1 else "")
    if detector == "code_cycle":
        return f"{len(set(hashes))} distinct of {len(hashes)}"
    if detector == "category_oscillation":
        cats = [a.verdict.category for a in done][-s.oscillation_window :]  # type: ignore[union-attr]
        changes = sum(1 for x, y in itertools.pairwise(cats) if x != y)
        return f"{changes}/{s.oscillation_changes} changes in last {s.oscillation_window}"
    run = 0
    last = None
    for a in done:
        key = (a.verdict.category, a.verdict.signature)  # type: ignore[union-attr]
        run = run + 1 if key == last else 1
        last = key
    return f"run of {run}/{s.no_progress_run} alike"


class StagnationPane(Pane):
    TITLE = "Stagnation"

    def render_view(self, view: View) -> RenderableType:
        s = view.state.header.protocol.stagnation
        out = Text()
        out.append(
            f"detectors (a firing one {'stops' if s.stop else 'does not stop'} the loop)\n", style="dim"
        )
        fired = {st.detector: st for st in view.state.stalls if st.iteration <= view.cursor}
        for d in DETECTORS:
            if d not in s.enabled:
                out.append(f" ○ {d:<22} off\n", style="dim")
            elif d in fired:
                st = fired[d]
                out.append(f" ✖ {d:<22} ", style="bold red")
                out.append(f"fired after it{st.iteration}", style="bold red")
                out.append(f": {cap_line(st.detail)}\n" if st.detail else "\n")
            else:
                out.append(f" ● {d:<22} ", style="green")
                out.append(f"armed · {progress(view, d)}\n", style="dim")
        out.append("hashes  ", style="dim")
        seen: dict[str, int] = {}
        for a in view.attempts_upto():
            h = a.candidate.sha256 if a.candidate else None
            label = (h or "no-code")[:8]
            style = "bold yellow" if a.iteration == view.cursor else ""
            out.append(f"{a.iteration}:{label}", style=style)
            if h and h in seen:
                out.append(f"=it{seen[h]}", style="bold magenta")
            elif h:
                seen[h] = a.iteration
            out.append("  ")
        out.append("\ntrack   ", style="dim")
        for a in view.attempts_upto():
            v = a.verdict
            out.append_text(
                badge(
                    v.category if v else None,
                    v.success if v else True,
                    short=True,
                    pending=v is not None and v.timing_pending,
                )
            )
            out.append(" ")
        out.append("\n")
        return out
