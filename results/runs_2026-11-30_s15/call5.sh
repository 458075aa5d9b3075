#!/usr/bin/env bash
# Session 15, call 5 (device, repository root, .peers carried): with sustained timing, does sharing each x tile
# between two warpgroups (block_m 64 on 8 warps at 128 registers: 111 used, 2 programs a multiprocessor, half the x
# traffic from L2) pay now that the large cases run at the power limit? Against the table's block_m 64 (extra 16) and
# block_m 128 (overlap) entries, interleaved A;B;C;A;B;C, outputs checked against the reference per config.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
B=block_m=64,num_warps=8,maxnreg=128,narrow=2
C=block_m=128,narrow=2,overlap=1
CASES=uniform-bs2560,uniform-bs4096,uniform-bs8192,zipf-bs16384,uniform-bs16384,uniform-bs24576,uniform-bs31744
GPU0="bash tools/device_agenda.sh sweep share_x '$A;$B;$C;$A;$B;$C' $CASES" DEADLINE_S=290 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
