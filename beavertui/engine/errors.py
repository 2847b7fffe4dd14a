"""Errors a user can act on. The CLI prints them as one line and exits 2; nothing else is caught there."""

from __future__ import annotations


class BeaverError(Exception):
    """A problem with the user's input or environment, explained in one line."""


class TaskError(BeaverError):
    """A task folder is malformed; the message names the file and the problem."""


class SessionFileError(BeaverError):
    """A session file is damaged or of an unknown format."""


class NoGpuError(BeaverError):
    """The operation needs an NVIDIA GPU and none is visible."""


class ToolchainError(BeaverError):
    """Building or running failed for a reason outside the candidate (GPU lost, disk full, no recording).

    The repair loop records it as an InfraError of ``source`` and ends the session with stop_reason 'error'.
    """

    def __init__(self, message: str, source: str = "toolchain") -> None:
        super().__init__(message)
        self.source = source
