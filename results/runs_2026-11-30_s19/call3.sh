#!/usr/bin/env bash
# Session 19, call 3 (device, nvidia-h200-x2 kept warm after call 2, GPU 0; repository root, .peers carried), at
# 555d282 (the half_extra probe field in the tree): call 2's sweep again with every field given (sweep_sm90.py applies
# --configs over a block_m 32 base, which half_extra alone does not fit). M: the table's block_m 128 entry; H: M with
# half_extra=32. Run as one command line:
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/.peers; python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1; M=block_m=128,num_buffers=4,num_warps=8,narrow=2,overlap=1; H=$M,half_extra=32; nvidia-smi --query-gpu=uuid --format=csv > $OUT/gpu.txt; python3 tools/sweep_sm90.py --json $OUT/half_extra.json --configs "$M;$H;$M;$H" --cases uniform-bs7168,uniform-bs11264,uniform-bs10240,uniform-bs15360,zipf-bs24576,uniform-bs22528 > $OUT/half_extra.log 2>&1; tail -30 $OUT/half_extra.log
