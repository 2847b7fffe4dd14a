"""The exported pages in a real headless Chromium (driven over the DevTools protocol, tests/chromium.py).

Checked: the page of every demo session and of the bundled 40-task H200 batch run loads with no console
error, no exception and no request but the file itself; the step buttons, the timeline, the keys and the
mode buttons change what the panes show (DOM text read before and after); a session of the run opens from
the run's list and steps the same way. The screenshot of a demo session is compared with a stored PNG
(tests/data/html/repair_in_three.png) by the mean colour of 8x8 blocks, with a tolerance for anti-aliasing
that a moved or recoloured element exceeds (shown by a screenshot of another iteration, which must fail
the same comparison), and structurally: the current timeline cell is drawn in its category's colour.

Chromium comes from the distribution's packages (.ci/run installs it). Where it is missing these tests are
skipped, except under CI, where a missing browser is a failure. Set BEAVERTUI_UPDATE_PAGE_SNAPSHOT=1 to
write the stored screenshot again after a deliberate change of the page.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.store import read_session
from beavertui.reports import html
from tests.chromium import Browser, find_chromium
from tests.png import decode, differing_blocks

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
SNAPSHOT = ROOT / "tests" / "data" / "html" / "repair_in_three.png"
#: Share of 8x8 blocks allowed to differ (by more than 24 of 255 in a channel) from the stored screenshot.
TOLERANCE = 0.01

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        message = "no Chromium on this machine (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: the browser tests must run in CI", pytrace=False)
        pytest.skip(message)
    with Browser(binary, width=1280, height=900) as b:
        yield b


def export(source: Path, out: Path) -> Path:
    assert main(["export", str(source), "--html", "-o", str(out)]) == 0
    return out


def load(b: Browser, page: Path) -> None:
    b.events.clear()
    b.open(page)
    b.wait_for("'shown' in document.body.dataset")


def visible(b: Browser, pane: str) -> str:
    """The text a reader sees in a pane of the open session (hidden iterations and modes left out)."""
    return b.evaluate(
        "(() => { const s = document.querySelector('section.session.open') || "
        "document.querySelector('html:not(.run-page) section.session');"
        f" return s.querySelector('.pane.{pane}').innerText; }})()"
    )


def cursor(b: Browser) -> int:
    return int(
        b.evaluate(
            "(document.querySelector('section.session.open') || document.querySelector('section.session'))"
            ".dataset.cursor"
        )
    )


def assert_clean(b: Browser, page: Path) -> None:
    assert b.problems() == []
    assert set(b.requests()) == {page.resolve().as_uri()}


def test_the_harness_sees_console_errors_exceptions_and_requests(browser: Browser, tmp_path: Path) -> None:
    """Positive control: what the clean-load checks look for is seen when it happens."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>console.error('boom');"
        "fetch('http://127.0.0.1:9/nothing').catch(() => {});"
        "setTimeout(() => { throw new Error('uncaught here'); }, 0);</script></body></html>"
    )
    browser.events.clear()
    browser.open(page)
    browser.evaluate("new Promise(r => setTimeout(r, 200))", await_promise=True)
    problems = " ".join(browser.problems())
    assert "boom" in problems and "uncaught here" in problems
    assert "http://127.0.0.1:9/nothing" in browser.requests()
    # and the exported page's policy refuses a load that something injected into it would try
    exported = export(DEMO / "repair_in_three.jsonl", tmp_path / "page.html")
    load(browser, exported)
    assert browser.problems() == []
    browser.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<img src=\"http://127.0.0.1:9/x.png\">')"
    )
    browser.evaluate("new Promise(r => setTimeout(r, 300))", await_promise=True)
    problems = browser.problems()
    assert any("Content Security Policy" in p for p in problems)
    assert any("'blockedReason': 'csp'" in p for p in problems)  # the request was refused, not sent


@pytest.mark.parametrize("name", sorted(p.name for p in DEMO.glob("*.jsonl")))
def test_demo_session_page_loads_cleanly(browser: Browser, tmp_path: Path, name: str) -> None:
    page = export(DEMO / name, tmp_path / "page.html")
    load(browser, page)
    header, events, _ = read_session(DEMO / name)
    assert header is not None
    last = max(e.iteration for e in events if hasattr(e, "iteration"))
    assert cursor(browser) == last
    assert browser.evaluate("document.querySelectorAll('.pane').length") == 5
    assert header.task.id in browser.evaluate("document.querySelector('.header').innerText")
    assert_clean(browser, page)


def test_step_buttons_timeline_and_keys_move_the_panes(browser: Browser, tmp_path: Path) -> None:
    page = export(DEMO / "repair_in_three.jsonl", tmp_path / "page.html")
    load(browser, page)
    assert cursor(browser) == 3
    before = {p: visible(browser, p) for p in ("p-diff", "p-log", "p-speed", "p-stag")}
    assert "iteration 3 against iteration 2" in before["p-diff"]
    assert "PASSED" in before["p-log"]
    assert browser.evaluate("document.querySelector('[data-step=\"1\"]').disabled") is True

    browser.click('[data-step="-1"]')
    assert cursor(browser) == 2
    after = {p: visible(browser, p) for p in before}
    assert "iteration 2 against iteration 1" in after["p-diff"]
    for p in before:
        assert after[p] != before[p], p
    assert "3:" not in after["p-stag"].split("hashes", 1)[1].split("track", 1)[0]
    assert browser.evaluate("document.querySelector('.steps .cur').textContent") == "2"

    browser.click('.timeline [data-go="1"]')
    assert cursor(browser) == 1
    assert "iteration 1 against broken start" in visible(browser, "p-diff")
    assert browser.evaluate("document.querySelector('[data-step=\"first\"]').disabled") is True

    browser.key("ArrowRight", "ArrowRight", 39)
    assert cursor(browser) == 2
    browser.key("End", "End", 35)
    assert cursor(browser) == 3
    browser.click('svg.bars [data-go="1"] rect.hl')
    assert cursor(browser) == 1
    assert_clean(browser, page)


def test_mode_buttons_switch_diff_log_and_sanitizer_views(browser: Browser, tmp_path: Path) -> None:
    page = export(DEMO / "sanitizer_only.jsonl", tmp_path / "page.html")
    load(browser, page)
    browser.click('[data-step="first"]')
    assert "against broken start" in visible(browser, "p-diff")
    browser.click('[data-diff="reference"]')
    assert "against reference" in visible(browser, "p-diff")
    browser.click('[data-diff="file"]')
    assert "at iteration 1" in visible(browser, "p-diff")
    classified = visible(browser, "p-log")
    assert "signature" in classified
    browser.click('[data-log="raw"]')
    raw = visible(browser, "p-log")
    assert "signature" not in raw and "sanitize" in raw
    san = visible(browser, "p-san")
    assert "memcheck" in san and "Invalid" in san
    browser.click('[data-tool="racecheck"]')
    assert "Invalid" not in visible(browser, "p-san")
    assert_clean(browser, page)


def test_session_page_reads_without_javascript(browser: Browser, tmp_path: Path) -> None:
    """A mail reader that runs no script still shows every iteration, one after another."""
    page = export(DEMO / "repair_in_three.jsonl", tmp_path / "page.html")
    browser.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=True)
    try:
        browser.events.clear()
        browser.open(page)
        assert browser.evaluate("document.documentElement.classList.contains('js')") is False
        diff = browser.evaluate("document.querySelector('.pane.p-diff').innerText")
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", {"value": False}, session=True)
    for it, against in ((1, "broken start"), (2, "iteration 1"), (3, "iteration 2")):
        assert f"iteration {it}\n" in diff and f"iteration {it} against {against}" in diff
    assert browser.problems() == []


def test_h200_batch_run_page_loads_and_its_sessions_step(
    browser: Browser, exported_run40: tuple[Path, Path]
) -> None:
    _run, page = exported_run40
    load(browser, page)
    assert browser.evaluate("document.body.dataset.shown") == ""
    text = browser.evaluate("document.getElementById('overview').innerText")
    assert "Repair rates per model and protocol" in text and "pass@k by speedup threshold p" in text
    assert browser.evaluate("document.querySelectorAll('#overview svg polyline').length") >= 1
    # every figure of the run: the p sweep, swing (its own p sweep), how sessions ended, the repairs'
    # speedups, the feedback and history lines (saying no run varies them) and the ranks
    assert "How sessions ended" in text and "Speedups of correct repairs" in text
    assert "No runs vary the feedback level, the history window or the few-shot examples." in text
    assert "No two protocols with two models in common" in text  # one model: no ranks to draw
    assert browser.evaluate("document.querySelectorAll('#overview div.fig > svg').length") == 6
    links = browser.evaluate("[...document.querySelectorAll('table.index a[href^=\"#s\"]')].length")
    assert links == 2 * 40
    assert browser.evaluate("document.querySelectorAll('section.session.packed').length") == 40

    task = browser.evaluate("document.querySelector('table.index tr:nth-child(5) td a').textContent")
    browser.click("table.index tr:nth-child(5) td a")
    shown = browser.wait_for("document.body.dataset.shown")
    assert browser.evaluate("getComputedStyle(document.getElementById('overview')).display") == "none"
    sec = f"document.getElementById('{shown}')"
    assert browser.evaluate(f"{sec}.classList.contains('open')") is True
    assert task in browser.evaluate(f"{sec}.querySelector('.header').innerText")
    assert cursor(browser) == 5
    before = visible(browser, "p-log")
    browser.click(f"#{shown} [data-step='-1']")
    assert cursor(browser) == 4
    assert visible(browser, "p-log") != before
    browser.key("ArrowLeft", "ArrowLeft", 37)
    assert cursor(browser) == 3

    browser.click(f"#{shown} a.back")
    browser.wait_for("document.body.dataset.shown === ''")
    assert browser.evaluate("getComputedStyle(document.getElementById('overview')).display") == "block"
    assert_clean(browser, page)


def test_session_screenshot_matches_the_stored_one(browser: Browser, tmp_path: Path) -> None:
    page = export(DEMO / "repair_in_three.jsonl", tmp_path / "page.html")
    load(browser, page)
    shot = browser.screenshot()
    if os.environ.get("BEAVERTUI_UPDATE_PAGE_SNAPSHOT"):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_bytes(shot)
    img = decode(shot)
    stored = decode(SNAPSHOT.read_bytes())
    (tmp_path / "shot.png").write_bytes(shot)
    share = differing_blocks(img, stored)
    assert share <= TOLERANCE, (
        f"{share:.1%} of the page differs from {SNAPSHOT.name} (see {tmp_path / 'shot.png'})"
    )

    # structure: the framed timeline cell is the cursor's, drawn in its category's colour
    box = browser.evaluate(
        "(() => { const r = document.querySelector('.timeline .cell.here').getBoundingClientRect();"
        " return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]; })()"
    )
    x, y, w, h = box
    assert img.at(x + w - 6, y + h // 2 + 2) == _rgb(html.colour("passed", True))
    assert img.at(x + w // 2, y + 1) == _rgb("#f0c674")  # the cursor's frame

    # a change of the page fails the same comparison: the first iteration shown instead of the last
    browser.click('[data-step="first"]')
    other = decode(browser.screenshot())
    assert differing_blocks(other, stored) > TOLERANCE
    box1 = browser.evaluate(
        "(() => { const r = document.querySelector('.timeline .cell.here').getBoundingClientRect();"
        " return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]; })()"
    )
    assert box1[0] < x
    browser.click('[data-step="last"]')
    assert differing_blocks(decode(browser.screenshot()), stored) <= TOLERANCE


class _Reports:
    """Collects the reports of a pytest run made inside this one."""

    def __init__(self) -> None:
        self.reports: list[pytest.TestReport] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_missing_browser_fails_under_ci_and_skips_elsewhere(
    tmp_path: Path, ci: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest run in this process (no new interpreter, no workers) on the page tests, with the browser
    pointed at a file that does not exist."""
    monkeypatch.setenv("BEAVERTUI_CHROMIUM", str(tmp_path / "no-chromium"))
    if ci:
        monkeypatch.setenv("CI", ci)
    else:
        monkeypatch.delenv("CI", raising=False)
    seen = _Reports()
    args = ["-q", "-rs", "-n", "0", "--rootdir", str(ROOT)]
    # plugins the page tests do not use stay with the outer run (some keep files of their own per session)
    for plugin in ("cacheprovider", "asyncio", "textual-snapshot", "syrupy", "benchmark"):
        args += ["-p", f"no:{plugin}"]
    code = pytest.main([*args, f"{__file__}::test_demo_session_page_loads_cleanly"], plugins=[seen])
    reports = seen.reports
    assert len({r.nodeid for r in reports}) == len(list(DEMO.glob("*.jsonl"))) > 0
    assert not [r for r in reports if r.passed and r.when == "call"]
    if ci:
        failed = [r for r in reports if r.failed]
        assert code == pytest.ExitCode.TESTS_FAILED and failed, code
        assert all("the browser tests must run in CI" in r.longreprtext for r in failed)
    else:
        skipped = [r for r in reports if r.skipped]
        assert code == pytest.ExitCode.OK and len(skipped) == len({r.nodeid for r in reports}), code
        assert all("no Chromium on this machine" in str(r.longrepr) for r in skipped)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    v = hex_colour.lstrip("#")
    return int(v[0:2], 16), int(v[2:4], 16), int(v[4:6], 16)


#: Elements that reach past the right edge of the page or of the box they sit in (a box that scrolls, as
#: a wide table's or a pane's, holds what is inside it).
SPILL = """(() => {
  const W = document.documentElement.clientWidth, out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || getComputedStyle(e).display === 'none') continue;
    let p = e.parentElement, box = null;
    while (p && !box) { if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) box = p; p = p.parentElement; }
    const right = box ? box.getBoundingClientRect().right : W;
    if (r.right > right + 1 && !(box && e.closest('pre, .code, table, svg'))) out.push(e.tagName + '.' + e.className);
  }
  return out;
})()"""


def test_pages_fit_800_px_and_print_dark_on_light(
    browser: Browser, tmp_path: Path, exported_run40: tuple[Path, Path]
) -> None:
    """At 800 px nothing spills past the page or its pane (the figures shrink, the sessions' list scrolls
    in its box, a pane's mode buttons wrap); printed, the page is dark text on white with no pane cut at
    its screen height, and the run's tables fit the width of an A4 page (718 px): a box that scrolls on
    screen would cut them on paper."""
    _run, run_page = exported_run40
    session = export(DEMO / "repair_in_three.jsonl", tmp_path / "page.html")
    metrics = {"width": 800, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.call("Emulation.setDeviceMetricsOverride", metrics, session=True)
    try:
        load(browser, run_page)
        assert browser.evaluate("document.documentElement.scrollWidth") == 800
        assert browser.evaluate(SPILL) == []
        browser.click("table.index tr:nth-child(2) td a")
        browser.wait_for("document.body.dataset.shown")
        assert browser.evaluate(SPILL) == []
        load(browser, run_page)
        browser.call("Emulation.setDeviceMetricsOverride", {**metrics, "width": 718}, session=True)
        browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=True)
        assert browser.evaluate("document.documentElement.scrollWidth") == 718
        assert browser.evaluate("[...document.querySelectorAll('table')].every(t => t.scrollWidth <= 718)")
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=True)
        browser.call("Emulation.setDeviceMetricsOverride", metrics, session=True)
        load(browser, session)
        assert browser.evaluate("document.documentElement.scrollWidth") == 800
        assert browser.evaluate(SPILL) == []
        browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=True)
        style = "getComputedStyle(document.{}).{}"
        assert browser.evaluate(style.format("body", "color")) == "rgb(0, 0, 0)"
        assert browser.evaluate(style.format("body", "backgroundColor")) == "rgb(255, 255, 255)"
        assert browser.evaluate(style.format("querySelector('.pane')", "maxHeight")) == "none"
        assert browser.evaluate(style.format("querySelector('.steps')", "display")) == "none"
    finally:
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=True)
        browser.call("Emulation.clearDeviceMetricsOverride", session=True)
    assert_clean(browser, session)


def printed_pages(b: Browser) -> int:
    """The pages of the page printed as Chromium prints it (Page.printToPDF fires beforeprint and
    afterprint, as a print does)."""
    pdf = base64.b64decode(b.call("Page.printToPDF", {}, session=True)["data"])
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def test_the_evaluation_card_folded_on_screen_prints_open(
    browser: Browser, exported_run40: tuple[Path, Path]
) -> None:
    """The run page's evaluation card sits folded in a <details> on screen. Under print media its whole text
    is shown (innerText, which leaves out what is not rendered, was empty before: a folded section did not
    print); in a real print (printToPDF) every <details> is open when the page is laid out for paper, and
    folded again after; and removing the card's text from the page takes a page off the printed PDF, so
    the text filled paper."""
    _run, page = exported_run40
    found = re.search(r'<pre class="card">(.*?)</pre>', page.read_text(encoding="utf-8"), re.S)
    assert found is not None
    card_text = unescape(found.group(1)).strip()
    assert card_text.startswith("# Evaluation card") and "Run id:" in card_text
    load(browser, page)
    card = "document.querySelector('pre.card')"
    folds = "[...document.querySelectorAll('details')].map(d => d.open)"
    on_screen = browser.evaluate(folds)
    assert on_screen and not any(on_screen)
    assert browser.evaluate(f"{card}.innerText") == ""
    browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=True)
    try:
        assert browser.evaluate(f"{card}.innerText").strip() == card_text
    finally:
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=True)
    assert browser.evaluate(f"{card}.innerText") == ""  # folded on screen again

    browser.evaluate(
        f"window.seenInPrint = []; addEventListener('beforeprint', () => seenInPrint.push({folds}))"
    )
    with_card = printed_pages(browser)
    assert browser.evaluate("seenInPrint") == [[True] * len(on_screen)]
    assert browser.evaluate(folds) == on_screen
    browser.evaluate(f"{card}.remove()")
    assert printed_pages(browser) < with_card
    assert_clean(browser, page)
