#!/usr/bin/env bash
# Session 20, call 8 (device, nvidia-h200-x2, repository root, .peers carried: .peers/base holds e316288's
# moe_gather/), at the tree of the commit that adds this script: a timing-only probe whose programs skip their
# epilogue (it stays in the binary behind a branch never taken: `alpha == -12345.0`), against e316288 in one process:
# how much of call 2's fixed part (16-17.5% at block_m 128, 11-12.5% at block_m 64) is the epilogue. The probe's
# outputs are not written (its agreement columns are meaningless).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
AB="python3 tools/ab_commit.py .peers/base"
export GPU0="$AB uniform-bs8192,uniform-bs31744,zipf-bs16384 --rounds 2 --json \$OUT/noepi_a.json >\$OUT/noepi_a.log 2>&1"
export GPU1="$AB uniform-bs2560,uniform-bs4096,uniform-bs128,zipf-bs128 --rounds 2 --json \$OUT/noepi_b.json >\$OUT/noepi_b.log 2>&1"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
