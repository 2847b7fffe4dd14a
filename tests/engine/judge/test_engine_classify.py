"""The classifier and the sanitizer parser on real recorded GPU outputs (tests/data/logs), plus the
priority rules of categories.md on small log excerpts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.engine.judge.classify import classify, classify_record, normalise
from beavertui.engine.judge.sanitizer import error_count, parse_records
from tests.cli_in_process import run_cli

LOGS = Path(__file__).parents[2] / "data" / "logs" / "gpu_cases.jsonl"


def _recorded() -> dict[str, dict]:
    return {json.loads(line)["id"]: json.loads(line) for line in LOGS.read_text().splitlines()}


def test_classify_cli_agrees_with_every_recorded_log() -> None:
    out = run_cli("classify", LOGS, check=True)
    results = [json.loads(line) for line in out.stdout.splitlines()]
    recorded = [json.loads(line) for line in LOGS.read_text().splitlines()]
    assert len(results) == len(recorded) >= 20
    for rec, res in zip(recorded, results, strict=True):
        assert res["id"] == rec["id"]
        assert res["category"] == rec["expected_category"], (rec["id"], rec["note"], res)
    # every category but integration-at-run-time is represented by a real GPU recording
    assert {r["expected_category"] for r in recorded} == {
        "passed", "illegal_memory_access", "functional_correctness", "out_of_memory", "timeout",
        "environment_dependency", "buildability", "integration",
    }  # fmt: skip


def test_classify_reads_stdin_and_reports_malformed_lines() -> None:
    good = {"build_rc": 0, "build_log": "", "run_rc": 0, "run_log": "PASS", "timed_out": False}
    lines = [json.dumps(good), "{broken", json.dumps([1]), json.dumps({**good, "run_rc": "0"}), ""]
    out = subprocess.run(  # stdin through a real pipe, into the real entry point
        [sys.executable, "-m", "beavertui", "classify", "-"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2  # bad input, not "the model failed" (1)
    assert out.stderr == (
        "beavertui: standard input: 3 line(s) not classified (each is an error object in the output), "
        "the first: line 2: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n"
    )
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows[0]["category"] == "passed" and rows[0]["signature"] == ""
    assert rows[1]["line"] == 2 and "error" in rows[1]
    assert rows[2] == {"line": 3, "error": "expected a JSON object, got list"}
    assert rows[3] == {"line": 4, "error": "key 'run_rc' must be int or NoneType"}


def test_memcheck_records_parsed_from_real_log() -> None:
    rec = _recorded()["oob_write"]
    records = parse_records(rec["sanitizer_log"], "memcheck")
    # "ERROR SUMMARY: 4065 errors", then "ERROR SUMMARY: 3965 errors were not printed": 4065 errors, not 8030
    assert error_count(rec["sanitizer_log"]) == 4065
    # the same two lines from an H200 check of a kernelbench broken start (scoped memcheck, 2026-12-02)
    h200 = (
        "========= Target application returned an error\n"
        "========= ERROR SUMMARY: 71332 errors\n"
        "========= ERROR SUMMARY: 71232 errors were not printed. Use --print-limit option to adjust the number "
        "of printed errors\n"
    )
    assert error_count(h200) == 71332
    assert error_count("========= ERROR SUMMARY: 1 error\n") == 1
    assert len(records) == 100  # --print-limit 100
    first = records[0]
    assert (first.tool, first.kind, first.size, first.kernel) == (
        "memcheck",
        "Invalid __global__ write",
        4,
        "scatter",
    )
    assert (first.thread, first.block, first.address) == ("(0,0,0)", "(8,0,0)", "0x7f7f22800000")
    assert first.host_frame == "main [0x8af9] in oob_write"
    # the same error at other threads and addresses normalises to one signature
    assert len({normalise(r.text.splitlines()[0] + " " + (r.detail or "")) for r in records}) == 1


def test_other_tools_records_from_real_logs() -> None:
    logs = _recorded()
    race = parse_records(logs["race"]["sanitizer_log"], "racecheck")
    assert [r.kind for r in race] == ["Race reported between Write access"] * 2
    assert race[0].kernel == "reduce" and error_count(logs["race"]["sanitizer_log"]) == 1
    sync = parse_records(logs["syncdiv"]["sanitizer_log"], "synccheck")
    assert (
        sync[0].kind == "Barrier error detected. Divergent thread(s) in warp"
        and sync[0].kernel == "half_barrier"
    )
    init = parse_records(logs["uninit"]["sanitizer_log"], "initcheck")
    assert init[0].kind == "Uninitialized __global__ memory read" and init[0].size == 4
    mis = parse_records(logs["misaligned"]["sanitizer_log"], "memcheck")
    assert mis[0].detail == "Access to 0x7ff96c800004 is misaligned" and mis[0].size == 8
    assert (
        parse_records(logs["pass"]["sanitizer_log"]) == [] and error_count(logs["pass"]["sanitizer_log"]) == 0
    )


def test_sanitizer_override_needs_errors_and_access_records() -> None:
    logs = _recorded()
    silent = logs["oob_read_silent"]
    assert classify(0, "", 0, silent["run_log"], False).category == "passed"
    c = classify(0, "", 0, silent["run_log"], False, silent["sanitizer_log"])
    assert c.category == "illegal_memory_access" and c.stage == "sanitizer"
    assert c.signature == "memcheck: Invalid __global__ read in copy_next"
    race = logs["race"]  # racecheck findings never change the category
    assert classify(0, "", race["run_rc"], race["run_log"], False, race["sanitizer_log"]).category == (
        "functional_correctness"
    )
    sync = logs["syncdiv"]
    assert classify(0, "", 0, sync["run_log"], False, sync["sanitizer_log"]).category == "passed"


@pytest.mark.parametrize(
    ("record", "category"),
    [
        # build-stage env beats integration; integration beats buildability
        (
            {
                "build_rc": 1,
                "build_log": "a.cu:1:10: fatal error: cutlass/gemm.h: No such file or directory\n"
                "undefined reference to `f()'",
            },
            "environment_dependency",
        ),
        (
            {
                "build_rc": 1,
                "build_log": 'solution.cu(3): error: expected a ";"\nundefined reference to `f()\'',
            },
            "integration",
        ),
        ({"build_rc": 2, "build_log": "make: *** [Makefile:4: test] Error 1"}, "buildability"),
        # a build killed by the limit with no error line is a timeout
        ({"build_rc": -9, "build_log": "compiling...", "timed_out": True}, "timeout"),
        # a JIT build inside the test command is a build-stage failure
        (
            {
                "run_rc": 1,
                "run_log": "RuntimeError: Error building extension 'relu2'\nsolution.cu(5): error: "
                'identifier "x" is undefined',
            },
            "buildability",
        ),
        ({"run_rc": 1, "run_log": "KernelExecResult(compiled=False, correctness=False)"}, "buildability"),
        (
            {"run_rc": 1, "run_log": "Traceback\nModuleNotFoundError: No module named 'kernelbench'"},
            "environment_dependency",
        ),
        (
            {"run_rc": 1, "run_log": "AttributeError: module 'solution' has no attribute 'ModelNew'"},
            "integration",
        ),
        # run stage order: env, OOM, IMA
        (
            {"run_rc": 1, "run_log": "out of memory\nan illegal memory access was encountered"},
            "out_of_memory",
        ),
        (
            {"run_rc": 0, "run_log": "CUDA error: an illegal memory access was encountered"},
            "illegal_memory_access",
        ),
        ({"run_rc": 139, "run_log": "Segmentation fault (core dumped)"}, "illegal_memory_access"),
        ({"run_rc": 136, "run_log": ""}, "functional_correctness"),
        ({"run_rc": None, "run_log": "partial", "timed_out": True}, "timeout"),
        (
            {"run_rc": 1, "run_log": "IndexError: index 5 is out of bounds for axis 0"},
            "functional_correctness",
        ),
    ],
)
def test_priority_rules(record: dict, category: str) -> None:
    base = {"build_rc": 0, "build_log": "", "run_rc": None, "run_log": "", "timed_out": False}
    assert classify_record({**base, **record})["category"] == category


def test_signature_normalises_paths_numbers_and_addresses() -> None:
    a = normalise('/tmp/beaver-x1/solution.cu(12): error: identifier "foo" is undefined at 0x7f00ab12')
    b = normalise('/tmp/beaver-q9/solution.cu(97): error:   identifier "foo" is undefined at 0x1234')
    assert a == b == 'solution.cu(#): error: identifier "foo" is undefined at <hex>'
