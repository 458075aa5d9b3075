#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on a case of each sm90 table entry, one launch each
# (tools/sanitize_case.py), summaries into sanitize.log (or $1); racecheck's whole report read by
# tools/racecheck_report.py (its exit status). The cases: tools/sanitize_cases.txt, or with
# PRECISION=fast (the fast precision's table) tools/sanitize_cases_fast.txt, with LAYOUT=fp8 too
# tools/sanitize_cases_fast_fp8.txt (its table's own entries); SANITIZE_CASES replaces them (lines
# "tool routing batch [N]").
set -uo pipefail
log=${1:-sanitize.log}
cases=$(dirname "$0")/sanitize_cases.txt
[ "${PRECISION:-}" = fast ] && cases=$(dirname "$0")/sanitize_cases_fast.txt
[ "${PRECISION:-}" = fast ] && [ "${LAYOUT:-}" = fp8 ] && cases=$(dirname "$0")/sanitize_cases_fast_fp8.txt
status=0
while read -r tool routing batch n; do
  echo "== $tool $routing-bs$batch${n:+ N=$n}" | tee -a "$log"
  if [ "$tool" = racecheck ]; then  # every hazard, Triton's warp-specialization scaffolding told from the kernel's
    compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 0 python3 tools/sanitize_case.py \
      "$routing" "$batch" $n </dev/null 2>&1 | python3 "$(dirname "$0")/racecheck_report.py" | tee -a "$log"
    statuses=("${PIPESTATUS[@]}")  # the case's own (compute-sanitizer passes it on), the report's
    rc=$((statuses[0] || statuses[1]))
  else
    compute-sanitizer --tool "$tool" --error-exitcode 9 python3 tools/sanitize_case.py "$routing" "$batch" $n \
      </dev/null 2>&1 | tail -3 | tee -a "$log"
    rc=${PIPESTATUS[0]}
  fi
  echo "exit status $rc" | tee -a "$log"
  [ "$rc" = 0 ] || status=1
done <<<"${SANITIZE_CASES:-$(grep -v '^#' "$cases")}"
exit $status
