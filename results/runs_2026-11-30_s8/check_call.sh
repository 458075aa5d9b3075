#!/usr/bin/env bash
# Session 8, call 5 (one H200): the verdicts call 4 left open, and counters of the new kernel.
#   racecheck and synccheck on the block_m 64 and 32 entries (all their fields forced through MOE_GATHER_SM90_FORCE
#   over the small entry zipf-bs512 would take) on zipf-bs512 (80
#   tokens: few enough programs to finish under racecheck; its 35-row slice runs the full width, the others narrowed);
#   then ncu on uniform-bs15360 (block_m 64) and zipf-bs2048 (block_m 32), as in session 7 (runs_2026-11-30_s7/).
# Each step under its own timeout; logs: $OUT/r.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
for tool in racecheck synccheck; do
  for force in "block_m=64,num_warps=4,pairs=0,overlap=0,narrow=2" "block_m=32,num_warps=8,pairs=0,overlap=0,narrow=2"; do
    echo "== $tool zipf-bs512 forced $force" >> "$OUT/r/sanitize.log"
    MOE_GATHER_SM90_FORCE=$force timeout 110 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      python3 tools/sanitize_case.py zipf 512 2>&1 | tail -3 >> "$OUT/r/sanitize.log"
    echo "exit status ${PIPESTATUS[0]}" >> "$OUT/r/sanitize.log"
  done
done
cat "$OUT/r/sanitize.log"
for c in uniform:15360 zipf:2048; do
  r=${c%%:*}; b=${c##*:}
  timeout 120 ncu --clock-control none --set full --print-details all -k regex:_bmm1 -c 1 \
    python3 -m pytest suites/test_kernel.py --gpu hopper --batch-sizes "$b" --routing "$r" -q -p no:cacheprovider \
    > "$OUT/r/ncu_${r}_bs$b.txt" 2>&1
  echo "$c rc=$?"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/r/smi.txt"
tar czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$OUT/r"
