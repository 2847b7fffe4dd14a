"""`beavertui corpus minimize` through the real CLI, on a real release instance built by the real nvcc.

tests/data/release_minimize holds the release's cuda_225 (its broken start fails to build, its reference
builds). The compile-only oracle is the task's own build stage, so every answer here is nvcc's. The search is
cut by its call budget after the hunk phase and the blank/comment try (a whole line-level search takes
minutes of nvcc), then run again to show it goes on from its kept answers.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.corpus import fixes, patch
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.stage import stages

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "release_minimize" / "data"
TASK = "cuda_225__compile_error__ff82afee"


def _minimize(store: Path, *extra: str) -> list[str]:
    return ["corpus", "minimize", "--corpus", str(DATA), "--oracle", "compile", "--store", str(store), *extra]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_compile_oracle_searches_a_real_instance_and_goes_on_when_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert main(_minimize(store, "--max-calls", "5", "--json")) == 0
    out = capsys.readouterr()
    (doc,) = [json.loads(line) for line in out.out.splitlines()]
    # nvcc: the broken start fails, the reference builds, neither hunk alone builds; leaving out the
    # reference's blank and comment lines still builds; the line phase is then cut
    assert (doc["status"], doc["phase"], doc["minimality"], doc["oracle"]) == (
        "budget",
        "lines",
        "hunks",
        "compile",
    )
    assert (doc["hunks"], doc["reference_hunks"], doc["calls"], doc["asked"]) == (2, 2, 5, 5)
    assert doc["lines"] < doc["reference_lines"] and not doc["verified"] and doc["gpu"] is None
    # both hunks kept: the reference less its blank and comment lines is no minimal fix
    assert not doc["found"] and "budget ran out in the line phase" in doc["why"]
    assert f"start [1/1] {TASK}" in out.err and "minimal fixes: 0 of 1 tasks have one (0 verified)" in out.err
    folder = store / "compile-only"
    answers = folder / "answers" / "compile" / f"{TASK}.jsonl"
    kept = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [a["passed"] for a in kept] == [False, True, False, False, True]
    task = load_corpus(DATA, [TASK]).get(TASK)
    fixed = patch.apply(task.broken_start(), (folder / TASK / fixes.PATCH).read_text())
    cfg = stages.StageConfig()
    with stages.workdir(task, fixed, cfg) as work:
        assert stages.build(work, cfg).rc == 0  # the stored fix builds, as the oracle said
    assert fixes.record(folder)[TASK]["status"] == "budget"

    assert main(_minimize(store, "--max-calls", "1", "--json")) == 0
    (again,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert again["calls"] == 1 and again["asked"] == 6
    hashes = [json.loads(line)["hash"] for line in answers.read_text().splitlines()]
    assert len(hashes) == len(set(hashes)) == 6  # nothing asked twice


def test_bad_input_is_one_line_and_other_families_are_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = ROOT / "tests" / "data" / "release_real" / "data"
    assert (
        main(["corpus", "minimize", "--corpus", str(real), "--tasks", "nothing_*", "--oracle", "compile"])
        == 2
    )
    assert "no task of" in capsys.readouterr().err
    assert main(["corpus", "minimize", "--corpus", str(real), "--tasks", "@/nonexistent/list"]) == 2
    assert "/nonexistent/list: no such task list" in capsys.readouterr().err
    args = [
        "corpus",
        "minimize",
        "--corpus",
        str(real),
        "--tasks",
        "kernelbench_*,cutlass_*",
        "--oracle",
        "compile",
    ]
    assert main([*args, "--store", str(tmp_path), "--max-calls", "0"]) == 2
    assert "--max-calls must be 1 to 100,000, not 0" in capsys.readouterr().err
    assert main([*args, "--store", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        "kernelbench_level1_92__compile_error__52277656: its reference is not a drop-in solution (eager_model)"
        in err
    )
    assert (
        "cutlass_05_batched_gemm__perf_broken__3742c34f: its reference is not a drop-in solution (in_binary)"
        in err
    )
    assert "searching 0 task(s)" in err and "minimal fixes: 0 of 0 tasks" in err


def test_the_judge_oracle_limits_runs_from_the_reference_as_a_session_does() -> None:
    from beavertui.service.minimize import MinimizeOptions, plan

    real = ROOT / "tests" / "data" / "release_real" / "data"
    options = MinimizeOptions(corpus=real, tasks=("cuda_1__*", "cuda_59__*"))
    the_plan = plan(options, "nvidia_h200_sm_90_cuda_13_0")
    # cuda_1 is unusable on the H200 by the package's known verdicts; cuda_59's reference ran 0.28 s there
    assert "unusable on nvidia_h200_sm_90_cuda_13_0" in the_plan.skipped["cuda_1__memory_crash__4c324055"]
    (t,) = the_plan.tasks
    assert t.id == "cuda_59__logic_error__501f0dd2" and t.timeouts.run_s == 20.0
    assert "the reference's run of 0.28 s" in (t.timeouts.run_from or "")
    with pytest.raises(Exception, match="needs a GPU"):
        plan(options, None)


def test_a_replay_rebuilds_the_record_from_kept_judge_answers_without_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.corpus.minimal_search import Budget
    from beavertui.engine.validation import minimal_fixes as mf

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    data = ROOT / "tests" / "data" / "release_real" / "data"
    task_id, slug = "cuda_59__logic_error__501f0dd2", "nvidia_h200_sm_90_cuda_13_0"
    task = load_corpus(data, [task_id]).get(task_id)
    asked: list[str] = []

    def judge(code: str) -> mf.Answer:  # the answers a GPU gave: correct with the reference's predicate
        asked.append(code)
        ok = "return x > threshold" not in code and "return x < 0;" in code
        return mf.Answer(ok, "passed" if ok else "functional_correctness", ok, 1.0 if ok else None, "", 1.0)

    store = tmp_path / "store"
    kept = mf.search(task, judge, "judge", mf.Store(store, slug, 0.7), Budget(), slug, True, judge)
    assert kept.verified and asked
    record = store / slug / fixes.RECORD
    record.unlink()
    (store / slug / task_id / fixes.PATCH).unlink()
    n = len(asked)
    argv = ["corpus", "minimize", "--corpus", str(data), "--tasks", task_id, "--store", str(store), "--json"]
    assert main([*argv, "--replay", slug]) == 0
    out = capsys.readouterr()
    (doc,) = [json.loads(line) for line in out.out.splitlines()]
    # the hunk phase replayed over the kept answers; the line phase stops at its first question unanswered
    assert len(asked) == n and doc["calls"] == 0 and doc["gpu"] == slug
    assert (doc["status"], doc["phase"], doc["verified"], doc["lines"]) == (
        "budget",
        "lines",
        True,
        kept.lines,
    )
    assert f"replaying the kept answers of 1 task(s) with the judge oracle, into {store / slug}" in out.err
    assert json.loads(record.read_text())["tasks"][task_id]["verified"]
    assert patch.apply(task.broken_start(), (store / slug / task_id / fixes.PATCH).read_text()) == kept.fix
    assert main([*argv, "--replay", slug, "--oracle", "compile"]) == 2
    assert "--replay replays a judge search's kept answers" in capsys.readouterr().err
    # a mistyped signature wrote a record of nothing for it, exit 0; now one line, nothing written
    assert main([*argv, "--replay", "nvidia_h2oo_sm_90_cuda_13_0"]) == 2
    err = capsys.readouterr().err
    assert f"keeps no judge answers for that GPU signature (it keeps them for {slug})" in err
    assert sorted(p.name for p in store.iterdir()) == [slug]
    # another gate rewrote the record at that gate, its fix at 0.7 no longer verified; now refused
    before = record.read_text()
    assert main([*argv, "--replay", slug, "--gate", "0.5"]) == 2
    assert "was searched at gate 0.7 (1 task(s))" in capsys.readouterr().err
    assert record.read_text() == before


def test_missing_leaves_out_the_tasks_a_store_holds_a_verified_fix_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # cuda_59 and cusparse_4 have fixes the package ships (verified on an H100); cuda_104 has none anywhere
    real = ROOT / "tests" / "data" / "release_real" / "data"
    args = ["corpus", "minimize", "--corpus", str(real), "--tasks", "cuda_59_*,cusparse_4_*,cuda_104_*"]
    args += ["--oracle", "compile", "--store", str(tmp_path), "--dry-run"]
    assert main(args) == 0
    assert "3 task(s) to search" in capsys.readouterr().out
    assert main([*args, "--missing"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("cuda_104__compile_error__f8160fc8:") and "1 task(s) to search" in out.out
    for task in ("cuda_59__logic_error__501f0dd2", "cusparse_4__compile_error__cfcd99f6"):
        assert (
            f"skipped {task}: a verified minimal fix is stored (verified on nvidia_h100_80gb_hbm3_sm_90_cuda_13_0)"
            in out.err
        )
    # the run's own store counts too: a fix it verified for cuda_104 leaves cuda_104 out
    broken = load_corpus(real, ["cuda_104__compile_error__f8160fc8"]).get("cuda_104__compile_error__f8160fc8")
    gpu = tmp_path / "some_gpu"
    (gpu / "cuda_104__compile_error__f8160fc8").mkdir(parents=True)
    source = broken.broken_start()
    fixed = source.replace("\n", "\n// fixed\n", 1)
    diff = "".join(difflib.unified_diff(source.splitlines(True), fixed.splitlines(True), "a", "b"))
    (gpu / "cuda_104__compile_error__f8160fc8" / fixes.PATCH).write_text(diff)
    record = {"gate": 0.7, "tasks": {"cuda_104__compile_error__f8160fc8": {"verified": True}}}
    (gpu / fixes.RECORD).write_text(json.dumps(record))
    assert main([*args, "--missing"]) == 0
    out = capsys.readouterr()
    assert "0 task(s) to search" in out.out and "(verified on some_gpu)" in out.err


def test_an_option_the_search_would_ignore_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The compile-only oracle builds on no GPU, and a replay asks no oracle: --gpu, --gpu-jobs and
    --time-every-candidate (compile), --gpu, --gpu-jobs and --max-calls (replay) did nothing there."""
    base = ["corpus", "minimize", "--corpus", str(DATA), "--store", str(tmp_path), "--dry-run"]
    for extra, said in (
        (
            ["--oracle", "compile", "--gpu", "0"],
            "--oracle compile builds only, on no GPU: --gpu would be ignored",
        ),
        (
            ["--oracle", "compile", "--gpu-jobs", "4", "--time-every-candidate"],
            "--gpu-jobs, --time-every-candidate",
        ),
        (
            ["--replay", "some_gpu", "--max-calls", "5"],
            "--replay asks no oracle and needs no GPU: --max-calls",
        ),
    ):
        assert main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, extra
    assert main([*base, "--oracle", "compile"]) == 0
    assert list(tmp_path.iterdir()) == []


def test_a_search_without_nvcc_is_refused_before_it_poisons_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without nvcc on PATH every build answered 'nvcc: command not found': the compile-only search of
    cuda_225 recorded reference_fails, exit 0, and kept those answers, so a later run with nvcc took them
    again and said the same. Now one line, exit 2, nothing written; a dry run needs no nvcc."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    store = tmp_path / "store"
    assert main(_minimize(store, "--max-calls", "2")) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("beavertui: nvcc is not on PATH")
    assert not store.exists()
    assert main(_minimize(store, "--dry-run")) == 0


def test_a_task_list_is_read_bounded_and_one_naming_no_task_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tasks @FIFO`` and ``@/dev/zero`` hung (the latter filling memory), a list not UTF-8 was a
    traceback, and an empty list, ``--tasks ''`` or ``--tasks ,`` searched every task of the corpus."""
    import os

    fifo, empty, comments, binary = (tmp_path / n for n in ("fifo", "empty.txt", "c.txt", "b.txt"))
    os.mkfifo(fifo)
    empty.write_text("")
    comments.write_text("# nothing yet\n\n")
    binary.write_bytes(b"\xff\xfe")
    argv = ["corpus", "minimize", "--corpus", str(DATA), "--oracle", "compile", "--dry-run", "--tasks"]
    cases = {
        f"@{fifo}": "is a FIFO, not a task list",
        "@/dev/zero": "is a device, not a task list",
        f"@{binary}": "not UTF-8 text",
        f"@{empty}": "lists no task id",
        f"@{comments}": "lists no task id",
        "": "--tasks names no task",
        " , ": "--tasks names no task",
    }
    for given, says in cases.items():
        assert main([*argv, given]) == 2, given
        out = capsys.readouterr()
        assert out.out == "" and says in out.err and len(out.err.splitlines()) == 1, (given, out.err)
    for listed in (empty, comments):
        args = [
            "corpus",
            "baselines",
            "--corpus",
            str(DATA),
            "--table",
            "--gpu-slug",
            "nvidia_h200_sm_90_cuda_13_0",
        ]
        assert main([*args, "--tasks-file", str(listed)]) == 2
        assert "lists no task id" in capsys.readouterr().err
