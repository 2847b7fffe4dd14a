"""An OpenAI-compatible chat model (cloud APIs, vLLM, SGLang, Ollama) on the ``openai`` SDK.

Retries are done here, not by the SDK (its own ``max_retries`` is 0), so that every failed try is visible,
testable and recorded: exponential backoff with jitter, Retry-After honoured on 429, 5xx, connection
errors, timeouts and malformed responses retried, other 4xx answers failing at once. An endpoint that stays
unusable raises EndpointError (an infrastructure failure). The API key is held in memory only and is
never part of ``info()``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import importlib
import json
import os
import random
import re
import threading
import time
import tomllib
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_INPUT_BYTES, read_small_text
from beavertui.engine.limits import MAX_BUDGET, MAX_SEED, MAX_TEMPERATURE, MAX_TOKENS, MAX_TOP_P
from beavertui.engine.limits import MAX_RETRIES as MAX_RETRIES
from beavertui.engine.limits import MAX_TIMEOUT_S as MAX_TIMEOUT_S
from beavertui.engine.models.base import Completion, DeltaCallback, EndpointError
from beavertui.engine.session.events import GivenName, Message, ModelInfo, Prices, model_identity
from beavertui.engine.session.redaction import (
    REDACTED,
    Secrets,
    redact_fields,
    redact_text,
    secret_values,
    userinfo_secrets,
    without_userinfo,
)

__all__ = ["REDACTED", "redact_text"]

#: Most characters of one reply read, streamed or not (four times what a session keeps of a reply).
MAX_STREAM_CHARS = 2 << 20
#: Bytes of a non-streamed body allowed per character of the reply cap: the JSON escape of one character
#: (``\\uXXXX\\uXXXX`` for one outside the BMP) plus the body's other fields.
BODY_BYTES_PER_CHAR = 12
#: Bytes of an event stream allowed per character of the reply cap: each chunk repeats the reply's id,
#: model and choice fields around a few characters.
STREAM_BYTES_PER_CHAR = 64
#: Bytes every body may have beyond those (headers of the JSON, usage, an error's text).
BODY_SLACK_BYTES = 1 << 20


class OpenAIConfig(BaseModel):
    """How to reach and sample one OpenAI-compatible model (a models-file entry or CLI flags)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    model: GivenName
    """Model name as the endpoint knows it."""
    base_url: str | None = None
    """Endpoint base URL, e.g. ``http://localhost:8000/v1``; None: OPENAI_BASE_URL or the OpenAI API."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (the key itself is never configured in a file)."""
    temperature: float | None = Field(default=None, ge=0.0, le=MAX_TEMPERATURE)
    """Sampling temperature; a session sends its protocol's (engine/models/resolve.py)."""
    top_p: float | None = Field(default=None, gt=0.0, le=MAX_TOP_P)
    """Nucleus sampling mass."""
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    """Completion token limit."""
    seed: int | None = None
    """Sampling seed, where the endpoint honours one: the base each call's seed is drawn from
    (``draw_seed``); a session sets its protocol's."""
    reasoning_effort: str | None = None
    """``low``, ``medium`` or ``high`` for reasoning models."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra JSON fields merged into the request body (e.g. ``top_k`` for vLLM)."""
    stream: bool = True
    """Stream tokens as they are generated."""
    timeout_s: float = Field(default=600.0, gt=0.0, le=MAX_TIMEOUT_S)
    """Per-call time limit: seconds to connect, and between two received chunks."""
    deadline_s: float = Field(default=3600.0, gt=0.0, le=MAX_TIMEOUT_S)
    """Longest a reply (streamed or not) may take from its first byte to its end, however steadily it
    arrives; one that never ends is cut at this time and is an endpoint error (not retried)."""
    max_reply_chars: int = Field(default=MAX_STREAM_CHARS, ge=1, le=MAX_STREAM_CHARS)
    """Most characters of a reply kept (finish reason ``cut``): a stream is closed there; a non-streamed
    body may have at most ``BODY_BYTES_PER_CHAR`` bytes a character (more is an endpoint error, not
    retried, read no further)."""
    retries: int = Field(default=5, ge=0, le=MAX_RETRIES)
    """Failed tries allowed before giving up."""
    backoff_base_s: float = Field(default=1.0, ge=0.0, le=MAX_TIMEOUT_S)
    """First backoff delay; doubled after each failure."""
    backoff_max_s: float = Field(default=60.0, ge=0.0, le=MAX_TIMEOUT_S)
    """Backoff ceiling."""
    retry_after_max_s: float = Field(default=600.0, ge=0.0, le=MAX_TIMEOUT_S)
    """A Retry-After longer than this fails at once instead of waiting."""
    input_usd_per_mtok: float | None = Field(default=None, ge=0)
    """Price of prompt tokens, US dollars per million (both prices or neither)."""
    output_usd_per_mtok: float | None = Field(default=None, ge=0)
    """Price of completion tokens (reasoning included), US dollars per million."""

    def prices(self) -> Prices | None:
        """The prices, when the configuration gives both."""
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return None
        return Prices(input_per_mtok=self.input_usd_per_mtok, output_per_mtok=self.output_usd_per_mtok)


def load_models_file(path: str | Path) -> dict[str, OpenAIConfig]:
    """Read a TOML models file: one ``[models.NAME]`` table per model (keys of OpenAIConfig)."""
    path = Path(path)
    try:
        data = tomllib.loads(read_small_text(path, MAX_INPUT_BYTES, "models file"))
    except tomllib.TOMLDecodeError as exc:
        raise BeaverError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise BeaverError(f"{path}: not valid TOML: nested too deeply") from None
    models = data.get("models")
    if not isinstance(models, dict):
        raise BeaverError(f"{path}: expected [models.NAME] tables")
    out: dict[str, OpenAIConfig] = {}
    for name, table in models.items():
        if not isinstance(table, dict):
            raise BeaverError(f"{path}: models.{name} is not a table")
        try:
            out[name] = OpenAIConfig.model_validate({"model": name, **table})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise BeaverError(f"{path}: models.{name}.{loc}: {err['msg']}") from None
    return out


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if given."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Malformed(Exception):
    """The endpoint answered 2xx with something that is not a chat completion."""


class _Empty(Exception):
    """The endpoint answered 2xx with a completion that holds no text at all."""


class _Endless(Exception):
    """A reply still going at the configuration's deadline."""


class _TooLarge(Exception):
    """A reply body past its byte bound (raised while reading it, so no more of it is read)."""


def _bounded_body_hook(config: OpenAIConfig) -> Callable[[Any], None]:
    """An HTTP client response hook that makes every body of a response read through a bound.

    The hook runs when a response's headers are in and before any of its body is read, for every
    response (a completion, an event stream, an error's body), so no body is read past
    ``deadline_s`` from that moment, nor past its byte bound: ``BODY_BYTES_PER_CHAR`` bytes a character of
    ``max_reply_chars`` for a JSON body, ``STREAM_BYTES_PER_CHAR`` for an event stream (whose cut keeps the
    reply so far), plus ``BODY_SLACK_BYTES``. The bound is on the bytes as decoded: a gzip or deflate body
    (the only encodings asked for) is decoded here, a piece at a time, never past the bound, so a small
    compressed body cannot expand into gigabytes; a body in another encoding is refused. The HTTP library
    (httpx or its successor) is the one the response comes from.
    """
    made: dict[type, type] = {}

    def stream_type(response: Any) -> type:
        module = importlib.import_module(type(response).__module__.split(".")[0])
        base: type = module.SyncByteStream
        if base not in made:
            made[base] = type("BoundedStream", (base,), {"__iter__": _bounded_iter, "close": _bounded_close})
        return made[base]

    def hook(response: Any) -> None:
        streamed = "text/event-stream" in response.headers.get("content-type", "")
        per_char = STREAM_BYTES_PER_CHAR if streamed else BODY_BYTES_PER_CHAR
        bounded = stream_type(response)()
        bounded.inner = response.stream
        bounded.limit = per_char * config.max_reply_chars + BODY_SLACK_BYTES
        bounded.deadline_s = config.deadline_s
        bounded.began = time.monotonic()
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            bounded.decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib header, told apart
            del response.headers["content-encoding"]  # decoded here, so not again by the library
        elif encoding not in ("", "identity"):
            raise _TooLarge(f"the reply is encoded as {encoding[:40]!r}, which was not asked for")
        else:
            bounded.decoder = None
        response.stream = bounded

    return hook


def _bounded_iter(self: Any) -> Any:
    read = 0
    for raw in self.inner:
        piece = raw
        if self.decoder is not None:
            try:  # at most one byte past the bound: that byte says the bound is passed
                piece = self.decoder.decompress(raw, self.limit - read + 1)
            except zlib.error as exc:
                raise _Malformed(f"a compressed body that does not decode: {exc}") from None
        read += len(piece)
        if read > self.limit:
            raise _TooLarge(f"the reply is larger than {self.limit:,} bytes; read no further")
        if time.monotonic() - self.began > self.deadline_s:
            raise _Endless(f"the reply did not end within {self.deadline_s:g} s ({read:,} bytes so far)")
        yield piece
    if self.decoder is not None:
        rest = self.decoder.flush()
        if read + len(rest) > self.limit:
            raise _TooLarge(f"the reply is larger than {self.limit:,} bytes; read no further")
        yield rest


def _bounded_close(self: Any) -> None:
    self.inner.close()


def _bound_error(exc: BaseException) -> _Endless | _TooLarge | None:
    """The body bound an exception comes from, where the client library wrapped it."""
    seen: BaseException | None = exc
    for _ in range(4):
        if isinstance(seen, (_Endless, _TooLarge)):
            return seen
        if seen is None:
            return None
        seen = seen.__cause__ or seen.__context__
    return None


_TLS: dict[tuple[str | None, str | None], Any] = {}
_TLS_LOCK = threading.Lock()


def shared_tls_context() -> Any:
    """One TLS context for every model client of this process, made by the HTTP library as it makes its
    default (the CA files of SSL_CERT_FILE or SSL_CERT_DIR, else the system's; one context a value of
    those): making one loads the CA bundle, about 25 ms of CPU, which every client (one a session, and
    one a planner or summariser) paid again. A context is safe to share between clients and threads."""
    import openai

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _TLS_LOCK:
        if key not in _TLS:
            library = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
            _TLS[key] = library.create_ssl_context()
        return _TLS[key]


def draw_seed(seed: int | None, sample: int, iteration: int) -> int | None:
    """The seed one call sends: the configured seed moved on by the call's draw, ``sample * MAX_BUDGET +
    iteration - 1``, modulo ``MAX_SEED + 1`` (None without a configured seed: none is sent).

    Separate draws (the K samples of a repeated-sampling session, the samples of a task) send separate
    seeds, so an endpoint that honours seeds does not answer them all alike; the same draw asked again (a
    resumed session) sends the same seed. Sample 0's first call sends the configured seed itself."""
    if seed is None:
        return None
    return (seed + sample * MAX_BUDGET + iteration - 1) % (MAX_SEED + 1)


class OpenAIModel:
    """A chat-completions endpoint with recorded retries.

    It counts its calls to know each call's draw (``sample``, set by the session through ``at_sample``, and
    the 1-based iteration; ``resume_at`` moves the count past the calls a resumed session already has),
    which picks the seed the call sends (``draw_seed``)."""

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        api_key: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        entry: str | None = None,
    ) -> None:
        import openai

        self.config = config
        self.entry = entry if entry != config.model else None
        """The models-file entry that named this model, when it is not the endpoint name."""
        self.base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key if api_key is not None else os.environ.get(config.api_key_env)
        if not key:
            if self.base_url is None:
                raise BeaverError(
                    f"no API key: set {config.api_key_env} (or --api-key-env NAME) or give --base-url"
                )
            key = "none"  # local servers (vLLM, Ollama) accept any key
        self._key = key
        self._secrets = Secrets.of(self.secrets())
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.sample = 0
        """Which sample of the task the session is (its header's ``sample``)."""
        self.next_iteration = 1
        """The iteration of the next call."""
        self._iteration = 1
        http = openai.DefaultHttpxClient(
            verify=shared_tls_context(),
            timeout=config.timeout_s,
            event_hooks={"response": [_bounded_body_hook(config)]},
            headers={"accept-encoding": "gzip, deflate"},  # what the bound decodes (not br or zstd)
        )
        self._client = openai.OpenAI(
            api_key=key, base_url=self.base_url, timeout=config.timeout_s, max_retries=0, http_client=http
        )

    def info(self) -> ModelInfo:
        c = self.config
        params: dict[str, object] = {
            k: v
            for k, v in {
                "temperature": c.temperature,
                "top_p": c.top_p,
                "max_tokens": c.max_tokens,
                "seed": c.seed,
                "reasoning_effort": c.reasoning_effort,
            }.items()
            if v is not None
        }
        if c.extra_body:
            params["extra_body"] = redact_fields(c.extra_body)
        params.update(stream=c.stream, timeout_s=c.timeout_s, retries=c.retries)
        info = ModelInfo(
            name=c.model,
            kind="openai",
            base_url=without_userinfo(self.base_url),
            params=params,
            prices=c.prices(),
            entry=self.entry,
        )
        return info.model_copy(update={"identity": model_identity(info)})

    def secrets(self) -> tuple[str, ...]:
        """Every credential this model holds: the key, a password in the base URL, secret fields of
        ``extra_body``; redacted by value from whatever is shown, logged or written."""
        found = [self._key] if self._key != "none" else []
        found += userinfo_secrets(self.base_url)
        found += secret_values(self.config.extra_body)
        return tuple(dict.fromkeys(x for x in found if x))

    def _redact(self, text: str) -> str:
        return self._secrets.text(text)

    def at_sample(self, sample: int) -> None:
        self.sample = sample

    def resume_at(self, calls: int) -> None:
        self.next_iteration = calls + 1

    def seed_of(self, iteration: int) -> int | None:
        """The seed the call of ``iteration`` sends (None: none)."""
        return draw_seed(self.config.seed, self.sample, iteration)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        on_delta: DeltaCallback | None = None,
        iteration: int | None = None,
    ) -> Completion:
        """One reply, retried as the configuration says; no credential in what it returns or raises.

        ``iteration``: the call's draw within the sample (default: the next one); retries send its seed."""
        self._iteration = self.next_iteration if iteration is None else iteration
        self.next_iteration = self._iteration + 1
        delta = (lambda piece: on_delta(self._redact(piece))) if on_delta is not None else None
        try:
            result = self._complete(messages, delta)
        except EndpointError as exc:
            raise EndpointError(
                self._redact(exc.detail),
                retries=exc.retries,
                retry_reasons=[self._redact(r) for r in exc.retry_reasons],
            ) from None
        return dataclasses.replace(
            result,
            content=self._redact(result.content),
            retry_reasons=tuple(self._redact(r) for r in result.retry_reasons),
        )

    # ------------------------------------------------------------------------------------------ calls

    def _request(self, messages: Sequence[Message], iteration: int) -> dict[str, Any]:
        c = self.config
        kwargs: dict[str, Any] = {
            "model": c.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        for name in ("temperature", "top_p", "max_tokens", "seed", "reasoning_effort"):
            value = self.seed_of(iteration) if name == "seed" else getattr(c, name)
            if value is not None:
                kwargs[name] = value
        if c.extra_body:
            kwargs["extra_body"] = dict(c.extra_body)
        if c.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def request_body(self, messages: Sequence[Message], iteration: int | None = None) -> dict[str, Any]:
        """What a call sends that decides its reply: model, messages, sampling settings, seed, extra fields
        (for the call of ``iteration``; default: the next one)."""
        body = self._request(messages, self.next_iteration if iteration is None else iteration)
        body.pop("stream", None)
        body.pop("stream_options", None)
        return body

    def _once(self, messages: Sequence[Message], on_delta: DeltaCallback | None) -> Completion:
        """One call; a reply of a shape no chat completion has (valid JSON, wrong types) is _Malformed."""
        import openai

        try:
            return self._call(messages, on_delta)
        except openai.APIConnectionError as exc:
            bound = _bound_error(exc)  # an older client library wraps every reading error so
            if bound is not None:
                raise bound from None
            raise
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                raise
            raise _Malformed(f"{type(exc).__name__}: {exc}") from None

    def _call(self, messages: Sequence[Message], on_delta: DeltaCallback | None) -> Completion:
        response: Any = self._client.chat.completions.create(**self._request(messages, self._iteration))
        if not self.config.stream:
            choices = getattr(response, "choices", None)
            if not choices:
                raise _Malformed(f"no choices in the response ({type(response).__name__})")
            message = choices[0].message
            text = message.content or ""
            if not isinstance(text, str):
                raise _Malformed(f"the message's content is {type(text).__name__}, not text")
            reasoning = _reasoning(message)
            if not text and not reasoning:
                raise _Empty(f"no content, finish reason {choices[0].finish_reason}")
            prompt, completion, thinking = _usage(getattr(response, "usage", None))
            ended = choices[0].finish_reason
            cap = self.config.max_reply_chars
            if len(reasoning) + len(text) > cap:  # the streamed path's cut, on a reply that came whole
                reasoning, text = reasoning[:cap], text[: max(0, cap - len(reasoning))]
                ended = f"cut: the reply reached {cap:,} characters"
            return Completion(
                content=_join(reasoning, text),
                prompt_tokens=prompt,
                completion_tokens=completion,
                reasoning_tokens=thinking,
                finish_reason=ended,
            )
        parts: list[str] = []
        thoughts: list[str] = []
        finish: str | None = None
        prompt_tokens: int | None = None
        completion_tokens: int | None = None
        reasoning_tokens: int | None = None
        began = time.monotonic()
        chars = 0
        try:
            for chunk in response:
                if time.monotonic() - began > self.config.deadline_s:
                    with contextlib.suppress(Exception):
                        response.close()
                    raise _Endless(
                        f"the streamed reply did not end within {self.config.deadline_s:g} s "
                        f"({chars:,} characters so far)"
                    )
                if chars >= self.config.max_reply_chars:
                    with contextlib.suppress(Exception):
                        response.close()
                    finish = f"cut: the reply reached {self.config.max_reply_chars:,} characters"
                    break
                if getattr(chunk, "usage", None) is not None:
                    prompt_tokens, completion_tokens, reasoning_tokens = _usage(chunk.usage)
                if not getattr(chunk, "choices", None):
                    continue
                choice = chunk.choices[0]
                if choice.finish_reason:
                    finish = choice.finish_reason
                delta = choice.delta
                if delta is None:
                    continue
                thought = _reasoning(delta)
                if thought:
                    thoughts.append(thought)
                    chars += len(thought)
                if delta.content:
                    if not isinstance(delta.content, str):
                        raise _Malformed(f"a chunk's content is {type(delta.content).__name__}, not text")
                    parts.append(delta.content)
                    chars += len(delta.content)
                    if on_delta is not None:
                        on_delta(_SURROGATE.sub("\ufffd", delta.content))
        except _TooLarge as exc:  # an event stream past its byte bound: cut, as at the character cap
            with contextlib.suppress(Exception):
                response.close()
            finish = f"cut: {exc}"
        if finish is None and not parts:
            ctype = _content_type(response)
            if ctype is not None and "html" in ctype:
                raise _Malformed(
                    f"the server answered with an HTML page ({ctype}), not the OpenAI API: check the base URL"
                )
            if ctype is not None and "text/event-stream" not in ctype:
                raise _Malformed(
                    f"the server answered a streamed request with {ctype}, not an event stream: turn "
                    "streaming off (--no-stream, or stream = false in the models file)"
                )
            raise _Malformed("the stream ended without content or a finish reason")
        if not parts and not thoughts:
            raise _Empty(f"no content in the stream, finish reason {finish}")
        return Completion(
            content=_join("".join(thoughts), "".join(parts)),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning_tokens,
            finish_reason=finish,
        )

    def _backoff(self, failures: int) -> float:
        c = self.config
        delay: float = min(c.backoff_max_s, c.backoff_base_s * 2.0 ** (failures - 1))
        return delay * (0.5 + 0.5 * self._rng.random())

    def _complete(self, messages: Sequence[Message], on_delta: DeltaCallback | None) -> Completion:
        import openai

        start = time.monotonic()
        reasons: list[str] = []
        while True:
            retry_after: float | None = None
            try:
                result = self._once(messages, on_delta)
            except openai.APIStatusError as exc:
                status = exc.status_code
                what = f"HTTP {status}: {_status_text(exc)}"
                if status != 429 and status < 500 and status != 408:
                    raise EndpointError(what, retries=len(reasons), retry_reasons=reasons) from None
                if status == 429:
                    retry_after = parse_retry_after(exc.response.headers)
            except openai.APITimeoutError:
                what = f"no answer within {self.config.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                what = f"connection error: {_short(str(exc.__cause__ or exc))}"
            except (_Malformed, json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                what = f"malformed response: {_short(str(exc))}"
            except openai.APIError as exc:  # an error event inside a 200 event stream (vLLM, SGLang do so)
                code = _stream_error_code(exc)
                what = f"the stream ended in an error{f' (code {code})' if code else ''}: {_short(str(exc.message))}"
                if code is not None and 400 <= code < 500 and code not in (408, 429):
                    raise EndpointError(what, retries=len(reasons), retry_reasons=reasons) from None
            except _Empty as exc:
                what = f"empty reply: {exc}"
            except (_Endless, _TooLarge) as exc:  # the same endpoint would send it again: not retried
                reasons.append(str(exc))
                raise EndpointError(str(exc), retries=len(reasons) - 1, retry_reasons=reasons) from None
            else:
                return Completion(
                    content=result.content,
                    prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens,
                    reasoning_tokens=result.reasoning_tokens,
                    latency_s=time.monotonic() - start,
                    finish_reason=result.finish_reason,
                    retries=len(reasons),
                    retry_reasons=tuple(reasons),
                )
            if len(reasons) >= self.config.retries:
                reasons.append(what)
                raise EndpointError(
                    f"{what} (gave up after {len(reasons)} {'try' if len(reasons) == 1 else 'tries'})",
                    retries=len(reasons) - 1,
                    retry_reasons=reasons,
                )
            if retry_after is not None:
                if retry_after > self.config.retry_after_max_s:
                    reasons.append(what)
                    raise EndpointError(
                        f"{what}; the server asks to wait {retry_after:.0f} s "
                        f"(more than {self.config.retry_after_max_s:g} s)",
                        retries=len(reasons) - 1,
                        retry_reasons=reasons,
                    )
                delay, how = retry_after, "Retry-After"
            else:
                delay, how = self._backoff(len(reasons) + 1), "backoff"
            reasons.append(f"{what}; waited {delay:.2f} s ({how})")
            self._sleep(delay)


def _status_text(exc: Any) -> str:
    """What an error answer says: the SDK's message, plus a body it leaves out (FastAPI's ``{"detail": ...}``,
    vLLM's answer to an unknown route), and for a 404 where to look: the base URL or the model name."""
    text = str(exc.message)
    body = getattr(exc, "body", None)
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail and detail not in text:
        text = f"{text} - {detail}"
    text = _short(text)
    if exc.status_code == 404:
        text += " (no such route or model: check the base URL, /v1 on vLLM and Ollama, and the model name)"
    return text


def _stream_error_code(exc: Any) -> int | None:
    """The HTTP-like status an error event of a stream names (``{"error": {"code": 400, ...}}``), or None."""
    body = getattr(exc, "body", None)
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code < 600 else None


def _content_type(stream: Any) -> str | None:
    """The content type of a streamed answer's HTTP response, or None where it cannot be read."""
    headers = getattr(getattr(stream, "response", None), "headers", None)
    value = headers.get("content-type") if headers is not None else None
    return value.split(";")[0].strip().lower() or None if isinstance(value, str) else None


def _count(obj: Any, name: str) -> int | None:
    value = getattr(obj, name, None)
    if value is None and isinstance(obj, dict):
        value = obj.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, reasoning) tokens of a usage report; None for what it leaves out."""
    if usage is None:
        return None, None, None
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = _count(details, "reasoning_tokens") if details is not None else None
    return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"), reasoning


def _reasoning(obj: Any) -> str:
    """Reasoning text some servers return beside the content (vLLM/DeepSeek ``reasoning_content``)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(obj, name, None)
        if value is None:
            extra = getattr(obj, "model_extra", None) or {}
            value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _join(reasoning: str, text: str) -> str:
    """The reply as one text; a lone UTF-16 surrogate (valid in a JSON escape, never UTF-8) becomes U+FFFD."""
    joined = f"<think>{reasoning}</think>\n{text}" if reasoning else text
    return _SURROGATE.sub("\ufffd", joined)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _short(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
