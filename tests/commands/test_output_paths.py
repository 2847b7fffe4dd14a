"""Output paths a tired user gets wrong: one line, exit status 2, and nothing recorded lost.

Before: ``export RUN -o RUN/.../task__s0.jsonl`` replaced a recorded session with the attempts table (exit 0),
``export S.jsonl --html -o S.jsonl`` the session with its page, ``metrics S.jsonl -o S.jsonl`` the session with
its tables, and ``export RUN -o RUN/attempts.jsonl`` left a file every later ``metrics`` of the run counted as
a damaged session. An output folder that could not be made (``metrics --plots``, ``live --out``, ``live
--sessions-dir``, ``reproduce --out`` under a file, or on a read-only file system) ended in a traceback.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"


def refused(p: subprocess.CompletedProcess[str], says: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout[-400:], p.stderr[-800:])
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("beavertui: "), p.stderr
    assert says in lines[0], lines[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished demo batch run (five sessions, no GPU)."""
    where = tmp_path_factory.mktemp("outputs")
    p = run_cli("batch", "--demo", "--run-id", "r", "--sessions-dir", where, "--quiet", cwd=where)
    assert p.returncode == 0, p.stderr
    return where / "r"


def _bytes_of(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("export", "{run}", "-o", "{session}"), "is a session file"),
        (("metrics", "{run}", "-o", "{session}"), "is a session file"),
        (("metrics", "{run}", "--card", "{session}"), "is a session file"),
        (("export", "{run}", "-o", "{run}/attempts.jsonl"), "is inside the run folder"),
        (("export", "{run}", "--csv", "-o", "{run}/run.json"), "is a run's manifest"),
        (("export", "{session}", "--html", "-o", "{session}"), "is the input"),
        (("metrics", "{session}", "-o", "{session}"), "is the input"),
    ],
    ids=["export-over-session", "metrics-over-session", "card-over-session", "export-into-run",
         "export-over-manifest", "html-over-its-session", "metrics-over-its-session"],
)  # fmt: skip
def test_an_output_over_what_is_recorded_is_refused(
    run: Path, tmp_path: Path, argv: tuple[str, ...], says: str
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    session = next(copy.rglob("scan_01__s0.jsonl"))
    before = _bytes_of(copy)
    p = run_cli(*(a.format(run=copy, session=session) for a in argv), cwd=tmp_path)
    refused(p, says)
    assert _bytes_of(copy) == before  # nothing written, nothing lost


def test_outputs_beside_the_sessions_are_still_written(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    assert run_cli("metrics", copy, "-o", copy / "metrics.md", cwd=tmp_path).returncode == 0
    assert run_cli("export", copy, "-o", tmp_path / "attempts.jsonl", cwd=tmp_path).returncode == 0
    assert run_cli("export", copy, "--html", "-o", copy / "page.html", cwd=tmp_path).returncode == 0
    assert (copy / "metrics.md").read_text().startswith("###")
    assert len((tmp_path / "attempts.jsonl").read_text().splitlines()) == 13
    p = run_cli("metrics", copy, cwd=tmp_path)  # what was written beside the sessions is no session
    assert p.returncode == 0 and "left out" not in p.stderr, p.stderr


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("metrics", "{run}", "--plots", "{file}/plots"), "a part of the path is a file, not a folder"),
        (("live", "--demo", "--headless", "--out", "{file}/s.jsonl"), "a part of the path is a file"),
        (("live", "--demo", "--headless", "--sessions-dir", "{file}"), "a part of the path is a file"),
        (("reproduce", "--models", "scripted:@demo", "--tasks", "scan_01", "--toolchain", "demo",
          "--out", "{file}/paper"), "a part of the path is a file"),
    ],
    ids=["metrics-plots", "live-out", "live-sessions-dir", "reproduce-out"],
)  # fmt: skip
def test_an_output_folder_that_cannot_be_made_is_one_line(
    run: Path, tmp_path: Path, argv: tuple[str, ...], says: str
) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("my notes\n")
    p = run_cli(*(a.format(run=run, file=file) for a in argv), cwd=tmp_path)
    refused(p, says)
    assert p.stderr.startswith(f"beavertui: {file}"), p.stderr  # names the path
    assert file.read_text() == "my notes\n"


@pytest.mark.parametrize(
    "argv",
    [
        ("branch", "{parent}", "--at", "1", "--model", "scripted:@reference", "--recorded", str(DEMO),
         "--out", "{victim}"),
        ("live", "--demo", "--headless", "--out", "{victim}"),
    ],
    ids=["branch", "live"],
)  # fmt: skip
def test_a_session_out_that_exists_is_refused_before_anything_runs(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    """Before: branch printed "branch of ... -> FILE" as if it ran, then refused; both told to "use reopen",
    which is no command."""
    parent, victim = tmp_path / "parent.jsonl", tmp_path / "victim.jsonl"
    shutil.copy(DEMO / "repair_in_three.jsonl", parent)
    victim.write_text("my notes\n")
    p = run_cli(*(a.format(parent=parent, victim=victim) for a in argv), cwd=tmp_path)
    refused(p, "already exists, and a session file is never written over: give another path")
    assert p.stdout == "" and victim.read_text() == "my notes\n"


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_plots_folder_is_refused_not_the_current_folder(
    run: Path, tmp_path: Path, given: str
) -> None:
    """``--plots ""`` (an unset shell variable) wrote the figures into the current folder without a word."""
    p = run_cli("metrics", run, "--plots", given, cwd=tmp_path)
    refused(p, "--plots must be a path, not empty")
    assert list(tmp_path.iterdir()) == []
