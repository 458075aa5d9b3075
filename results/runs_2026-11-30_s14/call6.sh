#!/usr/bin/env bash
# Session 14, call 6 (device, repository root, .peers carried): mode_probe.py on cases whose same-GPU compares ran past
# 5% this session (uniform-bs8192, zipf-bs21504) and two others.
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
GPU0="python3 results/runs_2026-11-30_s14/mode_probe.py uniform-bs8192,zipf-bs21504,uniform-bs2560,zipf-bs22528 > /tmp/r/g0/modes.log 2>&1; cat /tmp/r/g0/modes.log" DEADLINE_S=240 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
