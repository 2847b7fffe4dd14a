"""The run page of the 77-session release batch (tests/data/release_batch_final.tar.gz): what its tables
leave out is said once in full and folded under each table, every note keeps its lines, and the sessions of
the tasks withdrawn from the run are marked as in no rate, in the list and on their own section.

`metrics` (terminal, Markdown) keeps saying it all under every table: only the page folds the repeats.
"""

from __future__ import annotations

import html as stdlib_html
import json
import re
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from tests.reports.test_html_export import unpack

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "tests" / "data" / "release_batch_final.tar.gz"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def release_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("release")
    with tarfile.open(RELEASE) as tar:
        tar.extractall(root, filter="data")
    page = root / "run.html"
    assert main(["export", str(root / "run"), "--html", "-o", str(page)]) == 0
    return root / "run", page.read_text(encoding="utf-8")


def _text(fragment: str) -> str:
    return stdlib_html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_what_every_table_leaves_out_is_said_once_and_folded_under_each(
    release_page: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run, page = release_page
    assert main(["metrics", str(run), "--format", "md"]) == 0
    md = capsys.readouterr().out
    # the notes every table of `metrics` ends with: the lines all its tables' notes share
    notes = [
        [ln for ln in block.split("\n\n", 1)[1].splitlines() if ln.strip()]
        for block in re.split(r"^### ", md, flags=re.M)[1:]
    ]
    shared = [ln for ln in notes[0] if all(ln in n for n in notes)]
    assert len(shared) == 2 and any("withdrawn" in ln for ln in shared)
    assert any("excluded_tasks" in ln for ln in shared)

    metrics_part = page.split('<h2 id="metrics">', 1)[1].split('<h2 id="figures">', 1)[0]
    box = metrics_part.split('<div class="left-out" id="left-out">', 1)[1].split("</div>", 1)[0]
    assert [_text(li) for li in re.findall(r"<li>(.*?)</li>", box)] == shared
    # outside the box and the folds, no shared line is printed again
    tables = metrics_part.split("</div>", 1)[1]
    folds = re.findall(r'<details class="note shared">(.*?)</details>', tables)
    visible = re.sub(r'<details class="note shared">.*?</details>', "", tables)
    assert not any(ln in _text(visible) for ln in shared)
    # every table still says it, folded: one fold per table, holding every shared line
    titles = re.findall(r"<h3>(.*?)</h3>", tables)
    assert len(folds) == len(titles) == len(notes) + 2  # metrics' tables, then Table 1 and Table 2
    for fold in folds:
        assert [_text(p) for p in re.findall(r"<p>(.*?)</p>", fold)] == shared
        assert "2 notes" in fold and 'href="#left-out"' in fold


def test_a_note_keeps_its_lines(release_page: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Table 2's departures from the paper are a list in `metrics --paper`: one line each on the page."""
    run, page = release_page
    assert main(["metrics", str(run), "--paper", "--format", "md"]) == 0
    md = capsys.readouterr().out
    departures = [ln for ln in md.splitlines() if ln.startswith("- ")]
    assert len(departures) >= 5
    lines = [_text(p) for p in re.findall(r'<p class="note">(.*?)</p>', page)]
    for ln in departures:
        assert ln in lines


def test_sessions_of_withdrawn_tasks_are_marked_in_no_rate(release_page: tuple[Path, str]) -> None:
    run, page = release_page
    withdrawn = json.loads((run / "run.json").read_text())["withdrawn_tasks"]
    index = page.split('<table class="index">', 1)[1].split("</table>", 1)[0]
    # the list's numbers say what they are: the best speedup, how it was measured, in x reference
    assert "<th>best speedup</th>" in index
    after = _text(page.split('<table class="index">', 1)[1].split("</table></div>", 1)[1].split("</p>", 1)[0])
    assert "best speedup:" in after and "median time over the candidate's" in after and "x reference" in after
    rows = {
        m.group(2): m.group(0) for m in re.finditer(r'<tr><td><a href="#(s\d+)">([^<]+)</a>.*?</tr>', index)
    }
    assert len(rows) == 77
    marked = {task for task, row in rows.items() if "left out of every rate" in row}
    assert marked == set(withdrawn) & set(rows) and len(marked) == 3  # the fourth has no session file
    for task in marked:
        why = withdrawn[task]
        assert stdlib_html.escape(why, quote=True) in rows[task]  # the reason, on hover
    sections = unpack(page)
    keys = {task: re.search(r'href="#(s\d+)"', row).group(1) for task, row in rows.items()}  # type: ignore[union-attr]
    for task, key in keys.items():
        banner = "left out of every rate of the run: withdrawn from its run:" in sections[key]
        assert banner == (task in withdrawn), task


def test_the_card_lists_what_every_table_leaves_out(
    release_page: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The evaluation card's Exclusions gave infrastructure failures and flagged successes only: the 3
    sessions of withdrawn tasks, left out of every rate, were in no line of it. It now lists every note
    the tables carry, in `metrics --card` and in the card on the page."""
    run, page = release_page
    card = tmp_path / "card.md"
    assert main(["metrics", str(run), "--card", str(card), "--format", "md"]) == 0
    md = capsys.readouterr().out
    exclusions = card.read_text(encoding="utf-8").split("## Exclusions", 1)[1]
    shared = [ln for ln in md.split("\n\n", 2)[2].split("\n\n", 1)[0].splitlines() if "run.json" in ln]
    assert len(shared) == 2
    for line in shared:
        assert f"- {line}" in exclusions.splitlines()
    on_page = stdlib_html.unescape(page.split('<pre class="card">', 1)[1].split("</pre>", 1)[0])
    assert on_page.split("## Exclusions", 1)[1] == exclusions


def test_browse_marks_the_withdrawn_sessions_and_says_what_its_columns_are(
    release_page: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`browse --format` listed a withdrawn task's session as any failed one ("failed", "budget")."""
    import csv

    run, _ = release_page
    withdrawn = json.loads((run / "run.json").read_text())["withdrawn_tasks"]
    assert main(["browse", str(run), "--format", "csv"]) == 0
    rows = {r["task"]: r for r in csv.DictReader(capsys.readouterr().out.splitlines())}
    marked = {t for t, r in rows.items() if "left out of every rate" in r["stop or problem"]}
    assert marked == set(withdrawn) & set(rows) and len(marked) == 3
    for t in marked:
        assert withdrawn[t] in rows[t]["stop or problem"]
    assert main(["browse", str(run), "--format", "json"]) == 0
    listed = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert {r["task"] for r in listed if r["left_out"]} == marked
    assert main(["browse", str(run), "--format", "md"]) == 0
    assert "best: the highest speedup of a correct attempt" in capsys.readouterr().out


def test_unfinished_and_pending_sessions_are_marked_in_no_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H100 release lane cut by its time budget (docs/data): 26 sessions without an end line and 3
    whose timing the lane had yet to append, all left out of every rate, as the tables say; the page's list
    marks exactly those, each with why, and no finished one."""
    from tests.conftest import extract_run

    archive = ROOT / "docs" / "data" / "h100-2026-12-05-late" / "release-lane" / "lane-out.tgz"
    run = extract_run(archive, tmp_path, "sessions") / "lane"
    page = tmp_path / "lane.html"
    assert main(["export", str(run), "--html", "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    capsys.readouterr()
    index = text.split('<table class="index">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td><a href=\"#s\d+\">([^<]+)</a>.*?</tr>", index)
    marked = re.findall(r'<span class="red" title="([^"]*)">· left out of every rate</span>', index)
    assert len(rows) == 74
    unfinished = [w for w in marked if w.startswith("unfinished, no end line")]
    pending = [w for w in marked if "timing(s) pending" in w]
    assert (len(unfinished), len(pending), len(marked)) == (26, 3, 29)
    assert all(f"beavertui batch --resume {run}" in stdlib_html.unescape(w) for w in marked)
    assert main(["metrics", str(run), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unfinished_sessions"] == 26 and doc["timings_pending"] == 3
    assert doc["groups"][0]["n_tasks"] == 74 - 29


def test_a_lower_bound_is_marked_on_the_page_as_in_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo sessions run an in-loop gate of 0.7: their pass@k above it is a lower bound, printed
    ">=" by metrics and its title's legend; the page printed the bare value."""
    demo = ROOT / "sessions" / "demo"
    page = tmp_path / "demo.html"
    assert main(["export", str(demo), "--html", "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert main(["metrics", str(demo), "--table", "p_sweep", "--format", "md"]) == 0
    md = capsys.readouterr().out
    cells = [
        c.strip() for ln in md.splitlines() if ln.startswith("| scripted") for c in ln.strip("|").split("|")
    ]
    bounds = [re.sub(r" \[.*", "", c) for c in cells if c.startswith(">=")]
    assert len(bounds) == 6 * 4  # six protocols, p = 1.0, 1.5, 2.0, 3.0
    sweep = text.split("pass@k by speedup threshold p", 1)[1].split("</table>", 1)[0]
    shown = [_text(c) for c in re.findall(r'<td class="num">(.*?)<small>', sweep)]
    assert [c.strip() for c in shown if c.startswith(">=")] == bounds
