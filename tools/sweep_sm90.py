"""Sweep sm90 kernel configs on a few cases: bitwise agreement with the golden reference and time, per config.

    python3 tools/sweep_sm90.py [--cases uniform-bs128,...] [--model gpt-oss-20b] [--json out.json] [--split]
        [--block-m 64,128]
    python3 tools/sweep_sm90.py --configs "block_m=32;block_m=64,maxnreg=128" --cases uniform-bs2560 [--precision fast]
    python3 tools/sweep_sm90.py --configs "..." --cases zipf-decode-bs1,uniform-decode-bs2  (the suite's decode cases)

Each config is forced through moe_bmm1(config=...) and timed sustained (moe_gather.benchmarking.sustained_seconds);
one line per (case, config). List configs twice ('A;B;A;B') to interleave them.
"""

import argparse
import json
import os
from dataclasses import asdict, replace

import torch

from moe_gather import bmm1
from moe_gather._sm90 import Sm90Config, runs_as
from moe_gather._table import parse_fields
from moe_gather.accuracy import open_run
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.problem import MODELS, Case, make_expert_params, make_problem, reference_for
from moe_gather.reference import assert_close, compare_fp8

DEFAULT_CASES = "uniform-bs128,zipf-bs1024,zipf-bs2048,uniform-bs1024,uniform-bs8192,zipf-bs16384,uniform-bs31744"


def variants(block_ms=(8, 16, 32, 64, 128)):
    """Token-tile sizes 8..128 with one or two warpgroups, 3 to 8 stages, register caps for the large tiles."""
    for m in block_ms:
        for warps in (4, 8):
            for buffers in (4, 8) if m <= 32 else (3, 4):
                caps = (None, 128) if m == 64 else (None, 168) if m == 128 else (None,)
                for maxnreg in caps if warps == 4 else (None,):  # a cap: one more program per multiprocessor
                    yield Sm90Config(m, buffers, num_warps=warps, maxnreg=maxnreg)


def split_variants():
    """The two-launch plan for skewed routing (Sm90Config.split_at): small tiles for the light slices, 32 or 64
    rows for those over split_at."""
    for m, buffers in ((8, 8), (16, 4), (32, 4)):
        for split_at in (16, 32, 64):
            for large in (32, 64):
                if split_at >= m and large > m:
                    yield Sm90Config(m, buffers, num_warps=4, split_at=split_at, large_block_m=large)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--model", choices=tuple(MODELS), default="gpt-oss-120b")
    parser.add_argument("--json", default=None)
    parser.add_argument("--split", action="store_true", help="the table's choice against the split_at variants")
    parser.add_argument("--block-m", default="8,16,32,64,128", help="token-tile sizes to sweep (without --split)")
    parser.add_argument(
        "--configs", default=None, help="';'-separated: fields over m32, 4 stages, 4 warps, or 'table': its choice"
    )
    parser.add_argument("--precision", choices=bmm1.PRECISIONS, default=None, help="default: prepare_weights'")
    parser.add_argument("--layouts", default="mxfp4", help="comma-separated weight layouts, each config on each")
    args = parser.parse_args()
    model = MODELS[args.model]
    params = make_expert_params(model, "cuda")
    layouts = {
        layout: bmm1.prepare_weights(params.weights, precision=args.precision, layout=layout)
        for layout in args.layouts.split(",")
    }
    weights = next(iter(layouts.values()))
    block_ms = tuple(int(m) for m in args.block_m.split(","))
    base = Sm90Config(block_m=32, num_stages=4, num_warps=4)
    items = args.configs.split(";") if args.configs else []
    forced = [item if item == "table" else replace(base, **parse_fields(item, base)) for item in items] or None
    rows = []
    _save(rows, args.json)  # [] until a config has run: an earlier sweep's file never reads as this one's
    for name in args.cases.split(","):
        problem = make_problem(Case.named(model, name), "cuda", params)
        ref = reference_for(problem).out
        configs = forced or (("table", *split_variants()) if args.split else variants(block_ms))
        for config, (layout, weights) in ((c, item) for c in configs for item in layouts.items()):
            # each config as it runs on this layout ("table": the entry of this layout's table; on weights without the
            # fp8 layout's bytes the packed words' config, runs_as): the row records that config
            if config == "table":
                config = bmm1.select_config(problem.routing.ragged, precision=weights.precision, weights=weights)
            else:
                config = runs_as(config, weights)

            def call(config=config, problem=problem, weights=weights):
                return bmm1.run_problem(problem, weights, config=config)

            try:
                out = call()
                torch.cuda.synchronize()
            except Exception as e:  # a config that does not fit (registers, shared memory) is reported, not fatal
                print(f"{name:>16} {config}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            agreement = compare_fp8(ref, out)
            try:
                max_err, rms_err = assert_close(ref, out, maxtol=1.0, rmstol=1.0)
            except AssertionError as e:
                max_err, rms_err = float("nan"), float("nan")
                print("  ", str(e)[:200])
            us = sustained_seconds(graphed(call)) * 1e6
            row = {"case": name, "tokens": problem.routing.ragged.tokens, **asdict(config), "layout": layout, "us": us,
                   "bitwise": agreement.bitwise_equal_fraction, "max_ulp": agreement.max_ulp, "max_err": max_err,
                   "rms_err": rms_err}  # fmt: skip
            rows.append(row)
            _save(rows, args.json)  # after every row: a sweep cut short keeps what it measured
            flags = [
                name
                for name in (
                    "parity_rings",
                    "two_partials",
                    "widest_first",
                    "warp_specialized",
                    "persistent",
                    "split_k",
                    "fp8_layout",
                    "wide_tiles",
                )
                if getattr(config, name)
            ]
            flags += [
                f"{name}={getattr(config, name)}"
                for name in ("narrow_last_tile", "tail_rows", "overlap_tiles", "k_splits", "decode_rows", "lag")
                if getattr(config, name) != Sm90Config.__dataclass_fields__[name].default
            ]
            print(
                f"{name:>16} {layout} m{config.block_m} n{config.block_n} w{config.num_warps} "
                f"stages{config.num_stages} "
                f"r{config.maxnreg} s{config.split_at}/{config.large_block_m} {' '.join(flags)}: "
                f"{us:8.1f} us  "
                f"bitwise {agreement.bitwise_equal_fraction:.4%}  "
                f"worst {agreement.max_ulp:g} ulp  max_err {max_err:.4f}",
                flush=True,
            )


def _save(rows: list[dict], path: str | None) -> None:
    """The rows so far as JSON at `path` (none: nothing; gzip-compressed where it ends in .gz), replaced whole: a run
    killed mid-write leaves the last."""
    if path:
        head, name = os.path.split(path)
        part = os.path.join(head, f".part-{name}")  # its name ends as the path's: compressed alike
        with open_run(part, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(part, path)


if __name__ == "__main__":
    main()
