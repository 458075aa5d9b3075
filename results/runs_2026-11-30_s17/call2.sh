#!/usr/bin/env bash
# Session 17, call 2 (device, nvidia-h200-x2, repository root, .peers carried): call 1's GPU 0 steps, which did not run
# there (GPU0 was set without export; two_gpus.sh saw it empty), split over the two GPUs, then ncu on the largest case.
# At 25172c3's table (the kernel is 024c7dd's). GPU 0: the gate against 0018 once (without the peer), then block_m 128
# on two warpgroups (B, the table's entry from 193 rows) against itself with a ring of 8 stages (D). GPU 1: B against
# block_m 64 on one warpgroup (A, the table's entry up to 192 rows) and on two (C) at 130-192 rows a slice; ncu on
# uniform-bs31744. Sweeps interleaved, every output checked against the reference.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
B=block_m=128,num_warps=8,narrow=2,overlap=1
C=block_m=64,num_warps=8,narrow=2
D=block_m=128,num_warps=8,narrow=2,overlap=1,num_buffers=8
# rows a slice: zipf-bs18432 130 (2075 tokens), uniform-bs5120 160, zipf-bs3072 170, zipf-bs9216 185, uniform-bs6144
# 192; uniform-bs7168 227, uniform-bs12288 384, uniform-bs20480 640, uniform-bs31744 990, zipf-bs26624 2586
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
export GPU0="$C1 2>&1 | tee \$OUT/compare1.log | tail -2
bash tools/device_agenda.sh sweep ring8 '$B;$D;$B;$D' uniform-bs7168,uniform-bs12288,uniform-bs20480,uniform-bs31744,zipf-bs26624"
export GPU1="bash tools/device_agenda.sh sweep below193 '$A;$B;$C;$A;$B;$C' zipf-bs18432,uniform-bs5120,zipf-bs3072,zipf-bs9216,uniform-bs6144
bash tools/device_agenda.sh ncu uniform:31744"
DEADLINE_S=420 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
