"""What a call's time is made of beyond decode: the kernel and the vendor anchor timed against K on the same cases.

    python3 tools/k_scan.py [K,K,...]   # default 2816,4224,5632: 22, 33 and 44 whole K tiles

Per case and K: the kernel at the fast precision on the fp8 layout (the table's choice) and the vendor anchor
(`torch._scaled_grouped_mm` on the same slices, weights dense e4m3), sustained timing, the routing of gpt-oss-120b's
case at every K. Then per case and pair of consecutive Ks, each one's marginal rate: the flops the added K brings over
the time it adds. A rate that falls as K grows is a cost that grows faster than K (possibly an expert's weights
outgrowing L2), so no straight line through the times separates a fixed part. results/h200/fast/k_scan.log holds the
H200's figures.
"""

import dataclasses
import itertools
import sys

import torch

from moe_gather import bmm1
from moe_gather.bench import VendorWeights, time_vendor
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

CASES = ("uniform-bs31744", "uniform-bs16384", "zipf-bs16384", "uniform-bs8192", "uniform-bs3072", "uniform-bs256")
DEFAULT_KS = (2816, 4224, 5632)


def main(ks):
    base = MODELS["gpt-oss-120b"]
    times = {}  # (who, case, K) -> us
    tokens = {}
    for k in ks:
        model = dataclasses.replace(base, hidden=k)  # the same name: the same routing draws at every K
        params = make_expert_params(model, "cuda")
        weights = bmm1.prepare_weights(params.weights, precision="fast", layout="fp8")
        vendor = VendorWeights(params.weights)
        for name in CASES:
            problem = make_problem(Case.named(model, name), "cuda", params)
            config = bmm1.select_config(problem.routing.ragged, precision="fast", weights=weights)
            call = lambda problem=problem, weights=weights: bmm1.run_problem(problem, weights)
            times["kernel", name, k] = sustained_seconds(graphed(call)) * 1e6
            times["vendor", name, k] = time_vendor(problem, vendor)
            tokens[name] = problem.tokens
            print(
                f"K {k} {name}: kernel {times['kernel', name, k]:.1f} us, vendor {times['vendor', name, k]:.1f} us "
                f"({problem.tokens} rows, {config})",
                flush=True,
            )
        weights = vendor = params = None  # freed before the next K's
        torch.cuda.empty_cache()
    for name in CASES:
        for k0, k1 in itertools.pairwise(ks):
            flops = 2 * tokens[name] * base.n * (k1 - k0)
            rates = [flops / (times[who, name, k1] - times[who, name, k0]) / 1e6 for who in ("kernel", "vendor")]
            print(f"step {name} K {k0} to {k1}: kernel {rates[0]:.0f} TFLOP/s, vendor {rates[1]:.0f} TFLOP/s")


if __name__ == "__main__":
    main(tuple(int(k) for k in sys.argv[1].split(",")) if len(sys.argv) > 1 else DEFAULT_KS)
