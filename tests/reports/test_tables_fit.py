"""Human tables fit the page: whole when they can, wrapped at words, or one block per row; never a word cut.

The snapshot is ``beavertui metrics`` on the bundled H200 run at 80 columns (piped, COLUMNS=80), kept in
tests/data/snapshots/metrics_h200_80.txt; set BEAVERTUI_UPDATE_SNAPSHOTS=1 to write it again.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.reports.fit import lines
from beavertui.reports.tables import Rate, Table
from tests.cli_in_process import run_cli
from tests.conftest import extract_run

ROOT = Path(__file__).resolve().parents[2]
RUN_TAR = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"
SNAPSHOT = ROOT / "tests" / "data" / "snapshots" / "metrics_h200_80.txt"


@pytest.fixture(scope="module")
def h200_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(RUN_TAR, tmp_path_factory.mktemp("h200"))


def _cli(*args: str, columns: int | None = 80, **env: str) -> subprocess.CompletedProcess[str]:
    """The command's output through a pipe at ``columns`` (in this process: the page width is what
    ``COLUMNS`` and a non-terminal stdout make it; the real terminal is test_no_color_is_honoured's)."""
    e = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        e["COLUMNS"] = str(columns)
    return run_cli(*args, env={**e, **env}, check=True)


@functools.cache
def _header_words(run: Path) -> set[str]:
    from beavertui.service.metrics import compute, with_tables

    report = with_tables(compute(run))
    shown = [
        c
        for t in report.tables
        for i, c in enumerate(t.columns)
        if any(r[i] not in ("", None) for r in t.rows)
    ]  # a column empty in every row is left out of the terminal table
    return {w for c in shown for w in c.split()}


def test_metrics_of_the_h200_run_at_80_columns(h200_run: Path) -> None:
    out = _cli("metrics", str(h200_run)).stdout
    assert max(len(ln) for ln in out.splitlines()) <= 80
    tokens = set(out.split())
    for word in _header_words(h200_run):
        assert word in tokens, f"header word {word!r} is not printed whole"
    # no fragment of a header word stands alone (what a cut header looks like: "mode" / "l")
    words = _header_words(h200_run)
    fragments = {w[:k] for w in words for k in range(2, len(w))} - words
    lone = [ln.strip() for ln in out.splitlines() if ln.strip() in fragments]
    assert lone == []
    if os.environ.get("BEAVERTUI_UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(out)
    assert out == SNAPSHOT.read_text()


def test_a_wide_page_prints_the_tables_whole(h200_run: Path) -> None:
    out = _cli("metrics", str(h200_run), columns=280).stdout
    head = next(ln for ln in out.splitlines() if ln.startswith("model "))
    assert re.split(r"\s{2,}", head)[:4] == ["model", "protocol", "tasks", "pass@1"]
    assert "scripted:@alternate  iterative K5 L3 H2 T0 p0.7 in-loop all-K stag=report [corpus]  40" in out


TABLE = Table(
    "A table of rates",
    ("model", "protocol", "tasks", "pass@1", "dominant stall", "a rather long header"),
    tuple(
        (f"model-{i}", "iterative K5 L3 H2 T0 p0.7", str(i), Rate(0.5, 0.25, 0.75), "code_cycle (40%)", "x")
        for i in range(3)
    ),
    note="A note long enough to be wrapped at words on a narrow page, and never cut inside one of them.",
)


@pytest.mark.parametrize("width", [40, 50, 64, 80, 100, 120, 160])
def test_every_width_keeps_words_whole(width: int) -> None:
    out = [ln.text for ln in lines(TABLE, width)]
    assert all(len(ln) <= width for ln in out), out
    raw = " ".join(out).split()
    words = set(raw) | {t.strip("()") for t in raw}
    for w in [*" ".join(TABLE.columns).split(), "code_cycle", "(40%)", "model-2", "50.0"]:
        assert w in words, (width, w)
    assert "[25.0, 75.0]" in "\n".join(out)  # an interval is one piece


def test_columns_that_is_no_whole_number_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    from beavertui.reports.fit import PIPE_WIDTH, page_width

    monkeypatch.setenv("COLUMNS", "100")
    assert page_width(io.StringIO()) == 100
    for bad in ("\u00b2", "-5", "0", "wide"):  # a superscript two was a traceback from every table
        monkeypatch.setenv("COLUMNS", bad)
        assert page_width(io.StringIO()) == PIPE_WIDTH


def test_no_color_is_honoured_on_a_terminal() -> None:
    def through_pty(env: dict[str, str]) -> bytes:
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "beavertui", "corpus", "list"], stdout=slave, stderr=slave,
            env={**os.environ, "COLUMNS": "100", **env},
        )  # fmt: skip
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
        os.close(master)
        return b"".join(chunks)

    styled = through_pty({k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm"})
    plain = through_pty({"NO_COLOR": "1", "TERM": "xterm"})
    assert b"\x1b[" in styled and b"flashattn_v2_00" in styled
    assert b"\x1b[" not in plain and b"flashattn_v2_00" in plain


@pytest.mark.slow
def test_one_format_flag_on_every_command_that_prints_a_table(tmp_path: Path) -> None:
    demo = str(ROOT / "sessions" / "demo")
    commands = {
        "metrics": ["metrics", str(ROOT / "tests" / "data" / "h200_batch_run"), "--resamples", "1000"],
        "corpus list": ["corpus", "list"],
        "browse": ["browse", demo],
        "batch --dry-run": ["batch", "--models", "scripted:@reference", "--tasks", "scan_0*", "--dry-run",
                            "--toolchain", "demo", "--sessions-dir", str(tmp_path / "s")],
    }  # fmt: skip
    for name, args in commands.items():
        md = _cli(*args, "--format", "md").stdout
        assert "\n|---|" in md, name
        one = ["--table", "main"] if name == "metrics" else []  # a CSV holds one table
        rows = list(csv.reader(io.StringIO(_cli(*args, "--format", "csv", *one).stdout)))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), name
        tex = _cli(*args, "--format", "latex").stdout
        assert "\\begin{tabular}" in tex and "\\toprule" in tex, name
        raw = _cli(*args, "--format", "json").stdout
        assert [json.loads(ln) for ln in raw.splitlines() if ln.strip()], name
    assert not (tmp_path / "s").exists()  # the dry run made no folder
