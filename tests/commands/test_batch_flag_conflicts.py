"""Batch flags that ask for opposite things are refused in one line before anything runs.

Before: ``--no-cache --cache DIR``, ``--no-reply-cache --reply-cache DIR``, ``--no-reply-cache
--reply-cache-sampled`` each ran with one of the two dropped without a word, and ``--address`` without
``--executor ray`` was ignored (the batch ran here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_in_process import run_cli


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--no-cache", "--cache", "c"), "--no-cache and --cache ask for no compile cache and one: give one of them"),
        (("--reply-cache", "r", "--no-reply-cache"),
         "--no-reply-cache and --reply-cache ask for no reply cache and one: give one of them"),
        (("--no-reply-cache", "--reply-cache-sampled"),
         "--no-reply-cache and --reply-cache-sampled ask for no reply cache and one: give one of them"),
        (("--address", "ray://head:10001"), "--address names a Ray cluster: add --executor ray, or drop --address"),
        (("--pause-for-timing", "all", "--no-pause-for-timing"),
         "--pause-for-timing all and --no-pause-for-timing ask for runs stopped for a timing stage and none: "
         "give one of them"),
        (("--no-pause-for-timing", "--pause-for-timing", "runs"),
         "--pause-for-timing runs and --no-pause-for-timing ask for runs stopped for a timing stage and none: "
         "give one of them"),
    ],
    ids=["cache", "reply-cache", "reply-cache-sampled", "address", "pause-all", "pause-runs"],
)  # fmt: skip
def test_opposite_batch_flags_are_refused(tmp_path: Path, flags: tuple[str, ...], says: str) -> None:
    p = run_cli("batch", "--demo", "--run-id", "r", "--sessions-dir", tmp_path, *flags, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-400:])
    assert p.stderr == f"beavertui: {says}\n"
    assert not (tmp_path / "r").exists()


def test_each_of_them_alone_runs(tmp_path: Path) -> None:
    p = run_cli("batch", "--demo", "--dry-run", "--no-cache", "--no-reply-cache", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    ("flags", "pause"),
    [((), "runs"), (("--no-pause-for-timing",), "none"), (("--pause-for-timing", "all"), "all"),
     (("--pause-for-timing", "none", "--no-pause-for-timing"), "none")],
)  # fmt: skip
def test_what_a_timing_stage_stops_is_what_the_flags_say(flags: tuple[str, ...], pause: str) -> None:
    """The pause setting each flag (or none, or an agreeing pair) hands the batch is as before."""
    from beavertui.cli import build_parser
    from beavertui.commands.batch import options_of

    args = build_parser().parse_args(["batch", "--demo", *flags])
    assert options_of(args).pause_for_timing == pause


@pytest.mark.parametrize(
    "flags",
    [("--gpus", "0"), ("--gpu-share", "2"), ("--pause-for-timing", "all"), ("--no-pause-for-timing",),
     ("--builds-in-timing", "stop")],
    ids=["gpus", "gpu-share", "pause", "no-pause", "builds"],
)  # fmt: skip
def test_the_gpu_pool_flags_are_refused_with_ray(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Each set this machine's GPU pool, which a Ray batch does not use: they were taken and did nothing."""
    p = run_cli(
        "batch",
        "--demo",
        "--executor",
        "ray",
        "--run-id",
        "r",
        "--sessions-dir",
        tmp_path,
        *flags,
        cwd=tmp_path,
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-400:])
    assert p.stderr == (
        f"beavertui: {flags[0]} sets this machine's GPU pool, which the Ray executor does not use (each session "
        f"holds one GPU of a worker alone): drop {flags[0]}, or run with --executor local\n"
    )
    assert not (tmp_path / "r").exists()


def test_start_until_with_ray_is_refused_before_the_run_is_written(tmp_path: Path) -> None:
    p = run_cli("batch", "--demo", "--executor", "ray", "--start-until", "60", "--run-id", "r", "--sessions-dir", tmp_path,
                cwd=tmp_path)  # fmt: skip
    assert p.returncode == 2
    assert (
        p.stderr
        == "beavertui: --start-until works with the local executor; Ray schedules its sessions itself\n"
    )
    assert not (tmp_path / "r").exists()
