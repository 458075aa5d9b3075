#!/usr/bin/env bash
# Session 16, call 3 (device, nvidia-h200-x2, repository root, .peers carried): the table with its bounds moved by
# calls 1-2 and session 15's calls 5-6 (one-warpgroup block_m 32 up to 24 rows a slice, block_m 128 from 257): the
# gate's save beside it (0017, with the peer), a compare against it right after (the peer left out); on the other GPU
# the whole suite, both models.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
# one compare (the agenda's compare step runs two, past the call's 10 minutes after the save)
C="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
GPU0="bash tools/device_agenda.sh baselines
$C 2>&1 | tee \$OUT/compare1.log | tail -2" GPU1="bash tools/device_agenda.sh suite" DEADLINE_S=570 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
