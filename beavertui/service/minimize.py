"""`beavertui corpus minimize`: minimal fixes of a corpus's tasks, searched from their references and stored.

Which tasks: those of the corpus matching the patterns whose reference is a drop-in solution (the nvcc
families of the release), less those stored as unusable on this GPU; smallest reference diff first, so that
a run cut by its budget has finished as many as it could. Each task's search (engine/validation/minimal_fixes.py)
runs in a thread of its own: builds run side by side, GPU stages one at a time. Every oracle answer is kept,
so running the same command again goes on where a cut run stopped, at no oracle cost for what it had asked.
"""

from __future__ import annotations

import fnmatch
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.corpus.minimal_search import Budget
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import parse_json
from beavertui.engine.validation import minimal_fixes as mf


@dataclass(frozen=True)
class MinimizeOptions:
    corpus: Path
    tasks: tuple[str, ...] = ()
    """Task ids or fnmatch patterns (all tasks when empty)."""
    oracle: mf.OracleKind = "judge"
    gate: float = 0.7
    max_calls: int = 300
    """Fresh oracle calls a task may make in this run."""
    budget_s: float | None = None
    """Wall seconds of the whole run after which no oracle call starts."""
    workers: int = 4
    """Tasks searched at once."""
    gpu_jobs: int = 1
    """Correctness runs on the GPU at once (a timing always holds it alone)."""
    gpu: str | None = None
    """Device index for every GPU stage (``CUDA_VISIBLE_DEVICES``); None: what the environment shows."""
    store: Path | None = None
    """The store (default: this machine's, ``<cache>/minimal_fixes``)."""
    hunks_only: bool = False
    """Ask the oracle nothing past each search's hunk phase: its line phase goes only as far as the kept
    answers take it, and a later run without it goes on."""
    screen: bool = True
    """Judge oracle: search with the untimed correctness screen and time only what it ends with (the judge's
    own search when that is too slow); False: time every correct candidate."""
    replay: bool = False
    """Judge oracle: ask nothing and need no GPU; each search goes over the answers the store keeps for the
    plan's GPU signature until the first question they do not answer (a store brought back from a GPU
    machine, its record rewritten as the searches stand)."""
    missing: bool = False
    """Leave out the tasks a store already holds a verified fix for, whichever GPU verified it (this machine's
    store, the package's, and the run's own ``store``): a second GPU searches only what the first did not fix."""


@dataclass
class Plan:
    """The tasks a run searches, in order, and those it leaves out with the reason."""

    tasks: list[Task] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    gpu: str | None = None
    """The GPU signature the store folder is named after (``compile-only`` for that oracle)."""
    store: Path = Path()


@dataclass(frozen=True)
class Summary:
    outcomes: tuple[mf.Outcome, ...]
    skipped: dict[str, str]
    seconds: float
    store: Path
    errors: dict[str, str] = field(default_factory=dict)
    """Tasks whose search failed, with the error in one line."""

    @property
    def verified(self) -> list[mf.Outcome]:
        return [o for o in self.outcomes if o.verified]

    def line(self) -> str:
        """The run in one line."""
        found = [o for o in self.outcomes if o.found]
        counts = {s: sum(o.status == s for o in self.outcomes) for s in
                  ("minimal", "whole", "budget", "reference_fails", "start_passes")}  # fmt: skip
        size = ""
        if found:
            lines = statistics.median(o.lines or 0 for o in found)
            whole = statistics.median(o.reference_lines for o in found)
            size = f"; median fix {lines:g} of {whole:g} lines of the reference diff"
        rest = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items() if v)
        return (
            f"minimal fixes: {len(found)} of {len(self.outcomes)} tasks have one ({len(self.verified)} verified)"
            + (f"; {rest}" if rest else "") + size
            + (f"; {len(self.errors)} failed" if self.errors else "")
            + f"; {sum(o.calls for o in self.outcomes)} oracle calls in {self.seconds:.0f} s; store {self.store}"
        )  # fmt: skip


def default_store() -> Path:
    """This machine's store (``<cache>/minimal_fixes``), the first place scoring looks."""
    from beavertui.engine.corpus.fixes import store_roots

    return store_roots()[0]


def plan(options: MinimizeOptions, gpu_slug: str | None) -> Plan:
    """The tasks of ``options`` to search on a machine whose GPU is ``gpu_slug`` (None: none)."""
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.corpus.verdicts import select

    if options.oracle == "judge" and gpu_slug is None:
        raise BeaverError(
            "the judge oracle needs a GPU (no NVIDIA GPU visible); --oracle compile builds only"
        )
    load = load_corpus(options.corpus)
    pats = [p for p in options.tasks if p]
    tasks = [t for t in load.tasks if not pats or any(fnmatch.fnmatchcase(t.id, p) for p in pats)]
    if not tasks:
        raise BeaverError(f"no task of {load.root} matches {', '.join(pats) or 'anything'}")
    out = Plan(
        gpu=gpu_slug if options.oracle == "judge" else mf.COMPILE_GPU, store=options.store or default_store()
    )
    _check_store(options, out.store, out.gpu or mf.COMPILE_GPU)
    kept = []
    for t in tasks:
        kind = families.family_of(t).reference
        if kind != "drop_in":
            out.skipped[t.id] = f"its reference is not a drop-in solution ({kind})"
        elif t.reference() is None:
            out.skipped[t.id] = "it ships no reference"
        elif not t.runnable:
            out.skipped[t.id] = t.not_runnable_reason or "not runnable"
        else:
            kept.append(t)
    if options.missing:
        kept = _unfixed(kept, out.store, out.skipped)
    sel = select(kept, gpu_slug)
    out.skipped.update(sel.skipped)
    use = set(sel.use)
    from beavertui.engine.corpus.minimal_search import diff

    size = {t.id: len(diff(t.broken_start(), t.reference() or "").units) for t in kept if t.id in use}
    chosen = sorted((t for t in kept if t.id in use), key=lambda t: (size[t.id], t.id))
    if options.oracle == "judge" and gpu_slug is not None:
        # a candidate that hangs holds a GPU slot only as long as a session's run may (the reference's run
        # time on this GPU, times ten, at least 20 s: engine/corpus/run_limit.py)
        from beavertui.engine.corpus.run_limit import run_limit, with_run_limit

        chosen = [with_run_limit(t, run_limit(t, gpu_slug, "reference")) for t in chosen]
    out.tasks = chosen
    return out


def _check_store(options: MinimizeOptions, store: Path, gpu: str) -> None:
    """Refuse, before anything is written, a run that would rewrite the store's record with nothing to go on
    or mislabel it: a replay of a GPU signature whose judge answers the store does not keep (a mistyped slug,
    another store), and a search at a gate other than the one the record was searched at (the record has one
    gate for all its entries: the fixes verified at it would read as verified at the new one, or be lost)."""
    from beavertui.engine.corpus import fixes

    folder = store / gpu
    if options.replay and not any((folder / "answers" / kind).is_dir() for kind in ("judge", "correct")):
        try:
            have = sorted(p.name for p in store.iterdir() if (p / "answers" / "judge").is_dir())
        except OSError:
            have = []
        kept = f"it keeps them for {', '.join(have)}" if have else "it keeps none"
        raise BeaverError(
            f"--replay {gpu}: the store {store} keeps no judge answers for that GPU signature ({kept})"
        )
    try:
        doc = parse_json((folder / fixes.RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    gate = doc.get("gate") if isinstance(doc, dict) else None
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if isinstance(gate, int | float) and tasks and abs(float(gate) - options.gate) > 1e-9:
        raise BeaverError(
            f"--gate {options.gate:g}: the record of {folder} was searched at gate {float(gate):g} "
            f"({len(tasks)} task(s)), and a search at another gate would rewrite it: give --gate {float(gate):g}, "
            "or another --store"
        )


def _unfixed(tasks: list[Task], store: Path, skipped: dict[str, str]) -> list[Task]:
    """``tasks`` less those a store holds a verified fix for that applies to their broken start (each of
    those into ``skipped``, with the GPU that verified it)."""
    from beavertui.engine.corpus import fixes

    folders = fixes.stores(store)
    out = []
    for t in tasks:
        where = next(
            (f.name for f in folders if fixes.record(f).get(t.id, {}).get("verified") is True
             and fixes.target(f, t.id, t.broken_start()).source is not None),
            None,
        )  # fmt: skip
        if where is None:
            out.append(t)
        else:
            skipped[t.id] = f"a verified minimal fix is stored (verified on {where}); --missing leaves it out"
    return out


def run(
    options: MinimizeOptions,
    the_plan: Plan,
    on_start: Callable[[Task, int, int], None] | None = None,
    on_done: Callable[[mf.Outcome | str, int, int], None] | None = None,
) -> Summary:
    """Search every planned task's minimal fix and store it; ``on_start`` / ``on_done`` report progress
    (``on_done`` gets the outcome, or a line saying why the task's search failed)."""
    start = time.monotonic()
    deadline = start + options.budget_s if options.budget_s is not None else None
    store = mf.Store(the_plan.store, the_plan.gpu or mf.COMPILE_GPU, options.gate)
    from beavertui.service.environment import local_config, stage_config

    judge = options.oracle == "judge" and not options.replay
    tool = mf.toolchain(options.gpu, options.gpu_jobs, local_config()) if judge else None
    cfg = stage_config(sm=None) if options.oracle == "compile" else None
    total = len(the_plan.tasks)
    done: list[mf.Outcome] = []
    errors: dict[str, str] = {}
    lock = threading.Lock()

    def one(task: Task, i: int) -> mf.Outcome | str:
        if on_start is not None:
            on_start(task, i, total)
        try:
            return search_one(task)
        except (BeaverError, OSError, ValueError) as exc:  # one task's trouble does not lose the others'
            return f"{task.id}: {type(exc).__name__}: {exc}"

    def search_one(task: Task) -> mf.Outcome:
        oracle: Callable[[str], mf.Answer]
        screen: Callable[[str], mf.Answer] | None = None
        if options.replay:
            oracle = _no_oracle
            screen = _no_oracle if options.screen else None
        elif tool is not None:
            oracle = mf.JudgeOracle(task, tool, options.gate)
            screen = mf.JudgeOracle(task, tool, options.gate, timed=False) if options.screen else None
        else:
            assert cfg is not None
            oracle = mf.CompileOracle(task, cfg)
        budget = Budget(max_calls=0 if options.replay else options.max_calls, deadline=deadline)
        return mf.search(
            task, oracle, options.oracle, store, budget, the_plan.gpu, options.hunks_only, screen
        )

    with ThreadPoolExecutor(options.workers, thread_name_prefix="beaver-minimize") as pool:
        futures = [pool.submit(one, t, i) for i, t in enumerate(the_plan.tasks, 1)]
        for fut in as_completed(futures):
            outcome = fut.result()
            with lock:
                if isinstance(outcome, str):
                    task_id, _, why = outcome.partition(": ")
                    errors[task_id] = why
                else:
                    done.append(outcome)
                if on_done is not None:
                    on_done(outcome, len(done) + len(errors), total)
    order = {t.id: i for i, t in enumerate(the_plan.tasks)}
    done.sort(key=lambda o: order[o.task_id])
    return Summary(tuple(done), dict(the_plan.skipped), time.monotonic() - start, store.folder, errors)


def _no_oracle(code: str) -> mf.Answer:
    """A replay's oracle: never asked (its budget allows no fresh call)."""
    raise AssertionError("a replay asked a fresh oracle question")
