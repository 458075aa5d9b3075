#!/usr/bin/env bash
# The H200 agenda left open, as steps that fit the device tool's calls (each under 10 minutes), logs under $OUT.
#   bash tools/device_agenda.sh suite      # every test on the GPU, both models (correctness, edges, reliability)
#   bash tools/device_agenda.sh bench      # the 96-case table against triton_kernels (results/sm90_h200.md)
#   bash tools/device_agenda.sh baselines  # save baselines/nvidia-h200 with the peer's speedups (~7 s a case in 2026-11)
#   bash tools/device_agenda.sh compare    # compare twice against them, the peer left out (issue 4's proof, part 1)
#   bash tools/device_agenda.sh slowed     # compare with a deliberately worse config (issue 4's proof, part 2)
#   bash tools/device_agenda.sh sanitize   # compute-sanitizer memcheck, racecheck, synccheck, a case per table entry
#   bash tools/device_agenda.sh ncu [ROUTING:BATCH ...]  # counters and stall reasons (default: a small, a large case)
#   bash tools/device_agenda.sh split      # the two-launch plan for skewed routing against the table (issue 3)
#   bash tools/device_agenda.sh large      # block_m 64 and 128 variants on large cases (issue 3)
#   bash tools/device_agenda.sh sweep NAME CONFIGS CASES  # tools/sweep_sm90.py --configs --cases -> $OUT/NAME.log
# Run from the repository root with triton_kernels copied into .peers/ (README, "The peer"). Steps may run side by
# side on two GPUs (CUDA_VISIBLE_DEVICES); install once first and set MOE_GATHER_INSTALLED=1, as tools/two_gpus.sh does.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/.peers"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -n "${MOE_GATHER_INSTALLED:-}" ] || python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
T=suites/test_benchmark.py
case "${1:-}" in
  suite) python3 -m pytest suites/ --gpu hopper --model all -q -p no:cacheprovider --benchmark-disable \
           2>&1 | tee "$OUT/suite.log" | tail -5 ;;
  bench) python3 -m moe_gather bench --json "$OUT/bench_h200.json" 2>&1 | tee "$OUT/bench.log" | tail -100 ;;
  baselines)
    python3 -m pytest $T --gpu hopper -q -p no:cacheprovider --benchmark-save=h200 \
      --benchmark-plot="$OUT/throughput.png" 2>&1 | tee "$OUT/save.log" | tail -3
    cp baselines/nvidia-h200/*/*.json "$OUT/" ;;
  compare)
    for i in 1 2; do  # without the peer (PYTHONPATH cleared): the gate times the kernel alone
      PYTHONPATH= python3 -m pytest $T --gpu hopper -q -p no:cacheprovider --benchmark-compare 2>&1 \
        | tee "$OUT/compare$i.log" | tail -2
    done ;;
  slowed) MOE_GATHER_SM90_FORCE=block_m=16,num_buffers=2,extra=0,overlap=0 PYTHONPATH= python3 -m pytest $T --gpu hopper -q \
            -p no:cacheprovider --benchmark-compare 2>&1 | tee "$OUT/slowed.log" | tail -12 ;;
  sanitize)  # SANITIZE_CASES (lines "tool routing batch [n]"), or cases for each table entry: zipf-bs128 (up to 24
             # rows a slice; zipf routing narrows cold slices' last tiles); uniform-bs896, uniform-bs1280 and
             # uniform-bs768 at N = 256 (25-40 rows: slices of 33-48 take extra rows); uniform-bs2560 (78 rows: slices
             # of 65-80 take extra rows), zipf-bs2560 (its slice of 330 rows ends in a narrowed tile) and
             # uniform-bs3584 (41-192); uniform-bs16384 and 20480 (from 193). N narrowed (sanitize_case.py's third
             # argument) where the full N outlasts a call; the narrowed model routes its own draw (uniform-bs768 at
             # N = 256: 25 rows a slice, uniform-bs3584 at N = 256: 113, uniform-bs16384 at N = 256: 513,
             # uniform-bs20480 at N = 128: 633)
    while read -r tool routing batch n; do
      echo "== $tool $routing-bs$batch${n:+ N=$n}" | tee -a "$OUT/sanitize.log"
      compute-sanitizer --tool "$tool" --error-exitcode 9 python3 tools/sanitize_case.py "$routing" "$batch" $n \
        </dev/null 2>&1 | tail -3 | tee -a "$OUT/sanitize.log"
      echo "exit status ${PIPESTATUS[0]}" | tee -a "$OUT/sanitize.log"
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
    ;;
  ncu)  # ncu [ROUTING:BATCH ...] (default uniform:128 uniform:31744); --print-details all: the stall reasons
    cases=("${@:2}")
    [ ${#cases[@]} -gt 0 ] || cases=(uniform:128 uniform:31744)
    for c in "${cases[@]}"; do
      ncu --clock-control none --set full --print-details all -k regex:_bmm1 -c 1 python3 -m pytest \
        suites/test_kernel.py --gpu hopper --batch-sizes "${c##*:}" --routing "${c%%:*}" -q -p no:cacheprovider \
        > "$OUT/ncu_${c%%:*}_bs${c##*:}.txt" 2>&1
    done ;;
  split) python3 tools/sweep_sm90.py --split --json "$OUT/split.json" \
           --cases zipf-bs128,zipf-bs160,zipf-bs1792,zipf-bs3584,zipf-bs8192,uniform-bs128,uniform-bs1024,uniform-bs8192 \
           2>&1 | tee "$OUT/split.log" | tail -40 ;;
  large) python3 tools/sweep_sm90.py --block-m 64,128 --json "$OUT/large.json" \
           --cases uniform-bs4096,zipf-bs16384,uniform-bs31744 2>&1 | tee "$OUT/large.log" | tail -40 ;;
  sweep) python3 tools/sweep_sm90.py --json "$OUT/$2.json" --configs "$3" --cases "$4" > "$OUT/$2.log" 2>&1
         tail -n 3 "$OUT/$2.log" ;;
  *) sed -n '2,14p' "$0"; exit 2 ;;
esac
