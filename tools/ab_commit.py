"""A/B in one process: this tree's kernel against another commit's, on the same problems and the same GPU.

    mkdir -p .peers/base && git archive BASE moe_gather | tar -x -C .peers/base
    python3 tools/ab_commit.py .peers/base uniform-bs128,zipf-bs2048 [--rounds 4] [--json ab.json] [--precision fast]
        [--layout fp8] [--model gpt-oss-20b] [--new-force num_stages=4]

(The base is unpacked from git into the ignored .peers/, so that a GPU machine that gets a copy of the working tree
without its history can run it.)

The base package is imported from that folder as `base_moe_gather`. Each side builds its own weights and problems
from the same seeds (the inputs are checked equal), runs its own table's config, is checked against this tree's
golden reference (bitwise-equal fraction, worst ulp) and timed sustained (CUDA-graph replays, the median round over a
second after a warm-up: moe_gather.benchmarking.sustained_seconds), each side first in turn, the best of `--rounds`
rounds each; `--new-force` overrides fields of this tree's table choices only (as MOE_GATHER_SM90_FORCE would). One
line per case: both times, the ratio (>1: this tree faster), both agreements, and whether the two sides' outputs are
bit-identical. Against a copy of its own package this tree's side measures about 1% slower (results/h200/fast.md,
"The A/B tool against itself"): on identical code it prints 0.98x-1.00x, only a ratio outside that is a difference.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import sys
from unittest import mock

import torch

from moe_gather import accuracy, bmm1, problem
from moe_gather._sm90_config import FORCE_ENV
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.reference import compare_fp8


def import_base(folder: str):
    """`folder`/moe_gather as the package base_moe_gather (its imports are relative: it stays self-contained)."""
    root = pathlib.Path(folder) / "moe_gather"
    spec = importlib.util.spec_from_file_location("base_moe_gather", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_moe_gather"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("base_moe_gather.bmm1"), importlib.import_module("base_moe_gather.problem")


def _forced(fields, fn, *args):
    """fn(*args) with the sm90 table's choices overridden by `fields` (FORCE_ENV) where given: the calls that choose
    (the eager call, the graph's capture) run under it, the replays keep what it chose."""
    with mock.patch.dict(os.environ, {FORCE_ENV: fields} if fields else {}):
        return fn(*args)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="a folder holding the base commit's moe_gather/")
    parser.add_argument("cases", help="comma-separated, e.g. uniform-bs128,zipf-decode-bs8 (of --model)")
    parser.add_argument("--rounds", type=int, default=4)  # even: each side first as often
    parser.add_argument("--json", default=None)
    parser.add_argument("--precision", choices=bmm1.PRECISIONS, default=None, help="default: prepare_weights'")
    parser.add_argument("--layout", choices=bmm1.LAYOUTS, default=None, help="default: prepare_weights'")
    parser.add_argument("--model", choices=list(problem.MODELS), default="gpt-oss-120b")
    parser.add_argument("--new-force", default=None, help="fields forced on this tree's choices, e.g. num_stages=4")
    args = parser.parse_args()
    sides = {"new": (bmm1, problem), "base": import_base(args.base)}
    setups = {}
    for side, (kernel, problems) in sides.items():
        model = problems.MODELS[args.model]
        params = problems.make_expert_params(model, "cuda")
        # a base may predate the arguments
        asked = {name: value for name in ("precision", "layout") if (value := getattr(args, name))}
        weights = kernel.prepare_weights(params.weights, **asked)
        setups[side] = (kernel, problems, model, params, weights)
    rows = []
    for name in args.cases.split(","):
        case = problem.Case.named(problem.MODELS[args.model], name)  # zipf-bs8, zipf-decode-bs8
        decode = {"decode": True} if case.decode else {}  # a base may predate Case.named, and decode batches
        runs, outs = {}, {}
        for side, (kernel, problems, model, params, weights) in setups.items():
            p = problems.make_problem(problems.Case(model, case.routing, case.batch, **decode), "cuda", params)
            force = args.new_force if side == "new" else None
            runs[side] = (lambda k=kernel, p=p, w=weights, f=force: _forced(f, k.run_problem, p, w)), p
            outs[side] = runs[side][0]()
        new_p, base_p = runs["new"][1], runs["base"][1]
        same_inputs = torch.equal(new_p.x.view(torch.uint8), base_p.x.view(torch.uint8)) and torch.equal(
            new_p.routing.gather_indx, base_p.routing.gather_indx
        )
        ref = problem.reference_for(new_p).out
        agree = {side: compare_fp8(ref, out) for side, out in outs.items()}
        replays = {side: graphed(run) for side, (run, _) in runs.items()}
        times = {}
        for r in range(args.rounds):
            for side in ("base", "new") if r % 2 == 0 else ("new", "base"):  # each side first in turn
                us = sustained_seconds(replays[side]) * 1e6
                times[side] = min(us, times.get(side, us))
        identical = torch.equal(outs["new"].view(torch.uint8), outs["base"].view(torch.uint8))
        row = {"case": name, "same_inputs": same_inputs, "identical": identical,
               **{f"{side}_us": times[side] for side in times},
               **{f"{side}_bitwise": a.bitwise_equal_fraction for side, a in agree.items()},
               **{f"{side}_max_ulp": a.max_ulp for side, a in agree.items()}}  # fmt: skip
        rows.append(row)
        print(f"{name:>16} base {times['base']:8.1f} us  new {times['new']:8.1f} us  "
              f"{times['base'] / times['new']:.3f}x  bitwise base {agree['base'].bitwise_equal_fraction:.4%} "
              f"new {agree['new'].bitwise_equal_fraction:.4%}  worst ulp {agree['base'].max_ulp:g}/"
              f"{agree['new'].max_ulp:g}  identical {identical}  same inputs {same_inputs}", flush=True)  # fmt: skip
    if args.json:
        with accuracy.open_run(args.json, "w") as f:  # gzip-compressed where the name ends in .gz
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
