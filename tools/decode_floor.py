"""What bounds the decode cases' times on a GPU: the timing method's floor, a plain read of their bytes, and K.

    python3 tools/decode_floor.py floor   # per call: one CUDA-graph replay a call (the suite's method), and 20 calls
                                          # captured in one graph, for an empty kernel and the decode cases
    python3 tools/decode_floor.py reads   # a plain Triton read of 1-16 experts' bytes on 90-528 programs, and the
                                          # kernel at uniform-bs2 / zipf-bs2 / uniform-bs8 against K
    python3 tools/decode_floor.py splits  # the table's tile with k_splits 1, 2, 4 on five decode cases, both ways
    python3 tools/decode_floor.py cold [--json out.json] [--batches 1,2,...]
                                          # device time a call with the weights cold, as in a model whose other
                                          # layers run between two calls of this one: the kernel at both precisions,
                                          # the decode tile, the peer, the vendor anchor and a plain read of the
                                          # same bytes, each on rotated copies of its weights, 20+ calls a graph
    python3 tools/decode_floor.py gate-reads [--json out.json]
                                          # the bar's cases (up to 16 rows per slice) timed as the gate times them:
                                          # the kernel at both precisions and a plain read of each case's roofline
                                          # bytes on its fastest of GATE_READ_GRIDS; their geometric means as % of
                                          # roofline
    python3 tools/decode_floor.py dispatch
                                          # where the block dispatcher puts a grid's programs: a kernel of the first
                                          # entry's occupancy records each program's multiprocessor; the tiles a
                                          # multiprocessor gets where the first of a grid's ids hold them
    python3 tools/decode_floor.py cold-forms --cases zipf-decode-bs1,... --forms "table;num_stages=8;..." [--json F]
                                          # the fast table's tile with fields replaced, cold as above, each form's
                                          # output against the table's byte for byte

The fast precision's kernel, gpt-oss-120b. results/h200/fast/decode_floor_*.log, gate_reads.json and decode_cold*.json
hold the H200's figures.
"""

import argparse
import dataclasses
import json
import math
import sys
from functools import partial
from statistics import geometric_mean

import torch
import triton
import triton.language as tl
from read_ceiling import print_row, triton_read
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from moe_gather import bmm1, peer
from moe_gather._sm90 import FAST_CONFIGS, Sm90Config
from moe_gather._table import parse_fields
from moe_gather.bench import VendorWeights, measure_ceilings, time_kernel, vendor_call
from moe_gather.benchmarking import graphed, sustained_seconds
from moe_gather.mxfp4 import MXFP4Weights
from moe_gather.problem import (
    DECODE_BATCHES,
    MODELS,
    Case,
    ExpertParams,
    batch_sizes,
    cases,
    make_expert_params,
    make_problem,
)

CALLS = 20  # calls captured in one graph


@triton.jit
def _nothing(out):
    tl.store(out, 1)


def empty_call():
    """A call that launches a kernel doing nothing (one store): the timing method's floor."""
    return partial(_nothing[(1,)], torch.zeros(1, device="cuda", dtype=torch.int32))


def suite_us(fn) -> float:
    """Per call, as the suite times: one graph replay a call, 20 a round."""
    return sustained_seconds(graphed(fn)) * 1e6


def one_graph_us(fn) -> float:
    """Per call with CALLS calls in one graph: the host's launch cost paid once for all of them."""
    return rotated_us([fn], 1)


def floor():
    empty = empty_call()
    print(f"empty kernel: suite {suite_us(empty):.2f} us, in one graph {one_graph_us(empty):.2f} us", flush=True)
    model = MODELS["gpt-oss-120b"]
    params = make_expert_params(model, "cuda")
    weights = bmm1.prepare_weights(params.weights, precision="fast")
    for routing in ("uniform", "zipf"):
        for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            problem = make_problem(Case(model, routing, batch), "cuda", params)
            if not problem.tokens:
                continue
            call = lambda problem=problem: bmm1.run_problem(problem, weights)
            a, b = suite_us(call), one_graph_us(call)
            print(
                f"{routing}-bs{batch}: suite {a:.2f} us, in one graph {b:.2f} us; "
                f"bytes at 4.4 TB/s {problem.bytes() / 4.4e6:.2f} us",
                flush=True,
            )


def reads():
    base = MODELS["gpt-oss-120b"]
    for experts in (1, 2, 3, 16):
        n = experts * base.expert_weight_bytes // 4
        words = torch.randint(0, 1 << 20, (n,), device="cuda", dtype=torch.int32)
        for programs in (90, 132, 264, 528):
            out = torch.empty(programs, device="cuda", dtype=torch.int32)
            chunk = -(-n // programs)
            t = suite_us(lambda words=words, out=out, chunk=chunk: triton_read(words, out, chunk))
            print(
                f"read {experts} experts ({n * 4 / 1e6:.1f} MB) on {programs} programs: {t:.2f} us, "
                f"{n * 4 / t / 1e6:.2f} TB/s",
                flush=True,
            )
    for k in (128, 256, 512, 1024, 1536, 2048, 2880):
        model = dataclasses.replace(base, name=f"k{k}", hidden=k)
        params = make_expert_params(model, "cuda")
        weights = bmm1.prepare_weights(params.weights, precision="fast")
        for routing, batch in (("uniform", 2), ("zipf", 2), ("uniform", 8)):
            problem = make_problem(Case(model, routing, batch), "cuda", params)
            t = suite_us(lambda problem=problem, weights=weights: bmm1.run_problem(problem, weights))
            print(f"K {k} {routing}-bs{batch}: {t:.2f} us ({problem.bytes() / t / 1e6:.2f} TB/s)", flush=True)


def splits():
    model = MODELS["gpt-oss-120b"]
    params = make_expert_params(model, "cuda")
    weights = bmm1.prepare_weights(params.weights, precision="fast")
    for name in ("uniform-bs2", "zipf-bs1", "uniform-bs8", "zipf-bs8", "uniform-bs64"):
        problem = make_problem(Case.named(model, name), "cuda", params)
        table = bmm1.select_config(problem.routing.ragged, precision="fast")
        for s in (1, 2, 4):
            config = dataclasses.replace(table, k_splits=s)
            call = lambda problem=problem, config=config: bmm1.run_problem(problem, weights, config=config)
            graph, suite = one_graph_us(call), suite_us(call)
            print(f"{name} k_splits={s}: one graph {graph:.2f} us, suite {suite:.2f} us", flush=True)


COLD_COPIES = 16  # weight copies at most: one expert's 8.8 MB needs 13 to pass twice the H200's 50 MB L2
DECODE_TILE = Sm90Config(8, 3, 4, decode_rows=16)  # the decode tile's best measured form (docs/sm90.md)
READ_PROGRAMS = 528  # the plain reader's best measured grid for one to three experts' bytes (decode_floor_reads.log)


def copies_for(weight_bytes: int) -> int:
    """Weight copies that a rotation needs for each call's to leave L2 before its next use: the other copies' bytes
    pass at least twice the L2's size."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return min(COLD_COPIES, max(2, 1 + math.ceil(2 * l2 / weight_bytes)))


def rotated_us(calls, copies: int) -> float:
    """Device time a call: the first `copies` of `calls` (one per weight copy) captured in turn into one graph of at
    least CALLS calls, replayed sustained; copies 1 gives the warm time (the same weights every call)."""
    per_copy = max(1, -(-CALLS // copies))
    sequence = [calls[i % copies] for i in range(copies * per_copy)]
    replay = graphed(lambda: [call() for call in sequence])
    return sustained_seconds(replay, iterations=1) / len(sequence) * 1e6


def _layers(model) -> list[ExpertParams]:
    """COLD_COPIES copies of the model's expert parameters: the same weights at other addresses (copies of a layer),
    the bias shared (368 KB)."""
    base = make_expert_params(model, "cuda")
    w = base.weights
    return [base] + [
        ExpertParams(MXFP4Weights(w.codes.clone(), w.scales.clone()), base.bias) for _ in range(COLD_COPIES - 1)
    ]


def cold_row(case, layers, kernels, vendors, ceilings) -> dict | None:
    """One case's device times a call, weights cold (rotated) and warm (one copy); None where it routes no row here."""
    model = case.model
    problems = [make_problem(case, "cuda", layer) for layer in layers]
    problem = problems[0]
    if not problem.tokens:
        return None
    weight_bytes = problem.active_experts() * model.expert_weight_bytes
    copies = copies_for(weight_bytes)
    out = torch.empty((problem.tokens, model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    row = {"case": case.id, "tokens": problem.tokens, "active_experts": problem.active_experts(), "copies": copies,
           "roof_us": problem.bytes() / ceilings["read_bw"] * 1e6}  # fmt: skip
    for precision, weights in kernels.items():
        calls = [partial(bmm1.run_problem, p, w, out) for p, w in zip(problems, weights, strict=True)]
        row[f"{precision}_cold"], row[f"{precision}_warm"] = rotated_us(calls, copies), rotated_us(calls, 1)
        expected = bmm1.run_problem(problems[copies - 1], weights[copies - 1]).clone()
        calls[copies - 1]()
        if not torch.equal(out.view(torch.uint8), expected.view(torch.uint8)):
            raise AssertionError(f"{case.id}: the {precision} kernel's graphed call differs from its eager one")
    if case.decode:  # the fast precision's other decode forms: the decode tile, the table's tile at 1, 2, 4 K splits
        table = bmm1.select_config(problem.routing.ragged, precision="fast")
        forms = {"decode_tile": DECODE_TILE} | {f"k{s}": dataclasses.replace(table, k_splits=s) for s in (1, 2, 4)}
        for name, config in forms.items():
            calls = [partial(bmm1.run_problem, p, w, out, config=config)
                     for p, w in zip(problems, kernels["fast"], strict=True)]  # fmt: skip
            row[f"fast_{name}_cold"] = rotated_us(calls, copies)
    if peer.available():
        calls = [peer.prepare(p, "bf16x").run for p in problems[:copies]]
        row["peer_cold"], row["peer_warm"] = rotated_us(calls, copies), rotated_us(calls, 1)
    calls = [vendor_call(p, v) for p, v in zip(problems[:copies], vendors[:copies], strict=True)]
    row["vendor_cold"], row["vendor_warm"] = rotated_us(calls, copies), rotated_us(calls, 1)
    words = -(-weight_bytes // 4)
    sums = torch.empty(READ_PROGRAMS, device="cuda", dtype=torch.int32)
    buffers = [torch.randint(0, 1 << 20, (words,), device="cuda", dtype=torch.int32) for _ in range(copies)]
    calls = [partial(triton_read, b, sums, -(-words // READ_PROGRAMS)) for b in buffers]
    row["read_cold"] = rotated_us(calls, copies)
    return row


def _keep(rows: list, row: dict, path: str | None, **header) -> None:
    """Adds `row` to `rows` and prints it; with `path`, writes the device, `header` and the rows so far as JSON (after
    every case: a run cut short keeps what it measured)."""
    rows.append(row)
    print_row(row)
    if path:
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), **header, "rows": rows}, f, indent=1)


def cold(argv):
    parser = argparse.ArgumentParser(prog="tools/decode_floor.py cold")
    parser.add_argument("--batches", default=",".join(map(str, (*DECODE_BATCHES, 128, 256, 512))))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    model = MODELS["gpt-oss-120b"]
    ceilings = measure_ceilings()
    layers = _layers(model)
    kernels = {p: [bmm1.prepare_weights(c.weights, precision=p) for c in layers] for p in ("fast", "accurate")}
    vendors = [VendorWeights(c.weights) for c in layers]
    empty_us = rotated_us([empty_call()], 1)
    print(f"ceilings: read {ceilings['read_bw'] / 1e12:.2f} TB/s; empty kernel {empty_us:.2f} us a call", flush=True)
    rows = []
    for routing in ("uniform", "zipf"):
        for batch in map(int, args.batches.split(",")):
            row = cold_row(Case(model, routing, batch, decode=batch in DECODE_BATCHES), layers, kernels, vendors,
                           ceilings)  # fmt: skip
            if row:
                _keep(rows, row, args.json, ceilings=ceilings, empty_us=empty_us, calls=CALLS)


GATE_READ_GRIDS = (132, 264, 528, 1056, 2112, 4224)  # the plain reader's grids in gate-reads; a case takes its fastest


def gate_reads(argv):
    parser = argparse.ArgumentParser(prog="tools/decode_floor.py gate-reads")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    model = MODELS["gpt-oss-120b"]
    ceilings = measure_ceilings()
    params = make_expert_params(model, "cuda")
    kernels = {p: bmm1.prepare_weights(params.weights, precision=p) for p in ("fast", "accurate")}
    empty_us = suite_us(empty_call())
    print(f"ceilings: read {ceilings['read_bw'] / 1e12:.2f} TB/s; empty kernel {empty_us:.2f} us a call", flush=True)
    rows = []
    for case in cases(batches=batch_sizes(model), decode=True):
        problem = make_problem(case, "cuda", params)
        if not problem.tokens or problem.tokens > 16 * model.local_experts:  # the bar's: up to 16 rows per slice
            continue
        # the kernel timed, and its roofline taken, as the gate's (moe_gather.bench)
        timed = {precision: time_kernel(problem, weights, ceilings) for precision, weights in kernels.items()}
        row = {"case": case.id, "tokens": problem.tokens, "active_experts": problem.active_experts(),
               "bytes": problem.bytes(), "roof_us": timed["fast"]["roof_us"]}  # fmt: skip
        row |= {f"{precision}_us": t["us"] for precision, t in timed.items()}
        words = torch.randint(0, 1 << 20, (-(-problem.bytes() // 4),), device="cuda", dtype=torch.int32)
        reads = {}
        for programs in GATE_READ_GRIDS:
            sums = torch.empty(programs, device="cuda", dtype=torch.int32)
            reads[programs] = suite_us(partial(triton_read, words, sums, -(-words.numel() // programs)))
        row["read_programs"] = min(reads, key=reads.get)
        row["read_us"] = reads[row["read_programs"]]
        _keep(rows, row, args.json, ceilings=ceilings, empty_us=empty_us, grids=GATE_READ_GRIDS)
    for key in ("fast_us", "accurate_us", "read_us"):
        share = geometric_mean([r["roof_us"] / r[key] for r in rows])
        print(f"{key.removesuffix('_us')}: {share:.1%} of roofline in geometric mean, {len(rows)} cases", flush=True)


_CLOCK = tl.constexpr("mov.u64 $0, %globaltimer;")


@gluon.jit
def _where(out, spin_ns, REAL, SMEM: gl.constexpr):
    """Records the program's multiprocessor; the first REAL programs hold it for spin_ns (a tile's time), the rest
    leave at once (the schedule's empty entries). SMEM bytes of shared memory set the occupancy."""
    pid = gl.program_id(0)
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, 128, layout)
    held = gl.allocate_shared_memory(gl.int32, [SMEM // 4], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    held.slice(0, 128).store(offs)
    sm = gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [offs], dtype=gl.int32, is_pure=False, pack=1)
    t0 = gl.inline_asm_elementwise(_CLOCK, "=l,r", [offs], dtype=gl.int64, is_pure=False, pack=1)
    if pid < REAL:
        elapsed = gl.max(t0 - t0, 0)
        while elapsed < spin_ns:
            t = gl.inline_asm_elementwise(_CLOCK, "=l,r", [offs], dtype=gl.int64, is_pure=False, pack=1)
            elapsed = gl.max(t - t0, 0)
    gl.store(out + pid + offs, sm, mask=offs == 0)


# (programs, tiles first): 16 schedule entries of 90 programs with 5, 4 or 9 experts' tiles first (zipf-bs256's
# grid is the first), and 6 entries with 3
DISPATCH_GRIDS = ((1440, 450), (1440, 360), (540, 270), (1440, 810))


def dispatch():
    config = FAST_CONFIGS[0][1]  # the fast table's first entry: block_m 32 on 4 warps
    smem = 32 << 10  # shared memory a program: 6 resident a multiprocessor, as the first entry (33.8 KB)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}: {sms} multiprocessors; the first entry {config}", flush=True)
    for grid, real in DISPATCH_GRIDS:
        where = torch.full((grid,), -1, dtype=torch.int32, device="cuda")
        _where[(grid,)](where, 20_000, real, SMEM=smem, num_warps=config.num_warps)
        where = where.cpu()
        tiles = torch.bincount(where[:real].long(), minlength=sms)
        counts = torch.bincount(tiles).tolist()
        print(f"grid {grid}, tiles first {real}: tiles a multiprocessor {tiles.min()}-{tiles.max()}, "
              f"multiprocessors by tiles {dict((k, v) for k, v in enumerate(counts) if v)}", flush=True)  # fmt: skip
        if (grid, real) == DISPATCH_GRIDS[0]:
            print(f"the first 112 ids' multiprocessors: {where[:112].tolist()}", flush=True)


def cold_forms(argv):
    parser = argparse.ArgumentParser(prog="tools/decode_floor.py cold-forms")
    parser.add_argument("--cases", required=True, help="gpt-oss-120b case names, comma-separated")
    parser.add_argument("--forms", required=True, help="';'-separated: 'table', or fields replacing the table's")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    model = MODELS["gpt-oss-120b"]
    layers = _layers(model)
    weights = [bmm1.prepare_weights(c.weights, precision="fast") for c in layers]
    rows = []
    for name in args.cases.split(","):
        problems = [make_problem(Case.named(model, name), "cuda", layer) for layer in layers]
        copies = copies_for(problems[0].active_experts() * model.expert_weight_bytes)
        table = bmm1.select_config(problems[0].routing.ragged, precision="fast")
        expected = bmm1.run_problem(problems[0], weights[0]).view(torch.uint8).clone()
        out = torch.empty_like(expected).view(torch.float8_e4m3fn)
        for form in args.forms.split(";"):
            config = table if form == "table" else dataclasses.replace(table, **parse_fields(form, table))
            pairs = zip(problems, weights, strict=True)
            calls = [partial(bmm1.run_problem, p, w, out, config=config) for p, w in pairs]
            us = rotated_us(calls, copies)
            calls[0]()
            equal = float((out.view(torch.uint8) == expected).float().mean())
            rows.append({"case": name, "form": form, "us": us, "equal": equal, "copies": copies})
            print(f"{name:24s} {form:45s} {us:7.2f} us  equal {equal:.4f}", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "cold":
        cold(sys.argv[2:])
    elif sys.argv[1] == "cold-forms":
        cold_forms(sys.argv[2:])
    elif sys.argv[1] == "gate-reads":
        gate_reads(sys.argv[2:])
    elif sys.argv[1] == "dispatch":
        dispatch()
    else:
        {"floor": floor, "reads": reads, "splits": splits}[sys.argv[1]]()
