#!/usr/bin/env bash
# Session 19, call 5 (device, nvidia-h200, repository root, .peers carried), at the table whose block_m 32 entry on two
# warpgroups ends at 40 rows a slice instead of 48 (call 4): the two cases it moves (gpt-oss-20b's bs384, both
# routings) through the kernel test against the reference, and through the benchmark against triton_kernels.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
export GPU0="python3 -m pytest suites/test_kernel.py --gpu hopper --model all --batch-sizes 384 -q -p no:cacheprovider --benchmark-disable -rA 2>&1 | tee \$OUT/kernel384.log | tail -6
python3 -m moe_gather bench --model gpt-oss-20b --batch-sizes 320,384,448 --json \$OUT/bench20b_384.json 2>&1 | tee \$OUT/bench20b_384.log | tail -9"
DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
