#!/usr/bin/env bash
# Session 20, call 1 (device, nvidia-h200-x2, repository root, .peers carried: triton_kernels and, in .peers/base,
# e316288's moe_gather/ by `git archive e316288 moe_gather | tar -x -C .peers/base`), at 5de97d5's tree: the schedule
# entry as int64 (first row | slice << 32 | rows left << 48, RaggedMetadata.tile_rows) and the prologue's weights
# issued before the gather loads. A/B in one process against e316288 (tools/ab_commit.py: outputs checked against the
# golden reference, sustained timing, sides alternating), small cases on GPU 0, mid and large on GPU 1; then the GPU
# edge tests and memcheck on cases of the small and the block_m 64 (extra rows) entries.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
AB="python3 tools/ab_commit.py .peers/base"
export GPU0="$AB zipf-bs128,zipf-bs160,zipf-bs192,zipf-bs256,zipf-bs320,zipf-bs512,zipf-bs1024,zipf-bs4096,uniform-bs128,uniform-bs256,uniform-bs512,uniform-bs768 --rounds 3 --json \$OUT/ab_small.json >\$OUT/ab_small.log 2>&1
SANITIZE_CASES=\$'memcheck zipf 128\nmemcheck uniform 2560' bash tools/device_agenda.sh sanitize"
export GPU1="$AB uniform-bs1280,zipf-bs2048,uniform-bs2560,zipf-bs1792,uniform-bs5120,uniform-bs8192,zipf-bs16384,uniform-bs31744 --rounds 2 --json \$OUT/ab_large.json >\$OUT/ab_large.log 2>&1
python3 -m pytest suites/test_kernel_edges.py --gpu hopper -q -p no:cacheprovider >\$OUT/edges.log 2>&1; tail -3 \$OUT/edges.log"
DEADLINE_S=480 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
