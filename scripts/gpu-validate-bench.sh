#!/usr/bin/env bash
# Re-validation of the whole corpus and the batch benchmark, on a GPU machine, from the repository root.
# With two GPUs: lane A (GPU 0) runs `corpus validate` over every task (baselines written into the tasks),
# then the naive-vs-scheduled comparison on a subset; lane B (GPU 1) runs the timing-stage profile, then
# the scheduled batch of 40 tasks x 5 iterations, SIGKILLed and resumed. With one GPU the lanes run one
# after the other. Results packed into $OUT/results.tar.gz (run directories without their build caches).
#   bash scripts/gpu-validate-bench.sh [TOTAL_SECONDS]      (default 560)
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-560}
. scripts/gpu-common.sh
B=$((NGPU > 1 ? 1 : 0))
lane_a() {
  export CUDA_VISIBLE_DEVICES=0
  log "validate: start"
  timeout -k 10 $(($(left) - 30)) python3 -m beavertui corpus validate --json --workers 12 \
    >"$W/validate.jsonl" 2>"$W/validate.log"
  log "validate: rc $? ($(grep -c '"valid": true' "$W/validate.jsonl") valid of $(grep -c task_id "$W/validate.jsonl") lines)"
  local b=$(($(left) - 15))
  if [ "$b" -gt 90 ]; then
    log "subset bench: start (${b} s)"
    timeout -k 10 "$b" python3 bench/batch_gpu_bench.py --out "$W/bench-subset" --tasks 40 --naive-tasks "${NAIVE:-5}" \
      --phases subset --budget-s $((b - 10)) >"$W/bench-subset.log" 2>&1
    log "subset bench: rc $?"
  fi
}
lane_b() {
  export CUDA_VISIBLE_DEVICES=$B
  timeout -k 5 100 python3 bench/timing_profile.py --stage --budget-s 80 --out "$W/timing_profile.json" \
    >"$W/timing_profile.log" 2>&1
  log "profile: rc $?"
  local b=$(($(left) - 15))
  log "main bench: start (${b} s)"
  timeout -k 10 "$b" python3 bench/batch_gpu_bench.py --out "$W/bench-main" --tasks 40 --kill-after "${KILL:-60}" \
    --phases main --budget-s $((b - 10)) >"$W/bench-main.log" 2>&1
  log "main bench: rc $?"
}
if [ "$NGPU" -gt 1 ]; then lane_a & lane_b; wait; else lane_b; lane_a; fi
log "packing"
tar czf "$OUT/results.tar.gz" --exclude='cache-*' -C "$OUT" w -C "$PWD" $(ls -d corpus/*/baselines) 2>/dev/null
log "end: $(du -h "$OUT/results.tar.gz" | cut -f1)"
cp "$W/steps.log" "$OUT/steps.log"
