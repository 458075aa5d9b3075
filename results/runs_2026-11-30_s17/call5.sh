#!/usr/bin/env bash
# Session 17, call 5 (device, nvidia-h200-x2, repository root, .peers carried), at 59b4504's table. The new entry,
# block_m 64 on two warpgroups (C: 266 SASS a K tile, 2 bar.sync, 111 registers), against the same with its rings
# split by K-tile parity (E, `pairs`: 518 SASS for two K tiles, one bar.sync a tile, 117 registers, still 2 programs of
# 8 warps a multiprocessor; checked on the CPU), interleaved C;E;C;E on the 16 cases of 81-192 rows a slice; and E
# against the table's block_m 64 with extra rows (A) at 49-80 rows. Every output checked against the reference.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
C=block_m=64,num_warps=8,narrow=2
E=block_m=64,num_warps=8,narrow=2,pairs=1
export GPU0="bash tools/device_agenda.sh sweep pairs_a '$C;$E;$C;$E' zipf-bs10240,zipf-bs7168,zipf-bs19456,uniform-bs3072,zipf-bs25600,zipf-bs13312,uniform-bs3584,uniform-bs4096"
export GPU1="bash tools/device_agenda.sh sweep pairs_b '$C;$E;$C;$E' zipf-bs18432,zipf-bs8192,zipf-bs1792,zipf-bs12288,uniform-bs5120,zipf-bs3072,zipf-bs9216,uniform-bs6144
bash tools/device_agenda.sh sweep pairs_low '$A;$E;$A;$E' uniform-bs1536,uniform-bs1792,zipf-bs11264,uniform-bs2048,zipf-bs2560,uniform-bs2560"
DEADLINE_S=260 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
