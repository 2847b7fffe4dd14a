"""The CUPTI injection library's kernel lock (beaver_cupti.c, BEAVER_KERNEL_LOCK): which CUDA calls it holds
and the lock it takes around them.

No GPU here, so no process runs under the library with the lock on. What can be checked without one is
checked on the library built from the shipped source, loaded with ctypes: the calls it chooses among the
real callback names of this toolkit's CUPTI (cuptiGetCallbackName, the names it chooses from at start),
and the flock(2) it takes and gives back, seen from another open file as another process would see it.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
from pathlib import Path

import pytest

from beavertui.engine.host.gpu import cuda_root
from beavertui.engine.timing import cupti

DRIVER, RUNTIME = 1, 2  # CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API


def _library(tmp_path: Path) -> ctypes.CDLL:
    try:
        lib = cupti.build_library(tmp_path)
    except Exception as exc:  # no toolkit with CUPTI on this machine
        pytest.skip(f"CUPTI library not buildable here: {exc}")
    so = ctypes.CDLL(str(lib))
    so.beaver_lock_wants.argtypes = [ctypes.c_char_p]
    so.beaver_lock_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return so


def _held(so: ctypes.CDLL, domain: int) -> tuple[set[str], set[str]]:
    """(the names the library holds, every name) among the toolkit's CUPTI callbacks of ``domain``."""
    root = cuda_root()
    assert root is not None
    paths = cupti.cupti_paths(root)
    assert paths is not None
    libcupti = ctypes.CDLL(str(sorted(paths[1].glob("libcupti.so*"))[0]))
    name_of = libcupti.cuptiGetCallbackName
    name_of.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
    every: set[str] = set()
    for cbid in range(1, 2048):
        name = ctypes.c_char_p()
        if name_of(domain, cbid, ctypes.byref(name)) == 0 and name.value:
            every.add(name.value.decode())
    return {n for n in every if so.beaver_lock_wants(n.encode())}, every


def test_the_lock_holds_every_launch_copy_and_fill_and_nothing_else(tmp_path: Path) -> None:
    so = _library(tmp_path)
    held, every = _held(so, DRIVER)
    launches = {
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
    }  # fmt: skip
    assert launches <= every and launches <= held
    assert {"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyAsync_ptsz", "cuMemsetD8_v2"} <= held
    # host work, allocation and synchronisation put nothing on the device to hold
    assert not {"cuLaunchHostFunc", "cuCtxSynchronize", "cuMemAlloc_v2", "cuStreamSynchronize"} & held
    assert all(n.startswith(("cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset")) for n in held)
    rt_held, _ = _held(so, RUNTIME)
    assert {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaGraphLaunch_v10000"} <= rt_held
    assert not {n for n in rt_held if "HostFunc" in n or "Synchronize" in n or "Malloc" in n}


def _blocked(path: Path, op: int) -> bool:
    """Whether another open file of ``path`` (as another process has) cannot take ``op`` now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing gives back what it took
    return False


def test_ex_excludes_every_other_holder_sh_only_ex_and_both_give_it_back(tmp_path: Path) -> None:
    so = _library(tmp_path)
    lock = tmp_path / "gpu.lock"
    assert so.beaver_lock_open(str(lock).encode(), b"ex") == 0 and lock.is_file()
    so.beaver_lock_take()
    assert _blocked(lock, fcntl.LOCK_SH) and _blocked(lock, fcntl.LOCK_EX)
    so.beaver_lock_release()
    assert not _blocked(lock, fcntl.LOCK_EX)
    assert so.beaver_lock_open(str(lock).encode(), b"sh") == 0
    so.beaver_lock_take()
    assert not _blocked(lock, fcntl.LOCK_SH) and _blocked(lock, fcntl.LOCK_EX)
    so.beaver_lock_release()
    assert not _blocked(lock, fcntl.LOCK_EX)
    # an unset mode is ex; any other word is refused
    assert so.beaver_lock_open(str(lock).encode(), None) == 0
    so.beaver_lock_take()
    assert _blocked(lock, fcntl.LOCK_SH)
    so.beaver_lock_release()
    assert so.beaver_lock_open(str(lock).encode(), b"exclusive") == -1
    assert so.beaver_lock_open(str(tmp_path / "no" / "such.lock").encode(), b"ex") == -1


def test_a_runs_phases_say_how_long_it_waited_for_the_lock_and_held_it() -> None:
    """The L line the library writes at exit under the lock (calls, ns waiting, ns holding) joins the run's
    phases; a file without it (the lock unset) adds nothing."""
    from beavertui.engine.timing.parked import Run

    s = 1_000_000_000
    marks = f"M\tinit\t{1 * s}\nM\tgate\t{int(1.1 * s)}\nM\tgo\t{2 * s}\n"
    run = Run(
        who="candidate", stage=None, folder=Path("/nonexistent"), gated=True, started=0.5, let_go_at=2.0
    )  # type: ignore[arg-type]
    locked = run.phases(marks + f"L\t12\t{int(0.75 * s)}\t{int(0.05 * s)}\nM\texit\t{9 * s}\n", ended=9.25)
    assert (locked["lock_calls"], locked["lock_wait_s"], locked["lock_held_s"]) == (12, 0.75, 0.05)
    plain = run.phases(marks + f"M\texit\t{9 * s}\n", ended=9.25)
    assert not {"lock_calls", "lock_wait_s", "lock_held_s"} & set(plain)
    assert cupti.lock_counts("L\tx\t1\t2\nL\t3\t4\t5\n") == (3, 4, 5)  # a torn line is skipped
    assert cupti.lock_counts(marks) is None
