#!/usr/bin/env bash
# Session 16, call 5 (device, nvidia-h200-x2, repository root, .peers carried): the table with block_m 128 on two
# warpgroups from 193 rows a slice (call 4: 0.96x-0.97x the one-warpgroup entry's time from 257 rows, 0.92x block_m
# 64's at 227). GPU 0: the gate's save beside it (0018, with the peer), one compare right after (the peer left out).
# GPU 1: the whole suite, both models, then compute-sanitizer on the new entry (racecheck, synccheck, memcheck).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
C="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
GPU0="bash tools/device_agenda.sh baselines
$C 2>&1 | tee \$OUT/compare1.log | tail -2" GPU1="bash tools/device_agenda.sh suite
SANITIZE_CASES=\"\$(printf 'racecheck uniform 20480 128\\nsynccheck uniform 16384 256\\nmemcheck uniform 16384 256')\" bash tools/device_agenda.sh sanitize" DEADLINE_S=545 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
