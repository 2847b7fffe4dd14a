"""CI checks of the bundled corpus that need nvcc but no GPU (issue 5, item 5).

For every task in corpus/: the metadata validates (fields, types, id, hash, label, files, recorded error
log); every reference and every testbench source compiles with the task's own build flags plus ``-c``;
every build-stage broken start (buildability, integration, environment_dependency) really fails to build,
and the engine's classifier puts the real nvcc output in the labelled category; the
recorded error log of every task classifies as its label. Identical compiles (same flags, same source, same headers) run once;
they start with the test session, one at a time at low priority while the tests before this module run, and
what is left runs two at a time when the first test here needs it (tests/prebuild.py). Nothing here runs a
kernel.

Testbench sources that are nothing but one ``#include`` of a shared header and one
``int main(int argc, char** argv)`` definition (``merge_shape``), with the same flags and the same header,
compile as one translation unit: the header once, then each source as it is with its ``main`` renamed. Such a
source declares nothing else, so none can use what another declares, and the unit compiles only if each of
them would compile alone; if the unit fails, each of its sources is compiled alone, so a failing testbench is
reported by its own task with its own nvcc output.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.judge.categories import BUILD_STAGE, NATIVE_LABELS, label_agrees
from beavertui.engine.judge.classify import classify
from tests.prebuild import ENV, Prebuild

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "corpus"
COMMON = CORPUS / "_common"
#: Tasks in corpus/ when this file was last updated; the corpus may grow, never shrink.
MIN_TASKS = 41
TASK_IDS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("_"))
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".c")
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def meta(task: str, name: str) -> dict[str, Any]:
    data = json.loads((CORPUS / task / name).read_text())
    assert isinstance(data, dict), f"{task}/{name} is not a JSON object"
    return data


def broken_path(task: str) -> Path:
    return CORPUS / task / f"broken_start{Path(meta(task, 'input.json')['solution_file']).suffix}"


def reference_path(task: str) -> Path:
    return CORPUS / task / f"reference{Path(meta(task, 'input.json')['solution_file']).suffix}"


# ------------------------------------------------------------------------------------------ metadata


def test_corpus_has_at_least_the_known_tasks() -> None:
    assert len(TASK_IDS) >= MIN_TASKS, f"{len(TASK_IDS)} tasks in corpus/, expected at least {MIN_TASKS}"
    families = {meta(t, "instance.json")["task_family"] for t in TASK_IDS}
    assert len(families) >= 8, sorted(families)


def test_engine_loader_reads_every_task() -> None:
    load = load_corpus(CORPUS)
    assert not load.problems, load.problems
    assert sorted(t.id for t in load.tasks) == TASK_IDS


INSTANCE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "task_family": (str,),
    "error_category": (str,),
    "difficulty": (str,),
    "upstream_library": (str, type(None)),
    "broken_start_provenance": (str,),
    "source_model": (str, type(None)),
    "broken_start_hash": (str,),
}
INPUT_TYPES: dict[str, tuple[type, ...]] = {
    "task_id": (str,),
    "schema_version": (int,),
    "build_command": (str,),
    "test_command": (str,),
    "benchmark_command": (str,),
    "solution_file": (str,),
    "tags": (list,),
    "hardware": (dict,),
    "timeouts": (dict,),
    "work": (dict,),
}


@pytest.mark.parametrize("task", TASK_IDS)
def test_instance_json(task: str) -> None:
    inst = meta(task, "instance.json")
    for key, types in INSTANCE_TYPES.items():
        assert key in inst, f"{task}/instance.json lacks {key}"
        assert isinstance(inst[key], types), f"{task}/instance.json: {key} is {type(inst[key]).__name__}"
    assert inst["id"] == task
    assert re.fullmatch(r"[a-z][a-z0-9_]*_\d{2}", task), f"task id {task!r} is not <family>_<NN>"
    assert inst["task_family"] == task[:-3]
    assert inst["error_category"] in NATIVE_LABELS, inst["error_category"]
    assert inst["difficulty"] in ("easy", "medium", "hard")
    assert inst["broken_start_provenance"].strip()
    digest = hashlib.sha256(broken_path(task).read_bytes()).hexdigest()[:16]
    assert inst["broken_start_hash"] == digest, (
        f"{task}: broken_start_hash is stale (file hashes to {digest})"
    )


@pytest.mark.parametrize("task", TASK_IDS)
def test_input_json(task: str) -> None:
    inp = meta(task, "input.json")
    for key, types in INPUT_TYPES.items():
        assert key in inp, f"{task}/input.json lacks {key}"
        assert isinstance(inp[key], types), f"{task}/input.json: {key} is {type(inp[key]).__name__}"
    assert inp["task_id"] == task
    assert inp["schema_version"] == 2
    build = shlex.split(inp["build_command"])
    assert build and build[0] == "nvcc", inp["build_command"]
    assert not [a for a in build if re.fullmatch(r"-[lL].*", a) and a != "-lineinfo"], (
        "extra link flags are not allowed"
    )
    assert inp["solution_file"] in build, "the build command does not compile the solution file"
    assert "--bench" in inp["benchmark_command"]
    assert inp["tags"] and all(isinstance(t, str) and t for t in inp["tags"])
    hw = inp["hardware"]
    assert isinstance(hw.get("min_sm"), int) and hw["min_sm"] >= 70
    assert isinstance(hw.get("required_features"), list)
    assert all(isinstance(f, str) for f in hw["required_features"])
    limits = inp["timeouts"]
    for key in ("build_s", "run_s"):
        assert isinstance(limits.get(key), int | float) and limits[key] > 0, f"timeouts.{key}"
    if meta(task, "instance.json")["error_category"] == "timeout":
        assert limits["run_s"] <= 15, "a timeout-labelled task must have a short run limit"
    work = inp["work"]
    assert isinstance(work.get("flop"), int | float) and work["flop"] >= 0
    assert isinstance(work.get("bytes"), int | float) and work["bytes"] > 0


@pytest.mark.parametrize("task", TASK_IDS)
def test_required_files(task: str) -> None:
    d = CORPUS / task
    for name in ("instance.json", "input.json", "prompt.txt", "error_log.txt"):
        assert (d / name).is_file(), f"{task} lacks {name}"
        assert (d / name).read_text().strip(), f"{task}/{name} is empty"
    assert broken_path(task).is_file(), f"{task} lacks {broken_path(task).name}"
    assert reference_path(task).is_file(), f"{task} lacks {reference_path(task).name}"
    inp = meta(task, "input.json")
    sources = [a for a in shlex.split(inp["build_command"]) if a.endswith(SOURCE_SUFFIXES)]
    for src in sources:
        if src != inp["solution_file"]:
            assert (d / "testbench" / src).is_file(), (
                f"{task}: testbench/{src} (named in build_command) is missing"
            )
    assert not (d / "testbench" / inp["solution_file"]).exists(), "the testbench must not ship a solution"


# ------------------------------------------------------------------------------------------ recorded logs

LOG_STAGE = re.compile(
    r"^\$ (?P<cmd>[^\n]*)\n(?P<log>.*?)^\[(?:exit status (?P<rc>-?\d+)|beavertui: killed by the time limit[^\]]*)\]$",
    re.M | re.S,
)


def parse_error_log(text: str) -> dict[str, Any]:
    """The build and run stages of a log written by corpus/_tools/record.py."""
    stages = list(LOG_STAGE.finditer(text))
    assert stages, "error_log.txt has no '$ command ... [exit status N]' stage"
    out: dict[str, Any] = {
        "build_rc": None,
        "build_log": "",
        "run_rc": None,
        "run_log": "",
        "timed_out": False,
    }
    for i, m in enumerate(stages[:2]):
        prefix = "build" if i == 0 else "run"
        rc = m.group("rc")
        out[f"{prefix}_rc"] = int(rc) if rc is not None else None
        out[f"{prefix}_log"] = m.group("log")
        if rc is None:
            out["timed_out"] = True
    return out


@pytest.mark.parametrize("task", TASK_IDS)
def test_recorded_error_log_agrees_with_label(task: str) -> None:
    inp, label = meta(task, "input.json"), meta(task, "instance.json")["error_category"]
    path = CORPUS / task / "error_log.txt"
    assert path.is_file(), f"{task} has no recorded error_log.txt"
    text = path.read_text(errors="replace")
    assert text.startswith(f"$ {inp['build_command']}\n"), (
        "the log does not start with the task's build command"
    )
    rec = parse_error_log(text)
    got = classify(rec["build_rc"], rec["build_log"], rec["run_rc"], rec["run_log"], rec["timed_out"])
    assert label_agrees(label, got.category), (
        f"{task}: labelled {label}, its error log classifies as {got.category}"
    )


# ------------------------------------------------------------------------------------------ compiling


@dataclass(frozen=True)
class Job:
    """One nvcc invocation in a fresh work dir."""

    key: str
    task: str
    argv: tuple[str, ...]
    solution: bytes | None
    output: str | None
    """Object file the command must produce (compile jobs), or None (broken-start builds)."""


def build_flags(inp: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The build command split into (flags without -o and sources, sources)."""
    argv = shlex.split(inp["build_command"])[1:]
    flags, sources, skip = [], [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a.endswith(SOURCE_SUFFIXES):
            sources.append(a)
        else:
            flags.append(a)
    return flags, sources


def tree_digest(task: str, exclude: str) -> str:
    """Hash of the headers a compile can see: _common/ and the testbench minus its sources."""
    h = hashlib.sha256()
    for root, prefix in ((COMMON, "_common/"), (CORPUS / task / "testbench", "")):
        for p in sorted(root.rglob("*")):
            if p.is_file() and not (p.name.endswith(SOURCE_SUFFIXES) and p.name != exclude):
                h.update(f"{prefix}{p.relative_to(root)}\0".encode() + p.read_bytes() + b"\0")
    return h.hexdigest()


def compile_job(task: str, what: str) -> Job:
    inp = meta(task, "input.json")
    flags, sources = build_flags(inp)
    sol = inp["solution_file"]
    if what == "reference":
        src, code = sol, reference_path(task).read_bytes()
        body = code
    else:
        others = [s for s in sources if s != sol]
        assert len(others) == 1, f"{task}: expected one harness source in the build command, got {others}"
        src, code = others[0], None
        body = (CORPUS / task / "testbench" / src).read_bytes()
    key = hashlib.sha256("\0".join([*flags, src, tree_digest(task, src)]).encode() + b"\0" + body).hexdigest()
    argv = ("nvcc", *flags, "-c", src, "-o", "ci_check.o")
    return Job(key, task, argv, code, "ci_check.o")


def broken_job(task: str) -> Job:
    inp = meta(task, "input.json")
    code = broken_path(task).read_bytes()
    argv = tuple(shlex.split(inp["build_command"]))
    return Job(hashlib.sha256(code + inp["build_command"].encode()).hexdigest(), task, argv, code, None)


def alone_job(task: str) -> Job:
    """The broken start compiled alone (-c), without linking it to the harness."""
    inp = meta(task, "input.json")
    flags, _ = build_flags(inp)
    code = broken_path(task).read_bytes()
    argv = ("nvcc", *flags, "-c", inp["solution_file"], "-o", "ci_check.o")
    return Job(hashlib.sha256(code + b"alone").hexdigest(), task, argv, code, "ci_check.o")


@dataclass(frozen=True)
class Result:
    rc: int
    log: str
    output_bytes: int
    """Size of the object file produced (0 when none)."""
    argv: tuple[str, ...]


def execute(job: Job, corpus: Path = CORPUS) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"beaver-ci-{job.task}-") as tmp:
        wd = Path(tmp)
        shutil.copytree(corpus / job.task / "testbench", wd, dirs_exist_ok=True)
        shutil.copytree(corpus / "_common", wd / "_common")
        if job.solution is not None:
            (wd / meta(job.task, "input.json")["solution_file"]).write_bytes(job.solution)
        proc = subprocess.run(job.argv, cwd=wd, capture_output=True, text=True, timeout=240, env=dict(ENV))
        out = wd / job.output if job.output else None
        size = out.stat().st_size if out is not None and out.is_file() else 0
        return Result(proc.returncode, proc.stdout + proc.stderr, size, job.argv)


BUILD_STAGE_TASKS = [t for t in TASK_IDS if meta(t, "instance.json")["error_category"] in BUILD_STAGE]
INTEGRATION_TASKS = [
    t for t in BUILD_STAGE_TASKS if meta(t, "instance.json")["error_category"] == "integration"
]


#: Characters that end the simple reading of ``merge_shape``: literals (a brace or a comment could hide in
#: one), line splices, digraphs of braces and directives.
NOT_MERGED = ('"', "'", "\\", "<%", "%>", "%:", "??")
INCLUDE_THEN_MAIN = re.compile(
    r'\s*#[ \t]*include[ \t]*"(?P<header>[A-Za-z0-9_]+\.(?:cuh|h|hpp))"[ \t]*\n(?P<rest>.*)', re.S
)
MAIN = re.compile(
    r"\s*int\s+main\s*\(\s*int\s+argc\s*,\s*char\s*\*\s*\*\s*argv\s*\)\s*\{(?P<body>.*)\}\s*", re.S
)


def merge_shape(source: str) -> str | None:
    """The header a testbench source includes, when the source is, comments aside, exactly one
    ``#include "<header>"`` followed by one ``int main(int argc, char** argv) { ... }`` and nothing else (no
    other directive or declaration, no literal); None for any other source, which is compiled alone."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    m = INCLUDE_THEN_MAIN.fullmatch(code)
    if m is None:
        return None
    rest = m["rest"]
    if "#" in rest or any(c in rest for c in NOT_MERGED) or len(re.findall(r"\bmain\b", rest)) != 1:
        return None
    fn = MAIN.fullmatch(rest)
    if fn is None:
        return None
    depth = 1
    for c in fn["body"]:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth == 0:  # main's body closes before the end: something follows it
            return None
    return m["header"] if depth == 1 else None


@dataclass(frozen=True)
class Unit:
    """Testbench compiles of the same flags and the same shared header, made as one translation unit."""

    header: str
    flags: tuple[str, ...]
    members: tuple[Job, ...]

    @property
    def key(self) -> str:
        return hashlib.sha256("\0".join(j.key for j in self.members).encode()).hexdigest()


def mergeable(job: Job) -> tuple[tuple[str, ...], str] | None:
    """(flags, header) of a testbench compile that may share a unit (see the module's docstring), else None:
    a ``.cu`` source alone in its testbench folder, of ``merge_shape``, including a header of corpus/_common,
    built without turning warnings into errors (a warning can differ between a unit and the source alone)."""
    inp = meta(job.task, "input.json")
    flags, sources = build_flags(inp)
    src = next(s for s in sources if s != inp["solution_file"])
    files = list((CORPUS / job.task / "testbench").rglob("*"))
    if not src.endswith(".cu") or files != [CORPUS / job.task / "testbench" / src]:
        return None
    if any("Werror" in f for f in flags):
        return None
    header = merge_shape(files[0].read_text())
    if header is None or not (COMMON / header).is_file():
        return None
    return tuple(flags), header


def plan(jobs: list[Job]) -> list[Job | Unit]:
    """Distinct jobs, with the testbench compiles that may share a unit grouped into one (two or more); the
    units first, largest first, so that two workers do not end on one long unit while the other waits."""
    groups: dict[tuple[tuple[str, ...], str], list[Job]] = {}
    rest: list[Job | Unit] = []
    for j in jobs:
        how = mergeable(j) if j.output is not None and j.solution is None else None
        if how is None:
            rest.append(j)
        else:
            groups.setdefault(how, []).append(j)
    units: list[Job | Unit] = []
    for (flags, header), members in sorted(groups.items(), key=lambda g: -len(g[1])):
        (units if len(members) > 1 else rest).append(
            Unit(header, flags, tuple(members)) if len(members) > 1 else members[0]
        )
    return units + rest


def execute_unit(unit: Unit, corpus: Path = CORPUS) -> dict[str, Result]:
    """The unit compiled once; if it fails, each member compiled alone (``execute``)."""
    with tempfile.TemporaryDirectory(prefix="beaver-ci-unit-") as tmp:
        wd = Path(tmp)
        shutil.copytree(corpus / "_common", wd / "_common")
        lines = [
            "// The testbenches below as one unit (tests/engine/corpus/test_corpus_ci.py).",
            f'#include "{unit.header}"',
        ]
        for i, j in enumerate(unit.members):
            shutil.copytree(corpus / j.task / "testbench", wd / "tb" / j.task)
            src = j.argv[-3]
            lines += [f"#define main beaver_ci_main_{i}", f'#include "tb/{j.task}/{src}"', "#undef main"]
        (wd / "ci_unit.cu").write_text("\n".join(lines) + "\n")
        argv = ("nvcc", *unit.flags, "-c", "ci_unit.cu", "-o", "ci_check.o")
        proc = subprocess.run(argv, cwd=wd, capture_output=True, text=True, timeout=240, env=dict(ENV))
        out = wd / "ci_check.o"
        size = out.stat().st_size if out.is_file() else 0
    if proc.returncode == 0 and size > 0:
        done = Result(proc.returncode, proc.stdout + proc.stderr, size, argv)
        return {j.key: done for j in unit.members}
    return {j.key: execute(j, corpus) for j in unit.members}


@cache
def all_jobs() -> dict[tuple[str, str], Job]:
    jobs: dict[tuple[str, str], Job] = {}
    for t in TASK_IDS:
        jobs[(t, "reference")] = compile_job(t, "reference")
        jobs[(t, "testbench")] = compile_job(t, "testbench")
    for t in BUILD_STAGE_TASKS:
        jobs[(t, "broken")] = broken_job(t)
    for t in INTEGRATION_TASKS:
        jobs[(t, "alone")] = alone_job(t)
    return jobs


def run_one(job: Job) -> dict[str, Result]:
    return {job.key: execute(job)}


def unique_jobs(_: pytest.TempPathFactory) -> dict[str, Callable[[], dict[str, Result]]]:
    """Every distinct job once, the testbench compiles that may share a unit in one (``plan``)."""
    distinct = list({j.key: j for j in all_jobs().values()}.values())
    return {
        u.key: partial(execute_unit, u) if isinstance(u, Unit) else partial(run_one, u)
        for u in plan(distinct)
    }


#: The distinct jobs start with the test session, in the background (tests/prebuild.py).
PREBUILD = Prebuild(__file__, unique_jobs, "results", enabled=NVCC is not None)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Result]:
    """Every distinct job run once: those the background has not run yet, two at a time."""
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    done = {key: r for results in PREBUILD.results(tmp_path_factory).values() for key, r in results.items()}
    return {k: done[j.key] for k, j in all_jobs().items()}


def test_dedup_keeps_every_distinct_source() -> None:
    jobs = all_jobs()
    refs = {reference_path(t).read_bytes() for t in TASK_IDS}
    ref_keys = {j.key for (_, what), j in jobs.items() if what == "reference"}
    assert len(ref_keys) >= len(refs), "two different reference sources share a compile"


MAIN_ONLY = '// a task\n#include "fam.cuh"\n\nint main(int argc, char** argv) {\n    return fam::run(argc, argv, {1, {2}});\n}\n'


@pytest.mark.parametrize(
    "source",
    [
        MAIN_ONLY.replace("int main", "static int helper() { return 1; }\nint main"),
        MAIN_ONLY + "int helper() { return 1; }\n",
        MAIN_ONLY + "int n;\n",
        MAIN_ONLY.replace("int main", "#define N 3\nint main"),
        MAIN_ONLY.replace("int main", '#include "other.cuh"\nint main'),
        MAIN_ONLY.replace("#include", "int n;\n#include"),
        MAIN_ONLY.replace("int main", "void main"),
        MAIN_ONLY.replace("return", 'puts("}"); return'),
        MAIN_ONLY.replace("{1, {2}}", "{1, {2}}); } int helper() { return 0"),
        MAIN_ONLY.replace("{1, {2}}", "{1, {2}}); } \\\nint helper() { return 0"),
        MAIN_ONLY.replace("{\n", "<%\n"),
        MAIN_ONLY.replace("fam::run", "main"),
        "int main(int argc, char** argv) { return 0; }\n",
    ],
)
def test_merge_shape_refuses_a_source_that_declares_more_than_main(source: str) -> None:
    assert merge_shape(source) is None


def test_merge_shape_reads_the_header_of_a_main_only_source() -> None:
    assert merge_shape(MAIN_ONLY) == "fam.cuh"
    assert merge_shape(MAIN_ONLY.replace("return", "/* } int helper() { */ return")) == "fam.cuh"
    assert (
        merge_shape((CORPUS / "flashattn_v2_00" / "testbench" / "test_main.cu").read_text())
        == "flashattn.cuh"
    )


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("task", TASK_IDS)
@pytest.mark.parametrize("what", ["reference", "testbench"])
def test_compiles(task: str, what: str, results: dict[tuple[str, str], Result]) -> None:
    r = results[(task, what)]
    assert r.rc == 0, f"{task} {what} does not compile: {' '.join(r.argv)}\n{r.log[-3000:]}"
    assert r.output_bytes > 0, f"{task} {what}: nvcc exited 0 but wrote no object file"


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("task", BUILD_STAGE_TASKS)
def test_build_stage_broken_start_fails_as_labelled(
    task: str, results: dict[tuple[str, str], Result]
) -> None:
    label = meta(task, "instance.json")["error_category"]
    r = results[(task, "broken")]
    assert r.rc != 0, f"{task}: the {label} broken start builds"
    got = classify(r.rc, r.log, None, "", False)
    assert got.category == label, (
        f"{task}: labelled {label}, nvcc output classifies as {got.category}:\n{r.log[-2000:]}"
    )


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("task", INTEGRATION_TASKS)
def test_integration_fails_at_link_or_on_a_harness_declaration(
    task: str, results: dict[tuple[str, str], Result]
) -> None:
    alone, full = results[(task, "alone")], results[(task, "broken")]
    if alone.rc == 0:
        assert alone.output_bytes > 0
        assert re.search(r"undefined reference|multiple definition|nvlink error", full.log), full.log[-2000:]
    else:
        conflict = re.search(
            r"(incompatible with previous|declaration is incompatible|conflicting declaration)[^\n]*"
            r"(_common/|testbench/|\.h\b|\.cuh\b)",
            alone.log,
        )
        assert conflict, (
            f"{task}: compiles with errors that are not a conflict with a harness declaration:\n{alone.log}"
        )


@needs_nvcc
def test_a_unit_that_fails_compiles_each_testbench_alone(tmp_path: Path) -> None:
    """Two testbenches of one header, one broken: the unit fails, and each is then compiled alone, so the
    broken one is reported with its own nvcc output and the other one still passes."""
    (tmp_path / "_common").mkdir()
    (tmp_path / "_common" / "tiny.cuh").write_text("#pragma once\ninline int tiny(int x) { return x; }\n")
    flags = ("-std=c++17", "-arch=sm_90", "-I", "_common", "-I", ".")
    jobs = []
    for task, expr in (("tiny_00", "tiny(argc)"), ("tiny_01", "tiny(argc) + untold")):
        (tmp_path / task / "testbench").mkdir(parents=True)
        source = f'#include "tiny.cuh"\nint main(int argc, char** argv) {{ return {expr}; }}\n'
        (tmp_path / task / "testbench" / "test_main.cu").write_text(source)
        assert merge_shape(source) == "tiny.cuh"
        argv = ("nvcc", *flags, "-c", "test_main.cu", "-o", "ci_check.o")
        jobs.append(Job(task, task, argv, None, "ci_check.o"))
    got = execute_unit(Unit("tiny.cuh", flags, tuple(jobs)), tmp_path)
    good, bad = got["tiny_00"], got["tiny_01"]
    assert good.rc == 0 and good.output_bytes > 0 and "test_main.cu" in good.argv, good
    assert bad.rc != 0 and "test_main.cu" in bad.argv, bad
    assert re.search(r'test_main\.cu\(2\): error: identifier "untold" is undefined', bad.log), bad.log


def test_corpus_covers_build_stage_labels() -> None:
    labels = {meta(t, "instance.json")["error_category"] for t in BUILD_STAGE_TASKS}
    assert labels == set(BUILD_STAGE), f"build-stage labels present: {sorted(labels)}"
