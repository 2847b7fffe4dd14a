"""Opening input files that a user or an attacker chose: regular files only, bounded reads, one-line errors.

Every reader of user-named files goes through here, so a FIFO named ``*.jsonl`` cannot hang it, a link to
``/dev/zero`` cannot fill memory, a symbolic link loop or a file that is not UTF-8 is a BeaverError naming
the file, never a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from beavertui.engine.errors import BeaverError

#: The largest input file of another kind than a session (models file, script, recordings, side table).
MAX_INPUT_BYTES = 64 << 20


def why_oserror(exc: OSError) -> str:
    """The reason of an OSError in words (a symbolic link loop says so)."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "no such file"
    return exc.strerror or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def is_regular(path: str | Path) -> bool:
    """Whether ``path`` names a regular file (after links); False for loops, FIFOs and devices."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(
    path: str | Path, error: type[BeaverError] = BeaverError, what: str = "file"
) -> tuple[int, int]:
    """(file descriptor, size) of a regular file opened for reading; BeaverError for anything else.

    Opened non-blocking, so a FIFO is refused at once instead of waiting for a writer.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise error(f"{path}: no such {what}") from None
        if exc.errno == errno.EISDIR:
            raise error(f"{path}: is a folder, not a {what}") from None
        raise error(f"{path}: cannot read: {why_oserror(exc)}") from None
    except ValueError as exc:  # an embedded NUL in the name
        raise error(f"{path!r}: cannot read: {exc}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise error(f"{path}: is {_kind(st.st_mode)}, not a {what}")
    os.set_blocking(fd, True)
    return fd, st.st_size


def read_capped(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; BeaverError when larger."""
    fd, size = open_regular(path, BeaverError, what)
    with os.fdopen(fd, "rb") as fh:
        if size > limit:
            raise BeaverError(f"{path}: {size:,} bytes, larger than the {limit:,} bytes a {what} may have")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BeaverError(f"{path}: larger than the {limit:,} bytes a {what} may have")
    return data


def read_small_text(path: str | Path, limit: int, what: str = "file") -> str:
    """A regular file's text, strictly UTF-8, of at most ``limit`` bytes; BeaverError otherwise."""
    data = read_capped(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BeaverError(
            f"{path}: not UTF-8 text (byte {exc.start:,}: {data[exc.start : exc.start + 1]!r})"
        ) from None


def missing(path: str | Path, what: str) -> BeaverError:
    """The error for a path that is not a usable ``what``: absent, a link loop, a FIFO, a device."""
    if not os.path.lexists(path):
        return BeaverError(f"{path}: no such {what}")
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return BeaverError(f"{path}: cannot read: {why_oserror(exc)}")
    return BeaverError(f"{path}: is {_kind(mode)}, not a {what}")
