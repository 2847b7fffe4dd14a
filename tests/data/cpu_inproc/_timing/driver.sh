#!/bin/bash
# A CPU stand-in for corpus/_common/beaver_timing.cuh's timing driver: the same arguments and the same
# output protocol (BEAVER_SIDE sections, BEAVER_TIME_MS / BEAVER_HOST_MS per timed launch, POISON_LEFT,
# BEAVER_THREADS, BEAVER_STOPPED, BEAVER_CAPPED, BEAVER_DONE, exit status; the side budget counts the
# printed launch times, as if they were the host time of each launch). A "side library" is a solution.sh: cost()
# prints the time of launch $1 of round $2; optional hooks: ok_at_size (a check at the timing size),
# ok_after (the check after timing), extra (printed during its rounds), load_threads / round_threads
# (host threads it leaves running), host (the host time of launch $1).
iters=20; rounds=3; ref=""; cand=""; stop=""; cvl=0.03; budget=0; min_iters=5
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) iters=$2; shift ;;
    --reference) ref=$2; shift ;;
    --candidate) cand=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --stop-below) stop=$2; shift ;;
    --cv-limit) cvl=$2; shift ;;
    --side-budget-ms) budget=$2; shift ;;
    --min-iters) min_iters=$2; shift ;;
  esac
  shift
done
threads=4
call() { ( . "$1"; shift; "$@" ) ; }
has() { ( . "$1"; type "$2" >/dev/null 2>&1 ) ; }
sides="reference"; lib_reference=$ref
[ -n "$cand" ] && sides="reference candidate" && lib_candidate=$cand
for s in $sides; do
  eval lib=\$lib_$s
  echo "BEAVER_SIDE $s load"
  [ -f "$lib" ] || { echo "BEAVER_LOAD_FAILED $s: cannot load $lib: no such file" >&2; exit 4; }
  has "$lib" load_threads && threads=$((threads + $(call "$lib" load_threads)))
  echo "BEAVER_THREADS $threads"
done
echo "BEAVER_DRIVER sides $(echo $sides | wc -w) rounds $rounds iters $iters warmup 3 seed 1"
for s in $sides; do
  eval lib=\$lib_$s
  echo "BEAVER_SIDE $s check"
  echo "BEAVER_POISON_LEFT y 0 of 10"
  if has "$lib" ok_at_size && ! call "$lib" ok_at_size; then echo "MISMATCH y at the timing size" >&2; echo FAIL; exit 1; fi
  echo "OK y at the timing size"
  echo "BEAVER_THREADS $threads"
done
done_rounds=0
for r in $(seq 1 "$rounds"); do
  for s in $sides; do
    eval lib=\$lib_$s
    echo "BEAVER_SIDE $s round $r"
    sum=0
    for i in $(seq 1 "$iters"); do
      if [ "$i" -gt "$min_iters" ] && awk -v s="$sum" -v b="$budget" 'BEGIN { exit !(b > 0 && s >= b) }'; then
        echo "BEAVER_CAPPED $((i - 1)) of $iters launches after $sum ms"; break
      fi
      t=$(call "$lib" cost "$i" "$r")
      sum=$(awk -v s="$sum" -v t="$t" 'BEGIN { print s + t }')
      h=$t; has "$lib" host && h=$(call "$lib" host "$i")
      echo "BEAVER_TIME_MS $t"; echo "BEAVER_HOST_MS $h"
      eval "first_$s=\$t"
    done
    has "$lib" extra && call "$lib" extra
    echo "BEAVER_POISON_LEFT y_timed 0 of 10"
    if has "$lib" ok_after && ! call "$lib" ok_after; then echo "MISMATCH y after timing" >&2; echo FAIL; exit 1; fi
    has "$lib" round_threads && threads=$((threads + $(call "$lib" round_threads)))
    echo "BEAVER_THREADS $threads"
  done
  done_rounds=$r
  if [ "$r" = 1 ] && [ -n "$stop" ] && [ -n "$cand" ] && [ "$rounds" -gt 1 ]; then
    if awk -v a="$first_reference" -v b="$first_candidate" -v x="$stop" 'BEGIN { exit !(a / b < x) }'; then
      echo "BEAVER_STOPPED after 1 of $rounds rounds"; break
    fi
  fi
done
echo "BEAVER_DONE rounds $done_rounds iters $iters"
echo PASS
