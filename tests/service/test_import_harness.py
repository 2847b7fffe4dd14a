"""`beavertui import` of a CUDABeaver harness run: sessions that replay, browse and score, with nothing invented.

The run read here is ``HARNESS_FIXTURE``: ``run/<stamp>/`` is a harness run directory (trimmed to index/,
error_code/, build_log_raw/, config.yaml, summary.json) and ``corpus/data/`` holds the instances it ran.
The expectations are computed from the fixture's own records and the harness's own summary.json, so the
same tests hold for the hand-made fixture and for a run recorded by the harness on a GPU machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.engine.importers.cudabeaver import CATEGORY_MAP, FIVE_WAY_MAP, STOP_MAP
from beavertui.engine.importers.harness_run import protocol_of
from beavertui.engine.metrics.attempts import export_rows
from beavertui.engine.session.events import Built, Candidate, InfraError, Ran, SessionEnd, Verdict
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import load_session
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
#: The harness run under test (see its README). Replace the folder to test another recorded run.
HARNESS_FIXTURE = ROOT / "tests" / "data" / "harness_run"


def _run_dir() -> Path:
    runs = [
        p for p in sorted((HARNESS_FIXTURE / "run").iterdir()) if (p / "index" / "manifest.jsonl").is_file()
    ]
    assert len(runs) == 1, runs
    return runs[0]


RUN = _run_dir()
CORPUS = HARNESS_FIXTURE / "corpus"
RECORDS: list[dict[str, Any]] = [
    json.loads(line) for line in (RUN / "index" / "manifest.jsonl").read_text().splitlines() if line.strip()
]
TASKS = list(dict.fromkeys(r["task_id"] for r in RECORDS))
API_ERRORS = [r for r in RECORDS if r.get("error_type") == "api_error"]


def known(r: dict[str, Any]) -> bool:
    category = r.get("category") or r.get("five_category")
    return category in CATEGORY_MAP or category in FIVE_WAY_MAP


def process(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python3 -m beavertui ARGS``: the module's import goes through the real entry point."""
    return subprocess.run(
        [sys.executable, "-m", "beavertui", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The same command in this process (tests/cli_in_process.py: the same exit status, stdout and stderr):
    these tests are about what the commands write and say, not about their processes."""
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "run"
    done = process("import", str(RUN), "--out", str(out), "--corpus", str(CORPUS))
    assert done.returncode == 0, done.stderr
    (out / "stdout.txt").write_text(done.stdout)
    return out


@pytest.fixture(scope="module")
def imported_metrics(imported: Path) -> subprocess.CompletedProcess[str]:
    """``metrics --json`` on the imported run, run once for the tests that read it."""
    return cli("metrics", str(imported), "--json")


def sessions(out: Path) -> dict[str, tuple[Any, list[Any]]]:
    found = {}
    for path in sorted(out.glob("*.jsonl")):
        header, events = load_session(path)  # strict: a damaged or invalid file raises
        found[header.task.id] = (header, events)
    return found


def test_import_writes_one_valid_session_per_task_and_names_its_source(imported: Path) -> None:
    found = sessions(imported)
    assert sorted(found) == sorted(TASKS)
    import yaml

    config = yaml.safe_load((RUN / "config.yaml").read_text())
    for header, events in found.values():
        assert header.imported is not None and header.imported.source == "CUDABeaver harness"
        assert header.imported.run_id == RUN.name == header.run_id
        assert Path(header.imported.run_dir) == RUN.resolve()
        assert header.model.name == config["api"]["model"]
        assert header.protocol.temperature == config["api"].get("temperature", 0.7)
        assert header.protocol.budget == config["experiment"]["max_iterations"]
        assert header.protocol.method == config["experiment"].get("method", "iterative")
        assert "Imported from the CUDABeaver harness run" in (header.notes or "")
        assert isinstance(events[-1], SessionEnd)
    manifest = json.loads((imported / "run.json").read_text())
    assert manifest["status"] == "imported"
    assert manifest["imported"]["run_dir"] == str(RUN.resolve())
    assert manifest["imported"]["records"] == len(RECORDS)
    assert manifest["imported"]["model"]["name"] == config["api"]["model"]
    summary = json.loads((RUN / "summary.json").read_text())
    assert manifest["imported"]["harness_summary"]["core_metrics"] == summary["core_metrics"]
    assert "api_key" not in (imported / "run.json").read_text()


def test_events_hold_what_the_harness_recorded(imported: Path) -> None:
    found = sessions(imported)
    for r in RECORDS:
        _header, events = found[r["task_id"]]
        mine = [e for e in events if getattr(e, "iteration", None) == r["iteration"]]
        if r.get("error_type") == "api_error":
            assert [type(e) for e in mine] == [InfraError]
            continue
        category = r.get("category") or r["five_category"]
        if not known(r):
            assert mine == []
            continue
        (cand,) = [e for e in mine if isinstance(e, Candidate)]
        assert cand.code == (RUN / r["paths"]["error_code"]).read_text()
        (v,) = [e for e in mine if isinstance(e, Verdict)]
        assert v.category == CATEGORY_MAP.get(category) or v.category == FIVE_WAY_MAP[category]
        assert v.success == (r["status"] == "passed")
        assert v.correct == (
            r["status"] == "passed" or category in ("perf_below_threshold", "perf_unmeasured")
        )
        speed = (r.get("performance") or {}).get("speedup")
        assert v.speedup == (speed if v.correct else None)
        assert category in v.reason
        raw = (RUN / r["paths"]["build_log_raw"]).read_text()
        assert raw.startswith(f"BUILD_OK={r['build_ok']}")
        (built,) = [e for e in mine if isinstance(e, Built)]
        assert built.result.ok is r["build_ok"]
        assert built.result.log in raw and "[TEST OUTPUT]" not in built.result.log
        runs = [e for e in mine if isinstance(e, Ran)]
        assert len(runs) == ("[TEST OUTPUT]" in raw)
        if runs:
            assert raw.endswith(runs[0].result.log)
    for task in TASKS:
        last = [r for r in RECORDS if r["task_id"] == task][-1]
        end = found[task][1][-1]
        assert end.stop_reason == STOP_MAP[last["stop_reason"]]
        assert end.success == any(r["status"] == "passed" for r in RECORDS if r["task_id"] == task)


def test_fields_the_harness_did_not_record_are_null_and_said(imported: Path) -> None:
    for path in sorted(imported.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(line["t"] is None for line in lines), path  # no invented time stamps
        header, events = load_session(path)
        assert header.gpu is None
        kinds = {e.kind for e in events}
        assert not kinds & {"request", "reply", "sanitize"}, kinds  # no messages, no replies, no sanitizer
        for e in events:
            if isinstance(e, Built | Ran):
                r = e.result
                assert (r.rc, r.duration_s, r.command) == (None, None, None)
                assert set(r.unrecorded) >= {"rc", "duration_s", "command"}
            if isinstance(e, Verdict):
                assert e.signature is None
        said = " ".join(header.imported.not_recorded)
        for what in ("messages", "exit status", "duration", "time stamps", "token"):
            assert what in said
    # the plain-text views say "not recorded" instead of showing a null as a value
    from beavertui.console import event_line
    from beavertui.tui.panes.log import stage_line

    header, events = load_session(next(imported.glob("*.jsonl")))
    stage = next(e for p in imported.glob("*.jsonl") for e in load_session(p)[1] if isinstance(e, Built))
    text = stage_line(stage.result).plain
    assert "exit status not recorded" in text and "duration not recorded" in text
    assert "(command not recorded)" in text and "None" not in text
    assert "None" not in event_line(stage).plain


def test_api_error_records_are_counted_and_never_scored(
    imported: Path, imported_metrics: subprocess.CompletedProcess[str]
) -> None:
    assert API_ERRORS, "the fixture must hold an api_error record (the stub refuses one task on purpose)"
    stdout = (imported / "stdout.txt").read_text()
    n = len(API_ERRORS)
    assert f"not scored: {n} record{'s' if n != 1 else ''}: api_error" in stdout
    rows = list(export_rows(imported))
    assert sum(r["infra_error"] for r in rows) == n
    done = imported_metrics
    assert done.returncode == 0, done.stderr
    (group,) = json.loads(done.stdout)["groups"]
    assert group["n_infra_excluded"] == n
    run = json.loads((imported / "run.json").read_text())
    assert sum(v for k, v in run["imported"]["not_scored"].items() if k.startswith("api_error")) == n


def test_metrics_on_the_imported_run_give_the_harness_numbers(
    imported: Path, imported_metrics: subprocess.CompletedProcess[str]
) -> None:
    summary = json.loads((RUN / "summary.json").read_text())["per_task_results"]
    scored = [
        t for t in TASKS if any(r.get("error_type") != "api_error" for r in RECORDS if r["task_id"] == t)
    ]
    done = imported_metrics
    assert done.returncode == 0, done.stderr
    (group,) = json.loads(done.stdout)["groups"]
    assert group["n_tasks"] == len(scored)
    # the release's analysis drops api_error records; over the remaining tasks the rates are the harness's own
    assert group["pass@1"] == pytest.approx(sum(summary[t]["pass_at_1"] for t in scored) / len(scored))
    assert group["pass@k"] == pytest.approx(
        sum(summary[t]["status"] == "passed" for t in scored) / len(scored)
    )
    failed_first = [t for t in scored if not summary[t]["pass_at_1"]]
    if failed_first:
        debugged = sum(summary[t]["status"] == "passed" for t in failed_first)
        assert group["debug_rate@k"] == pytest.approx(debugged / len(failed_first))
    table = cli("metrics", str(imported), "--format", "markdown")
    assert table.returncode == 0, table.stderr
    for word in ("pass@1", "pass@k", "debug@k", "p=0.7"):
        assert word in table.stdout


def test_an_imported_run_is_rescored_at_the_papers_gate(
    imported: Path, imported_metrics: subprocess.CompletedProcess[str]
) -> None:
    """The run had no performance gate, so it is recorded at p = 0; `metrics --gate 0.7` reads it at the
    paper's p: its harness timed nothing, so no correct attempt has a speedup and pass@k(0.7) is 0, while
    its p sweep at p = 0 keeps the harness's own pass@k."""
    own = json.loads(imported_metrics.stdout)
    done = cli("metrics", str(imported), "--json", "--gate", "0.7")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    ((before,), (after,)) = own["groups"], doc["groups"]
    assert before["protocol"]["gate"] == 0.0 and after["protocol"]["gate"] == 0.7 and doc["gate"] == 0.7
    assert before["pass@k"] > 0 and after["pass@k"] == 0.0
    assert after["p_sweep"]["0.0"] == before["pass@k"]
    (row,) = doc["paper_tables"]["table1"]
    assert row["pass@k"] == 0.0
    assert "re-scored at gate p = 0.7 after the run (metrics --gate)" in doc["paper_tables"]["departures"]


def test_replay_piped_prints_a_plain_summary(imported: Path) -> None:
    for path in sorted(imported.glob("*.jsonl")):
        done = cli("replay", str(path))
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert "\x1b[" not in out
        assert f"imported from the CUDABeaver harness run {RUN.name}" in out
        assert "not recorded: the messages sent to the model" in out
        assert "ended: " in out and "None" not in out
        _header, events = load_session(path)
        for v in (e for e in events if isinstance(e, Verdict)):
            assert f"it{v.iteration}  {v.category}" in out
        for e in (e for e in events if isinstance(e, InfraError)):
            assert f"it{e.iteration}  infrastructure error (endpoint): {e.detail}" in out


async def test_the_browser_lists_and_opens_imported_sessions(imported: Path) -> None:
    from beavertui.service.catalog import read_row
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.browser import BrowserScreen
    from beavertui.tui.session_screen import SessionScreen
    from tests.tui.conftest import SIZE, wait_for

    rows = {read_row(p).task: read_row(p) for p in imported.glob("*.jsonl")}
    assert sorted(rows) == sorted(TASKS)
    for task, row in rows.items():
        last = [r for r in RECORDS if r["task_id"] == task][-1]
        assert row.stop == STOP_MAP[last["stop_reason"]]
        assert row.outcome in ("success", "failed")
    scored = [
        t for t in TASKS if any(r.get("error_type") != "api_error" for r in RECORDS if r["task_id"] == t)
    ]
    passed = next(
        (t for t in scored if any(r["status"] == "passed" for r in RECORDS if r["task_id"] == t)), scored[0]
    )
    app = BeaverApp(lambda: BrowserScreen(imported, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        table = app.screen.query_one("#sessions")
        assert table.row_count == len(TASKS)
        await pilot.press("slash", *f"task:{passed.lower()}", "enter")
        await pilot.pause()
        assert table.row_count == 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen))
        await pilot.pause()
        head = app.screen.query_one("#header").render().plain
        assert passed in head and " imported " in head
        assert "from the CUDABeaver harness: no messages, exit statuses or durations" in head
        await pilot.press("home")
        await pilot.pause()
        log = app.screen.query_one("#log").text
        assert "exit status not recorded" in log and "None" not in log
        diff = app.screen.query_one("#diff").text
        assert "iteration 1" in diff


def test_without_a_corpus_the_task_texts_are_said_missing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = cli("import", str(RUN), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"{len(TASKS)} tasks without their broken start and reference" in done.stdout
    for header, _ in sessions(out).values():
        assert header.task.broken_start == "" and header.task.reference is None
        assert any("broken start" in w for w in header.imported.not_recorded)
    (group,) = json.loads(cli("metrics", str(out), "--json").stdout)["groups"]
    # nothing to compare the repairs with: no edit or code-degeneration number is made up
    assert (group["edit_precision"], group["bug_recall"], group["code_degenerate_rate"]) == (None, None, None)


def test_the_release_around_the_run_directory_is_found(tmp_path: Path) -> None:
    import yaml

    exp = yaml.safe_load((RUN / "config.yaml").read_text())["experiment"]
    release = tmp_path / "release"
    shutil.copytree(CORPUS / "data", release / exp.get("dataset_dir", "data"))
    run = release / exp["output_dir"] / RUN.name
    shutil.copytree(RUN, run)
    out = tmp_path / "out"
    done = cli("import", str(run), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"task texts from {release / 'data'}" in done.stdout or "tasks without" in done.stdout
    found = sessions(out)
    in_corpus = [t for t in TASKS if (CORPUS / "data" / t).is_dir()]
    assert in_corpus
    for t in in_corpus:
        assert found[t][0].task.broken_start == (
            next((CORPUS / "data" / t).glob("broken_start.*")).read_text()
        )


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "src" / RUN.name
    shutil.copytree(RUN, run)
    return run


def _rewrite(run: Path, change: Any) -> None:
    path = run / "index" / "manifest.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in recs))


def test_an_unknown_category_is_left_out_and_said(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    target = next(r for r in RECORDS if r.get("error_type") != "api_error")
    _rewrite(
        run, lambda r: {**r, "category": "brand_new_bug"} if r["sample_id"] == target["sample_id"] else r
    )
    out = tmp_path / "out"
    done = cli("import", str(run), "--out", str(out), "--corpus", str(CORPUS))
    assert done.returncode == 0, done.stderr
    assert "not scored: 1 record: unknown category 'brand_new_bug'" in done.stdout
    header, events = sessions(out)[target["task_id"]]
    assert any(target["sample_id"] in d and "brand_new_bug" in d for d in header.imported.dropped)
    assert target["iteration"] not in [e.iteration for e in events if isinstance(e, Verdict)]


def test_a_repeated_run_becomes_samples_of_one_attempt(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    import yaml

    data = yaml.safe_load((run / "config.yaml").read_text())
    data["experiment"]["method"] = "repeated"
    (run / "config.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert cli("import", str(run), "--out", str(out), "--corpus", str(CORPUS)).returncode == 0
    rows = [r for r in export_rows(out) if not r["infra_error"]]
    assert rows and all(r["iteration"] == 1 for r in rows)
    by_task: dict[str, list[int]] = {}
    for r in rows:
        by_task.setdefault(r["task_id"], []).append(r["sample"])
    for task, samples in by_task.items():
        kept = [
            r for r in RECORDS if r["task_id"] == task and r.get("error_type") != "api_error" and known(r)
        ]
        assert samples == [r["iteration"] - 1 for r in kept]
    header, _ = next(iter(sessions(out).values()))
    assert header.protocol.method == "repeated" and header.protocol.continue_after_pass


def test_protocol_of_the_config() -> None:
    base = {"api": {"model": "m"}, "experiment": {"max_iterations": 5}}
    proto, notes = protocol_of(base)
    assert (proto.method, proto.budget, proto.feedback, proto.history, proto.temperature, proto.gate) == (
        "iterative",
        5,
        "L3",
        4,
        0.7,
        0.0,
    )
    assert any("temperature 0.7: the harness's default" in n for n in notes)
    rep, _ = protocol_of(
        {
            "api": {"model": "m", "temperature": 1.0},
            "experiment": {"max_iterations": 5, "method": "repeated", "n_attempts": 8, "feedback_level": 0},
            "performance_gate": {"enabled": True, "min_speedup": 0.9},
        }
    )
    assert (rep.method, rep.budget, rep.feedback, rep.temperature, rep.gate) == (
        "repeated",
        8,
        "L0",
        1.0,
        0.9,
    )


def test_a_raw_feedback_config_is_l3_raw() -> None:
    """feedback_mode raw is the release's L3_raw at level 3; the harness ignores the mode elsewhere."""

    def level(exp: dict[str, object]) -> str:
        return protocol_of({"api": {"model": "m"}, "experiment": {"max_iterations": 5, **exp}})[0].feedback

    assert level({"feedback_level": 3, "feedback_mode": "raw"}) == "L3_raw"
    assert level({"feedback_mode": "raw"}) == "L3_raw"  # level 3 is the harness's default
    assert level({"feedback_level": 3, "feedback_mode": "aware"}) == "L3"
    assert level({"feedback_level": 2, "feedback_mode": "raw"}) == "L2"
    with pytest.raises(BeaverError, match="feedback_mode 'rough'"):
        level({"feedback_mode": "rough"})


def test_a_few_shot_config_is_its_few_shot_protocol() -> None:
    """The harness reads few_shot_k > 0 as few-shot, its strategy ``random`` and its authors' committee runs
    as the pool where the config names none."""
    from beavertui.engine.loop.few_shot import RELEASE_POOL

    def proto(**exp: object) -> Protocol:
        return protocol_of({"api": {"model": "m"}, "experiment": {"max_iterations": 5, **exp}})[0]

    p = proto(few_shot_strategy="matched-error-category", few_shot_k=3, few_shot_pair_pool_seed=7)
    assert (p.few_shot, p.few_shot_k, p.few_shot_seed, p.few_shot_pool) == ("matched", 3, 7, RELEASE_POOL)
    assert proto(few_shot_k=1).few_shot == "random"
    assert proto(few_shot_strategy="curated", few_shot_k=0).few_shot == "none"
    c = proto(
        few_shot_strategy="curated",
        few_shot_k=5,
        few_shot_curated_file="m.json",
        few_shot_pool_committee_dirs=["a"],
    )
    assert (c.few_shot, c.few_shot_curated, c.few_shot_pool) == ("curated", "m.json", ("a",))
    with pytest.raises(BeaverError, match="few_shot_strategy 'nearest'"):
        proto(few_shot_strategy="nearest", few_shot_k=1)


BAD_CASES = {
    "missing": (None, "no such folder"),
    "file": ("file", "not a folder"),
    "empty": ("empty", "not a CUDABeaver harness run (no index/manifest.jsonl)"),
    "no_config": ("no_config", "no config.yaml"),
    "bad_json": ("bad_json", "index/manifest.jsonl: line 2 is not JSON"),
    "bad_yaml": ("bad_yaml", "config.yaml: not valid YAML"),
    "no_model": ("no_model", "api.model is not set"),
    "parent": ("parent", "holds harness runs, not one"),
    "empty_manifest": ("empty_manifest", "no records"),
    "history": ("history", "max_history_rounds 6"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_is_one_line(tmp_path: Path, case: str) -> None:
    kind, expected = BAD_CASES[case]
    target = tmp_path / "x"
    if kind == "file":
        target.write_text("hello")
    elif kind == "empty":
        target.mkdir()
    elif kind == "parent":
        shutil.copytree(RUN, target / RUN.name)
    elif kind is not None:
        shutil.copytree(RUN, target)
        manifest = target / "index" / "manifest.jsonl"
        config = target / "config.yaml"
        if kind == "no_config":
            config.unlink()
        elif kind == "bad_json":
            lines = manifest.read_text().splitlines()
            manifest.write_text(lines[0] + "\n{not json\n")
        elif kind == "bad_yaml":
            config.write_text("api: [unclosed\n")
        elif kind == "no_model":
            config.write_text("api: {base_url: x}\nexperiment: {max_iterations: 2}\n")
        elif kind == "empty_manifest":
            manifest.write_text("\n")
        elif kind == "history":
            import yaml

            data = yaml.safe_load(config.read_text())
            data["experiment"]["max_history_rounds"] = 6
            config.write_text(yaml.safe_dump(data))
    done = cli("import", str(target), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout
    err = done.stderr.strip()
    assert err.startswith("beavertui: ") and "\n" not in err and "Traceback" not in err
    assert expected in err
    assert not (tmp_path / "out").exists()


def test_an_existing_output_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = cli("import", str(RUN), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.strip() == f"beavertui: {out}: already exists; give another --out or remove it"
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
