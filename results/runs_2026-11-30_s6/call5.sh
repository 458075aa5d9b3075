#!/usr/bin/env bash
# Session 6, call 5 (one H200): the gate's slowed switch against the new baseline 0004, then racecheck and synccheck
# on the smallest tiles (their cases finish under racecheck inside a call), all under a deadline.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-480}))
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout $((deadline - $(date +%s))) bash tools/device_agenda.sh slowed >/dev/null
for spec in racecheck:128 synccheck:128 racecheck:384 synccheck:384; do
  tool=${spec%%:*} b=${spec#*:} left=$((deadline - $(date +%s)))
  [ "$left" -gt 10 ] || break
  echo "== $tool uniform-bs$b (limit ${left}s)" >>"$OUT/sanitize.log"
  timeout "$left" compute-sanitizer --tool "$tool" --error-exitcode 9 python3 tools/sanitize_case.py uniform "$b" \
    2>&1 | tail -3 >>"$OUT/sanitize.log"
  echo "exit status ${PIPESTATUS[0]}" >>"$OUT/sanitize.log"
done
tail -n 2 "$OUT/slowed.log"; cat "$OUT/sanitize.log"
