#!/usr/bin/env bash
# Session 9, call 1 (two H200s, repository root, triton_kernels in .peers/):
#   GPU 0: the 32 gpt-oss-120b cases of up to 48 rows a local slice, the table's new block_m 32 entry (two warpgroups,
#          pairs, 80 registers) against the same tile on one warpgroup (64 weight rows a program: twice the programs)
#          at 80 registers and uncapped (results/runs_2026-11-30_s6/sweep_call.sh);
#   GPU 1: the whole suite, both models, on the new table (tools/device_agenda.sh suite).
# Stops at DEADLINE_S after the start. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  timeout "$(left)" bash tools/device_agenda.sh suite >/dev/null
) &
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  DEADLINE_S=$(left) bash results/runs_2026-11-30_s6/sweep_call.sh small_w4 \
    "block_m=32,num_warps=8,narrow=2,pairs=1,maxnreg=80;block_m=32,num_warps=4,narrow=2,pairs=1,maxnreg=80;block_m=32,num_warps=4,narrow=2,pairs=1" \
    zipf-bs192,zipf-bs256,uniform-bs128,uniform-bs160,zipf-bs384,zipf-bs512,zipf-bs1280,uniform-bs192,uniform-bs224,zipf-bs320,zipf-bs896,zipf-bs1536,uniform-bs256,uniform-bs320,zipf-bs224,zipf-bs768,zipf-bs448,zipf-bs128,zipf-bs640,uniform-bs384,zipf-bs160,uniform-bs448,zipf-bs4096,uniform-bs512,zipf-bs1024,uniform-bs640,zipf-bs5120,uniform-bs768,uniform-bs896,uniform-bs1024,zipf-bs2048,uniform-bs1280
) &
wait
tail -n 3 $logs/g1/suite.log
tail -n 3 $logs/g0/small_w4.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
