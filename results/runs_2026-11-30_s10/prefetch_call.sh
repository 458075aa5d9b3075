#!/usr/bin/env bash
# Session 10, call 1 (two H200s, repository root): L2 prefetch of the program's words and scales
# (Sm90Config.prefetch: K tiles beyond the ring's; prefetch_loop=0: only at the program's start, with every tile's
# scales), each table entry against itself without, two rounds (results/runs_2026-11-30_s6/sweep_call.sh).
#   GPU 0: the 32 cases of up to 48 rows a local slice (block_m 32 on one warpgroup up to 16, on two beyond);
#   GPU 1: 15 cases of 49 rows and more (block_m 64).
# Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
w4="block_m=32,num_warps=4,narrow=2,pairs=1,maxnreg=80"
w8="block_m=32,num_warps=8,narrow=2,pairs=1,maxnreg=80"
m64="block_m=64,narrow=2"
small=zipf-bs192,zipf-bs256,uniform-bs128,uniform-bs160,zipf-bs384,zipf-bs512,zipf-bs1280,uniform-bs192,uniform-bs224,zipf-bs320,zipf-bs896,zipf-bs1536,uniform-bs256,uniform-bs320,zipf-bs224,zipf-bs768,zipf-bs448,zipf-bs128,zipf-bs640,uniform-bs384,zipf-bs160,uniform-bs448,zipf-bs4096
mid=uniform-bs512,zipf-bs1024,uniform-bs640,zipf-bs5120,uniform-bs768,uniform-bs896,uniform-bs1024,zipf-bs2048,uniform-bs1280
large=uniform-bs1536,uniform-bs2048,uniform-bs2560,uniform-bs3072,zipf-bs2560,zipf-bs1792,zipf-bs7168,zipf-bs10240,zipf-bs11264,uniform-bs4096,uniform-bs6144,uniform-bs8192,zipf-bs14336,uniform-bs16384,uniform-bs31744
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  for round in 1 2; do
    DEADLINE_S=$(left) bash results/runs_2026-11-30_s6/sweep_call.sh small$round \
      "$w4;$w4,prefetch=4,prefetch_loop=0;$w4,prefetch=12,prefetch_loop=0;$w4,prefetch=20,prefetch_loop=0" "$small"
    DEADLINE_S=$(left) bash results/runs_2026-11-30_s6/sweep_call.sh mid$round \
      "$w8;$w8,prefetch=4,prefetch_loop=0;$w8,prefetch=12,prefetch_loop=0" "$mid"
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  for round in 1 2; do
    DEADLINE_S=$(left) bash results/runs_2026-11-30_s6/sweep_call.sh large$round \
      "$m64;$m64,prefetch=4,prefetch_loop=0;$m64,prefetch=4;$m64,prefetch=8" "$large"
  done
) &
wait
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
