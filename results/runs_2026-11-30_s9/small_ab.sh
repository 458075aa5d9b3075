#!/usr/bin/env bash
# Session 9, call 3 (one H200): the 23 gpt-oss-120b cases of up to 16 rows a local slice, three tiles in one process,
# twice (two processes, to see the noise): block_m 16 (session 8's first entry), block_m 32 with pairs at 80 registers
# on two warpgroups (the new table's) and on one. Call 2's gate found zipf-bs256 18.8% slower with the new table.
set -uo pipefail
cases=zipf-bs192,zipf-bs256,uniform-bs128,uniform-bs160,zipf-bs384,zipf-bs512,zipf-bs1280,uniform-bs192,uniform-bs224,zipf-bs320,zipf-bs896,zipf-bs1536,uniform-bs256,uniform-bs320,zipf-bs224,zipf-bs768,zipf-bs448,zipf-bs128,zipf-bs640,uniform-bs384,zipf-bs160,uniform-bs448,zipf-bs4096
configs="block_m=16,pairs=1,overlap=1,narrow=1;block_m=32,num_warps=8,narrow=2,pairs=1,maxnreg=80;block_m=32,num_warps=4,narrow=2,pairs=1,maxnreg=80"
for round in 1 2; do
  DEADLINE_S=${DEADLINE_S:-240} bash results/runs_2026-11-30_s6/sweep_call.sh small_ab$round "$configs" "$cases"
done
