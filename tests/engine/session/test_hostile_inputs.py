"""Hostile inputs: arbitrary bytes, invalid UTF-8, deep JSON, huge and truncated files.

Every reader either works or gives a clear error of the kind it documents; nothing crashes with another
exception, hangs or eats memory. Each case states what it feeds and what it expects.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from beavertui.engine.code.extract import extract
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import BeaverError
from beavertui.engine.judge.classify import classify, classify_record
from beavertui.engine.metrics.table_io import TableFormatError, read_table
from beavertui.engine.session.store import peek, read_session
from tests import prebuild
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[3]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

DEEP = b"[" * 200_000 + b"]" * 200_000
NASTY = [
    b"",
    b"\xff\xfe\x00garbage",
    b"\xc3\x28 invalid utf-8 \xa0\xa1",
    DEEP,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"{}" * 100_000,
    b"null",
    b"[]",
    b'"a string"',
    b"1e999999",
    b'{"id": 12, "task_family": ["x"], "error_category": null}',
]


def _a_good_task(tmp: Path) -> Path:
    """A copy of one bundled or fixture task in the native layout, to corrupt."""
    src = next(
        (p for p in sorted((ROOT / "corpus").glob("*/instance.json"))),
        None,
    )
    if src is None:
        pytest.skip("no bundled task to copy")
    dst = tmp / "corpus" / src.parent.name
    shutil.copytree(src.parent, dst)
    return dst


def _load_bytes_as(tmp: Path, name: str, data: bytes) -> tuple[int, tuple[str, ...]]:
    task = _a_good_task(tmp)
    (task / name).write_bytes(data)
    loaded = load_corpus(task.parent)
    return len(loaded.tasks), loaded.problems


@pytest.mark.parametrize("name", ["instance.json", "input.json"])
@pytest.mark.parametrize("data", NASTY, ids=lambda d: f"{len(d)}b-{d[:6]!r}")
def test_task_loader_reports_malformed_metadata_in_one_line(tmp_path: Path, name: str, data: bytes) -> None:
    n, problems = _load_bytes_as(tmp_path, name, data)
    assert n == 0
    assert len(problems) == 1
    assert name in problems[0]
    assert "\n" not in problems[0] and len(problems[0]) < 400


@FAST
@given(data=st.binary(max_size=2000))
def test_task_loader_survives_arbitrary_input_json(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    tmp = tmp_path_factory.mktemp("loader")
    n, problems = _load_bytes_as(tmp, "input.json", data)
    assert n + len(problems) == 1


def test_task_loader_one_bad_task_leaves_the_others(tmp_path: Path) -> None:
    good = _a_good_task(tmp_path)
    bad = good.parent / "zz_bad_task"
    shutil.copytree(good, bad)
    (bad / "instance.json").write_bytes(DEEP)
    loaded = load_corpus(good.parent)
    assert [t.id for t in loaded.tasks] == [good.name]
    assert len(loaded.problems) == 1 and "zz_bad_task/instance.json" in loaded.problems[0]


# ------------------------------------------------------------------------------------ session reader


def _demo_session() -> bytes:
    files = sorted((ROOT / "tests" / "data" / "sessions").glob("*.jsonl")) + sorted(
        (ROOT / "sessions" / "demo").glob("*.jsonl")
    )
    for f in files:
        header, events, problem = read_session(f)
        if header is not None and problem is None and len(events) > 5:
            return f.read_bytes()
    pytest.skip("no complete session file to corrupt")


@pytest.mark.parametrize("data", NASTY, ids=lambda d: f"{len(d)}b-{d[:6]!r}")
def test_session_reader_never_raises_on_garbage(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(data)
    header, events, problem = read_session(f)
    assert header is None and events == [] and isinstance(problem, str)
    p = peek(f)
    assert p is not None


def test_session_reader_keeps_the_valid_prefix_of_every_truncation(tmp_path: Path) -> None:
    whole = _demo_session()
    f = tmp_path / "s.jsonl"
    _, all_events, _ = read_session(_write(f, whole))
    line_ends = [i + 1 for i, b in enumerate(whole) if b == ord("\n")]
    cuts = sorted(set(line_ends[:40] + [e - 7 for e in line_ends[1:40]]))
    for cut in cuts:
        header, events, problem = read_session(_write(f, whole[:cut]))
        complete_lines = sum(1 for e in line_ends if e <= cut)
        if complete_lines == 0:
            assert header is None
            continue
        assert header is not None
        kept = [e for e in events if e.kind != "reply_delta"]
        assert kept == all_events[: len(kept)]
        assert len(kept) >= complete_lines - 1 - 0
        if cut not in line_ends:
            assert problem is not None and "line" in problem


def _write(f: Path, data: bytes) -> Path:
    f.write_bytes(data)
    return f


@FAST
@given(data=st.binary(max_size=4000), where=st.integers(min_value=0, max_value=10_000))
def test_session_reader_survives_random_corruption(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, where: int
) -> None:
    whole = _demo_session()
    where = where % max(1, len(whole))
    f = tmp_path_factory.mktemp("sess") / "s.jsonl"
    f.write_bytes(whole[:where] + data + whole[where:])
    header, _events, problem = read_session(f)
    assert header is None or problem is None or isinstance(problem, str)


# ---------------------------------------------------------------------------------------- classifier


@FAST
@given(
    build_rc=st.integers(min_value=-300, max_value=300),
    build_log=st.text(max_size=3000),
    run_rc=st.one_of(st.none(), st.integers(min_value=-300, max_value=300)),
    run_log=st.text(max_size=3000),
    timed_out=st.booleans(),
    san=st.one_of(st.none(), st.text(max_size=2000)),
)
def test_classifier_gives_a_category_for_any_log(
    build_rc: int, build_log: str, run_rc: int | None, run_log: str, timed_out: bool, san: str | None
) -> None:
    c = classify(build_rc, build_log, run_rc, run_log, timed_out, san)
    assert c.category in {
        "environment_dependency",
        "integration",
        "buildability",
        "out_of_memory",
        "illegal_memory_access",
        "timeout",
        "functional_correctness",
        "passed",
    }
    assert "\n" not in c.signature


@pytest.mark.parametrize(
    "log",
    [
        "error: " + "a" * 2_000_000,
        ("x" * 60 + " ") * 40_000,
        "0x" + "f" * 500_000,
        ("Invalid __global__ read of size 4 bytes\n" * 50_000),
        "\t " * 1_000_000,
        "error:" * 300_000,
    ],
    ids=["long-error-line", "long-words", "long-hex", "many-records", "whitespace", "repeated-marker"],
)
def test_classifier_is_fast_on_huge_pathological_logs(log: str) -> None:
    t0 = time.process_time()
    classify(1, log, None, "", False, None)
    classify(0, "", 1, log, False, log)
    assert time.process_time() - t0 < 10.0


@FAST
@given(
    obj=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=50),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
        max_leaves=20,
    )
)
def test_classify_record_rejects_bad_objects_with_a_value_error(obj: object) -> None:
    try:
        out = classify_record(obj)
    except ValueError as exc:
        assert str(exc)
    else:
        assert "category" in out


def test_classify_command_turns_garbage_lines_into_error_objects(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    good = {"build_rc": 0, "build_log": "", "run_rc": 0, "run_log": "PASS", "timed_out": False}
    f.write_bytes(
        b"\xff\xfe\n" + DEEP[:20_000] + b"\n" + json.dumps(good).encode() + b'\n{"build_rc": "x"}\n'
    )
    out = subprocess.run(
        [sys.executable, "-m", "beavertui", "classify", str(f)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2, out.stderr  # lines not classified: bad input
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(lines) == 4
    assert "error" in lines[0] and "error" in lines[1] and "error" in lines[3]
    assert lines[2]["category"] == "passed"
    assert "Traceback" not in out.stderr


# ------------------------------------------------------------------------------------ code extractor


@FAST
@given(reply=st.text(max_size=5000), lang=st.sampled_from(["cuda", "cpp", "python"]))
def test_extractor_returns_code_or_a_reason(reply: str, lang: str) -> None:
    e = extract(reply, lang)
    assert (e.code is None) != (e.reason is None)


def test_extractor_is_fast_on_a_huge_unclosed_reply() -> None:
    reply = "<think>" + "x" * 3_000_000 + "\n```cuda\n" + "int a;\n" * 200_000
    t0 = time.process_time()
    e = extract(reply, "cuda")
    assert time.process_time() - t0 < 5.0
    assert e.code is None


# ------------------------------------------------------------------------------------ metrics reader


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
@pytest.mark.parametrize("data", NASTY, ids=lambda d: f"{len(d)}b-{d[:6]!r}")
def test_metrics_reader_rejects_garbage_with_a_format_error(tmp_path: Path, suffix: str, data: bytes) -> None:
    f = tmp_path / f"t{suffix}"
    f.write_bytes(data)
    try:
        table = read_table(f)
    except TableFormatError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert len(table) == 0


@FAST
@given(data=st.binary(max_size=3000), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_metrics_reader_survives_arbitrary_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, suffix: str
) -> None:
    f = tmp_path_factory.mktemp("tbl") / f"t{suffix}"
    f.write_bytes(data)
    with contextlib.suppress(TableFormatError):
        read_table(f)


@pytest.mark.parametrize(
    "data", [b"\xff\xfe garbage\n", DEEP + b"\n", b'{"run_id": 1}\n'], ids=["bytes", "deep", "partial"]
)
def test_metrics_command_says_what_is_wrong_in_one_line(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(data)
    out = run_cli("metrics", f)  # in this process: stderr is written as a process's is (backslashreplace)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("beavertui: ") and out.stderr.count("\n") == 1


def test_beaver_errors_are_one_liners() -> None:
    assert issubclass(BeaverError, Exception)


# ------------------------------------------------ arbitrary bytes and huge inputs for extractor, classifier


def _decoded(data: bytes) -> list[str]:
    """The ways bytes from outside become text: replacement characters, lone surrogates, latin-1."""
    return [data.decode("utf-8", "replace"), data.decode("utf-8", "surrogateescape"), data.decode("latin-1")]


@FAST
@given(data=st.binary(max_size=4000), lang=st.sampled_from(["cuda", "cpp", "python"]))
def test_extractor_takes_arbitrary_bytes(data: bytes, lang: str) -> None:
    for text in _decoded(data):
        for reply in (text, f"```{lang}\n{text}\n```", f"<think>{text}</think>```\n{text}"):
            e = extract(reply, lang)
            assert (e.code is None) != (e.reason is None)


@pytest.mark.parametrize(
    "reply",
    [
        "```cuda\nint a;\n```\n" * 100_000,  # a hundred thousand blocks
        "```\n" * 300_000,  # fences only
        "~~~~" * 500_000 + "\n```cuda\nint b;\n```",
        "<think>" * 200_000 + "```cuda\nint c;\n```",  # was quadratic: minutes
        "```cuda " + "x" * 2_000_000 + "\nint d;\n```",  # a 2 MB info string
        "```cuda" + " " * 200_000 + "x\nint e;\n```",  # was quadratic: 75 s
        "</think>" * 200_000 + "```cuda\nint f;\n```",
        "<think>a</think>" * 100_000 + "```cuda\nint g;\n```",
    ],
    ids=[
        "many-blocks",
        "fences-only",
        "tildes",
        "unclosed-thinks",
        "huge-info-string",
        "spaced-info-string",
        "orphan-closes",
        "many-thinks",
    ],
)
def test_extractor_is_fast_on_huge_replies(reply: str) -> None:
    t0 = time.process_time()
    e = extract(reply, "cuda")
    assert time.process_time() - t0 < 5.0
    assert (e.code is None) != (e.reason is None)


@FAST
@given(build=st.binary(max_size=3000), run=st.binary(max_size=3000), rc=st.integers(-300, 300))
def test_classifier_takes_arbitrary_bytes(build: bytes, run: bytes, rc: int) -> None:
    for b, r in zip(_decoded(build), _decoded(run), strict=True):
        assert classify(rc, b, None, "", False, None).category
        assert classify(0, b, rc, r, False, r).category


def test_classifier_is_fast_on_a_huge_mixed_log() -> None:
    import random

    rng = random.Random(7)
    markers = [
        'error: identifier "x" is undefined',
        "CUDA error: an illegal memory access was encountered",
        "========= Invalid __global__ read of size 4 bytes",
        "undefined reference to `launch'",
        "MISMATCH out: 3 of 9 elements wrong",
        "out of memory",
        "\x1b[31m\x00\xff",
    ]
    lines = [rng.choice(markers) if rng.random() < 0.05 else "x" * rng.randint(0, 300) for _ in range(60_000)]
    log = "\n".join(lines)  # about 9 MB
    t0 = time.process_time()
    classify(1, log, None, "", False, None)
    classify(0, "", 1, log, False, log)
    assert time.process_time() - t0 < 10.0


# ------------------------------------------------------------- session files: text that is not UTF-8, keys

ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=200)


@FAST
@given(content=ANY_TEXT, detail=ANY_TEXT)
def test_session_writer_takes_any_string_and_reads_back_valid_text(
    tmp_path_factory: pytest.TempPathFactory, content: str, detail: str
) -> None:
    from beavertui.engine.session.events import InfraError, Reply
    from beavertui.engine.session.store import SessionWriter
    from tests.engine.session.test_session import make_header

    path = tmp_path_factory.mktemp("w") / "s.jsonl"
    with SessionWriter(path, make_header()) as w:
        w.append(Reply(iteration=1, content=content))
        w.append(InfraError(iteration=1, source="endpoint", detail=detail))
    header, events, problem = read_session(path)
    assert header is not None and problem is None and len(events) == 2
    back = [events[0].content, events[1].detail]  # type: ignore[attr-defined]
    for original, text in zip([content, detail], back, strict=True):
        text.encode("utf-8")  # never a lone surrogate once read
        assert len(text) == len(original)


@pytest.mark.slow
def test_lone_surrogate_escapes_in_a_session_file_are_read_as_replacement_characters(tmp_path: Path) -> None:
    whole = _demo_session().decode()
    lines = whole.splitlines()
    f = tmp_path / "s.jsonl"
    f.write_text(
        "\n".join(ln.replace('"content":"', '"content":"\\udc00\\udfff\\ud800', 1) for ln in lines) + "\n"
    )
    header, events, problem = read_session(f)
    assert header is not None and problem is None
    texts = [e.content for e in events if e.kind == "reply"]  # type: ignore[attr-defined]
    assert texts and all(t.startswith("\ufffd\ufffd\ufffd") for t in texts)
    for cmd in (["replay", str(f)], ["export", str(f)], ["metrics", str(f)]):
        out = subprocess.run([sys.executable, "-m", "beavertui", *cmd], capture_output=True, timeout=60)
        assert out.returncode == 0 and b"Traceback" not in out.stderr, (cmd, out.stderr)


KEY_CHARS = st.sampled_from(list('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+/="\\'))


@FAST
@given(
    key=st.text(alphabet=KEY_CHARS, min_size=12, max_size=60).map(lambda k: "sk-" + k),
    before=st.text(max_size=50),
    after=st.text(max_size=50),
)
def test_a_session_file_never_holds_the_key_whatever_surrounds_it(
    tmp_path_factory: pytest.TempPathFactory, key: str, before: str, after: str
) -> None:
    from beavertui.engine.session.events import InfraError, Reply, SessionEnd
    from beavertui.engine.session.store import SessionWriter
    from tests.engine.session.test_session import make_header

    path = tmp_path_factory.mktemp("k") / "s.jsonl"
    with SessionWriter(path, make_header(), redact=[key]) as w:
        w.append(Reply(iteration=1, content=f"{before}{key}{after}"))
        w.append(InfraError(iteration=1, source="endpoint", detail=f"HTTP 401: invalid key {key}"))
        w.append(SessionEnd(stop_reason="error", iterations=0, success=False, detail=key))
    raw = path.read_bytes()
    assert key.encode() not in raw
    assert json.dumps(key)[1:-1].encode() not in raw  # nor its JSON-escaped spelling
    _h, events, _p = read_session(path)
    assert all(key not in e.model_dump_json() for e in events)


# ------------------------------------------------------------------ replaying a session executes nothing

#: Audit events of anything that starts a process (sys.addaudithook sees them before they happen).
SPAWN_EVENTS = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "pty.spawn",
)


def _booby_trapped_session(tmp: Path) -> tuple[Path, Path]:
    """A real session whose every text field tries to run ``touch MARK`` if anything executed it."""
    mark = tmp / "MARK"
    touch = f"touch {mark}"
    shell = f"$({touch}); `{touch}`; {touch} #"
    code = f'#include <cstdlib>\nint main() {{ std::system("{touch}"); }}\n// {shell}\n'
    esc = "\x1b]52;c;dG91Y2g=\x07\x1b]0;pwned\x07\x1b[2J"  # clipboard write, title, clear: never raw
    out = []
    for line in (ROOT / "tests" / "data" / "sessions" / "quick.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["kind"] == "header":
            d["notes"] = shell + esc
            d["task"]["broken_start"] = code
        elif d["kind"] == "reply":
            d["content"] = f"Run this:\n```sh\n{touch}\n```\n```cuda\n{code}```\n{esc}"
        elif d["kind"] == "candidate":
            d["code"] = code
        elif d["kind"] in ("build", "run"):
            d["result"]["command"] = f"sh -c '{touch}'"
            d["result"]["log"] = shell + esc + "\nerror: " + touch
        out.append(json.dumps(d))
    path = tmp / "trap.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path, mark


_WATCH = (
    "import sys\n"
    "def hook(event, args):\n"
    f"    if event.startswith({SPAWN_EVENTS!r}):\n"
    "        sys.__stderr__.write(f'SPAWNED {event} {args!r:.200}\\n')\n"
    "sys.addaudithook(hook)\n"
    "if sys.argv[1] == 'control':\n"
    "    import subprocess; subprocess.run(['true']); sys.exit(0)\n"
    "from beavertui.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize("command", ["replay", "export", "metrics"])
def test_replaying_a_booby_trapped_session_starts_no_process(tmp_path: Path, command: str) -> None:
    path, mark = _booby_trapped_session(tmp_path)
    control = subprocess.run([sys.executable, "-c", _WATCH, "control"], capture_output=True, timeout=60)
    assert b"SPAWNED subprocess.Popen" in control.stderr  # the watch sees a process being started
    out = subprocess.run(
        [sys.executable, "-c", _WATCH, command, str(path)], capture_output=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert b"SPAWNED" not in out.stderr, out.stderr
    assert not mark.exists()
    assert b"\x1b]" not in out.stdout and b"\x07" not in out.stdout  # no terminal control sequence


_SPAWNED: list[str] = []
_WATCHING: list[bool] = [False]


def _hook(event: str, args: tuple[object, ...]) -> None:
    # the test session's background builds (tests/prebuild.py) start nvcc in their own thread meanwhile
    if _WATCHING[0] and event.startswith(SPAWN_EVENTS) and threading.current_thread().name != prebuild.THREAD:
        _SPAWNED.append(f"{event} {args!r:.200}")


async def test_stepping_through_a_booby_trapped_session_in_the_tui_starts_no_process(tmp_path: Path) -> None:
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    path, mark = _booby_trapped_session(tmp_path)
    header, events, problem = read_session(path)
    assert header is not None and problem is None
    if not getattr(_hook, "installed", False):
        sys.addaudithook(_hook)  # audit hooks cannot be removed: this one only records while watching
        _hook.installed = True  # type: ignore[attr-defined]
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem, path=path))
    _SPAWNED.clear()
    _WATCHING[0] = True
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            for key in [
                "home",
                *["right"] * (len(events) + 2),
                "d",
                "d",
                "r",
                "s",
                "a",
                "end",
                "left",
                "left",
            ]:
                await pilot.press(key)
            await pilot.pause(0.2)
        assert _SPAWNED == [] and not mark.exists()
        subprocess.run(["true"], check=True)  # the watch sees a process being started
        assert len(_SPAWNED) == 1
        builds = threading.Thread(target=subprocess.run, args=(["true"],), name=prebuild.THREAD)
        builds.start()
        builds.join()
        assert len(_SPAWNED) == 1  # but not the background builds' processes
    finally:
        _WATCHING[0] = False


# ------------------------------------------------------------------ numbers, readers, secrets, order

ANY_FLOAT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("inf"), float("-inf"), float("nan"), 1e400, -0.0, 3.0, 3.0000001, 1000.0]),
)


@FAST
@given(gate=ANY_FLOAT, temperature=ANY_FLOAT, window=st.integers(-10, 200), run=st.integers(-10, 200))
def test_protocol_numbers_are_in_range_or_a_one_line_error(
    tmp_path_factory: pytest.TempPathFactory, gate: float, temperature: float, window: int, run: int
) -> None:
    """A protocol file with any numbers either expands to protocols whose header reads back, or fails
    with one line; nothing in between (a gate of infinity once looped a batch forever)."""
    import math

    from beavertui.batch.protocol_file import expand, load_batch_file
    from beavertui.engine.session.protocol import MAX_GATE

    tmp = tmp_path_factory.mktemp("proto")
    f = tmp / "p.toml"

    def toml(x: float) -> str:
        return "nan" if math.isnan(x) else ("inf" if x == math.inf else "-inf" if x == -math.inf else repr(x))

    f.write_text(
        f"[protocol]\ngate = {toml(gate)}\ntemperature = {toml(temperature)}\n"
        f"[protocol.stagnation]\noscillation_window = {window}\nno_progress_run = {run}\n"
    )
    try:
        (named,) = expand(load_batch_file(f), str(f))
    except BeaverError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        return
    p = named.protocol
    assert math.isfinite(p.gate) and 0 <= p.gate <= MAX_GATE and 0 <= p.temperature <= 2
    assert p.stagnation.oscillation_window >= 2 and p.stagnation.no_progress_run >= 2
    assert type(p).model_validate_json(p.model_dump_json()) == p


@FAST
@given(value=ANY_FLOAT, iteration=st.integers(-(2**40), 2**40))
def test_the_session_reader_never_yields_a_non_finite_number_or_a_wild_iteration(
    tmp_path_factory: pytest.TempPathFactory, value: float, iteration: int
) -> None:
    import math

    lines = _demo_session().decode().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("kind") == "verdict":
            obj["speedup"] = value
            obj["iteration"] = iteration
        out.append(json.dumps(obj))  # writes NaN and Infinity as bare tokens, as a hostile file would
    f = tmp_path_factory.mktemp("num") / "s.jsonl"
    f.write_text("\n".join(out) + "\n")
    header, events, problem = read_session(f)
    assert header is not None
    for e in events:
        if e.kind == "verdict":
            assert e.speedup is None or math.isfinite(e.speedup)  # type: ignore[attr-defined]
        it = getattr(e, "iteration", None)
        assert it is None or 1 <= it <= 100
    if not (math.isfinite(value) and 1 <= iteration <= 100):
        assert problem is not None


@FAST
@given(data=st.binary(max_size=3000), where=st.integers(min_value=0, max_value=100_000))
def test_browse_and_replay_agree_on_every_damaged_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, where: int
) -> None:
    """browse lists a file as damaged exactly when the reader replay and metrics use finds it damaged."""
    from beavertui.service.catalog import read_row

    whole = _demo_session()
    at = where % (len(whole) + 1)
    f = tmp_path_factory.mktemp("agree") / "s.jsonl"
    f.write_bytes(whole[:at] + data + whole[at + len(data) :])
    header, _events, problem = read_session(f)
    row = read_row(f)
    torn_tail = problem is not None and problem.startswith("truncated last line")
    if header is None or (problem is not None and not torn_tail):
        assert row.outcome == "damaged" and row.problem == (problem or row.problem)
    else:
        assert row.outcome != "damaged"
        assert row.task == header.task.id and row.budget == header.protocol.budget


@FAST
@given(secret=st.text(min_size=4, max_size=40), around=st.text(max_size=40))
def test_an_echoed_secret_is_redacted_in_every_spelling(secret: str, around: str) -> None:
    import urllib.parse

    from beavertui.engine.models.openai_model import redact_text

    for spelling in (secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe="")):
        assume(spelling not in around and spelling not in "Bearer [redacted]")
        shown = redact_text(f"{around}Bearer {spelling}{around}", [secret])
        assert spelling not in shown and "[redacted]" in shown


@FAST
@given(name=st.text(max_size=60))
def test_a_run_id_never_leaves_the_sessions_folder(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    from beavertui.batch.rundir import check_run_id

    root = tmp_path_factory.mktemp("sessions")
    try:
        check_run_id(name)
    except BeaverError as exc:
        assert "\n" not in str(exc)
        return
    assert (root / name).resolve().parent == root.resolve()


@FAST
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30))
def test_bootstrap_intervals_do_not_depend_on_row_order(seed: int, n: int) -> None:
    import numpy as np

    from beavertui.engine.metrics.bootstrap import intervals

    rng = np.random.default_rng(seed)
    means = rng.random((n, 3))
    nums = rng.integers(0, 3, (n, 2)).astype(float)
    dens = nums + rng.integers(0, 2, (n, 2))
    tasks = [f"task-{rng.integers(0, 10**9)}-{i}" for i in range(n)]
    perm = rng.permutation(n)
    a = intervals(means, nums, dens, resamples=200, tasks=tasks)
    b = intervals(means[perm], nums[perm], dens[perm], resamples=200, tasks=[tasks[i] for i in perm])
    for x, y in zip(
        (a.mean_lo, a.mean_hi, a.ratio_lo, a.ratio_hi),
        (b.mean_lo, b.mean_hi, b.ratio_lo, b.ratio_hi),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "loop", "dangling", "folder"])
def test_session_reader_refuses_what_is_not_a_regular_file_at_once(tmp_path: Path, kind: str) -> None:
    import os

    from beavertui.engine.errors import SessionFileError

    f = tmp_path / "s.jsonl"
    if kind == "fifo":
        os.mkfifo(f)
    elif kind == "dev-zero":
        f.symlink_to("/dev/zero")
    elif kind == "loop":
        f.symlink_to(f)
    elif kind == "dangling":
        f.symlink_to(tmp_path / "nowhere")
    else:
        f.mkdir()
    t = time.monotonic()
    with pytest.raises(SessionFileError) as info:
        read_session(f)
    assert time.monotonic() - t < 2 and "\n" not in str(info.value)
