"""Minimal fixes of a real release instance searched, stored per GPU and read back as scoring targets.

The instance is the release's cuda_59 (tests/data/release_real): its broken start flags ``x > threshold``
where the reference's predicate is ``x < 0``. The oracle here is built by the test (it passes a text whose
predicate is the reference's and that no longer has the broken one), so every answer is known; the
GPU-backed judge oracle is exercised by scripts/gpu-minimal-fixes.sh.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.engine.corpus import fixes, patch
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.minimal_search import Budget, BudgetExhausted, _line, diff, unified
from beavertui.engine.validation import minimal_fixes as mf

ROOT = Path(__file__).resolve().parents[3]
TASK = "cuda_59__logic_error__501f0dd2"
H200 = "nvidia_h200_sm_90_cuda_13_0"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(fixes, "KNOWN_FIXES", tmp_path / "no-package-fixes")  # only what a test stores
    fixes.clear_caches()
    yield tmp_path / "xdg" / "beavertui"
    fixes.clear_caches()


def task() -> object:
    return load_corpus(ROOT / "tests" / "data" / "release_real" / "data", [TASK]).get(TASK)


def oracle(calls: list[str]) -> object:
    def ask(code: str) -> mf.Answer:
        calls.append(code)
        ok = "return x > threshold" not in code and "return x < 0;" in code
        return mf.Answer(ok, "passed" if ok else "functional_correctness", ok, 1.01 if ok else None, "", 0.5)

    return ask


def test_a_fix_found_by_the_judge_is_stored_verified_and_is_the_scoring_target(cache: Path) -> None:
    t = task()
    here = str(ROOT / "tests" / "data" / "release_real" / "data")
    none = fixes.target_for(here, TASK, t.broken_start())  # type: ignore[attr-defined]
    assert none.source is None and "beavertui corpus minimize" in (none.reason or "")
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    calls: list[str] = []
    out = mf.search(t, oracle(calls), "judge", store, Budget(max_calls=100), H200)  # type: ignore[arg-type]
    assert out.status == "minimal" and out.verified and out.minimality == "lines"
    assert (out.lines, out.hunks, out.reference_hunks, out.reference_lines) == (2, 1, 4, 34)
    assert out.speedup == 1.01 and out.gpu == H200 and out.calls == len(calls) == out.asked
    broken = t.broken_start()  # type: ignore[attr-defined]
    assert out.fix is not None and "return x < 0;" in out.fix and "return x > threshold" not in out.fix
    # the corpus's own layout, in this machine's store, one folder per GPU signature
    folder = cache / "minimal_fixes" / H200
    entry = json.loads((folder / fixes.RECORD).read_text())["tasks"][TASK]
    assert entry["verified"] is True and entry["gpu"] == H200 and entry["speedup"] == 1.01
    assert entry["minimality"] == "lines" and "correct and at least 0.7x" in entry["why"]
    assert patch.apply(broken, (folder / TASK / fixes.PATCH).read_text()) == out.fix
    assert _marked((folder / TASK / fixes.PATCH).read_text()) == out.lines
    # a session recorded here, or on another machine (its corpus path is not here), takes the stored fix
    assert fixes.target_for("/elsewhere/release/data", TASK, broken).source == out.fix
    assert fixes.target_for(here, TASK, broken).source == out.fix
    other = fixes.target_for(
        "/elsewhere/release/data", TASK, broken.replace("x > threshold", "x >= threshold")
    )
    assert other.source is None and "does not apply" in (other.reason or "")
    # the bundled tasks keep their own record: a store never stands in for it
    assert (
        fixes.target_for("", "spmv_csr_01", "x").reason == "minimal fix does not apply to this broken start"
    )


def _marked(text: str) -> int:
    return sum(line[:1] in "-+" for line in text.splitlines() if not line.startswith(("--- ", "+++ ")))


def test_the_stored_patch_is_the_searchs_own_edit_not_a_re_diff(cache: Path) -> None:
    # the release's cublas_level1_10: a fix that removes the blank line after the helpers' include and the
    # <cuda_runtime.h> and <vector> includes, 3 of the first hunk's units. difflib's re-diff of the broken
    # start and that fix matches the blank line elsewhere and marks 5 lines; the patch stored marks the 3
    tid = "cublas_level1_10__compile_error__d6b7227b"
    t = load_corpus(ROOT / "tests" / "data" / "release_real" / "data", [tid]).get(tid)
    broken, reference = t.broken_start(), t.reference()
    assert reference is not None
    d = diff(broken, reference)
    chosen = frozenset({2, 4, 7})
    assert [_line(d, u) for u in sorted(chosen)] == ["", "#include <cuda_runtime.h>", "#include <vector>"]
    fix = d.apply(chosen)
    assert _marked(unified(broken, fix)) == 5
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    out = mf.Outcome(
        task_id=tid, status="minimal", found=True, verified=True, why="", phase="done", minimality="lines",
        lines=len(chosen), reference_lines=len(d.units), hunks=1, reference_hunks=len(d.hunks),
        changed_lines=None, reference_changed_lines=0, calls=0, asked=0, speedup=1.0, correct=True, gpu=H200,
        oracle="judge", fix=fix, chosen=chosen,
    )  # fmt: skip
    store.save(t, out, d)
    stored = (store.folder / tid / fixes.PATCH).read_text()
    assert patch.apply(broken, stored) == fix and _marked(stored) == 3
    assert "chosen" not in json.loads((store.folder / fixes.RECORD).read_text())["tasks"][tid]
    # without the search's units (a caller that has only the fix) the patch is the re-diff
    store.save(t, out)
    assert (store.folder / tid / fixes.PATCH).read_text() == unified(broken, fix)


def test_a_search_run_again_goes_on_from_its_kept_answers(cache: Path) -> None:
    t = task()
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    first: list[str] = []
    cut = mf.search(t, oracle(first), "judge", store, Budget(max_calls=3), H200)  # type: ignore[arg-type]
    assert cut.status == "budget" and not cut.verified and len(first) == 3 and "run again" in cut.why
    entry = fixes.record(store.folder)[TASK]
    assert entry["status"] == "budget" and fixes.target_for("/x", TASK, t.broken_start()).source is None  # type: ignore[attr-defined]
    answers = store.folder / "answers" / "judge" / f"{TASK}.jsonl"
    assert len(answers.read_text().splitlines()) == 3
    second: list[str] = []
    done = mf.search(t, oracle(second), "judge", store, Budget(max_calls=100), H200)  # type: ignore[arg-type]
    assert done.status == "minimal" and done.verified
    assert not set(first) & set(second)  # nothing asked twice
    fresh: list[str] = []
    whole = mf.search(t, oracle(fresh), "judge", mf.Store(cache / "other", H200, 0.7), Budget(), H200)  # type: ignore[arg-type]
    assert len(first) + len(second) == len(fresh) and whole.fix == done.fix
    # answers of another gate or oracle are not taken for these
    again: list[str] = []
    mf.search(t, oracle(again), "judge", mf.Store(fixes.store_roots()[0], H200, 0.5), Budget(), H200)  # type: ignore[arg-type]
    assert len(again) == len(fresh)


def test_compile_only_and_whole_reference_results_are_never_targets(cache: Path) -> None:
    t = task()
    broken = t.broken_start()  # type: ignore[attr-defined]
    store = mf.Store(fixes.store_roots()[0], mf.COMPILE_GPU, 0.7)
    out = mf.search(t, oracle([]), "compile", store, Budget(), None)  # type: ignore[arg-type]
    assert out.status == "minimal" and not out.verified and out.gpu is None
    assert "compile-only oracle" in out.why and (store.folder / TASK / fixes.PATCH).is_file()
    target = fixes.target_for("/x", TASK, broken)
    assert target.source is None and "compile-only" in (target.reason or "")
    shutil.rmtree(store.folder)
    ref = t.reference()  # type: ignore[attr-defined]
    h200 = mf.Store(fixes.store_roots()[0], H200, 0.7)

    def only_the_reference(code: str) -> mf.Answer:
        return mf.Answer(code == ref, "passed", True, 1.0, "", 0.1)

    out = mf.search(t, only_the_reference, "judge", h200, Budget(), H200)  # type: ignore[arg-type]
    assert out.status == "whole" and not out.verified and out.lines == out.reference_lines
    assert not (h200.folder / TASK / fixes.PATCH).exists()
    target = fixes.target_for("/x", TASK, broken)
    assert target.source is None and "only repair found is the whole reference" in (target.reason or "")


def test_runs_share_the_gpu_and_a_timing_holds_it_alone() -> None:
    import threading

    from beavertui.engine.stage.stages import StageConfig

    place = mf.SharedGpu(runs=2)
    cfg = StageConfig()
    order: list[str] = []
    release = {name: threading.Event() for name in "ABTD"}
    inside = {name: threading.Event() for name in "ABTD"}

    def stage(name: str, use: str) -> None:
        with place.gpu(use, cfg, None) as lease:  # type: ignore[arg-type]
            order.append(name)
            assert lease.shared == (use == "run")
            inside[name].set()
            release[name].wait(30)

    threads = {n: threading.Thread(target=stage, args=(n, "timing" if n == "T" else "run")) for n in "ABTD"}
    for name in "AB":  # two runs at once
        threads[name].start()
        assert inside[name].wait(30)
    threads["T"].start()  # the timing waits for both
    with place._cond:
        assert place._cond.wait_for(lambda: place._waiting == 1, 30)
    threads["D"].start()  # a run asked for while a timing waits starts after it
    release["A"].set()
    release["B"].set()
    assert inside["T"].wait(30)
    assert not inside["D"].is_set() and place._alone
    release["T"].set()
    assert inside["D"].wait(30)
    release["D"].set()
    for t in threads.values():
        t.join(30)
    assert order == ["A", "B", "T", "D"]


def test_the_figures_script_counts_verified_fixes_and_their_size(cache: Path) -> None:
    import subprocess
    import sys

    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    mf.search(task(), oracle([]), "judge", store, Budget(), H200)  # type: ignore[arg-type]
    ids = store.folder.parent / "ids.txt"
    ids.write_text(f"# two instances, one searched\n{TASK}\ncuda_1__memory_crash__4c324055\n")
    script = ROOT / "scripts" / "minimal_fixes_figures.py"
    cmd = [sys.executable, str(script), str(store.folder), "--tasks", str(ids)]
    doc = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=True).stdout)
    assert (doc["instances"], doc["verified"], doc["share"]) == (2, 1, 0.5)
    assert (doc["median_fix_lines"], doc["median_reference_lines"]) == (2, 34)
    assert doc["statuses"] == {"minimal": 1, "not searched yet": 1}
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert text.startswith(f"Minimal fixes on {H200}: 1 of 2 instances verified (50%)")
    assert "Median size of a verified fix: 2 lines, against 34 lines" in text


def test_a_fix_cut_after_its_hunk_phase_is_a_target_only_when_it_left_a_hunk_out(cache: Path) -> None:
    t = task()
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    out = mf.search(t, oracle([]), "judge", store, Budget(), H200, hunks_only=True)  # type: ignore[arg-type]
    # the predicate's hunk alone passes: 1 of 4 hunks, a target before the line phase
    assert (out.status, out.minimality, out.hunks, out.verified) == ("budget", "hunks", 1, True)
    assert "1-minimal over hunks, not yet over lines" in out.why
    assert fixes.target_for("/x", TASK, t.broken_start()).source == out.fix  # type: ignore[attr-defined]
    ref = t.reference()  # type: ignore[attr-defined]

    def every_hunk(code: str) -> mf.Answer:  # passes with every hunk's code lines, comments or not
        lines = {
            line.strip() for line in code.splitlines() if line.strip() and not line.strip().startswith("//")
        }
        ok = {
            line.strip() for line in ref.splitlines() if line.strip() and not line.strip().startswith("//")
        } <= lines
        ok = ok and "sign_pred" not in code and "threshold" not in code
        return mf.Answer(ok, "passed", ok, 1.0, "", 0.1)

    other = mf.Store(cache / "other", H200, 0.7)
    whole = mf.search(t, every_hunk, "judge", other, Budget(), H200, hunks_only=True)  # type: ignore[arg-type]
    assert (
        whole.hunks == whole.reference_hunks and whole.lines == whole.reference_lines and not whole.verified
    )
    # one more call: the reference's blank and comment lines left out pass; then the budget cuts the line phase
    cut = mf.search(t, every_hunk, "judge", other, Budget(max_calls=1), H200)  # type: ignore[arg-type]
    assert cut.status == "budget" and cut.minimality == "hunks" and cut.hunks == cut.reference_hunks
    assert cut.lines is not None and cut.lines < cut.reference_lines and cut.calls == 1
    assert not cut.found and not cut.verified  # every line of code of the reference still in it


def _judge(calls: list[str], fast_needs: str | None) -> object:
    """The judge built for these tests: correct as ``oracle`` says, 1.0x, or 0.5x without ``fast_needs``."""

    def ask(code: str) -> mf.Answer:
        calls.append(code)
        correct = "return x > threshold" not in code and "return x < 0;" in code
        speed = 1.0 if fast_needs is None or fast_needs in code else 0.5
        ok = correct and speed >= 0.7
        return mf.Answer(ok, "passed" if correct else "functional_correctness", correct, speed, "", 0.5)

    return ask


def test_the_screen_searches_for_correctness_and_the_judge_times_what_it_ends_with(cache: Path) -> None:
    t = task()
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    screened: list[str] = []
    timed: list[str] = []
    out = mf.search(t, _judge(timed, None), "judge", store, Budget(), H200, screen=oracle(screened))  # type: ignore[arg-type]
    assert out.status == "minimal" and out.verified and out.lines == 2 and out.speedup == 1.0
    assert len(timed) == 1 and timed[0] == out.fix  # one timing: the fix the screen ended with
    assert out.asked == len(screened) + 1 == out.calls
    judge_file = store.folder / "answers" / "judge" / f"{TASK}.jsonl"
    assert len(judge_file.read_text().splitlines()) == 1
    assert len((store.folder / "answers" / "correct" / f"{TASK}.jsonl").read_text().splitlines()) == len(
        screened
    )


def test_a_correct_set_below_the_gate_is_searched_again_by_the_judge(cache: Path) -> None:
    t = task()
    fast = "return thrust::any_of(vec.begin(), vec.end(), is_negative {});"
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    screened: list[str] = []
    timed: list[str] = []
    out = mf.search(t, _judge(timed, fast), "judge", store, Budget(), H200, screen=oracle(screened))  # type: ignore[arg-type]
    assert out.status == "minimal" and out.verified and out.speedup == 1.0
    assert out.fix is not None and fast in out.fix and "return x < 0;" in out.fix
    assert "0.500x the reference's speed, below 0.7x: searched again at the gate" in out.why
    # the judge's own search took the screen's incorrect answers as its own
    judge_only: list[str] = []
    alone = mf.Store(cache / "alone", H200, 0.7)
    same = mf.search(t, _judge(judge_only, fast), "judge", alone, Budget(), H200)  # type: ignore[arg-type]
    assert same.fix == out.fix
    wrong = {c for c in screened if "return x < 0;" not in c or "return x > threshold" in c}
    assert wrong and not wrong & set(timed)  # nothing the screen found incorrect was timed
    assert wrong & set(judge_only)  # which the judge alone asks about (and times where it is correct)
    assert len(set(timed)) == len(timed)


def _builds(calls: list[str], reference_builds: bool = True) -> object:
    """A compile-only oracle built for these tests: the broken predicate is taken as a compile error."""

    def ask(code: str) -> mf.Answer:
        calls.append(code)
        ok = "return x > threshold" not in code and (reference_builds or "return x < 0;" not in code)
        return mf.Answer(ok, "passed" if ok else "buildability", None, None, "", 0.2)

    return ask


def test_candidates_a_compile_only_search_kept_as_unbuildable_are_not_asked_on_the_gpu(cache: Path) -> None:
    t = task()
    root = fixes.store_roots()[0]
    built: list[str] = []
    mf.search(t, _builds(built), "compile", mf.Store(root, mf.COMPILE_GPU, 0.7), Budget(), None)  # type: ignore[arg-type]
    unbuildable = {c for c in built if "return x > threshold" in c}
    assert unbuildable and t.reference() in built  # type: ignore[attr-defined]
    screened: list[str] = []
    timed: list[str] = []
    store = mf.Store(root, H200, 0.7)
    out = mf.search(t, _judge(timed, None), "judge", store, Budget(), H200, screen=oracle(screened))  # type: ignore[arg-type]
    # the same fix as a search that asks everything, with none of the unbuildable candidates asked
    alone: list[str] = []
    same = mf.search(
        t,
        _judge([], None),
        "judge",
        mf.Store(cache / "alone", H200, 0.7),
        Budget(),
        H200,
        screen=oracle(alone),
    )  # type: ignore[arg-type]
    assert out.fix == same.fix and out.verified and out.lines == 2
    assert not unbuildable & set(screened + timed) and unbuildable & set(alone)
    assert len(screened) < len(alone)
    saved = len(set(alone) & unbuildable)
    assert f"{saved} candidates failed by their kept compile-only build, not asked on the GPU" in out.why


def test_compile_only_answers_are_not_trusted_where_the_reference_did_not_build(cache: Path) -> None:
    t = task()
    root = fixes.store_roots()[0]
    built: list[str] = []
    mf.search(
        t,
        _builds(built, reference_builds=False),
        "compile",
        mf.Store(root, mf.COMPILE_GPU, 0.7),
        Budget(),
        None,
    )  # type: ignore[arg-type]
    screened: list[str] = []
    out = mf.search(
        t, _judge([], None), "judge", mf.Store(root, H200, 0.7), Budget(), H200, screen=oracle(screened)
    )  # type: ignore[arg-type]
    assert out.verified and "compile-only build" not in out.why
    assert {c for c in built if "return x > threshold" in c} & set(screened)  # asked on the GPU after all


def test_a_line_phase_cut_before_its_timing_keeps_the_verified_hunk_fix(cache: Path) -> None:
    t = task()
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    screened: list[str] = []
    timed: list[str] = []
    first = mf.search(
        t, _judge(timed, None), "judge", store, Budget(), H200, hunks_only=True, screen=oracle(screened)
    )  # type: ignore[arg-type]
    assert (first.status, first.minimality, first.hunks, first.verified) == ("budget", "hunks", 1, True)
    assert timed == [first.fix]  # the hunk phase's set, timed at the gate
    # the next search replays the hunk phase for free, and the budget cuts the line phase after one more
    # screened (correct, untimed) set: the record keeps the verified hunk fix, not the untimed set
    cut = mf.search(
        t, _judge(timed, None), "judge", store, Budget(max_calls=1), H200, screen=oracle(screened)
    )  # type: ignore[arg-type]
    assert cut.status == "budget" and cut.phase == "lines" and cut.calls == 1
    assert "not timed at the gate yet: the fix kept is the hunk phase's" in cut.why
    assert (cut.verified, cut.fix, cut.lines, cut.speedup) == (True, first.fix, first.lines, 1.0)
    assert len(timed) == 1
    record = json.loads((store.folder / fixes.RECORD).read_text())["tasks"][TASK]
    assert record["verified"] and record["lines"] == first.lines
    assert fixes.target_for("/x", TASK, t.broken_start()).source == first.fix  # type: ignore[attr-defined]
    # run to its end, the line phase's own fix is timed and replaces it
    done = mf.search(t, _judge(timed, None), "judge", store, Budget(), H200, screen=oracle(screened))  # type: ignore[arg-type]
    assert done.status == "minimal" and done.verified and done.lines is not None and done.lines < first.lines


class _CutAfterASlowTiming(Budget):
    """A budget that runs out once the judge has timed a correct set below the gate."""

    slow = False

    def spend(self) -> None:
        if self.slow:
            raise BudgetExhausted("out of wall time after the timing")
        super().spend()


def test_a_search_again_at_the_gate_cut_before_it_began_keeps_the_verified_hunk_fix(cache: Path) -> None:
    """Seen on an H100 (cuda_216): the screen's line phase ended with a set below the gate, the judge's own
    search was cut before it began, and the record kept no fix, though the hunk phase's had passed."""
    t = task()
    fast = (
        "struct is_negative"  # in the predicate's hunk; the line phase's set keeps the broken start's struct
    )
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    timed: list[str] = []
    first = mf.search(
        t, _judge(timed, fast), "judge", store, Budget(), H200, hunks_only=True, screen=oracle([])
    )  # type: ignore[arg-type]
    assert first.verified and first.fix is not None and fast in first.fix
    budget = _CutAfterASlowTiming()
    judge = _judge(timed, fast)

    def timing(code: str) -> mf.Answer:
        answer = judge(code)  # type: ignore[operator]
        budget.slow = budget.slow or (answer.correct and not answer.passed)
        return answer  # type: ignore[no-any-return]

    out = mf.search(t, timing, "judge", store, budget, H200, screen=oracle([]))
    assert timed[-1] != first.fix and fast not in timed[-1]  # the line phase's set, timed below the gate
    assert "below 0.7x: searched again at the gate" in out.why and "before the search began" in out.why
    assert out.status == "budget" and out.verified and out.minimality == "hunks"
    assert (out.fix, out.lines, out.speedup) == (first.fix, first.lines, 1.0)
    assert "the fix kept is the hunk phase's, timed at the gate" in out.why


def test_an_answer_with_no_verdict_is_never_kept(cache: Path, tmp_path: Path) -> None:
    """An oracle call the GPU or the toolchain failed (category infrastructure) was kept as the candidate's
    failing answer, so the search went on as if the candidate failed and every later run took it again. The
    search now stops with the reason, keeps the answers before it and records nothing for the task."""
    from beavertui.engine.errors import BeaverError

    t = task()
    calls: list[str] = []
    good = oracle(calls)

    def flaky(code: str) -> mf.Answer:
        if len(calls) == 2:
            calls.append(code)
            return mf.Answer(False, "infrastructure", None, None, "cudaErrorDevicesUnavailable", 0.1)
        return good(code)  # type: ignore[operator,no-any-return]

    store = mf.Store(tmp_path / "store", H200, 0.7)
    with pytest.raises(BeaverError, match="no verdict \\(infrastructure: cudaErrorDevicesUnavailable\\)"):
        mf.search(t, flaky, "judge", store, Budget(), H200)  # type: ignore[arg-type]
    kept = store.answers(t, "judge")  # type: ignore[arg-type]
    assert len(calls) == 3 and len(kept.kept) == 2 and kept.get(calls[2]) is None
    assert not (store.folder / fixes.RECORD).exists()
    # such an answer kept by an earlier version is asked again, not taken
    doc = {"hash": "h", "oracle": "judge", "gate": 0.7, "harness": kept.harness, "passed": False,
           "category": "infrastructure", "correct": None, "speedup": None, "reason": "x", "seconds": 0.1}  # fmt: skip
    with kept.path.open("a") as f:
        f.write(json.dumps(doc) + "\n")
    assert "h" not in store.answers(t, "judge").kept  # type: ignore[arg-type]
