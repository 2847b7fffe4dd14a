"""What the repair loop needs from a model: send messages, get one complete reply (streamed if possible).

Every driver (an OpenAI-compatible endpoint, a scripted file, a recorded session, a human at an editor)
implements ``Model``. A driver reports an endpoint that stays unusable after its retries with
``EndpointError``, which the loop records as an infrastructure failure, never as a model failure. Drivers
must not build prompts, extract code or touch session files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from beavertui.engine.session.events import Message, ModelInfo

DeltaCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completion:
    """One complete model reply and how it was obtained."""

    content: str
    """Full reply text (reasoning, where the endpoint returns it separately, wrapped in <think>)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    """Of the completion tokens, those spent reasoning (where the endpoint reports them)."""
    latency_s: float = 0.0
    """Seconds from the first request to the last token, retries included."""
    finish_reason: str | None = None
    retries: int = 0
    """Failed tries before this reply."""
    retry_reasons: tuple[str, ...] = ()
    """One line per failed try, e.g. 'HTTP 429, waited 1.0 s (Retry-After)'."""
    code: str | None = None
    """The candidate itself when the driver produces code directly (human); None: extract from content."""
    cached: bool = False
    """Served by the reply cache instead of the endpoint."""


class EndpointError(Exception):
    """The model could not be reached or answered unusably after all retries (an infrastructure failure)."""

    def __init__(self, detail: str, *, retries: int = 0, retry_reasons: Sequence[str] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retries = retries
        self.retry_reasons = tuple(retry_reasons)


class Model(Protocol):
    """A chat model the loop can ask for repairs."""

    def info(self) -> ModelInfo:
        """Name, driver kind, base URL and parameters, for the session header (never credentials)."""
        ...

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        """Send the messages and return the whole reply; call ``on_delta`` with each streamed piece."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """Strings that must never reach a session file (API keys)."""
        ...


@dataclass
class ScriptCursor:
    """Position in a list of prepared replies (scripted and replay drivers)."""

    replies: list[str] = field(default_factory=list)
    index: int = 0

    def next(self, what: str) -> str:
        if self.index >= len(self.replies):
            raise EndpointError(f"{what} has no reply {self.index + 1} (it holds {len(self.replies)})")
        reply = self.replies[self.index]
        self.index += 1
        return reply


class StopRequested(Exception):
    """The person driving the session asked to stop (ends the session as 'stopped', not as an error)."""
