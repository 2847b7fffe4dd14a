#!/usr/bin/env bash
# Records one session of each planning arm of transpose_00 (the repair_in_three demo's task) on CPU: the
# demo's hand-written replies as the coder (scripted:@demo), the hand-written plans and summaries of this
# folder, and the demo's outcomes recorded on an H200 (--toolchain demo): every build, run, sanitizer
# record and timing is the demo's, replayed by its code hash. Run from the repository root:
#     bash tests/data/planning/make_sessions.sh
set -euo pipefail
here=tests/data/planning
out=$here/sessions
rm -rf "$out" && mkdir -p "$out"
live() {
    name=$1; shift
    python3 -m beavertui live --task transpose_00 --model scripted:@demo --toolchain demo --headless \
        -k 3 --history 2 --temperature 0 --in-loop-gate --notes "planning arm $name (tests/data/planning)" \
        --out "$out/$name.jsonl" "$@" >/dev/null || true
}
live implicit
live plan-f --planning plan --planner "scripted:$here/planner.toml"
live plan-nf --planning plan --planner "scripted:$here/planner.toml" --no-coder-feedback
live plan-transfer --planning plan --planner "scripted:$here/planner-terse.toml"
live summary --feedback L3S --summariser "scripted:$here/summariser.toml"
live plan-f-summary --planning plan --planner "scripted:$here/planner.toml" --feedback L3S \
    --summariser "scripted:$here/summariser.toml"
ls "$out"
