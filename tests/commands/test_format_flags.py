"""``--json`` is the short form of ``--format json``; given with another ``--format`` the two ask for
different things, and the command refuses them in one line before it runs anything.

Before: ``metrics RUN --json --format md``, ``corpus list --json --format csv`` and ``batch ... --json
--format md`` printed JSON, exit 0, and the ``--format`` asked for was dropped without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("formats")
    p = run_cli("batch", "--demo", "--run-id", "r", "--sessions-dir", where, "--quiet", cwd=where)
    assert p.returncode == 0, p.stderr
    return where / "r"


@pytest.mark.parametrize(
    "argv",
    [
        ("metrics", "{run}", "--json", "--format", "md"),
        ("metrics", "{run}", "--format", "latex", "--json"),
        ("corpus", "list", "--json", "--format", "csv"),
        ("batch", "--demo", "--run-id", "new", "--sessions-dir", "{where}", "--json", "--format", "md"),
    ],
    ids=["metrics", "metrics-json-last", "corpus-list", "batch"],
)
def test_json_with_another_format_is_refused(run: Path, tmp_path: Path, argv: tuple[str, ...]) -> None:
    p = run_cli(*(a.format(run=run, where=tmp_path) for a in argv), cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-500:])
    fmt = argv[argv.index("--format") + 1]
    assert p.stderr.splitlines()[-1] == f"beavertui: --json and --format {fmt} are two formats: give one"
    assert p.stdout == "" and not (tmp_path / "new").exists()


def test_json_alone_or_with_format_json_is_json(run: Path, tmp_path: Path) -> None:
    for argv in (("--json",), ("--format", "json"), ("--json", "--format", "json")):
        p = run_cli("metrics", run, *argv, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["groups"][0]["n_tasks"] == 5
