"""Session 14, call 6: do a case's two timing modes follow its buffers' addresses? The gate's timing (CUDA-graph
replays, median of 15 rounds of 20) of a few cases, 6 times on the same buffers, then 6 times each on fresh copies of
the weights and inputs (the earlier copies kept alive, so that each lands at new addresses)."""

import dataclasses
import sys

import torch

from moe_gather import bmm1
from moe_gather.benchmarking import cuda_timer
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem


def median_us(fn, rounds=15, iterations=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(rounds):
        start = cuda_timer()
        for _ in range(iterations):
            fn()
        times.append((cuda_timer() - start) / iterations)
    return sorted(times)[rounds // 2] * 1e6


def timed(problem, weights):
    out = torch.empty((problem.tokens, problem.case.model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    bmm1.run_problem(problem, weights, out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bmm1.run_problem(problem, weights, out)
    return median_us(graph.replay)


model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
weights = bmm1.prepare_weights(params.weights)
kept = []
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    same = [timed(problem, weights) for _ in range(6)]
    fresh = []
    for _ in range(6):
        w = dataclasses.replace(weights, words=weights.words.clone(), scales=weights.scales.clone())
        p = dataclasses.replace(problem, x=problem.x.clone())
        kept.append((w, p))
        fresh.append(timed(p, w))
    print(
        f"{name:>16} same buffers: {' '.join(f'{t:6.1f}' for t in same)} | fresh: "
        f"{' '.join(f'{t:6.1f}' for t in fresh)}",
        flush=True,
    )
