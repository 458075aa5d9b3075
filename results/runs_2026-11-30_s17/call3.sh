#!/usr/bin/env bash
# Session 17, call 3 (device, nvidia-h200-x2, repository root, .peers carried), at 25172c3's table. Call 2 had block_m
# 64 on two warpgroups (C: 111 registers, 2 programs of 8 warps a multiprocessor, each x tile shared by 128 weight rows)
# at 0.97x-0.995x the time of the table's block_m 64 on one warpgroup with extra rows (A) at 130-185 rows a slice;
# session 15 had it at 0.89x at 78 rows. Here A against C, interleaved A;C;A;C, on the 15 cases of 49-129 rows a slice
# (every output checked against the reference), split over the two GPUs.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
C=block_m=64,num_warps=8,narrow=2
# rows a slice: uniform-bs1536 50, uniform-bs1792 58, zipf-bs11264 59, uniform-bs2048 63, zipf-bs2560 64, uniform-bs2560
# 78, zipf-bs10240 83, zipf-bs7168 88; zipf-bs19456 89, uniform-bs3072 96, zipf-bs25600 102, zipf-bs13312 104,
# uniform-bs3584 113, uniform-bs4096 125, zipf-bs8192 131
export GPU0="bash tools/device_agenda.sh sweep mid_a '$A;$C;$A;$C' uniform-bs1536,uniform-bs1792,zipf-bs11264,uniform-bs2048,zipf-bs2560,uniform-bs2560,zipf-bs10240,zipf-bs7168"
export GPU1="bash tools/device_agenda.sh sweep mid_b '$A;$C;$A;$C' zipf-bs19456,uniform-bs3072,zipf-bs25600,zipf-bs13312,uniform-bs3584,uniform-bs4096,zipf-bs8192"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
