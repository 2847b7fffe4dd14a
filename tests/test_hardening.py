"""Cases from a hostile run, each reproduced as a user or an attacker would run it.

Every test here failed before its fix: a wrong success from recordings, an endless loop on a gate of
infinity, non-finite numbers written and read as numbers, readers that disagree about one file, inputs
that made a command hang or print a traceback, intervals that depended on row order, exit codes that
said "done" when nothing was done. The property tests for the same classes are in test_hostile_inputs.py.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Verdict
from beavertui.engine.session.store import read_session
from tests.cli_in_process import run_cli

# 39 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "sessions" / "demo"
RECORDED = ROOT / "tests" / "data" / "recorded"


def cli(
    *argv: str, cwd: Path, timeout: float = 60, stdin: int | None = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "beavertui", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=stdin,
    )  # fmt: skip


def here(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The same command run in this process (tests/cli_in_process.py: the same exit status, stdout and
    stderr, a traceback included), for the cases about what a command says and returns. Those about the
    process keep ``cli``: a hang its time-out guards against, a signal, a key in its environment."""
    return run_cli(*argv, cwd=cwd)


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout[-400:], p.stderr[-800:])
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) >= 1 and lines[-1].startswith("beavertui: "), p.stderr
    return lines[-1]


# ------------------------------------------------------------------ 1. recordings keyed by task


def test_recordings_of_one_task_do_not_judge_another(tmp_path: Path) -> None:
    """The softmax demo's replies and recordings, run against a FlashAttention task, are not a success."""
    p = here(
        "live", "--task", "flashattn_v2_07", "--model", f"scripted:{DEMO / 'replies' / 'degenerate_repair.toml'}",
        "--toolchain", f"recorded:{DEMO}", "--headless", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode != 0, p.stdout
    assert "success" not in p.stdout.splitlines()[-1].replace("no success", ""), p.stdout
    assert "no recorded outcome for this candidate on task flashattn_v2_07" in p.stdout
    (session,) = (tmp_path / "sessions" / "live").glob("flashattn_v2_07-*.jsonl")
    _, events, _ = read_session(session)
    assert not any(isinstance(e, Verdict) for e in events)
    m = here("metrics", str(session.parent), "--json", cwd=tmp_path)
    (group,) = json.loads(m.stdout)["groups"]
    assert group["pass@1"] in (None, 0.0) and group["pass@k"] in (None, 0.0)  # not counted as a repair


def test_recordings_still_serve_their_own_task(tmp_path: Path) -> None:
    p = here(
        "live", "--task", "softmax_00", "--model", f"scripted:{DEMO / 'replies' / 'degenerate_repair.toml'}",
        "--toolchain", f"recorded:{DEMO}", "--headless", "--in-loop-gate", "--budget", "4", "--history", "2",
        "--temperature", "0", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == "end passed after 4 iterations, success, best 0.99x"


def test_a_changed_harness_invalidates_the_recordings(tmp_path: Path) -> None:
    import shutil

    from beavertui.engine.errors import ToolchainError
    from beavertui.engine.toolchain.base import AttemptOptions
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    corpus = tmp_path / "corpus"
    shutil.copytree(RECORDED, corpus)
    task = load_corpus(corpus).get("vec_scale")
    tc = RecordedToolchain.load(RECORDED / "vec_scale.recordings.jsonl")
    code = (corpus / "vec_scale" / "candidates" / "reference.cu").read_text()
    assert tc.lookup(task, code) is not None
    with open(corpus / "vec_scale" / "testbench" / "test_main.cu", "a") as fh:
        fh.write("\n// a changed check\n")
    changed = load_corpus(corpus).get("vec_scale")
    tc = RecordedToolchain.load(RECORDED / "vec_scale.recordings.jsonl")
    assert tc.lookup(changed, code) is None
    with pytest.raises(ToolchainError, match="no recorded outcome"):
        list(tc.attempt(changed, code, AttemptOptions(iteration=1, gate=0.7)))


def test_a_recordings_file_must_name_task_and_harness(tmp_path: Path) -> None:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.toolchain.recorded import load_recordings

    line = json.loads((RECORDED / "vec_scale.recordings.jsonl").read_text().splitlines()[0])
    del line["harness"]
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(line) + "\n")
    with pytest.raises(BeaverError, match="needs 'task' and 'harness'"):
        load_recordings(f)


# ------------------------------------------------------------------ 2 and 10. protocol numbers


BAD_PROTOCOL_VALUES = [
    ("gate = inf", "finite"),
    ("gate = nan", "finite"),
    ("gate = 3.5", "less than or equal to 3"),
    ("gate = 1000", "less than or equal to 3"),
    ("gate = -0.1", "greater than or equal to 0"),
    ("temperature = inf", "finite"),
    ("budget = 0", "greater than or equal to 1"),
    ("[protocol.stagnation]\nno_progress_run = -1", "greater than or equal to 2"),
    ("[protocol.stagnation]\noscillation_window = -5", "greater than or equal to 2"),
    ("[protocol.stagnation]\noscillation_changes = 0", "greater than or equal to 1"),
    ("[protocol.stagnation]\noscillation_window = 3\noscillation_changes = 3", "below oscillation_window"),
]


@pytest.mark.parametrize(("line", "why"), BAD_PROTOCOL_VALUES, ids=[v[0] for v in BAD_PROTOCOL_VALUES])
def test_protocol_files_refuse_numbers_out_of_range(tmp_path: Path, line: str, why: str) -> None:
    from beavertui.batch.protocol_file import expand, load_batch_file
    from beavertui.engine.errors import BeaverError

    f = tmp_path / "p.toml"
    body = line if line.startswith("[") else f"[protocol]\n{line}"
    f.write_text(f'name = "x"\n{body}\n')
    with pytest.raises(BeaverError, match=why):
        expand(load_batch_file(f), str(f))


BAD_MODEL_VALUES = [
    ("timeout_s = -1", "greater than 0"),
    ("timeout_s = 0", "greater than 0"),
    ("timeout_s = inf", "finite"),
    ("retries = -3", "greater than or equal to 0"),
    ("max_concurrency = 0", "greater than or equal to 1"),
    ("top_p = nan", "finite"),
]


@pytest.mark.parametrize(("line", "why"), BAD_MODEL_VALUES, ids=[v[0] for v in BAD_MODEL_VALUES])
def test_model_entries_refuse_numbers_out_of_range(tmp_path: Path, line: str, why: str) -> None:
    from beavertui.batch.protocol_file import load_batch_file
    from beavertui.engine.errors import BeaverError

    f = tmp_path / "p.toml"
    f.write_text(f'name = "x"\n[[models]]\nmodel = "m"\n{line}\n')
    with pytest.raises(BeaverError, match=why):
        load_batch_file(f)


@pytest.mark.parametrize(
    "flags",
    [
        ("--gate", "inf"), ("--gate", "1e400"), ("--gate", "3.5"), ("--gate", "nan"), ("--timeout", "-1"),
        ("--timeout", "0"), ("--retries", "-3"), ("--temperature", "inf"), ("--budget", "1000000000"),
    ],
    ids=lambda f: " ".join(f),
)  # fmt: skip
def test_live_flags_out_of_range_are_one_line_errors(tmp_path: Path, flags: tuple[str, str]) -> None:
    p = here(
        "live", "--task", "vec_scale", "--corpus", str(RECORDED), "--model", "gpt-x",
        "--base-url", "http://127.0.0.1:9/v1", "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}",
        "--headless", *flags, cwd=tmp_path,
    )  # fmt: skip
    line = one_line_error(p)
    assert line.startswith(f"beavertui: {flags[0]}"), line
    assert not (tmp_path / "sessions").exists()


def test_a_header_that_cannot_be_read_back_is_never_written(tmp_path: Path) -> None:
    """The writer refuses a header its own reader would refuse (it was written with "gate": null)."""
    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session.store import SessionWriter

    f = tmp_path / "s.jsonl"
    with SessionWriter(f, _header()) as _w:
        pass
    bad = _header().model_copy(
        update={"protocol": _header().protocol.model_copy(update={"gate": float("inf")})}
    )
    with pytest.raises(SessionFileError, match="header"):
        SessionWriter(tmp_path / "t.jsonl", bad)
    assert not (tmp_path / "t.jsonl").exists()


def _header():  # type: ignore[no-untyped-def]
    from beavertui.engine.session.events import ModelInfo, SessionHeader
    from beavertui.engine.session.protocol import Protocol

    task = load_corpus(RECORDED).get("vec_scale")
    return SessionHeader(
        session_id="x", tool_version="0", task=task.ref(), model=ModelInfo(name="m", kind="scripted"),
        protocol=Protocol(),
    )  # fmt: skip


def test_batch_with_a_run_id_outside_the_sessions_folder_is_refused(tmp_path: Path) -> None:
    p = here(
        "batch", "--protocol", "legacy", "--models", "scripted:@reference", "--corpus", str(RECORDED),
        "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}", "--sessions-dir",
        str(tmp_path / "s"), "--run-id", "../../x", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert "--run-id '../../x'" in one_line_error(p)
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


def test_batch_on_a_protocol_file_with_a_gate_of_infinity_stops_at_once(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text('name = "x"\n[protocol]\ngate = inf\n')
    p = cli(
        "batch", "--protocol", str(f), "--models", "scripted:@reference", "--corpus", str(RECORDED),
        "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}", "--sessions-dir",
        str(tmp_path / "s"), "--quiet", cwd=tmp_path, timeout=30,
    )  # fmt: skip
    assert "gate" in one_line_error(p) and "finite" in p.stderr


# ------------------------------------------------------------------ 8. files that are not files


@pytest.fixture
def odd_files(tmp_path: Path) -> Path:
    d = tmp_path / "odd"
    d.mkdir()
    (d / "loop.jsonl").symlink_to("loop.jsonl")
    (d / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(d / "fifo.jsonl")
    (d / "latin1.toml").write_bytes(b'name = "caf\xe9"\n')
    return d


@pytest.mark.parametrize(
    "argv",
    [
        ("compare", "loop.jsonl", "loop.jsonl"),
        ("replay", "loop.jsonl"),
        ("replay", "zero.jsonl"),
        ("replay", "fifo.jsonl"),
        ("compare", "fifo.jsonl", "zero.jsonl"),
        ("export", "zero.jsonl"),
        ("batch", "--protocol", "latin1.toml", "--models", "scripted:@reference"),
        ("batch", "--protocol", "zero.jsonl", "--models", "scripted:@reference"),
        ("batch", "--protocol", "fifo.jsonl", "--models", "scripted:@reference"),
    ],
    ids=" ".join,
)
def test_links_loops_devices_fifos_and_bad_encodings_are_one_line_errors(
    odd_files: Path, argv: tuple[str, ...]
) -> None:
    p = cli(*argv, cwd=odd_files, timeout=20)
    line = one_line_error(p)
    assert any(w in line for w in ("symbolic link loop", "a device", "a FIFO", "not UTF-8")), line


def test_browse_lists_a_folder_of_odd_files_without_hanging(odd_files: Path) -> None:
    p = cli("browse", ".", cwd=odd_files, timeout=20)
    assert p.returncode == 0, p.stderr
    rows = {line.split("\t")[-1]: line.split("\t") for line in p.stdout.splitlines()}
    assert rows["loop.jsonl"][3] == "damaged" and "symbolic link loop" in rows["loop.jsonl"][6]
    assert rows["zero.jsonl"][3] == "damaged" and "a device" in rows["zero.jsonl"][6]
    assert rows["fifo.jsonl"][3] == "damaged" and "a FIFO" in rows["fifo.jsonl"][6]


# ------------------------------------------------------------------ 3. no non-finite number


def test_timing_samples_that_are_not_times_are_dropped() -> None:
    from beavertui.engine.timing.speedup import parse_times

    log = "BEAVER_TIME_MS 1e999\nBEAVER_TIME_MS 0\nBEAVER_TIME_MS -1.5\nBEAVER_TIME_MS 0.25\nBEAVER_TIME_MS 1e-3\n"
    assert parse_times(log) == [0.25, 0.001]


def _demo_with(tmp_path: Path, edit: str, value: str) -> Path:
    """The degenerate demo session with one verdict's number replaced by a bare JSON token."""
    lines = (DEMO / "degenerate_repair.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("kind") == "verdict" and obj["iteration"] == 2:
            obj[edit] = "@@"
            line = json.dumps(obj).replace('"@@"', value)
        out.append(line)
    f = tmp_path / f"{edit}-{len(value)}.jsonl"
    f.write_text("\n".join(out) + "\n")
    return f


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_in_a_session_are_never_read_as_numbers(tmp_path: Path, value: str) -> None:
    f = _demo_with(tmp_path, "speedup", value)
    header, events, problem = read_session(f)
    assert header is not None and problem is not None and "finite" in problem
    assert all(isinstance(e.iteration, int) and e.iteration < 2 for e in events if isinstance(e, Verdict))
    for argv in (("replay", str(f)), ("export", str(f)), ("metrics", str(f)), ("browse", str(tmp_path))):
        p = here(*argv, cwd=tmp_path)
        assert "Traceback" not in p.stderr and "NaN" not in p.stdout and "Infinity" not in p.stdout, argv


@pytest.mark.parametrize("value", ["inf", "nan", "Infinity"])
def test_an_attempts_table_with_an_infinite_speedup_is_refused(tmp_path: Path, value: str) -> None:
    rows = (RECORDED.parent / "analysis").glob("*.csv")
    del rows
    head = (
        "run_id,model,task_id,protocol.method,protocol.feedback,protocol.history,protocol.temperature,"
        "protocol.gate,protocol.budget,sample,iteration,category,correct,speedup,stop_reason,self_source\n"
    )
    f = tmp_path / "t.csv"
    f.write_text(head + f"r,m,t,iterative,L3,2,0.0,0.7,5,0,1,passed,true,{value},success,false\n")
    p = here("metrics", str(f), "--json", cwd=tmp_path)
    assert "finite" in one_line_error(p)
    j = tmp_path / "t.jsonl"
    row = {
        "run_id": "r", "model": "m", "task_id": "t", "sample": 0, "iteration": 1, "category": "passed",
        "correct": True, "speedup": "@@", "stop_reason": "success", "self_source": False,
        "protocol": {"method": "iterative", "feedback": "L3", "history": 2, "temperature": 0.0, "gate": 0.7,
                     "budget": 5},
    }  # fmt: skip
    j.write_text(json.dumps(row).replace('"@@"', "Infinity") + "\n")
    p = here("metrics", str(j), "--json", cwd=tmp_path)
    assert "Traceback" not in p.stderr and p.returncode == 2, p.stderr


async def test_the_speedup_pane_draws_no_bar_for_a_value_that_is_not_finite() -> None:
    from beavertui.tui.panes.speedup import bar, sparkline

    assert bar(float("nan"), 1.0) == "" and bar(float("inf"), 1.0) == "" and bar(1.0, float("inf")) == ""
    assert sparkline([1.0, float("nan"), float("inf"), 2.0]) == sparkline([1.0, 2.0])


# ------------------------------------------------------------------ 4. bounded TUI


@pytest.mark.parametrize("iteration", ["1000000000", "100000", "-5", "0", "101"])
def test_an_iteration_out_of_range_ends_the_valid_prefix(tmp_path: Path, iteration: str) -> None:
    lines = (DEMO / "degenerate_repair.jsonl").read_text().splitlines()
    obj = json.loads(lines[-2])
    obj["iteration"] = int(iteration)
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join([*lines[:-2], json.dumps(obj), lines[-1]]) + "\n")
    _header, events, problem = read_session(f)
    assert problem is not None and "iteration" in problem
    assert len(events) == len(lines) - 3


@pytest.mark.parametrize("iteration", [1_000_000_000, -5, 0, 101])
def test_a_profile_event_range_checks_its_iteration_like_every_other(tmp_path: Path, iteration: int) -> None:
    """A profile event's iteration was any integer: 10^9 made the timeline draw a billion cells."""
    lines = (DEMO / "degenerate_repair.jsonl").read_text().splitlines()
    profile = {"t": 1.0, "kind": "profile", "iteration": iteration, "result": {"stage": "run", "command": "ncu",
               "rc": 0}}  # fmt: skip
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join([*lines[:-1], json.dumps(profile), lines[-1]]) + "\n")
    _header, events, problem = read_session(f)
    assert problem == f"invalid event at line {len(lines)}: profile.iteration: " + (
        "Input should be less than or equal to 100"
        if iteration > 1
        else "Input should be greater than or equal to 1"
    )
    assert len(events) == len(lines) - 2


def test_replies_are_capped_and_the_cap_is_recorded(tmp_path: Path) -> None:
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.events import MAX_REPLY_CHARS, Reply
    from beavertui.engine.session.protocol import Protocol
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    task = load_corpus(RECORDED).get("vec_scale")
    huge = "x" * (MAX_REPLY_CHARS + 12345)
    items = list(
        run_session(task, ScriptedModel([huge]), RecordedToolchain({}, unknown="fail"), Protocol(budget=1))
    )
    (reply,) = [e for e in items if isinstance(e, Reply)]
    assert len(reply.content) == MAX_REPLY_CHARS and reply.truncated_chars == 12345


def _big_session(tmp_path: Path) -> Path:
    """The demo with a 20,000-line candidate, a 4 MB reply and a 20 MB run log."""
    out = []
    code = "".join(f"int v{i} = {i};  // line {i}\n" for i in range(20000))
    for line in (DEMO / "degenerate_repair.jsonl").read_text().splitlines():
        obj = json.loads(line)
        if obj.get("kind") == "reply" and obj["iteration"] == 1:
            obj["content"] = "y" * 4_000_000
        if obj.get("kind") == "candidate" and obj["iteration"] == 2:
            obj["code"] = code
        if obj.get("kind") == "run" and obj["iteration"] == 1:
            obj["result"]["log"] = "z" * 79 + "\n" * 1 + ("w" * 79 + "\n") * 250_000
        out.append(json.dumps(obj))
    f = tmp_path / "big.jsonl"
    f.write_text("\n".join(out) + "\n")
    return f


async def test_a_huge_session_steps_with_truncation_notes(tmp_path: Path) -> None:
    import time

    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    header, events, problem = read_session(_big_session(tmp_path))
    assert header is not None and problem is None
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        slowest = 0.0
        for key in ("home", "r", "r", "right", "d", "d", "d", "end"):
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            slowest = max(slowest, time.perf_counter() - t)
            if key == "home":
                assert "truncated" in app.screen.query_one("#log").text
            if key == "right":
                assert "truncated" in app.screen.query_one("#diff").text
        assert slowest < 5.0  # was 7.7 s per step for the candidate, and no end for the run log
    print(
        f"\nreliability: 20,000-line candidate, 4 MB reply, 20 MB run log: slowest of 8 steps {slowest:.2f} s"
    )


# ------------------------------------------------------------------ 7. secrets


def test_secrets_are_redacted_from_screen_header_and_log(tmp_path: Path) -> None:
    """A 401 that echoes the key, a password in the base URL and a key in --extra-body: none is shown or saved."""
    from tests.engine.models.test_endpoint_faults import FaultServer

    key, password, body_key = "sk-live-echoed-5150", "pw-in-url-7071", "body-key-9092"
    with FaultServer({"echo_key": [("echo_key", None)]}) as server:
        url = server.url.replace("http://", f"http://someone:{password}@")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HARDEN_KEY": key}
        p = subprocess.run(
            [
                sys.executable, "-m", "beavertui", "live", "--task", "vec_scale", "--corpus", str(RECORDED),
                "--model", "echo_key", "--base-url", url, "--api-key-env", "HARDEN_KEY", "--retries", "0",
                "--extra-body", json.dumps({"api_key": body_key, "top_k": 5}), "--headless",
                "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}",
            ],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        sent = server.last_key  # the credentials the client sent, which the server echoed back
    basic = base64.b64encode(f"someone:{password}".encode()).decode()
    assert sent.endswith(basic) or sent.endswith(key), sent
    assert "[redacted]" in p.stdout, p.stdout + p.stderr
    (session,) = (tmp_path / "sessions" / "live").glob("*.jsonl")
    text = session.read_text()
    for secret in (key, password, body_key, basic):
        assert secret not in p.stdout and secret not in p.stderr and secret not in text, secret
    header, _events, _ = read_session(session)
    assert header is not None and header.model.base_url is not None
    assert header.model.base_url.startswith("http://[redacted]@127.0.0.1:")
    assert header.model.params["extra_body"] == {"api_key": "[redacted]", "top_k": 5}


def test_the_live_screen_never_shows_an_echoed_key() -> None:
    from beavertui.engine.models.base import EndpointError
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel, redact_text

    cfg = OpenAIConfig(model="m", base_url="http://u:pass-word-1@h/v1", retries=1, backoff_base_s=0.0)
    m = OpenAIModel(cfg, api_key="sk-abc-123")
    assert {"sk-abc-123", "pass-word-1"} <= set(m.secrets())
    assert (
        redact_text('Bearer sk-abc-123 and "sk-abc-123" and sk%2Dabc', m.secrets()).count("[redacted]") == 2
    )
    with pytest.raises(EndpointError) as info:
        m.complete([])  # nothing listens on host h: a connection error, whose text names no secret
    assert "gave up after 2 tries" in str(info.value)  # retried: the text of every try was redacted
    assert "sk-abc-123" not in str(info.value) and "pass-word-1" not in str(info.value)


# ------------------------------------------------------------------ 11. intervals keyed by task


def _rows(n_tasks: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    proto = {
        "method": "iterative",
        "feedback": "L3",
        "history": 2,
        "temperature": 0.0,
        "gate": 0.7,
        "budget": 3,
    }
    for t in range(n_tasks):
        outcome = [False, True] if t % 3 == 0 else ([True] if t % 3 == 1 else [False, False, False])
        for it, ok in enumerate(outcome, start=1):
            rows.append({
                "run_id": "r", "model": "m", "task_id": f"task_{t:02d}", "protocol": proto, "sample": 0,
                "iteration": it, "category": "passed" if ok else "functional_correctness", "correct": ok,
                "speedup": (0.3 if t % 2 else 1.1) if ok else None,
                "stop_reason": ("success" if ok else "budget") if it == len(outcome) else None,
                "self_source": False,
            })  # fmt: skip
    return rows


def test_intervals_do_not_depend_on_the_loader(tmp_path: Path) -> None:
    """A run folder's rows (built row by row) and its exported file (read by the columnar reader) order
    their tasks differently; the intervals must not change with it."""
    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.metrics.table import from_rows
    from beavertui.engine.metrics.table_io import read_table
    from beavertui.reports.tables import main_tables

    rows = _rows(40)
    exported = tmp_path / "a.jsonl"
    exported.write_text("".join(json.dumps(r) + "\n" for r in rows))
    by_rows, by_file = compute_groups(from_rows(rows)), compute_groups(read_table(exported))
    assert by_rows[0].cells.tasks != by_file[0].cells.tasks  # the two loaders do order tasks differently
    assert sorted(by_rows[0].cells.tasks) == sorted(by_file[0].cells.tasks)
    assert main_tables(by_rows) == main_tables(by_file)


def test_bootstrap_resamples_by_task_id() -> None:
    import numpy as np

    from beavertui.engine.metrics.bootstrap import intervals

    rng = np.random.default_rng(3)
    means, nums = rng.random((12, 4)), rng.integers(0, 3, (12, 2)).astype(float)
    dens = nums + rng.integers(0, 3, (12, 2))
    tasks = [f"t{i:02d}" for i in range(12)]
    perm = rng.permutation(12)
    one = intervals(means, nums, dens, tasks=tasks)
    two = intervals(means[perm], nums[perm], dens[perm], tasks=[tasks[i] for i in perm])
    for x, y in zip(
        (one.mean_lo, one.mean_hi, one.ratio_lo, one.ratio_hi),
        (two.mean_lo, two.mean_hi, two.ratio_lo, two.ratio_hi),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)


# ------------------------------------------------------------------ 12. exit codes


def test_a_batch_where_every_session_ends_in_an_infrastructure_failure_exits_3(tmp_path: Path) -> None:
    from tests.engine.models.test_endpoint_faults import FaultServer

    with FaultServer({"down": [("status", "401 Unauthorized")]}) as server:
        proto = tmp_path / "p.toml"
        proto.write_text(
            'name = "x"\nretries = 1\n[protocol]\nbudget = 2\n[[models]]\nmodel = "down"\n'
            f'base_url = "{server.url}"\napi_key_env = "HARDEN_KEY"\nretries = 0\n'
        )
        p = run_cli(
            "batch", "--protocol", str(proto), "--corpus", str(RECORDED),
            "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}", "--sessions-dir",
            str(tmp_path / "s"), "--run-id", "r", "--quiet",
            cwd=tmp_path, env={**os.environ, "HARDEN_KEY": "k-123456"},
        )  # fmt: skip
    assert p.returncode == 3, p.stderr  # infrastructure, not the model
    assert "1 ended by infrastructure failures" in p.stderr
    assert "no session was evaluated" in p.stderr


def test_corpus_validate_exits_1_with_malformed_or_no_valid_tasks(tmp_path: Path) -> None:
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(RECORDED, corpus)
    bad = corpus / "zz_broken"
    shutil.copytree(corpus / "vec_scale", bad)
    (bad / "instance.json").write_text("{not json")
    p = here(
        "corpus", "validate", "--corpus", str(corpus), "--no-timing", "--task", "vec_scale", cwd=tmp_path
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert "beavertui: corpus validate:" in p.stderr


# ------------------------------------------------------------------ 6. Ctrl-C on a hung endpoint


def test_ctrl_c_stops_a_headless_batch_waiting_on_a_hung_endpoint(tmp_path: Path) -> None:
    import signal
    import time

    from tests.engine.models.test_endpoint_faults import FaultServer

    with FaultServer({"hung": [("hang", 120.0)]}) as server:
        proto = tmp_path / "p.toml"
        proto.write_text(
            'name = "x"\nsamples = 3\n[protocol]\nbudget = 2\n[[models]]\nmodel = "hung"\n'
            f'base_url = "{server.url}"\napi_key_env = "HARDEN_KEY"\ntimeout_s = 300\n'
        )
        run = tmp_path / "s" / "r"
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "beavertui", "batch", "--protocol", str(proto), "--corpus", str(RECORDED),
                "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}", "--sessions-dir",
                str(tmp_path / "s"), "--run-id", "r", "--jobs", "2",
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HARDEN_KEY": "k-123456"},
            # as from a terminal: a test run started in the background inherits SIGINT ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while sum(server.counts.values()) < 2:  # both sessions in flight, waiting on the endpoint
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            _out, err = proc.communicate(timeout=20)
            stopped_in = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert stopped_in < 10, stopped_in
    print(
        f"\nreliability: Ctrl-C with 2 sessions waiting on a hung endpoint: stopped in {stopped_in:.2f} s, exit 130"
    )
    assert f"continue with --resume {run}" in err
    # each cut session named, with where it was: both wait on the endpoint for their first reply
    cut = [ln for ln in err.splitlines() if ln.startswith("beavertui: cut: ")]
    assert len(cut) == 2, err
    assert all(
        re.match(r"beavertui: cut: vec_scale \(hung, sample [0-2]\): [0-9]+ s in flight; ", ln) for ln in cut
    )
    assert all(ln.endswith("last: request of attempt 1, " + ln.rsplit(", ", 1)[1]) for ln in cut), cut
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["status"] == "interrupted"
    assert not (run / "infra.jsonl").exists() or "retried" not in (run / "infra.jsonl").read_text()


def test_a_header_line_longer_than_the_bound_is_refused_by_readers_and_the_writer(tmp_path: Path) -> None:
    """A header holds the task's sources in full; past MAX_HEADER_CHARS its parse alone kept the TUI's first
    frame past 1 s, so every reader refuses it in one line and the writer never writes it."""
    import json

    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session.store import MAX_HEADER_CHARS, SessionWriter, read_session

    big = _header()
    big = big.model_copy(
        update={"task": big.task.model_copy(update={"broken_start": "x" * MAX_HEADER_CHARS})}
    )
    with pytest.raises(SessionFileError, match="more than the 16,777,216 a header may have"):
        SessionWriter(tmp_path / "w.jsonl", big)
    assert not (tmp_path / "w.jsonl").exists()
    f = tmp_path / "r.jsonl"
    f.write_text(big.model_dump_json() + "\n" + json.dumps({"kind": "end"}) + "\n")
    header, events, problem = read_session(f)
    assert header is None and events == [] and "a header may have" in (problem or "")
    just = _header()
    room = MAX_HEADER_CHARS - len(just.model_dump_json()) - 1000
    just = just.model_copy(update={"task": just.task.model_copy(update={"broken_start": "y" * room})})
    with SessionWriter(tmp_path / "ok.jsonl", just):
        pass
    assert read_session(tmp_path / "ok.jsonl")[0] is not None  # within the bound: read as before
