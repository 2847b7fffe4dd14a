"""The page of a run: its metric tables with intervals, the p-sweep curves and swing bars, and every session
of the run as a section of the same file, stored compressed until it is opened.

The metric tables are those the engine computed; nothing here computes a metric.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from beavertui.engine.fileio import parse_json
from beavertui.engine.session.describe import FAILED_GATE, stop_text
from beavertui.reports.cells import Rate, Table
from beavertui.reports.html_page import page
from beavertui.reports.html_session import SessionDoc, _e, session_section
from beavertui.reports.palette import colour, speed


def _cell(c: str | Rate) -> str:
    if not isinstance(c, Rate):
        return f"<td>{_e(c)}</td>"
    if c.value is None:
        return '<td class="num">-</td>'
    iv = ""
    if c.lo is not None and c.hi is not None:
        iv = f" <small>[{100 * c.lo:.1f}, {100 * c.hi:.1f}]</small>"
    bound = "&gt;=" if c.lower_bound else ""  # as every format marks a lower bound (reports.cells.pct)
    return f'<td class="num">{bound}{100 * c.value:.1f}{iv}</td>'


def table_html(t: Table, shared: Sequence[str] = ()) -> str:
    """A table, its title and its note, line by line. The lines of the note that are among ``shared`` (what
    every table of the page must say, shown in full once above the tables) stay under the table, folded
    into one line that opens on a click, so that a long list of tasks left out is not read once per table."""
    head = "".join(f"<th>{_e(c)}</th>" for c in t.columns)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in t.rows)
    common = {line for n in shared for line in n.split("\n")}
    own = [line for line in t.note.split("\n") if line.strip() and line not in common]
    repeated = [line for line in t.note.split("\n") if line.strip() and line in common]
    note = "".join(f'<p class="note">{_e(line)}</p>' for line in own)
    if repeated:
        note += (
            f'<details class="note shared"><summary>Left out, as from every table: {len(repeated)} '
            f'note{"s" if len(repeated) > 1 else ""} (in full <a href="#left-out">above</a>)</summary>'
            + "".join(f"<p>{_e(line)}</p>" for line in repeated)
            + "</details>"
        )
    return (
        f'<h3>{_e(t.title)}</h3><div class="wide"><table class="t"><tr>{head}</tr>{rows}</table></div>{note}'
    )


def shared_html(shared: Sequence[str]) -> str:
    """What every table of the page leaves out, said once in full (each table folds it: ``table_html``)."""
    if not shared:
        return ""
    lines = "".join(f"<li>{_e(line)}</li>" for line in shared)
    return f'<div class="left-out" id="left-out"><h3>Left out of every table below</h3><ul>{lines}</ul></div>'


def _svg_inline(svg: str) -> str:
    return f'<div class="fig">{svg}</div>'


def run_page(
    source: Path,
    tables: Sequence[Table],
    p_sweep_svg: str,
    swing_svg: str | None,
    docs: Sequence[SessionDoc],
    *,
    manifest: Mapping[str, Any] | None = None,
    card: str | None = None,
    skipped: Sequence[str] = (),
    paper: Sequence[Table] = (),
    shared_notes: Sequence[str] = (),
    figures: Sequence[str] = (),
) -> str:
    """The page of a run: its metrics, the paper's Table 1 and Table 2 (``paper``), figures, a list of its
    sessions, and every session as a section. ``shared_notes``: the lines every table's note ends with
    (what the metrics leave out, service.metrics.Report.notes), said once above the tables. ``figures``:
    the SVG of each figure shown after the p sweep and swing (service.metrics.figures)."""
    manifest = manifest or {}
    run_id = str(manifest.get("run_id") or source.name)
    title = f"beavertui run {run_id}"
    out = [f'<div id="overview"><h1>{_e(title)}</h1>']
    facts = []
    for key in ("name", "created", "tool_version", "corpus"):
        if manifest.get(key):
            facts.append(f"{key.replace('_', ' ')}: {_e(manifest[key])}")
    facts.append(f"{len(docs)} sessions")
    out.append('<p class="dim">' + " · ".join(facts) + "</p>")
    if manifest.get("command"):
        out.append(f'<pre class="dim small text">{_e(manifest["command"])}</pre>')
    out.append('<div class="metrics"><h2 id="metrics">Metrics</h2>')
    out.append(shared_html(shared_notes))
    out += [table_html(t, shared_notes) for t in tables]
    if paper:
        out.append('<h2 id="paper">The paper\'s Table 1 and Table 2</h2>')
        out += [table_html(t, shared_notes) for t in paper]
    out.append('<h2 id="figures">Figures</h2>')
    out.append(_svg_inline(p_sweep_svg))
    if swing_svg is not None:
        out.append(_svg_inline(swing_svg))
    else:
        out.append(
            '<p class="note">No swing: the run holds one protocol per model, so no protocol axis varies.</p>'
        )
    out += [_svg_inline(svg) for svg in figures]
    if card:
        out.append(f'<details><summary>Evaluation card</summary><pre class="card">{_e(card)}</pre></details>')
    out.append("</div>")
    out.append(f'<h2 id="sessions">Sessions ({len(docs)})</h2>')
    out.append(
        '<div class="wide"><table class="index"><tr><th>task</th><th>model</th><th>protocol</th><th>sample</th>'
        "<th>track</th><th>ended</th><th>best speedup</th><th></th></tr>"
    )
    keys = [f"s{n}" for n in range(len(docs))]
    for key, doc in zip(keys, docs, strict=True):
        st = doc.state
        h = st.header
        track = "".join(
            f'<span class="mini" title="{a.iteration}: {_e(a.verdict.category if a.verdict else a.stage)}" '
            f'style="background:{colour(a.verdict.category if a.verdict else None, a.verdict.success if a.verdict else True)}"></span>'
            for a in st.attempts
        )
        ended: str = (
            stop_text(st.end.stop_reason, st.end.success, st.end.timing_pending) if st.end else "unfinished"
        )
        if doc.problem:
            ended += " (damaged)"
        cls = "green" if st.success else ("red" if ended == FAILED_GATE else "dim")
        gone = ""
        if doc.left_out:  # the whole reason on hover; the tables' left-out box lists the task too
            cls = "dim"
            gone = f' <span class="red" title="{_e(doc.left_out)}">· left out of every rate</span>'

        out.append(
            f'<tr><td><a href="#{key}">{_e(h.task.id)}</a></td><td>{_e(h.model.name)}</td>'
            f"<td>{_e(h.protocol.short())}</td><td>{h.sample}</td><td>{track}</td>"
            f'<td class="{cls}">{_e(ended)}{gone}</td><td>{speed(st.best_speedup)}</td>'
            f'<td><a href="#{key}">open</a></td></tr>'
        )
    out.append("</table></div>")
    out.append(
        '<p class="note">track: one square per iteration, in the colour of its outcome category (its name on '
        "hover). best speedup: the session's highest over its correct attempts, the expert reference's median "
        "time over the candidate's as the attempt's timing stage measured them (x reference; — where no "
        "correct attempt was timed), whether or not it reached the gate.</p>"
    )
    for line in skipped:
        out.append(f'<p class="red">left out {_e(line)}</p>')
    out.append("</div>")
    out.append(
        '<noscript><p class="red">The sessions of this page are stored compressed: '
        "open it with JavaScript on to read them.</p></noscript>"
    )
    # rendered task by task (the sessions of one task under every model and protocol in a row, so that the
    # highlighted broken start and reference are reused from highlighted_lines' cache), shown in docs' order
    order = sorted(range(len(docs)), key=lambda i: (docs[i].state.header.task.id, i))
    sections = {i: _packed(session_section(docs[i], keys[i], back="#sessions"), keys[i]) for i in order}
    out += [sections[i] for i in range(len(docs))]
    return page(title, "\n".join(out), run=True)


def _packed(section: str, key: str) -> str:
    """A session section stored gzip-compressed (base64) and unpacked by the page when it is opened.

    The panes of every iteration of a run's sessions, with CUDA highlighted inline, are tens of megabytes;
    compressed they fit in a mail attachment. Level 6 (zlib's default): on the sections of a 1,848-session
    grid, 7% larger than level 9 and 4 times faster to write.
    """
    data = base64.b64encode(gzip.compress(section.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    return (
        f'<section class="session packed" id="{_e(key)}"><p class="wait dim">unpacking the session…</p>'
        f'<script type="application/gzip+base64" class="z">{data}</script></section>'
    )


def read_manifest(source: Path) -> dict[str, Any]:
    path = source / "run.json"
    if not path.is_file():
        return {}
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
