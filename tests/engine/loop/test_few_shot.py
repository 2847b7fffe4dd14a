"""Few-shot examples (protocol ``few_shot``) against the release's own harness/few_shot.py.

The pool is tests/data/fewshot/pool (two run folders in the release's format made of real release instances,
its README); the release's harness/few_shot.py answers from its recorded answers (tests/release_oracle.py,
which also says how its per-process ``hash()`` of the task id is replaced by a stable one).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.loop import few_shot
from beavertui.engine.loop.prompts import system_message
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import Request, SessionHeader
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.release_oracle import release

DATA = Path(__file__).resolve().parents[2] / "data"
POOL = (
    DATA / "fewshot" / "pool" / "alpha" / "20260101_000000",
    DATA / "fewshot" / "pool" / "beta" / "20260102_000000",
)
RELEASE_REAL = DATA / "release_real"
#: Two real release instances that are in no folder of the pool.
OUTSIDE = ("kernelbench_level1_92__compile_error__52277656", "kernelbench_level2_63__logic_error__6e3c1c0a")
RELEASE_STRATEGY = {"matched": "matched-error-category", "random": "random", "curated": "curated"}


def release_few_shot() -> Any:
    return release("few_shot")


def task(name: str) -> Task:
    return load_corpus(RELEASE_REAL, only=[name]).get(name)


def shots(strategy: str, k: int, **kw: Any) -> Protocol:
    return Protocol(budget=1, few_shot=strategy, few_shot_k=k, few_shot_pool=tuple(map(str, POOL)), **kw)  # type: ignore[arg-type]


def first_request(t: Task, protocol: Protocol) -> Request:
    """The first model request of a one-attempt session (every candidate judged a labelled build failure)."""
    items = list(
        run_session(
            t, ScriptedModel(["```cuda\nint x;\n```"]), RecordedToolchain({}, unknown="fail"), protocol
        )
    )
    assert isinstance(items[0], SessionHeader) and items[0].protocol == protocol
    return next(e for e in items if isinstance(e, Request))


def release_pool() -> list[dict[str, Any]]:
    pool = release_few_shot().build_pair_pool(list(POOL))
    assert isinstance(pool, list)
    return pool


def test_the_pool_is_the_releases() -> None:
    ours = [dataclasses.asdict(p) for p in few_shot.build_pool(POOL)]
    assert ours == release_pool()
    # the recorded folders' rules: a pass at once, a pass after the fifth attempt: no pair; a pair is the
    # first failure and the first later pass; the long log is kept to 1,000 characters
    assert {p["task_id"] for p in ours} >= {
        "cuda_104__compile_error__f8160fc8",
        "cusparse_4__compile_error__cfcd99f6",
    }
    assert "cufft_samples_c2c_1d_1024_fp32__perf_broken__8a23fb7d" not in {p["task_id"] for p in ours}
    assert [(p["fail_iter"], p["pass_iter"]) for p in ours if p["source_model"] == "alpha"][1] == (1, 3)
    assert max(len(p["initial_error"]) for p in ours) == 1000


def test_the_pool_drops_long_broken_code_as_the_release_does(tmp_path: Path) -> None:
    """A broken start over 300 non-blank lines leaves the pool (padded copy of one folder)."""
    folder = tmp_path / "gamma" / "run"
    shutil.copytree(POOL[1], folder)
    record = json.loads((folder / "index" / "manifest.jsonl").read_text().splitlines()[0])
    code = folder / record["paths"]["error_code"]
    code.write_text(code.read_text() + "".join(f"// pad {i}\n" for i in range(300)))
    ours = [dataclasses.asdict(p) for p in few_shot.build_pool([folder])]
    assert ours == release_few_shot().build_pair_pool([folder])
    assert record["task_id"] not in {p["task_id"] for p in ours} and ours


@pytest.mark.parametrize("name", OUTSIDE)
@pytest.mark.parametrize("strategy", ["matched", "random"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_the_request_carries_the_examples_the_releases_rule_draws(name: str, strategy: str, k: int) -> None:
    """The system message of the first request is beavertui's own, then the examples the release's
    select_examples draws for the task (its id and labelled category), in the release's words."""
    t = task(name)
    expected = release_few_shot().select_examples(
        release_pool(), name.replace("_", "/", 1), t.label, RELEASE_STRATEGY[strategy], k, seed=42
    )
    assert len(expected) == k
    text = release_few_shot().format_examples_for_system(expected)
    request = first_request(t, shots(strategy, k))
    assert request.messages[0].content == system_message(t).content + text
    assert f"Here are {k} examples of similar bugs and their fixes:" in request.messages[0].content
    plain = first_request(t, Protocol(budget=1))
    assert plain.messages[0].content == system_message(t).content  # none: no examples
    assert request.messages[1:] == plain.messages[1:]  # the rest of the first turn is the same
    if strategy == "matched" and k <= 3 and t.label == "compile_error":
        assert all(e["error_category"] == "compile_error" for e in expected)


def test_another_seed_draws_as_the_release_does_with_it() -> None:
    t = task(OUTSIDE[0])
    for seed in (1, 2, 3):
        expected = release_few_shot().select_examples(
            release_pool(), OUTSIDE[0].replace("_", "/", 1), t.label, "random", 3, seed=seed
        )
        got = first_request(t, shots("random", 3, few_shot_seed=seed)).messages[0].content
        assert got == system_message(t).content + release_few_shot().format_examples_for_system(expected)


def test_curated_takes_the_maps_first_k_that_are_in_the_pool(tmp_path: Path) -> None:
    name = OUTSIDE[0]
    listed = [
        "cuda_59__logic_error__501f0dd2",
        "not_in_the_pool__compile_error__00000000",
        "cuda_104__compile_error__f8160fc8",  # in both folders: the first seen (alpha's)
        "cuda_1__memory_crash__4c324055",  # the fourth: beyond K = 3
    ]
    curated = tmp_path / "curated.json"
    curated.write_text(json.dumps({"mappings": {name.replace("_", "/", 1): listed}}))
    expected = release_few_shot().select_examples(
        release_pool(), name.replace("_", "/", 1), "compile_error", "curated", 3, curated_file=str(curated)
    )
    assert [e["task_id"] for e in expected] == [listed[0], listed[2]] and expected[1][
        "source_model"
    ] == "alpha"
    t = task(name)
    got = first_request(t, shots("curated", 3, few_shot_curated=str(curated))).messages[0].content
    assert got == system_message(t).content + release_few_shot().format_examples_for_system(expected)
    # a task the map does not list gets no examples, as in the release
    other = task(OUTSIDE[1])
    quiet = first_request(other, shots("curated", 3, few_shot_curated=str(curated))).messages[0].content
    assert quiet == system_message(other).content


def test_leave_one_out_drops_the_tasks_own_repairs() -> None:
    """cuda_104 is in both folders. The release compares the pool's ids with the stem turned into another
    form (cuda/104__...), so its rule keeps the task's own repairs; beavertui drops every pair of the task."""
    name = "cuda_104__compile_error__f8160fc8"
    t = task(name)
    release_all = release_few_shot().select_examples(
        release_pool(), name.replace("_", "/", 1), t.label, "random", 20
    )
    assert name in {e["task_id"] for e in release_all}  # the release's own rule, as written
    system = first_request(t, shots("random", 20)).messages[0].content
    fixed = (RELEASE_REAL / "data" / name / "reference.cu").read_text()
    assert fixed not in system
    kept = [p for p in release_pool() if p["task_id"] != name]
    assert f"Here are {len(kept)} examples" in system


def test_a_relative_pool_is_read_from_the_release_root() -> None:
    t = task(OUTSIDE[0])
    relative = tuple(str(Path("..") / p.relative_to(DATA)) for p in POOL)
    p = Protocol(budget=1, few_shot="random", few_shot_k=2, few_shot_pool=relative)
    assert first_request(t, p).messages[0].content == first_request(t, shots("random", 2)).messages[0].content


def test_without_its_data_a_few_shot_session_stops_before_it_starts(tmp_path: Path) -> None:
    t = task(OUTSIDE[0])
    cases = [
        (Protocol(few_shot="matched", few_shot_k=3), "evaluation/outputs/gemma4/20260424_123214"),
        (Protocol(few_shot="random", few_shot_k=1, few_shot_pool=(str(tmp_path / "gone"),)), "not there"),
        (shots("curated", 1, few_shot_curated=str(tmp_path / "none.json")), "not in the public release"),
    ]
    for protocol, said in cases:
        items = run_session(t, ScriptedModel([]), RecordedToolchain({}, unknown="fail"), protocol)
        with pytest.raises(BeaverError, match=said):
            next(items)  # nothing, not even the header, is yielded


def test_settings_that_would_do_nothing_are_refused() -> None:
    for bad in (
        {"few_shot_k": 3},
        {"few_shot_pool": ("x",)},
        {"few_shot": "matched"},
        {"few_shot": "curated", "few_shot_k": 1},
        {"few_shot": "random", "few_shot_k": 1, "few_shot_curated": "m.json"},
        {"few_shot": "random", "few_shot_k": 1, "planning": "plan"},
    ):
        with pytest.raises(ValueError):
            Protocol(**bad)  # type: ignore[arg-type]
    # the paper's protocol is saved as before: no few-shot key at its default
    assert not any(k.startswith("few_shot") for k in Protocol().model_dump(mode="json"))
    assert shots("matched", 3).key()["few_shot"] == "matched_K3" and Protocol().key()["few_shot"] == "none"
    assert shots("random", 5, few_shot_seed=7).short().endswith("few-shot=random_K5_seed7")


def test_a_batch_of_the_releases_grid_says_what_is_missing_before_writing(tmp_path: Path) -> None:
    """paper-fewshot.toml names the release's committee runs, which the public release does not ship: the
    batch stops in one line before its run folder exists; with a pool that is there it plans all 9 arms."""
    from tests.cli_in_process import run_cli

    base = (
        "batch",
        "--corpus",
        RELEASE_REAL,
        "--tasks",
        OUTSIDE[0],
        "--models",
        "scripted:@reference",
        "--toolchain",
        "demo",
    )
    p = run_cli(
        *base, "--protocol", "paper-fewshot", "--run-id", "r", "--sessions-dir", tmp_path, cwd=tmp_path
    )
    assert p.returncode == 2, p.stderr[-400:]
    assert (
        "evaluation/outputs/gemma4/20260424_123214" in p.stderr and "public release does not ship" in p.stderr
    )
    assert not (tmp_path / "r").exists()
    bundled = Path(few_shot.__file__).resolve().parents[2] / "protocols" / "paper-fewshot.toml"
    text = bundled.read_text()
    for name in few_shot.RELEASE_POOL:
        assert f'"{name}"' in text
    mine = tmp_path / "mine.toml"
    mine.write_text(
        text.replace(few_shot.RELEASE_POOL[0], str(POOL[0])).replace(few_shot.RELEASE_POOL[1], str(POOL[1]))
        .replace(few_shot.RELEASE_CURATED, str(tmp_path / "map.json"))
    )  # fmt: skip
    (tmp_path / "map.json").write_text("{}")
    p = run_cli(*base, "--protocol", mine, "--dry-run", "--sessions-dir", tmp_path, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-400:]
    for label in ("matched_K1", "random_K3", "curated_K5"):
        assert label in p.stdout + p.stderr


def test_a_record_pointing_outside_its_run_folder_is_never_read(tmp_path: Path) -> None:
    """A manifest's code and log paths are read inside the run folder only: ``../``, an absolute path and a
    link out leave the pair out of the pool, so no other file of this machine reaches a prompt."""
    secret = tmp_path / "secret.cu"
    secret.write_text("// SECRET\n__global__ void k() {}\n")
    folder = tmp_path / "pool" / "run"
    shutil.copytree(POOL[1], folder)
    manifest = folder / "index" / "manifest.jsonl"
    records = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    before = few_shot.build_pool([folder])
    assert before
    (folder / "out.cu").symlink_to(secret)
    for i, rel in enumerate(["../../secret.cu", str(secret), "out.cu"]):
        for record in records:
            paths = record.get("paths")
            if isinstance(paths, dict) and paths.get("error_code"):
                paths["error_code"] = rel
                paths["build_log_raw"] = rel
        manifest.write_text("".join(json.dumps(r) + "\n" for r in records))
        pool = few_shot.build_pool([folder])
        assert not any("SECRET" in p.broken_code + p.fixed_code + p.initial_error for p in pool), rel
        assert pool == [], i


@pytest.mark.parametrize(
    "mapping",
    [{"cuda/1": 5}, {"cuda/1": "cuda_59__logic_error__501f0dd2"}, {"cuda/1": [["a"]]}, {"cuda/1": [{}]}],
)
def test_a_curated_map_entry_that_is_no_list_of_ids_is_one_line(tmp_path: Path, mapping: Any) -> None:
    curated = tmp_path / "curated.json"
    curated.write_text(json.dumps({"mappings": mapping}))
    t = task(OUTSIDE[0])
    items = run_session(
        t,
        ScriptedModel([]),
        RecordedToolchain({}, unknown="fail"),
        shots("curated", 3, few_shot_curated=str(curated)),
    )
    with pytest.raises(BeaverError, match="cuda/1: expected a list of example task ids"):
        next(items)


def test_json_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    folder = tmp_path / "run"
    (folder / "index").mkdir(parents=True)
    (folder / "index" / "manifest.jsonl").write_text('{"task_id": "cuda_1", "x": ' + deep + "}\n")
    with pytest.raises(BeaverError, match="line 1 is not JSON"):
        few_shot.build_pool([folder])
    curated = tmp_path / "curated.json"
    curated.write_text(deep)
    protocol = shots("curated", 1, few_shot_curated=str(curated))
    with pytest.raises(BeaverError, match="not valid JSON"):
        few_shot.load_curated(protocol, task(OUTSIDE[0]))
