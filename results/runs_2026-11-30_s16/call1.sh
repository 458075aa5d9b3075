#!/usr/bin/env bash
# Session 16, call 1 (device, nvidia-h200-x2, repository root, .peers carried): every bound of the config table swept
# again under sustained timing (the bounds of 16, 30 and 48 rows a slice were found with burst timing), and extra=32 on
# block_m 64 (slices of 65-96 rows convert their weights once) against the entry's extra=16. Interleaved A;B;A;B,
# outputs checked against the reference per config. Rows a slice of each case: results/sm90_h200.md (tokens / 16).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
E16=block_m=32,num_warps=4,maxnreg=80,pairs=1,narrow=2,widest_first=1
E30=block_m=32,num_warps=8,maxnreg=80,pairs=1,narrow=2
E48=block_m=32,num_warps=4,maxnreg=80,narrow=2,extra=16
E64=block_m=64,narrow=2,extra=16
X32=block_m=64,narrow=2,extra=32
S="bash tools/device_agenda.sh sweep"
# rows a slice: zipf-bs128 12, uniform-bs384 13, zipf-bs160 13, uniform-bs448 16, zipf-bs4096 16, uniform-bs512 17,
# zipf-bs1024 17, uniform-bs640 22 | zipf-bs5120 22, uniform-bs768 24, uniform-bs896 30, uniform-bs1024 31,
# zipf-bs2048 35 | uniform-bs1280 40, uniform-bs1536 50, uniform-bs1792 58, zipf-bs11264 59 | uniform-bs2560 78,
# zipf-bs7168 88, zipf-bs19456 89, uniform-bs3072 96, uniform-bs3584 113, uniform-bs7168 227
GPU0="$S bound16 '$E16;$E30;$E16;$E30' zipf-bs128,uniform-bs384,zipf-bs160,uniform-bs448,zipf-bs4096,uniform-bs512,zipf-bs1024,uniform-bs640
$S bound30 '$E30;$E48;$E30;$E48' zipf-bs5120,uniform-bs768,uniform-bs896,uniform-bs1024,zipf-bs2048"
GPU1="$S bound48 '$E48;$E64;$E48;$E64' uniform-bs1024,zipf-bs2048,uniform-bs1280,uniform-bs1536,uniform-bs1792,zipf-bs11264
$S extra32 '$E64;$X32;$E64;$X32' uniform-bs2560,zipf-bs7168,zipf-bs19456,uniform-bs3072,uniform-bs3584,uniform-bs7168"
GPU0=$GPU0 GPU1=$GPU1 DEADLINE_S=420 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
