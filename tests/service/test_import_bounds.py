"""`beavertui import` writes only sessions the project's readers accept: a harness run with huge outputs is
cut as a run here cuts them (a build or test log to its first and last 64 KiB, a reply to 512 Ki
characters, a stored candidate longer than a reply keeps is not imported and said so), and a session that
would still pass a session file's 64 MiB is refused in one line with nothing written.

The huge files are sparse (a size, no data on disk): their text is NUL characters, which a session file
holds as six-byte escapes, the worst case of the bound.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.events import MAX_REPLY_CHARS, Built, Candidate, Reply
from beavertui.engine.session.store import MAX_SESSION_BYTES, read_session
from tests.service.test_import_harness import CORPUS, RUN

TASK = "cuda_110__logic_error__957be815"


def _sparse(path: Path, head: str, size: int) -> None:
    """A file of ``head`` then NUL bytes up to ``size`` bytes, none of them on disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(head.encode())
        fh.truncate(size)


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "index" / "manifest.jsonl").read_text().splitlines() if line]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_huge_outputs_are_cut_so_that_every_session_written_reads_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    first, second = [r for r in _records(run) if r["task_id"] == TASK]
    huge = 12 << 20  # 12 MiB each: 72 MiB as escapes in a session, each alone past the bound
    marks = "BUILD_OK=True\n\n[BUILD OUTPUT]\n"  # the harness's own lines around the build output
    _sparse(run / first["paths"]["build_log_raw"], f"{marks}built\n", huge)
    _sparse(run / "api_responses" / f"{first['sample_id']}.txt", "```cuda\n", huge)
    _sparse(run / second["paths"]["error_code"], "// the candidate\n", huge)
    out = tmp_path / "imported"
    code, _, err = _cli(capsys, "import", str(run), "--out", str(out), "--corpus", str(CORPUS))
    assert code == 0, err

    files = sorted(out.glob("*.jsonl"))
    assert len(files) == len({r["task_id"] for r in _records(run)})
    for path in files:  # every file written is read whole by the session reader
        assert path.stat().st_size <= MAX_SESSION_BYTES
        header, _events, problem = read_session(path)
        assert header is not None and problem is None, (path.name, problem)
    header, events, _ = read_session(out / f"{TASK}__s0.jsonl")
    (build, *_) = [e for e in events if isinstance(e, Built) and e.iteration == 1]
    assert build.result.log_bytes == huge - len(marks)
    assert build.result.log.startswith("built\n") and "bytes omitted ...]" in build.result.log
    assert len(build.result.log.encode()) < 3 * (64 << 10)
    (reply,) = [e for e in events if isinstance(e, Reply)]
    assert len(reply.content) == MAX_REPLY_CHARS and reply.truncated_chars == huge - MAX_REPLY_CHARS
    (candidate,) = [e for e in events if isinstance(e, Candidate) and e.iteration == 2]
    assert candidate.code is None and candidate.no_code_reason is not None
    assert f"has {huge:,} characters, more than the {MAX_REPLY_CHARS:,} a reply" in candidate.no_code_reason
    assert header is not None and any(candidate.no_code_reason in d for d in header.imported.dropped)

    # and the project's readers take the run as it is: nothing left out
    code, text, err = _cli(capsys, "metrics", str(out), "--json")
    assert code == 0, err
    assert json.loads(text)["left_out"] == []
    code, _, err = _cli(capsys, "export", str(out), "-o", str(tmp_path / "rows.jsonl"))
    assert code == 0 and "0 files left out" in err, err
    code, text, err = _cli(capsys, "replay", str(out / f"{TASK}__s0.jsonl"))
    assert code == 0 and "damaged" not in text, err


def test_a_session_past_the_bound_after_the_cuts_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    (record, *_) = [r for r in _records(run) if r["task_id"] == TASK]
    # one task of 40 attempts, each with a reply of the most characters a session keeps (3 MiB as escapes)
    lines = []
    for it in range(1, 41):
        sample = f"{TASK}__iter_{it:04d}"
        lines.append(json.dumps({**record, "iteration": it, "sample_id": sample}))
        _sparse(run / "api_responses" / f"{sample}.txt", "", MAX_REPLY_CHARS)
    (run / "index" / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "imported"
    code, _, err = _cli(capsys, "import", str(run), "--out", str(out), "--corpus", str(CORPUS))
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"beavertui: {out}: nothing imported: task {TASK}: its session would be more than the "
        f"{MAX_SESSION_BYTES:,} bytes a session file may have (at its event "
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [RUN.name]  # no folder, no partial one


def test_an_iteration_above_the_largest_budget_is_not_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    records = _records(run)
    (first,) = [r for r in records if r["task_id"] == TASK and r["iteration"] == 1]
    records.append({**first, "iteration": 10**6, "sample_id": f"{TASK}__iter_1000000"})
    (run / "index" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "imported"
    code, text, err = _cli(capsys, "import", str(run), "--out", str(out), "--corpus", str(CORPUS))
    assert code == 0, err  # was a traceback: the event of iteration 10^6 could not be made
    assert "not scored: 1 record: an iteration above 100 (the largest budget a protocol has)" in text
    _header, events, problem = read_session(out / f"{TASK}__s0.jsonl")
    assert problem is None and max(getattr(e, "iteration", 0) or 0 for e in events) == 2


@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_a_file_of_the_run_that_is_no_bounded_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    (first, _second) = [r for r in _records(run) if r["task_id"] == TASK]
    log = run / first["paths"]["build_log_raw"]
    log.unlink()
    if kind == "fifo":
        os.mkfifo(log)  # opening it waited for a writer
        expected = f"{log}: is a FIFO, not a build log"
    else:
        _sparse(log, "BUILD_OK=True\n", (64 << 20) + 1)
        expected = f"{log}: {(64 << 20) + 1:,} bytes, larger than the 67,108,864 bytes a build log may have"
    out = tmp_path / "imported"
    args = ("import", str(run), "--out", str(out), "--corpus", str(CORPUS))
    if kind == "fifo":  # in a process of its own with a time limit: reading the FIFO waited for a writer
        done = subprocess.run(
            [sys.executable, "-m", "beavertui", *args], capture_output=True, text=True, timeout=120
        )
        code, err = done.returncode, done.stderr
    else:
        code, _, err = _cli(capsys, *args)
    assert code == 2
    assert err == f"beavertui: {expected}\n"
    assert not out.exists()
