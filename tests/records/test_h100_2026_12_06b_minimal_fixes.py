"""The minimal fixes of the release's 65 CUPTI instances resumed a fourth and fifth time, on an H100 on
2026-12-06 (docs/data/h100-2026-12-06b/minimal-fixes-4 and -5, docs/lab/h100-2026-12-06b.md): what each call
printed, the store after the fifth through the figures script, its replay without a GPU, and the fixes the
package ships from it. (The scores of the recorded H200 release run against the shipped fixes are
tests/records/test_release_minimal_fix_scoring.py's.)"""

from __future__ import annotations

import fnmatch
import json
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from beavertui.engine.corpus import patch
from tests.cli_in_process import run_script
from tests.records.test_h100_2026_12_05_late import _jsonl

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "h100-2026-12-06b"
BEFORE = ROOT / "docs" / "data" / "h100-2026-12-06" / "minimal-fixes-3"
LAB = " ".join((ROOT / "docs" / "lab" / "h100-2026-12-06b.md").read_text(encoding="utf-8").split())
"""The lab file's text, its line breaks as spaces."""
SLUG = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"
KNOWN = ROOT / "beavertui" / "engine" / "corpus" / "known"
NVCC = ["cuda_*", "cudabench_*", "cublas_*", "cusparse_*", "cusolver_*", "cufft_[0-9]*"]
SHIPPED = ROOT / "beavertui" / "engine" / "corpus" / "known" / "fixes" / SLUG
TASKS = ROOT / "bench" / "release-cupti-tasks.txt"
SAME = ("status", "verified", "lines", "reference_lines", "minimality", "hunks", "speedup", "correct")
"""What a replay must give as the GPU call recorded it (the why and the calls say how it was asked)."""
REDRAWN = {"cuda_107": 47, "cuda_196": 48}
"""Fixes whose patch the fifth call wrote as difflib's re-diff of the broken start and the fix, marking more
lines than the search's own edit (the record's lines) changes: the lines that patch marks. The package ships
them redrawn from the search's edit (``Diff.unified``), the fix text the same."""


def _steps(folder: str) -> str:
    return (DATA / folder / "steps.log").read_text(encoding="utf-8")


def _patch_lines(text: str) -> int:
    body = [x for x in text.splitlines() if not x.startswith(("--- ", "+++ "))]
    return sum(x.startswith(("-", "+")) for x in body)


def _start_read_by(*patches: str) -> str:
    """A broken start every patch applies to: each line one of them reads (as context or removed) as they
    say it is (they must agree), every other line a placeholder of its own that no patch writes. Two patches
    that give the same text from it give the same text from any start they both apply to: a placeholder in
    their output comes from its own line in both, and any real start puts the same line there in both."""
    read: dict[int, str] = {}
    no_newline = False
    for text in patches:
        parsed = patch.parse(text)
        no_newline = no_newline or parsed.old_ends_without_newline
        for hunk in parsed.hunks:
            at = hunk.old_start - 1 if hunk.old_count else hunk.old_start
            for tag, line in hunk.lines:
                if tag != "+":
                    assert read.setdefault(at, line) == line, f"the patches disagree on old line {at + 1}"
                    at += 1
    start = "".join(
        read.get(k, f"\0 old line {k + 1}, read by no patch") + "\n" for k in range(max(read) + 1)
    )
    return start[:-1] if no_newline else start


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store after the fifth call (every judge answer of the five): its H100 folder."""
    into = tmp_path_factory.mktemp("store")
    with tarfile.open(DATA / "minimal-fixes-5" / "store.tgz") as tar:
        tar.extractall(into, filter="data")
    return into / "store" / SLUG


def test_what_the_two_calls_printed() -> None:
    four, five = _steps("minimal-fixes-4"), _steps("minimal-fixes-5")
    # the fourth: its hunk phase finished cuda_122's (cut in the third) with 9 oracle calls, then line phases
    assert "previous store.tgz unpacked: 194 answer files" in four
    assert "43 of 65 tasks have one (43 verified); minimal 1, budget 64" in four
    assert "9 oracle calls in 23 s" in four
    assert "47 of 65 tasks have one (47 verified); minimal 11, budget 54" in four
    assert "1595 oracle calls in 419 s" in four
    assert re.search(r"\[446 s\] minimize: rc 0", four)
    # the fifth: nothing left to the hunk phases, every oracle call to the line phases
    assert "0 oracle calls in 1 s" in five
    assert "51 of 65 tasks have one (51 verified); minimal 18, budget 47" in five
    assert "2224 oracle calls in 397 s" in five
    assert re.search(r"\[402 s\] minimize: rc 0", five)
    # each call's outcomes agree with its summary line
    for folder, verified, calls in (("minimal-fixes-4", 47, 1595), ("minimal-fixes-5", 51, 2224)):
        out = _jsonl(DATA / folder / "minimize.jsonl")
        assert len(out) == 65 and sum(x["verified"] for x in out.values()) == verified
        assert sum(x["calls"] for x in out.values()) == calls
    four_f = json.loads((DATA / "minimal-fixes-4" / "figures.json").read_text(encoding="utf-8"))
    assert (four_f["verified"], four_f["by_minimality"]) == (47, {"lines": 11, "hunks": 36})
    assert (four_f["median_fix_lines"], four_f["median_reference_lines"]) == (145, 151)
    assert "47 verified (11 of them 1-minimal over lines)" in LAB
    assert "1,595 oracle calls in 419 s" in LAB and "2,224 in 397 s" in LAB
    assert f"({round(2224 / 397, 1)} a second" in LAB


def test_the_store_through_the_figures_script(store: Path) -> None:
    script = ROOT / "scripts" / "minimal_fixes_figures.py"
    out = run_script(script, store, "--tasks", TASKS, check=True).stdout
    assert out.strip() == (DATA / "minimal-fixes-5" / "figures.md").read_text(encoding="utf-8").strip()
    got = json.loads(run_script(script, store, "--tasks", TASKS, "--json", check=True).stdout)
    assert got == json.loads((DATA / "minimal-fixes-5" / "figures.json").read_text(encoding="utf-8"))
    assert got["verified"] == 51 and got["instances"] == 65
    assert got["by_minimality"] == {"lines": 18, "hunks": 33}
    assert (got["median_fix_lines"], got["median_reference_lines"]) == (135, 140)
    assert round(100 * got["median_share_of_reference"]) == 92
    assert "51 of the 65 have a verified fix (78%)" in LAB
    assert "18 of them 1-minimal over lines, 33 over hunks only" in LAB
    assert "a median 135 lines against 140 lines" in LAB and "(median share 92%)" in LAB
    # against the 70 instances of the nvcc families usable on the H200 (the 5 cudabench ones included)
    verdicts = json.loads((KNOWN / "nvidia_h200_sm_90_cuda_13_0.json").read_text(encoding="utf-8"))
    usable = [
        v
        for v in verdicts
        if any(fnmatch.fnmatch(v["task_id"], pat) for pat in NVCC)
        and v["verdict"] in ("usable", "usable_relabelled")
    ]
    assert f"{round(100 * got['verified'] / len(usable))}% of the {len(usable)}" in LAB


def test_the_replay_gives_what_the_gpu_recorded(store: Path) -> None:
    """corpus minimize --replay over the store (no GPU; replay.jsonl): every instance as the call left it."""
    record = json.loads((store / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
    replay = _jsonl(DATA / "minimal-fixes-5" / "replay.jsonl")
    assert set(replay) == set(record) and len(record) == 65
    assert sum(r["calls"] for r in replay.values()) == 0
    assert [t for t in record if any(record[t][k] != replay[t][k] for k in SAME)] == []


def test_the_package_ships_the_fifth_calls_51(store: Path) -> None:
    record = json.loads((store / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
    shipped = json.loads((SHIPPED / "minimal_fixes.json").read_text(encoding="utf-8"))["tasks"]
    assert shipped == {t: r for t, r in record.items() if r["verified"]}
    assert {p.name for p in SHIPPED.iterdir() if p.is_dir()} == set(shipped)
    for t, s in shipped.items():
        assert s["gpu"] == SLUG and s["oracle"] == "judge" and s["correct"] and s["speedup"] >= 0.7
        shipped_patch = (SHIPPED / t / "minimal_fix.patch").read_text(encoding="utf-8")
        stored = (store / t / "minimal_fix.patch").read_text(encoding="utf-8")
        # every shipped patch marks exactly the lines of the search's edit, its record's lines
        assert _patch_lines(shipped_patch) == s["lines"], t
        short = t.split("__")[0]
        if short not in REDRAWN:
            assert shipped_patch == stored, t
            continue
        # the call's own patch, a re-diff, marks more; the redrawn one gives the same fix
        assert shipped_patch != stored and _patch_lines(stored) == REDRAWN[short], t
        start = _start_read_by(stored, shipped_patch)
        assert patch.apply(start, shipped_patch) == patch.apply(start, stored), t
    assert sum(t.split("__")[0] in REDRAWN for t in shipped) == len(REDRAWN)


def test_against_the_third_call() -> None:
    """What the two calls changed against the replay the package shipped before (minimal-fixes-3)."""
    before = _jsonl(BEFORE / "replay.jsonl")
    after = _jsonl(DATA / "minimal-fixes-5" / "replay.jsonl")
    was = {t for t, r in before.items() if r["verified"]}
    now = {t for t, r in after.items() if r["verified"]}
    assert len(was) == 42 and was <= now and len(now - was) == 9
    smaller = sorted(t for t in was if after[t]["lines"] < before[t]["lines"])
    assert len(smaller) == 9 and all(after[t]["minimality"] == "lines" for t in smaller)
    lines = {t.split("__")[0]: (before[t]["lines"], after[t]["lines"]) for t in smaller}
    assert lines["cuda_137"] == (57, 14) and lines["cuda_107"] == (55, 37)
    assert "cuda_137 at 14 lines where its hunk-level fix had 57, and cuda_107 at 37 where it had 55" in LAB
    assert all(after[t]["lines"] == before[t]["lines"] for t in was - set(smaller))
    new = Counter(after[t]["minimality"] for t in now - was)
    assert new == {"lines": 8, "hunks": 1}  # cuda_122's hunk phase, cut in the third call, ended verified
    assert after["cuda_122__memory_crash__5ace5f9e"]["minimality"] == "hunks"
    # the 14 without one: their records as the third call left them. In the fifth call cuda_197, cuda_204 and
    # cuda_215 asked on in their line phases (no smaller set timed at the gate yet); the other 11 asked nothing
    rest = set(after) - now
    assert len(rest) == 14
    five = _jsonl(DATA / "minimal-fixes-5" / "minimize.jsonl")
    asked = sorted(t.split("__")[0] for t in rest if five[t]["calls"])
    assert asked == ["cuda_197", "cuda_204", "cuda_215"]
    assert [t for t in rest if any(before[t][k] != after[t][k] for k in SAME)] == []
    every_line = sorted(t.split("__")[0] for t in rest if after[t]["lines"] == after[t]["reference_lines"])
    assert len(every_line) == 8
    short = {t.split("__")[0] + ("m" if "memory" in t else ""): after[t] for t in rest}
    held = sorted(k for k, r in short.items() if r["correct"] and r["lines"] < r["reference_lines"])
    assert held == ["cuda_194", "cuda_198", "cuda_204", "cuda_227m", "cusolver_22", "cusparse_26"]
    assert [k for k in held if short[k]["speedup"] is None] == ["cusolver_22", "cusparse_26"]
    assert round(short["cuda_198"]["speedup"], 3) == 0.640
    assert "9 more instances have one, and 9 of the 42 shipped before are smaller" in LAB
    assert "8 still hold every line of the reference diff" in LAB
