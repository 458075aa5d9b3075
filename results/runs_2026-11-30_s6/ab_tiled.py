"""A/B in one process: the sm90 kernel reading its packed weights tile-major (Sm90Weights.tiled: each 128-wide K tile
of 64 rows one 4 KB piece) against row-major (each row's 1440 bytes in one piece, a tile 64 pieces of 64 bytes), the
same codes, scales and problems; outputs compared bit for bit; best of two timings each (do_bench_cudagraph, as the
bench tool). Runs at commit 8d85c23, where the flag existed (removed right after: tile-major is the only layout).
On the device:

    python3 results/runs_2026-11-30_s6/ab_tiled.py uniform-bs128,zipf-bs320,...
"""

import dataclasses
import sys

import torch
from triton.testing import do_bench_cudagraph

from moe_gather import bmm1
from moe_gather._sm90 import row_major_words
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
tiled = bmm1.prepare_weights(params.weights)
assert tiled.tiled
rows = dataclasses.replace(tiled, words=row_major_words(tiled).contiguous(), tiled=False)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    outs = {w.tiled: bmm1.run_problem(problem, w).view(torch.uint8) for w in (tiled, rows)}
    same = torch.equal(outs[True], outs[False])
    times = {}
    for weights in (rows, tiled) * 2:
        us = do_bench_cudagraph(lambda w=weights, p=problem: bmm1.run_problem(p, w)) * 1e3
        times[weights.tiled] = min(us, times.get(weights.tiled, us))
    print(f"{name:>16} row-major {times[False]:7.1f} us  tile-major {times[True]:7.1f} us  "
          f"{times[False] / times[True]:.3f}x  outputs identical: {same}", flush=True)  # fmt: skip
