#!/usr/bin/env bash
# Run the CUDABeaver release's own harness on a GPU machine against a loopback stub model, and keep its
# run directory (trimmed) as the fixture of `beavertui import` (tests/data/harness_run).
#   bash scripts/gpu-harness-run.sh [TOTAL_SECONDS]          (default 440: ends inside 8 minutes)
# Carried, git-ignored: .release/a (the release; .release/b, when present, is merged over it) and .whl/
# (wheels of what the machine lacks: openai, distro, jiter, sniffio, pydantic, pydantic-core,
# annotated-types, typing-inspection, python-dotenv, and beavertui's own). No network is needed.
# The stub (scripts/harness_stub_server.py) answers each task's first request with its broken start and
# later ones with its reference, and refuses one task (REFUSE) so the run holds an api_error record.
# Writes to $OUT: harness-run.tgz holding harness_run/{run/<stamp>/ (index/, error_code/, build_log_raw/,
# config.yaml, summary.json; no symbolic links), corpus/data/<task>/ (the instances used, regular files
# only, with the release's LICENSE), logs/}, and steps.log. Unpack it over tests/data/harness_run.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
TOTAL=${1:-440}
FINAL=${OUT:-/tmp/beaver-out}
mkdir -p "$FINAL"
T=${HARNESS_TMP:-/tmp} # scratch: release copy, work and pack folders
PACK=$T/harness-pack/harness_run
LOGS=$PACK/logs
rm -rf "$T/harness-pack" "$T/harness-work" "$T/harness-imported" "$T/cb_work"
mkdir -p "$LOGS" "$PACK/corpus/data"
OUT=$T/harness-work
STEPS=$LOGS/steps.log
. scripts/gpu-common.sh # wheels into /tmp/site, log(), left(), $W
PORT=${PORT:-8011}
NVCC_TASKS=${NVCC_TASKS:-"cuda_104__compile_error__f8160fc8 cuda_110__logic_error__957be815 cuda_20__memory_crash__f1025423 cublas_level1_10__compile_error__d6b7227b"}
KB_TASKS=${KB_TASKS:-"kernelbench_level1_92__compile_error__52277656"}
REFUSE=${REFUSE:-cuda_22__compile_error__4d18e637}

pack() {
  # the trimmed run directory, the instances it used, the logs: one tarball (the machine returns few files)
  local R
  for t in $NVCC_TASKS $KB_TASKS $REFUSE; do
    [ -d "$REL/data/$t" ] && (cd "$REL/data" && find "$t" -type f -print0 | tar --null -T - -cf -) | tar -xf - -C "$PACK/corpus/data"
  done
  [ -f "$REL/LICENSE" ] && cp "$REL/LICENSE" "$PACK/corpus/LICENSE"
  R=$(ls -d "$REL"/outputs/cb_stub/*/ 2>/dev/null | tail -1)
  if [ -n "$R" ]; then
    local stamp
    stamp=$(basename "$R")
    mkdir -p "$PACK/run/$stamp"
    for x in index error_code build_log_raw; do
      [ -d "$R/$x" ] && cp -r "$R/$x" "$PACK/run/$stamp/"
    done
    for x in config.yaml summary.json; do [ -f "$R/$x" ] && cp "$R/$x" "$PACK/run/$stamp/"; done
    find "$PACK/run" -type l -delete
    log "run $stamp: $(wc -l <"$R/index/manifest.jsonl" 2>/dev/null || echo 0) records, summary.json $([ -f "$R/summary.json" ] && echo written || echo missing)"
    if [ "$(left)" -gt 15 ]; then
      PYTHONPATH=/tmp/site:$REPO timeout 60 python3 -m beavertui import "$PACK/run/$stamp" --out $T/harness-imported \
        --corpus "$PACK/corpus" >"$LOGS/import.txt" 2>&1
      log "beavertui import: rc $? ($(head -1 "$LOGS/import.txt"))"
      PYTHONPATH=/tmp/site:$REPO timeout 60 python3 -m beavertui metrics $T/harness-imported --json \
        >"$LOGS/metrics.json" 2>"$LOGS/metrics.err"
      log "beavertui metrics: rc $?"
    fi
  else
    log "no run directory under $REL/outputs/cb_stub"
  fi
  cp "$W"/pip.log "$W"/gpus.csv "$LOGS/" 2>/dev/null
  log "packing $(find "$PACK" -type f | wc -l) files"
  tar czf "$FINAL/harness-run.tgz" -C "$T/harness-pack" harness_run
  log "packed: $(du -h "$FINAL/harness-run.tgz" | cut -f1)"
  cp "$STEPS" "$FINAL/steps.log"
}

REL=$T/release
rm -rf "$REL"
mkdir -p "$REL"
for part in .release/a .release/b; do
  [ -d "$part" ] && cp -a "$part/." "$REL/" && log "release part $part merged"
done
if [ ! -d "$REL/data" ] || [ ! -d "$REL/harness" ]; then
  log "no release (data/ and harness/) under .release/a"
  pack
  exit 2
fi
cd "$REL"
export PYTHONPATH=/tmp/site:$REL/harness/_vendor
CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
export CUDA_HOME CUDA_DEBUGGER_GPU_ARCH=Hopper
bash scripts/prepare_benchmark.sh >"$LOGS/prepare.log" 2>&1
log "prepare_benchmark: rc $?"
python3 -c "import sys, torch, openai, pydantic, yaml, kernelbench; print(sys.version.split()[0], 'torch', torch.__version__, torch.cuda.is_available(), 'openai', openai.__version__, 'pydantic', pydantic.VERSION)" \
  >"$LOGS/versions.txt" 2>&1
log "python: $(tail -1 "$LOGS/versions.txt")"
python3 -c "import dotenv" 2>/dev/null || log "python-dotenv is not importable (the harness itself does not need it)"
for tool in nvcc nsys compute-sanitizer bc; do command -v "$tool" >/dev/null && log "$tool: $(command -v "$tool")" || log "$tool: not on PATH"; done

python3 "$REPO/scripts/harness_stub_server.py" --data "$REL/data" --port "$PORT" --refuse "$REFUSE" \
  --log "$LOGS/stub.log" 2>"$LOGS/stub.err" &
STUB=$!
trap 'kill $STUB 2>/dev/null' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=1)" 2>/dev/null && break
  sleep 0.2
done
log "stub on port $PORT: $(head -1 "$LOGS/stub.log" 2>/dev/null)"

CFG=$T/cb_local.yaml
cat >"$CFG" <<EOF
api:
  backend: vllm
  model: stub-broken-then-reference
  base_url: "http://127.0.0.1:$PORT/v1"
  temperature: 0.7
  max_tokens: 4096
experiment:
  name: cb_stub
  max_iterations: 2
  max_history_rounds: 4
  dataset_dir: data
  output_dir: outputs/cb_stub
  tasks: []
build:
  timeout: 120
  test_timeout: 150
  workdir: $T/cb_work
logging:
  level: INFO
  save_api_responses: false
EOF
ARGS=(-c "$CFG" --mode debug --v2-task-list benchmark/task_list.json)
# shellcheck disable=SC2086
timeout 60 python3 -m harness.run_experiment "${ARGS[@]}" --dry-run --tasks $REFUSE $NVCC_TASKS $KB_TASKS \
  >"$LOGS/preflight.log" 2>&1
log "preflight: rc $? ($(grep -c '^  - ' "$LOGS/preflight.log") tasks would run)"

# The nvcc tasks first, leaving the kernelbench one (a PyTorch extension build) at least 200 s.
budget=$(($(left) - 200))
[ "$budget" -lt 60 ] && budget=60
# shellcheck disable=SC2086
timeout -k 10 "$budget" python3 -m harness.run_experiment "${ARGS[@]}" --tasks $REFUSE $NVCC_TASKS \
  >"$LOGS/harness-1.log" 2>&1
log "harness (nvcc tasks, limit ${budget} s): rc $?"
R=$(ls -d "$REL"/outputs/cb_stub/*/ 2>/dev/null | tail -1)
budget=$(($(left) - 25))
if [ -n "$R" ] && [ "$budget" -gt 30 ]; then
  # shellcheck disable=SC2086
  timeout -k 10 "$budget" python3 -m harness.run_experiment "${ARGS[@]}" --resume "$R" --tasks $KB_TASKS \
    >"$LOGS/harness-2.log" 2>&1
  log "harness (kernelbench, --resume, limit ${budget} s): rc $?"
else
  log "harness (kernelbench) not run: ${budget} s left, run dir '${R}'"
fi
kill "$STUB" 2>/dev/null
cd "$REPO"
pack
