#!/usr/bin/env bash
# Where a kernelbench timing driver's large inputs are drawn (bench/kernelbench_inputs_bench.py), on a GPU
# machine, from the repository root: the gpu-marked tests of the driver on real torch, then the bench over
# the release's kernelbench problems whose inputs take 2 GiB or more. Ends inside the time budget (default
# 540 s); everything into $OUT/kbi.
#   bash scripts/gpu-kernelbench-inputs.sh [TOTAL_SECONDS]
# TASKS (globs of task ids, comma-separated; default every kernelbench task) narrows the bench.
# Carried, git-ignored: .release/a (the release without cutlass; see gpu-release-timing.sh) and .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
. scripts/gpu-common.sh
[ -d .release/a/data ] || { log "no release under .release/a"; exit 2; }
mkdir -p "$OUT/kbi"
timeout -k 10 240 python3 -m pytest -m gpu -p no:cacheprovider -o addopts="--strict-markers" -rA -s \
  tests/engine/corpus/test_release_real.py -k kernelbench_driver >"$OUT/kbi/gpu-tests.log" 2>&1
log "driver tests: rc $? ($(tail -1 "$OUT/kbi/gpu-tests.log"))"
b=$(($(left) - 20))
SELECT=()
TASKS=${TASKS:-}
for t in ${TASKS//,/ }; do SELECT+=(--task "$t"); done
timeout -k 10 "$b" python3 bench/kernelbench_inputs_bench.py run --corpus .release/a/data --out "$OUT/kbi" \
  "${SELECT[@]}" --budget-s $((b - 60)) >"$OUT/kbi/run.log" 2>&1
log "bench: rc $?"
python3 bench/kernelbench_inputs_bench.py summary --json "$OUT/kbi/summary.json" "$OUT/kbi" >"$OUT/kbi/summary.md" 2>&1
cp "$W/steps.log" "$W/gpus.csv" "$OUT/kbi/"
cat "$OUT/kbi/summary.md"
