#!/usr/bin/env bash
# Session 16, call 5 (device, nvidia-h200: the two-GPU machine was refused; repository root, .peers carried): the table
# with block_m 128 on two warpgroups from 193 rows a slice (call 4: 0.96x-0.97x the one-warpgroup entry's time from
# 257 rows, 0.92x block_m 64's at 227). The edge tests (every tile width of each entry, NaN / Inf, K ending anywhere),
# the gate's save beside it (0018, with the peer: each gpt-oss-120b case checked against the reference before it is
# timed), gpt-oss-20b's cases against the reference, then racecheck on the new entry.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
P="python3 -m pytest --gpu hopper -q -p no:cacheprovider --benchmark-disable"
GPU0="$P suites/test_kernel_edges.py > \$OUT/edges.log 2>&1; tail -2 \$OUT/edges.log
bash tools/device_agenda.sh baselines
$P suites/test_kernel.py --model gpt-oss-20b > \$OUT/kernel20b.log 2>&1; tail -2 \$OUT/kernel20b.log
SANITIZE_CASES='racecheck uniform 20480 128' bash tools/device_agenda.sh sanitize" DEADLINE_S=520 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
