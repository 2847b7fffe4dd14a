#!/usr/bin/env bash
# One recording run on a GPU machine (an H200 here), from the repository root:
#   - the broken starts' error logs that are not recorded yet (corpus/_tools/record.py)
#   - `beavertui corpus validate` over the whole corpus (per-GPU baselines written into the tasks)
#   - the five demo sessions of sessions/demo (scripted replies written by hand, real builds and runs)
#   - the gpu-marked tests (and the vec_scale recordings they can write)
#   - the batch benchmark (bench/batch_gpu_bench.py: sweep, SIGKILL, resume, metrics)
# With two or more GPUs the validation (which times references) has GPU 0 to itself and everything else
# runs on GPU 1, so no timing shares a GPU; with one GPU the steps run one after the other. Every step has
# its own time limit; results are packed into $OUT/results.tar.gz at the end even when a step ran out of time.
#
#   bash scripts/gpu-record.sh [TOTAL_SECONDS]     (default 540)
#
# The GPU image lacks some runtime dependencies: pack them first, here, with
#   bash ../shared/tools/gpu-wheels.sh pytest-textual-snapshot syrupy httpx2 httpcore2 truststore
# (openai 3.x needs httpx2) and carry .whl.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
STEPS=${OUT:-/tmp/beaver-out}/steps.log
. scripts/gpu-common.sh

preflight() {  # a reference built and run inside the full stage sandbox; without namespaces if that fails
  timeout -k 5 120 python3 -m beavertui check transpose_00 --reference --no-timing --json >"$W/preflight.jsonl" 2>&1
  if python3 - "$W/preflight.jsonl" <<'PY'
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
cats = [o.get("category") for o in objs if o.get("kind") == "verdict"]
sys.exit(0 if cats and cats[-1] == "passed" else 1)
PY
  then
    log "preflight: reference passes inside the stage sandbox"
  else
    export BEAVERTUI_NAMESPACES=0
    timeout -k 5 120 python3 -m beavertui check transpose_00 --reference --no-timing --json >"$W/preflight-nons.jsonl" 2>&1
    log "preflight: FAILED inside the sandbox; without namespaces: $(tail -c 300 "$W/preflight-nons.jsonl")"
  fi
}

lane_validate() {
  export CUDA_VISIBLE_DEVICES=0
  log "record: error logs of broken starts not yet recorded"
  missing=()
  for d in corpus/*/; do
    t=$(basename "$d")
    case $t in _*) continue ;; esac
    [ -f "$d/error_log.txt" ] || missing+=(--task "$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    timeout -k 5 "$REC_S" python3 corpus/_tools/record.py run --broken-only "${missing[@]}" --out "$W/record.jsonl" \
      >"$W/record.log" 2>&1
    python3 corpus/_tools/record.py apply "$W/record.jsonl" >>"$W/record.log" 2>&1
  fi
  log "record: done ($(grep -c wrote "$W/record.log" 2>/dev/null || echo 0) logs written)"
  local v=$(($(left) - $1))
  if [ "$v" -lt 30 ]; then
    log "validate: skipped, ${v} s left"
    return
  fi
  log "validate: start (${v} s)"
  timeout -k 10 "$v" python3 -m beavertui corpus validate --json --workers 12 >"$W/validate.jsonl" 2>"$W/validate.log"
  log "validate: rc $? ($(grep -c '"valid": true' "$W/validate.jsonl") valid of $(grep -c task_id "$W/validate.jsonl") lines)"
}

demo() {  # name task budget [extra args]
  local name=$1 task=$2 budget=$3
  shift 3
  timeout -k 5 "$DEMO_S" python3 -m beavertui live --headless --task "$task" \
    --model "scripted:sessions/demo/replies/$name.toml" --budget "$budget" \
    --notes "replies written by hand (sessions/demo/replies/make_replies.py); builds, runs and timings real" \
    --out "sessions/demo/$name.jsonl" "$@" >"$W/demo-$name.log" 2>&1
  echo "$name rc $?" >>"$W/demos.txt"
}

lane_rest() {
  export CUDA_VISIBLE_DEVICES=$1
  log "demos: start (GPU $1)"
  rm -f sessions/demo/*.jsonl
  demo repair_in_three transpose_00 3 &
  demo degenerate_repair softmax_00 4 &
  demo no_progress layernorm_03 4 &
  demo code_cycle scan_01 4 &
  demo sanitizer_only layernorm_01 2 --sanitize memcheck &
  demo typo_then_barrier transpose_00 3 &
  wait
  log "demos: done: $(tr '\n' ' ' <"$W/demos.txt")"
  files=$(grep -rl --include="test_*.py" --exclude-dir=data "pytest.mark.gpu" tests 2>/dev/null | sort | tr '\n' ' ')
  log "gpu tests: $files"
  xdist=""
  python3 -c "import xdist" 2>/dev/null && xdist="-n $TEST_WORKERS"
  BEAVERTUI_RECORD_TO="$W/vec_scale.recordings.jsonl" timeout -k 10 "$TESTS_S" \
    python3 -m pytest -m gpu -p no:cacheprovider -rA --durations=30 $xdist $files >"$W/gpu-tests.log" 2>&1
  log "gpu tests: rc $? $(tail -1 "$W/gpu-tests.log")"
  b=$(($(left) - 25))
  if [ "$b" -gt 60 ]; then
    log "batch bench: start (${b} s)"
    timeout -k 10 "$b" python3 bench/batch_gpu_bench.py --out "$W/bench" --tasks "$BENCH_TASKS" --naive-tasks 2 \
      --kill-after "$KILL_AFTER" --budget-s $((b - 15)) >"$W/bench.log" 2>&1
    log "batch bench: rc $?"
  else
    log "batch bench: skipped, ${b} s left"
  fi
}

preflight

if [ "$NGPU" -ge 2 ]; then
  REC_S=100 DEMO_S=150 TESTS_S=200 TEST_WORKERS=6 BENCH_TASKS=12 KILL_AFTER=40
  lane_validate 30 &   # until 30 s before the end
  lane_rest 1 &
  wait
else
  REC_S=80 DEMO_S=100 TESTS_S=120 TEST_WORKERS=4 BENCH_TASKS=6 KILL_AFTER=25
  lane_validate 260    # leaves 260 s for the demos, the tests and the bench
  lane_rest 0
fi

log "packing"
find "$W/bench" -maxdepth 1 -name 'cache-*' -exec rm -rf {} + 2>/dev/null
tar czf "$OUT/results.tar.gz" corpus/*/error_log.txt corpus/*/baselines sessions/demo/*.jsonl "$W" \
  2>>"$OUT/steps.log"
cp "$W/validate.jsonl" "$W/gpu-tests.log" "$OUT/" 2>/dev/null
cat "$W"/demo-*.log >"$OUT/demos.log" 2>/dev/null
cp "$W/bench.log" "$OUT/" 2>/dev/null
log "end: $(du -sh "$OUT/results.tar.gz" | cut -f1)"
