#!/usr/bin/env bash
# Session 14, call 2 (device, repository root, .peers carried): the whole suite on both models at 47e86a2 (the block_m
# 64 entry with extra=16).
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
GPU0="bash tools/device_agenda.sh suite" DEADLINE_S=560 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
