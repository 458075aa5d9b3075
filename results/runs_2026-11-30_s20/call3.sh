#!/usr/bin/env bash
# Session 20, call 3 (device, nvidia-h200-x2, repository root, .peers carried), at the tree of the commit that adds
# this script: an opt-in persistent grid (Sm90Config.persistent: programs a multiprocessor; each walks the work items
# and issues the next tile's first copies before this tile's epilogue). Call 2 put 16-17.5% of the block_m 128 entry's
# time and 11-12.5% of the block_m 64 entry's in what does not grow with K (program starts and epilogues).
# GPU 0: the table's block_m 128 entry (M) against it persistent (MP, one program a multiprocessor) on 6 cases of
# 227-1984 rows a slice, interleaved, each output checked against the reference first.
# GPU 1: the block_m 64 entry (B: pairs and extra rows) against block_m 64 persistent at 2 programs a multiprocessor
# (128 registers; without pairs and extra, which persistent does not take) on 5 cases of 49-192 rows; then
# compute-sanitizer memcheck, synccheck and racecheck on MP (forced) at N = 256 (160 items, 132 programs), where some walk
# several items and the ring is reused across them.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
M=block_m=128,num_buffers=4,num_warps=8,narrow=2,overlap=1
MP=$M,persistent=1
B=block_m=64,num_buffers=4,num_warps=8,pairs=1,narrow=2,extra=16
BP=block_m=64,num_buffers=4,num_warps=8,narrow=2,persistent=2,maxnreg=128
S="python3 tools/sweep_sm90.py"
export GPU0="$S --json \$OUT/mp.json --configs '$M;$MP;$M;$MP' --cases uniform-bs7168,uniform-bs8192,zipf-bs3584,uniform-bs12288,zipf-bs16384,uniform-bs31744 >\$OUT/mp.log 2>&1"
export GPU1="$S --json \$OUT/bp.json --configs '$B;$BP;$B;$BP' --cases uniform-bs1536,uniform-bs2560,uniform-bs4096,zipf-bs1792,zipf-bs7168 >\$OUT/bp.log 2>&1
MOE_GATHER_SM90_FORCE=persistent=1 SANITIZE_CASES=\$'memcheck uniform 16384 256\nsynccheck uniform 16384 256\nracecheck uniform 16384 256' bash tools/device_agenda.sh sanitize"
DEADLINE_S=420 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
