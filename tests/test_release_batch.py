"""A scripted:@alternate batch over the CUDABeaver release, recorded on the H200 (tests/data/release_batch.tar.gz).

Every usable nvcc-family instance with a reference submission (78 of them; kernelbench was not yet validated
and cutlass and cudabench have no reference a model could submit), K = 2: the broken start at attempt 1,
the reference at attempt 2. The run was cut by its time budget with 19 sessions finished and 20 cut in
flight. This checks what a researcher reads from it: unfinished sessions are out of every rate and said,
every correct attempt is in the attempts table with its speedup, pass@k at p = 0 is 100% of the finished
tasks, and the reference timed against itself is never called a degeneration.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.events import SessionEnd, Verdict
from beavertui.engine.session.store import read_session

RUN = Path(__file__).parent / "data" / "release_batch.tar.gz"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release_batch")
    with tarfile.open(RUN) as tar:
        tar.extractall(root, filter="data")
    return root / "run"


def _sessions(run: Path) -> dict[str, tuple[bool, list[Verdict]]]:
    out: dict[str, tuple[bool, list[Verdict]]] = {}
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, _problem = read_session(path)
        assert header is not None and header.gpu is not None and header.gpu.name == "NVIDIA H200"
        assert header.task.layout == "release"
        out[header.task.id] = (
            any(isinstance(e, SessionEnd) for e in events),
            [e for e in events if isinstance(e, Verdict)],
        )
    return out


def test_the_recorded_release_batch_is_what_the_run_says(run: Path) -> None:
    sessions = _sessions(run)
    manifest = json.loads((run / "run.json").read_text())
    assert len(manifest["tasks"]) == 78 and len(sessions) == 39
    finished = {t: vs for t, (done, vs) in sessions.items() if done}
    assert len(finished) == 19
    for vs in finished.values():  # broken start, then the reference, which passes and is timed
        assert [v.iteration for v in vs] == [1, 2] and not vs[0].correct and vs[1].correct
        assert vs[1].speedup is not None and 0.98 < vs[1].speedup < 1.02


def test_metrics_score_every_finished_session_and_leave_the_cut_ones_out(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _sessions(run)
    finished = [t for t, (done, _) in sessions.items() if done]
    assert main(["metrics", str(run), "--json"]) == 0
    out = capsys.readouterr()
    group = json.loads(out.out)["groups"][0]
    assert group["n_tasks"] == len(finished) == 19
    assert group["p_sweep"]["0.0"] == 1.0 and group["pass@k"] == 1.0 and group["pass@1"] == 0.0
    # the reference against itself: about half measure under 1.0 (the paper's raw rule), none beyond noise
    assert group["degenerate_rate_raw"] > 0.5 and group["degenerate_rate"] == 0.0
    assert "20 unfinished session(s) left out of every rate" in out.err
    assert f"batch --resume {run}" in out.err
    # with --include-unfinished the cut sessions count as they stand (those cut before their first verdict
    # have nothing to score)
    assert main(["metrics", str(run), "--json", "--include-unfinished"]) == 0
    wide = json.loads(capsys.readouterr().out)["groups"][0]
    scored = [vs for _, vs in sessions.values() if vs]
    assert wide["n_tasks"] == len(scored) > 19
    assert wide["pass@k"] == pytest.approx(sum(any(v.correct for v in vs) for vs in scored) / len(scored))


def test_every_correct_attempt_is_in_the_attempts_table(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _sessions(run)
    assert main(["export", str(run)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    correct = {(t, v.iteration) for t, (_, vs) in sessions.items() for v in vs if v.correct}
    table = {(r["task_id"], r["iteration"]) for r in rows if r["correct"]}
    assert correct and table == correct
    assert all(r["speedup"] is not None for r in rows if r["correct"])
