#!/usr/bin/env bash
# Session 8's proof, on a two-H200 machine (repository root, triton_kernels in .peers/):
#   GPU 0: the gate against session 7's baseline (0007), the save of a new one with the peer, two compares against it
#          (tools/device_agenda.sh baselines, compare);
#   GPU 1: the whole suite (both models), then compute-sanitizer: memcheck on a zipf case per table entry first (the
#          loop's order changed: the tile that K ends inside goes first), then racecheck and synccheck on each.
# Stops at DEADLINE_S after the start; a sanitizer run cut by it reports exit status 124 (no verdict). Logs: $OUT/r.tgz.
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
  for tool in memcheck racecheck synccheck; do
    for case in zipf:128 zipf:2048 zipf:2560; do  # block_m 16, 32, 64 (keys 12, 35, 64)
      echo "== $tool ${case%%:*}-bs${case##*:}" >> $logs/g1/sanitize.log
      timeout "$(left)" compute-sanitizer --tool "$tool" --error-exitcode 9 python3 tools/sanitize_case.py \
        "${case%%:*}" "${case##*:}" 2>&1 | tail -3 >> $logs/g1/sanitize.log
      echo "exit status ${PIPESTATUS[0]}" >> $logs/g1/sanitize.log
    done
  done
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
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
