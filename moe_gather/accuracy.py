"""Accuracy anchors: the kernel, the peer and the vendor's GEMMs on the same inputs, against the golden reference.

    python -m moe_gather accuracy [--model all] [--routing all] [--params all] [--batch-sizes ...] [--json F]
    python -m moe_gather accuracy --from-json F --markdown PAGE      # the page, from committed data

Computations, each scored by reference.compare_fp8 (bitwise-equal fraction, worst error in ordinals, worst scaled
error and the fraction of outputs over 1: reference.scaled_errors):
- kernel: moe_bmm1 on this GPU at precision "accurate"; kernel_fast: at "fast" (Hopper; weights whose scales fold);
- peer: triton_kernels' matmul_ogs with fp8 x (its exact semantics for this op), where importable;
- fp32: torch's fp32 matmul of the dequantized weights (TF32 off), the reference's exact epilogue after it;
- cublas_fp8 and cublas_fp8_fast: torch._scaled_mm, e4m3 x e4m3 into fp32, with each expert's weights folded into
  e4m3 against one power of two (checked exact: fold_e4m3), promoted or fast accumulation, the exact epilogue after it;
  rows padded to multiples of 16 as cuBLAS wants.
The reference, the fp32 GEMM and the vendor's epilogue run on the GPU in float64.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections.abc import Callable

import torch

from .mxfp4 import dequantize_mxfp4
from .problem import (
    DECODE_BATCHES,
    MODELS,
    PARAMS,
    Problem,
    cases,
    make_expert_params,
    make_problem,
    parse_batch_sizes,
    reference_for,
)
from .reference import compare_fp8, swiglu_reference, to_e4m3, with_precision
from .routing import ROUTINGS

COMPUTATIONS = ("kernel", "kernel_fast", "peer", "fp32", "cublas_fp8", "cublas_fp8_fast")
CUBLAS_ROWS = 16  # cuBLAS's fp8 GEMM takes M, N and K in multiples of 16


def fold_e4m3(w: torch.Tensor) -> tuple[torch.Tensor, int]:
    """One expert's dequantized weights (float64 [K, N], e2m1 times powers of two) -> (e4m3 [K, N], p) with
    w == e4m3 * 2**p exactly: the largest magnitude lands at 6 * 2**6 = 384 <= 448; a ValueError where the block
    scales spread too far for every value to stay exact (below e4m3's subnormal steps)."""
    amax = float(w.abs().max())
    p = math.frexp(amax)[1] - 1 - 8 if amax > 0 else 0  # 2**floor(log2 amax) -> 2**8
    folded = (w * 2.0**-p).to(torch.float8_e4m3fn)
    if not torch.equal(folded.to(torch.float64) * 2.0**p, w):
        raise ValueError("fold_e4m3: the weights do not fold exactly into e4m3 against one power of two")
    return folded, p


def _epilogue(acc: torch.Tensor, problem: Problem, expert: int) -> torch.Tensor:
    """The reference's epilogue in float64 on one expert's accumulators [rows, N] -> y [rows, N/2]."""
    z = acc.to(torch.float64) * problem.x_scale.double() + problem.params.bias[expert].double()
    return swiglu_reference(z, problem.alpha, problem.limit)


def _per_expert(problem: Problem, accumulate: Callable[[torch.Tensor, int], torch.Tensor]) -> torch.Tensor:
    """fp8 [tokens, N/2]: `accumulate(rows, expert)` (rows: the slice's gathered x, e4m3) -> its accumulators, then
    the exact epilogue and one rounding to e4m3."""
    sizes = problem.routing.ragged.slice_sizes.tolist()
    y = torch.empty((problem.tokens, problem.case.model.n // 2), dtype=torch.float64, device=problem.x.device)
    start = 0
    for e, size in enumerate(sizes):
        if size:
            rows = problem.x[problem.routing.gather_indx[start : start + size].long()]
            y[start : start + size] = _epilogue(accumulate(rows, e), problem, e)
            start += size
    return to_e4m3(y / problem.out_scale.double())


class DenseWeights:
    """A model's expert weights dense, for the anchors: fp32 [E, K, N], and e4m3 [E, K, N] (column-major, as cuBLAS
    takes its second operand) with one power of two per expert (fold_e4m3). Built once per model."""

    def __init__(self, weights):
        self.fp32 = dequantize_mxfp4(weights, torch.float32)
        folds = [fold_e4m3(w.double()) for w in self.fp32]
        self.e4m3 = [folded.t().contiguous().t() for folded, _ in folds]
        self.powers = [p for _, p in folds]


def fp32_gemm(problem: Problem, dense: DenseWeights) -> torch.Tensor:
    """torch's fp32 matmul of the dequantized weights (TF32 off), then the exact epilogue."""

    def accumulate(rows, e):
        return rows.to(torch.float32) @ dense.fp32[e]

    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return _per_expert(problem, accumulate)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def cublas_fp8(problem: Problem, dense: DenseWeights, fast: bool) -> torch.Tensor:
    """torch._scaled_mm (cuBLAS fp8, into fp32) with the weights folded exactly into e4m3, then the exact epilogue."""
    one = torch.ones((), device=problem.x.device)

    def accumulate(rows, e):
        pad = -rows.shape[0] % CUBLAS_ROWS
        padded = torch.cat((rows, rows.new_zeros((pad, rows.shape[1])))) if pad else rows
        acc = torch._scaled_mm(padded, dense.e4m3[e], one, one, out_dtype=torch.float32, use_fast_accum=fast)
        return acc[: rows.shape[0]].double() * 2.0 ** dense.powers[e]

    return _per_expert(problem, accumulate)


def outputs(problem: Problem, kernel_weights, with_peer: bool, dense: DenseWeights | None = None) -> dict:
    """Every computation's fp8 output on `problem`: the kernel's at each precision of `kernel_weights` (a precision ->
    prepared weights dict, or None), the peer's only `with_peer`; `dense`: the model's DenseWeights,
    built here if not given."""
    from . import bmm1, peer

    results = {
        with_precision("kernel", precision, "_"): bmm1.run_problem(problem, weights)
        for precision, weights in (kernel_weights or {}).items()
    }
    if with_peer and problem.tokens:  # a shard with no rows: nothing for the peer to launch
        results["peer"] = peer.prepare(problem, "fp8x").run()
    dense = dense or DenseWeights(problem.params.weights)
    results["fp32"] = fp32_gemm(problem, dense)
    results["cublas_fp8"] = cublas_fp8(problem, dense, fast=False)
    results["cublas_fp8_fast"] = cublas_fp8(problem, dense, fast=True)
    return results


def measure(problem: Problem, kernel_weights, with_peer: bool, dense: DenseWeights | None = None) -> dict:
    """One case's row: its figures and each computation's agreement with the golden reference."""
    ref = reference_for(problem).out
    case = problem.case
    row = {"case": case.id, "model": case.model.name, "routing": case.routing, "batch": case.batch}
    row |= {"params": case.params, "decode": case.decode, "tokens": problem.tokens}
    results = outputs(problem, kernel_weights, with_peer, dense)
    row["agreement"] = {name: compare_fp8(ref, out).as_dict() for name, out in results.items()}
    return row


def run(models, routings, params, batches, rows: list, with_peer: bool = True, log=print) -> list[dict]:
    """Measure every selected case on the GPU, appending to `rows` as it goes (an interrupted run keeps its rows)."""
    from . import bmm1, peer
    from ._sm90_layout import FoldError

    with_peer = with_peer and peer.available()
    for model in models:
        expert_params = make_expert_params(MODELS[model], "cuda")
        kernel_weights = {}
        for precision in bmm1.supported_precisions(torch.cuda.get_device_capability()):
            try:  # "accurate" takes any weights; another may refuse them (the fast one: scales that do not fold)
                kernel_weights[precision] = bmm1.prepare_weights(expert_params.weights, precision=precision)
            except FoldError as e:
                log(f"{model}: no kernel_{precision}: {e}", flush=True)
        dense = DenseWeights(expert_params.weights)
        for case in cases((model,), routings, batches, params, decode=batches is None):
            rows.append(measure(make_problem(case, "cuda", expert_params), kernel_weights, with_peer, dense))
            log(_line(rows[-1]), flush=True)
    return rows


def _line(row: dict) -> str:
    cells = [
        f"{name} {a['bitwise_equal']:.4%} {a['max_ulp']:g} {a['max_scaled']:.3g} {a['scaled_over_one']:.4%}"
        for name, a in row["agreement"].items()
    ]
    return f"{row['case']} ({row['tokens']} rows): " + " | ".join(cells)


def summarize(rows: list[dict]) -> dict:
    """(params, computation) -> worst over the cases: least bitwise fraction, worst ordinal and scaled errors, most
    outputs over 1 scaled ulp; with the number of cases."""
    summary: dict[str, dict] = {}
    for row in rows:
        for name, a in row["agreement"].items():
            s = summary.setdefault(f"{row['params']}/{name}", {"cases": 0, "outputs": 0})
            s["cases"] += 1
            s["outputs"] += a["count"]
            s["min_bitwise_equal"] = min(s.get("min_bitwise_equal", 1.0), a["bitwise_equal"])
            s["max_ulp"] = max(s.get("max_ulp", 0.0), a["max_ulp"])
            s["max_scaled"] = max(s.get("max_scaled", 0.0), a["max_scaled"])
            s["max_scaled_over_one"] = max(s.get("max_scaled_over_one", 0.0), a["scaled_over_one"])
    return summary


def markdown(data: dict, json_path: str, page_path: str) -> str:
    """The results page: the summary first, then every case, from the JSON that `main` writes."""
    rows, summary = data["rows"], data["summary"]
    present = [c for c in COMPUTATIONS if any(c in r["agreement"] for r in rows)]
    lines = [
        f"# Accuracy on the {data['device']['name']}: the kernel beside the peer and the vendor's GEMMs",
        "",
        f"Against the golden reference (exact products, float64 sums and epilogue, one rounding to e4m3), "
        f"{len(rows)} cases. Measured by `{data['command']}`; this page: `python -m moe_gather accuracy "
        f"--from-json {json_path} --markdown {page_path}`. Stack: {data['stack']}.",
        "",
        "Worst over the cases (bitwise: the least fraction of fp8 outputs equal to the reference; ulp: the worst "
        "error in e4m3 ordinals; scaled: the worst error in e4m3 ulps at max(|ref|, amax / 2^10); over 1: the most "
        "outputs of a case with a scaled error over 1):",
        "",
        "| params | computation | cases | bitwise | ulp | scaled | over 1 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for params in PARAMS:
        for name in present:
            s = summary.get(f"{params}/{name}")
            if s:
                lines.append(
                    f"| {params} | {name} | {s['cases']} | {s['min_bitwise_equal']:.4%} | {s['max_ulp']:g} | "
                    f"{s['max_scaled']:.3g} | {s['max_scaled_over_one']:.4%} |"
                )
    head = " | ".join(f"{c} bitwise | ulp | scaled" for c in present)
    lines += ["", "Per case (bitwise, ulp, scaled):", "", f"| case | rows | {head} |"]
    lines.append("|---|---:|" + "---:|---:|---:|" * len(present))
    for row in rows:
        cells = []
        for c in present:
            a = row["agreement"].get(c)
            cells.append(f"{a['bitwise_equal']:.4%} | {a['max_ulp']:g} | {a['max_scaled']:.3g}" if a else "- | - | -")
        lines.append(f"| {row['case']} | {row['tokens']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def open_run(path: str, mode: str = "r"):
    """A run's JSON file, gzip-compressed where its name ends in .gz (the committed runs are)."""
    return gzip.open(path, mode + "t") if str(path).endswith(".gz") else open(path, mode)


def _merged(paths: list[str]) -> dict:
    """One data set from the JSON of several runs (say one per model): their rows, one summary."""
    parts = []
    for path in paths:
        with open_run(path) as f:
            parts.append(json.load(f))
    rows = [row for part in parts for row in part["rows"]]
    data = {key: parts[0][key] for key in ("device", "stack")}
    data["command"] = "; ".join(part["command"] for part in parts)
    return data | {"summary": summarize(rows), "rows": rows}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m moe_gather accuracy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=(*MODELS, "all"), default="all")
    parser.add_argument("--routing", choices=(*ROUTINGS, "all"), default="all")
    parser.add_argument("--params", choices=(*PARAMS, "all"), default="all")
    parser.add_argument(
        "--batch-sizes", default=None, help=f"comma-separated (default: the ladder and {DECODE_BATCHES})"
    )
    parser.add_argument("--no-peer", action="store_true", help="leave triton_kernels out")
    parser.add_argument("--json", default=None, help="write the rows and their summary here (gzip: a name ending .gz)")
    parser.add_argument("--from-json", nargs="+", default=None, help="read the rows from these instead of measuring")
    parser.add_argument("--markdown", default=None, help="write the results page here")
    args = parser.parse_args(argv)
    if args.from_json:
        data = _merged(args.from_json)
    else:
        try:
            batches = parse_batch_sizes(args.batch_sizes) if args.batch_sizes else None
        except ValueError as e:
            parser.error(f"--batch-sizes: {e}")
        if not torch.cuda.is_available():
            parser.error("measuring needs a CUDA GPU (--from-json renders committed data)")
        import triton

        pick = lambda value, every: every if value == "all" else (value,)
        device = {"name": torch.cuda.get_device_name(), "capability": torch.cuda.get_device_capability()}
        stack = f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}"
        command = " ".join(["python -m moe_gather accuracy", *argv])
        rows = []
        data = {"device": device, "stack": stack, "command": command, "rows": rows}
        try:
            run(pick(args.model, tuple(MODELS)), pick(args.routing, ROUTINGS), pick(args.params, PARAMS), batches,
                rows, with_peer=not args.no_peer)  # fmt: skip
        except KeyboardInterrupt:  # keep what was measured, marked as such
            data["interrupted"] = True
        data["summary"] = summarize(rows)
        if args.json:
            with open_run(args.json, "w") as f:
                json.dump(data, f, indent=1)
    print(json.dumps(data["summary"], indent=1))
    if args.markdown:
        with open(args.markdown, "w") as f:
            source = " ".join(args.from_json) if args.from_json else (args.json or "(not saved: pass --json)")
            f.write(markdown(data, source, args.markdown))


if __name__ == "__main__":
    main()
