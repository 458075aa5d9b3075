#!/usr/bin/env bash
# Session 14, call 3 (device, repository root, .peers carried): at 47e86a2's kernel, the gate's save with the peer
# (baseline 0014), the gate against it twice on the same GPU, then compute-sanitizer on a case per table entry.
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
GPU0="bash tools/device_agenda.sh baselines
bash tools/device_agenda.sh compare
bash tools/device_agenda.sh sanitize" DEADLINE_S=570 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
