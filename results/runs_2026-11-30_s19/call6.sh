#!/usr/bin/env bash
# Session 19, call 6 (device, nvidia-h200-x2, repository root, .peers carried), at the session's last table (9e67bff's):
# the whole suite, both models, on two GPUs through pytest-xdist (one worker a GPU), nvidia-smi sampling the compute
# processes beside it.
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv -l 5 >"$OUT/smi_apps.log" 2>&1 &
smi=$!
timeout 540 python3 -m pytest suites/ -n 2 --gpu hopper --model all -q -p no:cacheprovider --benchmark-disable -rfEs \
  >"$OUT/suite_xdist.log" 2>&1
echo "exit status $?" >>"$OUT/suite_xdist.log"
kill $smi
tail -4 "$OUT/suite_xdist.log"
