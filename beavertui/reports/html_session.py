"""One session as HTML: the panes of the session screen for every iteration, and the page of a session.

A session shows what the session screen shows (header, timeline, diff highlighted as CUDA, classified log,
sanitizer records, speedup bars with the gate, stagnation detectors and track) with buttons that step
through iterations. Every pane is rendered here, in Python, for every iteration; the page's script only
shows one iteration at a time. Numbers come from the session's events (folded by the engine's reducer);
nothing here computes a metric. No terminal library is imported.
"""

from __future__ import annotations

import difflib
import itertools
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from pathlib import Path

from beavertui.engine.errors import BeaverError
from beavertui.engine.session.describe import (
    FAILED_GATE,
    command_text,
    duration_text,
    ended_text,
    reuse_text,
    stage_failed,
    stage_status,
    stop_text,
)
from beavertui.engine.session.events import SanitizerRecord, StageResult
from beavertui.engine.session.protocol import DETECTORS
from beavertui.engine.session.state import AttemptState, SessionState, fold
from beavertui.engine.session.store import read_session
from beavertui.reports.html_page import page
from beavertui.reports.palette import (
    PENDING_COLOUR,
    SHORT,
    STAGES,
    colour,
    speed,
)

DIFF_MODES = {
    "previous": "vs previous attempt",
    "broken": "vs broken start",
    "reference": "vs reference",
    "file": "whole file",
}
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

#: The classified log shows logs up to this many lines whole, longer ones around the decisive lines.
WHOLE_LOG_LINES = 120
CONTEXT = 4
#: The raw log keeps this many lines at each end of a stage's output (the session file has them all).
RAW_KEEP = 200
ROWS_PER_KIND = 8
CODE_STYLE = "monokai"


def _label(category: str | None, success: bool, *, short: bool, pending: bool = False) -> str:
    if pending:
        return "pending" if short else "TIMING PENDING"
    if category is None:
        return "…"
    if category == "passed" and not success:
        return "below gate" if short else "FAILED: BELOW GATE"
    return SHORT.get(category, category) if short else category.replace("_", " ").upper()


def badge(category: str | None, success: bool = True, *, short: bool = False, pending: bool = False) -> str:
    return (
        f'<span class="badge" style="background:{colour(category, success, pending=pending)}">'
        f"{escape(_label(category, success, short=short, pending=pending))}</span>"
    )


def _e(text: object) -> str:
    return escape(str(text), quote=True)


# ------------------------------------------------------------------------------------------ sessions


@dataclass(frozen=True)
class SessionDoc:
    """One session as the page shows it: the folded state, where it came from, and any damage."""

    state: SessionState
    path: Path
    problem: str | None = None
    left_out: str | None = None
    """Why no rate counts this session though the page lists it (a task withdrawn from its run, an unfinished
    session, a timing pending...), else None."""


def load_session_doc(path: Path) -> SessionDoc:
    """Read and fold a session file; a damaged file keeps its valid prefix and says what is wrong."""
    header, events, problem = read_session(path)
    if header is None:
        raise BeaverError(f"{path}: not a readable session ({problem})")
    return SessionDoc(fold(header, events), path, problem)


def _code_before(state: SessionState, iteration: int) -> tuple[str, str]:
    for a in reversed(state.attempts):
        if a.iteration < iteration and a.candidate is not None and a.candidate.code is not None:
            return a.candidate.code, f"iteration {a.iteration}"
    return state.header.task.broken_start, "broken start"


def _upto(state: SessionState, cursor: int) -> tuple[AttemptState, ...]:
    return tuple(a for a in state.attempts if a.iteration <= cursor)


# ------------------------------------------------------------------------------------------ code


@lru_cache(maxsize=256)
def highlighted_lines(code: str, language: str) -> tuple[str, ...]:
    """The code highlighted whole by pygments (inline styles), split into lines of balanced HTML."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name

    lexer = get_lexer_by_name({"cuda": "cuda", "cpp": "cpp", "python": "python"}.get(language, "cuda"))
    lexer.stripnl = False
    lexer.ensurenl = True
    formatter = HtmlFormatter(nowrap=True, noclasses=True, style=CODE_STYLE)
    out = highlight(code, lexer, formatter)
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(code.splitlines())
    return tuple(lines[:n]) + ("",) * max(0, n - len(lines))


def whole_file(code: str, language: str) -> str:
    lines = highlighted_lines(code, language)
    width = len(str(len(lines)))
    rows = [f'<span class="ln">{n:>{width}} │ </span>{line}' for n, line in enumerate(lines, start=1)]
    return '<pre class="code">' + "\n".join(rows) + "</pre>"


def diff_html(old: str, new: str, language: str, context: int = 3) -> tuple[str, int, int]:
    """A unified-style diff of highlighted code: (HTML, lines added, lines removed)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    old_hl, new_hl = highlighted_lines(old, language), highlighted_lines(new, language)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    width = len(str(max(len(old_lines), len(new_lines), 1)))
    rows: list[str] = []
    added = removed = 0

    def at(lines: tuple[str, ...], i: int) -> str:
        return lines[i] if i < len(lines) else ""

    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        rows.append(
            f'<span class="hunk">@@ -{first[1] + 1},{last[2] - first[1]} '
            f"+{first[3] + 1},{last[4] - first[3]} @@</span>"
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [
                    f'<span class="ln">  {j + 1:>{width}} │ </span>{at(new_hl, j)}' for j in range(j1, j2)
                ]
                continue
            if tag in ("replace", "delete"):
                for i in range(i1, i2):
                    rows.append(
                        f'<span class="del"><span class="ln">- {i + 1:>{width}} │ </span>{at(old_hl, i)}</span>'
                    )
                    removed += 1
            if tag in ("replace", "insert"):
                for j in range(j1, j2):
                    rows.append(
                        f'<span class="add"><span class="ln">+ {j + 1:>{width}} │ </span>{at(new_hl, j)}</span>'
                    )
                    added += 1
    if not added and not removed:
        return '<p class="dim"><i>no change: the two files are identical</i></p>', 0, 0
    return '<pre class="code">' + "\n".join(rows) + "</pre>", added, removed


def _plan_pane(state: SessionState, a: AttemptState) -> str:
    """The plan tab of one iteration: its plan, and the summarised feedback before and after it."""
    parts = []
    if a.plan is not None:
        control = f' <span class="yellow">control: {_e(a.plan.replaces)}</span>' if a.plan.replaces else ""
        parts.append(
            f'<p class="b">plan for iteration {a.iteration} by {_e(a.plan.model)}{control}</p>'
            f'<pre class="text">{_e(a.plan.content)}</pre>'
        )
    else:
        parts.append('<p class="dim"><i>No plan was recorded for this iteration.</i></p>')
    before = state.attempt(a.iteration - 1)
    for label, summary in (
        (
            f"feedback on iteration {a.iteration - 1}, summarised (what this request carried)",
            before and before.summary,
        ),
        (f"feedback on iteration {a.iteration}, summarised (sent with the next request)", a.summary),
    ):
        if summary:
            parts.append(
                f'<p class="b">{_e(label)} by {_e(summary.model)}</p><pre class="text">{_e(summary.content)}</pre>'
            )
    return f'<div class="dm" data-dm="plan">{"".join(parts)}</div>'


def _planned(state: SessionState) -> bool:
    p = state.header.protocol
    return (
        p.planning == "plan"
        or p.feedback == "L3S"
        or any(a.plan is not None or a.summary is not None for a in state.attempts)
    )


def _diff_pane(state: SessionState, a: AttemptState) -> str:
    plan = _plan_pane(state, a) if _planned(state) else ""
    cand = a.candidate
    task = state.header.task
    if cand is None:
        text = a.reply.content if a.reply else ""
        if text:
            return f'<p class="b">model reply</p><pre class="text">{_e(text)}</pre>{plan}'
        return f'<p class="dim"><i>No reply was recorded for this iteration.</i></p>{plan}'
    if cand.code is None:
        reason = cand.no_code_reason or "no code block in the reply"
        reply = a.reply.content if a.reply else ""
        return (
            f'<p class="red b">No code extracted: {_e(reason)}</p><pre class="text">{_e(reply)}</pre>{plan}'
        )
    edited = '<p class="yellow b">edited by the user before the build</p>' if cand.edited else ""
    parts = []
    for mode in DIFF_MODES:
        if mode == "file":
            body = f'<p class="b">{_e(task.solution_file)} at iteration {a.iteration}</p>'
            body += whole_file(cand.code, task.language)
        else:
            if mode == "previous":
                old, name = _code_before(state, a.iteration)
            elif mode == "broken":
                old, name = task.broken_start, "broken start"
            else:
                if task.reference is None:
                    parts.append(
                        f'<div class="dm" data-dm="{mode}"><p class="dim"><i>This task ships no '
                        "reference solution.</i></p></div>"
                    )
                    continue
                old, name = task.reference, "reference"
            html, added, removed = diff_html(old, cand.code, task.language)
            body = (
                f'<p class="b">iteration {a.iteration} against {_e(name)}: '
                f'<span class="green">+{added}</span> <span class="red">-{removed}</span></p>' + html
            )
        parts.append(f'<div class="dm" data-dm="{mode}">{edited}{body}</div>')
    return "".join(parts) + plan


# ------------------------------------------------------------------------------------------ log


def _is_decisive(line: str, decisive: Sequence[str]) -> bool:
    s = line.strip()
    return bool(s) and any(d.strip() and (d.strip() == s or d.strip() in s) for d in decisive)


def _stage_line(r: StageResult) -> str:
    rc = stage_status(r)
    cls = "red" if stage_failed(r) else "green"
    cached = ' · <span class="cyan">cached</span>' if r.cached else ""
    if r.reused:
        cached += f' · <span class="cyan">{_e(reuse_text(r))}</span>'
    return (
        f'<div class="stage"><b>── {_e(r.stage)}</b> <span class="{cls}">{_e(rc)} · {_e(duration_text(r))}</span>'
        f'{cached}<div class="dim">$ {_e(command_text(r))}</div></div>'
    )


def _classified_log(log: str, decisive: Sequence[str]) -> str:
    lines = log.rstrip("\n").split("\n") if log else []
    if not lines:
        return '<pre class="log dim"><i>(no output)</i></pre>'
    hits = {i for i, line in enumerate(lines) if _is_decisive(line, decisive)}
    keep: set[int] | None = None
    if len(lines) > WHOLE_LOG_LINES and hits:
        keep = {j for i in hits for j in range(i - CONTEXT, i + CONTEXT + 1)}
    out: list[str] = []
    skipped = 0
    for i, line in enumerate(lines):
        if keep is not None and i not in keep:
            skipped += 1
            continue
        if skipped:
            out.append(f'<span class="dim">… {skipped} lines …</span>')
            skipped = 0
        out.append(f'<mark class="decisive">{_e(line)}</mark>' if i in hits else _e(line))
    if skipped:
        out.append(f'<span class="dim">… {skipped} lines …</span>')
    return '<pre class="log">' + "\n".join(out) + "</pre>"


def _raw_log(r: StageResult) -> str:
    lines = r.log.rstrip("\n").split("\n") if r.log else []
    note = ""
    if len(lines) > 2 * RAW_KEEP:
        cut = len(lines) - 2 * RAW_KEEP
        lines = [
            *lines[:RAW_KEEP],
            f"… {cut} lines left out of this page (the session file has them) …",
            *lines[-RAW_KEEP:],
        ]
    if r.log_bytes > len(r.log.encode()):
        note = f'<div class="dim">[{r.log_bytes} bytes written, head and tail kept]</div>'
    return '<pre class="log">' + _e("\n".join(lines)) + "</pre>" + note


def _log_pane(a: AttemptState) -> str:
    stages = [e.result for e in (a.build, a.run) if e is not None]
    v = a.verdict
    decisive = v.decisive if v else []
    out = ['<div class="lg" data-lg="classified">']
    if v is not None:
        reason = f" <b>{_e(v.reason)}</b>" if v.reason and v.reason != v.category else ""
        out.append(f"<div>{badge(v.category, v.success, pending=v.timing_pending)}{reason}</div>")
        if v.signature:
            out.append(f'<div><span class="dim">signature</span> <b>{_e(v.signature)}</b></div>')
        out += [f'<div class="magenta b">flag {_e(str(f))}</div>' for f in v.flags]
        if decisive:
            out.append('<div class="dim">decisive</div><pre class="log">')
            out.append("\n".join(f'<mark class="decisive">{_e(d)}</mark>' for d in decisive))
            out.append("</pre>")
    else:
        out.append(f'<div class="dim"><i>not classified (reached stage: {_e(a.stage)})</i></div>')
    for e in a.infra_errors:
        out.append(f'<div class="red b">infrastructure error ({_e(e.source)}): {_e(e.detail)}</div>')
    for r in stages:
        out.append(_stage_line(r) + _classified_log(r.log, decisive))
    out.append('</div><div class="lg" data-lg="raw">')
    raw = [*stages, *(s.result for s in a.sanitize)]
    out += [_stage_line(r) + _raw_log(r) for r in raw]
    if not raw:
        out.append('<div class="dim">No stage has run.</div>')
    out.append("</div>")
    return "".join(out)


# ------------------------------------------------------------------------------------------ sanitizer


def _short_kernel(name: str | None) -> str:
    return name.split("(", 1)[0] if name else "?"


def _sanitizer_pane(a: AttemptState) -> str:
    if not a.sanitize:
        return f'<p class="dim"><i>No compute-sanitizer run on iteration {a.iteration}.</i></p>'
    out = []
    for run in a.sanitize:
        count = "no summary" if run.error_count is None else f"{run.error_count} errors"
        out.append(
            f'<div class="san" data-tool="{_e(run.tool)}"><b>{_e(run.tool)}</b> '
            f'<span class="dim">{_e(stage_status(run.result))} · {count} · {_e(duration_text(run.result, 1))}</span>'
        )
        if not run.records:
            out.append('<div class="green">no findings</div></div>')
            continue
        groups: dict[str, list[SanitizerRecord]] = defaultdict(list)
        for rec in run.records:
            groups[rec.kind].append(rec)
        for kind, recs in groups.items():
            size = f" of size {recs[0].size}" if recs[0].size else ""
            out.append(f'<div class="red b">{_e(kind)}{size} ×{len(recs)}</div>')
            out.append(
                '<table class="rec"><tr><th>kernel</th><th>thread</th><th>block</th>'
                "<th>address</th><th>host frame</th></tr>"
            )
            for rec in recs[:ROWS_PER_KIND]:
                cells = (_short_kernel(rec.kernel), rec.thread, rec.block, rec.address, rec.host_frame)
                out.append("<tr>" + "".join(f"<td>{_e(c or '')}</td>" for c in cells) + "</tr>")
            out.append("</table>")
            out += [f'<div class="i">{_e(d)}</div>' for d in sorted({r.detail for r in recs if r.detail})[:3]]
            if len(recs) > ROWS_PER_KIND:
                out.append(f'<div class="dim">… and {len(recs) - ROWS_PER_KIND} more</div>')
        out.append("</div>")
    return "".join(out)


# ------------------------------------------------------------------------------------------ speedup


def _spark(samples: Sequence[float], w: int = 160, h: int = 18) -> str:
    if len(samples) < 2:
        return ""
    lo, hi = min(samples), max(samples)
    span = hi - lo or 1.0
    pts = " ".join(
        f"{w * i / (len(samples) - 1):.1f},{h - 2 - (h - 4) * (v - lo) / span:.1f}"
        for i, v in enumerate(samples)
    )
    return (
        f'<svg class="spark" width="{w}" height="{h}" viewBox="0 0 {w} {h}">'
        f'<polyline points="{pts}" fill="none" stroke="#5fd7d7" stroke-width="1.2"/></svg>'
    )


def _ms(x: float) -> str:
    """A median time in ms to 4 significant digits: a kernel of some microseconds keeps as many as one of
    some milliseconds (0.01686 and 0.01709 ms, where 3 decimals print both as 0.017 beside a 1.01x)."""
    return f"{x:.4g}"


def _timing_block(state: SessionState, a: AttemptState) -> str:
    gate = state.header.protocol.gate
    t = a.timing.result if a.timing is not None else None
    out = []
    if t is None:
        why = "not measured" if a.verdict is None else f"not measured ({a.verdict.reason})"
        out.append(f'<div class="dim">iteration {a.iteration}: {_e(why)}</div>')
    else:
        ok = t.speedup >= gate
        for name, ms, cv, samples in (
            ("candidate", t.candidate_ms, t.candidate_cv, t.candidate_samples),
            ("reference", t.reference_ms, t.reference_cv, t.reference_samples),
        ):
            cvc = "red" if cv > 0.03 else "dim"
            out.append(
                f'<div class="tm"><span class="dim">{name}</span> <b>{_ms(ms)} ms</b> '
                f'<span class="{cvc}">CV {cv * 100:.1f}%</span> {_spark(samples)}</div>'
            )
        out.append(
            f'<div class="tm"><span class="dim">speedup</span> <b class="{"green" if ok else "red"}">'
            f'{t.speedup:.2f}x</b> <span class="dim">{"≥" if ok else "<"} gate {gate:g}x</span> '
            f'<span class="{"green" if ok else "red b"}">{"passes the gate" if ok else "BELOW GATE"}</span></div>'
        )
        named = state.header.protocol.gate_baseline
        if named != "reference":  # as the Speedup pane says it: the loop judged the reference
            out.append(
                f'<div class="yellow">against the reference, as the loop judged it; this protocol\'s gate applies '
                f"to {_e(named)} (p-vs={_e(named)}), below: metrics judge it there</div>"
            )
        out.append(
            f'<div class="dim">medians of {len(t.candidate_samples)} interleaved runs ({_e(t.method)})</div>'
        )
        for flag, on in (("unstable (CV > 3%)", t.unstable), ("implausible: audit", t.implausible)):
            if on:
                out.append(f'<div class="magenta b">{flag}</div>')
        if t.candidate_host_samples:
            host = statistics.median(t.candidate_host_samples)
            out.append(
                f'<div class="dim">host {_ms(host)} ms: median from launch to full device sync '
                "(side-stream check)</div>"
            )
        if t.note:
            out.append(f'<div class="dim">{_e(t.note)}</div>')
        out += _against(state, t.candidate_ms)
    if a.verdict is not None:
        out += [f'<div class="magenta b">flag {_e(str(f))}</div>' for f in a.verdict.flags]
    return "".join(out)


def _against(state: SessionState, candidate_ms: float) -> list[str]:
    """The candidate against each named baseline of the header, as the Speedup pane shows it."""
    from beavertui.engine.timing.named_baselines import SHORT, speedup_against

    if not state.header.baselines:
        return []
    out = [
        '<div class="dim">against baselines stored for this GPU (their median over the candidate\'s)</div>'
    ]
    for b in state.header.baselines:
        s = speedup_against(b.median_ms, candidate_ms)
        shown = (
            "-" if s is None else f"{100 * s:.1f}% of the roofline" if b.name == "roofline" else f"{s:.2f}x"
        )
        out.append(
            f'<div class="tm"><span class="dim">{_e(SHORT[b.name])}</span> <b>{_ms(b.median_ms)} ms</b> '
            f'<b>{shown}</b> <span class="dim">{_e(b.method)}: {_e(b.note)}</span></div>'
        )
    return out


def speedup_svg(state: SessionState) -> str:
    """Speedup per iteration as bars coloured by category, the gate as a line; rows carry data-mark."""
    gate = state.header.protocol.gate
    attempts = state.attempts
    speeds = [a.verdict.speedup for a in attempts if a.verdict and a.verdict.speedup]
    scale = max([gate * 1.25, 1.0, *speeds])
    row, left, width = 24, 34, 300
    w, h = left + width + 150, 14 + row * max(1, len(attempts)) + 22

    def x(v: float) -> float:
        return left + width * min(v, scale) / scale

    body = []
    for n, a in enumerate(attempts):
        y = 8 + row * n
        v = a.verdict
        body.append(f'<g class="row" data-mark="{a.iteration}" data-go="{a.iteration}">')
        body.append(f'<rect class="hl" x="0" y="{y}" width="{w}" height="{row}" rx="3"/>')
        body.append(f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{a.iteration}</text>')
        if v is None:
            body.append(f'<text x="{left + 4}" y="{y + 16}" class="dimt">{_e(a.stage)}…</text>')
        elif v.speedup is None and v.timing_pending:
            body.append(f'<text x="{left + 4}" y="{y + 16}" class="dimt">— timing pending</text>')
        elif v.speedup is None:
            body.append(
                f'<text x="{left + 4}" y="{y + 16}" style="fill:{colour(v.category)}">— '
                f"{_e(SHORT.get(v.category, v.category))} (not timed)</text>"
            )
        else:
            fill = colour(v.category, v.success)
            body.append(
                f'<rect x="{left}" y="{y + 5}" width="{x(v.speedup) - left:.1f}" height="{row - 10}" fill="{fill}"/>'
            )
            tag = "" if v.success or not v.correct else " below gate"
            body.append(
                f'<text x="{x(v.speedup) + 5:.1f}" y="{y + 16}" class="{"green" if v.success else "red"}t">'
                f"{speed(v.speedup)}{tag}</text>"
            )
        body.append("</g>")
    gx = x(gate)
    bottom = 8 + row * max(1, len(attempts))
    body.append(
        f'<line x1="{gx:.1f}" y1="4" x2="{gx:.1f}" y2="{bottom + 4}" stroke="#f0c674" stroke-dasharray="4,3"/>'
    )
    body.append(
        f'<text x="{gx:.1f}" y="{bottom + 18}" text-anchor="middle" class="dimt">gate {gate:g}x '
        f"(scale 0–{scale:.2f}x)</text>"
    )
    return (
        f'<svg class="bars" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="speedup across iterations">' + "".join(body) + "</svg>"
    )


# ------------------------------------------------------------------------------------------ stagnation


def _progress(state: SessionState, cursor: int, detector: str) -> str:
    s = state.header.protocol.stagnation
    upto = _upto(state, cursor)
    done = [a.verdict for a in upto if a.verdict is not None]
    hashes = [a.candidate.sha256 for a in upto if a.candidate and a.candidate.sha256]
    if detector == "duplicate_code":
        repeats = len(hashes) - len(set(hashes))
        return f"{repeats} repeated hash" + ("es" if repeats != 1 else "")
    if detector == "code_cycle":
        return f"{len(set(hashes))} distinct of {len(hashes)}"
    if detector == "category_oscillation":
        cats = [v.category for v in done][-s.oscillation_window :]
        changes = sum(1 for p, q in itertools.pairwise(cats) if p != q)
        return f"{changes}/{s.oscillation_changes} changes in last {s.oscillation_window}"
    run, last = 0, None
    for v in done:
        key = (v.category, v.signature)
        run = run + 1 if key == last else 1
        last = key
    return f"run of {run}/{s.no_progress_run} alike"


def _stagnation_pane(state: SessionState, cursor: int) -> str:
    s = state.header.protocol.stagnation
    out = [
        f'<div class="dim">detectors (a firing one {"stops" if s.stop else "does not stop"} the loop)</div>'
    ]
    fired = {st.detector: st for st in state.stalls if st.iteration <= cursor}
    out.append('<table class="det">')
    for d in DETECTORS:
        if d not in s.enabled:
            out.append(f'<tr class="dim"><td>○</td><td>{d}</td><td>off</td></tr>')
        elif d in fired:
            st = fired[d]
            detail = f": {_e(st.detail)}" if st.detail else ""
            out.append(
                f'<tr class="red b"><td>✖</td><td>{d}</td><td>fired after it{st.iteration}{detail}</td></tr>'
            )
        else:
            out.append(
                f'<tr><td class="green">●</td><td class="green">{d}</td>'
                f'<td class="dim">armed · {_e(_progress(state, cursor, d))}</td></tr>'
            )
    out.append('</table><div class="hashes"><span class="dim">hashes</span> ')
    seen: dict[str, int] = {}
    for a in _upto(state, cursor):
        h = a.candidate.sha256 if a.candidate else None
        cls = ' class="yellow b"' if a.iteration == cursor else ""
        item = f"<span{cls}>{a.iteration}:{_e((h or 'no-code')[:8])}</span>"
        if h and h in seen:
            item += f'<span class="magenta b">=it{seen[h]}</span>'
        elif h:
            seen[h] = a.iteration
        out.append(item + " ")
    out.append('</div><div class="track"><span class="dim">track</span> ')
    for a in _upto(state, cursor):
        v = a.verdict
        pending = v is not None and v.timing_pending
        out.append(
            badge(v.category if v else None, v.success if v else True, short=True, pending=pending) + " "
        )
    out.append("</div>")
    return "".join(out)


# ------------------------------------------------------------------------------------------ one session


def _reached(a: AttemptState) -> set[str]:
    names = {n for n in ("request", "reply", "candidate", "timing", "verdict") if getattr(a, n) is not None}
    names |= {n for n, on in (("build", a.build), ("run", a.run), ("sanitize", a.sanitize)) if on}
    return names


def _stages_line(a: AttemptState) -> str:
    reached = _reached(a)
    cells = "".join(f'<span class="{"green b" if n in reached else "dim"}">{n}</span> ' for n in STAGES)
    v = a.verdict
    return f'<span class="dim">stages</span> {cells}' + (
        badge(v.category, v.success, pending=v.timing_pending) if v else ""
    )


def _timeline(state: SessionState) -> str:
    last = max(state.header.protocol.budget, state.iteration)
    cells = []
    for it in range(1, last + 1):
        a = state.attempt(it)
        v = a.verdict if a else None
        if v is not None:
            label = f"{it} {_label(v.category, v.success, short=True, pending=v.timing_pending)}"
            sub = speed(v.speedup) if v.speedup is not None else ""
            cells.append(
                f'<button class="cell" data-go="{it}" data-mark="{it}" style="background:{colour(v.category, v.success, pending=v.timing_pending)}"'
                f' title="{_e(v.category)}">{_e(label)}<small>{_e(sub)}</small></button>'
            )
        elif a is not None:
            cells.append(
                f'<button class="cell" data-go="{it}" data-mark="{it}" style="background:{PENDING_COLOUR}">'
                f"{it} {_e(a.stage)}…<small></small></button>"
            )
        else:
            cells.append(f'<span class="cell empty">{it} ·<small></small></span>')
    return '<div class="timeline">' + "".join(cells) + "</div>"


def _head(doc: SessionDoc) -> str:
    h = doc.state.header
    end = doc.state.end
    out = [
        f'<span class="task">{_e(h.task.id)}</span> <b>{_e(h.model.name)}</b> '
        f'<span class="dim">· {_e(h.protocol.short())} · sample {h.sample}</span> '
        f'<b>· iteration <span class="cur">{doc.state.iteration}</span>/{h.protocol.budget}</b> '
    ]
    if end is not None:
        stop = stop_text(end.stop_reason, end.success, end.timing_pending)
        cls = "green" if end.success else ("red" if stop in ("error", FAILED_GATE) else "yellow")
        out.append(f'<span class="{cls}">· ended: {_e(ended_text(end, h.protocol.gate))}</span>')
        if end.detail:
            out.append(f' <span class="red">({_e(end.detail)})</span>')
    else:
        out.append('<span class="yellow">· unfinished (no end recorded)</span>')
    if doc.problem:
        out.append(f'<div class="damage">damaged file: {_e(doc.problem)}; showing its valid prefix</div>')
    if doc.left_out:
        out.append(f'<div class="damage">left out of every rate of the run: {_e(doc.left_out)}</div>')
    info = [
        f"{h.task.family} · label {h.task.label}",
        f"GPU {h.gpu.name} ({h.gpu.slug})" if h.gpu else "no GPU (recorded toolchain)",
        f"beavertui {h.tool_version}",
        f"session {h.session_id}",
    ]
    out.append('<div class="dim small">' + " · ".join(_e(i) for i in info) + "</div>")
    return "".join(out)


def session_section(doc: SessionDoc, key: str, *, back: str | None = None) -> str:
    """The session's screen as one <section>; ``key`` makes its element ids unique in a run page."""
    state = doc.state
    last = state.iteration
    per: dict[str, list[str]] = {"stages": [], "diff": [], "log": [], "san": [], "speed": [], "stag": []}
    for a in state.attempts:
        it = a.iteration
        label = f'<div class="itlabel">iteration {it}</div>'
        per["stages"].append(f'<div data-it="{it}">{_stages_line(a)}</div>')
        per["diff"].append(f'<div data-it="{it}">{label}{_diff_pane(state, a)}</div>')
        per["log"].append(f'<div data-it="{it}">{label}{_log_pane(a)}</div>')
        per["san"].append(f'<div data-it="{it}">{label}{_sanitizer_pane(a)}</div>')
        per["speed"].append(f'<div data-it="{it}">{label}{_timing_block(state, a)}</div>')
        per["stag"].append(f'<div data-it="{it}">{label}{_stagnation_pane(state, it)}</div>')
    empty = '<p class="dim">No attempt recorded.</p>' if not state.attempts else ""
    shown = {**DIFF_MODES, **({"plan": "plan"} if _planned(state) else {})}
    modes = "".join(
        f'<button class="mode" data-diff="{m}">{_e(label)}</button>' for m, label in shown.items()
    )
    tools = "".join(f'<button class="mode" data-tool="{t}">{t}</button>' for t in ("all", *SANITIZER_TOOLS))
    back_link = f'<a class="back" href="{_e(back)}">← all sessions of the run</a>' if back else ""
    return f"""<section class="session" id="{_e(key)}" data-last="{last}" data-cursor="{last}" data-diff="previous" data-log="classified" data-tool="all">
{back_link}
<div class="header">{_head(doc)}</div>
<nav class="steps">
<button class="step" data-step="first" title="first iteration (Home)">« First</button>
<button class="step" data-step="-1" title="previous iteration (←)">◀ Back</button>
<span class="pos">iteration <b class="cur">{last}</b> of {last}</span>
<button class="step" data-step="1" title="next iteration (→)">Forward ▶</button>
<button class="step" data-step="last" title="last iteration (End)">Last »</button>
</nav>
{_timeline(state)}
<div class="stages">{"".join(per["stages"])}</div>
{empty}
<div class="grid">
<div class="pane p-diff"><h3>Diff <span class="modes">{modes}</span></h3>{"".join(per["diff"])}</div>
<div class="pane p-log"><h3>Log <span class="modes"><button class="mode" data-log="classified">classified</button><button class="mode" data-log="raw">raw</button></span></h3>{"".join(per["log"])}</div>
<div class="pane p-san"><h3>Sanitizer <span class="modes">{tools}</span></h3>{"".join(per["san"])}</div>
<div class="pane p-speed"><h3>Speedup</h3>{"".join(per["speed"])}<div class="dim">speedup across iterations</div>{speedup_svg(state)}</div>
<div class="pane p-stag"><h3>Stagnation</h3>{"".join(per["stag"])}</div>
</div>
</section>"""


def session_page(doc: SessionDoc) -> str:
    """The page of one session."""
    h = doc.state.header
    title = f"{h.task.id} · {h.model.name} · {h.protocol.short()}"
    body = f"<h1>beavertui session: {_e(title)}</h1>\n" + session_section(doc, "session")
    body += (
        '\n<p class="dim small">Exported by beavertui from '
        f"{_e(doc.path.name)}. Buttons or ←/→/Home/End step through iterations.</p>"
    )
    return page(title, body, run=False)
