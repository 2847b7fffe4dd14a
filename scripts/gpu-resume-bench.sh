#!/usr/bin/env bash
# Second part of the batch benchmark, on a GPU machine with two GPUs, from the repository root:
# lane A (GPU 0): the adversarial GPU tests, then naive vs scheduled on a subset (bench/batch_gpu_bench.py
# --phases subset); lane B (GPU 1): `beavertui batch --resume` of a run directory carried in (RUN, a batch
# cut on another machine), then its session checks and `beavertui metrics`.
#   RUN=.gpu-carry/sched [TESTS=0] [JOBS=N] [NAIVE=N] bash scripts/gpu-resume-bench.sh [TOTAL_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
. scripts/gpu-common.sh
lane_a() {
  export CUDA_VISIBLE_DEVICES=0
  if [ "${TESTS:-1}" = 1 ]; then
    timeout -k 5 150 python3 -m pytest -m gpu -p no:cacheprovider -o addopts="--strict-markers" -rA \
      tests/engine/judge/test_anticheat_gpu.py >"$W/gpu-tests.log" 2>&1
    log "gpu tests: $(tail -1 "$W/gpu-tests.log")"
  fi
  local b=$(($(left) - 15))
  timeout -k 10 "$b" python3 bench/batch_gpu_bench.py --out "$W/bench-subset" --tasks 40 --naive-tasks "${NAIVE:-6}" \
    --phases subset --budget-s $((b - 5)) >"$W/bench-subset.log" 2>&1
  log "subset bench: rc $?"
}
lane_b() {
  export CUDA_VISIBLE_DEVICES=1
  local t=$(date +%s)
  timeout -k 10 $(($(left) - 40)) python3 -m beavertui batch --resume "$RUN" --quiet --cache "$W/cache-main" ${JOBS:+--jobs $JOBS} \
    >"$W/resume.log" 2>&1
  log "resume: rc $? after $(($(date +%s) - t)) s"
  python3 - "$RUN" >"$W/resume-check.json" 2>&1 <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
from batch_gpu_bench import session_stats, summary
run = Path(sys.argv[1])
print(json.dumps({"stats": session_stats(run), "summary": summary(run)}, indent=1))
PY
  python3 -m beavertui metrics "$RUN" --format markdown >"$W/metrics.md" 2>&1
  python3 -m beavertui metrics "$RUN" --json >"$W/metrics.json" 2>&1
  cp -r "$RUN" "$W/run"
  log "metrics: done"
}
lane_a & lane_b
wait
log "packing"
tar czf "$OUT/results.tar.gz" --exclude='cache-*' -C "$OUT" w
log "end: $(du -h "$OUT/results.tar.gz" | cut -f1)"
cp "$W/steps.log" "$OUT/steps.log"
