#!/usr/bin/env bash
# The release at the speed of the GPU, on a GPU machine, from the repository root: the scripted:@alternate
# batch (scripts/release-alternate.toml: K = 2, L3, gate 0.7 after the run) as a new user starts it (a fresh
# cache: no stored verdicts but the package's known set, no kept start checks, no compile cache).
#   PART=nvcc bash scripts/gpu-release-lane.sh [TOTAL_SECONDS]         (default PART=nvcc, TOTAL 580)
#     the 86 instances of the nvcc families (cuda, cudabench, cublas, cusparse, cusolver, cufft) twice, one
#     after the other, each with half of the time: first with each timing inside its session
#     (--inline-timing, the design before the timing lane), then with the timing lane (the default)
#   PART=nvcc-lane bash scripts/gpu-release-lane.sh [TOTAL_SECONDS]
#     the same 86 instances once, with the timing lane, in the whole time (the 300 s target's own run)
#   PART=kernelbench bash scripts/gpu-release-lane.sh [TOTAL_SECONDS]
#     the 62 usable kernelbench instances, timing lane, in the whole time
# The batch uses every visible GPU: on a machine with two, the same command is the two-GPU run; its one-GPU
# counterpart is CUDA_VISIBLE_DEVICES=0 in the next call on the same machine (performance.md's target: 1.8x).
# Inputs (git-ignored, carried): .release/a and .release/b (the release, as for gpu-release-batch.sh).
# Writes to $OUT: sessions/<design> (the runs), <design>.log (what the batch printed), verdicts-<design>/ (the
# verdicts its own check stored, one folder per GPU signature), summary.txt and
# summary.json (bench/release_lane_bench.py over the runs: per-session finish times, finished within 300 s,
# the longest wait for timing with no timing stage running), stages.txt and stages-<design>.json
# (bench/stage_log_bench.py over each run's stages.jsonl: what held the GPU, what timing waited behind),
# timeline.txt (the same log in 25 s windows: what held the GPU, what waited for it),
# metrics-<design>.txt, w/steps.log, and
# lane-out.tgz (all of it, in one file).
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-580}
. scripts/gpu-common.sh
REL=/tmp/release
mkdir -p "$REL" "$OUT/sessions"
merge_release
PART=${PART:-nvcc}
NVCC='cuda_*,cudabench_*,cublas_*,cusparse_*,cusolver_*,cufft_[0-9]*'
run() {  # run DESIGN SECONDS TASKS [FLAGS...]: one batch on a fresh cache, stopped cleanly at SECONDS
  local design=$1 secs=$2 tasks=$3; shift 3
  export XDG_CACHE_HOME=/tmp/fresh-$design && rm -rf "$XDG_CACHE_HOME"
  log "$design: $tasks for $secs s"
  timeout -s INT -k 20 "$secs" python3 -m beavertui batch --protocol scripts/release-alternate.toml \
    --corpus "$REL" --tasks "$tasks" --sessions-dir "$OUT/sessions" --run-id "$design" --quiet "$@" \
    >"$OUT/$design.log" 2>&1
  log "$design: rc $? ($(tail -2 "$OUT/$design.log" | tr '\n' ' '))"
  python3 -m beavertui metrics "$OUT/sessions/$design" >"$OUT/metrics-$design.txt" 2>&1
  # the verdicts the batch's own check stored on this GPU (hashes, reference run times), laid out as
  # docs/data/h200-2026-12-01/release-verdicts.tar.gz, from which the H200's known set was made
  [ -d "$XDG_CACHE_HOME/beavertui/validation" ] && cp -a "$XDG_CACHE_HOME/beavertui/validation" "$OUT/verdicts-$design"
}
budget=$(( $(left) - 40 ))
if [ "$PART" = nvcc ]; then
  run inline $(( budget / 2 )) "$NVCC" --inline-timing
  run lane $(( $(left) - 40 )) "$NVCC"
  runs=("$OUT/sessions/inline" "$OUT/sessions/lane")
elif [ "$PART" = nvcc-lane ]; then
  run lane "$budget" "$NVCC"
  runs=("$OUT/sessions/lane")
else
  run kernelbench "$budget" 'kernelbench_*' --gpu-share 8
  runs=("$OUT/sessions/kernelbench")
fi
python3 bench/release_lane_bench.py summary "${runs[@]}" >"$OUT/summary.txt" 2>&1
python3 bench/release_lane_bench.py summary "${runs[@]}" --json >"$OUT/summary.json" 2>/dev/null
log "summary: $(tr '\n' ' ' <"$OUT/summary.txt")"
for r in "${runs[@]}"; do  # where each run's GPU time went (its stage log)
  python3 bench/stage_log_bench.py summary "$r" >>"$OUT/stages.txt" 2>&1
  python3 bench/stage_log_bench.py summary "$r" --json >"$OUT/stages-$(basename "$r").json" 2>/dev/null
  python3 bench/stage_log_bench.py timeline "$r" >>"$OUT/timeline.txt" 2>&1
done
cat "$OUT/stages.txt"
cp "$W/steps.log" "$OUT/steps.log"
pack_out lane-out.tgz
cp "$W/steps.log" "$OUT/steps.log"
