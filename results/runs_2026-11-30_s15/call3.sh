#!/usr/bin/env bash
# Session 15, call 3 (device, repository root, .peers carried): the gate's save with sustained timing and the peer
# without its actual out scale (baseline 0016), then one compare against it, the peer left out.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
GPU0="bash tools/device_agenda.sh baselines
PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare > /tmp/r/g0/compare1.log 2>&1; tail -2 /tmp/r/g0/compare1.log" DEADLINE_S=580 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
