#!/usr/bin/env bash
# Session 6, call 1: ncu (clocks left alone) on the table's kernel for a small, a mid and a large case: where a
# tile's time goes (issue efficiency, stall reasons), to test the notes' "issue-bound" reading.
#   bash results/runs_2026-11-30_s6/ncu_call.sh [routing:batch ...]   (default: the three cases of session 6)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/r/smi.txt"
for c in ${@:-uniform:31744 uniform:1536 uniform:128}; do
  r=${c%%:*}; b=${c##*:}
  timeout 150 ncu --clock-control none --set full --print-details all -k regex:_bmm1 -c 1 \
    python3 -m pytest suites/test_kernel.py --gpu hopper --batch-sizes "$b" --routing "$r" -q -p no:cacheprovider \
    > "$OUT/r/ncu_${r}_bs$b.txt" 2>&1
  echo "$c rc=$?"
done
tar czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$OUT/r"
