#!/usr/bin/env bash
# The release's timing stage under a batch's build load, with the builds at one CPU priority after another
# (bench/release_timing_bench.py run --build-load, then compare), on a GPU machine, from the repository root.
# Each condition times the first N instances of bench/release-cupti-tasks.txt, runs started ahead (mode on),
# while LOAD threads build candidates again; the conditions run one after another in the same call:
#   nice0   builds at the caller's priority (as before the setting)
#   nice10  BEAVERTUI_BUILD_NICE=10
#   pinned  BEAVERTUI_BUILD_NICE=10 and BEAVERTUI_BUILD_CPUS = every CPU but the first core's (its hardware
#           threads included), which builds then leave to the timing stage
#   timing01  the timed processes on CPUs 0 and 1 (BEAVERTUI_TIMING_CPUS), the builds on every CPU
#   split   the timed processes on CPUs 0 and 1, the builds on the others (BEAVERTUI_BUILD_CPUS)
#   nice0b  as nice0 again, to see how far the machine drifted over the call
# Everything in $OUT/build-priority.tgz; the comparisons of each against nice0 in $OUT/compare.md.
#   bash scripts/gpu-build-priority.sh [--budget-s S]
# N (default 17), LOAD (default 12), CONDS (default "nice0 nice10 pinned nice0b"; the first is what the others
# are compared with).
# Carried, git-ignored: .release/a (scripts/gpu-release-timing.sh says how it is made) and .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=540
while [ $# -gt 0 ]; do
  case "$1" in
    --budget-s) TOTAL=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BACK=${OUT:-/tmp/beaver-out}
mkdir -p "$BACK"
OUT=/tmp/beaver-build-priority
rm -rf "$OUT"
. scripts/gpu-common.sh
[ -d .release/a/data ] || { log "no release under .release/a"; exit 2; }
grep -v '^#' bench/release-cupti-tasks.txt | head -n "${N:-17}" >"$W/tasks.txt"
lscpu >"$W/lscpu.txt" 2>&1
SIB=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo 0)
REST=$(python3 -c "
import os, sys
from beavertui.engine.toolchain.stages import parse_cpus
rest = sorted(os.sched_getaffinity(0) - parse_cpus(sys.argv[1]))
print(','.join(map(str, rest)))" "$SIB")
OTHERS=$(python3 -c "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0))[2:])))")
log "cpu0's hardware threads: $SIB; builds pinned to: $REST (pinned), $OTHERS (split)"
CONDS=(${CONDS:-nice0 nice10 pinned nice0b})
for i in "${!CONDS[@]}"; do
  c=${CONDS[$i]}
  case "$c" in
    nice0 | nice0b) nice=0 cpus= timing= ;;
    nice10) nice=10 cpus= timing= ;;
    pinned) nice=10 cpus=$REST timing= ;;
    timing01) nice=0 cpus= timing=0,1 ;;
    split) nice=0 cpus=$OTHERS timing=0,1 ;;
    *) log "unknown condition $c"; exit 2 ;;
  esac
  # an equal share of what is left for each condition still to run
  b=$(( ($(left) - 25) / (${#CONDS[@]} - i) ))
  log "$c: start (builds at niceness +$nice on CPUs ${cpus:-all}, timed processes on CPUs ${timing:-all}; $b s, timings until $((b - 20)) s)"
  BEAVERTUI_BUILD_NICE=$nice BEAVERTUI_BUILD_CPUS=$cpus BEAVERTUI_TIMING_CPUS=$timing timeout -k 10 "$b" \
    python3 bench/release_timing_bench.py run --corpus .release/a/data --out "$OUT/$c" --tasks "$W/tasks.txt" \
    --modes on --build-load "${LOAD:-12}" --budget-s $((b - 20)) --jobs "$(nproc)" >"$W/$c.log" 2>&1
  log "$c: rc $? ($(grep -c '\]: ' "$W/$c.log") timings)"
done
{
  for c in "${CONDS[@]}"; do
    [ "$c" = "${CONDS[0]}" ] && continue
    python3 bench/release_timing_bench.py compare --json "$OUT/compare-$c.json" "$OUT/${CONDS[0]}" "$OUT/$c" 2>&1
    echo
  done
} >"$OUT/compare.md"
cp "$OUT/compare.md" "$W/steps.log" "$BACK/"
tar czf "$BACK/build-priority.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
cat "$OUT/compare.md"
