#!/usr/bin/env bash
# Session 5's last device call, on a two-H200 machine (repository root, triton_kernels in .peers/):
#   GPU 1: the whole suite, then compute-sanitizer racecheck on the block_m 16 entry;
#   GPU 0: the throughput gate (baseline save with the peer, two compares, the slowed switch), then memcheck on the
#          block_m 8 entry and racecheck on the two block_m 64 entries.
# Everything stops at a deadline (DEADLINE_S after the start) so that the logs come back inside the call's limit;
# a sanitizer run cut by it reports exit status 124 (no verdict). Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-530}))
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1

sanitize() {  # tool, uniform batch: one case under compute-sanitizer until the deadline
  local left=$((deadline - $(date +%s)))
  [ "$left" -gt 10 ] || return
  echo "== $1 uniform-bs$2 (limit ${left}s)" >>"$OUT/sanitize.log"
  timeout "$left" compute-sanitizer --tool "$1" --error-exitcode 9 python3 tools/sanitize_case.py uniform "$2" 2>&1 |
    tail -3 >>"$OUT/sanitize.log"
  echo "exit status ${PIPESTATUS[0]}" >>"$OUT/sanitize.log"
}

final_out=$OUT
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  timeout $((deadline - $(date +%s))) bash tools/device_agenda.sh suite >/dev/null
  sanitize racecheck 384
) &
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  for step in baselines compare slowed; do
    timeout $((deadline - $(date +%s))) bash tools/device_agenda.sh $step >/dev/null
  done
  sanitize memcheck 128
  sanitize racecheck 4096
  sanitize racecheck 8192
) &
wait
tail -n 3 $logs/g1/suite.log
tail -n 1 $logs/g0/*.log
cat $logs/g*/sanitize.log
tar czf "$final_out/r.tgz" -C /tmp r
