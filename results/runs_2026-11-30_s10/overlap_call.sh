#!/usr/bin/env bash
# Session 10, call 8 (two H200s, repository root): call 7 found block_m 128 on two warpgroups (each converted weight
# used for 128 tokens, 31% fewer instructions a flop than block_m 64) latency-bound at one program a multiprocessor.
# Here with two partial sums a warpgroup (Sm90Config.overlap: block j + 1's wgmma runs while block j's partial is
# promoted; ptxas keeps one wgmma in flight, 255 registers, no spills): on two warpgroups (one program a
# multiprocessor) and on one (two programs), and block_m 64 on two warpgroups with overlap (174 registers), against
# the table's block_m 64. 15 cases of 49 rows a slice and more, one round a GPU. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-300}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
m64="block_m=64,narrow=2"
configs="$m64;block_m=128,num_warps=8,narrow=2,overlap=1;block_m=128,num_warps=4,narrow=2,overlap=1;block_m=64,num_warps=8,narrow=2,overlap=1"
large=uniform-bs1536,uniform-bs2048,uniform-bs2560,uniform-bs3072,zipf-bs2560,zipf-bs1792,zipf-bs7168,zipf-bs10240,zipf-bs11264,uniform-bs4096,uniform-bs6144,uniform-bs8192,zipf-bs14336,uniform-bs16384,uniform-bs31744
for g in 0 1; do
  CUDA_VISIBLE_DEVICES=$g timeout "$(left)" python3 tools/sweep_sm90.py --json $logs/g$g/overlap.json \
    --configs "$configs" --cases "$large" > $logs/g$g/overlap.log 2>&1 &
done
wait
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
