#!/usr/bin/env bash
# Session 15, call 2 (device, repository root, .peers carried): peer_probe2.py with nvidia-smi sampling every 100 ms.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
C=uniform-bs640,uniform-bs2048,uniform-bs3584,uniform-bs8192,uniform-bs31744,zipf-bs31744
GPU0="(nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 100 > /tmp/r/g0/smi_trace.csv & p=\$!; python3 results/runs_2026-11-30_s15/peer_probe2.py $C > /tmp/r/g0/peer_probe2.log 2>&1; kill \$p); cat /tmp/r/g0/peer_probe2.log" DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
