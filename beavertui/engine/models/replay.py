"""``replay:SESSION``: re-send a recorded session's replies, to re-score an old trajectory elsewhere.

The replies of the recorded session are returned in iteration order whatever the new feedback says, so a
trajectory recorded on one GPU can be rebuilt and re-timed on another. Token counts are the recorded ones
(they describe the reply); latency is the real, near-zero, time of the replay. This module must not
change or re-interpret the recorded replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from beavertui.engine.errors import SessionFileError
from beavertui.engine.models.base import Completion, DeltaCallback, EndpointError
from beavertui.engine.session.events import Message, ModelInfo, Reply
from beavertui.engine.session.store import read_session


class ReplayModel:
    """The replies of one recorded session, in iteration order."""

    def __init__(self, session_path: str | Path) -> None:
        self.path = Path(session_path)
        header, events, problem = read_session(self.path)
        if header is None:
            raise SessionFileError(f"{self.path}: {problem}")
        self.header = header
        by_iteration: dict[int, Reply] = {}
        for e in events:
            if isinstance(e, Reply):
                by_iteration[e.iteration] = e  # a resumed iteration keeps its last reply
        self.replies = [by_iteration[i] for i in sorted(by_iteration)]
        if not self.replies:
            raise SessionFileError(f"{self.path}: holds no model replies to replay")
        self.calls = 0

    def info(self) -> ModelInfo:
        original = self.header.model
        return ModelInfo(
            name=f"replay:{self.path}",
            kind="replay",
            params={"original_model": original.name, "original_session": self.header.session_id},
        )

    def secrets(self) -> tuple[str, ...]:
        return ()

    def resume_at(self, calls: int) -> None:
        """Continue a resumed session: the first ``calls`` replies were already used."""
        self.calls = calls

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        if self.calls >= len(self.replies):
            raise EndpointError(
                f"the replayed session has no reply {self.calls + 1} (it holds {len(self.replies)})"
            )
        reply = self.replies[self.calls]
        self.calls += 1
        if on_delta is not None:
            on_delta(reply.content)
        return Completion(
            content=reply.content,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            finish_reason=reply.finish_reason,
        )
