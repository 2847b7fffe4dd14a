"""The top bar of a session screen: task, model, protocol, iteration i/K, how it ended, and stage progress."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from beavertui.engine.session.describe import ended_text, stop_text
from beavertui.tui.caps import cap_line
from beavertui.tui.style import STOP_COLOUR, badge
from beavertui.tui.view import View

STAGES = ("request", "reply", "candidate", "build", "run", "sanitize", "timing", "verdict")


class HeaderBar(Widget):
    """Two lines: who/what/how, then the current attempt's stages (and any damage in the file)."""

    view: reactive[View | None] = reactive(None, always_update=True)

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("loading…")
        h = view.state.header
        width = max(self.size.width, 20) - 1
        line = Text()
        end = view.state.end
        told = f"· iteration {view.cursor}/{view.budget} "
        if end is not None:  # how it ended (after how many, and the best speedup, may be cut)
            told += f"· ended: {stop_text(end.stop_reason, end.success, end.timing_pending)}"
        elif view.reading:
            told += f"· {view.reading}…"
        elif view.following and not view.status:
            told += "· running…"
        if view.status:  # the live loop paused or stopping: what the keys will do next
            told += f"  [{view.status}]"
        # Where the line is too long, the names give way so that the iteration and how the session ended
        # stay on screen (on an 80-column terminal they fell off, or read "2/1").
        task, model, protocol = fit_names(
            cap_line(h.task.id, 200),
            cap_line(h.model.name, 200),
            cap_line(h.protocol.short(), 200),
            width - len(told) - (10 if h.imported is not None else 0) - 7,
        )
        line.append(f" {task} ", style="bold reverse")
        if h.imported is not None:
            line.append(" imported ", style="bold black on cyan")
        line.append(f" {model} ", style="bold")
        line.append(f"· {protocol} ", style="dim")
        line.append(f"· iteration {view.cursor}/{view.budget} ", style="bold")
        if end is not None:
            line.append(
                f"· ended: {ended_text(end, h.protocol.gate)}",
                style=STOP_COLOUR.get(stop_text(end.stop_reason, end.success, end.timing_pending), ""),
            )
            if end.detail:
                line.append(f" ({cap_line(end.detail, 400)})", style="red")
        elif view.reading:
            line.append(f"· {view.reading}…", style="yellow")
        elif view.following and not view.status:  # a status says more: paused, stopping
            line.append("· running…", style="yellow")
        if h.imported is not None:
            line.append(
                f" · imported ({cap_line(h.imported.source, 200)}; not recorded: times, rc, durations)",
                style="cyan",
            )
        if view.status:
            line.append(f"  [{view.status}]", style="bold yellow")
        line.truncate(width)
        line.append("\n")
        attempt = view.attempt
        if view.problem:
            line.append(
                f" damaged file: {cap_line(view.problem, 400)}; showing its valid prefix ",
                style="bold white on #8b0000",
            )
            line.append(f" ({view.state.events} events)")
            return line
        if attempt is None:
            line.append(" no attempt yet", style="dim")
            return line
        if h.imported is not None:  # the stages were not recorded: say what is missing in their place
            line.append(
                f" from the {cap_line(h.imported.source, 200)}: no messages, exit statuses or durations ",
                style="cyan",
            )
        else:
            reached = _reached(attempt)
            line.append(" stages ", style="dim")
            for name in STAGES:
                style = "bold green" if name in reached else "dim"
                line.append(f"{name} ", style=style)
        if attempt.verdict is not None:
            line.append(" ")
            v = attempt.verdict
            line.append_text(badge(v.category, v.success, pending=v.timing_pending))
        line.append_text(_against(view))
        line.append_text(_usage(view))
        line.truncate(2 * max(self.size.width, 20) - 1)
        return line


def _cut(name: str, keep: int) -> str:
    """``name`` in at most ``keep`` characters, a cut one ending in an ellipsis (at a space if it has one)."""
    if len(name) <= keep:
        return name
    cut = name[: keep - 1]
    if " " in cut and name[keep - 1] != " ":
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def _through_gate(protocol: str) -> int:
    """The length of the protocol's short form up to its gate (``iterative K5 L3 H2 T0 p0.7``), and one
    more for an ellipsis."""
    words = protocol.split(" ")
    for i, word in enumerate(words):
        if word[:1] == "p" and word[1:2].isdigit():
            return len(" ".join(words[: i + 1])) + 1
    return 8


def fit_names(task: str, model: str, protocol: str, room: int) -> tuple[str, str, str]:
    """Task, model and protocol cut to take ``room`` characters together where they can: first the model
    to 20 characters and the protocol's settings past its gate, then both to 8, and only then the task, to
    16 (the task says what the screen is about); at the last, model and protocol to an ellipsis."""
    names = [task, model, protocol]
    for floors in ((len(task), 20, _through_gate(protocol)), (len(task), 8, 8), (16, 8, 8), (16, 1, 1)):
        for i in (1, 2, 0):
            over = sum(map(len, names)) - max(room, 0)
            if over <= 0:
                break
            names[i] = _cut(names[i], max(floors[i], len(names[i]) - over))
    return names[0], names[1], names[2]


def _reached(a) -> set[str]:  # type: ignore[no-untyped-def]
    names = {n for n in ("request", "reply", "candidate", "timing", "verdict") if getattr(a, n) is not None}
    if a.build is not None:
        names.add("build")
    if a.run is not None:
        names.add("run")
    if a.sanitize:
        names.add("sanitize")
    return names


def _against(view: View) -> Text:
    """The attempt's speedup against the reference, then against each named baseline of the header:
    `` 1.21x ref · 0.84x eager · 0.62x compile · 41% of roofline`` (nothing without named baselines)."""
    from beavertui.engine.timing.named_baselines import SHORT, speedups

    text = Text()
    a = view.attempt
    t = a.timing.result if a is not None and a.timing is not None else None
    h = view.state.header
    if not h.baselines or t is None or a is None or a.verdict is None or a.verdict.speedup is None:
        return text
    got = speedups(h.baselines, t.candidate_ms)
    parts = [f"{a.verdict.speedup:.2f}x ref"]
    for b in h.baselines:
        if b.name in got:
            parts.append(
                f"{100 * got[b.name]:.0f}% of roofline"
                if b.name == "roofline"
                else f"{got[b.name]:.2f}x {SHORT[b.name]}"
            )
    text.append("  " + " · ".join(parts), "cyan")
    return text


def _usage(view: View) -> Text:
    """This reply's cost and tokens of the session's, where reported: ``$0.004 of $0.05 · 3.4k of 14k tok``."""
    from beavertui.engine.session.usage import dollars, session_usage, tokens_text, usage_of

    text = Text()
    end = view.state.end
    u = session_usage(end) if end is not None else None  # the plans and summaries too, as metrics counts them
    if u is None:
        u = usage_of(a.reply for a in view.state.attempts if a.reply is not None)
    if u.replies == u.unreported and u.cost_usd is None:
        return text
    reply = view.attempt.reply if view.attempt is not None else None
    counted = reply is not None and reply.prompt_tokens is not None and reply.completion_tokens is not None
    parts = []
    if u.cost_usd is not None:
        mine = dollars(reply.cost_usd) + " of " if reply is not None and reply.cost_usd is not None else ""
        parts.append(f"{mine}{dollars(u.cost_usd)}")
    if u.replies > u.unreported:
        mine = ""
        if counted:
            assert (
                reply is not None and reply.prompt_tokens is not None and reply.completion_tokens is not None
            )
            mine = tokens_text(reply.prompt_tokens + reply.completion_tokens) + " of "
        parts.append(f"{mine}{tokens_text(u.tokens)} tok")
    text.append("  " + " · ".join(parts), "dim")
    if reply is not None and reply.cached:
        text.append(" cached", "cyan")
    return text
