#!/usr/bin/env bash
# Session 14, call 1 (device, repository root, .peers carried): Sm90Config.extra against the table's block_m 64 on the
# cases where the SASS model expects merged tails to pay (two rounds, interleaved), then the gate against 0013.
nvidia-smi --query-gpu=uuid,name,clocks.sm --format=csv >"$OUT/gpu.txt"
A='block_m=64,narrow=2'
B='block_m=64,narrow=2,extra=16'
CASES=uniform-bs2560,uniform-bs2048,uniform-bs1792,uniform-bs4096,uniform-bs8192,zipf-bs10240,zipf-bs19456
GPU0="bash tools/device_agenda.sh sweep ext '$A;$B;$A;$B' $CASES
bash tools/device_agenda.sh compare" DEADLINE_S=500 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
