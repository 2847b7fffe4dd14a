#!/usr/bin/env bash
# The simulations of docs/lab/sim-2026-12-05-turns.md: each mode of bench/batch_bench.py run in a tree at
# 2215622 (before turns) and one at main (after), one after the other, REPS times; the bench files of main
# copied into the "before" tree (bench/batch_bench.py, bench/release_lane_bench.py; the package is its own).
#   BEFORE=/path/to/tree-at-2215622 AFTER=/path/to/tree-at-main OUT=dir REPS=2 bash run.sh MODE...
# MODE: simulate | h200 | lane-fixture | lane-h200
set -u
: "${BEFORE:?}" "${AFTER:?}" "${OUT:?}" "${REPS:=2}"
mkdir -p "$OUT"
for rep in $(seq 1 "$REPS"); do
  for mode in "$@"; do
    case $mode in
      simulate) args=(simulate) ;;
      h200) args=(h200) ;;
      lane-fixture) args=(lane --timing-s 3.2) ;;
      lane-h200) args=(lane --stages h200) ;;
      *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    for side in before after; do
      tree=${BEFORE}; [ "$side" = after ] && tree=${AFTER}
      f="$OUT/$mode-$side-$rep.json"
      echo "$(date -u +%FT%TZ) $side $mode rep $rep: $(cut -d' ' -f1-3 /proc/loadavg) (load before); git $(git -C "$tree" rev-parse --short HEAD)" | tee -a "$OUT/steps.log"
      (cd "$tree" && PYTHONPATH=$tree python3 bench/batch_bench.py "${args[@]}") > "$f"
      echo "$(date -u +%FT%TZ) done: $(cut -d' ' -f1-3 /proc/loadavg) (load after)" | tee -a "$OUT/steps.log"
    done
  done
done
