#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on a case of each sm90 table entry, one launch each
# (tools/sanitize_case.py), summaries into sanitize.log (or $1). SANITIZE_CASES replaces the list: lines
# "tool routing batch [N]", N narrowing the weight rows where racecheck would take too long at the full 5760.
# The default cases: zipf-bs128 (up to 24 rows per slice; zipf narrows the cold slices' last tiles), uniform-bs896 and
# -bs1280 (25-40 rows: slices of 33-48 take extra rows), uniform-bs2560 (slices of 65-80 take extra rows), zipf-bs2560
# (a slice of 330 rows ends in a narrowed tile), uniform-bs3584 (41-192 rows), uniform-bs16384 and -bs20480 (from 193).
# PRECISION=fast: the fast precision's table.
set -uo pipefail
log=${1:-sanitize.log}
status=0
while read -r tool routing batch n; do
  echo "== $tool $routing-bs$batch${n:+ N=$n}" | tee -a "$log"
  compute-sanitizer --tool "$tool" --error-exitcode 9 python3 tools/sanitize_case.py "$routing" "$batch" $n \
    </dev/null 2>&1 | tail -3 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  echo "exit status $rc" | tee -a "$log"
  [ "$rc" = 0 ] || status=1
done <<<"${SANITIZE_CASES:-$(cat <<'CASES'
memcheck zipf 128
memcheck uniform 896
memcheck uniform 1280
memcheck uniform 2560
memcheck zipf 2560
racecheck zipf 128 256
racecheck uniform 768 256
racecheck uniform 1280 256
racecheck uniform 2560 256
racecheck uniform 3584 256
synccheck zipf 128
synccheck uniform 1280
synccheck uniform 2560
synccheck zipf 2560
memcheck uniform 16384 256
racecheck uniform 20480 128
synccheck uniform 16384 256
CASES
)}"
exit $status
