#!/usr/bin/env bash
# Session 10, call 3 (two H200s, repository root): each table entry with its grid ordered widest tile first
# (Sm90Config.widest_first: the slices' narrowed last tiles in the last wave) against slice order, two rounds, on the
# cases of prefetch_call2.sh. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
sweep() {  # NAME CONFIGS CASES
  timeout "$(left)" python3 tools/sweep_sm90.py --json "$OUT/$1.json" --configs "$2" --cases "$3" > "$OUT/$1.log" 2>&1
  echo "$1 rc=$?"
}
w4="block_m=32,num_warps=4,narrow=2,pairs=1,maxnreg=80"
w8="block_m=32,num_warps=8,narrow=2,pairs=1,maxnreg=80"
m64="block_m=64,narrow=2"
small=zipf-bs192,zipf-bs256,uniform-bs128,uniform-bs160,zipf-bs384,zipf-bs512,zipf-bs1280,uniform-bs192,uniform-bs224,zipf-bs320,zipf-bs896,zipf-bs1536,uniform-bs256,uniform-bs320,zipf-bs224,zipf-bs768,zipf-bs448,zipf-bs128,zipf-bs640,uniform-bs384,zipf-bs160,uniform-bs448,zipf-bs4096
mid=uniform-bs512,zipf-bs1024,uniform-bs640,zipf-bs5120,uniform-bs768,uniform-bs896,uniform-bs1024,zipf-bs2048,uniform-bs1280
large=uniform-bs1536,uniform-bs2048,uniform-bs2560,uniform-bs3072,zipf-bs2560,zipf-bs1792,zipf-bs7168,zipf-bs10240,zipf-bs11264,uniform-bs4096,uniform-bs6144,uniform-bs8192,zipf-bs14336,uniform-bs16384,uniform-bs31744
(
  export CUDA_VISIBLE_DEVICES=0 OUT=$logs/g0
  for round in 1 2; do
    sweep small$round "$w4;$w4,widest_first=1" "$small"
    sweep mid$round "$w8;$w8,widest_first=1" "$mid"
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$logs/g1
  for round in 1 2; do
    sweep large$round "$m64;$m64,widest_first=1" "$large"
  done
) &
wait
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
