"""JSON nested too deeply for the parser, in a file a run, a corpus or a store holds, is read as JSON that is
not valid: Python's decoder raises RecursionError there, which went past every reader's ``except ValueError``
as a traceback (a corpus's minimal_fixes.json of 100,000 brackets: metrics, export and the page stopped)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from beavertui.engine.fileio import parse_json
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEEP = '{"tasks": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_parse_json_says_not_json_for_deep_nesting() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        parse_json(DEEP)
    with pytest.raises(ValueError):
        parse_json(DEEP.encode())
    assert parse_json('{"a": [1]}') == {"a": [1]}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("deep")
    out = run_cli("batch", "--demo", "--sessions-dir", tmp / "s", "--run-id", "r", "--quiet")
    assert out.returncode == 0, out.stderr
    return tmp / "s" / "r"


def test_a_run_and_a_corpus_with_deep_json_are_read_without_a_traceback(
    demo_run: Path, tmp_path: Path
) -> None:
    run, corpus = tmp_path / "r", tmp_path / "corpus"
    shutil.copytree(demo_run, run)
    shutil.copytree(ROOT / "corpus", corpus, ignore=shutil.ignore_patterns("baselines"))
    for f in run.rglob("*.jsonl"):  # the sessions name the copied corpus as theirs
        f.write_text(f.read_text().replace(json.dumps(str(ROOT / "corpus"))[1:-1], str(corpus)))
    (corpus / "minimal_fixes.json").write_text(DEEP)
    (corpus / "softmax_00" / "minimal_fix.patch").write_text("")
    (run / "run.json").write_text(DEEP)
    for argv in (["metrics", run], ["export", run], ["export", run, "--html", "-o", tmp_path / "p.html"]):
        out = run_cli(*argv)
        assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr[-2000:]
