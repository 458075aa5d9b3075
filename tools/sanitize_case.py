"""One launch of the kernel on one case, for compute-sanitizer (no reference: the suite checks values).

compute-sanitizer --tool memcheck --error-exitcode 9 python3 tools/sanitize_case.py uniform 4096
"""

import sys

import torch

from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem


def main(routing: str, batch: int):
    model = MODELS["gpt-oss-120b"]
    params = make_expert_params(model, "cuda")
    problem = make_problem(Case(model, routing, batch), "cuda", params)
    weights = bmm1.prepare_weights(params.weights)
    config = bmm1.select_config(problem.routing.ragged)
    bmm1.run_problem(problem, weights)
    torch.cuda.synchronize()
    print(f"{routing}-bs{batch}: {problem.tokens} tokens, {config}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
