"""Session 15, call 2: why the anchors' peer runs faster than this project's on the same shapes.

Call 1 left a gap after the actual out scale was dropped (uniform-bs3584: 175 us here, 132 in the anchors' script in
the same call, same options). Call 1's warm_probe also showed the H200 power-limited (700 W) under sustained load,
its clock cycling 1425-1845 MHz about once a second. Candidates: the x data (here x * x_scale rounded to bf16, every
mantissa bit in play; the anchors' bf16 of fp8 x, x_scale 1, four low mantissa bits zero: less switching on the tensor
cores, less power) and the weights' layout conversion from a transposed view (a variant on contiguous copies fails
the peer's shape check: its layouts take the strided view, as downcast_to_mxfp returns it). Per case, each variant
timed as the median of 20-replay rounds over 1.2 s (more than one power cycle), the variants in turn, twice:
  A  as moe_gather.peer times it (bf16(x * x_scale));
  B  x_scale taken as 1: bf16 of the fp8 x, exact;
  K  the kernel, for scale.

    python3 results/runs_2026-11-30_s15/peer_probe2.py uniform-bs2048,uniform-bs3584,...
"""

import dataclasses
import functools
import sys

import torch

from moe_gather import bmm1, peer
from moe_gather.benchmarking import cuda_timer
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem


def window_us(fn, seconds=1.2, iterations=20) -> float:
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    times, begin = [], cuda_timer()
    while not times or cuda_timer() - begin < seconds:
        start = cuda_timer()
        for _ in range(iterations):
            graph.replay()
        times.append((cuda_timer() - start) / iterations)
    return sorted(times)[len(times) // 2] * 1e6


model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
weights = bmm1.prepare_weights(params.weights)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    unscaled = dataclasses.replace(problem, x_scale=torch.ones_like(problem.x_scale))
    num_warps = 4 if problem.case.batch <= 512 else 8
    out = torch.empty((problem.tokens, model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    results = {k: [] for k in "ABK"}
    for _ in range(2):
        for variant in "ABK":
            if variant == "K":
                fn = functools.partial(bmm1.run_problem, problem, weights, out)
            else:
                fn = peer.prepare(problem if variant == "A" else unscaled, "bf16x", num_warps=num_warps).run
            results[variant].append(window_us(fn))
    print(
        f"{name:>16} tokens {problem.tokens:>6} "
        + " | ".join(f"{k} {' '.join(f'{t:7.1f}' for t in v)}" for k, v in results.items()),
        flush=True,
    )
