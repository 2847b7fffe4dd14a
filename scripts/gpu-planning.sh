#!/usr/bin/env bash
# One real GPU session of each planning arm (docs/protocols.md) on a bundled task: the local toolchain
# builds, runs, sanitizes and times every candidate; the coder, the planner and the summariser are
# scripts/planning_stub_server.py on loopback (its coder answers the broken start until a plan says to
# replace the kernel, or it has seen feedback, then the task's reference; no model, no network).
#   bash scripts/gpu-planning.sh [TOTAL_SECONDS]          (default 540: ends inside 10 minutes)
# Carried, git-ignored: .whl/ (wheels of what the machine lacks, as for the other GPU scripts).
# Env: TASK (default transpose_00), CORPUS (default corpus, the bundled one), PORT (default 8012), TOOLCHAIN
# (default local). Without a GPU the script can be tried on recorded outcomes: CORPUS=tests/data/recorded
# TASK=vec_scale TOOLCHAIN=recorded:tests/data/recorded/vec_scale.recordings.jsonl (every arm then fails
# once and passes at its second attempt); with TOOLCHAIN=demo, candidates the demos did not record fail.
# Writes to $OUT: planning/<arm>.jsonl (implicit, plan-f, plan-nf, plan-transfer, summary), plan-f.html,
# w/ (steps.log, each arm's console log, the replays as text, metrics.json, the stub's request log).
# Then, here: copy $OUT/planning/*.jsonl to tests/data/planning/gpu/ and check that they replay
# (beavertui replay FILE; in the TUI, `d` to the plan tab).
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
. scripts/gpu-common.sh # wheels into /tmp/site, log(), left(), $W
TASK=${TASK:-transpose_00}
CORPUS=${CORPUS:-corpus}
PORT=${PORT:-8012}
TOOLCHAIN=${TOOLCHAIN:-local}
UNKNOWN=()
[ "$TOOLCHAIN" = local ] || UNKNOWN=(--unknown-candidates fail)
S=$OUT/planning
rm -rf "$S" && mkdir -p "$S"

python3 scripts/planning_stub_server.py --corpus "$CORPUS" --port "$PORT" --log "$W/stub.log" 2>"$W/stub.err" &
STUB=$!
trap 'kill "$STUB" 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q listening "$W/stub.err" 2>/dev/null && break; sleep 0.2; done
grep -q listening "$W/stub.err" || { log "the stub endpoint did not start: $(tail -3 "$W/stub.err")"; exit 3; }
log "stub endpoint on port $PORT: $(head -1 "$W/stub.err")"

URL="http://127.0.0.1:$PORT/v1"
cat >"$W/models.toml" <<EOF
[models.stub-coder]
base_url = "$URL"
stream = true

[models.strong-planner]
model = "stub-coder"
base_url = "$URL"
input_usd_per_mtok = 2.0
output_usd_per_mtok = 8.0

[models.summariser]
model = "stub-coder"
base_url = "$URL"
EOF

arm() {
  local name=$1
  shift
  local budget=$(($(left) - 30))
  if [ "$budget" -lt 30 ]; then
    log "arm $name: skipped, $(left) s left"
    return
  fi
  timeout "$budget" python3 -m beavertui live --task "$TASK" --corpus "$CORPUS" --model stub-coder --models-file "$W/models.toml" \
    --headless --toolchain "$TOOLCHAIN" --notes "scripts/gpu-planning.sh arm $name" --out "$S/$name.jsonl" "${UNKNOWN[@]}" "$@" \
    >"$W/$name.log" 2>&1
  local rc=$?
  log "arm $name: exit $rc, $(tail -1 "$W/$name.log")"
  python3 -m beavertui replay "$S/$name.jsonl" >"$W/replay-$name.txt" 2>&1
}

watch_procs 30
arm implicit
arm plan-f --planning plan
arm plan-nf --planning plan --no-coder-feedback
arm plan-transfer --planning plan --planner strong-planner
arm summary --feedback L3S --summariser summariser
python3 -m beavertui metrics "$S" --json >"$W/metrics.json" 2>"$W/metrics.err"
log "metrics: exit $? ($(wc -c <"$W/metrics.json") bytes)"
[ -f "$S/plan-f.jsonl" ] && python3 -m beavertui export "$S/plan-f.jsonl" --html -o "$OUT/plan-f.html" \
  >>"$W/export.log" 2>&1 && log "exported plan-f.html"
log "done: $(ls "$S" | tr '\n' ' ')"
