"""Process-level timing runs started ahead of their turn (TimingConfig.prestart, cupti/beaver_cupti.c).

No GPU here, so no CUDA driver loads the injection library: the test program does what the driver does at
cuInit (dlopen CUDA_INJECTION64_PATH, call InitializeInjection), through the real sandbox (a private /tmp)
and the real Timer, the library built from the shipped source. It writes a file when it starts, when it is
past the gate (its "CUDA work" begins) and when it ends, in a folder named on its command line (so that the
sandbox keeps it). The checks are
orderings, not durations, so load on the machine cannot change them: every run is started while the run
before it is still at work, and no run is past its gate before the run before it has ended.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import BeaverError
from beavertui.engine.stage import stages
from beavertui.engine.timing import cupti
from beavertui.engine.timing.speedup import Timer, TimingConfig

DATA = Path(__file__).parents[2] / "data"

APP = r"""
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir_;

static int count(const char *prefix) {
    int n = 0;
    DIR *d = opendir(dir_);
    struct dirent *e;
    while (d && (e = readdir(d))) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}

static void mark(const char *what, int i) {  /* a file of its own (pids repeat across PID namespaces) */
    char p[4096];
    snprintf(p, sizeof p, "%s/%s-%d-XXXXXX", dir_, what, i);
    int fd = mkstemp(p);
    if (fd >= 0) close(fd);
}

static int me = -1;

#ifdef LATE
/* Registered before the injection library's own exit handler, so it runs after it: past the exit mark,
   before the process ends. Waits (up to 30 s) for the next run to be past its gate, except in the last. */
static void late(void) {
    int next_began = 0;
    if (me >= 0 && me < LATE) {
        for (int t = 0; t < 30000 && !next_began; t++) {
            next_began = count("began") >= me + 2;
            usleep(1000);
        }
    }
    printf("run %d next_began_before_this_ended %d\n", me, next_began);
}
#endif

int main(int argc, char **argv) {
    if (argc < 2) return 5;
    dir_ = argv[1];
    mark("started", 0);
#ifdef LATE
    atexit(late);
#endif
    char slow[4096], mine[4096];             /* the one run that claims the file "slow" waits its ms first */
    snprintf(slow, sizeof slow, "%s/slow", dir_);
    snprintf(mine, sizeof mine, "%s/slow-claimed", dir_);
    if (rename(slow, mine) == 0) {
        FILE *f = fopen(mine, "r");
        int ms = 0;
        if (f) { if (fscanf(f, "%d", &ms) != 1) ms = 0; fclose(f); }
        usleep(ms * 1000);
    }
    const char *lib = getenv("CUDA_INJECTION64_PATH");
    if (lib) {                               /* what the driver does at cuInit */
        void *h = dlopen(lib, RTLD_NOW);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (!init) { printf("the injection library did not load\n"); return 4; }
        mark("parked", 0);                   /* at its gate from here, until its go */
        init(); /* 0 here when it records kernels: CUPTI has no GPU to record (its gate and marks work) */
    }
    int i = count("began");                  /* past the gate: its place in the order */
    me = i;
    int previous_ended = i == 0 || count("ended") == i;
    mark("began", i);
    int next_started = 1;
    if (i + 1 < ROUNDS) {                    /* the next run is started while this one works */
        next_started = 0;
        for (int t = 0; t < 30000 && !next_started; t++) {
            next_started = count("started") >= i + 2;
            usleep(1000);
        }
    }
    printf("run %d previous_ended %d next_started %d at_gate_when_it_began %d\n", i, previous_ended,
           next_started, count("parked"));
    printf("Kernel time: 1.0000 ms\nSpeedup: 1.0000x\n");
    fflush(stdout);
    mark("ended", i);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built_injection(tmp_path_factory: pytest.TempPathFactory) -> Path | str:
    """The injection library built once for the module (or why it cannot be built here)."""
    try:
        return cupti.build_library(tmp_path_factory.mktemp("cupti-cache"))
    except BeaverError as exc:
        return str(exc)


@pytest.fixture
def injection(tmp_path: Path, built_injection: Path | str) -> Path:
    """The injection library in this test's cache, where its timer looks: the module's build, copied (the same
    source and toolkit give the same file name, which build_library then finds there without building)."""
    if isinstance(built_injection, str):
        pytest.skip(f"the CUPTI injection library cannot be built here: {built_injection}")
    copy = tmp_path / "cache" / "cupti" / built_injection.name
    copy.parent.mkdir(parents=True)
    shutil.copy2(built_injection, copy)
    found = cupti.build_library(tmp_path / "cache")
    assert found == copy
    return found


#: The test applications built so far in this module, by (ROUNDS, LATE), in the module's own folder.
_APPS: dict[tuple[int, int | None], Path] = {}
_APPS_DIR: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _apps_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _APPS_DIR[:] = [tmp_path_factory.mktemp("apps")]
    yield
    _APPS.clear()
    _APPS_DIR.clear()


def _app(tmp_path: Path, rounds: int, late: int | None = None) -> tuple[Path, Path]:
    """The test application for ``rounds`` (and ``late``), built by gcc once a module and copied here (built
    here when called from another module, which has no folder of builds: tests/batch/test_batch_schedule.py)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no C compiler")
    marks = tmp_path / "marks"
    marks.mkdir()
    built = _APPS.get((rounds, late)) if _APPS_DIR else None
    if built is None:
        folder = (_APPS_DIR[0] if _APPS_DIR else tmp_path) / f"r{rounds}-l{late}"
        folder.mkdir()
        src, built = folder / "app.c", folder / "app"
        src.write_text(APP)
        late_flag = [f"-DLATE={late}"] if late is not None else []
        subprocess.run(
            [gcc, f"-DROUNDS={rounds}", *late_flag, str(src), "-o", str(built), "-ldl"], check=True
        )
        if _APPS_DIR:
            _APPS[(rounds, late)] = built
    exe = tmp_path / "app"
    shutil.copy2(built, exe)
    return exe, marks


def _timer(tmp_path: Path, exe: Path, prestart: str) -> tuple[Timer, stages.WorkDir]:
    command = f"{exe} {tmp_path / 'marks'}"
    task = dataclasses.replace(load_corpus(DATA / "cpu").get("sleepy"), test_command=command)
    cfg = stages.StageConfig(base_dir=tmp_path / "work")
    timer = Timer(
        task, cfg, TimingConfig(cache=tmp_path / "cache", method="testbench_lines", prestart=prestart)
    )
    work = stages.prepare(task, task.reference() or "", tmp_path / "work")
    timer.prepare()
    return timer, work


def test_testbench_runs_all_park_before_the_first_goes_and_go_on_one_after_another(
    tmp_path: Path, injection: Path
) -> None:
    exe, marks = _app(tmp_path, rounds=3)
    timer, work = _timer(tmp_path, exe, prestart="all")
    result = timer.measure(work)
    assert result.method == "testbench_lines" and result.speedup == pytest.approx(1.0)
    assert "started in turn" not in (result.note or "")
    assert "its 3 runs started at once with the GPU held and waited before CUDA" in (result.note or "")
    logs = [res.log for _, res in timer.runs]
    assert len(logs) == 3
    for i, log in enumerate(logs):
        want = f"run {i} previous_ended 1 next_started 1"
        assert want in log, log
    # all three started at once and reached their gates before the first went on: no run's start (seconds
    # of a Python harness's imports) overlaps a timed run
    assert "run 0 previous_ended 1 next_started 1 at_gate_when_it_began 3" in logs[0], logs[0]
    assert len(list(marks.glob("started-*"))) == 3  # no run started beyond the last round
    assert all(p["gated"] for p in timer.phases) and len(timer.phases) == 3
    assert all("parked_s" in p and "to_cuda_s" in p and "cuda_to_exit_s" in p for p in timer.phases)


def test_a_testbench_run_that_does_not_reach_its_gate_within_the_stage_limit_times_out_as_in_turn(
    tmp_path: Path, injection: Path
) -> None:
    """One of the three runs takes 8 s before its first CUDA call, with a stage limit of 2 s. The others are
    not held back past that limit waiting for its gate: once 2 s have passed they are let go, one at a time,
    and the slow one, in its turn, gets its 2 s from its go like any run and is ended, as it would be in
    turn. Waiting for its gate instead would let it pass and hold the GPU for its whole start."""
    exe, marks = _app(tmp_path, rounds=3)
    (marks / "slow").write_text("8000")
    timer, work = _timer(tmp_path, exe, prestart="all")
    timer.tcfg = dataclasses.replace(timer.tcfg, stage_s=2.0)
    with pytest.raises(BeaverError, match="no usable Speedup line"):
        timer.measure(work)
    assert (marks / "slow-claimed").exists()
    assert timer.runs and timer.runs[-1][1].timed_out  # the slow one, ended at its limit
    assert all(res.rc == 0 for _, res in timer.runs[:-1])  # those before it in the order were timed


def test_without_prestart_each_run_starts_in_its_turn(tmp_path: Path, injection: Path) -> None:
    exe, marks = _app(tmp_path, rounds=1)  # no run waits for a next one
    timer, work = _timer(tmp_path, exe, prestart="off")
    result = timer.measure(work)
    assert len(timer.runs) == 3 and result.speedup == pytest.approx(1.0)
    assert len(list(marks.glob("began-*"))) == 3 and timer.phases == []  # run_stage, no injection
    assert (result.note or "").endswith("; its 3 runs started one after another")


def test_a_gate_the_run_cannot_see_falls_back_to_runs_in_turn(
    tmp_path: Path, injection: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe, _marks = _app(tmp_path, rounds=1)
    timer, work = _timer(tmp_path, exe, prestart="all")
    monkeypatch.setattr(cupti, "gate_file", lambda folder: folder / "not-the-go")
    monkeypatch.setattr("beavertui.engine.timing.parked.GATE_CHECK_S", 0.5)
    result = timer.measure(work)
    assert timer.gate_broken and "runs started in turn" in (result.note or "")
    assert "its 3 runs started one after another; runs started in turn: " in (result.note or "")
    assert "with the GPU held" not in (result.note or "")
    assert len(timer.runs) == 3 and all(res.rc == 0 for _, res in timer.runs)


def test_a_run_in_turn_writes_its_marks_where_the_timer_reads_them(tmp_path: Path, injection: Path) -> None:
    """The injection file of a run that is not gated comes back through the sandbox's private /tmp too."""
    exe, _marks = _app(tmp_path, rounds=1)
    timer, work = _timer(tmp_path, exe, prestart="off")
    text, res = timer.ctx.end_run(timer.ctx.start_run(work, "candidate", gated=False, kernels=False))
    assert res.rc == 0 and "run 0 previous_ended 1" in res.log
    assert set(cupti.marks(text)) == {"init", "exit"}
    assert {"to_cuda_s", "cuda_to_exit_s", "exit_to_end_s"} <= set(timer.phases[-1])


def test_the_setting_takes_three_words_and_refuses_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    from beavertui.service.environment import PRESTART_ENV, prestart_setting, timing_config

    monkeypatch.delenv(PRESTART_ENV, raising=False)
    assert (
        prestart_setting() == "all" and TimingConfig().prestart == "all" and timing_config().prestart == "all"
    )
    for word in ("cupti", "all", "off"):
        monkeypatch.setenv(PRESTART_ENV, word)
        assert timing_config().prestart == word and TimingConfig(prestart=word).prestart == word
    monkeypatch.setenv(PRESTART_ENV, "on")
    with pytest.raises(BeaverError, match="BEAVERTUI_PRESTART='on': expected one of cupti, all, off"):
        timing_config()
    with pytest.raises(BeaverError, match="prestart 'on': expected one of cupti, all, off"):
        TimingConfig(prestart="on")


def _cupti_timer(
    tmp_path: Path, exe: Path, monkeypatch: pytest.MonkeyPatch, go_at_exit: bool
) -> tuple[Timer, stages.WorkDir]:
    """A CUPTI timer over the test program, the reference's work dir its own. Without a GPU CUPTI records no
    kernel, so the kernel sum of each run is stood in (1 ms: the same on both sides, so sampling stops at 3
    runs a side); the runs, the gate and the marks are real."""
    from beavertui.engine.timing import reference
    from beavertui.engine.timing.interleaved import Interleaved

    command = f"{exe} {tmp_path / 'marks'}"
    task = dataclasses.replace(load_corpus(DATA / "cpu").get("sleepy"), test_command=command)
    cfg = stages.StageConfig(base_dir=tmp_path / "work")
    tcfg = TimingConfig(cache=tmp_path / "cache", method="cupti", prestart="cupti", go_at_exit=go_at_exit)
    timer = Timer(task, cfg, tcfg)
    ref = stages.prepare(task, task.reference() or "", tmp_path / "work")
    cand = stages.prepare(task, task.reference() or "", tmp_path / "work")
    monkeypatch.setattr(reference, "reference_workdir", lambda *a: ref)
    monkeypatch.setattr(Interleaved, "kernel_ms", lambda self, text: 1.0 if "M\tinit" in text else None)
    timer.prepare()
    return timer, cand


def test_cupti_runs_alternate_sides_one_past_its_gate_at_a_time(
    tmp_path: Path, injection: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe, marks = _app(tmp_path, rounds=6)
    timer, cand = _cupti_timer(tmp_path, exe, monkeypatch, go_at_exit=False)
    result = timer.measure(cand)
    assert result.method == "cupti" and result.runs == 3 and result.speedup == 1.0
    assert [who for who, _ in timer.runs] == ["reference", "candidate"] * 3
    for i, (_, res) in enumerate(timer.runs):
        assert f"run {i} previous_ended 1 next_started 1" in res.log, res.log
    # the run started ahead of a 4th round that sampling did not need was ended before its go (whether it
    # got as far as its first line by then is the machine's business)
    assert len(list(marks.glob("began-*"))) == 6 and len(list(marks.glob("started-*"))) in (6, 7)


def test_go_at_exit_lets_the_next_run_go_before_the_one_before_has_ended(
    tmp_path: Path, injection: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe, marks = _app(tmp_path, rounds=6, late=5)
    timer, cand = _cupti_timer(tmp_path, exe, monkeypatch, go_at_exit=True)
    result = timer.measure(cand)
    assert result.runs == 3 and [who for who, _ in timer.runs] == ["reference", "candidate"] * 3
    for i, (_, res) in enumerate(timer.runs[:5]):
        # past its exit mark, run i saw run i + 1 past its gate: the go came at the exit mark
        assert f"run {i} next_began_before_this_ended 1" in res.log, res.log
    # the last run's kernels ended the sampling: the run ahead of it never had its go
    assert len(list(marks.glob("began-*"))) == 6 and len(list(marks.glob("started-*"))) in (6, 7)


def test_go_at_exit_is_off_unless_asked_and_refuses_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    from beavertui.service.environment import GO_AT_EXIT_ENV, timing_config

    monkeypatch.delenv(GO_AT_EXIT_ENV, raising=False)
    assert TimingConfig().go_at_exit is False and timing_config().go_at_exit is False
    monkeypatch.setenv(GO_AT_EXIT_ENV, "1")
    assert timing_config().go_at_exit is True and TimingConfig().go_at_exit is False
    monkeypatch.setenv(GO_AT_EXIT_ENV, "0")
    assert timing_config().go_at_exit is False
    monkeypatch.setenv(GO_AT_EXIT_ENV, "yes")
    with pytest.raises(BeaverError, match="BEAVERTUI_GO_AT_EXIT='yes': expected 1 or 0"):
        timing_config()


def test_a_reference_timed_alone_starts_its_runs_ahead_too(
    tmp_path: Path, injection: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.timing.speedup import time_reference

    exe, marks = _app(tmp_path, rounds=3)
    timer, _cand = _cupti_timer(tmp_path, exe, monkeypatch, go_at_exit=False)
    got = time_reference(timer)
    assert got.method == "cupti" and got.samples == [1.0, 1.0, 1.0] and "3 runs" in (got.note or "")
    assert [who for who, _ in timer.runs] == ["reference"] * 3
    for i, (_, res) in enumerate(timer.runs):
        assert f"run {i} previous_ended 1 next_started 1" in res.log, res.log
    assert len(list(marks.glob("began-*"))) == 3 and len(list(marks.glob("started-*"))) in (3, 4)


def _unprepared(tmp_path: Path, exe: Path, env: dict[str, str] | None = None) -> tuple[Timer, stages.WorkDir]:
    """A testbench-lines timer as a toolchain makes one: prepare() not called (the injection library comes
    from the cache the fixture built it in)."""
    command = f"{exe} {tmp_path / 'marks'}"
    task = dataclasses.replace(load_corpus(DATA / "cpu").get("sleepy"), test_command=command)
    cfg = stages.StageConfig(base_dir=tmp_path / "work", env=env)
    timer = Timer(task, cfg, TimingConfig(cache=tmp_path / "cache", method="testbench_lines", prestart="all"))
    return timer, stages.prepare(task, task.reference() or "", tmp_path / "work")


def test_a_timer_nobody_prepared_still_parks_a_testbench_s_runs_together(
    tmp_path: Path, injection: Path
) -> None:
    """LocalToolchain times without prepare(): the runs are parked together all the same (before, the
    library was built only by prepare(), so every live or batch timing ran its testbench in turn)."""
    exe, _marks = _app(tmp_path, rounds=3)
    timer, work = _unprepared(tmp_path, exe)
    result = timer.measure(work)
    assert result.speedup == pytest.approx(1.0) and len(timer.runs) == 3
    assert "run 0 previous_ended 1 next_started 1 at_gate_when_it_began 3" in timer.runs[0][1].log
    assert len(timer.phases) == 3 and all(p["gated"] for p in timer.phases)


def test_testbench_runs_parked_before_the_hold_are_let_go_in_it_one_after_another(
    tmp_path: Path, injection: Path
) -> None:
    exe, marks = _app(tmp_path, rounds=3)
    timer, work = _unprepared(tmp_path, exe, env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
    timer.prepare()
    assert timer.parks and timer.park(work)
    # before the hold: all three started and parked at their gates, none past them
    assert len(list(marks.glob("parked-*"))) == 3 and not list(marks.glob("began-*"))
    result = timer.measure(work)  # the hold: the same GPU
    assert result.speedup == pytest.approx(1.0) and "started in turn" not in (result.note or "")
    assert re.search(
        r"its 3 runs started before the GPU was held and waited before CUDA \([0-9.]+ s to start, not in this "
        r"stage's wall\); the hold let them go one after another",
        result.note or "",
    ), result.note
    for i, (_, res) in enumerate(timer.runs):
        assert f"run {i} previous_ended 1 next_started 1 at_gate_when_it_began 3" in res.log, res.log
    assert len(list(marks.glob("started-*"))) == 3  # the parked runs were the ones timed: none started again
    assert all(p["gated"] and "parked_s" in p for p in timer.phases)


@pytest.mark.parametrize("why", ["another GPU", "a run ended at its gate"])
def test_runs_parked_before_the_hold_that_cannot_serve_it_are_ended_and_the_hold_parks_its_own(
    tmp_path: Path, injection: Path, why: str
) -> None:
    exe, marks = _app(tmp_path, rounds=3)
    timer, work = _unprepared(tmp_path, exe, env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
    timer.prepare()
    assert timer.park(work)
    assert timer.how._ahead is not None
    if why == "another GPU":
        timer.config = dataclasses.replace(timer.config, env={**os.environ, "CUDA_VISIBLE_DEVICES": "1"})
    else:
        timer.how._ahead.runs[1].stage.process.stop()
    result = timer.measure(work)
    assert result.speedup == pytest.approx(1.0) and len(timer.runs) == 3
    assert "started at once with the GPU held" in (result.note or "")
    # three runs parked ahead and ended unused, three more parked for the hold and timed
    assert len(list(marks.glob("started-*"))) == 6 and len(list(marks.glob("began-*"))) == 3


def test_closing_the_timer_ends_runs_parked_before_a_hold_that_never_came(
    tmp_path: Path, injection: Path
) -> None:
    exe, marks = _app(tmp_path, rounds=3)
    timer, work = _unprepared(tmp_path, exe)
    timer.prepare()
    assert timer.park(work) and timer.how._ahead is not None
    runs = list(timer.how._ahead.runs)
    timer.close()
    assert timer.how._ahead is None and not any(r.stage.process.alive() for r in runs)
    assert not list(marks.glob("began-*")) and not any(r.folder.exists() for r in runs)


def test_a_candidate_run_without_samples_in_a_chain_is_run_again_plainly_once_the_runs_ahead_have_ended(
    tmp_path: Path, injection: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate's first run exits non-zero with no kernels recorded: the chain ends the run it started
    ahead, then the candidate's test command runs once more without the injection library; failing again,
    the failure is the candidate's (TimedRuns.candidate_failure)."""
    from beavertui.engine.session.events import StageResult
    from beavertui.engine.timing import runs as timed_runs
    from beavertui.engine.timing.parked import Run
    from beavertui.engine.timing.speedup import CandidateTimingFailed

    exe, _marks = _app(tmp_path, rounds=6)
    timer, cand = _cupti_timer(tmp_path, exe, monkeypatch, go_at_exit=False)
    order: list[str] = []
    end_run, discard = timed_runs.TimedRuns.end_run, Run.discard

    def candidate_fails(self: timed_runs.TimedRuns, run: Run, on_exit=None):  # type: ignore[no-untyped-def]
        text, res = end_run(self, run, on_exit)
        if run.who == "candidate":
            return "", res.model_copy(update={"rc": 1})
        return text, res

    def discarded(self: Run) -> None:
        order.append(f"discard {self.who}")
        discard(self)

    def plain(work: stages.WorkDir, config: stages.StageConfig) -> StageResult:
        order.append("plain")
        assert work is cand and "CUDA_INJECTION64_PATH" not in (
            config.env or {}
        )  # as its correctness run ran
        return StageResult(stage="run", command="app", rc=1, log="MISMATCH: 3 of 8 wrong\n")

    monkeypatch.setattr(timed_runs.TimedRuns, "end_run", candidate_fails)
    monkeypatch.setattr(Run, "discard", discarded)
    monkeypatch.setattr(timed_runs.stages, "test", plain)
    with pytest.raises(CandidateTimingFailed) as caught:
        timer.measure(cand)
    assert caught.value.evidence.startswith("MISMATCH: 3 of 8 wrong")
    assert order[-1] == "plain" and order.count("plain") == 1 and "discard reference" in order, order
