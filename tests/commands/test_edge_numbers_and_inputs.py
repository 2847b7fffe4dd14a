"""Every number and file from outside is checked once, at the edge, and refused in one line.

Before: ``batch --samples 0`` or ``-3`` "finished" with exit 0, ``--jobs -1`` was taken; ``metrics --seed -1``
and ``--plots FILE`` gave tracebacks and ``--resamples`` had no bound (15 GB in 40 s); a models file, a
scripted model, a recordings file or a source-models table that was not UTF-8, a folder or a FIFO gave a
traceback or hung; a protocol file of 100,000 nested arrays gave a traceback; a model name holding terminal
escapes in a header reached the terminal (``replay`` set its title); ``live --resume`` took another model and
credited its replies to the header's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded"
TOOLCHAIN = f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"
DEMO = ROOT / "sessions" / "demo"


def cli(
    *argv: str, cwd: Path, timeout: float = 60, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """The command in this process (a hang is still ``subprocess.TimeoutExpired`` after ``timeout``), or
    with ``process`` as ``python3 -m beavertui``."""
    if not process:
        return run_cli(*argv, cwd=cwd, timeout=timeout)
    return subprocess.run(
        [sys.executable, "-m", "beavertui", *argv], cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout[-400:], p.stderr[-800:])
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("beavertui: "), p.stderr
    return lines[-1]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--samples", "0"), "--samples must be 1 to 1,000, not 0"),
        (("--samples", "-3"), "--samples must be 1 to 1,000, not -3"),
        (("--jobs", "-1"), "--jobs must be 1 to 100,000, not -1"),
        (("--gpu-share", "0"), "--gpu-share must be 1 to 1,024, not 0"),
    ],
    ids=["samples-0", "samples-negative", "jobs-negative", "gpu-share-0"],
)
def test_batch_counts_out_of_range_are_refused(tmp_path: Path, flags: tuple[str, str], says: str) -> None:
    p = cli("batch", "--corpus", str(RECORDED), "--models", "scripted:vec_scale_demo.toml", "--toolchain",
            TOOLCHAIN, *flags, cwd=tmp_path)  # fmt: skip
    assert says in one_line_error(p)
    assert not (tmp_path / "sessions").exists()  # nothing was run or written


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--seed", "-1"), "--seed must be 0 to 4,294,967,295, not -1"),
        (("--resamples", "100000000"), "--resamples must be 1,000 to 100,000, not 100000000"),
        (("--plots", "afile"), "--plots afile: is a file"),
    ],
    ids=["seed", "resamples", "plots-file"],
)
def test_metrics_flags_out_of_range_are_refused(tmp_path: Path, flags: tuple[str, str], says: str) -> None:
    (tmp_path / "afile").write_text("x")
    assert says in one_line_error(cli("metrics", str(DEMO), *flags, cwd=tmp_path))


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    (tmp_path / "latin1.toml").write_bytes(b'[models.m]\nmodel = "caf\xe9"\n')
    (tmp_path / "folder.toml").mkdir()
    os.mkfifo(tmp_path / "fifo.toml")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"task": "caf\xe9"}\n')
    (tmp_path / "deep.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return tmp_path


LIVE = ("live", "--task", "vec_scale", "--corpus", str(RECORDED), "--headless")


@pytest.mark.parametrize(
    "argv",
    [
        # a recorded toolchain, so that the models file is read: without a GPU, refusing it proves nothing
        (*LIVE, "--model", "m", "--models-file", "latin1.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "m", "--models-file", "folder.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "m", "--models-file", "fifo.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "m", "--models-file", "deep.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "scripted:fifo.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "scripted:latin1.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "scripted:deep.toml", "--toolchain", TOOLCHAIN),
        (*LIVE, "--model", "scripted:vec_scale_demo.toml", "--toolchain", "recorded:fifo.jsonl"),
        (*LIVE, "--model", "scripted:vec_scale_demo.toml", "--toolchain", "recorded:latin1.jsonl"),
        ("metrics", str(DEMO), "--source-models", "fifo.jsonl"),
        ("metrics", str(DEMO), "--source-models", "latin1.jsonl"),
        ("metrics", str(DEMO), "--source-models", "folder.toml"),
        ("batch", "--protocol", "deep.toml", "--models", "scripted:@reference"),
    ],
    ids=lambda a: " ".join(x for x in a if "/" not in x)[-60:],
)
def test_odd_input_files_are_one_line_errors_without_hanging(odd: Path, argv: tuple[str, ...]) -> None:
    line = one_line_error(cli(*argv, cwd=odd, timeout=30))
    reasons = ("a FIFO", "a folder", "not UTF-8", "nested too deeply")
    assert any(r in line for r in reasons), line


def _demo_session(tmp_path: Path, **model: str) -> Path:
    src = next(iter(sorted(DEMO.glob("*.jsonl"))))
    lines = src.read_text().splitlines()
    header = json.loads(lines[0])
    header["model"].update(model)
    out = tmp_path / "s.jsonl"
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return out


def test_terminal_escapes_in_a_header_never_reach_the_terminal(tmp_path: Path) -> None:
    session = _demo_session(tmp_path, name="\x1b]0;pwned\x07m\x1b[2J")
    for argv in (("replay", str(session)), ("metrics", str(session)), ("browse", str(tmp_path))):
        p = cli(*argv, cwd=tmp_path)
        assert "\x1b" not in p.stdout and "\x1b" not in p.stderr, argv
    p = cli("replay", str(session), cwd=tmp_path)
    assert "terminal control character" in one_line_error(p)


def test_live_resume_refuses_another_model(tmp_path: Path) -> None:
    p = cli(*LIVE, "--model", "scripted:vec_scale_demo.toml", "--toolchain", TOOLCHAIN, "--budget", "3",
            cwd=tmp_path)  # fmt: skip
    (session,) = (tmp_path / "sessions" / "live").glob("*.jsonl")
    lines = session.read_text().splitlines()
    session.write_text("\n".join(lines[:3]) + "\n")  # cut: resumable
    p = cli("live", "--resume", str(session), "--model", "scripted:@reference", "--toolchain", TOOLCHAIN,
            "--headless", "--corpus", str(RECORDED), cwd=tmp_path)  # fmt: skip
    line = one_line_error(p)
    assert "is a session of model scripted:vec_scale_demo.toml, not scripted:@reference" in line, line
    assert session.read_text().splitlines() == lines[:3]  # nothing appended


def test_browse_of_a_session_file_says_what_to_do(tmp_path: Path) -> None:
    session = next(iter(sorted(DEMO.glob("*.jsonl"))))
    line = one_line_error(cli("browse", str(session), cwd=tmp_path, process=True))  # the real entry point
    assert (
        line
        == f"beavertui: {session}: is a file; browse takes a folder of sessions: open it with beavertui replay {session}"
    )
