"""How much of a program's time at mid and large batch is not its K loop: the same routing with K (the hidden size)
at 1536, 3072 and 6144 (12, 24 and 48 whole K tiles; the grid, tiles and epilogues unchanged), kernel time sustained
by CUDA graphs. The intercept of a straight line through the three points is the part that does not grow with K: each
program's start (schedule, slice and gather loads, the ring's fill) and its epilogue, plus the launch. With one
program a multiprocessor (block_m 128 on two warpgroups) nothing else on the multiprocessor runs meanwhile; that share
is what a persistent grid, starting the next tile's copies under this one's epilogue, could win back.

    python3 results/runs_2026-11-30_s20/k_probe.py uniform-bs8192,uniform-bs31744 ['CONFIG;CONFIG']
"""

import dataclasses
import sys

import torch

from moe_gather import bmm1
from moe_gather._sm90 import Sm90Config
from moe_gather._table import parse_fields
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

BASE = Sm90Config(block_m=32, num_buffers=4, num_warps=4)
configs = (
    [None] + [dataclasses.replace(BASE, **parse_fields(c)) for c in sys.argv[2].split(";")] if sys.argv[2:] else [None]
)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    times = {}
    for k in (1536, 3072, 6144):
        model = dataclasses.replace(MODELS["gpt-oss-120b"], hidden=k)  # same name: the same routing draw
        params = make_expert_params(model, "cuda")
        problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
        weights = bmm1.prepare_weights(params.weights)
        for i, config in enumerate(configs):
            chosen = config or bmm1.select_config(problem.routing.ragged)
            replay = graphed(lambda p=problem, w=weights, c=config: bmm1.run_problem(p, w, config=c))
            times.setdefault(i, (chosen, []))[1].append((k, sustained_seconds(replay) * 1e6))
        del params, weights, problem
        torch.cuda.empty_cache()
    for chosen, rows in times.values():
        ks, ts = torch.tensor([r[0] for r in rows], dtype=torch.float64), torch.tensor([r[1] for r in rows])
        slope = ((ks - ks.mean()) * (ts - ts.mean())).sum() / ((ks - ks.mean()) ** 2).sum()
        fixed = float(ts.mean() - slope * ks.mean())
        at2880 = fixed + float(slope) * 2880
        points = "  ".join(f"K={k}: {t:.1f} us" for k, t in rows)
        print(
            f"{name} block_m={chosen.block_m} warps={chosen.num_warps}: {points}; fixed {fixed:.1f} us, "
            f"{float(slope) * 128:.2f} us a K tile; fixed share at K=2880 {fixed / at2880:.1%}",
            flush=True,
        )
