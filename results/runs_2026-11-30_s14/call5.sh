#!/usr/bin/env bash
# Session 14, call 5 (device, repository root, .peers carried): at the table with the 31-48-row entry, the edge tests
# (every entry's tile widths, NaN / Inf, K ending anywhere, the opt-in plans) and the kernel against the reference on
# every case whose rows a slice fall in 31-48 (both models), then the gate's save (0015) and one compare against it.
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
K='bs1024 or bs1280 or bs2048 or bs256 or bs320 or bs384'
GPU0="python3 -m pytest suites/test_kernel_edges.py --gpu hopper -q -p no:cacheprovider --benchmark-disable > /tmp/r/g0/edges.log 2>&1; tail -3 /tmp/r/g0/edges.log
python3 -m pytest suites/test_kernel.py --gpu hopper --model all -q -p no:cacheprovider --benchmark-disable -k '$K' > /tmp/r/g0/kernel.log 2>&1; tail -3 /tmp/r/g0/kernel.log
bash tools/device_agenda.sh baselines
PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare > /tmp/r/g0/compare1.log 2>&1; tail -2 /tmp/r/g0/compare1.log" DEADLINE_S=560 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
