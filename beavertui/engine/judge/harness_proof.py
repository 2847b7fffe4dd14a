"""Proof that a task's own harness ran to its end: a verdict the candidate alone cannot produce.

A correctness run passes when the test command exits 0. A candidate is compiled into the harness binary, so
before this proof it could print ``PASS`` from a static constructor and call ``_exit(0)``: the harness's
``main`` never ran, and the run passed. Now every correctness run of a task carries a per-run random token
that only the harness's own return from ``main`` writes back:

1. A small library (``SOURCE``, built once with the host C compiler into beavertui's cache) is preloaded
   (``LD_PRELOAD``) into the test command's processes. It interposes ``__libc_start_main``, which ``_start``
   calls before any static constructor of the executable (the candidate's included) runs.
2. In a process whose executable lies in the attempt's work dir (the harness binary the task's build made),
   it takes the token from the environment at once, erases it there (the variable is removed and its bytes
   in the initial environment block, which ``/proc/self/environ`` shows, overwritten), opens the proof file,
   writes ``start PID``, and calls the real ``__libc_start_main`` with a ``main`` of its own that calls the
   harness's ``main`` and, when it *returns*, writes ``end PID TOKEN STATUS``.
3. After the run, the run passes only if every harness process that started ended by returning from
   ``main`` with the token (``check``). A process ended by ``_exit``/``exit``/``abort`` from a constructor or
   from inside ``main`` (before the harness's checks), or one that never saw the token, fails the proof.

What this does not stop (docs/security.md says it too): code inside the process can read the whole address
space, so a candidate written to find the library's memory and copy the token could forge the ``end`` line;
the static checks flag the ways to do so from source (``__libc_start_main``, ``/proc/self/mem``, ``dlsym``...).
Harnesses that are not an executable of the work dir (a Python driver) are not covered: the proof then
records that no harness process was seen.

Which tasks carry a proof is their family's to say (``Family.harness_proof``, engine/corpus/families/):
native tasks, and the release families whose harness is the testbench's own ``main`` built by nvcc into an
executable of the work dir, whose verdict is its exit status, and whose every testbench file ends a passing
run by returning from ``main`` (``exit`` only on failure paths). A run that did not exit 0 fails on its own; its proof is not held against it
(toolchain/verdict.py), so a harness that ends a failure with ``exit(1)`` keeps its own category.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.paths import cache_dir

#: Environment variables the preloaded library reads (and erases) in the harness process.
TOKEN_ENV = "BEAVER_PROOF"
FILE_ENV = "BEAVER_PROOF_FILE"
DIR_ENV = "BEAVER_PROOF_DIR"
#: The proof file's name in the work dir.
PROOF_FILE = ".beaver-proof"

SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static main_fn beaver_real_main;
static char beaver_token[80];
static int beaver_fd = -1;

static void beaver_say(const char *text) {
    if (beaver_fd >= 0) {
        ssize_t ignored = write(beaver_fd, text, strlen(text));
        (void)ignored;
    }
}

static void beaver_erase(const char *name) {
    char *value = getenv(name);
    if (value != NULL) {
        memset(value, 'x', strlen(value));
    }
    unsetenv(name);
}

static int beaver_main(int argc, char **argv, char **envp) {
    int status = beaver_real_main(argc, argv, envp);
    char line[160];
    snprintf(line, sizeof line, "end %d %s %d\n", (int)getpid(), beaver_token, status);
    beaver_say(line);
    memset(beaver_token, 0, sizeof beaver_token);
    return status;
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    const char *dir = getenv("BEAVER_PROOF_DIR");
    const char *token = getenv("BEAVER_PROOF");
    const char *file = getenv("BEAVER_PROOF_FILE");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t len = dir != NULL ? strlen(dir) : 0;
    if (n > 0 && dir != NULL && token != NULL && file != NULL) {
        exe[n] = '\0';
        if (strncmp(exe, dir, len) == 0 && exe[len] == '/') {
            snprintf(beaver_token, sizeof beaver_token, "%s", token);
            beaver_fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
            beaver_erase("BEAVER_PROOF");
            beaver_erase("BEAVER_PROOF_FILE");
            char line[64];
            snprintf(line, sizeof line, "start %d\n", (int)getpid());
            beaver_say(line);
            beaver_real_main = main;
            return real(beaver_main, argc, argv, init, fini, rtld_fini, stack_end);
        }
    }
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
"""


def _cache_dir() -> Path:
    return cache_dir() / "proof"


_LOCK = threading.Lock()
_BUILT: dict[Path, Path | None] = {}


def library(cache: Path | None = None) -> Path | None:
    """The preload library, built once per cache (None where no host C compiler is found)."""
    folder = cache or _cache_dir()
    with _LOCK:
        if folder not in _BUILT:
            _BUILT[folder] = _build(folder)
        return _BUILT[folder]


def _build(folder: Path) -> Path | None:
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
    target = folder / f"libbeaver_proof-{digest}.so"
    if target.is_file():
        return target
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = Path(tmp) / "proof.c"
        src.write_text(SOURCE)
        out = Path(tmp) / target.name
        done = subprocess.run(
            [cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(src), "-ldl"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            return None
        os.replace(out, target)
    return target


@dataclass(frozen=True)
class Proof:
    """One correctness run's token, proof file and the environment that carries them."""

    token: str
    file: Path
    env: dict[str, str]

    @classmethod
    def start(cls, work_dir: Path, env: dict[str, str], lib: Path) -> Proof:
        file = work_dir / PROOF_FILE
        with contextlib.suppress(FileNotFoundError):
            file.unlink()  # a file a candidate left behind proves nothing
        token = secrets.token_hex(16)
        preload = " ".join(x for x in (str(lib), env.get("LD_PRELOAD", "")) if x)
        extra = {
            "LD_PRELOAD": preload,
            TOKEN_ENV: token,
            FILE_ENV: str(file),
            DIR_ENV: str(work_dir.resolve()),
        }
        return cls(token, file, extra)

    def check(self) -> str:
        """``ran`` (every harness process returned from ``main`` with the token), ``not observed`` (no
        executable of the work dir ran), or ``skipped: ...`` saying which process did not."""
        try:
            text = self.file.read_text(encoding="utf-8", errors="replace")[: 1 << 20]
        except OSError:
            text = ""
        with contextlib.suppress(OSError):
            self.file.unlink()
        last: dict[str, list[str]] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("start", "end"):
                last[parts[1]] = parts
        if not last:
            return "not observed"
        for pid, parts in last.items():
            if parts[0] == "start":
                return f"skipped: harness process {pid} ended before its main returned"
            if len(parts) < 4 or not secrets.compare_digest(parts[2], self.token):
                return f"skipped: harness process {pid} wrote an end without the run's token"
        return "ran"
