"""Diagnose a triton_kernels failure on one case: run the peer's bf16x and fp8x paths alone, synchronously.

CUDA_LAUNCH_BLOCKING=1 python3 tools/peer_diag.py gpt-oss-120b-zipf-bs160
"""

import sys

import torch

from moe_gather import peer
from moe_gather.problem import MODELS, Case, make_problem

model, routing, batch = sys.argv[1].rsplit("-", 2)
problem = make_problem(Case(MODELS[model], routing, int(batch.removeprefix("bs"))), "cuda")
print("tokens", problem.tokens, "slice sizes", problem.routing.ragged.slice_sizes.tolist(), flush=True)
for variant in sys.argv[2:] or ("fp8x", "bf16x"):
    call = peer.prepare(problem, variant, num_warps=4 if problem.case.batch <= 512 else 8)
    call.run()
    torch.cuda.synchronize()
    print(variant, "ok", flush=True)
