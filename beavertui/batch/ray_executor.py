"""The Ray executor: one Ray task per session, events streamed back to the driver's run directory.

Each session is a Ray generator task (``num_gpus=1`` with the local toolchain, 0 with a recorded one) that
runs the same ``run_session`` on a worker and yields every event as a JSON line; the driver writes them
to the session file and the progress display exactly as the local executor does, so resume, retries and
infrastructure accounting are shared (job.py). Workers keep one toolchain per process with a node-local
compile cache. The corpus must be readable at the same path on every node. Needs ``beavertui[ray]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.batch.job import JobOutcome, JobSpec, Prefix, drive
from beavertui.batch.local_executor import Tracker
from beavertui.batch.rundir import RunManifest
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import LINE_ADAPTER, Event, SessionHeader

if TYPE_CHECKING:
    from beavertui.engine.toolchain.local import LocalConfig

#: Per worker process: toolchain by spec (so the compile cache and baselines are reused across tasks).
_TOOLCHAINS: dict[str, Any] = {}


def node_cache_dir() -> Path:
    return Path(os.environ.get("BEAVERTUI_NODE_CACHE", "/tmp/beavertui-node-cache")) / "builds"


def _worker_toolchain(spec: str, config: LocalConfig | None = None) -> Any:
    if spec in _TOOLCHAINS:
        return _TOOLCHAINS[spec]
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
        tc = scheduled_local(GpuPool(gpus), BuildSlots(1), CompileCache(node_cache_dir()), config)
    _TOOLCHAINS[spec] = tc
    return tc


def remote_session(
    job: JobSpec, corpus: str, toolchain: str, prefix: list[str] | None, config: LocalConfig | None = None
) -> Iterator[str]:
    """Body of the Ray task: run (or resume) one session and yield each event as a JSON line; ``config``: the
    local toolchain's settings, read on the driver (service/environment.py)."""
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
    task = load_corpus(Path(corpus), only=[job.task_id]).get(job.task_id)
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
    replies = ReplyCaches()  # the worker's counts stay on the worker: the driver reports none of them
    model = build_model(job.model, task, job.protocol, job=job, replies=replies)
    helpers = helper_models(job.model, task, job.protocol, job=job, replies=replies)
    # the key stays on the worker: events are redacted here, since the driver never holds the key
    secrets = Secrets.of(model.secrets() + tuple(k for h in helpers if h is not None for k in h.secrets()))
    for item in run_session(
        task,
        model,
        _worker_toolchain(toolchain, config),
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
) -> dict[Path, JobOutcome]:
    """Run every job as a Ray task; returns each job's outcome. ``config``: the local toolchain's settings
    each worker's toolchain takes (None: the defaults)."""
    try:
        import ray
    except ImportError:
        raise BeaverError("the Ray executor needs Ray: pip install 'beavertui[ray]'") from None
    if not ray.is_initialized():
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, log_to_driver=False)
    num_gpus = 0 if toolchain.startswith("recorded:") else 1
    task_fn = ray.remote(num_gpus=num_gpus, num_cpus=1, max_retries=0)(remote_session)
    if parallel is None:
        res = ray.cluster_resources()  # type: ignore[no-untyped-call]
        slots = res.get("GPU", 0) if num_gpus else res.get("CPU", 1)
        parallel = max(1, int(slots) * 2)
    outcomes: dict[Path, JobOutcome] = {}

    def one(job: JobSpec) -> JobOutcome:
        def start(prefix: Prefix | None) -> tuple[Iterator[SessionHeader | Event], tuple[str, ...]]:
            # Ray's stubs type a remote call of up to four arguments; remote_session takes five
            gen = task_fn.remote(job, manifest.corpus, toolchain, _as_lines(prefix), config)  # type: ignore[call-arg]

            def stream() -> Iterator[SessionHeader | Event]:
                for ref in gen:  # type: ignore[attr-defined]  # a generator task's ObjectRefGenerator
                    yield LINE_ADAPTER.validate_json(ray.get(ref))

            return stream(), ()

        tracker.start(job)
        out = drive(job, run_dir, manifest.retries, start, tracker.event)
        tracker.finish(job, out)
        return out

    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="ray-session") as pool:
        for job, out in zip(jobs, pool.map(one, jobs), strict=True):
            outcomes[job.path] = out
    return outcomes
