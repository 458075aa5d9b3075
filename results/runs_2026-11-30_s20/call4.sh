#!/usr/bin/env bash
# Session 20, call 4 (device, nvidia-h200-x2, repository root, .peers carried), the tree of call 3. Call 3 had the
# persistent grid 1.03x-1.15x slower than the table's block_m 128 entry (uniform-bs8192 the most: its slices of ~257
# rows give two full tiles and a narrowed one each, and a static round-robin of 2160 items over 132 programs leaves
# up to 17 full tiles on one program where the balanced load is ~15.1). With the grid ordered widest tile first
# (`widest_first`), the narrowed tiles are the last items, which round-robin spreads over the programs that hold one
# item more. M: the table's entry; MPW: persistent and widest first; MW: widest first alone. Interleaved, each output
# checked against the reference first.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
M=block_m=128,num_buffers=4,num_warps=8,narrow=2,overlap=1
MPW=$M,persistent=1,widest_first=1
MW=$M,widest_first=1
S="python3 tools/sweep_sm90.py"
export GPU0="$S --json \$OUT/mpw_a.json --configs '$M;$MPW;$MW;$M;$MPW;$MW' --cases uniform-bs7168,uniform-bs8192,zipf-bs3584 >\$OUT/mpw_a.log 2>&1"
export GPU1="$S --json \$OUT/mpw_b.json --configs '$M;$MPW;$MW;$M;$MPW;$MW' --cases uniform-bs12288,zipf-bs16384,uniform-bs31744 >\$OUT/mpw_b.log 2>&1"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
