#!/usr/bin/env bash
# Session 10, call 10 (two H200s, repository root, triton_kernels in .peers/): the table with block_m 128 and two
# partial sums for slices of 512 rows and more (call 8), proved in what the session's device time left:
#   GPU 0: the gate against 0010 (the peer left out), then the save of a new baseline with the peer;
#   GPU 1: the new entry's GPU tests (every tile width of each entry, K ending anywhere in a tile, the suite's cases
#          of batch 14336, 16384, 26624 and 31744, both models), then compute-sanitizer on it (uniform-bs16384, N
#          narrowed).
# Stops at DEADLINE_S after the start. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-300}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
T=suites/test_benchmark.py
(
  export CUDA_VISIBLE_DEVICES=0
  PYTHONPATH= timeout "$(left)" python3 -m pytest $T --gpu hopper -q -p no:cacheprovider --benchmark-compare \
    > $logs/g0/compare_old.log 2>&1
  timeout "$(left)" python3 -m pytest $T --gpu hopper -q -p no:cacheprovider --benchmark-save=h200 \
    --benchmark-plot=$logs/g0/throughput.png > $logs/g0/save.log 2>&1
  cp baselines/nvidia-h200/*/*.json $logs/g0/
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout "$(left)" python3 -m pytest suites/test_kernel_edges.py suites/test_kernel.py --gpu hopper --model all -q \
    -p no:cacheprovider -rA -k "tile_width or k_ending or opt_in or bs14336 or bs16384 or bs26624 or bs31744" \
    > $logs/g1/tests.log 2>&1
  for run in "memcheck 256" "racecheck 128" "synccheck 256"; do
    set -- $run
    echo "== $1 uniform-bs16384 N=$2" >> $logs/g1/sanitize.log
    timeout "$(left)" compute-sanitizer --tool $1 --error-exitcode 9 python3 tools/sanitize_case.py uniform 16384 $2 \
      </dev/null 2>&1 | tail -3 >> $logs/g1/sanitize.log
    echo "exit status ${PIPESTATUS[0]}" >> $logs/g1/sanitize.log
  done
) &
wait
tail -n 1 $logs/g0/*.log $logs/g1/tests.log
cat $logs/g1/sanitize.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
