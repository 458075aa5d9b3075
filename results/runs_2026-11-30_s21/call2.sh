#!/usr/bin/env bash
# Session 21, call 2 (device, nvidia-h200-x2, repository root, .peers carried), at 480fdf8's kernel with call 1's
# timing-only probe applied here (no_promotion_probe.patch: the K loop promotes nothing, outputs wrong): call 1's
# bench again with the routings on the other GPUs (uniform on GPU 0, zipf on GPU 1), the probe and the peer in one
# process, to see whether call 1's 1.935x holds on other GPUs.
patch -p1 <results/runs_2026-11-30_s21/no_promotion_probe.patch
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
export GPU0="python3 -m moe_gather bench --routing uniform --json \$OUT/probe_uniform.json >\$OUT/probe_uniform.log 2>&1"
export GPU1="python3 -m moe_gather bench --routing zipf --json \$OUT/probe_zipf.json >\$OUT/probe_zipf.log 2>&1"
DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
