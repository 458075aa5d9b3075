#!/usr/bin/env bash
# Session 10, call 7 (two H200s, repository root; moe_gather/_sm90.py of 4f9247b, which has Sm90Config.producer):
# one program a multiprocessor, two computing warpgroups on block_m 128 (each 64 weight rows x 128 tokens, each
# converted weight used for 128 tokens: 368 SASS a K tile against 2 x 268 at block_m 64) at 240 registers and a
# producer warpgroup at 24 (maxnreg 168), against the table's block_m 64 and the same tile without the producer
# (180 registers, one program a multiprocessor). 15 cases of 49 rows a slice and more, one round a GPU.
# Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-300}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
m64="block_m=64,narrow=2"
m128="block_m=128,num_warps=8,narrow=2"
large=uniform-bs1536,uniform-bs2048,uniform-bs2560,uniform-bs3072,zipf-bs2560,zipf-bs1792,zipf-bs7168,zipf-bs10240,zipf-bs11264,uniform-bs4096,uniform-bs6144,uniform-bs8192,zipf-bs14336,uniform-bs16384,uniform-bs31744
for g in 0 1; do
  CUDA_VISIBLE_DEVICES=$g timeout "$(left)" python3 tools/sweep_sm90.py --json $logs/g$g/ws128.json \
    --configs "$m64;$m128,producer=24,maxnreg=168;$m128" --cases "$large" > $logs/g$g/ws128.log 2>&1 &
done
wait
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
