"""``live --demo`` and ``live --resume`` run under a protocol already decided (the demo's, the session's);
a protocol flag given with them is refused in one line, never silently dropped.

Before: ``live --demo --protocol mine.toml`` ran the demo's protocol and exited 0 whatever the file held
(a typo'd key, ``feedback = "L9"``), ``--budget 3`` or ``--sanitize memcheck`` changed nothing, and
``live --resume S --gate 0.5 --out other.jsonl`` continued S under its own gate, in S.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo" / "repair_in_three.jsonl"


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--protocol", "{typo}"), "--protocol"),
        (("--budget", "3", "--feedback", "L1"), "--budget, --feedback"),
        (("--sanitize", "memcheck"), "--sanitize"),
        (("--gate", "1.5", "--in-loop-gate"), "--gate, --in-loop-gate"),
    ],
    ids=["protocol-file", "budget-feedback", "sanitize", "gate"],
)
def test_live_demo_refuses_protocol_flags(tmp_path: Path, flags: tuple[str, ...], named: str) -> None:
    typo = tmp_path / "mine.toml"
    typo.write_text('name = "mine"\n[protocol]\nbudgte = 3\nfeedback = "L9"\n')
    argv = [a.format(typo=typo) for a in flags]
    p = run_cli("live", "--demo", "--headless", "--sessions-dir", tmp_path / "s", *argv, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip() == (
        f"beavertui: --demo repair_in_three runs under its own recorded protocol: {named} would be ignored; "
        f"drop {'them' if ',' in named else 'it'}"
    )
    assert not (tmp_path / "s").exists()  # nothing written


def test_live_demo_alone_still_runs(tmp_path: Path) -> None:
    p = run_cli("live", "--demo", "--headless", "--out", tmp_path / "d.jsonl", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "d.jsonl").is_file()


@pytest.mark.parametrize(
    ("flags", "named"),
    [(("--gate", "0.5"), "--gate"), (("--out", "other.jsonl"), "--out"), (("-k", "2", "--seed", "1"), "--budget, --seed")],
    ids=["gate", "out", "budget-seed"],
)  # fmt: skip
def test_live_resume_refuses_flags_it_would_ignore(
    tmp_path: Path, flags: tuple[str, ...], named: str
) -> None:
    session = tmp_path / "s.jsonl"
    shutil.copy(DEMO, session)
    before = session.read_bytes()
    p = run_cli("live", "--resume", session, "--headless", *flags, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip().endswith(f"{named} would be ignored; drop {'them' if ',' in named else 'it'}")
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert session.read_bytes() == before and not (tmp_path / "other.jsonl").exists()


@pytest.mark.parametrize("flags", [("--headless",), ()], ids=["headless", "piped"])
def test_live_paused_without_the_full_screen_is_refused(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Before: --paused with --headless (or piped) ran the session straight through, exit 0."""
    p = run_cli("live", "--demo", "--paused", *flags, "--out", tmp_path / "s.jsonl", cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.startswith(
        "beavertui: --paused starts the full screen paused, and this session runs headless"
    )
    assert p.stderr.count("\n") == 1 and not (tmp_path / "s.jsonl").exists()
