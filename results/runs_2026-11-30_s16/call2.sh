#!/usr/bin/env bash
# Session 16, call 2 (device, nvidia-h200-x2, repository root, .peers carried): call 1 had the one-warpgroup block_m 32
# entry (widest first) ahead of the two-warpgroup one at 12-22 rows a slice, and the two-warpgroup one ahead of the
# extra-rows entry at 22-30. So: the one-warpgroup entry with and without widest-first ordering against the
# two-warpgroup one at 17-30 rows, and without widest-first against the extra-rows entry at 30-40. Interleaved.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
E16=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,widest_first=1
E16N=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2
E30=block_m=32,num_warps=8,maxnreg=80,pairs=1,narrow=2
E48=block_m=32,num_warps=4,maxnreg=80,narrow=2,extra=16
S="bash tools/device_agenda.sh sweep"
# rows a slice: uniform-bs512 17, zipf-bs1024 17, uniform-bs640 22, zipf-bs5120 22, uniform-bs768 24, uniform-bs896 30,
# uniform-bs1024 31, zipf-bs2048 35, uniform-bs1280 40
GPU0="$S order '$E16;$E16N;$E30;$E16;$E16N;$E30' uniform-bs512,zipf-bs1024,uniform-bs640,zipf-bs5120,uniform-bs768,uniform-bs896"
GPU1="$S bound30b '$E16N;$E48;$E16N;$E48' uniform-bs768,uniform-bs896,uniform-bs1024,zipf-bs2048,uniform-bs1280"
GPU0=$GPU0 GPU1=$GPU1 DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
