#!/usr/bin/env bash
# Session 19, call 7 (device, nvidia-h200, repository root, .peers carried), at 3ec091b (9e67bff's table): ncu (full
# set, the stall reasons) on the mid-range entry, block_m 64 on two warpgroups with parity rings and extra rows, the
# least efficient range of the table (~35% of roofline): uniform-bs3584 (113 rows a slice) and uniform-bs2560 (78: most
# slices' last tiles take extra rows).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
export GPU0="bash tools/device_agenda.sh ncu uniform:3584 uniform:2560"
DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
