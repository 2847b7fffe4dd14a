"""A reply is bounded in size and in total time, and any JSON shape an endpoint sends is a one-line failure.

Against a real HTTP server on loopback. Before: a stream that never ended was read without end (400 MB after
90 s; 1.1 GB after 10 minutes in a batch), and ten malformed-but-valid JSON shapes gave tracebacks.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from beavertui.engine.models.base import EndpointError
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.session.events import Message
from tests.loopback_endpoint import Endpoint, chunk

MESSAGES = [Message(role="user", content="fix")]


def _model(url: str, **kw: Any) -> OpenAIModel:
    return OpenAIModel(OpenAIConfig(model="m", base_url=url, retries=0, timeout_s=5.0, **kw), api_key="sk-x")


def _endless(content: str | None) -> Any:
    def paced(model: str) -> Any:
        for n in itertools.count():
            if n % 20 == 0:
                time.sleep(0.002)  # a steady endpoint, not a busy loop that starves the client on 2 cores
            yield chunk(model, content)

    def answer(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        return "stream", paced(model)

    return answer


def test_a_stream_that_never_ends_is_cut_at_the_deadline() -> None:
    with Endpoint(_endless(None)) as server:  # chunks without content, forever: only the deadline ends it
        start = time.monotonic()
        with pytest.raises(EndpointError, match=r"did not end within 0.5 s"):
            _model(server.url, deadline_s=0.5).complete(MESSAGES)
        assert time.monotonic() - start < 10.0  # 0.7 s alone on the 2-core development machine


def test_a_stream_of_endless_text_is_cut_at_the_size_cap() -> None:
    with Endpoint(_endless("x" * 1000)) as server:
        reply = _model(server.url, max_reply_chars=50_000).complete(MESSAGES)
    assert 50_000 <= len(reply.content) <= 51_000
    assert reply.finish_reason == "cut: the reply reached 50,000 characters"


def _json(obj: Any) -> Any:
    def answer(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        return "json", obj

    return answer


def _stream(obj: Any) -> Any:
    def answer(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        return "stream", [obj]

    return answer


SHAPES = {
    "choices-null-item": ({"choices": [None]}, False),
    "choices-string": ({"choices": "x"}, False),
    "message-null": ({"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}, False),
    "content-number": ({"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}}]}, False),
    "content-list": ({"choices": [{"index": 0, "message": {"role": "assistant", "content": ["a"]}}]}, False),
    "usage-string": ({"choices": [{"index": 0, "message": {"content": "ok"}}], "usage": "x"}, False),
    "top-level-list": ([1, 2, 3], False),
    "stream-delta-number": ({"choices": [{"index": 0, "delta": 5}]}, True),
    "stream-content-object": ({"choices": [{"index": 0, "delta": {"content": {"a": 1}}}]}, True),
    "stream-choices-null-item": ({"choices": [None]}, True),
    "stream-chunk-string": ("just text", True),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_malformed_shape_is_an_endpoint_error_not_a_traceback(shape: str) -> None:
    obj, stream = SHAPES[shape]
    with Endpoint(_stream(obj) if stream else _json(obj)) as server:
        model = _model(server.url, stream=stream)
        try:
            reply = model.complete(MESSAGES)
        except EndpointError as exc:
            assert "\n" not in str(exc)
        else:  # a shape the client library reads as a reply is used as one, with text
            assert isinstance(reply.content, str) and reply.content
