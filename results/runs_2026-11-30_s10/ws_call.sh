#!/usr/bin/env bash
# Session 10, call 6 (two H200s, repository root): block_m 64 with a producer warpgroup (Sm90Config.producer: the
# copies by cp.async in a warpgroup at 24 registers, handed over on mbarriers; the computing warpgroup at 136, 240
# SASS a K tile against 268; 3 programs a multiprocessor at maxnreg 80 against 4) against the table's block_m 64.
# A first case alone under a short timeout (a deadlock would stop there); then 15 cases of 49 rows a slice and more,
# one round a GPU. Logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-300}))
left() { local s=$((deadline - $(date +%s))); echo $((s > 1 ? s : 1)); }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
logs=/tmp/r
mkdir -p $logs/g0 $logs/g1
m64="block_m=64,narrow=2"
ws="$m64,producer=24,maxnreg=80"
large=uniform-bs1536,uniform-bs2048,uniform-bs2560,uniform-bs3072,zipf-bs2560,zipf-bs1792,zipf-bs7168,zipf-bs10240,zipf-bs11264,uniform-bs4096,uniform-bs6144,uniform-bs8192,zipf-bs14336,uniform-bs16384,uniform-bs31744
CUDA_VISIBLE_DEVICES=0 timeout 90 python3 tools/sweep_sm90.py --configs "$ws" --cases uniform-bs2048 > $logs/g0/first.log 2>&1
echo "first rc=$?"; tail -2 $logs/g0/first.log
if grep -q " us " $logs/g0/first.log; then
  for g in 0 1; do
    CUDA_VISIBLE_DEVICES=$g timeout "$(left)" python3 tools/sweep_sm90.py --json $logs/g$g/ws.json \
      --configs "$m64;$ws;$ws,num_buffers=5" --cases "$large" > $logs/g$g/ws.log 2>&1 &
  done
  wait
fi
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $logs/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
