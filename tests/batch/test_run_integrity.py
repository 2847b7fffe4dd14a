"""One writer per run, files that cannot be resumed set aside (never deleted), resumes that continue the run
run.json describes or refuse in one line, and no session retried forever.

Before: two ``batch --resume`` of one run at once damaged 846 of 3,000 sessions; a resume deleted a
finished session whose header it could not read (a newer format version) and ran it again without a word;
a resume took another corpus and ignored ``--models``, ``--samples`` and ``--protocol``; a session whose
file never read back was resumed forever (2,090 endpoint calls in 60 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from beavertui.batch.job import JobSpec, drive
from beavertui.batch.rundir import read_infra, read_manifest
from beavertui.cli import main
from beavertui.engine.session.store import read_session
from tests.loopback_endpoint import Endpoint, chunk

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"
SCRIPT = "scripted:vec_scale_demo.toml"


def _batch(tmp: Path, *extra: str) -> int:
    return main(
        ["batch", "--corpus", str(CORPUS), "--models", SCRIPT, "--toolchain", RECORDED, "--sessions-dir", str(tmp),
         "--quiet", *extra]
    )  # fmt: skip


def _cli(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "beavertui", *argv], cwd=cwd, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )  # fmt: skip


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    assert _batch(tmp_path, "--run-id", "r") == 0
    return tmp_path / "r"


# ------------------------------------------------------------------ one writer per run


def test_a_second_batch_on_a_run_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    """Two real processes: the first holds the run while its endpoint answers slowly; the second is refused."""
    release = threading.Event()

    def slow(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        release.wait(30)
        return "stream", [chunk(model, "no code"), chunk(model, None, "stop")]

    with Endpoint(slow) as server:
        proto = tmp_path / "p.toml"
        proto.write_text(
            f"[protocol]\nbudget = 1\n[[models]]\nmodel = 'm'\nbase_url = '{server.url}'\nretries = 0\n"
        )
        args = ["--corpus", str(CORPUS), "--toolchain", RECORDED, "--quiet"]
        first = _cli("batch", "--protocol", str(proto), "--run-id", "r", *args, cwd=tmp_path)
        try:
            while not server.requests:  # the first batch holds the run and waits on its endpoint
                assert first.poll() is None, first.communicate()
                threading.Event().wait(0.05)
            second = _cli("batch", "--resume", str(tmp_path / "sessions" / "r"), *args, cwd=tmp_path)
            _out, err = second.communicate(timeout=60)
            assert second.returncode == 2
            line = _one_line(err)
            assert "another batch is writing this run (pid " in line and "--resume" in line, line
            third = _cli("batch", "--protocol", str(proto), "--run-id", "r", *args, cwd=tmp_path)
            _out, err = third.communicate(timeout=60)
            assert third.returncode == 2 and "another batch is writing this run" in _one_line(err)
        finally:
            release.set()
            first.communicate(timeout=60)
    assert len(server.requests) == 1  # the refused batches asked the endpoint nothing
    (session,) = (tmp_path / "sessions" / "r").rglob("*.jsonl")
    assert read_session(session)[2] is None


# ------------------------------------------------------------------ set aside, never deleted


def _header_line(path: Path, **change: Any) -> None:
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header.update(change)
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"format_version": 99}, "unreadable: unknown format version 99"),
        ({"notes": "x" * (16 << 20)}, "unreadable: the header line has"),
        ({"sample": 3}, "its header names sample 3, its path sample 0"),
    ],
    ids=["newer-format", "header-over-bound", "path-and-header-disagree"],
)
def test_a_session_that_cannot_be_resumed_is_set_aside_never_deleted(
    finished_run: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], why: str
) -> None:
    (session,) = finished_run.rglob("*.jsonl")
    _header_line(session, **change)
    kept = session.read_bytes()
    capsys.readouterr()
    assert main(["batch", "--resume", str(finished_run), "--toolchain", RECORDED, "--quiet"]) == 0
    aside = session.with_name(session.name + ".set-aside-1")
    assert aside.read_bytes() == kept  # the file is kept as it was
    assert read_session(session)[2] is None  # and the session ran again
    err = capsys.readouterr().err
    assert f"set aside as {aside.name}: {why}" in err, err
    (record,) = [r for r in read_infra(finished_run) if r.get("set_aside")]
    assert record["set_aside"] == aside.name


def test_a_session_whose_file_never_reads_back_is_not_run_forever(finished_run: Path) -> None:
    """A defect that leaves every written file unreadable: the session stops after its retries, not never."""
    manifest = read_manifest(finished_run)
    (session,) = finished_run.rglob("*.jsonl")
    header, events, _ = read_session(session)
    assert header is not None
    job = JobSpec("r", manifest.models[0], manifest.protocols[0].slug, manifest.protocols[0].protocol, "vec_scale",
                  0, session)  # fmt: skip
    session.unlink()
    calls = []

    def start(prefix: object) -> tuple[Iterator[Any], tuple[str, ...]]:
        calls.append(prefix)
        if len(calls) > 20:
            raise RuntimeError("run forever")

        def stream() -> Iterator[Any]:
            yield header
            yield from events[:-1]
            with open(session, "r+b") as fh:  # the writer's file damaged in its first line
                fh.write(b"#")
            yield events[-1]

        return stream(), ()

    outcome = drive(job, finished_run, retries=1, start=start)
    assert outcome.status == "failed" and len(calls) == 2, (outcome, len(calls))
    assert any("not run again: its file was set aside 2 time(s)" in i for i in outcome.infra), outcome.infra
    assert sorted(p.name for p in session.parent.iterdir()) == [
        session.name + ".set-aside-1",
        session.name + ".set-aside-2",
    ]
    # the next resume does not run it again either
    calls.clear()
    assert drive(job, finished_run, retries=1, start=start).status == "failed" and not calls


# ------------------------------------------------------------------ a resume continues the run it names


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--samples", "3"], "the run has 1 sample(s) per task, not 3"),
        (["--models", "scripted:@reference"], f"the run's models are {SCRIPT}, not scripted:@reference"),
        (["--protocol", "legacy-gate"], "describes other protocols than the run's"),
        (
            ["--tasks", "zzz_*"],
            "--tasks zzz_* leaves out the run's task vec_scale, and a resume runs every task",
        ),
        (["--run-id", "other"], "the run's id is r, not other: drop --run-id"),
    ],
    ids=["samples", "models", "protocol", "tasks", "run-id"],
)
def test_a_resume_that_asks_for_another_batch_is_refused_in_one_line(
    finished_run: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    capsys.readouterr()
    assert main(["batch", "--resume", str(finished_run), "--toolchain", RECORDED, "--quiet", *flags]) == 2
    assert says in _one_line(capsys.readouterr().err)


def test_a_resume_with_the_flags_that_made_the_run_goes_on(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line that made the run, with --resume added, is a resume (before, --tasks and --run-id
    were not compared at all: any value was dropped without a word)."""
    argv = ["--toolchain", RECORDED, "--quiet", "--tasks", "vec_*", "--run-id", "r", "--samples", "1"]
    assert main(["batch", "--resume", str(finished_run), *argv]) == 0


def test_a_resume_on_another_corpus_is_refused(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(CORPUS, other)
    flags = [
        "batch",
        "--resume",
        str(finished_run),
        "--toolchain",
        RECORDED,
        "--quiet",
        "--corpus",
        str(other),
    ]
    assert main(flags) == 0  # a copy of the same corpus elsewhere (another machine) is the run's corpus
    with open(other / "vec_scale" / "testbench" / "test_main.cu", "a") as fh:
        fh.write("\n// another check\n")
    capsys.readouterr()
    assert main(flags) == 2
    assert "is not the run's" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "kind", ["session-file", "folder-without-run-json", "run-json-folder", "run-json-fifo", "not-utf8"]
)
def test_resume_of_what_is_not_a_run_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = tmp_path / "run"
    target.mkdir()
    expect = {
        "session-file": "is a file, not a run folder (a session file: give the folder of its run",
        "folder-without-run-json": "not a run folder (no run.json)",
        "run-json-folder": "is a folder, not a run manifest",
        "run-json-fifo": "is a FIFO, not a run manifest",
        "not-utf8": "not UTF-8 text",
    }[kind]
    if kind == "session-file":
        target = target / "s.jsonl"
        target.write_text("{}\n")
    elif kind == "run-json-folder":
        (target / "run.json").mkdir()
    elif kind == "run-json-fifo":
        os.mkfifo(target / "run.json")
    elif kind == "not-utf8":
        (target / "run.json").write_bytes(b'{"run_id": "\xff"}')
    capsys.readouterr()
    assert main(["batch", "--resume", str(target), "--quiet"]) == 2
    assert expect in _one_line(capsys.readouterr().err)


def test_a_protocol_folder_name_in_run_json_cannot_leave_the_run(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads((finished_run / "run.json").read_text())
    manifest["protocols"][0]["slug"] = "../../escaped"
    (finished_run / "run.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["batch", "--resume", str(finished_run), "--toolchain", RECORDED, "--quiet"]) == 2
    assert "is not one plain folder name" in _one_line(capsys.readouterr().err)
    assert not (finished_run.parent.parent / "escaped").exists()
