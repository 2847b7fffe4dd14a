"""A batch run made or reopened: its options, its manifest written (or read back and checked for
``--resume``), its tasks chosen and the unusable ones withdrawn with their reasons.

``prepare`` turns ``BatchOptions`` into a ``PreparedRun``; service/batch.py runs it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.batch.rundir import RunManifest, stamp, write_manifest
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError

if TYPE_CHECKING:
    from beavertui.batch.models import ReplyCaches


def stderr_line(line: str) -> None:
    """Where a batch says what it does when its caller gives no ``say``: a line on standard error."""
    print(line, file=sys.stderr)


#: What a timing stage may stop on its GPU (BatchOptions.pause_for_timing).
PAUSE_CHOICES = ("runs", "all", "none")


@dataclass(frozen=True)
class BatchOptions:
    """Everything a batch is asked to do; the ``batch`` command's flags, typed."""

    protocol: str | None = None
    """Protocol file, or a bundled one by name; None: ``paper`` for a new run, run.json's for a resume."""
    corpus: Path | None = None
    tasks: str | None = None
    """Globs of task ids, comma-separated."""
    models: list[str] | None = None
    """Models under test, replacing the file's list."""
    samples: int | None = None
    gpus: str | None = None
    jobs: int | None = None
    gpu_share: int = 4
    pause_for_timing: str = "runs"
    """Which runs on a GPU a timing stage stops (SIGSTOP) instead of waiting for them to end
    (--pause-for-timing): ``runs``, the correctness runs (sanitizer and profiler runs are waited for);
    ``all``, those too; ``none``, it waits for every run."""
    builds_in_timing: str = "go"
    """``go`` (the default): builds go on while a GPU is held alone for timing; ``stop``: they are stopped
    (BuildSlots.stop_for_timing); ``auto``: stop with one GPU, go on with more (--builds-in-timing). On the
    H200 a build load left the measured times as they were (reference times and speedups at median ratios
    of 1.000) and made the stage 1.24x as long; stopping the builds for every hold stops the batch's
    building for as long as its GPU is held for timing (docs/scheduling.md)."""
    timing_lane: bool = True
    """Under a gate applied after the run, sessions end when their loops end and a timing lane times their
    correct attempts beside them (batch/timing_lane.py); False times each inside its session (--inline-timing)."""
    toolchain: str = "local"
    cache: Path | None = None
    no_cache: bool = False
    resume: Path | None = None
    sessions_dir: Path = Path("sessions")
    run_id: str | None = None
    executor: str = "local"
    address: str | None = None
    all_tasks: bool = False
    """Run tasks validated unusable on this GPU too."""
    reply_cache: Path | None = None
    """Where model replies are stored by their exact request; None: the default folder."""
    no_reply_cache: bool = False
    reply_cache_sampled: bool = False
    """Reuse replies sampled at temperature > 0 too."""
    retry_infra: bool = False
    """With ``resume``: sessions that ended by an infrastructure failure get the run's retries anew."""
    dry_run: bool = False
    """Make the manifest in memory only: write nothing, run nothing."""
    few_shot_pool: tuple[str, ...] | None = None
    """``--few-shot-pool``: the few-shot protocols' pool folders in place of the protocol file's."""
    few_shot_curated: str | None = None
    """``--few-shot-curated``: the curated few-shot protocols' map in place of the protocol file's."""
    start_until_s: float | None = None
    """Start no new session once the batch has run this many seconds; those in flight finish."""
    command: list[str] = field(default_factory=list)
    """The command line, as run.json records it."""
    goes_on: str | None = None
    """How the user continues this run, where a batch's lines say ``--resume RUN_DIR`` (None): a command that
    runs batches itself (``reproduce``) gives its own: the command, run again."""
    endpoint: dict[str, Any] = field(default_factory=dict)
    """Endpoint fields given on the command line (base_url, api_key_env, ... as OpenAIConfig names them);
    they override those of every endpoint model of the run, from the file or from ``models``."""
    models_file: Path | None = None
    """Models file the endpoint models start from (None: $BEAVERTUI_MODELS or the user's default one)."""


def run_reply_caches() -> ReplyCaches:
    """A run's own reply caches (batch/models.py, imported only where a batch is prepared)."""
    from beavertui.batch.models import ReplyCaches

    return ReplyCaches()


@dataclass
class PreparedRun:
    """A run directory with its manifest written, the tasks it needs, and the toolchain it runs with."""

    manifest: RunManifest
    run_dir: Path
    tasks: dict[str, Task]
    toolchain: str
    lock: Any = None
    """The run folder's lock (``rundir.RunLock``), held while this process writes the run."""
    replies: ReplyCaches = field(default_factory=run_reply_caches)
    """The run's reply caches, shared by its sessions: their counts are this run's alone."""


def check_profiler(protocols: list[Any], toolchain: str) -> None:
    """Refuse a batch with feedback level L4 where ncu cannot run (it would be L3 under another name)."""
    from beavertui.engine.host.gpu import gpu_signature
    from beavertui.engine.loop.run import wants_profile
    from beavertui.engine.timing.profile import profiler_unavailable

    if toolchain != "local" or not any(wants_profile(p.protocol) for p in protocols):
        return
    reason = profiler_unavailable(gpu_signature() is not None)
    if reason is not None:
        raise BeaverError(f"feedback L4 needs the ncu profiler, and {reason}; use L3 or a machine with ncu")


def with_endpoint(spec: Any, options: BatchOptions) -> Any:
    """``spec`` with the command line's endpoint fields and models file (endpoint models only)."""
    from pydantic import ValidationError

    from beavertui.batch.protocol_file import ModelSpec
    from beavertui.service.preflight import is_endpoint

    update: dict[str, Any] = dict(options.endpoint)
    if options.models_file is not None:
        update["models_file"] = str(options.models_file.absolute())
    if not update or spec.scripts is not None or not is_endpoint(spec.model):
        return spec
    try:
        return ModelSpec.model_validate({**spec.model_dump(exclude_unset=True), **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = str(err["loc"][0]) if err.get("loc") else "model"
        flag = {"timeout_s": "timeout", "extra_body": "extra-body"}.get(where, where).replace("_", "-")
        raise BeaverError(f"--{flag}: {err['msg']}") from None


#: Endpoint fields that say where and how a call goes, not what is asked: a resume may change them (the server
#: moved, a longer timeout); the others (top_p, max_tokens, reasoning_effort, extra_body) are the run's.
TRANSPORT = ("base_url", "api_key_env", "timeout_s", "retries", "stream")


def resumed_model(spec: Any, options: BatchOptions) -> Any:
    """The run's model ``spec`` on a resume: the endpoint flags given that say where a call goes applied, and
    each that would change what is asked refused in one line unless it is the run's own value."""
    from beavertui.batch.protocol_file import ModelSpec
    from beavertui.service.preflight import is_endpoint

    if not options.endpoint or spec.scripts is not None or not is_endpoint(spec.model):
        return spec
    for name, value in options.endpoint.items():
        if name not in TRANSPORT and getattr(spec, name, None) != value:
            flag = "--" + {"extra_body": "extra-body"}.get(name, name).replace("_", "-")
            raise BeaverError(
                f"--resume {options.resume}: {flag} would change what model {spec.name} is asked (the run has "
                f"{getattr(spec, name, None)!r}): a resume keeps the run's; drop {flag}, or start a new run"
            )
    moved = {k: v for k, v in options.endpoint.items() if k in TRANSPORT}
    return ModelSpec.model_validate({**spec.model_dump(exclude_unset=True), **moved}) if moved else spec


def check_before_writing(
    models: list[Any],
    toolchain: str,
    protocols: list[Any],
    gpus: str | None = None,
    executor: str = "local",
    address: str | None = None,
) -> None:
    """The preflight of a batch (service/preflight.py): keys, endpoints and models, then the toolchain: this
    machine's for the local executor; under Ray the cluster's (reached, and with GPUs for the local toolchain),
    whose workers build and run while this machine only writes the sessions."""
    from beavertui.batch.models import endpoint_config_of
    from beavertui.engine.models.resolve import check_local, endpoint_config
    from beavertui.service.preflight import Endpoint, is_endpoint, preflight

    # the models that are no endpoint, as far as they can be checked before a task: a script or a recorded
    # session that is not there failed every session after the run folder was made
    helpers = [
        h for p in protocols for h in (getattr(p, "planner", None), getattr(p, "summariser", None)) if h
    ]
    for name in dict.fromkeys([*(m.model for m in models if getattr(m, "scripts", None) is None), *helpers]):
        if name == "human":
            raise BeaverError("the human model answers in live only: a batch has no one to ask")
        if not is_endpoint(name):
            check_local(name)
    endpoints = []
    for m in models:
        config = endpoint_config_of(m)
        if config is not None:
            endpoints.append(Endpoint(label=m.name, config=config))
    # a protocol's planner and summariser (docs/protocols.md), through the models file the models use
    files = [m.models_file for m in models if getattr(m, "models_file", None)]
    seen = {e.label for e in endpoints}
    for p in protocols:
        for helper in (getattr(p, "planner", None), getattr(p, "summariser", None)):
            if helper and helper not in seen and is_endpoint(helper):
                seen.add(helper)
                config = endpoint_config(helper, models=files[0] if files else None)
                endpoints.append(Endpoint(label=helper, config=config))
    preflight(endpoints, toolchain, protocols, gpus, here=executor != "ray")
    if executor == "ray":
        from beavertui.batch.ray_executor import check_code, check_nodes, connect

        connect(address, toolchain)
        check_code(toolchain)
        check_nodes(node_variables(endpoints, models), toolchain)


def with_few_shot_data(protocols: list[Any], pool: Sequence[str] | None, curated: str | None) -> list[Any]:
    """The protocols with the few-shot pool and curated map given on the command line in place of the file's
    (each path made absolute: a relative one in a protocol is read from the release root). A flag no protocol
    takes is refused: it would change nothing."""
    from beavertui.batch.protocol_file import NamedProtocol, protocol_slug

    if pool is None and curated is None:
        return protocols
    if pool is not None and not any(p.protocol.few_shot != "none" for p in protocols):
        raise BeaverError("--few-shot-pool: no protocol of the file takes few-shot examples")
    if curated is not None and not any(p.protocol.few_shot == "curated" for p in protocols):
        raise BeaverError("--few-shot-curated: no protocol of the file is few_shot = curated")
    out = []
    for named in protocols:
        p = named.protocol
        update: dict[str, Any] = {}
        if pool is not None and p.few_shot != "none":
            update["few_shot_pool"] = tuple(str(Path(d).expanduser().absolute()) for d in pool)
        if curated is not None and p.few_shot == "curated":
            update["few_shot_curated"] = str(Path(curated).expanduser().absolute())
        if update:
            p = p.model_copy(update=update)
            named = NamedProtocol(protocol_slug(p), p)
        out.append(named)
    return out


def check_few_shot(protocols: list[Any], task: Any) -> None:
    """Every few-shot protocol's pool and curated map are there and give examples (engine/loop/few_shot.py),
    before anything is written: the public release ships neither, and a batch of sessions that each stop at
    their start says nothing a single line would not."""
    from beavertui.engine.loop import few_shot

    for p in protocols:
        if p.few_shot != "none":
            few_shot.section(p, task)


def node_variables(endpoints: list[Any], models: list[Any]) -> list[str]:
    """The environment variables set here that the batch's endpoint models read where their sessions run: each
    one's key (unless its server lists its models to a caller without one), ``OPENAI_BASE_URL`` where its
    entry names no base URL, ``BEAVERTUI_MODELS`` where no models file is given. Under Ray every node needs
    them (ray_executor.check_nodes)."""
    import os

    from beavertui.service.preflight import base_url_of, open_without_key

    wanted: list[str] = []
    for e in endpoints:
        base = base_url_of(e.config)
        if os.environ.get(e.config.api_key_env) and not (base is not None and open_without_key(base)):
            wanted.append(e.config.api_key_env)
        if not e.config.base_url:
            wanted.append("OPENAI_BASE_URL")
    if endpoints and any(not getattr(m, "models_file", None) for m in models):
        wanted.append("BEAVERTUI_MODELS")
    return [v for v in dict.fromkeys(wanted) if os.environ.get(v)]


def select(task_ids: list[str], globs: str | None) -> list[str]:
    if not globs:
        return task_ids
    pats = [g.strip() for g in globs.split(",") if g.strip()]
    return [t for t in task_ids if any(fnmatch.fnmatchcase(t, p) for p in pats)]


def usable_tasks(
    options: BatchOptions,
    corpus: Any,
    ids: list[str],
    models: list[Any],
    excluded: dict[str, str],
    say: Callable[[str], None],
    unrunnable: dict[str, str] | None = None,
) -> list[str]:
    """The tasks usable here: a family's missing Python module is said once, up front; tasks validated as
    unusable on this GPU are skipped (unless --all-tasks); scripted:@reference/@alternate skip the tasks
    whose family has no reference a model could submit. Every skip is printed with its reason."""
    from beavertui.engine.corpus import families, verdicts
    from beavertui.engine.corpus.load import runnable_here

    by_id = {t.id: t for t in corpus.tasks}
    chosen = [by_id[i] for i in ids]
    local = options.toolchain == "local"
    for line in families.dependency_lines(chosen) if local else ():  # a replay runs nothing here
        say(f"beavertui: {line}")
    skipped: dict[str, str] = dict(unrunnable or {})
    gpu = None
    replay = None
    if local:
        from beavertui.engine.host.gpu import gpu_signature, probe

        sig = gpu_signature()
        gpu = sig.slug if sig is not None else None
        machine = probe() if sig is not None else None
        for t in chosen:
            if machine is not None and (why := runnable_here(t, machine)) is not None:
                skipped[t.id] = why
            elif machine is None and (missing := families.missing_python_modules(t)):
                skipped[t.id] = families.describe_missing(missing)
    else:
        replay = _recorded(options.toolchain)
        sig = replay.gpu() if replay is not None else None
        gpu = sig.slug if sig is not None else None
    sel = verdicts.select([t for t in chosen if t.id not in skipped], gpu)
    if not options.all_tasks:
        skipped.update(sel.skipped)
    if any(m.model == "scripted:@demo" for m in models):
        from beavertui.engine import bundled

        for t in chosen:
            if t.id not in skipped and bundled.demo_of_task(t.id) is None:
                skipped[t.id] = "scripted:@demo: no bundled demo session runs this task"
    if any(m.model in ("scripted:@reference", "scripted:@alternate") for m in models):
        for t in chosen:
            if t.id not in skipped and families.reference_submission(t) is None:
                skipped[t.id] = f"scripted reference model: {families.why_no_reference_submission(t)}"
    if skipped:
        say(f"beavertui: {len(skipped)} task(s) skipped:")
        for tid, why in sorted(skipped.items()):
            say(f"  {tid}: {why}")
    if sel.unvalidated and gpu and local:
        say(
            f"beavertui: {len(sel.unvalidated)} task(s) not validated on {gpu} yet, run anyway: the first "
            "session of each checks it where its reference can run here (beavertui corpus validate, on that "
            "GPU, checks them before a run)"
        )
    elif sel.unvalidated and gpu:  # a replay runs nothing on a GPU: it can only read what was recorded
        say(
            f"beavertui: {len(sel.unvalidated)} task(s) have no stored verdict for {gpu}, whose recorded "
            "outcomes this replay reads, and run anyway; a replay validates nothing on a GPU: the first session "
            "of each judges the task by its reference's and broken start's recorded outcomes, where recorded"
        )
    if replay is not None:
        blind = [t.id for t in chosen if t.id not in skipped and not replay.knows_task(t)]
        if blind:  # said before any model call is paid for: the tables say it only after the run
            say(
                f"beavertui: {len(blind)} of {len(chosen) - len(skipped)} task(s) have no recorded outcome in "
                f"--toolchain {options.toolchain} ({', '.join(blind[:3])}{', ...' if len(blind) > 3 else ''}): "
                "every candidate of theirs fails to build as an unrecorded candidate, so their rates say "
                "nothing about the model (recordings of these tasks, recorded:PATH, or a GPU judge them)"
            )
    excluded.update(skipped)
    return [i for i in ids if i not in skipped]


def _recorded(spec: str) -> Any:
    """The recorded toolchain a spec names (engine.toolchain.recorded.RecordedToolchain), or None for this
    machine's: the GPU it replays (its sessions' headers name it), whose validation verdicts hold for the
    replay as for a batch on it, and the tasks it has outcomes for."""
    from beavertui.engine.toolchain.resolve import parse_toolchain

    kind, path = parse_toolchain(spec)
    if kind != "recorded" or path is None:
        return None
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    return RecordedToolchain.load(path)


def withdraw_unusable(
    manifest: Any, corpus: Any, gpu: str, say: Callable[[str], None], cache: Path | None = None
) -> dict[str, str]:
    """Take out of a resumed run the tasks whose validation on ``gpu``, stored since the run was created,
    calls them unusable (a task validated only after the batch began): they leave ``manifest.tasks`` for
    ``manifest.withdrawn_tasks`` with the reason, their unfinished sessions do not run, and ``metrics``
    leaves the sessions they ran out of every rate. Returns what was withdrawn now (nothing is written)."""
    from beavertui.batch.rundir import stamp_seconds
    from beavertui.engine.corpus import verdicts

    created = stamp_seconds(manifest.created)
    if created is None:
        return {}  # when the run began is unknown, so is which verdicts came after it
    now: dict[str, str] = {}
    by_id = {t.id: t for t in corpus.tasks}
    for tid in manifest.tasks:
        rec = verdicts.load(by_id[tid], gpu, cache) if tid in by_id else None
        # a verdict the run was created with was already applied (or overridden with --all-tasks)
        if rec is not None and rec.verdict == "unusable" and rec.measured_at > created:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(rec.measured_at))
            now[tid] = f"validated unusable on {gpu} at {when}, after the run began: {rec.reason}"
    if now:
        manifest.tasks = [t for t in manifest.tasks if t not in now]
        manifest.withdrawn_tasks.update(now)
        say(
            f"beavertui: {len(now)} task(s) withdrawn from the run (their sessions are left out of every rate):"
        )
        for tid, why in sorted(now.items()):
            say(f"  {tid}: {why}")
    return now


def new_run(options: BatchOptions, say: Callable[[str], None] = stderr_line) -> tuple[RunManifest, Path, Any]:
    """Create the run directory and manifest from the protocol file and options: (manifest, dir, corpus)."""
    from beavertui import __version__
    from beavertui.batch.protocol_file import (
        ModelSpec,
        expand,
        find_protocol_file,
        load_batch_file,
        pairings_of,
    )
    from beavertui.batch.rundir import ProtocolEntry, check_run_id, host_info, new_run_id
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.service.environment import default_corpus

    pfile = find_protocol_file(options.protocol or "paper")
    spec = load_batch_file(pfile)
    protocols = with_few_shot_data(expand(spec, str(pfile)), options.few_shot_pool, options.few_shot_curated)
    check_profiler(protocols, options.toolchain)
    models = [ModelSpec.named(s) for s in options.models] if options.models else list(spec.models)
    if not models:
        raise BeaverError(f"{pfile}: no models: list [[models]] in the file or pass --models")
    models = [with_endpoint(m, options) for m in models]
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise BeaverError("two models share a name; give them distinct labels")
    check_before_writing(
        models,
        options.toolchain,
        [p.protocol for p in protocols],
        options.gpus,
        options.executor,
        options.address,
    )
    if options.gpus and options.toolchain != "local":
        say(
            f"beavertui: --gpus {options.gpus} is not used: the {options.toolchain} toolchain replays recorded outcomes"
        )
    corpus_path = options.corpus or (Path(spec.corpus) if spec.corpus else default_corpus())
    corpus = load_corpus(corpus_path)
    wanted = select([t.id for t in corpus.tasks], options.tasks or spec.tasks)
    excluded = {p.split(":")[0].split("/")[0]: p for p in corpus.problems}
    tasks = []
    unrunnable: dict[str, str] = {}
    for t in corpus.tasks:
        if t.id not in wanted:
            continue
        if not t.runnable:  # said with the other skips, never dropped in silence
            unrunnable[t.id] = t.not_runnable_reason or "not runnable"
            continue
        tasks.append(t.id)
    tasks = usable_tasks(options, corpus, tasks, models, excluded, say, unrunnable)
    if not tasks:
        raise BeaverError(f"{corpus_path}: no runnable task matches {options.tasks or spec.tasks or '*'}")
    check_few_shot([p.protocol for p in protocols], corpus.get(tasks[0]))
    from beavertui.batch.models import default_reply_cache

    reply_folder = options.reply_cache or default_reply_cache()
    run_id = check_run_id(options.run_id) if options.run_id is not None else new_run_id(spec.name)
    run_dir = options.sessions_dir / run_id
    if (run_dir / "run.json").exists():
        raise BeaverError(f"{run_dir}: already a run; continue it with --resume {run_dir}")
    by_id = {t.id: t for t in corpus.tasks}
    manifest = RunManifest(
        task_hashes={t: task_fingerprint(by_id[t]) for t in tasks},
        run_id=run_id,
        name=spec.name,
        created=stamp(),
        command=shlex.join(options.command or ["beavertui", "batch"]),
        tool_version=__version__,
        corpus=str(corpus.root.resolve()),
        tasks=tasks,
        excluded_tasks=excluded,
        samples=options.samples or spec.samples,
        protocols=[ProtocolEntry(slug=p.slug, protocol=p.protocol) for p in protocols],
        pairings=pairings_of(spec),
        models=models,
        retries=spec.retries,
        executor=options.executor,
        host=host_info(),
        toolchain=options.toolchain,
        reply_cache=None if options.no_reply_cache else str(reply_folder.absolute()),
        reply_cache_sampled=options.reply_cache_sampled,
    )
    if not options.dry_run:
        write_manifest(run_dir, manifest)
    return manifest, run_dir, corpus


def prepare(
    options: BatchOptions,
    started: Callable[[Path], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> PreparedRun:
    """A new run directory, or the one of ``options.resume`` reopened; ``started`` gets the folder first."""
    from beavertui.batch.rundir import check_run_id, lock_run, read_manifest, remove_partial_files
    from beavertui.engine.corpus.load import load_corpus

    toolchain = options.toolchain
    lock = None
    if options.resume is not None:
        if options.few_shot_pool is not None or options.few_shot_curated is not None:
            raise BeaverError("--few-shot-pool and --few-shot-curated start a run: a resume keeps the run's")
        manifest = read_manifest(options.resume)
        run_dir = options.resume
        if not options.dry_run:
            lock = lock_run(run_dir)
        if started is not None:
            started(run_dir)
        corpus = load_corpus(options.corpus or Path(manifest.corpus))
        check_resume(options, manifest, corpus)
        # --base-url, --timeout ... given again: where the calls go now (run.json keeps it); decoding is the run's
        manifest.models = [resumed_model(m, options) for m in manifest.models]
        if toolchain == "local" and manifest.toolchain != "local":
            toolchain = manifest.toolchain
        check_before_writing(
            manifest.models,
            toolchain,
            [p.protocol for p in manifest.protocols],
            options.gpus,
            options.executor,
            options.address,
        )
        if not options.dry_run:
            remove_partial_files(run_dir)
            if options.no_reply_cache:
                manifest.reply_cache = None
            elif options.reply_cache is not None:
                manifest.reply_cache = str(options.reply_cache.absolute())
            manifest.reply_cache_sampled = manifest.reply_cache_sampled or options.reply_cache_sampled
            if toolchain == "local" and not options.all_tasks:
                from beavertui.engine.host.gpu import gpu_signature

                sig = gpu_signature()
                if sig is not None:
                    withdraw_unusable(manifest, corpus, sig.slug, say or stderr_line)
            manifest.resumed.append(stamp())
            manifest.status = "running"
            write_manifest(run_dir, manifest)
    else:
        made = None
        if options.run_id is not None and not options.dry_run:  # two batches naming one run: one makes it
            made = options.sessions_dir / check_run_id(options.run_id)
            fresh = not made.exists()
            fresh_parent = not options.sessions_dir.exists()
            lock = lock_run(made)
        try:
            manifest, run_dir, corpus = new_run(options, say or stderr_line)
        except BaseException:
            if lock is not None:
                lock.release()
                if made is not None and fresh:  # leave no folder behind for a run never made
                    with contextlib.suppress(OSError):
                        lock.path.unlink()
                        made.rmdir()
                        if fresh_parent:  # nor the sessions folder made for it (a failed preflight)
                            options.sessions_dir.rmdir()
            raise
        if lock is None and not options.dry_run:
            lock = lock_run(run_dir)
        if started is not None:
            started(run_dir)
    tasks = {t.id: t for t in corpus.tasks}
    missing = [t for t in manifest.tasks if t not in tasks]
    if missing:
        raise BeaverError(f"{corpus.root}: tasks of the run are missing: {', '.join(missing[:5])}")
    replies = run_reply_caches()
    # under Ray the workers keep the replies, each on its own node (ray_executor.replies_for_nodes)
    if manifest.reply_cache and not options.dry_run and options.executor != "ray":
        try:
            replies.get(manifest.reply_cache)
        except OSError as exc:
            raise BeaverError(
                f"{manifest.reply_cache}: cannot use it as the reply cache ({exc.strerror}); "
                "pass --no-reply-cache or another --reply-cache DIR"
            ) from None
    return PreparedRun(manifest, run_dir, tasks, toolchain, lock, replies)


def task_fingerprint(task: Task) -> str:
    """What a session of ``task`` depends on in the corpus: its broken start and its harness (sha256)."""
    import hashlib

    ref = task.ref()
    return hashlib.sha256(f"{ref.broken_start_hash}|{ref.harness_hash}".encode()).hexdigest()[:16]


def check_resume(options: BatchOptions, manifest: RunManifest, corpus: Any) -> None:
    """Refuse, in one line, a resume whose flags ask for another batch than run.json's (another corpus,
    protocol file, models or sample count); with ``--protocol FILE`` again, take the credentials of the
    file's models that run.json keeps ``[redacted]``."""
    from beavertui.engine.session.redaction import has_redactions

    where = f"--resume {options.resume}"
    _check_resume_flags(options, manifest, corpus, where)
    _check_resume_corpus(options, manifest, corpus, where)
    needs_credentials = [
        m.name for m in manifest.models if has_redactions(m.extra_body) or has_redactions(m.base_url)
    ]
    if options.protocol is None:
        if needs_credentials:
            raise BeaverError(
                f"{where}: run.json keeps no credentials, and model(s) {', '.join(needs_credentials)} had some "
                "(a base URL's user info or secret extra-body fields): give the run's protocol file again "
                "with --protocol FILE"
            )
        return
    _take_credentials(options, options.protocol, manifest, where, needs_credentials)


def _check_resume_flags(options: BatchOptions, manifest: RunManifest, corpus: Any, where: str) -> None:
    """Refuse --samples, --models, --run-id or --tasks that ask for another batch than the run's."""
    if options.samples is not None and options.samples != manifest.samples:
        raise BeaverError(
            f"{where}: the run has {manifest.samples} sample(s) per task, not {options.samples}: "
            "drop --samples, or start a new run"
        )
    names = [m.name for m in manifest.models]
    if options.models is not None and list(options.models) != names:
        raise BeaverError(
            f"{where}: the run's models are {', '.join(names)}, not {', '.join(options.models)}: "
            "drop --models, or start a new run"
        )
    if options.run_id is not None and options.run_id != manifest.run_id:
        raise BeaverError(
            f"{where}: the run's id is {manifest.run_id}, not {options.run_id}: drop --run-id, or start a new run"
        )
    if options.tasks is not None:  # a resume runs every task of the run, whatever --tasks says
        chosen = set(select([t.id for t in corpus.tasks], options.tasks))
        missing = [t for t in manifest.tasks if t not in chosen]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise BeaverError(
                f"{where}: --tasks {options.tasks} leaves out the run's task {missing[0]}{more}, and a resume "
                "runs every task of the run: drop --tasks, or start a new run"
            )


def _check_resume_corpus(options: BatchOptions, manifest: RunManifest, corpus: Any, where: str) -> None:
    """Refuse a corpus that lacks a task of the run, holds another version of one, or (where run.json
    records no fingerprints) is another folder than the run's."""
    by_id = {t.id: t for t in corpus.tasks}
    for tid in manifest.tasks:
        known = manifest.task_hashes.get(tid)
        task = by_id.get(tid)
        if task is None:
            raise BeaverError(f"{where}: the corpus at {corpus.root} has no task {tid} of the run")
        if known is not None and task_fingerprint(task) != known:
            raise BeaverError(
                f"{where}: the corpus at {corpus.root} is not the run's ({manifest.corpus}): task {tid} "
                "has another broken start or harness"
            )
    other = options.corpus is not None and Path(options.corpus).resolve() != Path(manifest.corpus).resolve()
    if not manifest.task_hashes and other:
        raise BeaverError(
            f"{where}: the run's corpus is {manifest.corpus}, not {options.corpus} (this run.json "
            "records no task fingerprints to compare them by)"
        )


def _take_credentials(
    options: BatchOptions, protocol: str, manifest: RunManifest, where: str, needs_credentials: list[str]
) -> None:
    """With --protocol FILE again: check it describes the run's protocols and models, and take the
    credentials run.json keeps redacted from its models."""
    from beavertui.batch.protocol_file import expand, find_protocol_file, load_batch_file
    from beavertui.batch.rundir import without_credentials

    pfile = find_protocol_file(protocol)
    spec = load_batch_file(pfile)
    given = [(p.slug, p.protocol) for p in expand(spec, str(pfile))]
    if given != [(e.slug, e.protocol) for e in manifest.protocols]:
        raise BeaverError(
            f"{where}: {pfile} describes other protocols than the run's: drop --protocol, or start a new run"
        )
    if options.models is None and spec.models:
        file_models = {m.name: m for m in spec.models}
        restored = []
        for m in manifest.models:
            full = file_models.get(m.name)
            # the endpoint flags given again apply to the file's models as they did when the run was made
            # (reproduce's second run: its protocol file and --base-url, --no-stream ... as the first time)
            full = None if full is None else with_endpoint(full, options)
            if full is None or without_credentials(full) != resumed_model(m, options):
                raise BeaverError(
                    f"{where}: {pfile} describes model {m.name} otherwise than the run: drop --protocol, "
                    "or start a new run"
                )
            restored.append(full)
        manifest.models = restored
    elif needs_credentials:
        raise BeaverError(
            f"{where}: {pfile} lists no [[models]] to take the credentials of {', '.join(needs_credentials)} from"
        )
