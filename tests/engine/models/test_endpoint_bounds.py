"""A reply is bounded in size and in total time, and any JSON shape an endpoint sends is a one-line failure.

Against a real HTTP server on loopback. Before: a stream that never ended was read without end (400 MB after
90 s; 1.1 GB after 10 minutes in a batch), and ten malformed-but-valid JSON shapes gave tracebacks.
"""

from __future__ import annotations

import gzip
import itertools
import json
import time
from typing import Any

import pytest

from beavertui.engine.models.base import EndpointError
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.session.events import Message
from tests.loopback_endpoint import Endpoint, chunk, completion

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


# ----------------------------------------------------------------------------- non-streamed replies
# Before: the whole body was read, however large and however long it took (the bounds above held for
# streams only); each test below failed on e6f7b95 (and on main before this bound).

HUGE = 64 << 20  # what the server would send in all; the bound with max_reply_chars=1,000 is about 1 MiB


class _Body:
    """The pieces of one raw body, counting what the server got out before the client stopped reading."""

    def __init__(
        self, head: bytes, filler: bytes, total: int, pause_s: float = 0.0, tail: bytes = b""
    ) -> None:
        self.head, self.filler, self.total, self.pause_s, self.tail = head, filler, total, pause_s, tail
        self.sent = 0

    def pieces(self) -> Any:
        yield self.head
        while self.sent < self.total:
            if self.pause_s:
                time.sleep(self.pause_s)
            yield self.filler
            self.sent += len(self.filler)
        yield self.tail


def _raw(code: int, content_type: str, body: _Body) -> Any:
    def answer(model: str, body_: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        return "raw", (code, content_type, body.pieces())

    return answer


def test_a_non_streamed_body_past_its_byte_bound_is_not_read_further_nor_retried() -> None:
    body = _Body(b'{"choices":[{"index":0,"message":{"content":"', b"x" * 65536, HUGE)
    with Endpoint(_raw(200, "application/json", body)) as server:
        model = OpenAIModel(
            OpenAIConfig(
                model="m", base_url=server.url, stream=False, retries=3, timeout_s=5.0, max_reply_chars=1000
            ),
            api_key="sk-x",
        )
        with pytest.raises(EndpointError, match=r"larger than 1,060,576 bytes"):
            model.complete(MESSAGES)
    assert len(server.requests) == 1  # the same endpoint would send it again
    assert body.sent < 16 << 20  # what loopback buffers hold past the bound, not the 64 MiB


def test_an_error_body_past_its_byte_bound_is_not_read_further() -> None:
    body = _Body(b'{"error":{"message":"', b"e" * 65536, HUGE)
    with (
        Endpoint(_raw(500, "application/json", body)) as server,
        pytest.raises(EndpointError, match=r"larger than 1,060,576 bytes"),
    ):
        _model(server.url, max_reply_chars=1000).complete(MESSAGES)
    assert body.sent < 16 << 20


def test_a_non_streamed_body_that_trickles_is_cut_at_the_deadline() -> None:
    text = json.dumps(completion("m", "fixed")).encode()
    # a whole, valid completion, its last byte after 4 s of JSON whitespace sent a byte every 10 ms
    body = _Body(text[:-1], b" ", 400, pause_s=0.01, tail=text[-1:])
    with Endpoint(_raw(200, "application/json", body)) as server:
        start = time.monotonic()
        with pytest.raises(EndpointError, match=r"did not end within 0.5 s"):
            _model(server.url, stream=False, deadline_s=0.5).complete(MESSAGES)
        assert time.monotonic() - start < 3.5  # the body alone takes 4 s


def test_a_long_non_streamed_reply_is_cut_at_the_character_cap() -> None:
    with Endpoint(_json(completion("m", "y" * 5000))) as server:
        reply = _model(server.url, stream=False, max_reply_chars=1000).complete(MESSAGES)
    assert reply.content == "y" * 1000
    assert reply.finish_reason == "cut: the reply reached 1,000 characters"


def test_a_stream_line_that_never_ends_is_not_read_past_its_byte_bound() -> None:
    body = _Body(b'data: {"choices":[{"index":0,"delta":{"content":"', b"z" * 65536, HUGE)
    with (
        Endpoint(_raw(200, "text/event-stream", body)) as server,
        pytest.raises(EndpointError, match=r"no content .* cut: the reply is larger than 1,112,576 bytes"),
    ):
        _model(server.url, max_reply_chars=1000).complete(MESSAGES)
    assert body.sent < 16 << 20


def _gzip(code: int, data: bytes) -> Any:
    def answer(model: str, body_: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
        return "raw", (code, "application/json", [gzip.compress(data)], {"content-encoding": "gzip"})

    return answer


def test_a_compressed_body_is_bounded_as_decoded_not_as_sent() -> None:
    """A gzip body of 64 KiB that decodes to 64 MiB: before, decoded whole by the client library."""
    bomb = b'{"choices":[{"index":0,"message":{"content":"' + b"0" * HUGE
    with (
        Endpoint(_gzip(200, bomb)) as server,
        pytest.raises(EndpointError, match=r"larger than 1,060,576 bytes"),
    ):
        _model(server.url, stream=False, max_reply_chars=1000).complete(MESSAGES)
    assert server.requests[0][2]["accept-encoding"] == "gzip, deflate"


def test_a_compressed_reply_within_its_bound_is_read_whole() -> None:
    with Endpoint(_gzip(200, json.dumps(completion("m", "fixed " * 100)).encode())) as server:
        reply = _model(server.url, stream=False).complete(MESSAGES)
    assert reply.content == "fixed " * 100 and reply.finish_reason == "stop"
