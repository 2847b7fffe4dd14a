"""A person as the model: the candidate file is edited by hand and each save is one attempt.

With an editor command (``$EDITOR``) the file is opened for each attempt and the attempt starts when the
editor exits; without one, the driver waits (watchfiles) for the next save that changes the file. The
latest feedback is written beside the file (``<file>.feedback.md``) for the person to read. This module
must not build prompts or judge code.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import write_atomic
from beavertui.engine.models.base import Completion, DeltaCallback, StopRequested
from beavertui.engine.session.events import Message, ModelInfo


class HumanModel:
    """Each save of ``path`` (or each editor exit) is one reply."""

    def __init__(
        self,
        path: str | Path,
        *,
        initial: str = "",
        editor: str | None = None,
        stop: threading.Event | None = None,
        wait_timeout_s: float | None = None,
        poll_ms: int = 300,
    ) -> None:
        self.path = Path(path)
        self.editor = editor
        self.stop = stop or threading.Event()
        self.wait_timeout_s = wait_timeout_s
        self.poll_ms = poll_ms
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            write_atomic(self.path, initial)
        self._last = self.path.read_text(encoding="utf-8", errors="replace")
        self.feedback_path = self.path.with_name(self.path.name + ".feedback.md")

    def info(self) -> ModelInfo:
        return ModelInfo(
            name="human",
            kind="human",
            params={"file": str(self.path), "editor": self.editor or "save to submit"},
        )

    def secrets(self) -> tuple[str, ...]:
        return ()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        if messages:
            write_atomic(self.feedback_path, messages[-1].content)
        start = time.monotonic()
        code = self._edit() if self.editor else self._wait_for_save()
        self._last = code
        if on_delta is not None:
            on_delta(code)
        return Completion(content=code, latency_s=time.monotonic() - start, finish_reason="saved", code=code)

    def _edit(self) -> str:
        assert self.editor is not None
        try:
            subprocess.run([*shlex.split(self.editor), str(self.path)], check=False)
        except FileNotFoundError:
            raise BeaverError(f"editor not found: {self.editor}") from None
        return self.path.read_text(encoding="utf-8", errors="replace")

    def _wait_for_save(self) -> str:
        import watchfiles

        deadline = None if self.wait_timeout_s is None else time.monotonic() + self.wait_timeout_s
        seen: str | None = None
        for _ in watchfiles.watch(
            self.path.parent,
            stop_event=self.stop,
            rust_timeout=self.poll_ms,
            yield_on_timeout=True,
            debounce=100,
            recursive=False,
        ):
            if self.path.exists():
                text = self.path.read_text(encoding="utf-8", errors="replace")
                if text == self._last or not text.strip():
                    seen = None  # unchanged, or emptied: an editor saving in place truncates first
                elif text == seen:
                    return text
                else:
                    # a read while the editor writes sees part of the save: a save counts once it reads the
                    # same on the next look
                    seen = text
            if deadline is not None and time.monotonic() > deadline:
                raise StopRequested(f"no save of {self.path} within {self.wait_timeout_s:g} s")
        raise StopRequested("stopped while waiting for a save")
