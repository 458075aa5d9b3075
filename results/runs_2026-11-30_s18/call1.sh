#!/usr/bin/env bash
# Session 18, call 1 (device, nvidia-h200-x2, repository root, .peers carried), at ee01c15's table (kernel of 024c7dd,
# plus the tile with extra rows passed PAIRS=False, which no table entry reaches yet).
# GPU 0: the gate against 0020 (without the peer), compute-sanitizer on the block_m 64 two-warpgroup entry with parity
# rings (E, uniform-bs3584: 113 rows a slice) and on the candidate B (E with 16 extra rows, its extra tile unpaired;
# uniform-bs2560: 78 rows a slice, most of its slices' last tiles take extra rows), then B against E on the 16 cases
# of 81-192 rows. GPU 1: the whole suite, both models; B against the table's block_m 64 one-warpgroup entry with extra
# rows (A) on the 6 cases of 49-80 rows; the kernel and edge tests with every choice forced to B. Sweeps interleaved, timed sustained, every output checked against the reference.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
A=block_m=64,narrow=2,extra=16
E=block_m=64,num_warps=8,narrow=2,pairs=1
B=block_m=64,num_warps=8,narrow=2,pairs=1,extra=16
F=block_m=64,num_buffers=4,num_warps=8,maxnreg=None,pairs=1,narrow=2,widest_first=0,overlap=0,split_at=0,extra=16
C1="PYTHONPATH= python3 -m pytest suites/test_benchmark.py --gpu hopper -q -p no:cacheprovider --benchmark-compare"
export GPU0="$C1 2>&1 | tee \$OUT/compare1.log | tail -2
SANITIZE_CASES=\"\$(printf 'memcheck uniform 3584\nracecheck uniform 3584 256\nsynccheck uniform 3584')\" bash tools/device_agenda.sh sanitize
mv \$OUT/sanitize.log \$OUT/sanitize_E.log
MOE_GATHER_SM90_FORCE=$F SANITIZE_CASES=\"\$(printf 'memcheck uniform 2560\nracecheck uniform 2560 256\nsynccheck uniform 2560')\" bash tools/device_agenda.sh sanitize
bash tools/device_agenda.sh sweep mid_a '$E;$B;$E;$B' zipf-bs10240,zipf-bs7168,zipf-bs19456,uniform-bs3072,zipf-bs25600,zipf-bs13312,uniform-bs3584,uniform-bs4096
bash tools/device_agenda.sh sweep mid_b '$E;$B;$E;$B' zipf-bs18432,zipf-bs8192,zipf-bs1792,zipf-bs12288,uniform-bs5120,zipf-bs3072,zipf-bs9216,uniform-bs6144"
export GPU1="bash tools/device_agenda.sh suite
bash tools/device_agenda.sh sweep low '$A;$B;$A;$B' uniform-bs1536,uniform-bs1792,zipf-bs11264,uniform-bs2048,zipf-bs2560,uniform-bs2560
MOE_GATHER_SM90_FORCE=$F python3 -m pytest suites/test_kernel.py suites/test_kernel_edges.py --gpu hopper --model all -q -p no:cacheprovider --benchmark-disable 2>&1 | tee \$OUT/forced_B.log | tail -3"
DEADLINE_S=560 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
