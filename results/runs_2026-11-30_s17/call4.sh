#!/usr/bin/env bash
# Session 17, call 4 (device, nvidia-h200-x2, repository root, .peers carried), at 59b4504's table: block_m 64 on two
# warpgroups (no extra rows) from 81 to 192 rows a slice, block_m 64 on one with extra rows from 49 to 80 (calls 2-3).
# GPU 0: the gate's save with the peer (0019: each gpt-oss-120b case checked against the reference before it is
# timed), then the gate against it once (without the peer). GPU 1: the whole suite on both models, then memcheck,
# racecheck and synccheck on the new entry (uniform-bs3584: 113 rows a slice, also at N = 256).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
export GPU0="bash tools/device_agenda.sh baselines
$C1 2>&1 | tee \$OUT/compare1.log | tail -2"
export GPU1="bash tools/device_agenda.sh suite
SANITIZE_CASES=\"\$(printf 'memcheck uniform 3584\nracecheck uniform 3584 256\nsynccheck uniform 3584')\" bash tools/device_agenda.sh sanitize"
DEADLINE_S=540 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
