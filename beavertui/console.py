"""Headless rendering: one line per session event, with rich styles when the output is a terminal.

Used by ``live --headless`` and by batch progress. Streamed deltas never print a line; on a terminal they
drive a transient status showing how much of the reply has arrived. Log text from candidates and
compilers is printed as plain text (never interpreted as markup). This module must not run sessions or
decide anything about them.
"""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.status import Status
from rich.text import Text

from beavertui.engine.session.describe import (
    REUSED,
    paused_text,
    reuse_text,
    stage_failed,
    stage_status,
    stop_text,
    token_limit_text,
)
from beavertui.engine.session.events import (
    Built,
    Candidate,
    Event,
    InfraError,
    Plan,
    Profiled,
    Ran,
    Reply,
    ReplyDelta,
    Request,
    Sanitized,
    SessionEnd,
    SessionHeader,
    StageResult,
    Stalled,
    Summary,
    Timed,
    Verdict,
)

_LABELS = {"infra_error": "infra"}


def _stage(result: StageResult) -> tuple[str, str]:
    text, style = _stage_outcome(result)
    if result.paused_s:
        text = f"{text}, {paused_text(result)}"
    return (f"{text}, {reuse_text(result)}" if result.reused else text), style


def _stage_outcome(result: StageResult) -> tuple[str, str]:
    if result.duration_s is None or (result.rc is None and "rc" in result.unrecorded):
        took = "" if result.duration_s is None else f" in {result.duration_s:.2f} s"
        return f"{stage_status(result)}{took}", "red" if stage_failed(result) else "green"
    if result.timed_out:
        return f"timed out after {result.duration_s:.1f} s", "bold red"
    if result.signal:
        return f"killed by signal {result.signal} after {result.duration_s:.2f} s", "red"
    cached = ", cached" if result.cached else ""
    if result.rc == 0:
        return f"ok in {result.duration_s:.2f} s{cached}", "green"
    return f"exit {result.rc} in {result.duration_s:.2f} s{cached}", "red"


def _first_line(text: str, limit: int = 120) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _diffstat(diff: str) -> str:
    plus = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return f"+{plus} -{minus} lines"


def header_line(h: SessionHeader) -> Text:
    gpu = h.gpu.slug if h.gpu else "no GPU (recorded outcomes)"
    t = Text()
    t.append("session ", "bold")
    t.append(f"{h.session_id}  task {h.task.id} ({h.task.family}, label {h.task.label})  ")
    t.append(f"model {h.model.name} [{h.model.kind}]  ", "cyan")
    t.append(f"{h.protocol.short()}  {gpu}")
    return t


def event_line(e: Event) -> Text | None:
    """The one line for an event, or None for events that print nothing (streamed deltas)."""
    if isinstance(e, ReplyDelta):
        return None
    it = getattr(e, "iteration", None)
    t = Text(f"#{it:<3}" if it is not None else "    ", style="dim")
    label = f"{_LABELS.get(e.kind, e.kind):<10}"
    if isinstance(e, Request):
        chars = sum(len(m.content) for m in e.messages)
        t.append(label, "bold")
        t.append(f"{len(e.messages)} messages, {chars:,} chars")
    elif isinstance(e, Reply):
        t.append(label, "bold")
        tokens = (
            f", {e.prompt_tokens}+{e.completion_tokens} tokens"
            if e.prompt_tokens is not None and e.completion_tokens is not None
            else ""
        )
        retries = f", {e.retries} retr{'y' if e.retries == 1 else 'ies'}" if e.retries else ""
        took = "latency not recorded" if e.latency_s is None else f"{e.latency_s:.1f} s"
        t.append(f"{len(e.content):,} chars{tokens}, {took}, finish {e.finish_reason}{retries}")
        if (cut := token_limit_text(e.finish_reason)) is not None:
            t.append(f"  {cut}", "bold yellow")
        if e.truncated_chars:
            t.append(f", truncated: {e.truncated_chars:,} more chars not kept", style="bold yellow")
    elif isinstance(e, Plan | Summary):
        t.append(label, "bold")
        tokens = (
            f", {e.prompt_tokens}+{e.completion_tokens} tokens"
            if e.prompt_tokens is not None and e.completion_tokens is not None
            else ""
        )
        t.append(f"by {e.model}: {len(e.content):,} chars{tokens}  ")
        t.append(_first_line(e.content, 80), "dim")
    elif isinstance(e, Candidate):
        t.append(label, "bold")
        if e.code is None:
            t.append(f"no code: {e.no_code_reason}", "yellow")
        else:
            t.append(f"sha {(e.sha256 or '')[:12]}  {_diffstat(e.diff)}")
            if e.edited:
                t.append("  edited by hand", "magenta")
    elif isinstance(e, Built | Ran):
        text, style = _stage(e.result)
        t.append(label, "bold")
        t.append(text, style)
        if e.result.rc not in (0, None) and e.result.log.strip():
            t.append("  " + _first_line(e.result.log), "dim")
    elif isinstance(e, Sanitized):
        t.append(f"{e.tool:<10}", "bold")
        count = "no summary" if e.error_count is None else f"{e.error_count} errors"
        t.append(count, "red" if e.error_count else "green")
        if e.records:
            rec = e.records[0]
            t.append(f"  {rec.kind}" + (f" in {rec.kernel}" if rec.kernel else ""), "dim")
    elif isinstance(e, Timed):
        r = e.result
        t.append(label, "bold")
        t.append(
            f"{r.candidate_ms:.4g} ms vs reference {r.reference_ms:.4g} ms = {r.speedup:.2f}x "
            f"({r.method}, median; cv {r.candidate_cv:.1%}/{r.reference_cv:.1%})"
        )
        if r.unstable or r.implausible:
            t.append(
                "  " + ("unstable " if r.unstable else "") + ("implausible" if r.implausible else ""),
                "yellow",
            )
        if r.reused:
            t.append(f"  {REUSED}", "cyan")
    elif isinstance(e, Profiled):
        t.append(label, "bold")
        t.append(f"ncu: {len(e.candidate)} kernel(s), reference {len(e.reference)}")
        if e.candidate:
            occ = e.candidate[0].metrics.get("achieved_occupancy_pct")
            t.append(
                f"  {e.candidate[0].name.split('(')[0]}"
                + (f" occupancy {occ:.0f}%" if occ is not None else ""),
                "dim",
            )
    elif isinstance(e, Verdict):
        t.append(label, "bold")
        speed = f" {e.speedup:.2f}x" if e.speedup is not None else ""
        if e.success:
            t.append(f"PASS{speed}", "bold green")
        elif e.correct:
            t.append(f"BELOW GATE{speed} < {e.gate:g}x", "bold yellow")
        else:
            t.append(f"FAIL {e.category}", "bold red")
            if e.signature:
                t.append(f"  {e.signature}", "dim")
        if e.flags:
            t.append("  flags: " + ", ".join(map(str, e.flags)), "yellow")
    elif isinstance(e, Stalled):
        t.append(label, "bold magenta")
        t.append(f"{e.detector}: {e.detail}", "magenta")
    elif isinstance(e, InfraError):
        t.append(label, "bold red")
        t.append(f"{e.source}: {e.detail}", "red")
    elif isinstance(e, SessionEnd):
        t = Text("end ", style="bold")
        style = "bold green" if e.success else "bold red"
        stop = stop_text(e.stop_reason, e.success, e.timing_pending)
        t.append(f"{stop} after {e.iterations} iteration{'s' if e.iterations != 1 else ''}", style)
        t.append(", success" if e.success else ", no success")
        if e.best_speedup is not None:
            t.append(f", best {e.best_speedup:.2f}x")
        if e.detail:
            t.append(f" ({e.detail})", "dim")
    return t


class EventPrinter:
    """Prints session items as they arrive; a transient status follows streamed replies on a terminal."""

    def __init__(self, file: IO[str] | None = None, *, color: bool | None = None) -> None:
        self.console = Console(file=file, highlight=False, soft_wrap=True, force_terminal=color)
        self._status: Status | None = None
        self._streamed = 0

    def show(self, item: SessionHeader | Event) -> None:
        if isinstance(item, SessionHeader):
            self.console.print(header_line(item))
            return
        if isinstance(item, ReplyDelta):
            self._streamed += len(item.text)
            if self.console.is_terminal:
                message = f"#{item.iteration} receiving reply: {self._streamed:,} chars"
                if self._status is None:
                    self._status = self.console.status(message)
                    self._status.start()
                else:
                    self._status.update(message)
            return
        self._stop_status()
        line = event_line(item)
        if line is not None:
            self.console.print(line)

    def _stop_status(self) -> None:
        self._streamed = 0
        if self._status is not None:
            self._status.stop()
            self._status = None

    def close(self) -> None:
        self._stop_status()
