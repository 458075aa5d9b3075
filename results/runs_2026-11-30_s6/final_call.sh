#!/usr/bin/env bash
# Session 6's last device call, on a two-H200 machine (repository root, triton_kernels in .peers/), the kernel with
# tile-major words:
#   GPU 0: the gate against the old baseline (0003, row-major words: improvements expected, no regression), then a new
#          baseline save with the peer (0004) and two compares against it;
#   GPU 1: the whole suite (both models), then compute-sanitizer memcheck (the new addressing) on each table entry.
# Everything stops at a deadline (DEADLINE_S after the start) so that the logs come back inside the call's limit;
# a sanitizer run cut by it reports exit status 124 (no verdict). Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
T=suites/test_benchmark.py

sanitize() {  # tool, uniform batch, forced fields: one case under compute-sanitizer until the deadline
  local left=$((deadline - $(date +%s)))
  [ "$left" -gt 10 ] || return
  echo "== $1 uniform-bs$2 $3 (limit ${left}s)" >>"$OUT/sanitize.log"
  MOE_GATHER_SM90_FORCE=$3 timeout "$left" compute-sanitizer --tool "$1" --error-exitcode 9 \
    python3 tools/sanitize_case.py uniform "$2" 2>&1 | tail -3 >>"$OUT/sanitize.log"
  echo "exit status ${PIPESTATUS[0]}" >>"$OUT/sanitize.log"
}

final_out=$OUT
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  timeout $((deadline - $(date +%s))) bash tools/device_agenda.sh suite >/dev/null
  sanitize memcheck 128 ""
  sanitize memcheck 1024 block_m=64,num_warps=4,maxnreg=128
  sanitize memcheck 384 ""
  sanitize memcheck 1024 ""
  sanitize memcheck 4096 ""
) &
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  PYTHONPATH= timeout $((deadline - $(date +%s))) python3 -m pytest $T --gpu hopper -q -p no:cacheprovider \
    --benchmark-compare > $logs/g0/compare_old.log 2>&1
  for step in baselines compare; do
    timeout $((deadline - $(date +%s))) bash tools/device_agenda.sh $step >/dev/null
  done
) &
wait
tail -n 3 $logs/g1/suite.log
tail -n 1 $logs/g0/*.log
cat $logs/g*/sanitize.log
tar czf "$final_out/r.tgz" -C /tmp r
