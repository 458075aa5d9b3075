"""What a call's time is made of beyond decode: the kernel and the vendor anchor timed against K on the same cases.

    python3 tools/k_scan.py [K,K,...]   # default 1408,2816,5632: 11, 22 and 44 whole K tiles

Per case and K: the kernel at the fast precision on the fp8 layout (the table's choice) and the vendor anchor
(`torch._scaled_grouped_mm` on the same slices, weights dense e4m3), sustained timing, the routing of gpt-oss-120b's
case at every K. A fit t = a + b K per case: `a` is what does not scale with K (launch, program starts and ring fill,
the drain, the epilogue), `b` the K loop's rate, reported as the loop's TFLOP/s. results/h200/fast/k_scan.log holds
the H200's figures.
"""

import dataclasses
import sys

import torch

from moe_gather import bmm1
from moe_gather.bench import VendorWeights, time_vendor
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem

CASES = ("uniform-bs31744", "uniform-bs16384", "zipf-bs16384", "uniform-bs8192", "uniform-bs3072", "uniform-bs256")
DEFAULT_KS = (1408, 2816, 5632)


def fit(ks, times) -> tuple[float, float]:
    """Least squares (a, b) of times = a + b * ks."""
    n = len(ks)
    mk, mt = sum(ks) / n, sum(times) / n
    b = sum((k - mk) * (t - mt) for k, t in zip(ks, times, strict=True)) / sum((k - mk) ** 2 for k in ks)
    return mt - b * mk, b


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
            config = bmm1.select_config(problem.routing.ragged, precision="fast")
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
    for who in ("kernel", "vendor"):
        for name in CASES:
            ts = [times[who, name, k] for k in ks]
            a, b = fit(ks, ts)
            at = a + b * base.hidden
            loop = 2 * tokens[name] * base.n / b / 1e6  # flops a unit of K over b us a unit of K
            print(
                f"fit {who} {name}: a {a:.1f} us, b {b * 1000:.2f} us per 1000 K, at {base.hidden} {at:.1f} us, "
                f"intercept {a / at:.1%}, loop {loop:.0f} TFLOP/s",
                flush=True,
            )


if __name__ == "__main__":
    main(tuple(int(k) for k in sys.argv[1].split(",")) if len(sys.argv) > 1 else DEFAULT_KS)
