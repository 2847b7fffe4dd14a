#!/usr/bin/env bash
# A short GPU run, from the repository root: the timing-stage profile (bench/timing_profile.py), the
# live and loop GPU tests, and `corpus validate` of the tasks named in $VALIDATE (on GPU 0 when there are
# two GPUs; everything else on GPU 1). Results packed into $OUT/results.tar.gz.
#   VALIDATE="softmax_02 scan_01" bash scripts/gpu-probe.sh [TOTAL_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-300}
. scripts/gpu-common.sh
B=$((NGPU > 1 ? 1 : 0))
lane_a() {
  [ -n "${VALIDATE:-}" ] || return 0
  args=()
  for t in $VALIDATE; do args+=(--task "$t"); done
  CUDA_VISIBLE_DEVICES=0 timeout -k 5 $((TOTAL - 20)) python3 -m beavertui corpus validate --json "${args[@]}" \
    >"$W/validate.jsonl" 2>"$W/validate.log"
  log "validate: rc $? ($(grep -c '"valid": true' "$W/validate.jsonl") valid)"
}
lane_b() {
  export CUDA_VISIBLE_DEVICES=$B
  timeout -k 5 150 python3 -m pytest -m gpu -p no:cacheprovider -o addopts="--strict-markers" -rA \
    tests/commands/test_live_gpu.py tests/engine/loop/test_loop_gpu.py ${TESTS:-} >"$W/gpu-tests.log" 2>&1
  log "gpu tests: $(tail -1 "$W/gpu-tests.log")"
  timeout -k 5 $((TOTAL - $(date +%s) + T0 - 15)) python3 bench/timing_profile.py --stage --out "$W/timing_profile.json" \
    --budget-s $((TOTAL - $(date +%s) + T0 - 60)) >"$W/timing_profile.log" 2>&1
  log "profile: rc $?"
}
if [ "$NGPU" -gt 1 ]; then lane_a & lane_b; wait; else lane_b; lane_a; fi
log "packing"
tar czf "$OUT/results.tar.gz" -C "$OUT" w /tmp/beavertui-cache-info 2>/dev/null || tar czf "$OUT/results.tar.gz" -C "$OUT" w
log "end"
cp "$W/steps.log" "$OUT/steps.log"
