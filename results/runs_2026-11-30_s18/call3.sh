#!/usr/bin/env bash
# Session 18, call 3 (device, nvidia-h200, repository root, .peers carried), at the table of four entries: block_m 32
# on two warpgroups with pairs and 16 extra rows now from 25 to 48 rows a slice (call 2: G), block_m 64 likewise from
# 49 to 192 (call 1: B). memcheck and racecheck on G (uniform-bs1280: 40 rows a slice), the edge tests (every tile
# width of each entry, K ending anywhere in a tile, empty and hot slices, ...), then the gate's save with the peer
# (0021: each gpt-oss-120b case checked against the reference before it is timed) and the gate against it once
# (without the peer).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
export GPU0="SANITIZE_CASES=\"\$(printf 'memcheck uniform 1280\nracecheck uniform 1280 256')\" bash tools/device_agenda.sh sanitize
python3 -m pytest suites/test_kernel_edges.py --gpu hopper -q -p no:cacheprovider --benchmark-disable 2>&1 | tee \$OUT/edges.log | tail -3
bash tools/device_agenda.sh baselines
$C1 2>&1 | tee \$OUT/compare1.log | tail -2"
DEADLINE_S=555 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
