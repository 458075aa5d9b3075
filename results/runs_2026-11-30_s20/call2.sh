#!/usr/bin/env bash
# Session 20, call 2 (device, nvidia-h200-x2, repository root, .peers carried), at e316288's kernel: k_probe.py, the
# part of each case's time that does not grow with K (program starts, epilogues, the launch), on the block_m 128
# entry (GPU 0) and the block_m 64 one (GPU 1), each with the table's config.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
P="python3 results/runs_2026-11-30_s20/k_probe.py"
export GPU0="$P uniform-bs8192,uniform-bs31744,zipf-bs16384 >\$OUT/k_large.log 2>&1"
export GPU1="$P uniform-bs2560,uniform-bs4096,zipf-bs7168 >\$OUT/k_mid.log 2>&1"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
