"""Session 15, call 1: is the peer timed here as ../shared/anchors.md timed it?

The saves' peer times run 1.08x-1.48x the anchors' on the same uniform cases (uniform-bs2048 154.9 against 118.9 us),
the same on every H200 and in every save since 0001. Differences between the two calls: this project's asks for the
peer's actual out scale (an atomic max a tile, which the kernel does not compute), and its peer runs right after the
kernel. Per case, in one process: the kernel, then the peer with and without the actual scale, each twice in
alternation, with the options matmul_ogs chose for each (block_m, block_n, persistent, split_k, stages).

    python3 results/runs_2026-11-30_s15/peer_probe.py uniform-bs128,uniform-bs2048,...
"""

import sys

import torch
import triton_kernels.matmul_ogs as ogs
from triton.testing import do_bench_cudagraph

from moe_gather import bmm1, peer
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

chosen = []
_make_opt_flags = ogs.make_opt_flags


def recording_make_opt_flags(*args, **kwargs):
    flags = _make_opt_flags(*args, **kwargs)
    chosen.append(flags)
    return flags


ogs.make_opt_flags = recording_make_opt_flags


def describe(flags) -> str:
    keys = ("block_m", "block_n", "block_k", "num_warps", "num_stages", "split_k", "is_persistent", "epilogue_subtile")
    return " ".join(f"{k}={getattr(flags, k)}" for k in keys)


def peer_us(problem, amax: bool) -> tuple[float, str]:
    call = peer.prepare(problem, "bf16x", num_warps=4 if problem.case.batch <= 512 else 8, amax=amax)
    chosen.clear()
    call.run()
    torch.cuda.synchronize()
    flags = describe(chosen[0]) if chosen else "?"
    return do_bench_cudagraph(call.run) * 1e3, flags


def kernel_us(problem, weights) -> float:
    out = torch.empty((problem.tokens, problem.case.model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    bmm1.run_problem(problem, weights, out)
    return do_bench_cudagraph(lambda: bmm1.run_problem(problem, weights, out)) * 1e3


model = MODELS["gpt-oss-120b"]
params = make_expert_params(model, "cuda")
weights = bmm1.prepare_weights(params.weights)
for name in sys.argv[1].split(","):
    routing, batch = name.split("-bs")
    problem = make_problem(Case(model, routing, int(batch)), "cuda", params)
    kernel = kernel_us(problem, weights)
    times = {True: [], False: []}
    flags = {}
    for amax in (True, False, True, False):
        t, flags[amax] = peer_us(problem, amax)
        times[amax].append(t)
    print(
        f"{name:>16} tokens {problem.tokens:>6} kernel {kernel:7.1f} us | peer with actual scale "
        f"{' '.join(f'{t:7.1f}' for t in times[True])} us [{flags[True]}] | without "
        f"{' '.join(f'{t:7.1f}' for t in times[False])} us [{flags[False]}]",
        flush=True,
    )
