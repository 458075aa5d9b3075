#!/usr/bin/env bash
# Session 6, call 2: the tile-major weight layout (Sm90Weights.tiled) checked on the GPU (kernel and edge tests),
# A/B against row-major in one process, and the block_m 8/16 stage counts swept with it.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout 200 python3 -m pytest suites/test_kernel.py suites/test_kernel_edges.py --gpu hopper -q -p no:cacheprovider \
  --batch-sizes 128,256,1536,4096,31744 > "$OUT/r/check_tiled.log" 2>&1; echo "tests rc=$?"; tail -3 "$OUT/r/check_tiled.log"
timeout 200 python3 results/runs_2026-11-30_s6/ab_tiled.py \
  uniform-bs128,uniform-bs192,uniform-bs256,uniform-bs448,zipf-bs192,zipf-bs512,zipf-bs1280,zipf-bs4096,uniform-bs640,uniform-bs1536,uniform-bs3072,zipf-bs2048,uniform-bs8192,zipf-bs16384 \
  > "$OUT/r/ab_tiled.log" 2>&1; echo "ab rc=$?"; cat "$OUT/r/ab_tiled.log" | tail -16
timeout 150 python3 tools/sweep_sm90.py --json "$OUT/r/sweep_small.json" \
  --configs "block_m=8,num_buffers=8;block_m=8,num_buffers=6;block_m=8,num_buffers=4;block_m=8,num_buffers=3;block_m=16,num_buffers=4;block_m=16,num_buffers=3;block_m=16,num_buffers=6" \
  --cases uniform-bs128,uniform-bs224,zipf-bs192,zipf-bs512,zipf-bs1280,uniform-bs256,uniform-bs448,zipf-bs128,zipf-bs768,zipf-bs4096 \
  > "$OUT/r/sweep_small.log" 2>&1; echo "sweep rc=$?"
tar czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$OUT/r"
