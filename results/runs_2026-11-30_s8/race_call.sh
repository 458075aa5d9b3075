#!/usr/bin/env bash
# Session 8, call 7 (one H200): racecheck on the block_m 64 and 32 entries, which ran past every call's time on the
# full N (calls 4, 5): the table's own choice at uniform-bs2048 (63 rows a slice: block_m 64, full and narrowed
# tiles) and zipf-bs2048 (35: block_m 32), and block_m 64 forced on zipf-bs2048, all with N = 256 (4 column blocks
# instead of 90; the same K loop, slices and tile widths). Logs: $OUT/race.log.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
run() {
  echo "== racecheck $* ${MOE_GATHER_SM90_FORCE:+forced $MOE_GATHER_SM90_FORCE}" >> "$OUT/race.log"
  timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 python3 tools/sanitize_case.py "$@" 256 2>&1 \
    | tail -3 >> "$OUT/race.log"
  echo "exit status ${PIPESTATUS[0]}" >> "$OUT/race.log"
}
run uniform 2048
run zipf 2048
MOE_GATHER_SM90_FORCE=block_m=64,num_warps=4,pairs=0,overlap=0,narrow=2 run zipf 2048
cat "$OUT/race.log"
