#!/usr/bin/env bash
# Session 19, call 8 (device, nvidia-h200-x2, repository root, .peers carried), with the gate reading each case from
# the newest baseline file that holds it: gpt-oss-20b's first baseline, and the gate on both models.
# GPU 0: the save of gpt-oss-20b's 96 cases (the kernel alone: the peer left out, PYTHONPATH cleared; each output
# checked against the reference first), then the gate on them. GPU 1, once that save is written: the gate on
# gpt-oss-120b, whose cases the new file lacks (each against 0021).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
P="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider"
export GPU0="$P --model gpt-oss-20b --benchmark-save=h200_20b 2>&1 | tee \$OUT/save_20b.log | tail -2
cp baselines/nvidia-h200/*/*_h200_20b.json \$OUT/
$P --model gpt-oss-20b --benchmark-compare 2>&1 | tee \$OUT/compare_20b.log | tail -2"
export GPU1="until compgen -G 'baselines/nvidia-h200/*/*_h200_20b.json' >/dev/null; do sleep 5; done; sleep 2
$P --model gpt-oss-120b --benchmark-compare 2>&1 | tee \$OUT/compare_120b.log | tail -2"
DEADLINE_S=480 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
