"""The release's few-shot examples (its Exp 5, harness/few_shot.py): the pool, the draw and the text.

An example is a repair a model made in a harness run of the release's format: the first attempt of a task
that failed within its first five, the first later attempt that passed, and the first 1,000 characters of the
failed attempt's build log. The pool is every such pair of the named run folders (the release's
``few_shot_pool_committee_dirs``) whose broken code has at most 300 non-blank lines. For the task under
repair, ``matched`` draws K examples whose broken code failed in the task's labelled category (padded at
random from the rest), ``random`` draws K of all, ``curated`` takes the first K a hand-made map lists for
the task; the examples go at the end of the system message, as the release puts them.

Departures, each because the release's own rule cannot be followed as written (docs/protocols.md):
- the draw is seeded with a stable hash of the task's id where the release adds Python's ``hash()`` of it,
  which changes with every process (PYTHONHASHSEED), so no two release runs drew alike;
- leave-one-out drops every pair of the task's base task (``cuda_104`` for ``cuda_104__compile_error__...``),
  where the release compares ids of two different forms that never match, so it drops nothing;
- a named run folder that is not there, or a pool with no pair at all, is an error here, where the release
  skips the folder and sends no examples;
- a record's file outside its run folder (``../``, an absolute path) is not read, and its pair is not in the
  pool, where the release reads whatever path a record names; a curated map entry that is not a list of
  task ids is an error, where the release reads a string as its characters.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_INPUT_BYTES, inside, parse_json, read_small_text
from beavertui.engine.session.events import Message
from beavertui.engine.session.protocol import RELEASE_FEW_SHOT_CURATED, RELEASE_FEW_SHOT_POOL, Protocol

#: The release's pool rules (harness/few_shot.py DEFAULT_MAX_BROKEN_LINES, DEFAULT_MAX_RECOVERY_ITER).
MAX_BROKEN_LINES = 300
MAX_RECOVERY_ITER = 5
#: Characters of the failed attempt's build log an example keeps, and of those, the ones its text quotes.
ERROR_KEPT = 1000
ERROR_SHOWN = 600
#: The release's default pool (two committee runs of its authors) and curated map: not in the public release.
RELEASE_POOL = RELEASE_FEW_SHOT_POOL
RELEASE_CURATED = RELEASE_FEW_SHOT_CURATED


@dataclass(frozen=True)
class Pair:
    """One example: a failed attempt and the later attempt of the same task that passed."""

    task_id: str
    source_model: str
    broken_code: str
    initial_error: str
    fixed_code: str
    error_category: str
    broken_lines: int
    fail_iter: int | None
    pass_iter: int | None


def code_lines(code: str) -> int:
    """Non-blank lines, as the release counts them."""
    return sum(1 for ln in code.splitlines() if ln.strip())


def _read(path: Path) -> str:
    """A file's text with its line ends read as the release's ``Path.read_text`` reads them."""
    return read_small_text(path, MAX_INPUT_BYTES, path.name).replace("\r\n", "\n").replace("\r", "\n")


def _records(manifest: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for number, line in enumerate(_read(manifest).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json(line)
        except ValueError:
            raise BeaverError(f"{manifest}: line {number} is not JSON") from None
        if not isinstance(record, dict) or "task_id" not in record:
            raise BeaverError(f"{manifest}: line {number} is not a manifest record")
        out.append(record)
    return out


def _iteration(record: Mapping[str, Any]) -> int:
    value = record.get("iteration", 0)
    return value if isinstance(value, int) else 0


def build_pool(folders: Sequence[Path]) -> list[Pair]:
    """Every pair of the run folders, in folder order, then in the order tasks first appear in each manifest
    (the release's build_pair_pool). A folder that is not a harness run is an error."""
    pairs: list[Pair] = []
    for folder in folders:
        manifest = folder / "index" / "manifest.jsonl"
        if not manifest.is_file():
            raise BeaverError(f"few_shot_pool {folder}: not a harness run folder (no index/manifest.jsonl)")
        by_task: dict[str, list[dict[str, Any]]] = {}
        for record in _records(manifest):
            by_task.setdefault(str(record["task_id"]), []).append(record)
        for task_id, records in by_task.items():
            records.sort(key=_iteration)
            records = [r for r in records if _iteration(r) <= MAX_RECOVERY_ITER]
            fail = next((i for i, r in enumerate(records) if r.get("status") == "failed"), None)
            if fail is None:
                continue
            passed = next(
                (i for i, r in enumerate(records) if i > fail and r.get("status") == "passed"), None
            )
            if passed is None:
                continue
            r_fail, r_pass = records[fail], records[passed]
            paths_fail, paths_pass = r_fail.get("paths"), r_pass.get("paths")
            if not isinstance(paths_fail, dict) or not isinstance(paths_pass, dict):
                continue
            # a record names files of its own run folder: one it points outside (``../``, an absolute path, a
            # link out) is never read, so a pool cannot put another file of this machine into a prompt
            broken = inside(folder, paths_fail.get("error_code"))
            fixed = inside(folder, paths_pass.get("error_code"))
            if broken is None or fixed is None:
                continue
            try:
                broken_code = _read(broken)
                fixed_code = _read(fixed)
            except (OSError, BeaverError):
                continue
            if code_lines(broken_code) > MAX_BROKEN_LINES:
                continue
            log = inside(folder, paths_fail.get("build_log_raw"))
            initial_error = _read(log)[:ERROR_KEPT] if log is not None and log.is_file() else ""
            pairs.append(
                Pair(
                    task_id=task_id,
                    source_model=folder.parent.name,
                    broken_code=broken_code,
                    initial_error=initial_error,
                    fixed_code=fixed_code,
                    error_category=str(r_fail.get("five_category", "unknown")),
                    broken_lines=code_lines(broken_code),
                    fail_iter=r_fail.get("iteration"),
                    pass_iter=r_pass.get("iteration"),
                )
            )
    return pairs


def release_task_id(stem: str) -> str:
    """The id the release selects for (harness/run_experiment.py: the stem's first ``_`` made ``/``)."""
    return stem.replace("_", "/", 1)


def base_task(task_id: str) -> str:
    """The base task of an id of either form: ``cuda_104`` for ``cuda_104__compile_error__f8160fc8``,
    ``cuda/104__...`` and ``CUDA/104``."""
    return task_id.lower().replace("/", "_", 1).split("__", 1)[0]


def draw_seed(seed: int, task_id: str) -> int:
    """The release's ``seed + hash(task_id) % 10_000``, with a hash that is the same in every process."""
    return seed + int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % 10_000


def select(
    pool: Sequence[Pair],
    stem: str,
    category: str,
    strategy: str,
    k: int,
    seed: int,
    curated: Mapping[str, Any] | None = None,
) -> list[Pair]:
    """The release's select_examples for the task ``stem`` labelled ``category``."""
    if k <= 0:
        return []
    test_id = release_task_id(stem)
    candidates = [p for p in pool if base_task(p.task_id) != base_task(stem)]
    rng = random.Random(draw_seed(seed, test_id))
    if strategy == "curated":
        mappings = (curated or {}).get("mappings", curated or {})
        wanted = list(mappings.get(test_id, []) if isinstance(mappings, Mapping) else [])[:k]
        by_id: dict[str, Pair] = {}
        for p in candidates:
            by_id.setdefault(p.task_id, p)
        return [by_id[t] for t in wanted if t != test_id and t in by_id]
    if strategy == "random":
        return list(candidates) if len(candidates) < k else rng.sample(candidates, k)
    if strategy == "matched":
        matched = [p for p in candidates if p.error_category == category]
        if len(matched) >= k:
            return rng.sample(matched, k)
        rest = [p for p in candidates if p.error_category != category]
        return matched + rng.sample(rest, min(k - len(matched), len(rest)))
    raise BeaverError(f"few_shot {strategy!r}: expected matched, random or curated")


def examples_text(examples: Sequence[Pair]) -> str:
    """The release's format_examples_for_system: the text appended to the system message."""
    if not examples:
        return ""
    parts = ["", f"Here are {len(examples)} examples of similar bugs and their fixes:", ""]
    for i, ex in enumerate(examples, 1):
        parts += [f"[Example {i}]", "Broken code:", "```cuda", ex.broken_code, "```"]
        if ex.initial_error:
            parts.append(f"Error: {ex.initial_error[:ERROR_SHOWN]}")
        parts += ["Fixed code:", "```cuda", ex.fixed_code, "```", ""]
    parts.append("Now help fix the current task.")
    return "\n".join(parts)


def resolve(path: str, task: Task) -> Path:
    """A pool or map path: absolute as given; relative from the release root (the folder holding the
    corpus's ``data/``, where the release's configs name them from), else from the corpus folder."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    root = task.corpus_root.parent if task.corpus_root.name == "data" else task.corpus_root
    return root / p


def _missing(protocol: Protocol, task: Task) -> str:
    named = ", ".join(protocol.few_shot_pool) or "none"
    return (
        f"few_shot {protocol.few_shot}: no examples to draw from (few_shot_pool: {named}). The release draws "
        f"them from its authors' committee runs ({', '.join(RELEASE_POOL)}), which the public release does "
        "not ship: name harness run folders of the release's format in few_shot_pool (relative paths are read "
        f"from {resolve('.', task)})"
    )


def load_curated(protocol: Protocol, task: Task) -> dict[str, Any]:
    """The curated map the protocol names, read as JSON."""
    assert protocol.few_shot_curated is not None
    path = resolve(protocol.few_shot_curated, task)
    if not path.is_file():
        raise BeaverError(
            f"few_shot curated: no map at {path}. The release's ({RELEASE_CURATED}) is not in the public "
            "release: give a JSON map of task id to example task ids in few_shot_curated"
        )
    try:
        data = parse_json(_read(path))
    except ValueError:
        raise BeaverError(f"few_shot_curated {path}: not valid JSON") from None
    mappings = data.get("mappings", data) if isinstance(data, dict) else None
    if not isinstance(mappings, dict):
        raise BeaverError(f"few_shot_curated {path}: expected a JSON object of task id to example task ids")
    for task_id, listed in mappings.items():
        if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
            raise BeaverError(
                f"few_shot_curated {path}: {task_id}: expected a list of example task ids, not {listed!r:.60}"
            )
    return {"mappings": mappings}


def section(protocol: Protocol, task: Task) -> str:
    """The examples' text for ``task`` under ``protocol`` ("" when the protocol asks for none); a clear
    BeaverError when the pool or the curated map it needs is not there."""
    if protocol.few_shot == "none":
        return ""
    if not protocol.few_shot_pool:
        raise BeaverError(_missing(protocol, task))
    folders = [resolve(p, task) for p in protocol.few_shot_pool]
    gone = [str(f) for f in folders if not f.is_dir()]
    if gone:
        raise BeaverError(f"{_missing(protocol, task)}; not there: {', '.join(gone)}")
    pool = build_pool(folders)
    if not pool:
        raise BeaverError(
            f"few_shot_pool {', '.join(map(str, folders))}: no task failed and then passed within "
            f"{MAX_RECOVERY_ITER} attempts with at most {MAX_BROKEN_LINES} non-blank lines of broken code"
        )
    curated = load_curated(protocol, task) if protocol.few_shot == "curated" else None
    chosen = select(
        pool, task.id, task.label, protocol.few_shot, protocol.few_shot_k, protocol.few_shot_seed, curated
    )
    return examples_text(chosen)


def with_examples(first: Sequence[Message], text: str) -> list[Message]:
    """The first turn with the examples appended to its system message (nothing changes for "")."""
    out = list(first)
    if text and out and out[0].role == "system":
        out[0] = Message(role="system", content=out[0].content + text)
    return out
