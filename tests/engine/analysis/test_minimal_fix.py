"""The bundled tasks' minimal fixes (corpus/<task>/minimal_fix.patch) and the applier behind them.

Each native task may ship the smallest verified repair of its broken start as a unified diff. These tests
need neither nvcc nor a GPU: every patch applies exactly to its broken start, changes it, and changes fewer
lines than the broken-start -> reference edit (the ratio is in each failure message); a patch that does
not apply, or is not a patch, is one line of error naming the file. That the fixed files build, are
correct and fast is checked on a GPU by scripts/gpu-check-fixes.sh, which records
them in corpus/minimal_fixes.json.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from beavertui.engine.analysis.edits import hunks
from beavertui.engine.corpus import patch
from beavertui.engine.corpus.load import load_corpus, load_task
from beavertui.engine.corpus.task import MINIMAL_FIX, Task
from beavertui.engine.errors import BeaverError, TaskError

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "corpus"
TASKS = {t.id: t for t in load_corpus(CORPUS).tasks}
#: Tasks whose only repair is a new design written from scratch (no edit of the broken start is smaller
#: than a rewrite); they carry no minimal fix, so their edit scores are reported as unscored.
WITHOUT_FIX = {"flashattn_v2_04", "flashattn_v2_06", "flashattn_v2_08"}
WITH_FIX = sorted(set(TASKS) - WITHOUT_FIX)


def changed_lines(before: str, after: str) -> int:
    """Changed lines of an edit, counted as edit precision counts them (blank-line edits dropped)."""
    return sum(h.size for h in hunks(before, after))


def test_exactly_the_rewrite_tasks_lack_a_fix() -> None:
    lacking = {tid for tid, t in TASKS.items() if not t.minimal_fix_path.is_file()}
    assert lacking == WITHOUT_FIX
    assert all(TASKS[t].minimal_fix() is None for t in WITHOUT_FIX)


@pytest.mark.parametrize("task", WITH_FIX)
def test_patch_applies_to_its_broken_start(task: str) -> None:
    t = TASKS[task]
    fixed = t.minimal_fix()
    assert fixed is not None
    assert fixed != t.broken_start()
    assert fixed.endswith("\n")
    head = t.minimal_fix_path.read_text().splitlines()[:2]
    assert head == ["--- broken_start.cu", "+++ solution.cu"], head


@pytest.mark.parametrize("task", WITH_FIX)
def test_fix_is_smaller_than_the_reference_edit(task: str) -> None:
    t = TASKS[task]
    broken, fixed, ref = t.broken_start(), t.minimal_fix(), t.reference()
    assert fixed is not None and ref is not None
    fix_n, ref_n = changed_lines(broken, fixed), changed_lines(broken, ref)
    assert 0 < fix_n < ref_n, f"{task}: the fix changes {fix_n} lines, the reference edit {ref_n}"
    assert fixed != ref, f"{task}: the minimal fix is the reference"


def test_fixes_are_much_smaller_than_the_reference_edits_overall() -> None:
    """Over the corpus the fixes change a small fraction of what the reference edits change."""
    fix_total = ref_total = 0
    for task in WITH_FIX:
        t = TASKS[task]
        fixed, ref = t.minimal_fix(), t.reference()
        assert fixed is not None and ref is not None
        fix_total += changed_lines(t.broken_start(), fixed)
        ref_total += changed_lines(t.broken_start(), ref)
    assert fix_total / ref_total < 0.2, f"fixes {fix_total} lines, reference edits {ref_total}"


def _copy(task: str, tmp_path: Path) -> Path:
    dst = tmp_path / task
    shutil.copytree(CORPUS / task, dst)
    return dst


def _load(task_dir: Path) -> Task:
    return load_task(task_dir, CORPUS)


HEADER = "@@ -10,7 +10,7 @@"  # spmv_csr_00's one hunk


@pytest.mark.parametrize(
    ("mangle", "expect"),
    [
        (
            lambda p: p.replace("-    if (row > rows) return;", "-    if (row < rows) return;"),
            "does not apply",
        ),
        (lambda p: p.replace(HEADER, "@@ -10,9 +10,7 @@"), "header promises"),
        (lambda p: p.replace(HEADER, "@@ -400,7 +400,7 @@"), "the text has"),
        (lambda p: p.replace(HEADER, "@@ ten @@"), "expected a hunk header"),
        (
            lambda p: "\n".join(p.splitlines()[:5]) + "\n",
            "promises 7 old and 7 new lines, the body has 2 and 2",
        ),
        (lambda p: p.replace(HEADER + "\n", HEADER + "\n" + "#garbage\n"), "ends early"),
        (lambda p: "--- broken_start.cu\n+++ solution.cu\n", "no hunks"),
        (lambda p: "this is not a patch\n", "expected a '---'/'+++' header"),
    ],
)
def test_corrupt_patch_is_one_line_error(tmp_path: Path, mangle: Callable[[str], str], expect: str) -> None:
    d = _copy("spmv_csr_00", tmp_path)
    p = d / MINIMAL_FIX
    original = p.read_text()
    assert HEADER in original and "-    if (row > rows) return;" in original
    p.write_text(mangle(original))
    with pytest.raises(TaskError) as info:
        _load(d).minimal_fix()
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"spmv_csr_00/{MINIMAL_FIX}: "), msg
    assert expect in msg, msg


def test_patch_against_an_edited_broken_start_is_refused(tmp_path: Path) -> None:
    d = _copy("transpose_00", tmp_path)
    bs = d / "broken_start.cu"
    text = bs.read_text()
    assert text.count("y + j < rows) tile") == 1
    bs.write_text(text.replace("y + j < rows) tile", "y + j < rows)  tile"))
    inst = d / "instance.json"
    inst.write_text(inst.read_text().replace('"broken_start_hash"', '"_hash_ignored"'))
    with pytest.raises(TaskError, match="does not apply"):
        _load(d).minimal_fix()


def test_unreadable_patch_is_one_line_error(tmp_path: Path) -> None:
    d = _copy("reduce_03", tmp_path)
    (d / MINIMAL_FIX).write_bytes(b"--- a\n+++ b\n@@ -1 +1 @@\n-\xff\xfe\n+x\n")
    with pytest.raises(TaskError, match=r"cannot read") as info:
        _load(d).minimal_fix()
    assert "\n" not in str(info.value)


def test_task_without_a_patch_has_no_fix(tmp_path: Path) -> None:
    d = _copy("reduce_03", tmp_path)
    (d / MINIMAL_FIX).unlink()
    assert _load(d).minimal_fix() is None


# ------------------------------------------------------------------------------------------ the applier

BASE = "a\nb\nc\nd\ne\nf\ng\nh\n"


def test_applier_replaces_inserts_and_deletes_in_several_hunks() -> None:
    diff = (
        "--- old\n+++ new\n"
        "@@ -1,2 +1,3 @@\n+start\n a\n b\n"
        "@@ -4,3 +5,3 @@\n d\n-e\n+E\n f\n"
        "@@ -7,2 +8,1 @@\n g\n-h\n"
    )
    assert patch.apply(BASE, diff) == "start\na\nb\nc\nd\nE\nf\ng\n"


def test_applier_pure_insertion_after_a_line_and_into_an_empty_text() -> None:
    assert patch.apply(BASE, "@@ -3,0 +4,1 @@\n+after c\n") == "a\nb\nc\nafter c\nd\ne\nf\ng\nh\n"
    assert patch.apply("", "--- /dev/null\n+++ new\n@@ -0,0 +1,2 @@\n+x\n+y\n") == "x\ny\n"


def test_applier_matches_python_difflib_output() -> None:
    import difflib

    new = BASE.replace("c\n", "C\nC2\n").replace("h\n", "")
    diff = "".join(difflib.unified_diff(BASE.splitlines(True), new.splitlines(True), "old", "new"))
    assert patch.apply(BASE, diff) == new


def test_applier_no_newline_at_end_of_file() -> None:
    old, new = "x\ny", "x\nz\n"
    diff = "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n"
    assert patch.apply(old, diff) == new
    diff_back = "@@ -1,2 +1,2 @@\n x\n-z\n+y\n\\ No newline at end of file\n"
    assert patch.apply(new, diff_back) == old


def test_applier_keeps_crlf_lines_it_does_not_touch() -> None:
    assert patch.apply("a\r\nb\r\n", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n") == "a\r\nB\n"


def test_applier_refuses_overlapping_hunks_and_fuzz() -> None:
    with pytest.raises(patch.PatchError, match="overlaps"):
        patch.apply(BASE, "@@ -2,2 +2,2 @@\n b\n-c\n+C\n@@ -2,1 +2,1 @@\n-b\n+B\n")
    # The right lines one position off: no offset search, so this does not apply.
    with pytest.raises(patch.PatchError, match="old line 2 is 'b'"):
        patch.apply(BASE, "@@ -2,1 +2,1 @@\n-c\n+C\n")


def test_patch_error_is_a_user_error() -> None:
    assert issubclass(patch.PatchError, BeaverError)
