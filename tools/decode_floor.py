"""What bounds the decode cases' times on a GPU: the timing method's floor, a plain read of their bytes, and K.

    python3 tools/decode_floor.py floor   # per call: one CUDA-graph replay a call (the suite's method), and 20 calls
                                          # captured in one graph, for an empty kernel and the decode cases
    python3 tools/decode_floor.py reads   # a plain Triton read of 1-16 experts' bytes on 90-528 programs, and the
                                          # kernel at uniform-bs2 / zipf-bs2 / uniform-bs8 against K
    python3 tools/decode_floor.py splits  # the table's tile with k_splits 1, 2, 4 on five decode cases, both ways

The fast precision's kernel, gpt-oss-120b. results/h200/fast/decode_floor_*.log hold the H200's figures.
"""

import dataclasses
import sys

import torch
import triton
import triton.language as tl
from read_ceiling import triton_read

from moe_gather import bmm1
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

CALLS = 20  # calls captured in one graph


@triton.jit
def _nothing(out):
    tl.store(out, 1)


def suite_us(fn) -> float:
    """Per call, as the suite times: one graph replay a call, 20 a round."""
    return sustained_seconds(graphed(fn)) * 1e6


def one_graph_us(fn) -> float:
    """Per call with CALLS calls in one graph: the host's launch cost paid once for all of them."""
    return sustained_seconds(graphed(lambda: [fn() for _ in range(CALLS)]), iterations=1) / CALLS * 1e6


def floor():
    one = torch.zeros(1, device="cuda", dtype=torch.int32)
    empty = lambda: _nothing[(1,)](one)
    print(f"empty kernel: suite {suite_us(empty):.2f} us, in one graph {one_graph_us(empty):.2f} us", flush=True)
    model = MODELS["gpt-oss-120b"]
    params = make_expert_params(model, "cuda")
    weights = bmm1.prepare_weights(params.weights, precision="fast")
    for routing in ("uniform", "zipf"):
        for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            problem = make_problem(Case(model, routing, batch), "cuda", params)
            if not problem.tokens:
                continue
            call = lambda problem=problem: bmm1.run_problem(problem, weights)
            a, b = suite_us(call), one_graph_us(call)
            print(
                f"{routing}-bs{batch}: suite {a:.2f} us, in one graph {b:.2f} us; "
                f"bytes at 4.4 TB/s {problem.bytes() / 4.4e6:.2f} us",
                flush=True,
            )


def reads():
    base = MODELS["gpt-oss-120b"]
    for experts in (1, 2, 3, 16):
        n = experts * base.expert_weight_bytes // 4
        words = torch.randint(0, 1 << 20, (n,), device="cuda", dtype=torch.int32)
        for programs in (90, 132, 264, 528):
            out = torch.empty(programs, device="cuda", dtype=torch.int32)
            chunk = -(-n // programs)
            t = suite_us(lambda words=words, out=out, chunk=chunk: triton_read(words, out, chunk))
            print(
                f"read {experts} experts ({n * 4 / 1e6:.1f} MB) on {programs} programs: {t:.2f} us, "
                f"{n * 4 / t / 1e6:.2f} TB/s",
                flush=True,
            )
    for k in (128, 256, 512, 1024, 1536, 2048, 2880):
        model = dataclasses.replace(base, name=f"k{k}", hidden=k)
        params = make_expert_params(model, "cuda")
        weights = bmm1.prepare_weights(params.weights, precision="fast")
        for routing, batch in (("uniform", 2), ("zipf", 2), ("uniform", 8)):
            problem = make_problem(Case(model, routing, batch), "cuda", params)
            t = suite_us(lambda problem=problem, weights=weights: bmm1.run_problem(problem, weights))
            print(f"K {k} {routing}-bs{batch}: {t:.2f} us ({problem.bytes() / t / 1e6:.2f} TB/s)", flush=True)


def splits():
    model = MODELS["gpt-oss-120b"]
    params = make_expert_params(model, "cuda")
    weights = bmm1.prepare_weights(params.weights, precision="fast")
    for name in ("uniform-bs2", "zipf-bs1", "uniform-bs8", "zipf-bs8", "uniform-bs64"):
        problem = make_problem(Case.named(model, name), "cuda", params)
        table = bmm1.select_config(problem.routing.ragged, precision="fast")
        for s in (1, 2, 4):
            config = dataclasses.replace(table, k_splits=s)
            call = lambda problem=problem, config=config: bmm1.run_problem(problem, weights, config=config)
            graph, suite = one_graph_us(call), suite_us(call)
            print(f"{name} k_splits={s}: one graph {graph:.2f} us, suite {suite:.2f} us", flush=True)


if __name__ == "__main__":
    {"floor": floor, "reads": reads, "splits": splits}[sys.argv[1]]()
