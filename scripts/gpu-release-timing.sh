#!/usr/bin/env bash
# The release's timing stage, alone on a GPU machine, from the repository root (bench/release_timing_bench.py):
# each instance's reference submission against its reference, with runs started ahead of their turn and in
# turn, side by side. Ends inside the time budget (default 560 s; 540 s for parts klock and klock-long); everything
# into $OUT/rs, one file of it in $OUT/rs.tgz.
#   bash scripts/gpu-release-timing.sh [--budget-s S] [--part PART] [--after DIR ...]
# PART (default "cupti"):
#   cupti          the 65 CUPTI instances of bench/release-cupti-tasks.txt
#   cufft_samples  the 9 cufft_samples instances (the testbench's own speed lines; "ahead" is
#                  BEAVERTUI_PRESTART=all for them). Their build stage pre-builds both kernels: about a minute
#                  each on the CPU, before any timing.
#   long           the eight CUPTI instances whose stages hold the GPU 20 to 45 s (cuda_167, cuda_173 twice,
#                  cuda_193, cuda_194, cuda_204, cuda_207, cuda_216): with MODES=on, about 5 minutes; the
#                  summary says how much of their hold a kernel of the timed process ran
#   klock          the hold per call against the hold per process (bench run --klock, beaver_cupti.c's
#                  BEAVER_KERNEL_LOCK): the CUPTI instances without the eight long ones, in rounds of
#                  KLOCK (default 4) tasks, each round timed one stage at a time and all at once under the
#                  kernel lock, the design that goes first alternated round by round; the budget defaults to
#                  540 s and rounds start only while 150 s of it are left; the summary prints each design's
#                  wall for the set and every task's speedup under both. --after a klock folder goes on
#                  with the tasks it did not reach.
#   klock-long     the same A/B on the eight long instances (the set the kernel lock is for): rounds of KLOCK
#                  (default 4), in the order of part long, so two rounds (cuda_167, cuda_173 twice, cuda_193;
#                  cuda_194, cuda_204, cuda_207, cuda_216), started only while 270 s of the budget are left:
#                  one stage at a time their stages held an H200 100.0 s and 131.7 s a round (2026-12-04;
#                  an H100 held cuda_167 25.5 s against the H200's 32.4 s), so a round starts only with room
#                  for its stages one at a time and as long again at once. With the build (about 12 s) a
#                  round's at-once design may take about 125 s before the second round no longer starts;
#                  --after the folder goes on with it in a next call.
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
TOTAL=
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
case "$PART" in klock | klock-long) KL=1 ;; *) KL= ;; esac
[ -n "$TOTAL" ] || { [ -n "$KL" ] && TOTAL=540 || TOTAL=560; }
. scripts/gpu-common.sh
[ -d .release/a/data ] || { log "no release under .release/a"; exit 2; }
# the eight long CUPTI instances (cuda_173 has two), as globs of their task ids' first part
LONG="cuda_167 cuda_173 cuda_193 cuda_194 cuda_204 cuda_207 cuda_216"
case "$PART" in
  cupti) SELECT=(--tasks bench/release-cupti-tasks.txt) ;;
  cufft_samples) SELECT=(--task 'cufft_samples_*') ;;
  long | klock-long) SELECT=(); for t in $LONG; do SELECT+=(--task "${t}__*"); done ;;
  klock) SELECT=(--tasks "$W/klock-tasks.txt")
         grep -v -E "^(${LONG// /|})__" bench/release-cupti-tasks.txt >"$W/klock-tasks.txt" ;;
  *) log "unknown part $PART"; exit 2 ;;
esac
mkdir -p "$OUT/rs"
# timings start only while enough is left for the slowest stage of the part and the summary
b=$(($(left) - 30))
if [ -n "$KL" ]; then
  # a round runs both designs once started: rounds start only while a round's time is left (150 s for the
  # short set's rounds, 270 s for the long set's)
  ROUND=150
  [ "$PART" = klock-long ] && ROUND=270
  log "$PART: start (${b} s, rounds of ${KLOCK:-4} until $((b - ROUND)) s)"
  timeout -k 10 "$b" python3 bench/release_timing_bench.py run --corpus .release/a/data --out "$OUT/rs" \
    "${SELECT[@]}" "${AFTER[@]}" --klock "${KLOCK:-4}" --budget-s $((b - ROUND)) --jobs "$(nproc)" >"$W/rs.log" 2>&1
else
  log "$PART: start (${b} s, timings until $((b - 70)) s)"
  timeout -k 10 "$b" python3 bench/release_timing_bench.py run --corpus .release/a/data --out "$OUT/rs" \
    "${SELECT[@]}" "${AFTER[@]}" --modes "${MODES:-on,off}" --build-load "${LOAD:-0}" --budget-s $((b - 70)) --jobs "$(nproc)" >"$W/rs.log" 2>&1
fi
log "$PART: rc $? ($(grep -c '\]: ' "$W/rs.log") timings)"
python3 bench/release_timing_bench.py summary --json "$OUT/rs/summary.json" "${PREV[@]}" "$OUT/rs" \
  >"$OUT/rs/summary.md" 2>&1
cp "$W/rs.log" "$W/steps.log" "$W/gpus.csv" "$OUT/rs/"
tar czf "$OUT/rs.tgz" -C "$OUT" rs
head -40 "$OUT/rs/summary.md"
