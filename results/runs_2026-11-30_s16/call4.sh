#!/usr/bin/env bash
# Session 16, call 4 (device, nvidia-h200-x2, repository root, .peers carried). GPU 0: block_m 128 with two partial sums
# on two warpgroups (each x tile shared by 128 weight rows; 246 registers, 1 program of 8 warps a multiprocessor, the
# same warps as the entry's 2 programs of 4) against the table's block_m 64 and block_m 128 entries, 192-2586 rows a
# slice, interleaved A;B;C;A;B;C. GPU 1: the gate against 0017 (saved on the other GPU of call 3's machine), once.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
B=block_m=128,narrow=2,overlap=1
C=block_m=128,num_warps=8,narrow=2,overlap=1
# rows a slice: uniform-bs6144 192, uniform-bs7168 227, uniform-bs8192 257, uniform-bs12288 384, uniform-bs16384 510,
# uniform-bs20480 640, uniform-bs31744 990, zipf-bs31744 1981, zipf-bs26624 2586
CASES=uniform-bs6144,uniform-bs7168,uniform-bs8192,uniform-bs12288,uniform-bs16384,uniform-bs20480,uniform-bs31744,zipf-bs31744,zipf-bs26624
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
GPU0="bash tools/device_agenda.sh sweep m128_w8 '$A;$B;$C;$A;$B;$C' $CASES" GPU1="$C1 2>&1 | tee \$OUT/compare1.log | tail -2" \
  DEADLINE_S=330 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
