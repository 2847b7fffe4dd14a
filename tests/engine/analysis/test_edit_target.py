"""Edit precision and bug recall are scored against the task's verified minimal fix, never the reference.

Real bundled tasks and their patches; values computed by hand from the diffs (see each comment).
"""

from __future__ import annotations

import json
from pathlib import Path

from beavertui.engine.analysis.edits import edit_score
from beavertui.engine.analysis.report import analyse, run_summary
from beavertui.engine.corpus.fixes import RECORD
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Candidate, Verdict
from beavertui.engine.session.state import AttemptState

ROOT = Path(__file__).resolve().parents[3]
TASKS = {t.id: t for t in load_corpus(ROOT / "corpus").tasks}
#: Correct on the H200 but below the 0.7x gate, or shipping no patch: no verified minimal fix.
BELOW_GATE = {"layernorm_00", "layernorm_01", "reduce_00", "softmax_03", "transpose_01", "transpose_03"}
NO_PATCH = {"flashattn_v2_04", "flashattn_v2_06", "flashattn_v2_08"}


def correct(code: str) -> AttemptState:
    return AttemptState(
        iteration=1,
        candidate=Candidate(iteration=1, code=code),
        verdict=Verdict(iteration=1, category="passed", signature="", correct=True, speedup=1.0),
    )


def test_record_covers_every_task_and_matches_the_gate() -> None:
    rec = json.loads((ROOT / "corpus" / RECORD).read_text())
    assert set(rec["tasks"]) == set(TASKS)
    for tid, e in rec["tasks"].items():
        expect = e["correct"] is True and e["speedup"] is not None and e["speedup"] >= rec["gate"]
        assert e["verified"] is expect, tid
    unverified = {t for t, task in TASKS.items() if task.verified_minimal_fix() is None}
    assert unverified == BELOW_GATE | NO_PATCH
    assert TASKS["layernorm_00"].minimal_fix() is not None  # the patch is there, only not a target
    assert "0.441x < 0.7x" in (TASKS["layernorm_00"].fix_target().reason or "")
    assert TASKS["flashattn_v2_04"].fix_target().reason == "no minimal fix shipped"


def test_one_line_fix_recovers_the_bug_against_the_minimal_fix() -> None:
    t = TASKS["spmv_csr_01"]  # the bug: a shuffle loop bound LANES_PER_ROW / 2 instead of LANES_PER_ROW
    broken, ref = t.broken_start(), t.reference()
    assert ref is not None
    repair = broken.replace("mask < LANES_PER_ROW / 2;", "mask < LANES_PER_ROW;")
    assert repair != broken
    a = analyse(t.ref(), correct(repair))
    assert a is not None and a.edit is not None and a.unscored is None
    assert (a.edit.precision, a.edit.recall, a.edit.changed, len(a.edit.blocks)) == (1.0, 1.0, 1, 1)
    # Against the broken start -> reference edit (6 blocks) the same repair recovered 1 of 6.
    assert edit_score(broken, repair, ref).recall == 1 / 6


def test_pasting_the_reference_is_imprecise_against_the_minimal_fix() -> None:
    t = TASKS["spmv_csr_01"]
    ref = t.reference()
    assert ref is not None
    a = analyse(t.ref(), correct(ref))
    assert a is not None and a.edit is not None
    # 59 changed lines; the fix's one-line block takes its own line plus 1 (tolerance): 2 needed.
    assert (a.edit.changed, a.edit.needed, a.edit.recall) == (59, 2, 1.0)
    assert a.edit.precision == 2 / 59 < 1.0


def test_task_without_verified_fix_is_unscored_and_counted(tmp_path: Path) -> None:
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.protocol import Protocol
    from beavertui.engine.toolchain.recorded import RecordedToolchain
    from tests.engine.analysis import test_analysis_branch as tb

    t = TASKS["transpose_01"]  # its fix is correct but 0.395x the reference's speed
    ref = t.reference()
    assert ref is not None
    a = analyse(t.ref(), correct(ref))
    assert a is not None and a.edit is None
    assert a.unscored is not None and "0.395x < 0.7x" in a.unscored
    # A run of a task whose record says unverified: its repair is analysed, counted unscored, not scored.
    corpus = tmp_path / "corpus"
    (corpus / "transpose_tiled").mkdir(parents=True)
    src = tb.CORPUS / "transpose_tiled"
    for f in src.rglob("*"):
        if f.is_file():
            dst = corpus / "transpose_tiled" / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(f.read_bytes())
    rec = json.loads((tb.CORPUS / RECORD).read_text())
    rec["tasks"]["transpose_tiled"]["verified"] = False
    (corpus / RECORD).write_text(json.dumps(rec))
    task = load_corpus(corpus).get("transpose_tiled")
    (tmp_path / "run").mkdir()
    tb.write(
        tmp_path / "run" / "s.jsonl",
        run_session(
            task,
            ScriptedModel([tb.reply(tb.REFERENCE)]),
            RecordedToolchain(tb.recordings()),
            Protocol(budget=3, gate=0.0),
        ),
    )
    (summary,) = run_summary(tmp_path / "run").values()
    assert summary["analysed_repairs"] == 1 and summary["unscored_repairs"] == 1
    assert summary["edit_precision"] is None and summary["bug_recall"] is None
