"""A/B in one process: the sm90 kernel with and without the e8m0-0 max (Sm90Weights.zero_scale), the same weights
and problems, best of two timings each (do_bench_cudagraph, as the bench tool). On the device:

    python3 results/runs_2026-11-30_s5/ab_zero_scale.py uniform-bs128,zipf-bs320,...
"""

import dataclasses
import sys

from triton.testing import do_bench_cudagraph

from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
fast = bmm1.prepare_weights(params.weights)
assert not fast.zero_scale
exact = dataclasses.replace(fast, zero_scale=True)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    times = {}
    for weights in (exact, fast) * 2:
        us = do_bench_cudagraph(lambda w=weights, p=problem: bmm1.run_problem(p, w)) * 1e3
        times[weights.zero_scale] = min(us, times.get(weights.zero_scale, us))
    print(f"{name:>16} with max {times[True]:7.1f} us  without {times[False]:7.1f} us  "
          f"{times[True] / times[False]:.3f}x", flush=True)  # fmt: skip
