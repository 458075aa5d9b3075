#!/usr/bin/env bash
# Session 20, call 7 (device, nvidia-h200-x2, repository root, .peers carried: .peers/base holds e316288's
# moe_gather/), at the tree of the commit that adds this script: the epilogue's loads (bias, x_scale, out_scale)
# issued before the accumulator's layout conversion. In e316288's SASS at block_m 128 they come after its barriers and
# the fma on them waits a round trip to L2, and so does the out scale's reciprocal later (call 2: 16-17.5% of that
# entry's time does not grow with K). A/B against e316288 in one process (tools/ab_commit.py), cases of every entry;
# then the GPU edge tests (NaN and Inf through the epilogue).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
AB="python3 tools/ab_commit.py .peers/base"
export GPU0="$AB uniform-bs7168,uniform-bs8192,zipf-bs3584,uniform-bs12288,zipf-bs16384,uniform-bs31744,uniform-bs128,zipf-bs128 --rounds 3 --json \$OUT/ab_a.json >\$OUT/ab_a.log 2>&1"
export GPU1="$AB uniform-bs1536,uniform-bs2560,uniform-bs4096,zipf-bs1792,zipf-bs7168,uniform-bs1280,uniform-bs512,zipf-bs1024 --rounds 3 --json \$OUT/ab_b.json >\$OUT/ab_b.log 2>&1
python3 -m pytest suites/test_kernel_edges.py --gpu hopper -q -p no:cacheprovider >\$OUT/edges.log 2>&1; tail -1 \$OUT/edges.log"
DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
