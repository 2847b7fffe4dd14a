"""A 404 from the endpoint says what the server said and where to look, in one line, untried again.

vLLM answers a route it does not have (a base URL without /v1: ``POST /chat/completions``) with FastAPI's
``{"detail": "Not Found"}``, which the SDK's message leaves out ("Error code: 404" and nothing else), and a
model it does not serve with ``{"message": "The model `x` does not exist."}``. Both come from a real server
on 127.0.0.1, streamed and not.
"""

from __future__ import annotations

from typing import Any

import pytest

from beavertui.engine.models.base import EndpointError
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.session.events import Message
from tests.loopback_endpoint import Endpoint

MESSAGES = [Message(role="user", content="fix")]
NO_ROUTE = {"detail": "Not Found"}
NO_MODEL = {
    "object": "error",
    "message": "The model `qwen` does not exist.",
    "type": "NotFoundError",
    "param": None,
    "code": 404,
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("body", "said"), [(NO_ROUTE, "Not Found"), (NO_MODEL, "The model `qwen` does not exist.")]
)
def test_a_404_says_the_servers_words_and_where_to_look(
    stream: bool, body: dict[str, Any], said: str
) -> None:
    with Endpoint(lambda _m, _b, _h: ("status", (404, body))) as server:
        config = OpenAIConfig(model="qwen", base_url=server.url, stream=stream, retries=3)
        with pytest.raises(EndpointError) as info:
            OpenAIModel(config, api_key="none").complete(MESSAGES)
        assert len(server.requests) == 1  # a 404 is not tried again
    detail = info.value.detail
    assert detail.startswith("HTTP 404: Error code: 404") and said in detail, detail
    assert "check the base URL, /v1 on vLLM and Ollama, and the model name" in detail
    assert "\n" not in detail
