"""Resume from a killed session, the user's controls, the real HTTP client in the loop, and key hygiene."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from beavertui.engine.errors import SessionFileError
from beavertui.engine.loop.run import LoopControl, run_session
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.models.replay import ReplayModel
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import Event, InfraError, Request, SessionEnd, SessionHeader, Verdict
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import SessionWriter, read_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.engine.loop.test_loop_session import reply, toolchain, vec_scale_task
from tests.engine.models.test_models_openai import ChatServer


def write(
    path: Path, items: list[SessionHeader | Event], writer: SessionWriter | None = None
) -> SessionWriter:
    for item in items:
        if isinstance(item, SessionHeader):
            writer = writer or SessionWriter(path, item)
        else:
            assert writer is not None
            writer.append(item)
    assert writer is not None
    return writer


def test_resume_after_a_kill_mid_attempt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    replies = [reply("syntax"), reply("wrong"), reply("naive")]
    stream = run_session(vec_scale_task(), ScriptedModel(replies), toolchain(), Protocol(), session_id="r1")
    items: list[SessionHeader | Event] = []
    for item in stream:
        items.append(item)
        if item.kind == "reply" and item.iteration == 2:  # killed after the second reply
            break
    stream.close()
    write(path, items).close()
    with open(path, "a") as fh:
        fh.write('{"kind": "candidate", "iter')  # the line being written when it died

    header, prefix, problem = read_session(path)
    assert problem is not None and problem.startswith("truncated last line")
    assert header is not None
    writer, prefix = SessionWriter.reopen(path)
    resumed = list(
        run_session(
            vec_scale_task(), ScriptedModel(replies), toolchain(), Protocol(), resume_from=(header, prefix)
        )
    )
    assert resumed[0] == header  # the original header again, not written twice
    write(path, resumed[1:], writer).close()

    header, events, problem = read_session(path)
    assert problem is None
    requests = [e.iteration for e in events if isinstance(e, Request)]
    assert requests == [1, 2, 2, 3]  # the cut attempt 2 restarted from its request
    assert [(v.iteration, v.category) for v in events if isinstance(v, Verdict)] == [
        (1, "buildability"),
        (2, "functional_correctness"),
        (3, "passed"),
    ]
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.stop_reason == "passed" and end.iterations == 3
    # The third request carries both earlier rounds, rebuilt from the prefix.
    third = [e for e in events if isinstance(e, Request)][-1]
    assert 'error: expected a ";"' in third.messages[3].content


def test_stop_control_ends_as_stopped() -> None:
    control = LoopControl()
    events: list[Event] = []
    for item in run_session(
        vec_scale_task(), ScriptedModel([reply("syntax")] * 5), toolchain(), Protocol(), control=control
    ):
        if isinstance(item, SessionHeader):
            continue
        events.append(item)
        if isinstance(item, Verdict):
            control.stop()
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.stop_reason == "stopped" and end.iterations == 1


def test_pause_and_single_step() -> None:
    control = LoopControl(paused=True)
    seen: list[str] = []
    model = ScriptedModel([reply("syntax"), reply("wrong"), reply("naive")])

    def consume() -> None:
        for item in run_session(vec_scale_task(), model, toolchain(), Protocol(), control=control):
            seen.append(item.kind)

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.2)
    assert seen == ["header"] and control.waiting  # held before the first request
    control.step()
    deadline = time.monotonic() + 5
    while seen.count("verdict") < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert seen.count("verdict") == 1 and seen.count("request") == 1  # exactly one attempt ran
    control.resume()
    thread.join(timeout=5)
    assert seen[-1] == "end" and seen.count("verdict") == 3


def test_edit_before_build_marks_the_candidate() -> None:
    control = LoopControl()
    fixed = (Path(__file__).parents[2] / "data/recorded/vec_scale/candidates/naive.cu").read_text()
    control.set_editor(lambda iteration, code: fixed if iteration == 1 else None)
    events = list(
        run_session(
            vec_scale_task(), ScriptedModel([reply("syntax")]), toolchain(), Protocol(), control=control
        )
    )
    cand = next(e for e in events if e.kind == "candidate")
    assert cand.edited and cand.code == fixed  # type: ignore[union-attr]
    assert events[-1].stop_reason == "passed"  # type: ignore[union-attr]


def test_openai_model_in_the_loop_and_the_key_never_reaches_the_file(tmp_path: Path) -> None:
    key = "sk-live-0123456789abcdef"
    script = [
        (
            "stream",
            [
                "Fixed:\n```cuda\n",
                (Path(__file__).parents[2] / "data/recorded/vec_scale/candidates/naive.cu").read_text(),
                "```\n",
            ],
        )
    ]
    with ChatServer(script) as server:
        config = OpenAIConfig(model="m", base_url=server.url, timeout_s=5, retries=0)
        model = OpenAIModel(config, api_key=key)
        path = tmp_path / "s.jsonl"
        items = list(run_session(vec_scale_task(), model, toolchain(), Protocol()))
        write(path, items, SessionWriter(path, items[0], redact=model.secrets())).close()  # type: ignore[arg-type]
    text = path.read_text()
    assert key not in text
    header, events, problem = read_session(path)
    assert problem is None and header is not None
    assert header.model.kind == "openai" and header.model.base_url == server.url
    assert isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "passed"
    assert server.headers[0]["authorization"] == f"Bearer {key}"  # it was really sent, just never saved


def test_endpoint_500_after_retries_is_an_infra_error() -> None:
    with ChatServer([("500", None)]) as server:
        config = OpenAIConfig(
            model="m", base_url=server.url, timeout_s=5, retries=1, backoff_base_s=0.01, stream=False
        )
        events = list(
            run_session(vec_scale_task(), OpenAIModel(config, api_key="k"), toolchain(), Protocol())
        )
    infra = [e for e in events if isinstance(e, InfraError)]
    assert len(infra) == 1 and infra[0].source == "endpoint"
    assert infra[0].detail.startswith("HTTP 500") and "gave up after 2 tries" in infra[0].detail
    assert (
        isinstance(events[-1], SessionEnd)
        and events[-1].stop_reason == "error"
        and events[-1].iterations == 0
    )


def test_replay_model_and_recordings_from_sessions(tmp_path: Path) -> None:
    path = tmp_path / "orig.jsonl"
    items = list(
        run_session(
            vec_scale_task(),
            ScriptedModel([reply("slow"), reply("naive")]),
            toolchain(),
            Protocol(gate_mode="in_loop"),
        )
    )
    write(path, items).close()
    # Re-score the recorded trajectory with its replies and outcomes recovered from the session file alone.
    replay = ReplayModel(path)
    recorded = RecordedToolchain.load(path)
    assert len(recorded.recordings) == 2
    again = list(run_session(vec_scale_task(), replay, recorded, Protocol(gate=0.0)))
    verdicts = [e for e in again if isinstance(e, Verdict)]
    assert [v.success for v in verdicts] == [True]  # at p = 0 the slow repair already counts
    assert replay.info().params["original_session"] == items[0].session_id  # type: ignore[union-attr]


def test_builtin_demo_script_over_the_recordings() -> None:
    model = ScriptedModel.from_file("vec_scale_demo.toml")
    events = list(run_session(vec_scale_task(), model, toolchain(), Protocol(gate_mode="in_loop")))
    verdicts = [(e.category, e.reason) for e in events if isinstance(e, Verdict)]
    assert verdicts == [("buildability", "buildability"), ("passed", "below gate"), ("passed", "passed")]
    assert isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "passed"


def test_an_ended_session_cannot_be_resumed() -> None:
    items = list(run_session(vec_scale_task(), ScriptedModel([reply("naive")]), toolchain(), Protocol()))
    header, events = items[0], items[1:]
    with pytest.raises(SessionFileError, match=r"already ended \(passed\)"):
        next(
            run_session(
                vec_scale_task(), ScriptedModel([]), toolchain(), Protocol(), resume_from=(header, events)
            )
        )  # type: ignore[arg-type]


def test_stop_while_the_model_is_answering() -> None:
    with ChatServer([("hang", 5.0)]) as server:
        config = OpenAIConfig(model="m", base_url=server.url, timeout_s=10, retries=0, stream=False)
        control = LoopControl()
        stopped_at: list[float] = []

        def stop_once_the_endpoint_has_the_request() -> None:
            # not a fixed delay: under load the loop may not have reached the call by then
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            stopped_at.append(time.monotonic())
            control.stop()

        threading.Thread(target=stop_once_the_endpoint_has_the_request, daemon=True).start()
        events = list(
            run_session(
                vec_scale_task(), OpenAIModel(config, api_key="k"), toolchain(), Protocol(), control=control
            )
        )
        ended_at = time.monotonic()
        assert server.requests and stopped_at
    assert ended_at - stopped_at[0] < 2.0  # the 5 s answer was not waited for
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.stop_reason == "stopped" and end.iterations == 0
    assert end.detail == "stopped by the user while the model was answering"
