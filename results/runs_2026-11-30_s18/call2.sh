#!/usr/bin/env bash
# Session 18, call 2 (device, nvidia-h200: the two-GPU machine was not lent), at the table with block_m 64 on two
# warpgroups, parity rings and 16 extra rows from 49 to 192 rows a slice (call 1: B). At 25-48 rows (4 cases), the
# table's two entries there (P30: block_m 32 on two warpgroups with pairs; X48: one warpgroup with extra rows) against
# the same with extra rows and pairs on two (G) and on one warpgroup (H); the 24-row entry (W) against it with extra
# rows (Wx) on 7 cases of up to 24 rows a slice; then the whole suite, both models. Sweeps interleaved, timed
# sustained, every output checked against the reference.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
P30=block_m=32,num_warps=8,maxnreg=80,pairs=1,narrow=2
X48=block_m=32,num_warps=4,maxnreg=80,narrow=2,extra=16
G=block_m=32,num_warps=8,maxnreg=80,pairs=1,narrow=2,extra=16
H=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,extra=16
W=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,widest_first=1
Wx=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,widest_first=1,extra=16
export GPU0="bash tools/device_agenda.sh sweep mid32 '$P30;$X48;$G;$H;$P30;$X48;$G;$H' uniform-bs896,uniform-bs1024,zipf-bs2048,uniform-bs1280
bash tools/device_agenda.sh sweep small '$W;$Wx;$W;$Wx' zipf-bs1280,zipf-bs1536,zipf-bs4096,zipf-bs5120,uniform-bs512,uniform-bs640,uniform-bs768
bash tools/device_agenda.sh suite"
DEADLINE_S=570 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
