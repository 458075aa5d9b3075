#!/usr/bin/env bash
# Session 15, call 4 (device, repository root, .peers carried): a second compare against 0016 (saved in call 3 on
# another H200), then the slowed run (block_m 16 with two stages forced everywhere) against it, the peer left out.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
GPU0="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare > /tmp/r/g0/compare2.log 2>&1; tail -2 /tmp/r/g0/compare2.log
bash tools/device_agenda.sh slowed" DEADLINE_S=540 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
