"""The repair loop driven by the scripted model over the recorded toolchain (no network, no GPU).

Recorded outcomes: tests/data/recorded/vec_scale.recordings.jsonl (real nvcc builds, composed GPU stages;
see make_recordings.py there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.corpus.task import Task
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel, ScriptEntry
from beavertui.engine.session.events import (
    Candidate,
    Event,
    InfraError,
    Reply,
    ReplyDelta,
    Request,
    SessionEnd,
    SessionHeader,
    Stalled,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol, StagnationSettings
from beavertui.engine.session.state import fold
from beavertui.engine.toolchain.recorded import RecordedToolchain

DATA = Path(__file__).resolve().parents[2] / "data" / "recorded"
TASK_DIR = DATA / "vec_scale"
CANDIDATES = TASK_DIR / "candidates"


def vec_scale_task(error_log: bool = True) -> Task:
    return Task(
        id="vec_scale",
        family="elementwise",
        label="illegal_memory_access",
        difficulty="easy",
        root=TASK_DIR,
        corpus_root=DATA,
        layout="native",
        build_command="nvcc -O2 -arch=sm_90 -I _common -I include -o test.out solution.cu test_main.cu",
        test_command="./test.out",
        solution_file="solution.cu",
        broken_start_path=TASK_DIR / "broken_start.cu",
        reference_path=TASK_DIR / "reference.cu",
        prompt_path=TASK_DIR / "prompt.txt",
        testbench=TASK_DIR / "testbench",
        error_log_path=(TASK_DIR / "error_log.txt") if error_log else None,
        extra_dirs=((DATA / "_common", "_common"),),
    )


def reply(name: str, prose: str = "Here is the fix.") -> str:
    code = (CANDIDATES / f"{name}.cu").read_text()
    return f"{prose}\n\n```cuda\n{code}```\n"


def toolchain() -> RecordedToolchain:
    return RecordedToolchain.load(DATA / "vec_scale.recordings.jsonl")


def run(
    replies: list[str | ScriptEntry], protocol: Protocol | None = None, task: Task | None = None
) -> tuple[SessionHeader, list[Event]]:
    items = list(
        run_session(task or vec_scale_task(), ScriptedModel(replies), toolchain(), protocol or Protocol())
    )
    header = items[0]
    assert isinstance(header, SessionHeader)
    events = [e for e in items[1:] if not isinstance(e, SessionHeader)]
    assert sum(isinstance(e, SessionEnd) for e in events) == 1
    assert isinstance(events[-1], SessionEnd)
    return header, events


def verdicts(events: list[Event]) -> list[Verdict]:
    return [e for e in events if isinstance(e, Verdict)]


def stalls(events: list[Event]) -> list[str]:
    return [e.detector for e in events if isinstance(e, Stalled)]


def end(events: list[Event]) -> SessionEnd:
    last = events[-1]
    assert isinstance(last, SessionEnd)
    return last


def test_success_after_one_failure() -> None:
    header, events = run([reply("syntax"), reply("naive")])
    assert header.protocol.budget == 5 and header.task.id == "vec_scale" and header.gpu is None
    assert [(v.iteration, v.category) for v in verdicts(events)] == [(1, "buildability"), (2, "passed")]
    v2 = verdicts(events)[1]
    assert v2.success and v2.speedup == pytest.approx(0.0312 / 0.0321, abs=1e-4)
    assert end(events).stop_reason == "passed" and end(events).iterations == 2 and end(events).success
    assert stalls(events) == []
    kinds = [e.kind for e in events]
    first_reply = kinds.index("reply")
    assert kinds[0] == "request" and first_reply >= 3
    assert set(kinds[1:first_reply]) == {"reply_delta"}  # streamed before the complete reply
    # The first turn names the real solution file and carries the task's recorded error log.
    first = next(e for e in events if isinstance(e, Request))
    assert "`solution.cu`" in first.messages[0].content
    assert "MISMATCH out: 16777216 of 16777216 elements wrong" in first.messages[1].content
    assert "recorded when the task was made" in first.messages[1].content
    # The second request carries the real nvcc error as L3 feedback.
    second = [e for e in events if isinstance(e, Request)][1]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert 'solution.cu(6): error: expected a ";"' in second.messages[3].content
    assert "Outcome: buildability." in second.messages[3].content
    # The reducer sees the same session.
    state = fold(header, events)
    assert state.done and state.success and len(state.attempts) == 2


def test_candidate_hash_and_diff() -> None:
    _, events = run([reply("naive")])
    cand = next(e for e in events if isinstance(e, Candidate))
    assert cand.sha256 is not None and len(cand.sha256) == 64
    assert cand.diff.startswith("--- a/solution.cu\n+++ b/solution.cu\n")
    assert "-    if (i < n) out[i] = s * in[i + 1];" in cand.diff


def test_duplicate_code_fires() -> None:
    _, events = run([reply("syntax"), reply("syntax", prose="Same again.")])  # the same code, other prose
    assert stalls(events) == ["duplicate_code"]
    assert end(events).stop_reason == "duplicate_code" and end(events).iterations == 2
    # the paper hashes the exact submitted code: a whitespace change is a new submission
    spaced = reply("syntax").replace("int i =", "int   i =")
    _, events = run([reply("syntax"), spaced, reply("naive")])
    assert stalls(events) == []
    assert end(events).stop_reason == "passed" and end(events).iterations == 3


def test_code_cycle_fires() -> None:
    _, events = run([reply("syntax"), reply("wrong"), reply("syntax")])
    assert stalls(events) == ["code_cycle"]
    assert end(events).stop_reason == "code_cycle" and end(events).iterations == 3


def test_category_oscillation_fires() -> None:
    spaced = reply("syntax").replace("int i =", "int   i =")  # new code, the same build error
    _, events = run([reply("syntax"), reply("wrong"), reply("syntax2"), reply("wrong2"), spaced])
    assert [v.category for v in verdicts(events)] == [
        "buildability",
        "functional_correctness",
        "buildability",
        "functional_correctness",
        "buildability",
    ]
    assert stalls(events) == ["category_oscillation"]
    assert end(events).stop_reason == "category_oscillation" and end(events).iterations == 5


def test_steady_progress_does_not_stop_the_loop() -> None:
    """build error -> crash -> wrong result -> correct but below an in-loop gate -> fast: every category
    is new, so category_oscillation never fires and the loop reaches the fast repair."""
    names = ("syntax", "oob2", "wrong", "slow", "naive")
    _, events = run([reply(n) for n in names], Protocol(gate_mode="in_loop"))
    assert [v.category for v in verdicts(events)] == [
        "buildability",
        "illegal_memory_access",
        "functional_correctness",
        "passed",
        "passed",
    ]
    assert stalls(events) == []
    assert end(events).stop_reason == "passed" and end(events).iterations == 5 and end(events).success


def test_no_progress_fires() -> None:
    _, events = run([reply("oob2"), reply("oob3"), reply("oob4")])
    assert {v.category for v in verdicts(events)} == {"illegal_memory_access"}
    assert stalls(events) == ["no_progress"]
    assert end(events).stop_reason == "no_progress" and end(events).iterations == 3
    # L3 feedback quotes the raw sanitizer record.
    last_request = [e for e in events if isinstance(e, Request)][-1]
    assert "Invalid __global__ read of size 4 bytes" in last_request.messages[-1].content


def test_no_detector_fires_on_varied_failures() -> None:
    _, events = run([reply(n) for n in ("syntax", "syntax2", "wrong", "wrong2", "oob2")])
    assert stalls(events) == []
    assert end(events).stop_reason == "budget" and end(events).iterations == 5
    assert not end(events).success


def test_detectors_report_without_stopping_when_configured() -> None:
    protocol = Protocol(budget=3, stagnation=StagnationSettings(stop=False))
    again = reply("syntax")
    _, events = run([again, again, reply("naive")], protocol)
    assert stalls(events) == ["duplicate_code"]
    assert end(events).stop_reason == "passed" and end(events).iterations == 3


def test_slow_correct_repair_ends_the_trajectory_under_the_paper_gate() -> None:
    """The paper applies p after the run: the first correct attempt ends the trajectory."""
    _, events = run([reply("slow"), reply("naive")])
    (v1,) = verdicts(events)
    assert v1.correct and not v1.success and v1.reason == "below gate"
    assert end(events).stop_reason == "passed" and not end(events).success and end(events).iterations == 1


def test_degenerate_repair_fails_the_in_loop_gate_then_recovers() -> None:
    _, events = run([reply("slow"), reply("naive")], Protocol(gate_mode="in_loop"))
    v1, v2 = verdicts(events)
    assert v1.correct and not v1.success and v1.reason == "below gate"
    assert v1.speedup == pytest.approx(0.0312 / 1.984, abs=1e-4)
    assert v2.success
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert note.startswith("Your solution is correct but too slow.")
    assert "0.02x the reference speed (the gate is 0.7x)" in note
    assert "reference 0.0312 ms, yours 1.984 ms" in note
    assert end(events).stop_reason == "passed"


def test_gate_zero_accepts_the_slow_repair() -> None:
    _, events = run([reply("slow")], Protocol(gate=0.0))
    assert verdicts(events)[0].success and end(events).stop_reason == "passed"


def test_continue_after_pass_spends_the_budget() -> None:
    _, events = run([reply("naive"), reply("reference")], Protocol(budget=2, continue_after_pass=True))
    assert [v.success for v in verdicts(events)] == [True, True]
    assert end(events).stop_reason == "budget" and end(events).success
    assert end(events).best_speedup == pytest.approx(1.0)


def test_no_code_is_buildability_and_the_loop_goes_on() -> None:
    _, events = run(["I think the index is off by one.", reply("naive")])
    c1 = next(e for e in events if isinstance(e, Candidate))
    assert c1.code is None and c1.no_code_reason == "no fenced code block in the reply"
    v1 = verdicts(events)[0]
    assert (v1.category, v1.reason, v1.signature) == ("buildability", "no code", "no code")
    assert not any(e.kind == "build" and e.iteration == 1 for e in events)
    assert end(events).stop_reason == "passed"


def test_endpoint_failure_is_an_infra_error() -> None:
    _, events = run([reply("syntax"), ScriptEntry(error="HTTP 500: boom (gave up after 6 tries)")])
    infra = [e for e in events if isinstance(e, InfraError)]
    assert len(infra) == 1 and infra[0].source == "endpoint" and infra[0].iteration == 2
    assert end(events).stop_reason == "error" and end(events).iterations == 1
    assert end(events).detail == "HTTP 500: boom (gave up after 6 tries)"
    assert not any(isinstance(e, Reply) and e.iteration == 2 for e in events)


def test_unrecorded_candidate_is_a_toolchain_error() -> None:
    _, events = run(["```cuda\nint never_recorded;\n```"])
    infra = [e for e in events if isinstance(e, InfraError)]
    assert infra[0].source == "toolchain" and "no recorded outcome" in infra[0].detail
    assert "(live: --unknown-candidates fail)" in infra[0].detail  # the way to judge it instead
    assert end(events).stop_reason == "error"


def test_repeated_method_samples_the_first_turn() -> None:
    protocol = Protocol(method="repeated", budget=3)
    again = reply("syntax")
    _, events = run([again, reply("naive"), again], protocol)
    requests = [e for e in events if isinstance(e, Request)]
    assert len(requests) == 3
    assert all(r.messages == requests[0].messages for r in requests)  # no feedback between samples
    assert stalls(events) == []  # duplicates are expected among independent samples
    assert end(events).stop_reason == "budget" and end(events).success


def test_self_source_spends_one_iteration_less() -> None:
    _, events = run([reply(n) for n in ("syntax", "syntax2", "wrong", "wrong2")], Protocol(self_source=True))
    assert end(events).iterations == 4 and end(events).stop_reason == "budget"


@pytest.mark.parametrize(
    ("level", "present", "absent"),
    [
        ("L1", "Your solution failed. Try again.", "buildability"),
        ("L2", 'error: expected a ";"', "Build log:"),
        ("L2", "Your code failed to compile.", "Outcome:"),
        ("L3", "Build log:\n```text\n$ nvcc -O2", "Profiler"),
    ],
)
def test_feedback_levels(level: str, present: str, absent: str) -> None:
    _, events = run([reply("syntax"), reply("naive")], Protocol(feedback=level))  # type: ignore[arg-type]
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert present in note
    assert absent not in note


def test_l2_is_the_releases_compiler_errors_only() -> None:
    """The release's L2 (harness/feedback.py _feedback_l2_gb) leaves test information out: a run-time
    failure gets one line, no category, no decisive lines, no log."""
    _, events = run([reply("wrong"), reply("naive")], Protocol(feedback="L2"))
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert "Your code compiled but the test failed. Try a different approach." in note
    for absent in ("Outcome:", "Decisive lines", "functional_correctness", "Run log:"):
        assert absent not in note


def test_a_build_that_hit_its_time_limit_did_not_compile() -> None:
    """A build stopped by its time limit is classified timeout (build stage): it did not compile, and its
    outcome line is the compiler component's, not the runtime's."""
    from beavertui.engine.judge.classify import classify, compiled
    from beavertui.engine.loop.prompts import feedback
    from beavertui.engine.session.state import AttemptState

    c = classify(build_rc=-9, build_log="nvcc: compiling\n", run_rc=None, run_log="", timed_out=True)
    assert c.category == "timeout" and c.stage == "build"
    assert not compiled(c.category, c.signature)
    run_c = classify(build_rc=0, build_log="", run_rc=None, run_log="started\n", timed_out=True)
    assert run_c.category == "timeout" and compiled(run_c.category, run_c.signature)
    v = Verdict(iteration=1, category=c.category, signature=c.signature, correct=False, decisive=["nvcc"])
    a = AttemptState(iteration=1, verdict=v)
    assert "Outcome: timeout." in feedback(a, "L3", "cuda", components=("compiler",))
    assert "Outcome: timeout." not in feedback(a, "L3", "cuda", components=("runtime",))
    assert "Your code failed to compile." in feedback(a, "L2", "cuda")


def test_l0_sends_the_first_turn_again() -> None:
    """L0 carries nothing over (the paper): every request is the first turn, no reply and no feedback."""
    _, events = run([reply("syntax"), reply("wrong"), reply("naive")], Protocol(feedback="L0"))
    requests = [e for e in events if isinstance(e, Request)]
    assert len(requests) == 3
    assert requests[1].messages == requests[0].messages == requests[2].messages
    assert [m.role for m in requests[2].messages] == ["system", "user"]


def test_history_window_keeps_the_last_rounds() -> None:
    names = ("syntax", "syntax2", "wrong", "wrong2")
    _, events = run(
        [reply(n) for n in names], Protocol(budget=4, history=1, stagnation=StagnationSettings(enabled=()))
    )
    last = [e for e in events if isinstance(e, Request)][-1]
    assert [m.role for m in last.messages] == ["system", "user", "assistant", "user"]
    assert "out[i] = s + in[i]" in last.messages[2].content  # the previous reply (wrong), not older ones
    _, events = run(
        [reply(n) for n in names], Protocol(budget=4, history=4, stagnation=StagnationSettings(enabled=()))
    )
    last = [e for e in events if isinstance(e, Request)][-1]
    assert len(last.messages) == 2 + 2 * 3


def test_fresh_check_when_the_task_has_no_recorded_log() -> None:
    _, events = run([reply("naive")], task=vec_scale_task(error_log=False))
    first = next(e for e in events if isinstance(e, Request)).messages[1].content
    assert "a fresh check on this machine" in first
    assert "ERROR SUMMARY: 1 error" in first  # the recorded memcheck of the broken start itself


def test_deltas_rebuild_the_reply() -> None:
    _, events = run([reply("naive")])
    text = "".join(e.text for e in events if isinstance(e, ReplyDelta))
    assert text == next(e for e in events if isinstance(e, Reply)).content


def test_fresh_check_through_the_local_toolchain(tmp_path: Path) -> None:
    """A task without a recorded log (every release instance) is checked by the real local toolchain
    before the first turn; its stage events must be valid ones (an iteration of 0 was not, and every
    release session ended as an infrastructure failure before its first attempt)."""
    import shutil

    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.session.events import GpuSignature, SessionEnd
    from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

    root = tmp_path / "corpus"
    shutil.copytree(Path(__file__).parents[2] / "data" / "cpu", root)
    (root / "sleepy" / "error_log.txt").write_text("")  # a native task may ship an empty log
    task = load_corpus(root).get("sleepy")
    assert not task.error_log()
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", keep_start_logs=False))
    sig = GpuSignature(
        slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0"
    )
    tool.gpu = lambda: sig  # type: ignore[method-assign]
    events = list(
        run_session(task, ScriptedModel([f"```sh\n{task.broken_start()}\n```"]), tool, Protocol(budget=1))
    )
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.stop_reason == "budget", end
    first = next(e for e in events if isinstance(e, Request)).messages[1].content
    assert "a fresh check on this machine" in first


def test_a_fresh_check_is_made_once_per_task_and_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second session of the same task on the same machine reuses the first one's check of the broken
    start (a batch of many models over the release ran it once per session); another gate, harness or
    broken start makes a new one."""
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.toolchain.local import LocalConfig

    task, tool, ran = _sleepy(tmp_path)
    root = tmp_path / "corpus"
    sig = tool.gpu()
    assert sig is not None
    checks = ran  # the reference is every reply: each "broken" entry is a check of the broken start
    reply = f"```sh\n{task.reference()}\n```"

    def first_turn(protocol: Protocol) -> str:
        events = list(run_session(task, ScriptedModel([reply]), tool, protocol))
        return next(e for e in events if isinstance(e, Request)).messages[1].content

    one = first_turn(Protocol(budget=1))
    assert len(checks) == 1 and "a fresh check on this machine)" in one
    # the kept check says what it cost, stage by stage (its stages are in no session file)
    import json

    (kept,) = (tmp_path / "c" / "startlogs" / sig.slug).glob("*.json")
    doc = json.loads(kept.read_text())
    assert doc["task"] == "sleepy" and doc["began"] <= doc["made"]
    assert [x["stage"] for x in doc["stages"]][:2] == ["build", "run"]
    assert all(isinstance(x["duration_s"], float) for x in doc["stages"])
    learned: list[tuple[str, float]] = []
    tool.learn_run_seconds = lambda tid, s, timed_out=False: learned.append((tid, s))  # type: ignore[attr-defined]
    two = first_turn(Protocol(budget=1))
    assert len(checks) == 1 and two == one  # reused: no second check, and the same first turn
    # a batch's schedule learns how long the task's run took in the kept check
    assert learned == [("sleepy", doc["stages"][1]["duration_s"])]
    first_turn(Protocol(budget=1, gate=0.5))  # another gate: another check
    assert len(checks) == 2
    (root / "sleepy" / "testbench" / "check.sh").write_text(
        (root / "sleepy" / "testbench" / "check.sh").read_text() + "\n# changed\n"
    )
    task = load_corpus(root).get("sleepy")
    first_turn(Protocol(budget=1))  # another harness: another check
    assert len(checks) == 3
    tool.config = LocalConfig(base_dir=tmp_path / "work", keep_start_logs=False)
    first_turn(Protocol(budget=1))
    first_turn(Protocol(budget=1))
    assert len(checks) == 5


def test_the_header_carries_the_label_validation_corrected(tmp_path: Path) -> None:
    import shutil

    from beavertui.engine.corpus import verdicts
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.session.events import GpuSignature, SessionHeader
    from beavertui.engine.timing.speedup import TimingConfig
    from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

    root = tmp_path / "corpus"
    shutil.copytree(Path(__file__).parents[2] / "data" / "cpu", root)
    task = load_corpus(root).get("sleepy")
    cache = tmp_path / "cache"
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=cache)))
    sig = GpuSignature(
        slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0"
    )
    tool.gpu = lambda: sig  # type: ignore[method-assign]
    reply = f"```sh\n{task.reference()}\n```"

    def header() -> SessionHeader:
        first = next(iter(run_session(task, ScriptedModel([reply]), tool, Protocol(budget=1))))
        assert isinstance(first, SessionHeader)
        return first

    assert header().task.observed_label is None  # never validated here
    record = verdicts.VerdictRecord(
        task_id=task.id, gpu=sig.slug, verdict="usable_relabelled", reason="observed timeout: -",
        label=task.label, observed_category="timeout", family=task.family,
    )  # fmt: skip
    verdicts.save(task, record, cache)
    assert header().task.observed_label == "timeout"
    verdicts.save(task, record.model_copy(update={"verdict": "usable", "observed_category": "x"}), cache)
    assert header().task.observed_label is None  # the label agreed


def _sleepy(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The CPU fixture task without a recorded log, a local toolchain that keeps its checks under
    tmp_path/c, and a list that counts the toolchain's attempts (the check included)."""
    import shutil

    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.session.events import GpuSignature
    from beavertui.engine.timing.speedup import TimingConfig
    from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

    root = tmp_path / "corpus"
    if not root.exists():
        shutil.copytree(Path(__file__).parents[2] / "data" / "cpu", root)
        (root / "sleepy" / "error_log.txt").write_text("")
    task = load_corpus(root).get("sleepy")
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "c")))
    sig = GpuSignature(
        slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0"
    )
    tool.gpu = lambda: sig  # type: ignore[method-assign]
    ran: list[str] = []
    real = tool.attempt

    def counted(t, code, options):  # type: ignore[no-untyped-def]
        ran.append("broken" if code.strip() == t.broken_start().strip() else "other")
        return real(t, code, options)

    tool.attempt = counted  # type: ignore[method-assign]
    return task, tool, ran


def _sh(code: str) -> str:
    return f"```cuda\n{code}\n```"  # the fixture's language is cuda; its solution file is a shell script


def test_an_attempt_that_resubmits_the_broken_start_is_judged_by_the_check_of_it(tmp_path: Path) -> None:
    """scripted:@alternate sends the broken start at attempt 1: the check made of it before the first
    turn (the same toolchain and options) is its result, marked reused, instead of a second build and run
    of the same code; the next session on the machine gets it from the kept check."""
    from beavertui.engine.session.events import Built, Ran

    task, tool, ran = _sleepy(tmp_path)
    replies = [_sh(task.broken_start()), _sh(task.reference() or "")]
    events = list(run_session(task, ScriptedModel(replies), tool, Protocol(budget=2)))
    assert ran == ["broken", "other"]  # the check, then attempt 2; attempt 1 was not run again
    stages = [e for e in events if isinstance(e, (Built, Ran))]
    first = [e for e in stages if e.iteration == 1]
    assert [e.kind for e in first] == ["build", "run"]
    assert all(e.result.reused and "check of it made before the first turn" in e.result.reused for e in first)
    assert all(e.result.reused is None for e in stages if e.iteration == 2)
    (v1, v2) = verdicts(events)
    assert (v1.iteration, v1.category, v1.correct) == (1, "functional_correctness", False)
    assert "MISMATCH" in next(e for e in first if e.kind == "run").result.log
    assert v2.correct and end(events).stop_reason == "passed"
    # another session, as a later batch process would run it: the kept check judges attempt 1 again
    task, tool, ran = _sleepy(tmp_path)
    again = list(run_session(task, ScriptedModel(replies), tool, Protocol(budget=2)))
    assert ran == ["other"]
    assert [v.category for v in verdicts(again)] == [v1.category, v2.category]


def test_the_check_judges_no_attempt_it_did_not_run_the_same_way(tmp_path: Path) -> None:
    """Other code, or options the check did not run with (a sanitizer tool list), are run as usual."""
    task, tool, ran = _sleepy(tmp_path)
    near = task.broken_start().replace("echo", "echo ")
    list(run_session(task, ScriptedModel([_sh(near)]), tool, Protocol(budget=1)))
    assert ran == ["broken", "other"]
    task, tool, ran = _sleepy(tmp_path / "b")
    list(
        run_session(
            task,
            ScriptedModel([_sh(task.broken_start())]),
            tool,
            Protocol(budget=1, sanitize_tools=("memcheck",)),
        )
    )
    assert ran == ["broken", "broken"]


def test_a_resumed_session_finds_the_kept_check_for_a_later_resubmission(tmp_path: Path) -> None:
    """A session resumed after its first turn makes no check; an attempt that sends the broken start
    again is still judged by the kept one."""
    task, tool, ran = _sleepy(tmp_path)
    wrong = "compute() { echo 41; }\ncost() { echo 1.0; }"
    replies = [_sh(wrong), _sh(wrong + "\n"), _sh(task.broken_start())]
    protocol = Protocol(budget=3, stagnation=StagnationSettings(enabled=()))
    items = list(run_session(task, ScriptedModel(replies), tool, protocol))
    assert ran == ["broken", "other", "other"]
    header = items[0]
    assert isinstance(header, SessionHeader)
    done = [e for e in items[1:] if getattr(e, "iteration", None) in (1, 2)]
    task, tool, ran = _sleepy(tmp_path)
    model = ScriptedModel(replies)
    model.resume_at(2)
    rest = list(run_session(task, model, tool, protocol, resume_from=(header, done)))
    assert ran == []
    assert [v.iteration for v in verdicts(rest)] == [3]


_CUT_CHECK = """
import sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from test_loop_session import _sh, _sleepy
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.protocol import Protocol

task, tool, _ran = _sleepy(Path(sys.argv[1]))
real = tool.attempt

def slow(t, code, options):
    for e in real(t, code, options):
        yield e
        if e.kind == "build":
            print("built", flush=True)
            time.sleep(60)  # the run stage never comes: the process is killed here

tool.attempt = slow
list(run_session(task, ScriptedModel([_sh(task.broken_start())]), tool, Protocol(budget=1)))
"""


def test_a_check_cut_with_its_process_leaves_a_note_of_what_it_cost(tmp_path: Path) -> None:
    """A batch cut by its time budget ends its process with checks of broken starts still under way; they
    are lost (only a finished check is kept), and the in-flight note says what each had cost by then."""
    import json
    import signal
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import batch_timeline as bt

    script = tmp_path / "cut.py"
    script.write_text(_CUT_CHECK)
    began = __import__("time").time()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "built"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    logs = tmp_path / "c" / "startlogs"
    (note,) = logs.rglob("*.inflight.json")
    doc = json.loads(note.read_text())
    assert doc["task"] == "sleepy" and doc["in_flight"] and [s["stage"] for s in doc["stages"]] == ["build"]
    assert not [p for p in logs.rglob("*.json") if not p.name.endswith(".inflight.json")]  # nothing kept
    cut = bt.cut_checks(logs, began - 1)
    assert [c["task"] for c in cut] == ["sleepy"] and bt.cut_checks(logs, doc["updated"] + 1) == []
    # a finished check leaves no note, and the finished file is what --startlogs counts
    task, tool, _ran = _sleepy(tmp_path)
    list(run_session(task, ScriptedModel([_sh(task.broken_start())]), tool, Protocol(budget=1)))
    assert not list(logs.rglob("*.inflight.json")) and len(list(logs.rglob("*.json"))) == 1


def test_the_views_say_a_reused_stage_was_not_run_again(tmp_path: Path) -> None:
    """The console line, the TUI's log pane and the HTML page mark the stages an attempt took from the
    check of its broken start, so that their durations are not read as the attempt's own."""
    from beavertui.console import event_line
    from beavertui.engine.session.describe import REUSED
    from beavertui.engine.session.events import Built, Ran
    from beavertui.reports.html import load_session_doc, session_page
    from beavertui.tui.panes.log import stage_line

    task, tool, _ran = _sleepy(tmp_path)
    replies = [_sh(task.broken_start()), _sh(task.reference() or "")]
    events = list(run_session(task, ScriptedModel(replies), tool, Protocol(budget=2)))
    stages = [e for e in events if isinstance(e, (Built, Ran))]
    for e in stages:
        shown = [str(event_line(e)), stage_line(e.result).plain]
        assert all((REUSED in s) == (e.iteration == 1) for s in shown), (e.iteration, shown)

    def page(items: list[object]) -> str:
        path = tmp_path / "s.jsonl"
        path.write_text("".join(e.model_dump_json() + "\n" for e in items))  # type: ignore[attr-defined]
        return session_page(load_session_doc(path))

    assert REUSED in page(events)
    fresh = list(run_session(task, ScriptedModel(replies[1:]), tool, Protocol(budget=1)))
    assert REUSED not in page(fresh)


def test_a_check_the_machine_cut_short_is_neither_kept_nor_reused(tmp_path: Path) -> None:
    """An infrastructure error among the check's events: the log still makes the first turn, but the check
    is not kept for later sessions and does not judge the attempt that resubmits the broken start."""
    task, tool, ran = _sleepy(tmp_path)
    real = tool.attempt

    def flaky(t, code, options):  # type: ignore[no-untyped-def]
        for e in real(t, code, options):
            if e.kind == "verdict" and len(ran) == 1:
                yield InfraError(iteration=1, source="gpu", detail="GPU fell off the bus")
            yield e

    tool.attempt = flaky  # type: ignore[method-assign]
    list(run_session(task, ScriptedModel([_sh(task.broken_start())]), tool, Protocol(budget=1)))
    assert ran == ["broken", "broken"]  # the check, then attempt 1 run as usual
    logs = tmp_path / "c" / "startlogs"
    assert not [p for p in logs.rglob("*.json") if not p.name.endswith(".inflight.json")]
    assert not list(logs.rglob("*.inflight.json"))  # the check ended: its note is gone
