#!/bin/sh
# Harness of a CPU-only fixture (as tests/data/cpu/sleepy): the "kernel" is a shell function in solution.sh.
. ./solution.sh
if [ "$1" = "--bench" ]; then
  for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "BEAVER_TIME_MS $(cost)"; done
  exit 0
fi
got=$(compute 6 7)
if [ "$got" = "42" ]; then echo "PASS"; exit 0; fi
echo "MISMATCH: compute(6, 7) = $got, expected 42"
exit 1
