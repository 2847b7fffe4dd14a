"""Reading files a user or an attacker chose, and writing every output file whole or not at all.

Every reader of user-named files goes through here, so a FIFO named ``*.jsonl`` cannot hang it, a link to
``/dev/zero`` cannot fill memory, a symbolic link loop or a file that is not UTF-8 is a BeaverError naming
the file, never a traceback.

Every file beavertui writes whole (``run.json``, exports, ``metrics`` outputs, caches, build markers...)
is written by ``atomic_file``/``write_atomic``: into a temporary file of the same folder, flushed to the
disk, then renamed over the target, so a write that fails midway (a full disk, a serializer raising, a
kill) leaves the old file as it was and no partial one. Files that grow by lines (recordings) append one
whole line or none (``append_line``). Session files are appended by their own writer, which has its own
recovery (engine/session/store.py). tests/engine/test_atomic_writes.py checks, by reading the package's
source, that no other code writes a file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from beavertui.engine.errors import BeaverError

#: The largest input file of another kind than a session (models file, script, recordings, side table).
MAX_INPUT_BYTES = 64 << 20


def slug(text: str) -> str:
    """A file-system-safe name: what a run folder's file and folder names are made of (a session's task,
    model and run id), so a reader can tell which task a path stands for."""
    s = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._")
    return s[:120] or "_"


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


def parse_json(text: str | bytes) -> Any:
    """``json.loads``, with JSON nested too deeply for the parser (its RecursionError, a traceback past every
    reader's ``except ValueError``) raised as the ``json.JSONDecodeError`` any text that is not JSON raises."""
    try:
        return json.loads(text)
    except RecursionError:
        shown = text if isinstance(text, str) else ""
        raise json.JSONDecodeError("nested too deeply", shown, 0) from None


def inside(root: Path, rel: object) -> Path | None:
    """``root / rel`` when ``rel`` is a non-empty relative path that stays inside ``root`` once links are
    followed; None otherwise. A record of a run folder names its files this way, and can never make a reader
    take one from outside the folder (``../``, an absolute path, a link out)."""
    if not isinstance(rel, str) or not rel:
        return None
    p = (root / rel).resolve()
    return p if p.is_relative_to(root.resolve()) else None


#: The deepest folder below its root that a walk enters (a batch run is 3 folders deep: model, protocol, and
#: the sessions of a tree of runs one more; a task folder a few). Deeper folders are not walked, and said.
MAX_WALK_DEPTH = 64


def walk(
    root: str | Path,
    *,
    left_out: list[str] | None = None,
    max_depth: int = MAX_WALK_DEPTH,
    enter: Callable[[Path], bool] | None = None,
) -> Iterator[Path]:
    """Every entry under the folder ``root`` that is not a folder, depth first, each folder's in name order.

    The one walk of a folder tree in beavertui (tests/engine/test_one_walk.py holds every other module to
    it): iterative, so a deep tree cannot exhaust the stack as a recursive walk (``rglob``, ``os.walk`` on
    Python 3.11) does; it goes at most ``max_depth`` folders below ``root``. Symbolic links are listed, never
    followed (a link to a folder is an entry like a file); FIFOs, devices and dangling links are listed too:
    their readers say what they are. A folder it cannot read, or deeper than ``max_depth``, is not walked and
    is added to ``left_out`` as one line naming it and why. ``enter`` (given a folder) says whether to walk
    it at all; a folder it refuses is skipped without a word.
    """
    root = Path(root)
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if left_out is not None:
                left_out.append(f"{folder}: folder not read: {why_oserror(exc)}")
            continue
        subfolders = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            path = Path(entry.path)
            if not is_dir:
                yield path
            elif enter is not None and not enter(path):
                continue
            elif depth >= max_depth:
                if left_out is not None:
                    left_out.append(f"{path}: folder not read: more than {max_depth} folders below {root}")
            else:
                subfolders.append((path, depth + 1))
        stack.extend(reversed(subfolders))


def _empty_of_files(folder: int) -> list[str]:
    """Unlink every entry of an open folder that is not a folder (links too, never followed); the names of
    its subfolders."""
    subfolders = []
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=folder)
    return subfolders


def remove_tree(path: str | Path) -> bool:
    """Remove a folder and everything under it, as ``shutil.rmtree(path, ignore_errors=True)`` does, but
    without recursion: a work dir a candidate filled with a tree deeper than the recursion limit (or than
    a path may be long) is removed too, where rmtree raised RecursionError. Depth first, one folder open at
    a time, each entered and left by a descriptor (``..``), so no path is ever spelled; links are removed,
    never followed. What cannot be removed stays; returns whether ``path`` is gone.
    """
    path = Path(path)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return True
    except OSError:  # a link or a file in its place: removed, not followed
        with contextlib.suppress(OSError):
            os.unlink(path)
        return not os.path.lexists(path)
    stack: list[tuple[str, list[str]]] = [("", _empty_of_files(fd))]  # (name in its parent, subfolders left)
    try:
        while stack:
            name, left = stack[-1]
            if left:
                child = left.pop()
                try:
                    inner = os.open(child, flags, dir_fd=fd)
                except OSError:
                    continue  # gone, or not to be entered: stays, and so does its parent
                os.close(fd)
                fd = inner
                stack.append((child, _empty_of_files(fd)))
                continue
            stack.pop()
            if not stack:
                break
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)
    except OSError:
        pass  # a parent that cannot be reopened: what is left stays
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    return not os.path.lexists(path)


def missing(path: str | Path, what: str) -> BeaverError:
    """The error for a path that is not a usable ``what``: absent, a link loop, a FIFO, a device."""
    if not os.path.lexists(path):
        return BeaverError(f"{path}: no such {what}")
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return BeaverError(f"{path}: cannot read: {why_oserror(exc)}")
    return BeaverError(f"{path}: is {_kind(mode)}, not a {what}")


#: Suffix of the temporary files ``atomic_file`` writes (a killed run's leftovers are ``.NAME.*.partial``;
#: batch/rundir.py removes them from a run directory on resume). No reader takes such a name for its own.
PARTIAL_SUFFIX = ".partial"


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot sync a folder; the rename still holds
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@overload
def atomic_file(
    path: str | Path, *, binary: Literal[False] = ..., newline: str | None = ..., durable: bool = ...
) -> contextlib.AbstractContextManager[TextIO]: ...
@overload
def atomic_file(
    path: str | Path, *, binary: Literal[True], newline: str | None = ..., durable: bool = ...
) -> contextlib.AbstractContextManager[BinaryIO]: ...
def atomic_file(
    path: str | Path, *, binary: bool = False, newline: str | None = None, durable: bool = True
) -> contextlib.AbstractContextManager[IO[Any]]:
    """A file to write that replaces ``path`` whole when the ``with`` block ends without an exception.

    The content goes to ``.NAME.RANDOM.partial`` in the same folder (created with the mode a new file would
    get, or the target's own mode when it exists), is flushed and, when ``durable``, synced to the disk
    before ``os.replace`` puts it in place (and the folder synced after). An exception anywhere (the disk
    full, the caller's serializer raising, the rename refused) removes the temporary file and is raised
    again: the target is as it was before. A symbolic link at ``path`` is written through (its target
    replaced), as a plain write would. A target that is no regular file (``/dev/stdout``, ``/dev/null``, a
    FIFO) is a stream: written in place, never replaced. Text is UTF-8.
    """
    return _atomic_file(Path(path), binary, newline, durable)


@contextlib.contextmanager
def _atomic_file(path: Path, binary: bool, newline: str | None, durable: bool) -> Iterator[IO[Any]]:
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        special = False  # absent (or unreadable): created, or the error raised below
    if special:  # /dev/stdout, /dev/null, a FIFO: a stream, never a file to replace
        stream: IO[Any] = (
            open(path, "wb") if binary else open(path, "w", encoding="utf-8", newline=newline)  # noqa: SIM115
        )
        with stream:
            yield stream
        return
    if path.is_symlink():
        path = path.resolve()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}{PARTIAL_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666)  # the umask applies, as to any new file
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
        if binary:
            fh: IO[Any] = os.fdopen(fd, "wb")
        else:
            fh = os.fdopen(fd, "w", encoding="utf-8", newline=newline)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        with fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_folder(path.parent)


def write_atomic(path: str | Path, data: str | bytes, *, durable: bool = True) -> None:
    """Replace ``path`` by ``data`` (text as UTF-8) whole, or leave it as it was (``atomic_file``)."""
    if isinstance(data, bytes):
        with atomic_file(path, binary=True, durable=durable) as fb:
            fb.write(data)
    else:
        with atomic_file(path, durable=durable) as ft:
            ft.write(data)


def append_line(path: str | Path, line: str) -> None:
    """Append one whole line (a newline added) to ``path``, or nothing.

    Under an exclusive lock of the file, so that writers of several processes never interleave: a tail a
    killed writer left without its newline is cut first (that record is lost, the file stays readable);
    a write that fails midway (a full disk) is cut back, and the error raised.
    """
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
            if not tail.endswith(b"\n"):
                start = size - len(tail)  # where the tail read begins
                cut = tail.rfind(b"\n")
                if cut >= 0 or start == 0:
                    size = start + cut + 1  # after the last whole line (0: the file held none)
                    os.ftruncate(fd, size)
                else:  # a torn line longer than the tail read: ended, so it holds no later record
                    data = b"\n" + data
        try:
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], size + done)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
