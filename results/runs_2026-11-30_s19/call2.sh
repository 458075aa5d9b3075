#!/usr/bin/env bash
# Session 19, call 2 (device, nvidia-h200-x2, repository root, .peers carried), at f6e2659's kernel and table plus an
# opt-in probe field `half_extra` (Sm90Config; default 0, the table unchanged): a slice's last tile with 65-96 rows left
# runs at block_m 128 as 64 + 32 tokens (the extra-rows path, one partial sum) instead of 128.
# Both GPUs: gpt-oss-20b (32 local experts, one shard) against triton_kernels, kernel and peer in one process
# (`python -m moe_gather bench`, timed sustained, ceilings measured in the run), zipf on GPU 0, uniform on GPU 1.
# GPU 1 then: half_extra=32 against the table's block_m 128 entry on 6 cases of 193-700 rows a slice where most last
# tiles hold 65-96 rows (interleaved, each output checked against the reference first).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
export GPU0="python3 -m moe_gather bench --model gpt-oss-20b --routing zipf --json \$OUT/bench20b_zipf.json 2>&1 | tee \$OUT/bench20b_zipf.log | tail -3"
export GPU1="python3 -m moe_gather bench --model gpt-oss-20b --routing uniform --json \$OUT/bench20b_uniform.json 2>&1 | tee \$OUT/bench20b_uniform.log | tail -3
bash tools/device_agenda.sh sweep half_extra 'half_extra=0;half_extra=32;half_extra=0;half_extra=32' uniform-bs7168,uniform-bs11264,uniform-bs10240,uniform-bs15360,zipf-bs24576,uniform-bs22528"
DEADLINE_S=560 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
