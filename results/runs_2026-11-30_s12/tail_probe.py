"""How much of a small case's time is not proportional to its bytes: the same routing with N cut to about 1/2, 1/4,
1/9 (multiples of 128: fewer column blocks, the same slices and tiles), kernel time by CUDA graphs. Were time bytes /
bandwidth, it would fall with N to nothing; the intercept of a straight line through the four points is the fixed
part (program start, the last wave's tail, the launch).

    python3 results/runs_2026-11-30_s12/tail_probe.py uniform-bs128,uniform-bs512,zipf-bs512
"""

import dataclasses
import sys

import torch
from triton.testing import do_bench_cudagraph

from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    rows = []
    for n in (5760, 2816, 1408, 640):
        model = dataclasses.replace(MODELS["gpt-oss-120b"], n=n)  # same name: the same routing draw
        params = make_expert_params(model, "cuda")
        problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
        weights = bmm1.prepare_weights(params.weights)
        config = bmm1.select_config(problem.routing.ragged)
        programs = int((problem.routing.ragged.block_schedule[config.block_m] >= 0).sum()) * (n // config.block_n)
        us = min(do_bench_cudagraph(lambda p=problem, w=weights: bmm1.run_problem(p, w), rep=200) for _ in range(3))
        rows.append((n, programs, us * 1e3, problem.bytes()))
        del params, weights, problem
        torch.cuda.empty_cache()
    for n, programs, us, nbytes in rows:
        print(f"{name} N={n:5d} programs {programs:5d} {us:7.1f} us {nbytes / us / 1e6:5.2f} TB/s", flush=True)
    ns, ts = torch.tensor([r[0] for r in rows], dtype=torch.float64), torch.tensor([r[2] for r in rows])
    slope = ((ns - ns.mean()) * (ts - ts.mean())).sum() / ((ns - ns.mean()) ** 2).sum()
    fixed = float(ts.mean() - slope * ns.mean())
    print(
        f"{name}: t = {fixed:.1f} us + {float(slope) * 1e3:.2f} us per 1000 columns; fixed part {fixed:.1f} of "
        f"{rows[0][2]:.1f} us",
        flush=True,
    )
