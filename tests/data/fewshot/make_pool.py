"""Write pool/: two harness run folders in the CUDABeaver release's output format, made of real release
instances (tests/data/release_real), for the few-shot tests. Run from the repository root:

    python tests/data/fewshot/make_pool.py

Each record is what the release's harness writes for an attempt (task_id, iteration, status, five_category,
paths.error_code, paths.build_log_raw); a failed attempt's code is the instance's broken start, a passed
one's its reference. The build logs are assembled here (see README.md), not recorded from a build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASE = HERE.parents[0] / "release_real" / "data"

#: (folder, task, [(iteration, status)]) in manifest order.
RUNS: dict[str, list[tuple[str, list[tuple[int, str]]]]] = {
    "alpha/20260101_000000": [
        ("cublas_level1_10__compile_error__d6b7227b", [(1, "failed"), (2, "passed")]),
        # fails twice, passes at 3: the pair is iteration 1 and 3
        ("cuda_104__compile_error__f8160fc8", [(1, "failed"), (2, "failed"), (3, "passed")]),
        # passes at once: no pair
        ("cuda_1__memory_crash__4c324055", [(1, "passed")]),
        ("cuda_59__logic_error__501f0dd2", [(1, "failed"), (2, "passed")]),
        # 283 non-blank lines of broken code: the longest, still within the 300-line rule
        ("flashattention_fwd_hdim64_bf16__perf_broken__4f66c25d", [(1, "failed"), (2, "passed")]),
        # passes at 6 only: beyond the first five attempts
        ("cufft_samples_c2c_1d_1024_fp32__perf_broken__8a23fb7d", [(i, "failed") for i in range(1, 6)] + [(6, "passed")]),
    ],
    "beta/20260102_000000": [
        # the same task as alpha's: the curated rule takes the first seen
        ("cuda_104__compile_error__f8160fc8", [(1, "failed"), (2, "passed")]),
        ("cuda_1__memory_crash__4c324055", [(1, "failed"), (2, "passed")]),
        ("cudabench_72__memory_crash__32cc9e41", [(1, "failed"), (2, "passed")]),
        ("cufft_1__compile_error__611168ad", [(1, "failed"), (2, "passed")]),
        # written out of order: the rule sorts by iteration
        ("cusparse_4__compile_error__cfcd99f6", [(2, "passed"), (1, "failed")]),
    ],
}


def log_text(task: str, category: str, iteration: int, status: str) -> str:
    if status == "passed":
        return "BUILD_OK=True\n\n[BUILD OUTPUT]\n\n\n[TEST OUTPUT]\nPASSED\n"
    body = [f"assembled log of {task}, attempt {iteration}: the instance's label is {category}"]
    if task.startswith("cufft_1_"):  # a long one: the pool keeps 1,000 characters, the text 600
        body += [f"line {i}: error: assembled filler for the length rule" for i in range(40)]
    return "BUILD_OK=False\n\n[BUILD OUTPUT]\n" + "\n".join(body) + "\n"


def main() -> None:
    out = HERE / "pool"
    shutil.rmtree(out, ignore_errors=True)
    for run, tasks in RUNS.items():
        root = out / run
        (root / "index").mkdir(parents=True)
        (root / "error_code").mkdir()
        (root / "build_log_raw").mkdir()
        lines = []
        for task, attempts in tasks:
            inst = json.loads((RELEASE / task / "instance.json").read_text())
            for iteration, status in attempts:
                name = "reference.cu" if status == "passed" else inst["files"]["broken_start"]
                code = (RELEASE / task / name).read_text(encoding="utf-8")
                digest = hashlib.sha256(code.encode()).hexdigest()[:16]
                (root / "error_code" / f"{digest}.cu").write_text(code, encoding="utf-8")
                sample = f"{task}__iter_{iteration:04d}"
                log = log_text(task, inst["error_category"], iteration, status)
                (root / "build_log_raw" / f"{sample}.txt").write_text(log, encoding="utf-8")
                lines.append(
                    json.dumps(
                        {
                            "sample_id": sample,
                            "task_id": task,
                            "iteration": iteration,
                            "status": status,
                            "five_category": "passed" if status == "passed" else inst["error_category"],
                            "paths": {
                                "error_code": f"error_code/{digest}.cu",
                                "build_log_raw": f"build_log_raw/{sample}.txt",
                            },
                        }
                    )
                )
        (root / "index" / "manifest.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
