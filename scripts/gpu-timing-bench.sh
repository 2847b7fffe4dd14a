#!/usr/bin/env bash
# Timing at the floor, on a GPU machine, from the repository root: everything into $OUT, ends inside the
# time budget (default 530 s), prints a summary.
#   bash scripts/gpu-timing-bench.sh [--budget-s S] [--part PART[,PART...]]
# PART (default "stage"):
#   stage        the native timing stage of every bundled task (builds first, then one task at a time with
#                the GPU alone), plus one task per family timed the old way (one process per side and round)
#   scheduled    the scheduled batch, 40 tasks x 5 iterations, fresh caches (BUILDS=go|stop: its
#                --builds-in-timing; default go (the batch's default); GPUS=0,1: its --gpus, on
#                a machine with two GPUs, e.g. GPUS=0,1 in one call and GPUS=0 in the next: the summary
#                then gives the sessions per minute on two GPUs over one)
#   naive:I/K    the I-th of K slices of the naive run of the same 40 tasks (one session at a time, build
#                then run, no cache); K runs of this part, summed, are the naive wall of the 40 tasks
#   subset[:N]   scheduled and naive on the same N tasks (default 6), one after the other in this run
#   cap[:TASK]   TASK's broken start (default reduce_01, a 471 ms kernel) timed against its reference, without
#                and then with the driver's per-side budget of a round (2000 ms, the default since measured)
# Each part gets what is left of the budget (less a margin); a part that runs out is cut and says so.
# The 40-task parts say --side-budget-ms 0, as the naive pieces measured before the budget existed timed, so
# that both sides of the ratio time the same way (the default is 2000 ms).
# Afterwards: python3 bench/timing_floor_bench.py summary DIR... over the $OUT folders of several runs.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=530
PARTS=stage
while [ $# -gt 0 ]; do
  case "$1" in
    --budget-s) TOTAL=$2; shift ;;
    --part) PARTS=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
. scripts/gpu-common.sh
# GPU 0 unless GPUS names the GPUs of the scheduled part
[ -n "${GPUS:-}" ] || export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
B="python3 bench/timing_floor_bench.py"
budget() { echo $(($(left) - ${1:-20})); }
for part in ${PARTS//,/ }; do
  b=$(budget 25)
  if [ "$b" -lt 40 ]; then log "$part: skipped, ${b} s left"; continue; fi
  log "$part: start (${b} s)"
  case "$part" in
    stage)
      timeout -k 10 "$b" $B stage --out "$W/stage" --compare-old --budget-s $((b - 30)) >"$W/stage.log" 2>&1 ;;
    scheduled)
      timeout -k 10 "$b" $B batch --out "$W/batch" --mode scheduled --tasks 40 --side-budget-ms 0 --budget-s $((b - 15)) \
        --builds-in-timing "${BUILDS:-go}" ${GPUS:+--gpus "$GPUS"} \
        >"$W/scheduled.log" 2>&1 ;;
    naive:*)
      timeout -k 10 "$b" $B batch --out "$W/batch" --mode naive --tasks 40 --side-budget-ms 0 --slice "${part#naive:}" \
        --budget-s $((b - 15)) >"$W/naive-$(echo "${part#naive:}" | tr / -).log" 2>&1 ;;
    cap*)
      t=${part#cap}; t=${t#:}; t=${t:-reduce_01}
      timeout -k 10 "$b" $B stage --out "$W/cap-off" --task "$t" --candidate broken --side-budget-ms 0 \
        --budget-s 120 >"$W/cap-off.log" 2>&1
      log "cap off: rc $?"
      b=$(budget 20)
      timeout -k 10 "$b" $B stage --out "$W/cap-on" --task "$t" --candidate broken --side-budget-ms 2000 --budget-s 120 \
        >"$W/cap-on.log" 2>&1 ;;
    subset*)
      n=${part#subset}; n=${n#:}; n=${n:-6}
      half=$(((b - 20) / 2))
      timeout -k 10 "$half" $B batch --out "$W/subset" --mode scheduled --tasks "$n" --budget-s $((half - 10)) \
        >"$W/subset-scheduled.log" 2>&1
      log "subset scheduled: rc $?"
      b=$(budget 20)
      timeout -k 10 "$b" $B batch --out "$W/subset" --mode naive --tasks "$n" --budget-s $((b - 10)) \
        >"$W/subset-naive.log" 2>&1 ;;
    *) log "unknown part $part" ;;
  esac
  log "$part: rc $?"
done
log "summary"
$B summary --json "$W/summary.json" "$W" >"$W/summary.md" 2>&1
cat "$W/summary.md"
# the results without the run folders' build caches (session files are kept: they are the raw data)
tar czf "$OUT/timing-bench.tar.gz" --exclude='cache*' -C "$OUT" w 2>/dev/null
cp "$W/summary.md" "$W/steps.log" "$OUT/" 2>/dev/null
log "end: $(du -h "$OUT/timing-bench.tar.gz" | cut -f1)"
