"""The help screen: what each pane shows and every key, so the keyboard alone is enough."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]beavertui[/b]: watch and replay a model repairing a broken CUDA kernel

[b]Session screen[/b] (replay, follow, live)
  ←/→ h/l     step back / forward one iteration      home/end g/G  first / last iteration
  d           cycle the diff: vs previous attempt, vs broken start, vs reference, whole file, plan
  r           classified log ↔ raw output of every stage
  s           sanitizer tool: all, memcheck, racecheck, synccheck, initcheck
  /  n  N     search iterations (code, logs, reply, plan, category); next / previous match
  a           analysis pane (edit precision, bug recall, lost features) in place of log and sanitizer
  b  c  A     branch from the step at the cursor · a branch next to its parent · saved attributions
  tab         move focus between panes; ↑/↓ pgup/pgdn scroll the focused pane
  ctrl+p      command palette (every action by name)      ?  this help      q  quit   esc  back

[b]Panes[/b]
  Diff            the candidate, CUDA-highlighted, against the chosen base
  Classified log  category badge, error signature, decisive lines highlighted in build/run output
  Sanitizer       compute-sanitizer records grouped by tool and kind (kernel, thread, block, address)
  Speedup         candidate/reference medians, CV, speedup against the gate p; bars across iterations
  Stagnation      the four detectors (off, armed, fired), candidate hashes, category track
  Timeline        one cell per iteration coloured by category; "below gate" = correct but too slow
  Analysis        the candidate's features vs broken start and reference; precision, recall per attempt

[b]Live screen[/b] adds   p pause/resume   space single-step (approve the next iteration)
  e edit the candidate in $EDITOR before it is built   z re-run a sanitizer tool   x stop

[b]Browser[/b]  enter open · / filter (outcome:failed model:gpt category:illegal stop:dup text) · esc clear
  1-9 sort by task, model, protocol, outcome, iterations, best speedup, stop reason, category, cost;
  0 by file (again: reversed) · ↑/↓ j/k pgup/pgdn home/end move · ←/→ columns (narrow) · m metrics
[b]Compare[/b]  ←/→ step both sessions together, d diff mode
[b]Metrics[/b]  m in the browser, metrics --tui: tables, p-sweep curves, swing bars · r recompute · esc back
[b]Batch[/b] (batch --tui)  progress per model and protocol above the browser · x stop (asks first)
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text.from_markup(HELP))
