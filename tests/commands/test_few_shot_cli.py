"""The few-shot grid from the command line: `live` picks an arm of paper-fewshot.toml and `batch` runs the
grid, each with the pool and curated map given by flags in place of the release's (which the public
release does not ship). What the examples are is tests/engine/loop/test_few_shot.py's subject; here, that the
flags reach the sessions and that a flag that would change nothing is refused."""

from __future__ import annotations

import json
from pathlib import Path

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.loop import few_shot
from beavertui.engine.loop.prompts import system_message
from beavertui.engine.session.events import Request
from beavertui.engine.session.store import read_session
from tests.cli_in_process import run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
POOL = [
    DATA / "fewshot" / "pool" / "alpha" / "20260101_000000",
    DATA / "fewshot" / "pool" / "beta" / "20260102_000000",
]
RELEASE_REAL = DATA / "release_real"
TASK = "kernelbench_level1_92__compile_error__52277656"


def _system(path: Path) -> str:
    header, events, _ = read_session(path)
    assert header is not None
    return next(e for e in events if isinstance(e, Request)).messages[0].content


def test_live_runs_one_arm_of_the_grid_with_a_pool_given_here(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    p = run_cli(
        "live", "--task", TASK, "--corpus", RELEASE_REAL, "--model", "scripted:@reference", "--headless",
        "--toolchain", "demo", "--unknown-candidates", "fail", "--budget", "1", "--out", out,
        "--protocol", "paper-fewshot", "--few-shot", "matched", "--few-shot-k", "3",
        "--few-shot-pool", *POOL, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 1 and "no success" in p.stdout, p.stderr[-600:]  # every candidate fails to build
    header, _, _ = read_session(out)
    assert header is not None and header.protocol.key()["few_shot"] == "matched_K3"
    assert header.protocol.few_shot_pool == tuple(str(d) for d in POOL)
    task = load_corpus(RELEASE_REAL, only=[TASK]).get(TASK)
    assert _system(out) == system_message(task).content + few_shot.section(header.protocol, task)
    assert _system(out).count("[Example ") == 3
    # the grid has nine arms: without --few-shot-k the flags pick none
    p = run_cli(
        "live", "--task", TASK, "--corpus", RELEASE_REAL, "--model", "scripted:@reference", "--headless",
        "--toolchain", "demo", "--out", tmp_path / "t.jsonl", "--protocol", "paper-fewshot", "--few-shot", "random",
        cwd=tmp_path,
    )  # fmt: skip
    assert (
        p.returncode == 2 and "3 of its protocols match the flags" in p.stderr and "--few-shot-k" in p.stderr
    )


def test_batch_runs_the_grid_with_the_pool_and_map_given_here(tmp_path: Path) -> None:
    curated = tmp_path / "map.json"
    curated.write_text(json.dumps({TASK.replace("_", "/", 1): ["cuda_59__logic_error__501f0dd2"]}))
    base = ("batch", "--corpus", RELEASE_REAL, "--tasks", TASK, "--models", "scripted:@reference",
            "--toolchain", "demo", "--sessions-dir", tmp_path, "--protocol", "paper-fewshot")  # fmt: skip
    # the pool alone: the curated arms still name the release's map, which is not there
    p = run_cli(*base, "--few-shot-pool", *POOL, "--run-id", "r0", cwd=tmp_path)
    assert p.returncode == 2 and "few_shot curated: no map" in p.stderr and not (tmp_path / "r0").exists()
    p = run_cli(*base, "--few-shot-pool", *POOL, "--few-shot-curated", curated, "--run-id", "r", "--quiet",
                cwd=tmp_path)  # fmt: skip
    assert p.returncode == 0, p.stderr[-600:]
    sessions = sorted((tmp_path / "r").glob("*/*/*.jsonl"))
    assert len(sessions) == 9
    labels = {}
    for s in sessions:
        header, _, _ = read_session(s)
        assert header is not None
        labels[header.protocol.key()["few_shot"]] = _system(s).count("[Example ")
    assert labels == {
        "matched_K1": 1, "matched_K3": 3, "matched_K5": 5, "random_K1": 1, "random_K3": 3, "random_K5": 5,
        "curated_K1": 1, "curated_K3": 1, "curated_K5": 1,  # the map lists one example for the task
    }  # fmt: skip
    # a flag no protocol of the file takes would change nothing: refused
    p = run_cli(*base[:-1], "paper", "--few-shot-pool", *POOL, "--run-id", "r2", "--dry-run", cwd=tmp_path)
    assert (
        p.returncode == 2 and "--few-shot-pool: no protocol of the file takes few-shot examples" in p.stderr
    )
