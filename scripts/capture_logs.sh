#!/usr/bin/env bash
# On a GPU machine: record real build/run/compute-sanitizer logs of the crafted cases in
# tests/data/gpu_cases/ into $OUT/gpu_logs.jsonl, and probe the tools timing relies on into $OUT/probe.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/beaver-out}
mkdir -p "$out"
python3 scripts/capture_logs.py --out "$out" 2>&1 | tee "$out/capture.txt"
{
  echo "== nvidia-smi"; nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
  echo "== nvcc"; nvcc --version | tail -2
  echo "== compute-sanitizer"; compute-sanitizer --version
  echo "== ncu"; ncu --version
  echo "== nsys"; command -v nsys || echo "nsys: not installed"
  echo "== python"; python3 -c "import sys, torch; print(sys.version); print('torch', torch.__version__, torch.cuda.is_available())"
} >"$out/probe.txt" 2>&1
cat "$out/probe.txt"
