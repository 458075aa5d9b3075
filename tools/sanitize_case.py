"""One launch of the kernel on one case, for compute-sanitizer (no reference: the suite checks values).

compute-sanitizer --tool memcheck --error-exitcode 9 python3 tools/sanitize_case.py uniform 4096
compute-sanitizer --tool racecheck ... python3 tools/sanitize_case.py uniform 2048 256   # N = 256 instead of 5760
PRECISION=fast compute-sanitizer ...                       # the fast precision (default: prepare_weights')
PRECISION=fast LAYOUT=fp8 compute-sanitizer ...            # its fp8 layout (default: mxfp4)

The optional third argument narrows N (a multiple of 128): the same K loop, slices and tile widths in a few column
blocks, so that racecheck, which slows every shared-memory access, finishes on the large table entries too.
"""

import dataclasses
import os
import sys
from pathlib import Path

import torch

from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem


def read_cases(path) -> list[tuple[str, str, int, int | None]]:
    """A cases file's lines "tool routing batch [N]" (tools/sanitize.sh reads them too), less comments and blanks."""
    lines = [line.split() for line in Path(path).read_text().splitlines() if line[:1] not in ("", "#")]
    return [(f[0], f[1], int(f[2]), int(f[3]) if len(f) > 3 else None) for f in lines]


def case_model(n: int | None = None):
    """gpt-oss-120b, with N narrowed to `n` where given."""
    model = MODELS["gpt-oss-120b"]
    return dataclasses.replace(model, name=f"{model.name}-n{n}", n=n) if n else model


def main(routing: str, batch: int, n: int | None = None):
    model = case_model(n)
    params = make_expert_params(model, "cuda")
    problem = make_problem(Case(model, routing, batch), "cuda", params)
    weights = bmm1.prepare_weights(
        params.weights, precision=os.environ.get("PRECISION") or None, layout=os.environ.get("LAYOUT") or "mxfp4"
    )
    config = bmm1.select_config(problem.routing.ragged, precision=weights.precision, weights=weights)
    bmm1.run_problem(problem, weights)
    torch.cuda.synchronize()
    print(f"{routing}-bs{batch}: {problem.tokens} tokens, N = {model.n}, {weights.encoding} weights, {config}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
