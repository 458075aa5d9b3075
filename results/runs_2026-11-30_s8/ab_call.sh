#!/usr/bin/env bash
# Session 8's A/B calls: this tree's kernel against a base commit's in one process (tools/ab_commit.py).
#   bash results/runs_2026-11-30_s8/ab_call.sh NAME BASE_FOLDER CASES
# BASE_FOLDER holds the base commit's moe_gather/ (git archive BASE moe_gather | tar -x -C .peers/base_BASE, carried
# to the device with .peers). Logs and JSON under $OUT; stops at DEADLINE_S (default 540 s).
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout "${DEADLINE_S:-540}" python3 tools/ab_commit.py "$2" "$3" --json "$OUT/$1.json" 2>&1 | tee "$OUT/$1.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/smi.txt"
