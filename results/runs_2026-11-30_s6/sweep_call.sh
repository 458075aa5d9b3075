#!/usr/bin/env bash
# Session 6, calls 6 and 7 (one H200): a config sweep in one process, under a deadline.
#   bash results/runs_2026-11-30_s6/sweep_call.sh NAME CONFIGS CASES   -> $OUT/NAME.log, $OUT/NAME.json
set -uo pipefail
export PYTHONUNBUFFERED=1 MOE_GATHER_INSTALLED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout "${DEADLINE_S:-300}" python3 tools/sweep_sm90.py --json "$OUT/$1.json" --configs "$2" --cases "$3" > "$OUT/$1.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/$1.log"
