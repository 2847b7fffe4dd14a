"""The diff pane: the candidate against the previous attempt, the broken start, the reference, or whole.

While a reply streams in (live mode) and no code has been extracted yet, the pane shows the reply text.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from beavertui.engine.session.describe import token_limit_text
from beavertui.engine.session.events import Plan, Summary
from beavertui.engine.session.state import AttemptState
from beavertui.tui.caps import CODE_CHARS, CODE_LINES, cap_code, cap_line, cap_text
from beavertui.tui.diffs import diff, lexer_for, whole_file
from beavertui.tui.panes.base import Pane
from beavertui.tui.view import DIFF_MODE_LABEL, PLAN_MODE, View


class DiffPane(Pane):
    TITLE = "Diff"

    def render_key(self, view: View) -> tuple[object, ...]:
        return (view.state.events, view.cursor, view.diff_mode)

    def on_mount(self) -> None:
        self.border_title = "Diff · vs previous attempt"

    def subtitle(self, view: View) -> str:
        self.border_title = f"Diff · {DIFF_MODE_LABEL[view.diff_mode]}"
        return f"d: {DIFF_MODE_LABEL[view.diff_mode]}"

    def cost(self, view: View) -> int:
        """Rows of source to highlight and draw (lines, and lines of wrapped text), both sides."""
        a = view.attempt
        if view.diff_mode == PLAN_MODE:
            return 0
        if a is None or a.candidate is None or a.candidate.code is None:
            return 0
        old = "" if view.diff_mode == "file" else view.code_before(a.iteration)[0]
        return sum(
            min(CODE_LINES, code.count("\n", 0, CODE_CHARS)) + min(len(code), CODE_CHARS) // 80
            for code in (a.candidate.code, old)
        )

    def render_view(self, view: View) -> RenderableType:
        attempt = view.attempt
        if attempt is None:
            return Text("No attempt yet.", style="dim")
        if view.diff_mode == PLAN_MODE:
            return plan_view(view, attempt)
        cand = attempt.candidate
        if cand is None:
            text = attempt.streaming or (attempt.reply.content if attempt.reply else "")
            if text:
                head = Text(
                    "model reply (streaming)\n" if attempt.reply is None else "model reply\n", style="bold"
                )
                shown, note = cap_text(text)
                return Group(head, Text(shown), *_notes(note))
            if view.following:
                return Text("Waiting for the model's reply…", style="dim italic")
            return Text("No reply was recorded for this iteration.", style="dim italic")
        if cand.code is None:
            reason = cap_line(cand.no_code_reason or "no code block in the reply")
            reply = attempt.reply.content if attempt.reply else ""
            shown, note = cap_text(reply)
            head = Text(f"No code extracted: {reason}\n", style="bold red")
            if (cut := token_limit_text(attempt.reply.finish_reason if attempt.reply else None)) is not None:
                head.append(f"{cut[0].upper()}{cut[1:]}\n", style="bold yellow")
            return Group(head, Text(shown), *_notes(note))
        lexer = lexer_for(view.state.header.task.language)
        head = Text()
        if cand.edited:
            head.append("edited by the user before the build\n", style="bold yellow")
        if view.diff_mode == "file":
            head.append(
                f"{cap_line(view.state.header.task.solution_file, 200)} at iteration {attempt.iteration}\n",
                style="bold",
            )
            head.rstrip()
            code, note = cap_code(cand.code)
            return Group(head, whole_file(code, lexer), *_notes(note))
        if view.diff_mode == "previous":
            old, name = view.code_before(attempt.iteration)
        elif view.diff_mode == "broken":
            old, name = view.state.header.task.broken_start, "broken start"
        else:
            ref = view.state.header.task.reference
            if ref is None:
                return Text("This task ships no reference solution.", style="dim italic")
            old, name = ref, "reference"
        if not old and name == "broken start" and view.state.header.imported is not None:
            head.append(
                f"iteration {attempt.iteration}, whole file: the broken start is not in this imported "
                "session (import with --corpus RELEASE to compare with it)\n",
                style="bold",
            )
            head.rstrip()
            return Group(head, whole_file(cap_code(cand.code)[0], lexer))
        (old, old_note), (new, new_note) = cap_code(old), cap_code(cand.code)
        body, added, removed = diff(old, new, lexer)
        head.append(f"iteration {attempt.iteration} against {name}: ", style="bold")
        head.append(f"+{added}", style="green")
        head.append(" ")
        head.append(f"-{removed}", style="red")
        notes = [f"{name}: {old_note}"] if old_note else []
        notes += [f"iteration {attempt.iteration}: {new_note}"] if new_note else []
        return Group(head, body, *_notes(*notes))


def _call_line(what: str, call: Plan | Summary) -> Text:
    head = Text(f"{what} by {cap_line(call.model, 200)}", style="bold")
    facts = [f"{len(call.content):,} chars"]
    if call.prompt_tokens is not None and call.completion_tokens is not None:
        facts.append(f"{call.prompt_tokens:,}+{call.completion_tokens:,} tokens")
    if call.cost_usd is not None:
        facts.append(f"${call.cost_usd:.4f}")
    if call.retries:
        facts.append(f"{call.retries} retries")
    head.append(f" ({', '.join(facts)})", style="dim")
    return head


def plan_view(view: View, attempt: AttemptState) -> RenderableType:
    """The plan tab: the plan the coding call of this iteration was given, the summarised feedback that
    call read (on the attempt before), and the summary made of this attempt's feedback."""
    parts: list[RenderableType] = []
    plan = attempt.plan
    if plan is not None:
        parts.append(_call_line(f"plan for iteration {attempt.iteration}", plan))
        if plan.replaces:
            parts.append(Text(f"control: {cap_line(plan.replaces, 400)}", style="bold yellow"))
        shown, note = cap_text(plan.content)
        parts += [Text(shown), *_notes(note)]
    elif view.state.header.protocol.planning == "plan":
        waiting = view.following and attempt.request is None
        parts.append(
            Text(
                "Waiting for the planner…" if waiting else "No plan was recorded for this iteration.",
                style="dim italic",
            )
        )
    else:
        parts.append(
            Text("This session's protocol makes no plans (planning = implicit).", style="dim italic")
        )
    before = view.state.attempt(attempt.iteration - 1)
    for label, summary in (
        (
            f"feedback on iteration {attempt.iteration - 1}, summarised (what this request carried)",
            before.summary if before else None,
        ),
        (
            f"feedback on iteration {attempt.iteration}, summarised (sent with the next request)",
            attempt.summary,
        ),
    ):
        if summary is not None:
            line = _call_line(label, summary)
            line.append(f" from {summary.source_chars:,} chars of L3 feedback", style="dim")
            shown, note = cap_text(summary.content)
            parts += [Text(""), line, Text(shown), *_notes(note)]
    return Group(*parts)


def _notes(*notes: str | None) -> list[Text]:
    return [Text(n, style="bold yellow") for n in notes if n]
