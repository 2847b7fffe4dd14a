"""`beavertui export --html`: the page's content, its self-containment, escaping, and the command's errors.

The pages are opened in a real browser by test_html_browser.py; here the HTML itself is checked.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.events import Candidate
from beavertui.engine.session.store import SessionWriter, read_session
from beavertui.reports import html

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
FULL_RUN = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"


def export(tmp_path: Path, source: Path, name: str = "page.html") -> str:
    out = tmp_path / name
    assert main(["export", str(source), "--html", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def unpack(page: str) -> dict[str, str]:
    """The packed session sections of a run page, by id."""
    found = re.findall(
        r'<section class="session packed" id="([^"]+)">.*?<script type="application/gzip\+base64" class="z">'
        r"([^<]+)</script></section>",
        page,
    )
    return {key: gzip.decompress(base64.b64decode(data)).decode() for key, data in found}


def assert_self_contained(page: str) -> None:
    """Nothing the browser would fetch: no src, no external href, no CSS url() or @import."""
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<[^>]*\ssrc\s*=", page)
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") or h == "data:," for h in hrefs), sorted(set(hrefs))[:5]
    assert "url(" not in page and "@import" not in page
    assert '<link rel="stylesheet"' not in page


def test_the_html_report_imports_no_terminal_library() -> None:
    code = (
        "import sys, beavertui.reports.html, beavertui.commands.export\n"
        "print(','.join(sorted(n for n in sys.modules if n.split('.')[0] in ('textual', 'rich'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_session_page_holds_every_pane_of_every_iteration(tmp_path: Path) -> None:
    page = export(tmp_path, DEMO / "sanitizer_only.jsonl")
    assert_self_contained(page)
    header, events, problem = read_session(DEMO / "sanitizer_only.jsonl")
    assert header is not None and problem is None
    for pane in ("p-diff", "p-log", "p-san", "p-speed", "p-stag"):
        body = page.split(f'<div class="pane {pane}">', 1)[1]
        assert body.count('<div data-it="1">') >= 1 and '<div data-it="2">' in body, pane
    # the sanitizer records of iteration 1, grouped by kind, with the kernel and the thread
    sanitized = next(e for e in events if e.kind == "sanitize")
    rec = sanitized.records[0]
    same = [r for r in sanitized.records if r.kind == rec.kind]
    size = f" of size {rec.size}" if rec.size else ""
    assert f"{html.escape(rec.kind)}{size} ×{len(same)}</div>" in page
    assert html.escape(rec.thread or "") in page
    # the classified log marks the decisive lines
    verdict = next(e for e in events if e.kind == "verdict")
    assert verdict.decisive and f'<mark class="decisive">{html.escape(verdict.decisive[0].strip())}' in page
    # the diff is CUDA highlighted by pygments with inline styles: a keyword of the language has a colour
    assert re.search(r'<span style="color: #[0-9A-Fa-f]{6}">__global__</span>', page)
    assert '<span class="add">' in page and '<span class="del">' in page
    # the speedup pane shows the gate and the measured speedup of the timed iteration
    timed = next(e for e in events if e.kind == "timing")
    assert f"gate {header.protocol.gate:g}x" in page and f"{timed.result.speedup:.2f}x" in page
    # the stagnation pane lists the four detectors and the track
    for d in ("duplicate_code", "code_cycle", "category_oscillation", "no_progress"):
        assert d in page
    assert "ILLEGAL MEMORY ACCESS" in page and "track" in page


def test_stagnation_pane_is_as_of_each_iteration(tmp_path: Path) -> None:
    """A detector that fired after iteration n shows as fired from n on, and armed before it."""
    page = export(tmp_path, DEMO / "code_cycle.jsonl")
    _header, events, _ = read_session(DEMO / "code_cycle.jsonl")
    stalls = [e for e in events if e.kind == "stalled"]
    assert stalls
    first = min(s.iteration for s in stalls)
    stag = page.split('<div class="pane p-stag">', 1)[1].split('<div class="pane', 1)[0]
    blocks = dict(
        re.findall(r'<div data-it="(\d+)">(.*?)(?=<div data-it="|</div>\s*</div>\s*</section>)', stag, re.S)
    )
    assert f"fired after it{first}" in blocks[str(first)]
    if first > 1:
        assert "fired after" not in blocks[str(first - 1)]


def test_hostile_model_output_is_escaped(tmp_path: Path) -> None:
    header, events, _ = read_session(DEMO / "repair_in_three.jsonl")
    assert header is not None
    evil = '</pre><script>alert("x")</script><img src=x onerror=alert(1)> "quotes" & ampersand'
    changed = [
        e.model_copy(update={"code": (e.code or "") + "\n// " + evil + "\n"})
        if isinstance(e, Candidate)
        else e
        for e in events
    ]
    path = tmp_path / "evil.jsonl"
    with SessionWriter(path, header) as w:
        for e in changed:
            w.append(e)
    page = export(tmp_path, path)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert" in page
    assert page.count("<script>") == 1  # the page's own script only
    assert_self_contained(page)


@pytest.mark.slow
def test_run_page_links_every_session_and_shows_the_metrics(
    exported_run40: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, path = exported_run40
    page = path.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert len(page.encode()) < 8_000_000  # fits a mail attachment
    assert main(["metrics", str(run), "--json"]) == 0
    group = json.loads(capsys.readouterr().out)["groups"][0]
    # the main table's pass@1 and pass@k with their intervals
    assert f'<td class="num">{100 * group["pass@k"]:.1f} <small>[' in page
    assert f'<td class="num">{100 * group["pass@1"]:.1f} <small>[' in page
    assert "pass@k by speedup threshold p" in page and "<svg" in page and "<polyline" in page
    sections = unpack(page)
    files = sorted(run.rglob("*__s*.jsonl"))
    assert len(sections) == len(files) == 40
    links = set(re.findall(r'<a href="#(s\d+)">open</a>', page))
    assert links == set(sections)
    tasks = {read_session(p)[0].task.id for p in files}  # type: ignore[union-attr]
    shown = {re.search(r'<span class="task">([^<]+)</span>', s).group(1) for s in sections.values()}  # type: ignore[union-attr]
    assert shown == tasks
    for s in sections.values():
        assert "<script" not in s and 'class="pane p-speed"' in s and "← all sessions of the run" in s


def test_run_page_keeps_a_damaged_session_and_names_an_unreadable_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("repair_in_three.jsonl", "no_progress.jsonl"):
        (run / name).write_bytes((DEMO / name).read_bytes())
    text = (run / "no_progress.jsonl").read_text()
    (run / "no_progress.jsonl").write_text(text[: len(text) * 2 // 3])  # cut mid-line
    (run / "junk.jsonl").write_text("not json\n")
    page = export(tmp_path, run)
    assert "(damaged)" in page and "junk.jsonl" in page
    sections = unpack(page)
    assert len(sections) == 2
    assert any("damaged file:" in s for s in sections.values())


def test_export_html_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(DEMO / "repair_in_three.jsonl"), "--html", "--csv"]) == 2
    assert "give one" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nothing"), "--html"]) == 2
    assert "no such run directory or session file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["export", str(tmp_path / "empty"), "--html"]) == 2
    assert "no session files" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    assert main(["export", str(bad), "--html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("beavertui: ") and "Traceback" not in err


def test_export_html_to_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(DEMO / "repair_in_three.jsonl"), "--html"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("<!DOCTYPE html>") and out.out.rstrip().endswith("</html>")
    assert "wrote the page of session transpose_00" in out.err


def test_run_page_of_two_protocols_shows_the_swing(tmp_path: Path) -> None:
    """A run holding one model under two feedback levels: the swing table and bars appear on its page.

    The second protocol's sessions are the first one's with the header's feedback level changed, which is
    enough for the page (the metrics are the engine's, tested elsewhere).
    """
    with tarfile.open(FULL_RUN) as tar:
        tar.extractall(tmp_path, filter="data")
    run = tmp_path / "two"
    for f in sorted((tmp_path / "run").rglob("*__s*.jsonl"))[:4]:
        lines = f.read_text().split("\n")
        head = json.loads(lines[0])
        head["protocol"]["feedback"] = "L1"
        for sub, first in (("l3", lines[0]), ("l1", json.dumps(head))):
            (run / sub).mkdir(parents=True, exist_ok=True)
            (run / sub / f.name).write_text("\n".join([first, *lines[1:]]))
    page = export(tmp_path, run)
    assert "Swing of pass@k per protocol axis" in page
    assert "No swing" not in page
    figure = page.split("Swing of pass@k per protocol axis</text>", 1)[1].split("</svg>", 1)[0]
    assert "scripted:@alternate | feedback" in figure
    assert len(unpack(page)) == 8
    assert page.count("iterative K5 L1 H2 T0 p0.7") >= 4 and page.count("iterative K5 L3 H2 T0 p0.7") >= 4


def test_run_page_shows_the_papers_tables_as_metrics_gives_them(
    exported_run40: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Table 1 and Table 2 on the page: the same titles, cells and notes as `metrics --paper`."""
    import html as stdlib_html

    run, path = exported_run40
    page = path.read_text(encoding="utf-8")
    assert '<h2 id="paper">The paper\'s Table 1 and Table 2</h2>' in page
    shown = stdlib_html.unescape(page.split('id="paper"', 1)[1].split('<h2 id="figures">', 1)[0])
    titles = re.findall(r"<h3>(.*?)</h3>", shown)
    cells = [
        re.sub(r"<small>.*?</small>|<[^>]+>", "", c).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", shown)
    ]
    assert main(["metrics", str(run), "--paper", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert titles == re.findall(r"^### (.*)$", md, flags=re.M) and len(titles) == 2
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert cells == [c.strip() for ln in rows for c in ln.strip("|").split("|")] and len(cells) == 40
    for note in ("Percent of the row's tasks", "Departures from the paper:", "Kendall's tau-b (Iter vs Rep)"):
        assert note in shown


def test_a_microsecond_kernels_medians_keep_their_digits(tmp_path: Path) -> None:
    """A release session timed by CUPTI at some 17 microseconds a call: 3 decimals printed both medians as
    0.017 ms beside a speedup of 1.01x; the Speedup pane gives 4 significant digits, so they differ."""
    with tarfile.open(ROOT / "tests" / "data" / "release_batch_final.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if "/cusparse_27__compile_error__" in m.name)
        tar.extractall(tmp_path, members=[member], filter="data")
    (session,) = tmp_path.rglob("cusparse_27__*.jsonl")
    _, events, _ = read_session(session)
    (timing,) = [e.result for e in events if getattr(e, "kind", "") == "timing"]  # type: ignore[attr-defined]
    assert timing.candidate_ms < 0.02 and f"{timing.candidate_ms:.3f}" == f"{timing.reference_ms:.3f}"
    page = export(tmp_path, session)
    shown = [f"{timing.candidate_ms:.4g} ms", f"{timing.reference_ms:.4g} ms"]
    assert shown[0] != shown[1] and all(f"<b>{s}</b>" in page for s in shown)
    assert f"{timing.speedup:.2f}x" in page


def test_run_page_of_few_shot_arms_shows_their_tables_and_lines(tmp_path: Path) -> None:
    """A run holding one model without examples and with matched examples at K 1 and 3 (four sessions each,
    the header's few-shot setting changed): the page has the few-shot tables, and levels.svg a line of the
    model over them, its points the groups' pass@k as `metrics` computes them."""
    from beavertui.service.metrics import compute

    with tarfile.open(FULL_RUN) as tar:
        tar.extractall(tmp_path, filter="data")
    run = tmp_path / "shots"
    for f in sorted((tmp_path / "run").rglob("*__s*.jsonl"))[:4]:
        lines = f.read_text().split("\n")
        for sub, k in (("none", 0), ("m1", 1), ("m3", 3)):
            head = json.loads(lines[0])
            if k:
                head["protocol"].update(few_shot="matched", few_shot_k=k, few_shot_pool=["pool"])
            (run / sub).mkdir(parents=True, exist_ok=True)
            (run / sub / f.name).write_text("\n".join([json.dumps(head), *lines[1:]]))
    pk = {g.protocol.few_shot: g.pass_at_k for g in compute(run).groups}
    assert set(pk) == {"none", "matched_K1", "matched_K3"}
    page = export(tmp_path, run)
    assert "Few-shot axis: pass@k per model and strategy_K" in page
    assert "Few-shot axis: repair rates per model, strategy and K" in page
    figure = page.split("few-shot examples, per model</text>", 1)[1].split("</svg>", 1)[0]
    drawn = dict(
        kv.split("=")
        for values in re.findall(r'data-axis="few_shot" data-series="1" data-values="([^"]+)"', figure)
        for kv in values.split()
    )
    assert {k: float(v) for k, v in drawn.items()} == pytest.approx(pk)
