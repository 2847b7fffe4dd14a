"""A reply cache: an endpoint's replies kept by the exact request, so a resumed or re-run session does not
pay for a reply it already has.

The key is the request body as sent (model, messages, sampling settings, seed, extra fields; not the
streaming switch), the endpoint's base URL, and the draw: which sample of the task and which iteration of
the session asked. Two samples of a task, or two iterations of a repeated-sampling session, send the same
messages but are separate draws, so each keeps its own reply; a resumed session, or the same session run
again with another toolchain, asks for the same draw and gets the stored reply for every request that is
byte for byte the same. Sampling at temperature > 0 is not cached unless asked, since a stored reply is not
a fresh sample. Each entry is one JSON file named by the key's sha256, written atomically; an unreadable or
mismatching entry is a miss. No credential is stored or hashed: the base URL's user info and the secret fields
of the extra body are replaced by ``[redacted]`` in the key and the entry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from beavertui.engine.fileio import parse_json, write_atomic
from beavertui.engine.models.base import Completion, DeltaCallback
from beavertui.engine.session.events import Message, ModelInfo
from beavertui.engine.session.redaction import redact_fields, without_userinfo

FORMAT = 1


@dataclass
class CacheStats:
    """What a cache did in this process."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    unreadable: int = 0
    write_errors: int = 0


class ReplyCache:
    """A folder of stored replies, safe to share between threads and processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.stats = CacheStats()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: Mapping[str, Any]) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: Mapping[str, Any]) -> Completion | None:
        key = self.key(request)
        try:
            doc = parse_json(self._path(key).read_text(encoding="utf-8"))
            if doc.get("format") != FORMAT or doc.get("request") != json.loads(json.dumps(request)):
                raise ValueError("another request")
            r = doc["reply"]
            for name in ("prompt_tokens", "completion_tokens", "reasoning_tokens"):
                value = r.get(name)  # a count no endpoint sends: the entry is damaged, not a reply
                if value is not None and (type(value) is not int or value < 0):
                    raise ValueError(f"{name}: {value!r}")
            found = Completion(
                content=str(r["content"]),
                prompt_tokens=r.get("prompt_tokens"),
                completion_tokens=r.get("completion_tokens"),
                reasoning_tokens=r.get("reasoning_tokens"),
                latency_s=float(r.get("latency_s") or 0.0),
                finish_reason=r.get("finish_reason"),
                cached=True,
            )
        except FileNotFoundError:
            with self._lock:
                self.stats.misses += 1
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            with self._lock:
                self.stats.misses += 1
                self.stats.unreadable += 1
            return None
        with self._lock:
            self.stats.hits += 1
        return found

    def put(self, request: Mapping[str, Any], reply: Completion) -> None:
        doc = {
            "format": FORMAT,
            "request": request,
            "reply": {
                "content": reply.content,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "reasoning_tokens": reply.reasoning_tokens,
                "latency_s": round(reply.latency_s, 3),
                "finish_reason": reply.finish_reason,
            },
        }
        path = self._path(self.key(request))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(doc, ensure_ascii=False))
        with self._lock:
            self.stats.stored += 1


class Cacheable(Protocol):
    """A model driver that can say exactly what it would send (the OpenAI-compatible one)."""

    base_url: str | None

    def info(self) -> ModelInfo: ...

    def secrets(self) -> tuple[str, ...]: ...

    def request_body(self, messages: Sequence[Message], iteration: int | None = None) -> dict[str, Any]: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        on_delta: DeltaCallback | None = None,
        iteration: int | None = None,
    ) -> Completion: ...


def sampled(body: Mapping[str, Any]) -> bool:
    """Whether a request samples (temperature above 0, or left to the endpoint, whose default samples)."""
    t = body.get("temperature")
    return t is None or float(t) > 0


class CachedModel:
    """A model whose replies are looked up in a ReplyCache before the endpoint is asked.

    It counts the session's calls to know the iteration (``resume_at`` moves the count past the attempts a
    resumed session already has), and stores every reply the endpoint gives.
    """

    def __init__(self, inner: Cacheable, cache: ReplyCache, *, sample: int = 0) -> None:
        self.inner = inner
        self.cache = cache
        self.sample = sample
        self.next_iteration = 1

    def info(self) -> ModelInfo:
        return self.inner.info()

    def secrets(self) -> tuple[str, ...]:
        return self.inner.secrets()

    def resume_at(self, done: int) -> None:
        self.next_iteration = done + 1

    def at_sample(self, sample: int) -> None:
        """The session's sample, for the seed the endpoint is sent (the key's draw stays ``sample``)."""
        at = getattr(self.inner, "at_sample", None)
        if callable(at):
            at(sample)

    def request(self, messages: Sequence[Message], iteration: int) -> dict[str, Any]:
        body = self.inner.request_body(messages, iteration)
        if "extra_body" in body:  # credentials are no part of what decides a reply, and never stored
            body["extra_body"] = redact_fields(body["extra_body"])
        return {
            "body": body,
            "base_url": without_userinfo(self.inner.base_url),
            "draw": {"sample": self.sample, "iteration": iteration},
        }

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        iteration = self.next_iteration
        self.next_iteration += 1
        request = self.request(messages, iteration)
        hit = self.cache.get(request)
        if hit is not None:
            if on_delta is not None:
                on_delta(hit.content)
            return hit
        reply = self.inner.complete(messages, on_delta=on_delta, iteration=iteration)
        try:
            self.cache.put(request, reply)
        except OSError:  # a full or read-only cache costs the reuse, never the reply
            with self.cache._lock:
                self.cache.stats.write_errors += 1
        return replace(reply, cached=False)
