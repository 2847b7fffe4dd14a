#!/usr/bin/env bash
# The release's timing stage, alone on a GPU machine, from the repository root (bench/release_timing_bench.py):
# each instance's reference submission against its reference, with runs started ahead of their turn and in
# turn, side by side. Ends inside the time budget (default 560 s); everything into $OUT/rs, one file of it in
# $OUT/rs.tgz.
#   bash scripts/gpu-release-timing.sh [--budget-s S] [--part PART] [--after DIR ...]
# PART (default "cupti"):
#   cupti          the 65 CUPTI instances of bench/release-cupti-tasks.txt
#   cufft_samples  the 9 cufft_samples instances (the testbench's own speed lines; "ahead" is
#                  BEAVERTUI_PRESTART=all for them). Their build stage pre-builds both kernels: about a minute
#                  each on the CPU, before any timing.
#   long           the eight CUPTI instances whose stages hold the GPU 20 to 45 s (cuda_167, cuda_173 twice,
#                  cuda_193, cuda_194, cuda_204, cuda_207, cuda_216): with MODES=on, about 5 minutes; the
#                  summary says how much of their hold a kernel of the timed process ran
# MODES (default on,off): the bench's modes, side by side (on: runs started ahead, let go once the run
# before has ended; exit: let go at its exit mark, BEAVERTUI_GO_AT_EXIT=1; off: runs started in turn; stop:
# as on, with the LOAD builds stopped while it measures, as batch --builds-in-timing stop; park: as on, with
# a testbench's runs parked before the stage, as a batch on one GPU parks them before its hold).
# LOAD (default 0): threads that build candidates again while timing (bench --build-load: a batch's builds
# beside a GPU held for timing); a folder holds one load, so --after folders must share it.
# --after DIR: an earlier run's result folder (carried, e.g. docs/data/.../release-stage): the tasks it timed
# in both modes are not timed again, so a run cut by its budget goes on from where it stopped.
# Carried, git-ignored: .release/a (the release without cutlass, about 26 MB: in a clone of the release,
# git archive HEAD | tar x -C .release/a --exclude='data/cutlass_*' --exclude='data/_external/cutlass*')
# and .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=560
PART=cupti
AFTER=()
PREV=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget-s) TOTAL=$2; shift ;;
    --part) PART=$2; shift ;;
    --after) AFTER+=(--after "$2"); PREV+=("$2"); shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/gpu-common.sh
[ -d .release/a/data ] || { log "no release under .release/a"; exit 2; }
case "$PART" in
  cupti) SELECT=(--tasks bench/release-cupti-tasks.txt) ;;
  cufft_samples) SELECT=(--task 'cufft_samples_*') ;;
  long) SELECT=(); for t in cuda_167 cuda_173 cuda_193 cuda_194 cuda_204 cuda_207 cuda_216; do SELECT+=(--task "${t}__*"); done ;;
  *) log "unknown part $PART"; exit 2 ;;
esac
mkdir -p "$OUT/rs"
# timings start only while enough is left for the slowest stage of the part and the summary
b=$(($(left) - 30))
log "$PART: start (${b} s, timings until $((b - 70)) s)"
timeout -k 10 "$b" python3 bench/release_timing_bench.py run --corpus .release/a/data --out "$OUT/rs" \
  "${SELECT[@]}" "${AFTER[@]}" --modes "${MODES:-on,off}" --build-load "${LOAD:-0}" --budget-s $((b - 70)) --jobs "$(nproc)" >"$W/rs.log" 2>&1
log "$PART: rc $? ($(grep -c '\]: ' "$W/rs.log") timings)"
python3 bench/release_timing_bench.py summary --json "$OUT/rs/summary.json" "${PREV[@]}" "$OUT/rs" \
  >"$OUT/rs/summary.md" 2>&1
cp "$W/rs.log" "$W/steps.log" "$W/gpus.csv" "$OUT/rs/"
tar czf "$OUT/rs.tgz" -C "$OUT" rs
head -40 "$OUT/rs/summary.md"
