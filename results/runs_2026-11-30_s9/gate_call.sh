#!/usr/bin/env bash
# Session 9, call 6 (one H200): the gate with the baseline's spread in its threshold (799dd50), against 0009: two
# compares of the unchanged kernel, then the slowed run (a worse config forced on all 96 cases) that must still fail.
# tools/device_agenda.sh compare, slowed; logs in $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
export MOE_GATHER_INSTALLED=1
for step in compare slowed; do
  timeout 280 bash tools/device_agenda.sh $step
done
