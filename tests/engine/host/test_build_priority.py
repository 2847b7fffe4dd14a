"""Build stages at a lower CPU priority: the niceness and CPU set the sandbox gives a command, the build
stage's use of them (runs and timing stages keep the caller's), and the settings' checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import BeaverError
from beavertui.engine.host import sandbox
from beavertui.engine.stage import stages

DATA = Path(__file__).parents[2] / "data"
#: The command's niceness and allowed CPUs, as the kernel has them for the process that prints them.
PROBE = "cut -d' ' -f19 /proc/self/stat; grep Cpus_allowed_list /proc/self/status"


def _probe(log: str) -> tuple[int, str]:
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return int(lines[0]), lines[1].split(":", 1)[1].strip()


def _own() -> tuple[int, str]:
    return os.getpriority(os.PRIO_PROCESS, 0), Path("/proc/self/status").read_text().split(
        "Cpus_allowed_list:"
    )[1].split()[0]


def test_a_command_runs_at_the_niceness_and_on_the_cpus_asked(tmp_path: Path) -> None:
    base_nice, base_cpus = _own()
    cpu = min(os.sched_getaffinity(0))
    out = sandbox.run(PROBE, tmp_path, dict(os.environ), 10.0, sandbox.Limits(nice=7, cpus=str(cpu)))
    assert out.rc == 0, out.log
    assert _probe(out.log) == (min(19, base_nice + 7), str(cpu))
    assert "niceness +7" in out.sandbox and f"CPUs {cpu}" in out.sandbox
    plain = sandbox.run(PROBE, tmp_path, dict(os.environ), 10.0)
    assert _probe(plain.log) == (base_nice, base_cpus)
    assert "niceness" not in plain.sandbox


def test_children_of_the_command_keep_its_priority(tmp_path: Path) -> None:
    base_nice, _ = _own()
    out = sandbox.run(f'bash -c "{PROBE}"', tmp_path, dict(os.environ), 10.0, sandbox.Limits(nice=5))
    assert _probe(out.log)[0] == min(19, base_nice + 5)


def test_only_the_build_stage_takes_the_build_priority(tmp_path: Path) -> None:
    base_nice, base_cpus = _own()
    cpu = min(os.sched_getaffinity(0))
    task = load_corpus(DATA / "native").get("vec_scale")
    cfg = stages.StageConfig(base_dir=tmp_path, build_nice=9, build_cpus=str(cpu))
    with stages.workdir(task, "// candidate\n", cfg) as work:
        build = stages.run_stage(work, "build", PROBE, 10.0, cfg, adapt=False)
        run = stages.run_stage(work, "run", PROBE, 10.0, cfg, adapt=False)
        bench = stages.run_stage(work, "benchmark", PROBE, 10.0, cfg, adapt=False)
    assert _probe(build.log) == (min(19, base_nice + 9), str(cpu))
    assert "niceness +9" in build.sandbox
    assert _probe(run.log) == (base_nice, base_cpus)
    assert _probe(bench.log) == (base_nice, base_cpus)


def test_timing_stages_run_on_the_timing_cpus_started_in_turn_or_ahead(tmp_path: Path) -> None:
    base_nice, base_cpus = _own()
    cpu = max(os.sched_getaffinity(0))
    task = load_corpus(DATA / "native").get("vec_scale")
    cfg = stages.StageConfig(base_dir=tmp_path, timing_cpus=str(cpu))
    with stages.workdir(task, "// candidate\n", cfg) as work:
        bench = stages.run_stage(work, "benchmark", PROBE, 10.0, cfg, adapt=False)
        ahead = stages.start_stage(work, PROBE, 10.0, cfg, adapt=False, stage="benchmark").finish()
        build = stages.run_stage(work, "build", PROBE, 10.0, cfg, adapt=False)
        run = stages.start_stage(work, PROBE, 10.0, cfg, adapt=False).finish()
    assert _probe(bench.log) == _probe(ahead.log) == (base_nice, str(cpu))
    assert f"CPUs {cpu}" in bench.sandbox
    assert _probe(build.log) == _probe(run.log) == (base_nice, base_cpus)


def test_the_settings_are_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three settings are read where a command starts (service/environment.py), checked, and reach the
    stages through the local toolchain's configuration; the engine's own defaults read nothing."""
    from beavertui.engine.toolchain.local import LocalToolchain
    from beavertui.service.environment import BUILD_CPUS_ENV, BUILD_NICE_ENV, TIMING_CPUS_ENV, local_config

    for var in (BUILD_NICE_ENV, BUILD_CPUS_ENV, TIMING_CPUS_ENV):
        monkeypatch.delenv(var, raising=False)
    cfg = LocalToolchain(local_config()).stage_config()
    assert (cfg.build_nice, cfg.build_cpus, cfg.timing_cpus) == (stages.BUILD_NICE, None, None)
    monkeypatch.setenv(BUILD_NICE_ENV, "0")
    assert local_config().build_nice == 0
    for bad in ("-1", "20", "ten", "1.5", "\u00b2"):  # a superscript two was a traceback
        monkeypatch.setenv(BUILD_NICE_ENV, bad)
        with pytest.raises(BeaverError, match=BUILD_NICE_ENV):
            local_config()
    monkeypatch.setenv(BUILD_NICE_ENV, "3")
    cpu = min(os.sched_getaffinity(0))
    monkeypatch.setenv(BUILD_CPUS_ENV, f"{cpu}-{cpu}")
    monkeypatch.setenv(TIMING_CPUS_ENV, str(cpu))
    cfg = LocalToolchain(local_config()).stage_config()
    assert (cfg.build_nice, cfg.build_cpus, cfg.timing_cpus) == (3, f"{cpu}-{cpu}", str(cpu))
    assert stages.StageConfig().build_nice == stages.BUILD_NICE  # the engine's default reads nothing
    for var in (BUILD_CPUS_ENV, TIMING_CPUS_ENV):
        for bad in ("a", "3-1", "1,", f"{max(os.sched_getaffinity(0)) + 1}"):
            monkeypatch.setenv(var, bad)
            with pytest.raises(BeaverError, match=var):
                local_config()
        monkeypatch.setenv(var, str(cpu))


def test_cpu_lists_are_parsed() -> None:
    assert stages.parse_cpus("0,2-4, 7") == {0, 2, 3, 4, 7}
    for bad in ("", "-", "2-", "x", "4-2", "\u00b2", "8192", "0-100000000000"):  # the last held 10^11 numbers
        with pytest.raises(ValueError):
            stages.parse_cpus(bad)
    assert stages.parse_cpus(f"{stages.MAX_CPU}") == {stages.MAX_CPU}
