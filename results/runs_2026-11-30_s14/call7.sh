#!/usr/bin/env bash
# Session 14, call 7 (device, repository root, .peers carried): compute-sanitizer on the two entries the 31-48-row
# entry moved (024c7dd): block_m 32 with extra rows (uniform-bs1280: slices of 30-53 rows, widened last tiles) and the
# two-warpgroup entry now up to 30 rows (zipf-bs1024: 17 rows a slice; racecheck on uniform-bs768 at N = 256: 25).
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
export SANITIZE_CASES='memcheck uniform 1280
racecheck uniform 1280 256
synccheck uniform 1280
memcheck zipf 1024
racecheck uniform 768 256
synccheck zipf 1024'
GPU0="bash tools/device_agenda.sh sanitize" DEADLINE_S=230 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
