"""A plain-text summary of a session, one line per iteration, for `replay` when stdout is not a terminal."""

from __future__ import annotations

from beavertui.engine.session.describe import ended_text
from beavertui.engine.session.events import Event, SessionHeader
from beavertui.engine.session.state import fold


def summary_lines(header: SessionHeader, events: list[Event], problem: str | None) -> list[str]:
    state = fold(header, events)
    lines = [f"{header.task.id}  {header.model.name}  {header.protocol.short()}  ({len(events)} events)"]
    imp = header.imported
    if imp is not None:
        lines.append(f"  imported from the {imp.source} run {imp.run_id} ({imp.run_dir})")
        lines += [f"  not recorded: {what}" for what in imp.not_recorded]
        lines += [f"  not scored: {what}" for what in imp.dropped]
    for a in state.attempts:
        v = a.verdict
        if v is None:
            if a.infra_errors:
                infra = a.infra_errors[-1]
                lines.append(f"  it{a.iteration}  infrastructure error ({infra.source}): {infra.detail}")
            else:
                lines.append(f"  it{a.iteration}  {a.stage}…")
            continue
        sp = "" if v.speedup is None else f"  {v.speedup:.2f}x"
        # the reason where it says more than the category and the signature shown beside it
        ok = "success" if v.success else ("" if v.reason in (v.category, v.signature) else v.reason)
        said = "  ".join(x for x in (ok, v.signature or "") if x)
        lines.append(f"  it{a.iteration}  {v.category:<22}{sp:>8}  {said}".rstrip())
        for what, call in (("plan", a.plan), ("feedback summary", a.summary)):
            if call is not None:
                first = next((ln.strip() for ln in call.content.splitlines() if ln.strip()), "")
                lines.append(f"       {what} by {call.model}: {first[:100]}")
    for st in state.stalls:
        lines.append(f"  stalled after it{st.iteration}: {st.detector} ({st.detail})")
    if state.end is not None:
        e = state.end
        lines.append(f"  ended: {ended_text(e, header.protocol.gate)}")
    if problem:
        lines.append(f"  damaged: {problem} (valid prefix shown)")
    return lines


def print_summary(header: SessionHeader, events: list[Event], problem: str | None) -> None:
    print("\n".join(summary_lines(header, events, problem)))
