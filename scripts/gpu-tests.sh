#!/usr/bin/env bash
# On a GPU machine without a package index: install the wheels carried in .whl/ (made by
# shared/tools/gpu-wheels.sh with the extra names pytest-textual-snapshot syrupy httpx2 httpcore2 truststore,
# since openai 3.x needs httpx2) into /tmp/site, then run the gpu-marked tests. Logs go to $OUT if set.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/beaver-out}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pytest -m gpu -p no:cacheprovider -o addopts="--strict-markers" -rA "$@" 2>&1 | tee "$out/gpu-tests.log"
