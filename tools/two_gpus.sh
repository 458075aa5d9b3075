#!/usr/bin/env bash
# One device call on a one- or two-H200 machine: install once, then the shell commands in GPU0 and GPU1 side by side
# (GPU1 left empty on one GPU), each on its own GPU with OUT=/tmp/r/g0 or g1, every command stopped at DEADLINE_S
# after the start; logs in $OUT/r.tgz.
#   GPU0="bash tools/device_agenda.sh compare" GPU1="bash tools/device_agenda.sh suite" bash tools/two_gpus.sh
# One command a line (GPU0=$'first\nsecond'). Run from the repository root with triton_kernels copied into .peers/.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers" MOE_GATHER_INSTALLED=1
deadline=$(($(date +%s) + ${DEADLINE_S:-540}))
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
rm -rf /tmp/r  # a machine kept warm between calls still holds the last call's logs
for g in 0 1; do
  var=GPU$g
  (
    export CUDA_VISIBLE_DEVICES=$g OUT=/tmp/r/g$g
    mkdir -p "$OUT"
    mapfile -t steps <<<"${!var:-}"
    for step in "${steps[@]}"; do
      [ -n "$step" ] || continue
      left=$((deadline - $(date +%s)))
      ((left > 1)) || break
      echo "== $step" >>"$OUT/steps.log"
      timeout "$left" bash -c "$step" >>"$OUT/steps.log" 2>&1
      echo "exit status $? at $(date +%T)" >>"$OUT/steps.log"
    done
  ) &
done
wait
tail -n 4 /tmp/r/g*/steps.log
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >/tmp/r/smi.txt
tar czf "$OUT/r.tgz" -C /tmp r
