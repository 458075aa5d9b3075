#!/usr/bin/env bash
# Session 21, call 1 (device, nvidia-h200-x2, repository root, .peers carried: .peers/base holds 480fdf8's
# moe_gather/, whose kernel is e316288's), at the tree of the commit that adds this script: a timing-only probe
# (no_promotion_probe.patch) whose K loop promotes nothing: every 32-K block's wgmma accumulates straight into the
# fp32 accumulator and the block scales are ignored (outputs wrong). What this data flow can reach with the exact
# per-32 promotion removed entirely, whatever promotion interval a relaxed design would choose: an upper bound for the
# design against issue 3's 2x. Each GPU: `bench` over one routing's 48 cases (the probe and the peer in one process,
# timed sustained, ceilings measured), then the probe against 480fdf8's kernel in one process (ab_commit, 1 round).
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
ids() { python3 -c "from moe_gather.problem import cases; print(','.join(c.id.removeprefix('gpt-oss-120b-') for c in cases(routings=('$1',))))"; }
export GPU0="python3 -m moe_gather bench --routing zipf --json \$OUT/probe_zipf.json >\$OUT/probe_zipf.log 2>&1
python3 tools/ab_commit.py .peers/base \$(ids zipf) --rounds 1 --json \$OUT/ab_zipf.json >\$OUT/ab_zipf.log 2>&1"
export GPU1="python3 -m moe_gather bench --routing uniform --json \$OUT/probe_uniform.json >\$OUT/probe_uniform.log 2>&1
python3 tools/ab_commit.py .peers/base \$(ids uniform) --rounds 1 --json \$OUT/ab_uniform.json >\$OUT/ab_uniform.log 2>&1"
export -f ids
DEADLINE_S=540 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
