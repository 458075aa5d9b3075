"""HBM read bandwidth against the size read, CUDA-graph timed: what a kernel that streams S bytes once can reach.

    python3 tools/read_ceiling.py [--json out.json]

The roofline's read ceiling (moe_gather/bench.py) is a sum over 2 GiB; a small-batch case reads
~145 MB (gpt-oss-120b's 16 local experts of MXFP4 weights and scales) in ~40 us, where a kernel's start and its last
wave's tail are a larger share. Two readers: torch.sum (the anchor's) and a plain Triton kernel (each program sums
a contiguous chunk, 16 bytes per thread a load, and stores one value).

    python3 tools/read_ceiling.py --l2 [--json out.json]

What an SM reads from L2: a 16 MB buffer (L2-resident) read over and over by 1-4 programs of 4 or 8 warps per
multiprocessor, each program one of its 64 pieces of 256 KB 32 times, past L1 (ld.global.cg).
"""

import argparse
import json

import torch
import triton
import triton.language as tl
from triton.testing import do_bench_cudagraph

SIZES_MB = (16, 64, 145, 256, 1024, 2048)


@triton.jit
def _read(src, out, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.int32)
    for start in range(pid * CHUNK, min(pid * CHUNK + CHUNK, n), BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(src + offs, mask=offs < n, other=0)
    tl.store(out + pid, tl.sum(acc))


def print_row(row: dict) -> None:
    print("  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)


@triton.jit
def _read_again(src, out, CHUNK: tl.constexpr, CHUNKS, REPS, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = pid % CHUNKS * CHUNK
    acc = tl.zeros([BLOCK], tl.int32)
    for _ in range(REPS):
        for i in range(0, CHUNK, BLOCK):
            acc += tl.load(src + base + i + tl.arange(0, BLOCK), cache_modifier=".cg")  # L2, not L1
    tl.store(out + pid, tl.sum(acc))


def l2_rows(mbytes=16, chunk_kb=256, reps=32):
    words = torch.randint(0, 16, (mbytes * 2**20 // 4,), dtype=torch.int32, device="cuda")
    chunk = chunk_kb * 1024 // 4
    chunk_sums = words.view(-1, chunk).sum(1)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for per_sm in (1, 2, 4):
        for warps in (4, 8):
            grid = per_sm * sms
            out = torch.empty(grid, dtype=torch.int32, device="cuda")

            def read(out=out, warps=warps):
                _read_again[(out.numel(),)](words, out, chunk, chunk_sums.numel(), reps, BLOCK=32 * 32 * warps,
                                            num_warps=warps)  # fmt: skip

            read()
            expected = chunk_sums[torch.arange(grid, device="cuda") % chunk_sums.numel()] * reps
            assert torch.equal(out.long(), expected), "the L2 reader's sums disagree with torch"
            seconds = do_bench_cudagraph(read) * 1e-3
            tbps = grid * reps * chunk * 4 / seconds / 1e12
            rows.append({"programs_per_sm": per_sm, "warps": warps, "l2_tbps": tbps, "gbps_per_sm": tbps * 1e3 / sms})
            print_row(rows[-1])
    return rows


def triton_read(words: torch.Tensor, out: torch.Tensor, chunk: int):
    _read[(out.numel(),)](words, out, words.numel(), CHUNK=chunk, BLOCK=2048, num_warps=8)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--l2", action="store_true", help="L2-resident reads per multiprocessor, not HBM's")
    args = parser.parse_args()
    if args.l2:
        rows = l2_rows()
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "l2_rows": rows}, f, indent=1)
        return
    rows = []
    for mb in SIZES_MB:
        words = torch.randint(0, 16, (mb * 2**20 // 4,), dtype=torch.int32, device="cuda")
        row = {"mbytes": mb}
        floats = words.view(torch.float32)  # as the anchors: a float sum
        seconds = do_bench_cudagraph(lambda floats=floats: floats.sum()) * 1e-3
        row["torch_sum_tbps"] = words.numel() * 4 / seconds / 1e12
        for chunk_kb in (64, 256):  # words per program: 16K or 64K (64 KB / 256 KB)
            chunk = chunk_kb * 1024 // 4
            out = torch.empty(triton.cdiv(words.numel(), chunk), dtype=torch.int32, device="cuda")
            triton_read(words, out, chunk)
            assert int(out.sum()) == int(words.sum()), "the read kernel's sums disagree with torch.sum"
            seconds = do_bench_cudagraph(lambda words=words, out=out, chunk=chunk: triton_read(words, out, chunk))
            row[f"triton_{chunk_kb}k_tbps"] = words.numel() * 4 / (seconds * 1e-3) / 1e12
            row[f"triton_{chunk_kb}k_us"] = seconds * 1e3
        print_row(row)
        rows.append(row)
        del words, floats
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
