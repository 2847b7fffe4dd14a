"""`metrics --plots`: the SVG figures clip nothing and keep identical curves apart, measured in a real
headless Chromium (tests/chromium.py): every text's drawn box lies inside the figure, legend entries do
not overlap, and curves that coincide are drawn with their own dash, marker and a small offset.

The run is a gate sweep made here (scripted model, recorded toolchain): its three in-loop gates 0.5, 0.7
and 1.0 give one identical p-sweep curve, and every label is long.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.cli import main
from tests.chromium import Browser, find_chromium
from tests.gate_session import CORPUS, RECORDED

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plots")
    argv = ["batch", "--corpus", str(CORPUS), "--models", "scripted:vec_scale_demo.toml"]
    argv += ["--toolchain", RECORDED, "--sessions-dir", str(root), "--run-id", "gate", "--protocol", "gate"]
    # 3: at p = 1 (in the loop) the three-reply script runs out, and that session has no verdict; cut with
    # budget left, it is in no rate unless asked for, as here, to keep four curves, three of them one
    assert main([*argv, "--quiet"]) == 3
    metrics = ["metrics", str(root / "gate"), "--plots", str(root / "svg"), "--format", "md"]
    assert main([*metrics, "--include-unfinished"]) == 0
    return root / "svg"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        message = "no Chromium on this machine (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: the browser tests must run in CI", pytrace=False)
        pytest.skip(message)
    with Browser(binary, width=1400, height=900) as b:
        yield b


BOXES = """(() => {
  const svg = document.querySelector('svg');
  const [, , w, h] = svg.getAttribute('viewBox').split(' ').map(Number);
  const texts = [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBBox();
    return {text: t.textContent, legend: t.classList.contains('legend'), x: b.x, y: b.y, w: b.width, h: b.height};
  });
  return JSON.stringify({w, h, texts});
})()"""


def test_the_sweep_legend_is_whole_and_identical_curves_stay_apart(plots: Path, browser: Browser) -> None:
    svg = (plots / "p_sweep.svg").read_text()
    browser.open(plots / "p_sweep.svg")
    got = json.loads(browser.evaluate(BOXES))
    legend = [t for t in got["texts"] if t["legend"]]
    assert len(legend) == 4 and all(
        "scripted:vec_scale_demo.toml | iterative K5" in t["text"] for t in legend
    )
    for t in got["texts"]:  # nothing drawn outside the figure
        assert t["x"] >= 0 and t["y"] >= 0, t
        assert t["x"] + t["w"] <= got["w"] and t["y"] + t["h"] <= got["h"], t
    for a, b in itertools.pairwise(legend):  # one legend line under the other
        assert a["y"] + a["h"] <= b["y"] + 1, (a, b)
    # gates 0.5, 0.7 and 1.0 gave one curve: said in the legend, each drawn distinguishably
    same = [t["text"] for t in legend if "same curve as" in t["text"]]
    assert len(same) == 2 and all("same curve as 2" in s for s in same)
    lines = [dict(re.findall(r'([a-z-]+)="([^"]*)"', tag)) for tag in re.findall(r"<polyline [^>]*>", svg)]
    assert len(lines) == 4
    assert len({ln["points"] for ln in lines}) == 4  # no two curves drawn on the same pixels
    assert len({ln["stroke"] for ln in lines}) == 4
    assert len({ln.get("stroke-dasharray", "") for ln in lines}) == 4  # solid, dashed, dotted, dash-dot


def test_the_swing_labels_are_whole(plots: Path, browser: Browser) -> None:
    browser.open(plots / "swing.svg")
    got = json.loads(browser.evaluate(BOXES))
    labels = [t for t in got["texts"] if "| gate" in t["text"]]
    assert len(labels) == 5 and len({t["text"] for t in labels}) == 5  # told apart, not five "gate"
    for t in got["texts"]:
        assert t["x"] >= 0 and t["x"] + t["w"] <= got["w"], t


@pytest.mark.parametrize("name", ["stagnation_modes.svg", "speedups.svg", "levels.svg", "ranks.svg"])
def test_the_other_figures_clip_nothing(plots: Path, browser: Browser, name: str) -> None:
    """How sessions ended and the speedups of repairs: every label, legend entry and note inside the
    figure, and the notes' lines one under the other."""
    browser.open(plots / name)
    got = json.loads(browser.evaluate(BOXES))
    assert len(got["texts"]) >= 3  # the title, the plot's (or the line saying there is none), a note
    for t in got["texts"]:
        assert t["x"] >= 0 and t["y"] >= 0, t
        assert t["x"] + t["w"] <= got["w"] and t["y"] + t["h"] <= got["h"], t
    notes = [
        t
        for t in got["texts"]
        if t["text"].startswith(("Each bar", "Per group", "Left out", "pass@k at", "Rank 1"))
    ]
    assert notes


def test_the_level_lines_and_the_ranks_clip_nothing(tmp_path: Path, browser: Browser) -> None:
    """Three models over the feedback levels and the history windows (tests/reports/axis_runs.py): their
    lines and their rank charts."""
    from tests.reports.axis_runs import axis_table

    plots = tmp_path / "svg"
    assert (
        main(["metrics", str(axis_table(tmp_path)), "--plots", str(plots), "-o", str(tmp_path / "m.md")]) == 0
    )
    # levels: three models on each axis; ranks: three models in each of nine charts
    for name, n_legend in (("levels.svg", 6), ("ranks.svg", 27)):
        browser.open(plots / name)
        got = json.loads(browser.evaluate(BOXES))
        legend = [t for t in got["texts"] if t["legend"]]
        assert len(legend) == n_legend, name
        for t in got["texts"]:
            assert t["x"] >= 0 and t["y"] >= 0, t
            assert t["x"] + t["w"] <= got["w"] and t["y"] + t["h"] <= got["h"], t
        for a, b in itertools.pairwise(legend):
            assert a["y"] + a["h"] <= b["y"] + 1, (a, b)


def test_the_few_shot_lines_clip_nothing(tmp_path: Path, browser: Browser) -> None:
    """Three models over none and matched/random/curated x K1/3/5 (tests/reports/axis_runs.py): the few-shot
    panel's ticks, the strategies' names under them and its legend inside the figure, none overlapping."""
    from tests.reports.axis_runs import few_shot_table

    plots = tmp_path / "svg"
    source = str(few_shot_table(tmp_path))
    assert main(["metrics", source, "--plots", str(plots), "-o", str(tmp_path / "m.md")]) == 0
    browser.open(plots / "levels.svg")
    got = json.loads(browser.evaluate(BOXES))
    for t in got["texts"]:
        assert t["x"] >= 0 and t["y"] >= 0, t
        assert t["x"] + t["w"] <= got["w"] and t["y"] + t["h"] <= got["h"], t
    legend = [t for t in got["texts"] if t["legend"]]
    assert len(legend) == 3
    for a, b in itertools.pairwise(legend):
        assert a["y"] + a["h"] <= b["y"] + 1, (a, b)
    ticks = [t for t in got["texts"] if re.fullmatch(r"none|K\d", t["text"])]
    names = [t for t in got["texts"] if t["text"] in ("matched", "random", "curated")]
    assert len(ticks) == 10 and len(names) == 3
    for a, b in itertools.pairwise(ticks):
        assert a["x"] + a["w"] <= b["x"], (a, b)
    assert min(n["y"] for n in names) >= max(t["y"] + t["h"] for t in ticks) - 1
    # the texts above the panel (the feedback and history panels' "no runs" lines) clear its y label
    label = next(t for t in got["texts"] if t["text"] == "pass@k (%)")
    above = [t for t in got["texts"] if t["text"].startswith("No runs of one model")]
    assert max(t["y"] + t["h"] for t in above) <= label["y"]
