"""One reader policy for the session files of a run: `metrics` (its tables, usage, analysis and card),
`export` and `export --html` count the same files, leave out the same ones, and say each with its reason
in one line; two runs that share a run id are kept apart; a deep tree is walked without recursion.

The run is the recorded H200 batch run of tests/data (12 sessions, 3 of them finished), copied and
damaged in the ways a run can be: a FIFO and an oversized file named like sessions, a file without a
header, a session damaged before its end, and a session whose header names another task than its name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.fileio import MAX_WALK_DEPTH
from beavertui.engine.session.events import SessionEnd
from beavertui.engine.session.store import dump_line, session_files

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "data" / "h200_batch_run"
PROTO = "scripted_alternate/iterative-K5-L3-H2-T0-p0.7-bd892733"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def _damaged_run(tmp: Path) -> tuple[Path, dict[str, str]]:
    """The H200 run with five files that are no usable session of it; file name -> words of its reason."""
    run = tmp / "run"
    shutil.copytree(H200, run)
    folder = run / PROTO
    os.mkfifo(folder / "fifo_task__s0.jsonl")
    with open(folder / "huge_task__s0.jsonl", "wb") as fh:  # sparse: 65 MiB on paper, nothing on disk
        fh.truncate(65 << 20)
    (folder / "garbage__s0.jsonl").write_text("not a session\n", encoding="utf-8")
    # a finished session with a bad line in its middle (the lines after it hold its end)
    lines = (folder / "scan_01__s0.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["kind"] == "end"
    lines[3] = lines[3][: len(lines[3]) // 2]
    (folder / "scan_01__s0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # a finished session under the name of another task and sample
    shutil.copy(folder / "spmv_csr_01__s0.jsonl", folder / "transpose_00__s1.jsonl")
    reasons = {
        "fifo_task__s0.jsonl": "is a FIFO",
        "huge_task__s0.jsonl": "larger than the 67,108,864 bytes",
        "garbage__s0.jsonl": "bad JSON at line 1",
        "scan_01__s0.jsonl": "damaged before its end: bad JSON at line 4",
        "transpose_00__s1.jsonl": "its header names task 'spmv_csr_01', its file name task 'transpose_00'",
    }
    return run, reasons


def _left_out(lines: list[str]) -> dict[str, str]:
    """File name -> the line that left it out."""
    out = {}
    for line in lines:
        m = re.search(r"([\w.]+\.jsonl): ", line)
        assert m is not None, line
        out[m[1]] = line
    return out


def test_metrics_and_export_count_and_leave_out_the_same_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, reasons = _damaged_run(tmp_path)
    code, out, err = _cli(capsys, "metrics", str(run), "--json")
    assert code == 0, err
    doc = json.loads(out)
    metrics_left = _left_out(doc["left_out"])
    assert set(metrics_left) == set(reasons)
    for name, words in reasons.items():
        assert words in metrics_left[name], metrics_left[name]
        assert "\n" not in metrics_left[name]
    # said on stderr too, one line per file, and in the note of every table
    said = [line for line in err.splitlines() if line.startswith("beavertui: left out ")]
    assert set(_left_out(said)) == set(reasons)
    for table in doc["tables"]:
        assert "5 file(s) or folder(s) left out of every rate" in table["note"], table["name"]
    # usage counts the sessions the attempts table read: the run's 12, less the one damaged before its end
    (usage,) = doc["usage"]
    assert usage["sessions"] == 11

    rows_file = tmp_path / "rows.jsonl"
    code, _, err = _cli(capsys, "export", str(run), "-o", str(rows_file))
    assert code == 0, err
    export_left = _left_out([line for line in err.splitlines() if line.startswith("beavertui: left out ")])
    assert export_left.keys() == metrics_left.keys()
    for name, line in export_left.items():
        assert line.removeprefix("beavertui: left out ") == metrics_left[name]
    assert "5 files left out" in err
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
    # the finished sessions of the run, less the damaged one; nothing of the file under a wrong name
    assert {(r["task_id"], r["sample"]) for r in rows} == {("flashattn_v2_06", 0), ("spmv_csr_01", 0)}
    assert len(rows) == 10

    page = tmp_path / "run.html"
    code, _, err = _cli(capsys, "export", str(run), "--html", "-o", str(page))
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert "(11 sessions)" in err
    for name in reasons:
        assert f"left out {run / PROTO / name}" in text, name
    html_left = _left_out([line for line in err.splitlines() if line.startswith("beavertui: left out ")])
    assert html_left.keys() == metrics_left.keys()


def _first_attempt_only(run: Path) -> None:
    """Rewrite every session of a run copy as a different run: its first attempt, then an end (line by line,
    so the headers stay as recorded)."""
    end = dump_line(SessionEnd(t=None, stop_reason="budget", iterations=1, success=False))
    for path in run.rglob("*__s0.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        out = [lines[0]]
        for line in lines[1:]:
            out.append(line)
            if json.loads(line)["kind"] == "verdict":
                break
        path.write_text("\n".join([*out, end]) + "\n", encoding="utf-8")


def _rates(doc: dict) -> list[tuple]:
    keys = ("model", "n_tasks", "pass@1", "pass@k", "debug_rate@k", "avg_iterations", "degenerate_rate_raw")
    analysis = (
        "edit_precision",
        "bug_recall",
        "code_degenerate_rate",
        "analysed_repairs",
        "unscored_repairs",
    )
    return [tuple(g.get(k) for k in (*keys, *analysis)) for g in doc["groups"]]


def test_two_runs_that_share_a_run_id_are_kept_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two different runs with one run id ("sched"): a, every session failed at its first attempt and
    # ended; b, the recorded run (3 sessions finished, repaired). An arm run twice is scored once (the
    # first run's), as for two run ids, so the tree scores as run a alone; merged, the 3 arms both runs
    # hold were one trajectory each, repaired (pass@k 25% instead of 0%).
    tree = tmp_path / "tree"
    shutil.copytree(H200, tree / "a")
    shutil.copytree(H200, tree / "b")
    _first_attempt_only(tree / "a")
    code, out, err = _cli(capsys, "metrics", str(tree / "a"), "--json")
    assert code == 0, err
    alone = json.loads(out)
    code, out, err = _cli(capsys, "metrics", str(tree), "--json")
    assert code == 0, err
    both = json.loads(out)
    assert _rates(both) == _rates(alone)
    assert [g["pass@k"] for g in both["groups"]] == [0.0]
    assert both["shared_run_ids"] == {"sched": ["a", "b"]}
    assert both["repeated_arms_left_out"] == {"sched (b)": 3}
    assert "two runs that share one run id are kept apart by their folders: sched: a, b" in err
    # the rows of each run carry their own run id
    rows_file = tmp_path / "rows.jsonl"
    code, _, err = _cli(capsys, "export", str(tree), "-o", str(rows_file))
    assert code == 0, err
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
    assert {r["run_id"] for r in rows} == {"sched", "sched (b)"}
    assert sum(r["run_id"] == "sched" for r in rows) == 12  # a: one attempt in each of 12 sessions


def test_a_deep_tree_is_walked_without_recursion_and_says_what_it_left(
    tmp_path: Path, deep_tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # deeper than Python's recursion limit (1,000): a recursive walk (rglob) raised RecursionError
    tree, bottom = deep_tree
    _walk_deep_tree(tmp_path, tree, bottom, capsys)


def _walk_deep_tree(tmp_path: Path, tree: Path, bottom: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(H200 / PROTO / "spmv_csr_01__s0.jsonl", tree / "spmv_csr_01__s0.jsonl")
    shutil.copy(H200 / PROTO / "flashattn_v2_06__s0.jsonl", bottom / "flashattn_v2_06__s0.jsonl")
    shallow = tree
    for _ in range(MAX_WALK_DEPTH):
        shallow = shallow / "d"
    shutil.copy(H200 / PROTO / "scan_01__s0.jsonl", shallow / "scan_01__s0.jsonl")

    left: list[str] = []
    found = [p.name for p in session_files(tree, left_out=left)]
    assert found == ["spmv_csr_01__s0.jsonl", "scan_01__s0.jsonl"]
    assert left == [f"{shallow / 'd'}: folder not read: more than {MAX_WALK_DEPTH} folders below {tree}"]

    page = tmp_path / "deep.html"
    card = tmp_path / "card.md"
    code, _, err = _cli(capsys, "export", str(tree), "--html", "-o", str(page))
    assert code == 0, err
    assert "(2 sessions)" in err
    assert f"beavertui: left out {left[0]}" in err.splitlines()
    code, _, err = _cli(capsys, "metrics", str(tree), "--card", str(card))
    assert code == 0, err
    assert f"beavertui: left out {left[0]}" in err.splitlines()
    assert "scripted:@alternate" in card.read_text(encoding="utf-8")


def test_a_folder_of_files_all_left_out_says_why_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "a__s0.jsonl")
    (run / "b__s0.jsonl").write_text("not a session\n", encoding="utf-8")
    why = f"no readable session: 2 file(s) or folder(s) left out, the first: {run / 'a__s0.jsonl'}: is a FIFO"
    for args in (["metrics", str(run)], ["export", str(run), "-o", str(tmp_path / "rows.jsonl")],
                 ["export", str(run), "--html", "-o", str(tmp_path / "run.html")]):  # fmt: skip
        code, _, err = _cli(capsys, *args)
        assert code == 2, args
        assert err.startswith(f"beavertui: {run}: {why}") and err.count("\n") == 1, (args, err)


def test_each_session_file_is_read_once_by_metrics_and_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table, the analysis, the usage, the card's headers and the page's sessions come from one pass."""
    from beavertui.engine.metrics import attempts

    reads: list[Path] = []
    real = attempts.read_session

    def counted(path: Path) -> object:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(attempts, "read_session", counted)
    files = list(session_files(H200))
    for args in (["metrics", str(H200), "--card", str(tmp_path / "card.md")],
                 ["metrics", str(H200), "--paper"],
                 ["export", str(H200), "--html", "-o", str(tmp_path / "run.html")]):  # fmt: skip
        reads.clear()
        code, _, err = _cli(capsys, *args)
        assert code == 0, (args, err)
        assert sorted(reads) == sorted(files), args
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert all(f.stem.split("__")[0] in page for f in files)
    assert "## Tokens and cost" in (tmp_path / "card.md").read_text(encoding="utf-8")


def test_a_run_folder_without_sessions_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for args in (["metrics", str(run)], ["export", str(run), "--html", "-o", str(tmp_path / "run.html")]):
        code, _, err = _cli(capsys, *args)
        assert code == 2, args
        assert err.count("\n") == 1, (args, err)
    assert err == f"beavertui: {run}: no session files found\n"
    assert not (tmp_path / "run.html").exists()


def test_an_empty_session_file_of_a_killed_batch_says_how_to_run_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A batch killed between making a session's file and writing its header leaves it empty. Before, it
    was left out as an "empty file" like any unreadable one, with nothing saying how to get it run."""
    run = tmp_path / "run"
    shutil.copytree(H200, run)
    victim = run / PROTO / "scan_01__s0.jsonl"
    victim.write_bytes(b"")
    code, _out, err = _cli(capsys, "metrics", str(run))
    assert code == 0
    assert (
        f"left out {victim}: empty file (a session its batch began but never wrote: beavertui batch --resume "
        f"{run} runs it)"
    ) in err
    lonely = tmp_path / "lonely.jsonl"  # outside a run: no batch to resume
    lonely.write_bytes(b"")
    code, _out, err = _cli(capsys, "export", str(lonely))
    assert code == 2 and err.strip().endswith(f"{lonely}: empty file")
