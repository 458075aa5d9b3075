#!/usr/bin/env bash
# Session 19, call 1 (device, nvidia-h200-x2, repository root, .peers carried), at f6e2659 (024c7dd's kernel with
# 0841523's line, bd8fa4a's table): the checks session 18 left.
# GPU 0: compute-sanitizer over the default case list of `device_agenda.sh sanitize` (memcheck, racecheck, synccheck on
# every table entry; synccheck on block_m 32 on two warpgroups with extra rows, uniform-bs1280, among them), then the
# gate against 0021 (saved on GPU cce5198b) without the peer. GPU 1: the whole suite, both models.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
export GPU0="bash tools/device_agenda.sh sanitize
$C1 2>&1 | tee \$OUT/compare1.log | tail -2"
export GPU1="bash tools/device_agenda.sh suite"
DEADLINE_S=560 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
