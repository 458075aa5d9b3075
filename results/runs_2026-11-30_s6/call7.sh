#!/usr/bin/env bash
# Session 6, call 7 (one H200): A/B in one process of the opt-in Sm90Config.pairs (the ring split by K-tile parity,
# the loop unrolled by two: one bar.sync a tile instead of two) on the three small and mid table entries.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout ${DEADLINE_S:-300} python3 tools/sweep_sm90.py --json "$OUT/sweep_pairs.json" \
  --configs "block_m=8,num_buffers=8;block_m=8,num_buffers=8,pairs=1;block_m=16;block_m=16,pairs=1;block_m=32,num_warps=8;block_m=32,num_warps=8,pairs=1" \
  --cases uniform-bs128,uniform-bs192,zipf-bs192,zipf-bs256,zipf-bs512,zipf-bs1280,zipf-bs128,zipf-bs320,zipf-bs768,zipf-bs4096,uniform-bs256,uniform-bs448,uniform-bs640,uniform-bs1024,uniform-bs1536,uniform-bs3072,zipf-bs2048,zipf-bs7168 \
  > "$OUT/sweep_pairs.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/sweep_pairs.log"
