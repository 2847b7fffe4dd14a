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


class PreflightError(BeaverError):
    """A check made before anything is written failed (key, endpoint, GPU, toolchain): exit status 2."""


#: Exit statuses of every command (README "Exit status"; each ``--help`` ends with them).
EXIT_OK = 0
"""Success: the session repaired its task, the batch evaluated every session, the command did its work."""
EXIT_MODEL_FAILED = 1
"""The model failed: the session ended without a repair (the candidate's fault, not the machine's)."""
EXIT_BAD_INPUT = 2
"""Bad input or a failed preflight; nothing was written."""
EXIT_INFRA = 3
"""Infrastructure: the endpoint, the GPU or the toolchain failed, so no verdict could be given."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C, stopped from the screen, or a batch's --start-until window closed): --resume goes on."""

EXIT_STATUS_HELP = (
    "exit status: 0 success; 1 the model failed (no repair); 2 bad input or a failed preflight (nothing "
    "written); 3 infrastructure (endpoint, GPU, toolchain); 130 interrupted."
)


def session_exit_status(success: bool | None, stop_reason: str | None) -> int:
    """The exit status of a command that ran one session, from how the session ended (None: it never did)."""
    if success:
        return EXIT_OK
    if stop_reason == "error":
        return EXIT_INFRA
    if stop_reason == "stopped":
        return EXIT_INTERRUPTED
    if stop_reason is None:
        return EXIT_INFRA
    return EXIT_MODEL_FAILED
