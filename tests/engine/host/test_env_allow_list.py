"""A stage inherits an allow-list of beavertui's environment, not everything whose name looks harmless.

Before, variables were removed by name pattern only (``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``,
``OPENAI_``): ``GH_PAT``, ``DATABASE_URL`` and ``AWS_SESSION_CREDENTIALS`` reached the candidate.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.stage import stages

ROOT = Path(__file__).resolve().parents[3]

LEAKS = {
    "GH_PAT": "ghp_leak_1",
    "DATABASE_URL": "postgres://u:leak_2@db/x",
    "AWS_SESSION_CREDENTIALS": "leak_3",
    "SENTRY_DSN": "https://leak_4@sentry.io/1",
    "CUDA_API_TOKEN": "leak_5",  # an allowed prefix, a credential-like name: still removed
}


def test_a_stage_sees_only_the_allow_listed_part_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in LEAKS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    task = load_corpus(ROOT / "tests" / "data" / "cpu").get("sleepy")
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(task, task.reference() or "", cfg) as work:
        res = stages.run_stage(work, "run", "env", 30, cfg, adapt=False)
    seen = dict(line.split("=", 1) for line in res.log.splitlines() if "=" in line)
    for name, value in LEAKS.items():
        assert name not in seen and value not in res.log, name
    assert seen["CUDA_VISIBLE_DEVICES"] == "0" and seen["LC_ALL"] == "C.UTF-8"
    assert seen["PATH"] == os.environ["PATH"]
