#!/usr/bin/env bash
# Session 15, call 6 (device, repository root, .peers carried): where block_m 128 (overlap) starts to beat the
# block_m 64 entry under sustained timing (call 5: from ~257 rows a slice), on cases of 192-409 rows, skewed ones
# among them; interleaved A;C;A;C, outputs checked against the reference per config.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
C=block_m=128,narrow=2,overlap=1
CASES=uniform-bs6144,uniform-bs7168,zipf-bs24576,zipf-bs21504,zipf-bs3584,uniform-bs12288
GPU0="bash tools/device_agenda.sh sweep m128_bound '$A;$C;$A;$C' $CASES" DEADLINE_S=200 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
