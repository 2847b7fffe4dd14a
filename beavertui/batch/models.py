"""Building the Model of one batch session from a ModelSpec, with per-endpoint concurrency bounds.

Each session gets its own model object (scripted models count their calls); calls to one endpoint
share a semaphore so no more than ``max_concurrency`` are in flight. What a model name means is decided
by engine/models/resolve.py, the same for ``live``, ``branch`` and ``batch``; only a folder of per-task
scripts (``scripts = ...``) is the batch file's own. This module never logs or stores a key.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from beavertui.batch.protocol_file import ModelSpec
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.models.base import Completion, DeltaCallback, Model
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.models.reply_cache import CachedModel, CacheStats, ReplyCache, sampled
from beavertui.engine.models.resolve import build_model as resolve_model
from beavertui.engine.session.events import Message, ModelInfo, model_identity
from beavertui.engine.session.protocol import Protocol

_LOCK = threading.Lock()
_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}


def endpoint_key(spec: ModelSpec) -> str:
    return f"{spec.base_url or ''}|{spec.model}"


def _semaphore(spec: ModelSpec) -> threading.BoundedSemaphore:
    with _LOCK:
        key = endpoint_key(spec)
        if key not in _SEMAPHORES:
            _SEMAPHORES[key] = threading.BoundedSemaphore(spec.max_concurrency)
        return _SEMAPHORES[key]


class BoundedModel:
    """A model whose calls wait for a slot of their endpoint; everything else is the inner model's."""

    def __init__(self, inner: Model, slots: threading.BoundedSemaphore, name: str | None = None) -> None:
        self.inner = inner
        self.slots = slots
        self.name = name

    def info(self) -> ModelInfo:
        info = self.inner.info()
        if not self.name:
            return info
        labelled = info.model_copy(update={"name": self.name, "entry": None, "identity": None})
        return labelled.model_copy(update={"identity": model_identity(labelled)})

    def secrets(self) -> tuple[str, ...]:
        return self.inner.secrets()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        with self.slots:
            return self.inner.complete(messages, on_delta=on_delta)

    def __getattr__(self, name: str) -> Any:  # resume_at and other optional hooks
        return getattr(self.inner, name)


def session_protocol(spec: ModelSpec, task: Task, protocol: Protocol) -> Protocol:
    """The protocol of one session: the self-source flag set when this model produced the broken start."""
    from beavertui.engine.metrics.self_source import source_model_matches

    if not protocol.self_source and (
        source_model_matches(spec.name, task.source_model)
        or source_model_matches(spec.model, task.source_model)
    ):
        return protocol.model_copy(update={"self_source": True})
    return protocol


class ReplyCaches:
    """The reply caches of one batch run: one ReplyCache a folder, shared by every session (and thread) of
    the run, so its counts are what this run reused and stored. Each run has its own: two runs in one
    process (the TUI, a program calling the service twice) never add up each other's counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, ReplyCache] = {}

    def get(self, folder: str) -> ReplyCache:
        """The run's ReplyCache of ``folder``, opened (the folder made) on first use: OSError if it cannot be."""
        with self._lock:
            if folder not in self._caches:
                self._caches[folder] = ReplyCache(Path(folder))
            return self._caches[folder]

    def stats(self, folder: str) -> CacheStats | None:
        """What this run's cache of ``folder`` did (None: the run never opened it)."""
        with self._lock:
            cache = self._caches.get(folder)
            return None if cache is None else replace(cache.stats)


def default_reply_cache() -> Path:
    """$BEAVERTUI_REPLY_CACHE, else ~/.cache/beavertui/replies (or under $XDG_CACHE_HOME)."""
    import os

    env = os.environ.get("BEAVERTUI_REPLY_CACHE")
    if env:
        return Path(env)
    from beavertui.engine.paths import cache_dir

    return cache_dir() / "replies"


#: ModelSpec fields that override the models file's entry of the same name, where the batch file sets them.
OVERRIDDEN = ("base_url", "api_key_env", "top_p", "max_tokens", "reasoning_effort", "extra_body", "timeout_s",
              "retries", "input_usd_per_mtok", "output_usd_per_mtok", "stream")  # fmt: skip


def overrides_of(spec: ModelSpec) -> dict[str, Any]:
    """The fields ``spec`` sets, as overrides of its models-file entry."""
    return {field: getattr(spec, field) for field in OVERRIDDEN if field in spec.model_fields_set}


def endpoint_config_of(spec: ModelSpec) -> OpenAIConfig | None:
    """How an endpoint model of the batch is reached (None for scripted, replayed and human models)."""
    from beavertui.engine.models.resolve import endpoint_config

    if spec.scripts is not None or spec.model.startswith(("scripted:", "replay:")) or spec.model == "human":
        return None
    return endpoint_config(spec.model, models=spec.models_file, overrides=overrides_of(spec))


def build_model(
    spec: ModelSpec, task: Task, protocol: Protocol, *, job: Any = None, replies: ReplyCaches | None = None
) -> Model:
    """The model object of one session: the shared resolution, behind its endpoint's concurrency slots and
    the run's reply cache when ``job`` names one (taken from ``replies``, the run's caches, which a job
    with a reply cache folder needs).

    The batch file's fields override the models-file entry of the same name only where the file sets them.
    """
    from beavertui.engine.models.scripted import ScriptedModel

    name = spec.name
    slots = _semaphore(spec)
    if spec.scripts is not None:
        folder = Path(spec.scripts)
        for ext in (".toml", ".json", ".md", ".txt"):
            path = folder / f"{task.id}{ext}"
            if path.is_file():
                return BoundedModel(ScriptedModel.from_file(path), slots, name)
        raise BeaverError(f"{folder}: no script for task {task.id}")
    model = resolve_model(spec.model, task, protocol, models=spec.models_file, overrides=overrides_of(spec))
    if not isinstance(model, OpenAIModel):
        return BoundedModel(model, slots, name)
    cache_dir = getattr(job, "reply_cache", None)
    if cache_dir:
        if replies is None:
            raise ValueError(f"{cache_dir}: a session with a reply cache is built with its run's ReplyCaches")
        if getattr(job, "reply_cache_sampled", False) or not sampled(model.request_body([])):
            model = CachedModel(model, replies.get(cache_dir), sample=int(getattr(job, "sample", 0)))
    return BoundedModel(model, slots, name if spec.label else None)


def helper_models(
    spec: ModelSpec, task: Task, protocol: Protocol, *, job: Any = None, replies: ReplyCaches | None = None
) -> tuple[Model | None, Model | None]:
    """The planner and the summariser a protocol names (docs/protocols.md), each built as a batch model of
    its own: through the coder's models file, behind its endpoint's concurrency slots and the run's reply
    cache. None where the protocol names none (the session's coder then plans or condenses)."""

    def one(name: str | None) -> Model | None:
        if name is None:
            return None
        helper = ModelSpec.model_validate({"model": name, "models_file": spec.models_file})
        return build_model(helper, task, protocol, job=job, replies=replies)

    planner = one(protocol.planner) if protocol.planning == "plan" else None
    summariser = one(protocol.summariser) if protocol.feedback == "L3S" else None
    return planner, summariser
