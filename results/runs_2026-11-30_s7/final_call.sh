#!/usr/bin/env bash
# Session 7's last device call, on a two-H200 machine (repository root, triton_kernels in .peers/), the table with
# narrowed last tiles:
#   GPU 0: the gate against session 6's baseline (0005), then a new baseline save with the peer (0006) and two
#          compares against it (tools/device_agenda.sh compare);
#   GPU 1: the whole suite (both models), then compute-sanitizer on a zipf case per table entry.
# Everything stops at a deadline (DEADLINE_S after the start) so that the logs come back inside the call's limit;
# a sanitizer run cut by it reports exit status 124 (no verdict). Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
left() { echo $((deadline - $(date +%s))); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  timeout "$(left)" bash tools/device_agenda.sh suite >/dev/null
  timeout "$(left)" bash tools/device_agenda.sh sanitize >/dev/null
) &
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  PYTHONPATH= timeout "$(left)" python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider \
    --benchmark-compare > $logs/g0/compare_old.log 2>&1
  for step in baselines compare; do
    timeout "$(left)" bash tools/device_agenda.sh $step >/dev/null
  done
) &
wait
tail -n 3 $logs/g1/suite.log
tail -n 1 $logs/g0/*.log
cat $logs/g1/sanitize.log
tar czf "$OUT/r.tgz" -C /tmp r
