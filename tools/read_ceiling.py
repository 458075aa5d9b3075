"""HBM read bandwidth against the size read, CUDA-graph timed: what a kernel that streams S bytes once can reach.

    python3 tools/read_ceiling.py [--json out.json]

The roofline's read ceiling (moe_gather/bench.py) is a sum over 2 GiB; a small-batch case reads
~145 MB (gpt-oss-120b's 16 local experts of MXFP4 weights and scales) in ~40 us, where a kernel's start and its last
wave's tail are a larger share. Two readers: torch.sum (the anchor's) and a plain Triton kernel (each program sums
a contiguous chunk, 16 bytes per thread a load, and stores one value).
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


def triton_read(words: torch.Tensor, out: torch.Tensor, chunk: int):
    _read[(out.numel(),)](words, out, words.numel(), CHUNK=chunk, BLOCK=2048, num_warps=8)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
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
        print("  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
        rows.append(row)
        del words, floats
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
