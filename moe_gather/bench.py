"""Benchmark: the kernel and triton_kernels' matmul_ogs, same process, same routing, ceilings measured in the run.

    python -m moe_gather bench [--model gpt-oss-120b] [--routing all] [--batch-sizes 128,4096]
                               [--precision fast [--layout fp8]] [--json out.json]

Per case: time, TFLOP/s, TB/s, % of roofline, the speedup over the peer and the vendor anchor's time over the
kernel's (vendor_speedup). Roofline time =
max(bytes / read bandwidth, flops / fp8 dense rate), both measured here (bytes and flops as
Problem.bytes and Problem.flops). Times are sustained: CUDA-graph replays, the median round over a second after a
warm-up (moe_gather.benchmarking.sustained_seconds: the H200 is power-limited, and a short burst times whichever clock
phase it lands on), the kernel and the peer alike; the ceilings are triton's do_bench_cudagraph, as the anchors
measured them (a burst: higher ceilings, a lower % of roofline). No L2 flush between replays (the expert weights,
~8.8 MB each, exceed the 50 MB L2 from 6 active experts on).
The peer runs its fast Hopper path (`bf16x`: x upcast to bf16 with x_scale outside the timed region, swizzled
weights), as the anchors measured it.
The vendor anchor is PyTorch's fp8 grouped GEMM (`torch._scaled_grouped_mm`, CUTLASS, rowwise scales, promoted
accumulation) on the same slices, each rounded up to 16 rows, with the weights already dense fp8 in memory (one scale
per weight row) and x already gathered: no gather, no MXFP4 decode, no bias or SwiGLU, bf16 out. It holds the
weights in twice the bytes (gpt-oss-120b: 265 MB per shard against 141 MB), which bounds it at small batch; at large
batch it is the fp8 rate a user could otherwise pick.
"""

from __future__ import annotations

import argparse
import json
from statistics import geometric_mean

import torch
import triton
from triton.testing import do_bench_cudagraph

from . import bmm1, peer
from .benchmarking import graphed, sustained_seconds
from .mxfp4 import dequantize_mxfp4
from .problem import MODELS, ROUTINGS, cases, make_expert_params, make_problem, parse_batch_sizes


def measure_ceilings() -> dict:
    """HBM read bandwidth (a sum over 2 GiB) and dense fp8 rate (torch._scaled_mm, 8192^3)."""
    big = torch.empty(2**29, dtype=torch.float32, device="cuda").uniform_()
    read_bw = big.numel() * 4 / (do_bench_cudagraph(big.sum) * 1e-3)
    del big
    m = torch.randn(8192, 8192, device="cuda")
    x = m.to(torch.float8_e4m3fn)
    y = m.t().contiguous().to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    fp8 = 2 * 8192**3 / (do_bench_cudagraph(lambda: torch._scaled_mm(x, y, one, one, out_dtype=torch.bfloat16)) * 1e-3)
    return {"read_bw": read_bw, "fp8_flops": fp8}


def case_row(problem, seconds: float, ceilings: dict, weights) -> dict:
    """One case's figures from its kernel time on `weights`: TFLOP/s, TB/s and % of the roofline of `ceilings`, the
    precision, the config and the weights' encoding (e.g. "fast+fp8": the config names what it may read)."""
    precision = weights.precision
    roof = max(problem.bytes() / ceilings["read_bw"], problem.flops() / ceilings["fp8_flops"])
    return {
        "case": problem.case.id,
        "tokens": problem.tokens,
        "active_experts": problem.active_experts(),
        "us": seconds * 1e6,
        "tflops": problem.flops() / seconds / 1e12,
        "tbps": problem.bytes() / seconds / 1e12,
        "roof_us": roof * 1e6,
        "pct_roof": roof / seconds,
        "precision": precision,
        "config": str(bmm1.select_config(problem.routing.ragged, precision=precision, weights=weights)),
        "weights": getattr(weights, "encoding", ""),
    }


def time_kernel(problem, weights, ceilings) -> dict:
    out = torch.empty((problem.tokens, problem.case.model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")

    seconds = sustained_seconds(graphed(lambda: bmm1.run_problem(problem, weights, out)))
    return case_row(problem, seconds, ceilings, weights)


VENDOR_ROWS = 16  # CUTLASS's fp8 grouped GEMM takes each group's rows in multiples of 16


class VendorWeights:
    """A model's weights dense in e4m3 for the vendor anchor, [E, N, K] with one fp32 scale per weight row (rounded:
    for speed, not accuracy; moe_gather.accuracy holds the exact folds)."""

    def __init__(self, weights):
        w = dequantize_mxfp4(weights).transpose(1, 2)  # [E, N, K] fp32
        self.scale = (w.abs().amax(-1) / 448).clamp(min=2.0**-100)  # [E, N]
        self.e4m3 = (w / self.scale[..., None]).to(torch.float8_e4m3fn).contiguous()


def vendor_rows(x: torch.Tensor, gather_indx: torch.Tensor, slice_sizes: torch.Tensor):
    """The vendor anchor's operand: the gathered rows of each slice, each slice padded with zero rows to a multiple
    of VENDOR_ROWS, and the groups' end offsets (int32), as torch._scaled_grouped_mm takes them."""
    sizes = slice_sizes.long()
    padded = (sizes + VENDOR_ROWS - 1) // VENDOR_ROWS * VENDOR_ROWS
    tokens = gather_indx.shape[0]
    rows = torch.zeros((int(padded.sum()), x.shape[1]), dtype=x.dtype, device=x.device)
    within = torch.arange(tokens, device=sizes.device) - torch.repeat_interleave(
        torch.cumsum(sizes, 0) - sizes, sizes, output_size=tokens
    )
    ends = torch.cumsum(padded, 0)
    at = torch.repeat_interleave(ends - padded, sizes, output_size=tokens) + within
    rows[at] = x[gather_indx.long()]
    return rows, ends.to(torch.int32)


def vendor_call(problem, vendor: VendorWeights):
    """The vendor anchor's call on `problem`'s slices (x gathered and padded outside it)."""
    routing = problem.routing
    x, offs = vendor_rows(problem.x, routing.gather_indx, routing.ragged.slice_sizes)
    scale_a = torch.ones(x.shape[0], dtype=torch.float32, device=x.device)
    w = vendor.e4m3.transpose(-2, -1)  # [E, K, N], column-major
    return lambda: torch._scaled_grouped_mm(
        x, w, scale_a, vendor.scale, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=False
    )


def time_vendor(problem, vendor: VendorWeights) -> float:
    """The vendor anchor's sustained time on `problem`, us."""
    return sustained_seconds(graphed(vendor_call(problem, vendor))) * 1e6


def time_peer(problem) -> float:
    """The peer's sustained time on `problem`, us (matmul_ogs allocates its scratch on its first, eager call)."""
    num_warps = 4 if problem.case.batch <= 512 else 8  # as the anchors' measurement
    call = peer.prepare(problem, "bf16x", num_warps=num_warps)
    return sustained_seconds(graphed(call.run)) * 1e6


def summarize(rows) -> dict:
    """Geometric means over cases: % of roofline, and the speedup over the peer where it ran."""
    rows = [r for r in rows if r["tokens"]]  # a shard with no rows launches nothing: no rate to average
    speedups = [r["speedup"] for r in rows if "speedup" in r]
    roofs = [r["pct_roof"] for r in rows]
    summary = {"cases": len(rows), "geomean_pct_roof": geometric_mean(roofs), "min_pct_roof": min(roofs)}
    if vendor := [r["vendor_speedup"] for r in rows if "vendor_speedup" in r]:
        summary |= {"vendor_cases": len(vendor), "geomean_vendor_speedup": geometric_mean(vendor)}
    if speedups:
        summary |= {
            "peer_cases": len(speedups),
            "geomean_speedup": geometric_mean(speedups),
            "min_speedup": min(speedups),
            "cases_slower_than_peer": sum(s < 1 for s in speedups),
        }
    return summary


def _time_column(name, timer, us_key, ratio_key, selected, rows, params, skip_empty=False):
    """An anchor's times into `rows` (us_key, and ratio_key: its time over the kernel's) on the same problems,
    regenerated (deterministic); a failure ends the column, never the run. skip_empty: cases without rows."""
    for case, row in zip(selected, rows, strict=True):
        problem = make_problem(case, "cuda", params)
        if skip_empty and not problem.tokens:
            continue
        try:
            row[us_key] = timer(problem)
        except Exception as e:
            print(f"{name} failed on {case.id}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            break
        row[ratio_key] = row[us_key] / row["us"]


def run(
    model: str, routings, batches, json_path: str | None, with_peer=True, precision=None, vendor=True, layout="mxfp4"
):
    """Kernel timings for every case first, then the peer's on the same problems (regenerated, deterministic), so
    that a peer failure cannot cost the kernel's numbers."""
    ceilings = measure_ceilings()
    with_peer = with_peer and peer.available()
    print(
        f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
        f"peer {'triton_kernels' if with_peer else 'absent'}; ceilings: read {ceilings['read_bw'] / 1e12:.2f} TB/s, "
        f"fp8 {ceilings['fp8_flops'] / 1e12:.0f} TFLOP/s",
        flush=True,
    )
    params = make_expert_params(MODELS[model], "cuda")
    weights = bmm1.prepare_weights(params.weights, precision=precision, layout=layout)
    selected = cases((model,), routings, batches)
    rows = []
    for case in selected:
        rows.append(time_kernel(make_problem(case, "cuda", params), weights, ceilings))
        print(f"kernel {rows[-1]['case']}: {rows[-1]['us']:.1f} us, {rows[-1]['pct_roof']:.1%} of roofline", flush=True)
    del weights
    if vendor:
        vendor_weights = VendorWeights(params.weights)
        _time_column("vendor", lambda p: time_vendor(p, vendor_weights), "vendor_us", "vendor_speedup", selected,
                     rows, params, skip_empty=True)  # fmt: skip
        del vendor_weights
    if with_peer:
        _time_column("peer", time_peer, "peer_us", "speedup", selected, rows, params)
    print(f"{'case':>28} {'tokens':>7} {'act':>4} {'us':>8} {'TFLOP/s':>8} {'TB/s':>6} {'roof':>6} ", end="")
    print(f"{'peer_us':>8} {'x':>6} {'vendor_us':>9} {'vx':>5}")
    for row in rows:
        print(
            f"{row['case']:>28} {row['tokens']:>7} {row['active_experts']:>4} {row['us']:>8.1f} "
            f"{row['tflops']:>8.1f} {row['tbps']:>6.2f} {row['pct_roof']:>6.1%} "
            f"{row.get('peer_us', float('nan')):>8.1f} {row.get('speedup', float('nan')):>6.2f} "
            f"{row.get('vendor_us', float('nan')):>9.1f} {row.get('vendor_speedup', float('nan')):>5.2f}"
        )
    summary = summarize(rows)
    print("summary:", json.dumps(summary), flush=True)
    if json_path:
        device = {"name": torch.cuda.get_device_name(), "capability": torch.cuda.get_device_capability()}
        with open(json_path, "w") as f:
            json.dump({"device": device, "ceilings": ceilings, "summary": summary, "rows": rows}, f, indent=1)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m moe_gather bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=tuple(MODELS), default="gpt-oss-120b")
    parser.add_argument("--routing", choices=(*ROUTINGS, "all"), default="all")
    parser.add_argument("--batch-sizes", default=None, help="comma-separated (default: the ladder)")
    parser.add_argument("--json", default=None, help="write rows, ceilings and summary here")
    parser.add_argument("--no-peer", action="store_true", help="leave the peer out")
    parser.add_argument("--no-vendor", action="store_true", help="leave the vendor anchor out")
    parser.add_argument(
        "--precision", choices=bmm1.PRECISIONS, default=None, help="the kernel's (default: prepare_weights')"
    )
    parser.add_argument(
        "--layout", choices=bmm1.LAYOUTS, default="mxfp4", help="the weights' (fp8: with --precision fast)"
    )
    args = parser.parse_args(argv)
    if refusal := bmm1.layout_refusal(args.layout, args.precision):
        parser.error(refusal)
    routings = ROUTINGS if args.routing == "all" else (args.routing,)
    try:
        batches = parse_batch_sizes(args.batch_sizes) if args.batch_sizes else None
    except ValueError as e:
        parser.error(f"--batch-sizes: {e}")
    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU")
    run(args.model, routings, batches, args.json, not args.no_peer, args.precision, not args.no_vendor, args.layout)
