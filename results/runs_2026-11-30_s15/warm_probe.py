"""Session 15, call 1: how a case's timing moves under sustained load, from rest.

Session 14's call 6 found a case's first timing (median of 15 rounds of 20 graph replays) 1-9% faster than its later
ones. Here each case starts after 3 s idle and replays continuously for SECONDS, one round of 20 replays at a time;
printed per 100 ms window: the median round time, with the SM clock, power and temperature read (NVML, through torch)
after the window's last round, outside the timed spans.

    python3 results/runs_2026-11-30_s15/warm_probe.py uniform-bs8192,zipf-bs21504 [SECONDS]
"""

import sys
import time

import torch

from moe_gather import bmm1
from moe_gather.benchmarking import cuda_timer
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem


def nvml() -> str:
    try:
        return f"{torch.cuda.clock_rate()} MHz {torch.cuda.power_draw() / 1000:.0f} W {torch.cuda.temperature()} C"
    except Exception as e:  # no pynvml: times only
        return type(e).__name__


seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
weights = bmm1.prepare_weights(params.weights)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    out = torch.empty((problem.tokens, model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    bmm1.run_problem(problem, weights, out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bmm1.run_problem(problem, weights, out)
    torch.cuda.synchronize()
    time.sleep(3.0)
    print(f"{name} from rest ({nvml()}):", flush=True)
    begin = cuda_timer()
    window, rounds = 0, []
    while True:
        start = cuda_timer()
        for _ in range(20):
            graph.replay()
        end = cuda_timer()
        rounds.append((end - start) / 20)
        if end - begin >= (window + 1) * 0.1 or end - begin >= seconds:
            rounds.sort()
            print(f"  {end - begin:5.2f} s: {rounds[len(rounds) // 2] * 1e6:8.1f} us ({len(rounds)} rounds) {nvml()}")
            window, rounds = int((end - begin) / 0.1), []
        if end - begin >= seconds:
            break
