"""`--format latex`: what a table says in words prints as written under LaTeX's default font encoding.

In OT1 (pdflatex without fontenc) a bare ``<``, ``>`` or ``|`` in text prints as ``¡``, ``¿`` or an em
dash, so "iteration >= 2" in a note read "iteration ¿= 2"; each is written as its text command.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.reports.cells import Rate, Table
from beavertui.reports.render import latex

ROOT = Path(__file__).resolve().parents[2]


def _text_outside_math(tex: str) -> str:
    return re.sub(r"\$[^$]*\$", "", tex)


def test_angle_brackets_and_bars_are_text_commands() -> None:
    t = Table(
        title="pass@k (>= marks a lower bound)",
        columns=("model", "a|b"),
        rows=(("m<1>", Rate(0.5, 0.4, 0.6, lower_bound=True)),),
        note="first successes at iteration >= 2; speedup < 1.0\nx | y",
    )
    tex = latex([t])
    assert (
        r"\textgreater{}= marks" in tex and r"a\textbar{}b" in tex and r"m\textless{}1\textgreater{}" in tex
    )
    assert r"iteration \textgreater{}= 2; speedup \textless{} 1.0" in tex and r"x \textbar{} y" in tex
    assert r"$\geq$50.0" in tex  # a lower bound keeps its math sign
    assert not re.search(r"[<>|]", _text_outside_math(tex))


def test_the_metrics_of_a_real_run_hold_no_bare_angle_bracket(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(ROOT / "tests" / "data" / "h200_batch_run"), "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    assert r"iteration \textgreater{}= 2" in tex
    assert not re.search(r"[<>|]", _text_outside_math(tex))
