#!/usr/bin/env bash
# Session 19, call 4 (device, nvidia-h200-x2, repository root, .peers carried), at f6e2659's kernel and table (the
# half_extra probe reverted), sweep_sm90.py with --model. Call 2 put gpt-oss-20b-uniform-bs384 (48 rows a local slice,
# 18 of its 32 slices of 49-58 rows: two 32-row tiles each on the table's block_m 32 entry) at 1.33x the peer where
# its neighbours run 1.59x (40 rows) and 1.54x (56, block_m 64). No gpt-oss-120b case has 41-48 rows a slice.
# GPU 0: the entry up to 48 rows (G) against the block_m 64 entry (B) on gpt-oss-20b's cases of 32, 40 and 48 rows.
# GPU 1: the same on gpt-oss-120b's of 31, 35 and 40 rows; then B against the block_m 128 entry (M) on gpt-oss-20b's
# cases of 160-224 rows. Interleaved, each output checked against the reference first.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
G=block_m=32,num_buffers=4,num_warps=8,maxnreg=80,pairs=1,narrow=2,extra=16
B=block_m=64,num_buffers=4,num_warps=8,pairs=1,narrow=2,extra=16
M=block_m=128,num_buffers=4,num_warps=8,narrow=2,overlap=1
S="python3 tools/sweep_sm90.py"
export GPU0="$S --model gpt-oss-20b --json \$OUT/b48_20b.json --configs '$G;$B;$G;$B' --cases uniform-bs256,zipf-bs256,uniform-bs320,zipf-bs320,uniform-bs384,zipf-bs384 >\$OUT/b48_20b.log 2>&1"
export GPU1="$S --json \$OUT/b48_120b.json --configs '$G;$B;$G;$B' --cases uniform-bs1024,zipf-bs2048,uniform-bs1280 >\$OUT/b48_120b.log 2>&1
$S --model gpt-oss-20b --json \$OUT/b192_20b.json --configs '$B;$M;$B;$M' --cases uniform-bs1280,zipf-bs1280,uniform-bs1536,zipf-bs1536,uniform-bs1792 >\$OUT/b192_20b.log 2>&1"
DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
