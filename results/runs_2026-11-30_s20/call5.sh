#!/usr/bin/env bash
# Session 20, call 5 (device, nvidia-h200-x2, repository root, .peers carried), at the tree of the commit that adds
# this script: the persistent grid's second form. Calls 3-4 had the first 1.035x-1.058x slower than the table's block_m
# 128 entry even balanced (widest first): each item started with a dependent load of its gather indices, and the next
# item's prologue waited on another before the epilogue could start. Now an item's gather indices come into shared
# memory by cp.async under the previous item's K loop (the work item two ahead is loaded there too). M: the table's
# entry; MP: persistent; MPW: persistent, widest first. Interleaved, outputs checked against the reference first; then
# memcheck and racecheck on MP (forced) at N = 256, where programs walk two items.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
M=block_m=128,num_buffers=4,num_warps=8,narrow=2,overlap=1
MP=$M,persistent=1
MPW=$MP,widest_first=1
S="python3 tools/sweep_sm90.py"
export GPU0="$S --json \$OUT/mp2_a.json --configs '$M;$MP;$MPW;$M;$MP;$MPW' --cases uniform-bs7168,uniform-bs8192,zipf-bs3584 >\$OUT/mp2_a.log 2>&1
MOE_GATHER_SM90_FORCE=persistent=1 SANITIZE_CASES=\$'memcheck uniform 16384 256' bash tools/device_agenda.sh sanitize"
export GPU1="$S --json \$OUT/mp2_b.json --configs '$M;$MP;$MPW;$M;$MP;$MPW' --cases uniform-bs12288,zipf-bs16384,uniform-bs31744 >\$OUT/mp2_b.log 2>&1
MOE_GATHER_SM90_FORCE=persistent=1 SANITIZE_CASES=\$'racecheck uniform 16384 256' bash tools/device_agenda.sh sanitize"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
