#!/usr/bin/env bash
# Session 17, call 6 (device, nvidia-h200-x2, repository root, .peers carried), at the table with block_m 64 on two
# warpgroups with parity rings (`pairs`) from 81 to 192 rows a slice (call 5: 0.981x-0.991x the time without, on all 16
# cases). GPU 0: the gate's save with the peer (0020; each gpt-oss-120b case checked against the reference before it is
# timed). GPU 1: the edge tests (every tile width of each entry, NaN / Inf through every entry, K ending anywhere), then
# both models' cases against the reference. The device time left (~6 minutes) allows no compare after the save.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
P="python3 -m pytest --gpu hopper -q -p no:cacheprovider --benchmark-disable"
export GPU0="bash tools/device_agenda.sh baselines"
export GPU1="$P suites/test_kernel_edges.py > \$OUT/edges.log 2>&1; tail -2 \$OUT/edges.log
$P suites/test_kernel.py --model all > \$OUT/kernel.log 2>&1; tail -2 \$OUT/kernel.log"
DEADLINE_S=318 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
