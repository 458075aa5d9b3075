"""A/B in one process: the kernel with and without the e8m0-0 max (Sm90Weights.zero_scale), same weights, same
problems; best of two timings each. python3 results/runs_2026-11-30_s5/ab_zero_scale.py uniform-bs128,..."""

import dataclasses, sys, torch
from triton.testing import do_bench_cudagraph
from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

m = MODELS["gpt-oss-120b"]
p = make_expert_params(m, "cuda")
w = bmm1.prepare_weights(p.weights)
assert not w.zero_scale
for name in sys.argv[1].split(","):
    r, b = name.split("-bs")
    pr = make_problem(Case(m, r, int(b)), "cuda", p)
    t = [
        do_bench_cudagraph(lambda v=v: bmm1.run_problem(pr, v)) * 1e3
        for v in (dataclasses.replace(w, zero_scale=True), w) * 2
    ]
    print(
        f"{name:>16} max-path {min(t[0::2]):7.1f} us  fast {min(t[1::2]):7.1f} us  {min(t[0::2]) / min(t[1::2]):.3f}x",
        flush=True,
    )
