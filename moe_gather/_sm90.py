"""Hopper (sm_90a) BMM1: a Gluon kernel on fp8 wgmma, the MXFP4 block scales applied exactly in fp32.

One program computes one (token block, column block) tile of one expert, swap-AB: the weights are the wgmma's
64-row side (block_n rows of W^T) and the expert's few gathered tokens its N side (block_m = 16..64), so small
slices waste no MMA rows. x rows are gathered and the packed weights streamed with cp.async through a ring of
shared-memory stages; each thread turns one (row, 32-block) of weights into fp8 in registers (e2m1 values are e4m3
values: 8 per 32-bit word with two byte permutes through a constant table, see `prepare_weights`), the tile goes to
shared memory and asynchronous wgmmas consume it while the next tile is converted.

Each 32-wide K block is its own wgmma into its own partial sum: Hopper's fp8 wgmma adds with fewer bits than fp32,
and one e8m0 scale covers exactly those 32 products. Once the wgmma is done (a tile later, so it overlaps the next
conversion), the partial is promoted into the fp32 accumulator times its block's 2 ** (s - 127), exactly, whatever
the spread of the scales. x_scale, bias, SwiGLU, 1/out_scale and the fp8 rounding follow in the epilogue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import torch
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    warpgroup_mma,
    warpgroup_mma_init,
    warpgroup_mma_wait,
)

from .mxfp4 import E8M0_BIAS, E8M0_NAN, MX_BLOCK, MXFP4Weights, unpack_codes

# e4m3 bytes of the e2m1 magnitudes 0, .5, 1, 1.5 | 2, 3, 4, 6: byte-permute tables, byte i = code i.
E4M3_OF_E2M1_LO = 0x3C383000
E4M3_OF_E2M1_HI = 0x4C484440
_MX_BLOCK = tl.constexpr(MX_BLOCK)  # Triton reads only constexpr globals
_E8M0_BIAS = tl.constexpr(E8M0_BIAS)


@dataclass(frozen=True)
class Sm90Weights:
    """MXFP4 weights in the sm90 kernel's layout."""

    words: torch.Tensor  # uint8 [E, N, K // 2]: codes re-packed per 8 values (prepare_weights)
    scales: torch.Tensor  # uint8 [E, N, K // 32]: e8m0, as in MXFP4Weights

    @property
    def num_experts(self) -> int:
        return self.words.shape[0]

    @property
    def n(self) -> int:
        return self.words.shape[1]

    @property
    def k(self) -> int:
        return 2 * self.words.shape[2]

    @property
    def device(self) -> torch.device:
        return self.words.device


def prepare_weights(w: MXFP4Weights) -> Sm90Weights:
    """Re-pack the codes so that the kernel turns each 32-bit word into 8 fp8 values with a few instructions.

    Word g holds the codes of K = 8g..8g+7; half h (0 or 1) of it becomes the fp8 bytes of K = 8g + 4h + i, byte i,
    so that the two output words sit side by side as the 8 fp8 bytes of K = 8g..8g+7.
    Magnitudes (3 bits) are byte-permute selectors: K = 8g + 4h + i in nibble 4h + i. Signs sit in the nibbles' top
    bits where one shift lands them on the fp8 sign bits: half 0's sign of byte i at bit 8i + 3 (shifted left by 4),
    half 1's at bit 8i + 7 (in place).
    """
    if (w.scales == E8M0_NAN).any():
        raise ValueError("prepare_weights: e8m0 scale 255 (NaN) is not supported by the kernels")
    words = torch.empty_like(w.codes)
    i = torch.arange(4, device=w.codes.device)
    for e in range(w.num_experts):  # one expert at a time bounds the int64 temporaries
        c = unpack_codes(w.codes[e]).to(torch.int64)  # [N, K]
        c = c.reshape(c.shape[0], -1, 2, 4)  # [N, word, half, byte]
        mag, sign = c & 7, c >> 3
        word = (
            (mag[..., 0, :] << (4 * i)).sum(-1)
            + (mag[..., 1, :] << (16 + 4 * i)).sum(-1)
            + (sign[..., 0, :] << (8 * i + 3)).sum(-1)
            + (sign[..., 1, :] << (8 * i + 7)).sum(-1)
        )  # [N, K/8], < 2**32
        words[e] = torch.stack([(word >> (8 * b)) & 0xFF for b in range(4)], dim=-1).reshape(w.codes.shape[1:])
    return Sm90Weights(words, w.scales.contiguous())


def emulate_dequant(w: Sm90Weights) -> torch.Tensor:
    """What the kernel computes from Sm90Weights, in torch: float64 [E, K, N] (tests compare it to the exact
    dequantization). Bit for bit the kernel's table, permutes and sign placement, then the block's power of two."""
    words = w.words.view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # [E, N, K/8]
    lut = E4M3_OF_E2M1_LO | (E4M3_OF_E2M1_HI << 32)
    out = []
    for half_shift, sign_shift in ((0, 4), (16, 0)):  # K = 8g + 0..3: selectors at bits 0..15; 8g + 4..7: 16..31
        for i in range(4):
            sel = (words >> (half_shift + 4 * i)) & 7
            mag = (lut >> (8 * sel)) & 0xFF
            sign = ((words << sign_shift) >> (8 * i + 7)) & 1
            out.append(mag | (sign << 7))
    fp8 = torch.stack(out, dim=-1).reshape(*words.shape[:-1], -1)  # [E, N, K]
    values = fp8.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)
    scale = torch.exp2(w.scales.to(torch.float64) - E8M0_BIAS).repeat_interleave(MX_BLOCK, dim=-1)
    return (values * scale).transpose(1, 2)


@dataclass(frozen=True)
class Sm90Config:
    block_m: int  # tokens per tile: the wgmma N side (8..256)
    block_n: int  # weight rows (of N) per tile: the wgmma M side
    block_k: int  # K per stage; 128 = one 128-byte swizzled fp8 row
    num_buffers: int  # cp.async stages in flight
    num_warps: int  # 4: one warpgroup; 8: two, each with half of block_n
    maxnreg: int | None = None  # register cap per thread: more programs per multiprocessor


# expected slice size (rows per expert) up to which a config is chosen -> config; first match wins.
# Chosen by sweep on the H200, 2026-11-29 (results/sm90_sweep_h200.md): block_n=64 beat 128 on every case swept
# (more programs in flight, half the shared memory); 3 or 4 stages within noise. Promoting every 32-block's partial
# sum keeps the fp8 outputs within one ulp of the exact reference (99.95% bitwise equal; promoting every 64 or 128 K
# left 2-ulp errors). Four partial accumulators do not fit beside a block_m=128 tile, so large slices use block_m=64
# on two warpgroups.
CONFIGS = (
    (16, Sm90Config(block_m=16, block_n=64, block_k=128, num_buffers=4, num_warps=4)),
    (32, Sm90Config(block_m=32, block_n=64, block_k=128, num_buffers=4, num_warps=4)),
    (1 << 30, Sm90Config(block_m=64, block_n=64, block_k=128, num_buffers=3, num_warps=8)),
)


FORCE_ENV = "MOE_GATHER_SM90_FORCE"  # e.g. "block_m=16,block_n=128": overrides fields of every choice (tests, sweeps)


def select_config(expected_slice_size: int) -> Sm90Config:
    config = next(c for limit, c in CONFIGS if expected_slice_size <= limit)
    if forced := os.environ.get(FORCE_ENV):
        config = replace(config, **{k: int(v) for k, v in (item.split("=") for item in forced.split(","))})
    if os.environ.get("MOE_GATHER_PRINT_CONFIG"):
        print(f"moe_gather sm90: expected_slice_size={expected_slice_size} -> {config}", flush=True)
    return config


# 8 e2m1 codes of a re-packed word -> 2 words of e4m3 bytes: selectors, byte permutes through the table, signs.
_E2M1_TO_E4M3_ASM = tl.constexpr(f"""
{{
.reg .b32 lo, hi, sel, mag, sgn;
mov.b32 lo, {E4M3_OF_E2M1_LO:#x};
mov.b32 hi, {E4M3_OF_E2M1_HI:#x};
and.b32 sel, $2, 0x7777;
prmt.b32 mag, lo, hi, sel;
shl.b32 sgn, $2, 4;
and.b32 sgn, sgn, 0x80808080;
or.b32 $0, mag, sgn;
shr.u32 sel, $2, 16;
and.b32 sel, sel, 0x7777;
prmt.b32 mag, lo, hi, sel;
and.b32 sgn, $2, 0x80808080;
or.b32 $1, mag, sgn;
}}
""")


@gluon.jit
def _fp8_from_words(words):
    """int32 re-packed words -> the e4m3 bytes of their K = 8g..8g+3 and 8g+4..8g+7, as two int32."""
    return gl.inline_asm_elementwise(
        asm=_E2M1_TO_E4M3_ASM, constraints="=r,=r,r", args=[words], dtype=(gl.int32, gl.int32), is_pure=True, pack=1
    )


@gluon.jit
def _issue_loads(
    tile, x_smem, w_smem, x_ptrs, x_mask, w_ptrs, offs_xk, offs_wb,
    K: gl.constexpr, BLOCK_K: gl.constexpr, NUM_BUFFERS: gl.constexpr,
):  # fmt: skip
    """cp.async of K tile `tile` (x rows, packed weights) into its ring slot; zero-filled past K."""
    buf = tile % NUM_BUFFERS
    k0 = tile * BLOCK_K
    cp.async_copy_global_to_shared(x_smem.index(buf), x_ptrs + k0, mask=x_mask & (offs_xk[None, :] < K - k0))
    in_k = offs_wb < (K - k0) // _MX_BLOCK
    cp.async_copy_global_to_shared(w_smem.index(buf), w_ptrs + k0 // 8, mask=in_k[None, :, None])
    cp.commit_group()


@gluon.jit
def _block_scales(tile, s_ptrs, K: gl.constexpr, BLOCK_K: gl.constexpr, SPLITS: gl.constexpr):
    """2 ** (e8m0 - 127) of each 32-block of K tile `tile`, one fp32 vector over the tile's rows per block, made
    from the exponent bits (exact; e8m0 0 is 2 ** -127, an fp32 subnormal). Zero past K."""
    scales = ()
    for j in gl.static_range(SPLITS):
        block = tile * SPLITS + j
        e = gl.load(s_ptrs + block, mask=block < K // _MX_BLOCK, other=0).to(gl.int32)
        bits = gl.where(e == 0, 1 << 22, e << 23)
        scales = scales + (gl.where(block < K // _MX_BLOCK, bits, 0).to(gl.float32, bitcast=True),)  # noqa: RUF005
    return scales


@gluon.jit
def _bmm1_sm90_kernel(
    x_ptr,  # fp8 [batch, K]
    words_ptr,  # int32 [E, N, K/8]
    scales_ptr,  # uint8 [E, N, K/32]
    bias_ptr,  # fp32 [E, N]
    gather_ptr,  # int32 [tokens]
    slice_sizes_ptr,  # int32 [E]
    slice_offs_ptr,  # int32 [E + 1]
    schedule_ptr,  # int32 [max_blocks]: slice | pid_m << 16, -1 past the end
    x_scale_ptr,  # fp32 [1]
    out_scale_ptr,  # fp32 [1]
    out_ptr,  # fp8 [tokens, N/2]
    alpha,
    limit,
    K: gl.constexpr,
    N: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    NUM_BUFFERS: gl.constexpr,
):
    SPLITS: gl.constexpr = BLOCK_K // _MX_BLOCK  # one partial sum per e8m0 block
    NUM_WARPS: gl.constexpr = gl.num_warps()
    GRID_N: gl.constexpr = N // BLOCK_N
    BLOCKS: gl.constexpr = BLOCK_K // 32  # e8m0 blocks per K tile
    K_TILES: gl.constexpr = (K + BLOCK_K - 1) // BLOCK_K

    # Register layouts. x copies: 16 bytes a thread. Weights: a thread owns one (row, 32-block): 4 words, one table.
    x_layout: gl.constexpr = gl.BlockedLayout([1, 16], [32 // (BLOCK_K // 16), BLOCK_K // 16], [NUM_WARPS, 1], [1, 0])
    w_layout: gl.constexpr = gl.BlockedLayout([1, 1, 4], [32 // BLOCKS, BLOCKS, 1], [NUM_WARPS, 1, 1], [2, 1, 0])
    WARPS_N: gl.constexpr = NUM_WARPS // min(NUM_WARPS, BLOCK_N // 16)  # warpgroups side by side along tokens
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[NUM_WARPS // WARPS_N, WARPS_N], instr_shape=[16, BLOCK_M // WARPS_N, 32]
    )
    epi_layout: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [NUM_WARPS, 1], [1, 0])

    pid = gl.program_id(0)
    entry = gl.load(schedule_ptr + pid // GRID_N)  # consecutive programs share the token block: x stays in cache
    if entry < 0:
        return
    pid_n = pid % GRID_N
    expert = entry & 0xFFFF
    pid_m = entry >> 16
    size = gl.load(slice_sizes_ptr + expert)
    start = gl.load(slice_offs_ptr + expert)

    # Gathered x rows.
    offs_m = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, x_layout))
    x_mask = (offs_m < size)[:, None]
    rows = gl.load(gather_ptr + start + offs_m, mask=offs_m < size, other=0)
    offs_xk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, x_layout))
    x_ptrs = x_ptr + rows.to(gl.int64)[:, None] * K + offs_xk[None, :]

    # This expert's weight rows [pid_n * BLOCK_N, +BLOCK_N) of W^T.
    row0 = expert.to(gl.int64) * N + pid_n * BLOCK_N
    offs_wn = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, gl.SliceLayout(2, w_layout)))
    offs_wb = gl.arange(0, BLOCKS, layout=gl.SliceLayout(0, gl.SliceLayout(2, w_layout)))
    offs_ww = gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(1, w_layout)))
    w_ptrs = (
        words_ptr + (row0 + offs_wn)[:, None, None] * (K // 8) + offs_wb[None, :, None] * 4 + offs_ww[None, None, :]
    )
    offs_an = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, acc_layout))
    s_ptrs = scales_ptr + (row0 + offs_an) * (K // _MX_BLOCK)  # the accumulator's rows: scales meet partial sums

    plain: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[2, 1, 0])
    x_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    x_smem = gl.allocate_shared_memory(gl.float8e4nv, [NUM_BUFFERS, BLOCK_M, BLOCK_K], x_nvmma)
    w_smem = gl.allocate_shared_memory(gl.int32, [NUM_BUFFERS, BLOCK_N, BLOCKS, 4], plain)
    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [BLOCK_N, BLOCK_K], x_nvmma)  # the fp8 weight tile
    a_words = a_smem._reinterpret(
        gl.int32, [BLOCK_N, BLOCK_K // 4], gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2)
    )  # the same bytes, 128-byte rows swizzled alike, written as words

    for t in gl.static_range(NUM_BUFFERS - 1):
        _issue_loads(t, x_smem, w_smem, x_ptrs, x_mask, w_ptrs, offs_xk, offs_wb, K, BLOCK_K, NUM_BUFFERS)

    acc = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)
    zero = warpgroup_mma_init(gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout))
    parts = (zero,) * SPLITS  # one per 32-block of the tile in flight
    scales = _block_scales(K_TILES, s_ptrs, K, BLOCK_K, SPLITS)  # zeros: nothing to promote before tile 0
    for t in range(K_TILES):
        buf = t % NUM_BUFFERS
        cp.wait_group(NUM_BUFFERS - 2)
        gl.thread_barrier()  # tile t's copies, issued by every thread, have landed
        low, high = _fp8_from_words(w_smem.index(buf).load(w_layout))
        tile = gl.join(low, high).reshape([BLOCK_N, BLOCK_K // 4])
        next_scales = _block_scales(t, s_ptrs, K, BLOCK_K, SPLITS)
        parts = warpgroup_mma_wait(num_outstanding=0, deps=parts)  # tile t-1's wgmmas are done with a_smem
        for j in gl.static_range(SPLITS):
            acc = gl.fma(parts[j], scales[j][:, None], acc)
        scales = next_scales
        gl.thread_barrier()  # every warpgroup's wgmmas are done before a_smem is overwritten
        a_words.store(tile)
        fence_async_shared()
        gl.thread_barrier()
        x_tile = x_smem.index(buf)
        new_parts = ()
        for j in gl.static_range(SPLITS):
            a_j = a_smem.slice(j * _MX_BLOCK, _MX_BLOCK, dim=1)
            x_j = x_tile.slice(j * _MX_BLOCK, _MX_BLOCK, dim=1).permute((1, 0))
            new_parts = new_parts + (warpgroup_mma(a_j, x_j, zero, use_acc=False, is_async=True),)  # noqa: RUF005 (Gluon has no unpacking)
        parts = new_parts
        _issue_loads(t + NUM_BUFFERS - 1, x_smem, w_smem, x_ptrs, x_mask, w_ptrs, offs_xk, offs_wb, K, BLOCK_K,
                     NUM_BUFFERS)  # fmt: skip
    parts = warpgroup_mma_wait(num_outstanding=0, deps=parts)
    for j in gl.static_range(SPLITS):
        acc = gl.fma(parts[j], scales[j][:, None], acc)
    cp.wait_group(0)

    # Epilogue: x_scale, bias, SwiGLU on (gate, linear) row pairs, 1/out_scale, fp8.
    z = gl.convert_layout(gl.permute(acc, (1, 0)), epi_layout)  # [BLOCK_M, BLOCK_N]
    offs_en = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, epi_layout))
    bias = gl.load(bias_ptr + row0 + offs_en)
    z = gl.fma(z, gl.load(x_scale_ptr), bias[None, :])
    gate, linear = gl.split(z.reshape([BLOCK_M, BLOCK_N // 2, 2]))
    gate = gl.where(gate == gate, gl.minimum(gate, limit), gate)  # NaN stays NaN
    linear = gl.where(linear == linear, gl.minimum(gl.maximum(linear, -limit), limit), linear)
    y = gate / (1.0 + gl.exp(-alpha * gate)) * (linear + 1.0)
    out = gl.div_rn(y, gl.load(out_scale_ptr)).to(gl.float8e4nv)
    out_layout: gl.constexpr = out.type.layout
    offs_om = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, out_layout))
    offs_on = pid_n * (BLOCK_N // 2) + gl.arange(0, BLOCK_N // 2, layout=gl.SliceLayout(0, out_layout))
    out_ptrs = out_ptr + (start + offs_om).to(gl.int64)[:, None] * (N // 2) + offs_on[None, :]
    gl.store(out_ptrs, out, mask=(offs_om < size)[:, None])


def launch(x, w: Sm90Weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config=None):
    """Host launcher; arguments already checked by moe_gather.bmm1."""
    config = config or select_config(ragged.expected_slice_size)
    if w.n % config.block_n or w.k % 8:
        raise ValueError(f"weights: N = {w.n} must be a multiple of {config.block_n} and K = {w.k} of 8")
    schedule = ragged.block_schedule[config.block_m]
    grid = (schedule.numel() * (w.n // config.block_n),)
    _bmm1_sm90_kernel[grid](
        x, w.words.view(torch.int32), w.scales, bias, gather_indx, ragged.slice_sizes, ragged.slice_offs,
        schedule, x_scale, out_scale, out, float(alpha), float(limit),
        K=w.k, N=w.n, BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        NUM_BUFFERS=config.num_buffers, num_warps=config.num_warps, maxnreg=config.maxnreg,
    )  # fmt: skip
    return out
