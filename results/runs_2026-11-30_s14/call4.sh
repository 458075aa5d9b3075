#!/usr/bin/env bash
# Session 14, call 4 (device, repository root, .peers carried): extra rows on the small entries' tiles. block_m 32 on
# one warpgroup with extra=16 (no pairs: extra needs the plain loop; 80 registers, 6 programs a multiprocessor)
# against each entry's table config, two interleaved rounds: the 9 cases of 17-48 rows a slice, and 5 zipf cases of up
# to 16 rows whose slices hold 33-48 rows (widest first, as that entry).
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
T1='block_m=32,num_warps=8,maxnreg=80,pairs=1,narrow=2'
E='block_m=32,num_warps=4,maxnreg=80,narrow=2,extra=16'
T0='block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,widest_first=1'
EW="$E,widest_first=1"
MID=zipf-bs1024,zipf-bs2048,zipf-bs5120,uniform-bs512,uniform-bs640,uniform-bs768,uniform-bs896,uniform-bs1024,uniform-bs1280
SMALL=zipf-bs128,zipf-bs160,zipf-bs224,zipf-bs640,zipf-bs4096
GPU0="bash tools/device_agenda.sh sweep ext_mid '$T1;$E;$T1;$E' $MID
bash tools/device_agenda.sh sweep ext_small '$T0;$EW;$T0;$EW' $SMALL" DEADLINE_S=500 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
