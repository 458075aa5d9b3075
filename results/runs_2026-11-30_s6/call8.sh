#!/usr/bin/env bash
# Session 6, call 8 (one H200), the table with `pairs` on its two small entries: GPU kernel and edge tests on the
# small batch sizes, the gate's baseline save with the peer (0005), racecheck on the block_m 8 entry (a barrier
# fewer a tile), then a compare against the new baseline; all under a deadline.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers"
deadline=$(($(date +%s) + ${DEADLINE_S:-320}))
left() { echo $((deadline - $(date +%s))); }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
P="python3 -m pytest -q -p no:cacheprovider --gpu hopper"
timeout "$(left)" $P suites/test_kernel.py suites/test_kernel_edges.py --model all --batch-sizes 128,192,256,384,448 \
  > "$OUT/check_pairs.log" 2>&1; echo "check rc=$?"; tail -1 "$OUT/check_pairs.log"
timeout "$(left)" $P suites/test_benchmark.py --benchmark-save=h200 > "$OUT/save.log" 2>&1
echo "save rc=$?"; tail -1 "$OUT/save.log"; cp baselines/nvidia-h200/*/0005_h200.json "$OUT/" 2>/dev/null
for c in zipf:256 zipf:128; do  # block_m 8 (23 rows on 5 experts), block_m 16: small enough for racecheck
  echo "== racecheck ${c%%:*}-bs${c##*:}" >> "$OUT/sanitize.log"
  timeout $(($(left) - 55)) compute-sanitizer --tool racecheck --error-exitcode 9 \
    python3 tools/sanitize_case.py "${c%%:*}" "${c##*:}" 2>&1 | tail -3 >> "$OUT/sanitize.log"
  echo "exit status ${PIPESTATUS[0]}" >> "$OUT/sanitize.log"
done
cat "$OUT/sanitize.log"
PYTHONPATH= timeout "$(left)" $P suites/test_benchmark.py --benchmark-compare > "$OUT/compare.log" 2>&1
echo "compare rc=$?"; tail -1 "$OUT/compare.log"
