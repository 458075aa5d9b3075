#!/usr/bin/env bash
# Session 6, call 6 (one H200): stage counts of the small tiles on all 23 cases of up to 16 rows a slice, with the
# tile-major words (the slowed gate run had block_m 16 with two stages faster on zipf-bs320 and zipf-bs384).
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout ${DEADLINE_S:-330} python3 tools/sweep_sm90.py --json "$OUT/sweep_stages.json" \
  --configs "block_m=8,num_buffers=8;block_m=8,num_buffers=6;block_m=8,num_buffers=4;block_m=16,num_buffers=4;block_m=16,num_buffers=3;block_m=16,num_buffers=2;block_m=32,num_buffers=2,num_warps=8" \
  --cases zipf-bs128,zipf-bs160,zipf-bs192,zipf-bs224,zipf-bs256,zipf-bs320,zipf-bs384,zipf-bs448,zipf-bs512,zipf-bs640,zipf-bs768,zipf-bs896,zipf-bs1280,zipf-bs1536,zipf-bs4096,uniform-bs128,uniform-bs160,uniform-bs192,uniform-bs224,uniform-bs256,uniform-bs320,uniform-bs384,uniform-bs448 \
  > "$OUT/sweep_stages.log" 2>&1
echo "rc=$?"; tail -5 "$OUT/sweep_stages.log"
