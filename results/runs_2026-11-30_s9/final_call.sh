#!/usr/bin/env bash
# Session 9's proof, on a two-H200 machine (repository root, triton_kernels in .peers/):
#   GPU 0: the gate against session 8's baseline (0008), the save of a new one with the peer, two compares against it
#          (tools/device_agenda.sh baselines, compare);
#   GPU 1: the steps of tools/device_agenda.sh named in GPU1_STEPS (default: sanitize; call 4: "suite sanitize").
# Stops at DEADLINE_S after the start. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  for step in ${GPU1_STEPS:-sanitize}; do
    timeout "$(left)" bash tools/device_agenda.sh $step >/dev/null
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
tail -n 1 $logs/g0/*.log
[ -f $logs/g1/suite.log ] && tail -n 1 $logs/g1/suite.log
cat $logs/g1/sanitize.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
