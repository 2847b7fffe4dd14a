"""The Ray executor: one Ray task per session, events streamed back to the driver's run directory.

Each session is a Ray generator task (``num_gpus=1`` with the local toolchain, 0 with a recorded one such as
``demo``) that runs the same ``run_session`` on a worker and yields every event as a JSON line; the driver
writes them to the session file and the progress display exactly as the local executor does, so resume,
retries and infrastructure accounting are shared (job.py). A session holds its GPU alone for its whole
length and times its correct attempts inside its loop (no timing lane, no shared GPU pool). A local
toolchain's worker builds into a node-local compile cache. A worker runs its session in the driver's working
folder (where its node has it), so that the run's relative paths (scripts, recordings, models file) name what
they name on the driver; the corpus must be readable at the driver's path on every node, except the bundled
one, which each worker takes from its own installed package, as it takes the default reply cache from its
own node. ``connect`` reaches the cluster (or starts a
local instance) and checks it can run the batch, ``check_code`` that every node imports the driver's beavertui
code, and ``check_nodes`` that every node has the environment variables the batch's models read, before
anything is written. Needs ``beavertui[ray]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import socket
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.batch.job import JobOutcome, JobSpec, Prefix, drive
from beavertui.batch.local_executor import Tracker
from beavertui.batch.rundir import RunManifest
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import LINE_ADAPTER, Event, SessionHeader

if TYPE_CHECKING:
    from beavertui.engine.toolchain.local import LocalConfig

#: Per worker process: toolchain by spec and cache (a recorded toolchain's worker runs many sessions; Ray
#: starts a fresh worker process for every task that holds a GPU).
_TOOLCHAINS: dict[tuple[str, str | None], Any] = {}

BUNDLED_CORPUS = "@bundled"
"""The corpus a worker is given for the bundled one: its own package's copy, wherever that is installed."""

NODE_REPLIES = "@node-default"
"""The reply cache a worker is given for the driver's default one: its own node's default folder."""

NODE_CACHE = "node"
"""The compile cache a worker of the local toolchain builds into by default: ``node_cache_dir()`` on its node."""


def node_cache_dir() -> Path:
    return Path(os.environ.get("BEAVERTUI_NODE_CACHE", "/tmp/beavertui-node-cache")) / "builds"


def needs_gpu(toolchain: str) -> bool:
    """Whether a session of ``toolchain`` holds a GPU on its worker (the local one; a replay runs nothing)."""
    from beavertui.engine.toolchain.resolve import parse_toolchain

    return parse_toolchain(toolchain)[0] == "local"


class WorkerFailure(Exception):
    """A session's Ray task failed on its worker (an error there, or the worker or its node lost)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _worker_failure(exc: Exception) -> WorkerFailure:
    """The failure of a Ray task in one line: the worker's own error (with its node), else Ray's."""
    import ray.exceptions

    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        text = str(exc)
        what = (
            f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else text.splitlines()[-1]
        )
        # a RayTaskError(CauseType) keeps the worker's address only in its text: "(pid=N, ip=ADDRESS)"
        ip = getattr(exc, "ip", None) or next(iter(re.findall(r"\bip=([^)\s,]+)", text)), None)
        return WorkerFailure(_one_line(f"on Ray node {ip or '?'}: {what}"))
    return WorkerFailure(_one_line(f"Ray: {type(exc).__name__}: {exc}"))


def _reachable(address: str) -> None:
    """One line, at once, when nothing listens at ``address`` (Ray's own connect retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise BeaverError(f"--address {address}: expected HOST:PORT, as `ray start --head` printed it")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise BeaverError(
            f"cannot reach the Ray cluster at {address} ({why}): start its head with `ray start --head`, "
            "or give the address it printed"
        ) from None


def _init_failure(address: str | None, exc: BaseException) -> str:
    chain: list[str] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 8:
        chain.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    text = " ".join(chain)
    where = f"the Ray cluster at {address}" if address else "Ray"
    if "no authentication token was found" in text:  # said by this driver's Ray, before it connects
        return (
            f"RAY_AUTH_MODE=token is set here but no Ray token was found, so the driver did not connect to {where}: "
            "give the cluster's token (RAY_AUTH_TOKEN, or the file ~/.ray/auth_token copied from the head), or "
            "unset RAY_AUTH_MODE for a cluster started without it, which checks none"
        )
    if "InvalidAuthToken" in text or "AuthenticationError" in text:
        return (
            f"{where} refused this driver: it checks a token; set RAY_AUTH_MODE=token and give the cluster's "
            "token (RAY_AUTH_TOKEN, or the file ~/.ray/auth_token copied from the head)"
        )
    return f"cannot connect to {where}: {_one_line(chain[0])[:300]}"


def connect(address: str | None, toolchain: str) -> dict[str, float]:
    """Connect to the Ray cluster at ``address`` (None: RAY_ADDRESS, else a cluster `ray start` made on this
    machine, else a local instance started here), unless connected already; then check it can run sessions of
    ``toolchain``. Returns its resources. Every failure is one line (BeaverError), raised before anything is
    written."""
    try:
        import ray
    except ImportError:
        raise BeaverError("the Ray executor needs Ray: pip install 'beavertui[ray]'") from None
    if not ray.is_initialized():
        if address and address not in ("auto", "local"):
            _reachable(address)
        try:
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
        except Exception as exc:
            raise BeaverError(_init_failure(address, exc)) from None
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    if needs_gpu(toolchain) and not resources.get("GPU"):
        raise BeaverError(
            "the Ray cluster has no GPU for the local toolchain (`ray status` lists its resources): start each "
            "GPU node with `ray start --address HEAD:PORT` where nvidia-smi lists its GPUs (or --num-gpus N), "
            "or replay recorded outcomes (--toolchain demo, recorded:PATH)"
        )
    return resources


def _unset_here(variables: list[str]) -> list[str]:
    return [v for v in variables if not os.environ.get(v)]


#: How long ``check_nodes`` waits for the nodes' answers; a node still silent then is not checked.
NODE_CHECK_S = 60.0

#: The files of the package whose contents ``code_fingerprint`` takes: its sources and the data the package
#: ships with them (pyproject.toml's package-data); a wheel's ``_bundled`` corpus and demo sessions are not.
_CODE_SUFFIXES = frozenset({".py", ".toml", ".json", ".patch", ".c", ".cu", ".h", ".tcss", ".css", ".js"})

_FINGERPRINT: dict[str, Any] = {}


def code_fingerprint() -> dict[str, Any]:
    """The beavertui code this process imports: ``version``, ``path`` (the package's folder) and ``files``
    (each source file, by its path in the package, the first 16 hex digits of the sha256 of its bytes), made
    once a process. Two processes with equal ``files`` run the same code, whatever their versions say."""
    if not _FINGERPRINT:
        import hashlib

        import beavertui
        from beavertui.engine.fileio import walk

        root = Path(beavertui.__file__).resolve().parent
        files = {}
        skip = {root / "_bundled"}
        for path in walk(root, enter=lambda d: d not in skip and d.name != "__pycache__"):
            rel = path.relative_to(root)
            if path.suffix in _CODE_SUFFIXES and path.is_file():
                files[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        _FINGERPRINT.update(version=beavertui.__version__, path=str(root), files=files)
    return dict(_FINGERPRINT)


def code_difference(here: dict[str, Any], there: dict[str, Any]) -> str | None:
    """What differs between two ``code_fingerprint``s, in a few words (None where nothing does): the
    versions where they differ, then the files changed, only here or only there (the first three named)."""
    mine, theirs = here.get("files", {}), there.get("files", {})
    changed = sorted(f for f in mine.keys() & theirs.keys() if mine[f] != theirs[f])
    only_here, only_there = sorted(mine.keys() - theirs.keys()), sorted(theirs.keys() - mine.keys())
    if not (changed or only_here or only_there or here.get("version") != there.get("version")):
        return None
    parts = []
    if here.get("version") != there.get("version"):
        parts.append(f"version {there.get('version')} there, {here.get('version')} here")
    for names, what in ((changed, "differs"), (only_here, "only here"), (only_there, "only there")):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            parts.append(f"{', '.join(names[:3])}{more} {what}")
    return "; ".join(parts)


def check_code(toolchain: str) -> None:
    """Refuse, in one line, a cluster with a node that could run sessions but imports other beavertui code
    than this driver (another version, or the same version changed): the driver sends each session to a
    worker by reference to this code, and a worker running other code fails every session it takes, deep in
    the session (a TypeError, an unknown field), or records it differently. Each such node runs one tiny task
    that returns its ``code_fingerprint``; a node whose beavertui has none, or has none importable, is named
    too. Connects first (``connect``)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    need = "GPU" if needs_gpu(toolchain) else "CPU"
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(need, 0) >= 1]  # type: ignore[no-untyped-call]
    probe = ray.remote(num_cpus=0, max_retries=0)(code_fingerprint)
    refs = [
        probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
        for n in nodes
    ]
    ready, _late = ray.wait(refs, num_returns=len(refs), timeout=NODE_CHECK_S)
    here = code_fingerprint()
    other: list[tuple[str, str]] = []
    for node, ref in zip(nodes, refs, strict=True):
        if ref not in ready:
            continue
        name = f"{node.get('NodeManagerAddress', '?')} (node {node['NodeID'][:8]})"
        try:
            there: dict[str, Any] = ray.get(ref)
        except (ray.exceptions.RayTaskError, ray.exceptions.RaySystemError) as exc:
            cause = getattr(exc, "cause", None)
            why = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(exc)
            # Ray's import failure goes on with the node's whole sys.path: its first sentence says it
            first = _one_line(why).split(". ")[0]
            other.append((name, f"its beavertui could not say its code: {first[:200]}"))
            continue
        except ray.exceptions.RayError:
            continue  # a node lost meanwhile runs nothing
        diff = code_difference(here, there)
        if diff is not None:
            other.append(
                (name, f"{diff}; its package at {there.get('path')}, this driver's at {here['path']}")
            )
    if other:
        (name, what), more = other[0], f" (and {len(other) - 1} more node(s))" if len(other) > 1 else ""
        raise BeaverError(
            f"the Ray node {name} runs other beavertui code than this driver ({what}){more}: its workers would "
            "fail or record differently every session they take; install this driver's beavertui on every node "
            "(the same wheel or checkout) and start them again"
        )


def check_nodes(variables: Sequence[str], toolchain: str) -> None:
    """Refuse, in one line, a cluster with a node that could run sessions but lacks one of ``variables``
    (those set on this driver that the batch's models read: their keys, ``OPENAI_BASE_URL``, ...). A worker
    reads them in the environment of the `ray start` that made its node, not in the driver's: without its key
    a session there would call the endpoint without one, and fail, on every session that node takes. Connects
    first (``connect``)."""
    if not variables:
        return
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    need = "GPU" if needs_gpu(toolchain) else "CPU"
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(need, 0) >= 1]  # type: ignore[no-untyped-call]
    probe = ray.remote(num_cpus=0, max_retries=0)(_unset_here)
    refs = [
        probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
            list(variables)
        )
        for n in nodes
    ]
    ready, _late = ray.wait(refs, num_returns=len(refs), timeout=NODE_CHECK_S)
    lacking: list[str] = []
    for node, ref in zip(nodes, refs, strict=True):
        if ref not in ready:
            continue
        try:
            unset: list[str] = ray.get(ref)
        except ray.exceptions.RayError:
            continue  # a node lost meanwhile runs nothing
        if unset:
            lacking.append(
                f"{node.get('NodeManagerAddress', '?')} (node {node['NodeID'][:8]}) lacks {', '.join(unset)}"
            )
    if lacking:
        more = f" and {len(lacking) - 2} more" if len(lacking) > 2 else ""
        raise BeaverError(
            f"the Ray node {'; '.join(lacking[:2])}{more}, which this driver sets for the batch's models: a worker "
            "reads the environment `ray start` had on its node, and keys are never sent; set them there on every node"
        )


def _worker_toolchain(spec: str, config: LocalConfig | None = None, cache: str | None = NODE_CACHE) -> Any:
    if (spec, cache) in _TOOLCHAINS:
        return _TOOLCHAINS[spec, cache]
    from beavertui.batch.build_slots import BuildSlots
    from beavertui.batch.cache import CompileCache
    from beavertui.batch.gpu_pool import GpuPool
    from beavertui.batch.placement import scheduled_local
    from beavertui.engine.toolchain.resolve import build_toolchain, parse_toolchain

    if parse_toolchain(spec)[0] == "recorded":
        tc: Any = build_toolchain(spec, unknown="fail")
    else:
        import ray

        gpus = [str(g) for g in ray.get_gpu_ids()] or ["0"]
        where = None if cache is None else node_cache_dir() if cache == NODE_CACHE else Path(cache)
        tc = scheduled_local(GpuPool(gpus), BuildSlots(1), CompileCache(where) if where else None, config)
    _TOOLCHAINS[spec, cache] = tc
    return tc


def remote_session(
    job: JobSpec,
    corpus: str,
    toolchain: str,
    prefix: list[str] | None,
    config: LocalConfig | None = None,
    cache: str | None = NODE_CACHE,
    cwd: str | None = None,
) -> Iterator[str]:
    """Body of the Ray task: run (or resume) one session and yield each event as a JSON line; ``corpus``: its
    folder (``BUNDLED_CORPUS``: this worker's bundled one); ``config``: the local toolchain's settings, read
    on the driver (service/environment.py); ``cache``: the compile cache's folder on the worker's node
    (``NODE_CACHE``: ``node_cache_dir()``; None: none); ``cwd``: the driver's working folder, where the
    session runs if this node has it (a worker starts in the folder `ray start` ran in)."""
    here = contextlib.chdir(cwd) if cwd and os.path.isdir(cwd) else contextlib.nullcontext()
    with here:
        yield from _session_lines(job, corpus, toolchain, prefix, config, cache)


def _session_lines(
    job: JobSpec,
    corpus: str,
    toolchain: str,
    prefix: list[str] | None,
    config: LocalConfig | None,
    cache: str | None,
) -> Iterator[str]:
    from beavertui.batch.models import ReplyCaches, build_model, helper_models, session_protocol
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.session.redaction import Secrets, redact_event
    from beavertui.engine.session.store import dump_line

    if toolchain == "local":
        import ray

        ids = ray.get_gpu_ids()
        if ids:
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in ids)
    if corpus == BUNDLED_CORPUS:
        from beavertui.engine import bundled

        root = bundled.corpus()
    else:
        root = Path(corpus)
    task = load_corpus(root, only=[job.task_id]).get(job.task_id)
    resume: Prefix | None = None
    if prefix:
        header = LINE_ADAPTER.validate_json(prefix[0])
        assert isinstance(header, SessionHeader)
        events: list[Event] = []
        for line in prefix[1:]:
            e = LINE_ADAPTER.validate_json(line)
            assert not isinstance(e, SessionHeader)
            events.append(e)
        resume = (header, events)
    if job.reply_cache == NODE_REPLIES:
        from beavertui.batch.models import default_reply_cache

        job = dataclasses.replace(job, reply_cache=str(default_reply_cache().absolute()))
    replies = ReplyCaches()  # the worker's counts stay on the worker: the driver reports none of them
    model = build_model(job.model, task, job.protocol, job=job, replies=replies)
    helpers = helper_models(job.model, task, job.protocol, job=job, replies=replies)
    # the key stays on the worker: events are redacted here, since the driver never holds the key
    secrets = Secrets.of(model.secrets() + tuple(k for h in helpers if h is not None for k in h.secrets()))
    for item in run_session(
        task,
        model,
        _worker_toolchain(toolchain, config, cache),
        session_protocol(job.model, task, job.protocol),
        run_id=job.run_id,
        sample=job.sample,
        resume_from=resume,
        models_file=job.model.models_file,
        planner=helpers[0],
        summariser=helpers[1],
    ):
        if item.kind == "reply_delta":
            continue  # transient: never saved, not worth the network
        yield dump_line(redact_event(item, secrets))


def corpus_for_nodes(corpus: str) -> str:
    """``corpus`` as the workers are given it: ``BUNDLED_CORPUS`` for this package's bundled corpus (a node's
    beavertui may be installed at another path than the driver's), else its path, which every node must have."""
    from beavertui.engine import bundled

    return BUNDLED_CORPUS if Path(corpus).resolve() == bundled.corpus().resolve() else corpus


def replies_for_nodes(job: JobSpec) -> JobSpec:
    """``job`` as a worker is given it: the driver's default reply cache (a folder under its own home, which
    a node may not have or let it write) becomes ``NODE_REPLIES``, each node's own default; a folder the run
    names (``--reply-cache DIR``) stays that folder on every node."""
    from beavertui.batch.models import default_reply_cache

    if job.reply_cache is not None and Path(job.reply_cache) == default_reply_cache().absolute():
        return dataclasses.replace(job, reply_cache=NODE_REPLIES)
    return job


def _as_lines(prefix: Prefix | None) -> list[str] | None:
    if prefix is None:
        return None
    header, events = prefix
    return [header.model_dump_json(), *(e.model_dump_json() for e in events)]


def run_ray(
    jobs: Sequence[JobSpec],
    manifest: RunManifest,
    run_dir: Path,
    tracker: Tracker,
    *,
    address: str | None = None,
    toolchain: str = "local",
    parallel: int | None = None,
    config: LocalConfig | None = None,
    cache: str | None = NODE_CACHE,
) -> dict[Path, JobOutcome]:
    """Run every job as a Ray task; returns each job's outcome. ``config``: the local toolchain's settings
    each worker's toolchain takes (None: the defaults); ``parallel``: most sessions in flight (None: twice the
    cluster's GPUs, or CPUs for a replay). On KeyboardInterrupt no new session starts, the driver leaves Ray
    (whose tasks of this driver end with it) and the interrupt is raised again at once: the cut sessions
    resume from their files."""
    import ray

    resources = connect(address, toolchain)
    corpus = corpus_for_nodes(manifest.corpus)
    cwd = os.getcwd()
    num_gpus = 1 if needs_gpu(toolchain) else 0
    task_fn = ray.remote(num_gpus=num_gpus, num_cpus=1, max_retries=0)(remote_session)
    if parallel is None:
        slots = resources.get("GPU", 0) if num_gpus else resources.get("CPU", 1)
        parallel = max(1, int(slots) * 2)
    outcomes: dict[Path, JobOutcome] = {}

    def one(job: JobSpec) -> JobOutcome:
        def start(prefix: Prefix | None) -> tuple[Iterator[SessionHeader | Event], tuple[str, ...]]:
            gen = task_fn.remote(
                replies_for_nodes(job), corpus, toolchain, _as_lines(prefix), config, cache, cwd
            )  # type: ignore[call-arg]

            def stream() -> Iterator[SessionHeader | Event]:
                try:
                    for ref in gen:  # type: ignore[attr-defined]  # a generator task's ObjectRefGenerator
                        yield LINE_ADAPTER.validate_json(ray.get(ref))
                except ray.exceptions.RayError as exc:
                    raise _worker_failure(exc) from None

            return stream(), ()

        tracker.start(job)
        try:
            out = drive(job, run_dir, manifest.retries, start, tracker.event)
        except BaseException:
            tracker.finish(job, JobOutcome(status="failed"))
            raise
        tracker.finish(job, out)
        return out

    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="ray-session")
    running: dict[Future[JobOutcome], JobSpec] = {}
    try:
        for job in jobs:
            running[pool.submit(one, job)] = job
        while running:  # waits with a timeout, so that Ctrl-C is seen at once
            done, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                outcomes[running.pop(fut).path] = fut.result()
    except BaseException as exc:  # Ctrl-C, or a full disk (job.py): no new session starts
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(exc, KeyboardInterrupt):
            with contextlib.suppress(Exception):
                ray.shutdown()
        raise
    pool.shutdown(wait=True)
    return {job.path: outcomes[job.path] for job in jobs}
