"""`beavertui corpus minimize --hunks-only` over a store whose kept answers reach past the hunk phase.

tests/data/release_minimize_kept holds the judge's answers an H100 kept for the release's cuda_110 (the
instance itself is the one tests/data/harness_run/corpus keeps)
(docs/data/h100-2026-12-06/minimal-fixes-3/store.tgz): 134 answers of the correctness screen, the whole
search, and two timings at the gate, of the hunk phase's set (55 of the reference's 57 lines) and of the
line phase's end (25 lines). A --hunks-only call over that store rewrote cuda_110's record with its hunk
phase's result alone ("budget", 55 lines, 1-minimal over hunks), though its answers held the 25-line fix
1-minimal over lines. The command runs here as on the GPU machine, against an H100's signature, with no GPU
and no compiler: nvidia-smi and nvcc are stand-ins that answer the probes (an H100, CUDA 13.0) and log any
build; every question the search asks must so be answered by the kept answers, and none is asked afresh.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.engine.corpus import fixes

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "data" / "release_minimize_kept"
CORPUS = ROOT / "tests" / "data" / "harness_run" / "corpus" / "data"
TASK = "cuda_110__logic_error__957be815"
SLUG = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"
HUNK_FIX = "d4c6ee3f74d5926298151b265ab0ff957d78074a8a935da38427021a4bb04b50"
"""The judge's timing of the hunk phase's set (55 lines, 0.99x)."""
LINE_FIX = "7a0cbef2c88026315856b7160ab16575e52d1424fe3e80a8c9bdc95a9eb26282"
"""The judge's timing of the line phase's end (25 lines, 0.99x)."""
HUNK_PHASE = 23
"""The screen's questions of the hunk phase (the H100 call's hunks.jsonl: 24 asked, these and the timing)."""


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    """The environment of an H100 machine without the H100: stand-ins for nvidia-smi and nvcc."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "nvidia-smi").write_text('#!/bin/sh\necho "NVIDIA H100 80GB HBM3, 9.0, 580.95.05"\n')
    (bin_ / "nvcc").write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi\n'
        'echo "$@" >> "$(dirname "$0")/builds.log"\necho "no builds here" >&2\nexit 1\n'
    )
    for tool in ("nvidia-smi", "nvcc"):
        (bin_ / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return {
        **env,
        "PATH": f"{bin_}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }


def _store(
    tmp_path: Path, screened: int | None = None, timings: tuple[str, ...] = (HUNK_FIX, LINE_FIX)
) -> Path:
    """A store holding the kept answers: the screen's first ``screened`` (all: None) and these timings."""
    store = tmp_path / "store"
    shutil.copytree(KEPT / "store", store)
    answers = store / SLUG / "answers"
    correct = answers / "correct" / f"{TASK}.jsonl"
    lines = correct.read_text().splitlines(keepends=True)
    correct.write_text("".join(lines[:screened]))
    judge = answers / "judge" / f"{TASK}.jsonl"
    judge.write_text(
        "".join(x for x in judge.read_text().splitlines(True) if json.loads(x)["hash"] in timings)
    )
    return store


def _minimize(env: dict[str, str], store: Path, *extra: str) -> dict[str, object]:
    """One run of the command; its outcome for cuda_110, checked to have asked nothing afresh."""
    answers = {p: p.read_bytes() for p in (store / SLUG / "answers").rglob("*.jsonl")}
    argv = ["corpus", "minimize", "--corpus", str(CORPUS), "--tasks", TASK, "--store", str(store), "--json"]
    argv += extra
    proc = subprocess.run(
        [sys.executable, "-m", "beavertui", *argv], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    (doc,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert doc["task_id"] == TASK and doc["calls"] == 0 and doc["gpu"] == SLUG
    assert {p: p.read_bytes() for p in answers} == answers  # nothing asked, so nothing added
    assert not (Path(env["PATH"].split(os.pathsep)[0]) / "builds.log").exists()  # nothing built
    record = json.loads((store / SLUG / fixes.RECORD).read_text())["tasks"][TASK]
    assert {k: record[k] for k in doc if k != "task_id"} == {k: v for k, v in doc.items() if k != "task_id"}
    return doc


FIELDS = ("status", "phase", "minimality", "lines", "hunks", "verified", "found", "speedup", "why")


def test_a_hunks_only_run_keeps_the_line_phase_its_kept_answers_carry(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    store = _store(tmp_path)
    replayed = _minimize(machine, store, "--replay", SLUG)
    patch = (store / SLUG / TASK / fixes.PATCH).read_text()
    assert (replayed["status"], replayed["minimality"], replayed["lines"], replayed["verified"]) == (
        "minimal", "lines", 25, True,
    )  # fmt: skip
    # the hunk phase's call of scripts/gpu-minimal-fixes.sh over that store: it wrote "budget", 55 lines
    hunks = _minimize(machine, store, "--hunks-only")
    assert (hunks["status"], hunks["minimality"], hunks["lines"], hunks["verified"]) == (
        "minimal", "lines", 25, True,
    )  # fmt: skip
    assert {k: hunks[k] for k in FIELDS} == {k: replayed[k] for k in FIELDS}
    # the line phase left out a whole hunk of the five the hunk phase kept: the why said "5 of 6"
    assert (hunks["hunks"], hunks["why"]) == (
        4,
        "correct and at least 0.7x the reference's speed: 25 of 57 changed lines of the reference, in 4 of 6 hunks",
    )
    assert hunks["asked"] == replayed["asked"] == 135  # the screen's 134 and the 25-line set's timing
    assert (store / SLUG / TASK / fixes.PATCH).read_text() == patch


def test_a_hunks_only_run_without_kept_line_answers_stops_after_its_hunk_phase(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    """As the H100's first call kept them: the hunk phase's answers and the timing of its set."""
    doc = _minimize(machine, _store(tmp_path, HUNK_PHASE, (HUNK_FIX,)), "--hunks-only")
    assert {k: doc[k] for k in FIELDS} == {
        "status": "budget", "phase": "lines", "minimality": "hunks", "lines": 55, "hunks": 5, "verified": True,
        "found": True, "speedup": 0.9916140192539109,
        "why": "correct and at least 0.7x the reference's speed: 1-minimal over hunks, not yet over lines: line "
        "phase not run yet (hunks only): 5 of 6 hunks kept; run again to go on (the answers so far are kept)",
    }  # fmt: skip
    assert doc["asked"] == HUNK_PHASE + 1


def test_a_line_phase_kept_in_part_leaves_the_timed_hunk_fix_and_says_how_far_it_went(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    """A later call cut in the line phase kept 37 more screened answers; the set they reach is correct but
    was never timed at the gate, so the record keeps the hunk phase's verified fix and says both."""
    doc = _minimize(machine, _store(tmp_path, HUNK_PHASE + 37, (HUNK_FIX,)), "--hunks-only")
    assert (doc["status"], doc["phase"], doc["minimality"], doc["lines"], doc["verified"]) == (
        "budget", "lines", "hunks", 55, True,
    )  # fmt: skip
    why = str(doc["why"])
    assert (
        "hunks only: the line phase went as far as the kept answers take it (37 of its questions answered)"
        in why
    )
    assert "is not timed at the gate yet: the fix kept is the hunk phase's, timed at the gate" in why
    assert doc["speedup"] == 0.9916140192539109 and doc["asked"] == HUNK_PHASE + 37 + 1


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "hunks-only"])
def test_a_line_phase_that_ended_untimed_keeps_the_timed_hunk_fix(
    tmp_path: Path, machine: dict[str, str], replay: bool
) -> None:
    """Every screened answer kept, but not the timing of the set the line phase ended with (a call cut
    between the two): the 25 lines are correct, not yet known to pass the gate. A replay recorded them as
    the instance's outcome, "minimal" and unverified, and lost the verified hunk fix."""
    store = _store(tmp_path, None, (HUNK_FIX,))
    doc = _minimize(machine, store, *(["--replay", SLUG] if replay else ["--hunks-only"]))
    assert (doc["status"], doc["phase"], doc["minimality"], doc["lines"], doc["verified"]) == (
        "budget", "lines", "hunks", 55, True,
    )  # fmt: skip
    assert doc["why"] == (
        "correct and at least 0.7x the reference's speed: 1-minimal over hunks, not yet over lines: the line "
        "phase ended with a set not timed at the gate yet (25 of 57 changed lines of the reference, in 4 of 6 "
        "hunks)" + ("; not timed yet: no kept answer to the next question, and no oracle call allowed (a replay)"
                    if replay else "")
        + "; the fix kept is the hunk phase's, timed at the gate; "
        + ("a search with the oracle goes on from here" if replay else "run again to go on")
        + " (the answers so far are kept)"
    )  # fmt: skip
    assert (store / SLUG / TASK / fixes.PATCH).is_file()
