"""Hopper (sm_90a) BMM1: a Gluon kernel on fp8 wgmma with the weights in registers, MXFP4 block scales exact in fp32.

One program computes one (token block, weight-row block) tile of one expert, swap-AB: the weights are the wgmma's
64-row side (each warpgroup owns 64 rows of W^T) and the expert's few gathered tokens its N side (block_m = 8..128,
256 on the fast table's warp-specialized items), so small slices waste no MMA rows; a slice's last tile narrows to the
width its rows need (a half or a quarter of block_m, one launch), or takes up to `tail_rows` rows past block_m on a
second wgmma per block. A ring of shared-memory stages, filled with cp.async, holds for each 128-wide K tile the
gathered x rows, the packed weights and their scales. Each thread reads its own packed words and turns them into fp8
in registers, directly in the layout of wgmma's register A operand (e2m1 values are e4m3 values times 2 ** -6 once
their bits sit where e4m3 keeps them: 5 logic ops per 32-bit word of 8; `prepare_weights` places the bits and orders
the words so that a thread's word holds exactly the 8 values of its A fragment); the weights never go back to shared
memory.

The tile that K ends inside (K = 2880: 2 of its 4 blocks) runs first, with only its blocks, while the ring fills.
Each 32-wide K block is its own wgmma into a fresh partial sum: Hopper's fp8 wgmma adds with fewer bits than fp32,
and one e8m0 scale covers exactly those 32 products. While block j's wgmma runs, block j+1's weights are converted;
then the partial is promoted into the fp32 accumulator times its block's 2 ** (s - 127), exactly, whatever the spread
of the scales. Other programs on the multiprocessor keep the tensor cores busy meanwhile. x_scale,
bias, SwiGLU, 1/out_scale and the fp8 rounding follow in the epilogue.

That is the accurate precision. The fast one (`prepare_weights(..., precision="fast")`) folds each block's scale
into the e4m3 values against a power of two per row and K tile where that is exact, chains a K tile's four wgmmas
into one partial and promotes it once; its large entries run the warp-specialized tile of _sm90_ws.

The host side lives beside this module: the weight layout in _sm90_layout, the configs and their table in
_sm90_config (both re-exported here); docs/sm90.md has the design.
"""

import contextlib
import functools

import torch
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.language.core import _aggregate as aggregate

from ._epilogue import swiglu_store
from ._sm90_config import (
    CONFIGS,
    DEFAULT_PRECISION,
    F16_MAX_BLOCK_M,
    FAST_CONFIGS,
    FAST_FP8_CONFIGS,
    FORCE_ENV,
    FP8_CHUNKS,
    FP8_WS,
    FP8_WS3,
    FP8_WS_FROM,
    HOT_AT,
    TABLES,
    WS_HALVES,
    Sm90Config,
    decode_configs,
    f16_config,
    packed_words_config,
    runs_as,
    select_config,
    table,
    two_consumers,
)
from ._sm90_layout import (
    E4M3_OF_E2M1_HI,
    E4M3_OF_E2M1_LO,
    F16_SPREAD,
    FAST_SHIFT,
    FAST_TABLE_HI,
    FAST_TABLE_LO,
    FAST_WINDOW,
    LAYOUTS,
    PRECISIONS,
    ROW_BLOCK,
    TILE_K,
    FoldError,
    Sm90Weights,
    emulate_dequant,
    layout_refusal,
    prepare_weights,
    row_major_words,
)
from .mxfp4 import MX_BLOCK

__all__ = [
    "CONFIGS", "DEFAULT_PRECISION", "F16_MAX_BLOCK_M", "F16_SPREAD", "FAST_CONFIGS", "FAST_FP8_CONFIGS",
    "FAST_TABLE_HI", "FAST_TABLE_LO", "FAST_WINDOW", "FORCE_ENV", "FP8_CHUNKS", "FP8_WS", "FP8_WS3",
    "FP8_WS_FROM", "HOT_AT", "LAYOUTS", "PRECISIONS", "TABLES", "WS_HALVES",
    "FoldError", "Sm90Config", "Sm90Weights", "decode_configs", "emulate_dequant", "f16_config", "launch",
    "layout_refusal", "packed_words_config", "prepare_for", "prepare_weights", "row_major_words", "runs_as",
    "select_config", "table", "two_consumers",
]  # fmt: skip
_MX_BLOCK = tl.constexpr(MX_BLOCK)  # Triton reads only constexpr globals
_TILE_K = tl.constexpr(TILE_K)
_ROW_BLOCK = tl.constexpr(ROW_BLOCK)
_FAST_ACC_SCALE = tl.constexpr(2.0**-FAST_SHIFT)  # the fast tables' 2 ** 6, folded into x_scale


# The fp16 path's words: 8 e2m1 codes -> 2 words of e4m3 bytes: selectors, byte permutes through the table, signs.
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


# The fp8 path's bit-spread encoding (prepare_weights): half 0 masked in place, half 1's bits 5, 6, 1, 0 moved.
_SPREAD_TO_E4M3_ASM = tl.constexpr("""
{
.reg .b32 up, down;
and.b32 $0, $2, 0x9C9C9C9C;
shl.b32 up, $2, 2;
shr.u32 down, $2, 2;
and.b32 up, up, 0x8C8C8C8C;
and.b32 down, down, 0x10101010;
or.b32 $1, up, down;
}
""")


@gluon.constexpr_function
def _fold_asm(j):
    """The fast mode's words of block j: the row's byte table from its d (bits 4j.. of the scale word: the values times
    2 ** (6 - d), FAST_TABLE_* less d * 8 on each nonzero byte), then the fp16 path's selectors, permutes and signs."""
    return f"""
{{
.reg .b32 d, lo, hi, sel, mag, sgn;
bfe.u32 d, $3, {4 * j}, 4;
mad.lo.u32 lo, d, {(-0x08080800) & 0xFFFFFFFF:#x}, {FAST_TABLE_LO:#x};
mad.lo.u32 hi, d, {(-0x08080808) & 0xFFFFFFFF:#x}, {FAST_TABLE_HI:#x};
and.b32 sel, $2, 0x77777777;
prmt.b32 mag, lo, hi, sel;
shl.b32 sgn, $2, 4;
and.b32 sgn, sgn, 0x80808080;
or.b32 $0, mag, sgn;
shr.u32 sel, sel, 16;
prmt.b32 mag, lo, hi, sel;
and.b32 sgn, $2, 0x80808080;
or.b32 $1, mag, sgn;
}}
"""


@gluon.constexpr_function
def _warp_row_bases(num_warps, rank):
    """Linear-layout bases of the warps: warp w owns rows 16w .. 16w + 15 (wgmma's m64 per warpgroup)."""
    return [[16 << i] + [0] * (rank - 1) for i in range(num_warps.bit_length() - 1)]


@gluon.constexpr_function
def _words_layout(block_n, num_warps):
    """One K tile of packed words as [row, chunk, quad, block parity]: the thread of lane l in warp w holds rows
    16w + l // 4 and 16w + l // 4 + 8 and quad l % 4, the rows and K positions of its wgmma A fragment."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 0, 1], [0, 1, 0, 0], [8, 0, 0, 0]],
        lane_bases=[[0, 0, 1, 0], [0, 0, 2, 0], [1, 0, 0, 0], [2, 0, 0, 0], [4, 0, 0, 0]],
        warp_bases=_warp_row_bases(num_warps, 4),
        block_bases=[],
        shape=[block_n, 2, 4, 2],
    )


@gluon.constexpr_function
def _packed_layout(block_n, num_warps, per_word):
    """[row, word, element] with K = per_word * word + element, the elements of a word in one register: once
    reshaped to [row, 8 * per_word], wgmma's register A layout for fp8 (4 per word) or fp16 (2). The thread of lane
    quad q holds words q and 4 + q of rows r and r + 8."""
    element_bases = [[0, 0, 1 << b] for b in range(per_word.bit_length() - 1)]
    return gl.DistributedLinearLayout(
        reg_bases=[*element_bases, [0, 4, 0], [8, 0, 0]],
        lane_bases=[[0, 1, 0], [0, 2, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0]],
        warp_bases=_warp_row_bases(num_warps, 3),
        block_bases=[],
        shape=[block_n, 8, per_word],
    )


@gluon.constexpr_function
def _k_steps(K):
    """(K tiles, blocks of the tile that K ends inside, 1 if that tile is partial: it runs first, with only those
    blocks, while the ring fills)."""
    k_tiles = (K + TILE_K - 1) // TILE_K
    last_blocks = (K - (k_tiles - 1) * TILE_K + MX_BLOCK - 1) // MX_BLOCK
    return k_tiles, last_blocks, int(last_blocks < TILE_K // MX_BLOCK)


@gluon.jit
def _two_words(asm: gl.constexpr, words):
    """An asm that turns each 32-bit word into two."""
    return gl.inline_asm_elementwise(
        asm=asm, constraints="=r,=r,r", args=[words], dtype=(gl.int32, gl.int32), is_pure=True, pack=1
    )


@gluon.jit
def _as_operand(low, high, BLOCK_N: gl.constexpr, PER_WORD: gl.constexpr, layout: gl.constexpr):
    """Words [rows, quad] of a thread's A fragment, `low` for words q and `high` for 4 + q -> the A operand
    [rows, 8 * PER_WORD], PER_WORD elements per word (4: fp8, 2: fp16): the same registers, reinterpreted (no data
    moves)."""
    words = gl.join(low, high).permute((0, 2, 1)).reshape([BLOCK_N, 8])  # word 4h + q
    packed: gl.constexpr = _packed_layout(BLOCK_N, gl.num_warps(), PER_WORD)
    words = gl.convert_layout(words, gl.SliceLayout(2, packed))
    as_elements = gl.expand_dims(words, 2).broadcast_to([BLOCK_N, 8, PER_WORD])
    if PER_WORD == 4:
        values = _as_e4m3(as_elements)
    else:
        values = gl.inline_asm_elementwise(
            asm="mov.b32 $0, $1;", constraints="=r,r,r", args=[as_elements], dtype=gl.float16, is_pure=True, pack=2
        )  # the word, read as its elements
    return gl.convert_layout(values.reshape([BLOCK_N, 8 * PER_WORD]), layout)


@gluon.jit
def _as_e4m3(words):
    """int32 words broadcast along a last dimension of 4 that one thread holds -> each word read as its 4 e4m3 bytes
    (the same registers: no data moves)."""
    return gl.inline_asm_elementwise(
        asm="mov.b32 $0, $1;", constraints="=r,r,r,r,r", args=[words], dtype=gl.float8e4nv, is_pure=True, pack=4
    )


@gluon.jit
def _fold_words(words, scale_words, j: gl.constexpr):
    """The fast mode's fold of packed words (any shape) of K block j with their rows' scale words: the e4m3 bytes of
    K = 4q + i and of 16 + 4q + i, the values times 2 ** (6 - d) (exact: Sm90Weights.fast)."""
    return gl.inline_asm_elementwise(
        asm=_fold_asm(j), constraints="=r,=r,r,r", args=[words, scale_words], dtype=(gl.int32, gl.int32),
        is_pure=True, pack=1,
    )  # fmt: skip


@gluon.jit
def _a_operand_folded(words, scale_words, j: gl.constexpr, BLOCK_N: gl.constexpr, a_layout: gl.constexpr):
    """The fast mode: packed words [rows, quad] of K block j and their rows' scale words -> the block's weights times
    2 ** (6 - d) in e4m3 (exact: Sm90Weights.fast) as wgmma's register operand [rows, 32]."""
    lo, hi = _fold_words(words, scale_words, j)
    return _as_operand(lo, hi, BLOCK_N, 4, a_layout)


@gluon.jit
def _a_operand(words, BLOCK_N: gl.constexpr, a_layout: gl.constexpr):
    """Packed words [rows, quad] of one 32-wide K block -> its fp8 weights [rows, 32] (2 ** -6 of the true values) as
    wgmma's register operand."""
    lo, hi = _two_words(_SPREAD_TO_E4M3_ASM, words)  # e4m3 bytes of K = 4q + i and 16 + 4q + i
    return _as_operand(lo, hi, BLOCK_N, 4, a_layout)


# Two e4m3 bytes -> an fp16 pair (exact: every e4m3 value is an fp16 value), for each half of a word.
_E4M3_TO_F16_ASM = tl.constexpr("""
{
.reg .b16 low, high;
mov.b32 {low, high}, $2;
cvt.rn.f16x2.e4m3x2 $0, low;
cvt.rn.f16x2.e4m3x2 $1, high;
}
""")


@gluon.jit
def _a_operands_f16(words, BLOCK_N: gl.constexpr, a16_layout: gl.constexpr):
    """Packed words [rows, quad] of one 32-wide K block (fp16 layout of prepare_weights) -> its weights as two fp16
    A operands [rows, 16], K 0..15 and 16..31 of the block."""
    lo, hi = _two_words(_E2M1_TO_E4M3_ASM, words)  # e4m3 bytes of K = 2q + l, 8 + 2q + l (lo), 16 + those (hi)
    lo0, lo1 = _two_words(_E4M3_TO_F16_ASM, lo)  # fp16 pairs of K = 2q + l | 8 + 2q + l
    hi0, hi1 = _two_words(_E4M3_TO_F16_ASM, hi)
    return _as_operand(lo0, lo1, BLOCK_N, 2, a16_layout), _as_operand(hi0, hi1, BLOCK_N, 2, a16_layout)


@gluon.jit
def _x_to_f16(x_tile, x16_smem, BLOCK_M: gl.constexpr):
    """The fp8 x tile [BLOCK_M, 128] -> fp16 in two [BLOCK_M, 64] halves (exact), for fp16 wgmma."""
    layout: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [gl.num_warps(), 1], [1, 0])
    for h in gl.static_range(2):
        x16_smem.index(h).store(x_tile.slice(64 * h, 64, dim=1).load(layout).to(gl.float16))


@gluon.jit
def _block_scales(scale_words, j: gl.constexpr, ZERO_SCALE: gl.constexpr):
    """2 ** (e8m0 - 127) of block j from each row's 4 scale bytes, made from the exponent bits: exact. e8m0 0 is
    2 ** -127, the fp32 subnormal 1 << 22, which max() gives since every other scale's bits are larger; where only
    blocks of zeros have it (Sm90Weights.zero_scale False) e8m0 0 reads as 0, as exact, 8 instructions less per tile."""
    bits = (scale_words >> (8 * j)) & 0xFF
    bits = gl.maximum(bits << 23, 1 << 22) if ZERO_SCALE else bits << 23
    return bits.to(gl.float32, bitcast=True)


@aggregate
class _Buffers:
    """Shared-memory buffers of the pipeline: x rows (128-byte swizzled, wgmma's B), packed words, scales, and the
    TAIL_ROWS tokens' x rows (the first x buffers again where there are none: never touched); with bulk weights, the
    mbarrier each stage's weight copies complete on (the scales again where there are none). A ring's hold every
    stage (leading dimension), one stage's are the ring's `stage(i)`."""

    x: gl.shared_memory_descriptor
    w: gl.shared_memory_descriptor
    s: gl.shared_memory_descriptor
    x_tail: gl.shared_memory_descriptor
    bar: gl.shared_memory_descriptor

    @gluon.constexpr_function
    def __init__(self, x, w, s, x_tail, bar=None):
        self.x, self.w, self.s, self.x_tail = x, w, s, x_tail
        self.bar = s if bar is None else bar

    @gluon.jit
    def stage(self, i):
        return _Buffers(self.x.index(i), self.w.index(i), self.s.index(i), self.x_tail.index(i), self.bar.index(i))


@aggregate
class _Slots:
    """A ring of two stages, each its own allocation (one-stage _Buffers): Triton's barrier analysis tells them apart,
    where it cannot tell the stages of one allocation apart. Its stages are taken by constexpr index only."""

    first: _Buffers
    second: _Buffers
    x: gl.shared_memory_descriptor

    @gluon.constexpr_function
    def __init__(self, first, second):
        self.first, self.second, self.x = first, second, first.x

    @gluon.jit
    def stage(self, i: gl.constexpr):
        return (self.first, self.second)[i].stage(0)


@gluon.constexpr_function
def _folded(dtype):
    """Whether the weights the kernel reads are the fold's e4m3 bytes (layout "fp8"), not int32 packed words."""
    return dtype == gl.float8e4nv


@gluon.constexpr_function
def _w_row(dtype):
    """Elements of one weight row's K tile: 128 folded bytes or 16 words of packed codes."""
    return TILE_K if _folded(dtype) else TILE_K // 8


@gluon.jit
def _ring(x_dtype: gl.constexpr, STAGES: gl.constexpr, BLOCK_M: gl.constexpr, TAIL_ROWS: gl.constexpr,
          BLOCK_N: gl.constexpr, w_dtype: gl.constexpr = gl.int32, BULK: gl.constexpr = False):  # fmt: skip
    x_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    plain2: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    x = gl.allocate_shared_memory(x_dtype, [STAGES, BLOCK_M, _TILE_K], x_nvmma)
    x_tail = x
    if TAIL_ROWS:
        x_tail = gl.allocate_shared_memory(x_dtype, [STAGES, TAIL_ROWS, _TILE_K], x_nvmma)
    if _folded(w_dtype):  # wgmma's A operand, 128-byte swizzled as x
        w = gl.allocate_shared_memory(w_dtype, [STAGES, BLOCK_N, _TILE_K], x_nvmma)
    else:
        w = gl.allocate_shared_memory(gl.int32, [STAGES, BLOCK_N, _TILE_K // 8], plain2)
    s = gl.allocate_shared_memory(gl.int32, [STAGES, BLOCK_N], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    bar = s
    if BULK:  # one mbarrier a stage: its weight copies' bytes
        bar = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(bar.index(i), count=1)
    return _Buffers(x, w, s, x_tail, bar)


@gluon.jit
def _slot_ring(x_dtype: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, w_dtype: gl.constexpr,
               BULK: gl.constexpr):  # fmt: skip
    """A ring of two stages, each its own one-stage allocation (_Slots)."""
    return _Slots(
        _ring(x_dtype, 1, BLOCK_M, 0, BLOCK_N, w_dtype, BULK), _ring(x_dtype, 1, BLOCK_M, 0, BLOCK_N, w_dtype, BULK)
    )


@aggregate
class _Sources:
    """Where one program's copies come from: x rows (its tile's and the tail rows'), words and scales, with the
    copies' K masks; with bulk weights, the fp8 layout's descriptor (rows of 128 bytes) and the row of the program's
    first row block at K tile 0 in it."""

    x: gl.tensor
    offs_xk: gl.tensor
    w: gl.tensor
    offs_wc: gl.tensor
    s: gl.tensor
    offs_s: gl.tensor
    x_tail: gl.tensor
    w_desc: tma.tensor_descriptor | gl.constexpr
    w_row: gl.tensor | gl.constexpr

    @gluon.constexpr_function
    def __init__(self, x, offs_xk, w, offs_wc, s, offs_s, x_tail, w_desc=None, w_row=None):
        self.x, self.offs_xk, self.w, self.offs_wc, self.s, self.offs_s = x, offs_xk, w, offs_wc, s, offs_s
        self.x_tail = x_tail
        self.w_desc, self.w_row = (gl.constexpr(None), gl.constexpr(None)) if w_desc is None else (w_desc, w_row)


@gluon.jit
def _issue_loads(tile, stage: _Buffers, src: _Sources, K: gl.constexpr, N: gl.constexpr, K_TILES: gl.constexpr,
                 TAIL_ROWS: gl.constexpr, BULK: gl.constexpr = False, ROW_TILES: gl.constexpr = 0):  # fmt: skip
    """cp.async of K tile `tile` (x rows, packed words, scales) into `stage`; x zero-filled from K on (the words and
    scales hold zeros there), nothing from tile K_TILES on. The loop passes the end of the whole tiles as K and
    K_TILES, so that its copies past them (the tile that K ends inside was step 0's) move nothing. BULK: the fp8
    layout's weights by TMA instead, one 8 KB copy per row block (ROW_TILES K tiles of 64 rows apart), on the
    stage's mbarrier."""
    k0 = tile * _TILE_K
    cp.async_copy_global_to_shared(stage.x, src.x + k0, mask=(src.offs_xk < K - k0)[None, :])
    if TAIL_ROWS:
        cp.async_copy_global_to_shared(stage.x_tail, src.x_tail + k0, mask=(src.offs_xk < K - k0)[None, :])
    w_tile: gl.constexpr = _ROW_BLOCK * _w_row(src.w.dtype.element_ty)  # one K tile of a row block
    if BULK:
        BLOCKS_N: gl.constexpr = stage.w.shape[0] // _ROW_BLOCK
        moves = tile < K_TILES
        mbarrier.expect(stage.bar, BLOCKS_N * w_tile, pred=moves)
        for h in gl.static_range(BLOCKS_N):
            row = src.w_row + (h * ROW_TILES + tile) * _ROW_BLOCK
            tma.async_copy_global_to_shared(src.w_desc, [row, 0], stage.bar,
                                            stage.w.slice(h * _ROW_BLOCK, _ROW_BLOCK), pred=moves)  # fmt: skip
    else:
        in_w = (src.offs_wc >= 0) & (tile < K_TILES)
        cp.async_copy_global_to_shared(stage.w, src.w + tile * w_tile, mask=in_w[None, :])
    cp.async_copy_global_to_shared(stage.s, src.s + tile * N, mask=(src.offs_s >= 0) & (tile < K_TILES))
    cp.commit_group()


@gluon.jit
def _x_block(x_tile, j: gl.constexpr):
    """K block j of a landed x tile [BLOCK_M, 128] as wgmma's B operand [32, BLOCK_M]."""
    return x_tile.slice(j * _MX_BLOCK, _MX_BLOCK, dim=1).permute((1, 0))


@gluon.jit
def _x_rows(x_ptr, gather_ptr, start, size, first, ROWS: gl.constexpr, layout: gl.constexpr, K: gl.constexpr):
    """Pointers to the first K tile of the slice's x rows [first, first + ROWS), in the copies' layout; rows past the
    slice repeat its last row (their outputs are never stored)."""
    offs_m = first + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    rows = gl.load(gather_ptr + start + gl.minimum(offs_m, size - 1))
    offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, layout))
    return x_ptr + rows.to(gl.int64)[:, None] * K + offs_xk[None, :]


@gluon.jit
def _promote(part, scale, acc):
    """acc + part * scale, rounded once (fma.rn.f32, as gl.fma), with the sum written over acc: tied in the asm, each
    running sum keeps one register through the K loop (from gl.fma, ptxas moves the sums between registers and most
    FFMA then read two registers of one bank)."""
    return gl.inline_asm_elementwise(
        asm="fma.rn.f32 $0, $1, $2, $0;",
        constraints="=f,f,f,0",
        args=[part, scale.broadcast_to(part.shape), acc],
        dtype=gl.float32,
        is_pure=True,
        pack=1,
    )


@aggregate
class _Sums:
    """A program's running sums: the fp32 accumulator, each block's partial, the next block's (with TWO_PARTIALS),
    and the tail rows' accumulator and partial (with TAIL_ROWS; else aliases, never touched)."""

    acc: gl.tensor
    part: gl.tensor
    spare: gl.tensor
    acc_tail: gl.tensor
    part_tail: gl.tensor

    @gluon.constexpr_function
    def __init__(self, acc, part, spare, acc_tail, part_tail):
        self.acc, self.part, self.spare, self.acc_tail, self.part_tail = acc, part, spare, acc_tail, part_tail


@gluon.jit
def _mma_tile(
    sums: _Sums, stage: _Buffers, x16_smem, BLOCK_N: gl.constexpr, BLOCK_M: gl.constexpr, F16: gl.constexpr,
    ZERO_SCALE: gl.constexpr, BLOCKS: gl.constexpr, TWO_PARTIALS: gl.constexpr, TAIL_ROWS: gl.constexpr,
    FAST: gl.constexpr,
) -> _Sums:  # fmt: skip
    """One landed K tile: its first BLOCKS blocks' weights converted (4; fewer in the tile that K ends inside), one
    wgmma each, each partial promoted into acc. The operand layouts follow from the accumulator's. TWO_PARTIALS:
    block j + 1's wgmma writes `spare` while block j's partial is promoted. TAIL_ROWS: a second wgmma per block on
    the same weights. FAST: each block's weights folded against the tile's reference scale of their row, the tile's
    wgmmas chained into one partial, promoted once."""
    acc, part, spare, acc_e, part_e = sums.acc, sums.part, sums.spare, sums.acc_tail, sums.part_tail
    acc_layout: gl.constexpr = acc.type.layout
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=4)
    a16_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    words_layout: gl.constexpr = _words_layout(BLOCK_N, gl.num_warps())
    rows_layout: gl.constexpr = gl.SliceLayout(1, acc_layout)  # per weight row, as the accumulator holds them
    e_rows: gl.constexpr = gl.SliceLayout(1, acc_e.type.layout)  # the tail's: the same rows per thread, no data moves
    x_tile, xe_tile = stage.x, stage.x_tail
    if FAST:
        gl.static_assert(not TWO_PARTIALS and not F16, "the fast mode runs one fp8 partial per K tile")
        part, issued_e, ref_rows = _fast_chain(stage, part, BLOCK_N, BLOCKS, part_e, TAIL_ROWS)
        if TAIL_ROWS:
            part, part_e = warpgroup_mma_wait(num_outstanding=0, deps=(part, issued_e))
            acc_e = _promote(part_e, gl.convert_layout(ref_rows, e_rows)[:, None], acc_e)
        else:
            part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
        acc = _promote(part, ref_rows[:, None], acc)
    else:
        blocks = _tile_words(stage, BLOCK_N, words_layout)
        scale_words = stage.s.load(rows_layout)
        if F16:
            _x_to_f16(x_tile, x16_smem, BLOCK_M)  # every wgmma of tile t-1 is done: the buffer is free
            fence_async_shared()
            gl.thread_barrier()
            for j in gl.static_range(BLOCKS):
                a_lo, a_hi = _a_operands_f16(blocks[j], BLOCK_N, a16_layout)
                x_half = x16_smem.index(j // 2)
                x_lo = x_half.slice((j % 2) * _MX_BLOCK, 16, dim=1).permute((1, 0))
                x_hi = x_half.slice((j % 2) * _MX_BLOCK + 16, 16, dim=1).permute((1, 0))
                part = warpgroup_mma(a_lo, x_lo, part, use_acc=False, is_async=True)  # over the last partial
                part = warpgroup_mma(a_hi, x_hi, part, is_async=True)  # fp16 wgmma adds in fp32
                part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
                acc = _promote(part, _block_scales(scale_words, j, ZERO_SCALE)[:, None], acc)
        else:
            # The previous partial as the (ignored) accumulator input: the wgmma writes over its registers.
            a = _a_operand(blocks[0], BLOCK_N, a_layout)
            part = warpgroup_mma(a, _x_block(x_tile, 0), part, use_acc=False, is_async=True)
            if TAIL_ROWS:
                part_e = warpgroup_mma(a, _x_block(xe_tile, 0), part_e, use_acc=False, is_async=True)
            for j in gl.static_range(BLOCKS):
                if j + 1 < BLOCKS:
                    a = _a_operand(blocks[j + 1], BLOCK_N, a_layout)  # while the wgmma runs
                scale_rows = _block_scales(scale_words, j, ZERO_SCALE)
                scale = scale_rows[:, None]
                if TWO_PARTIALS and j + 1 < BLOCKS:
                    spare = warpgroup_mma(a, _x_block(x_tile, j + 1), spare, use_acc=False, is_async=True)
                    part = warpgroup_mma_wait(num_outstanding=1, deps=(part,))  # block j's done, j + 1's in flight
                    acc = _promote(part, scale, acc)
                    part, spare = spare, part
                else:
                    # Promote once the wgmma is done: without a spare partial, reading its registers while the next
                    # wgmma (which writes them) is in flight would make ptxas serialize every wgmma.
                    if TAIL_ROWS:
                        part, part_e = warpgroup_mma_wait(num_outstanding=0, deps=(part, part_e))
                        acc_e = _promote(part_e, gl.convert_layout(scale_rows, e_rows)[:, None], acc_e)
                    else:
                        part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
                    acc = _promote(part, scale, acc)
                    if j + 1 < BLOCKS:
                        part = warpgroup_mma(a, _x_block(x_tile, j + 1), part, use_acc=False, is_async=True)
                        if TAIL_ROWS:
                            part_e = warpgroup_mma(a, _x_block(xe_tile, j + 1), part_e, use_acc=False, is_async=True)
    return _Sums(acc, part, spare, acc_e, part_e)


@gluon.jit
def _tile_words(stage: _Buffers, BLOCK_N: gl.constexpr, words_layout: gl.constexpr):
    """A landed K tile's packed words as its four blocks' [row, quad]."""
    return _split_blocks(stage.w.reshape([BLOCK_N, 2, 4, 2]).load(words_layout))


@gluon.constexpr_function
def _rank(shape):
    return len(shape)


@gluon.jit
def _split_blocks(words):
    """A K tile's packed words [..., chunk, quad, parity] (the words' order in memory) -> its four blocks' [..., quad]
    (block 2 * chunk + parity)."""
    even, odd = gl.split(words)  # blocks 0, 2 | 1, 3 as [..., chunk, quad]
    RANK: gl.constexpr = _rank(even.shape)
    gl.static_assert(RANK == 3 or RANK == 4, "words as [row, ...] or [set, row, ...]")
    if RANK == 3:  # [..., quad, chunk]
        even, odd = even.permute((0, 2, 1)), odd.permute((0, 2, 1))
    else:
        even, odd = even.permute((0, 1, 3, 2)), odd.permute((0, 1, 3, 2))
    block0, block2 = gl.split(even)
    block1, block3 = gl.split(odd)
    return block0, block1, block2, block3


@gluon.jit
def _fast_chain(stage: _Buffers, part, BLOCK_N: gl.constexpr, BLOCKS: gl.constexpr = _TILE_K // _MX_BLOCK,
                part_e=None, TAIL_ROWS: gl.constexpr = 0):  # fmt: skip
    """The fast mode's K tile issued, not waited on: its first BLOCKS blocks folded and their wgmmas chained into
    `part` (and, with TAIL_ROWS, on the tail rows' x into `part_e`). Returns the partials in flight and the rows'
    reference scales (unused where _ref_scales reads them later)."""
    acc_layout: gl.constexpr = part.type.layout
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=4)
    blocks, sw = (None, None) if _folded(stage.w.dtype) else _fold_inputs(stage, BLOCK_N)
    ref_rows = _ref_scales(stage, acc_layout)
    a = _a_block(stage, blocks, sw, 0, BLOCK_N, a_layout)
    part = warpgroup_mma(a, _x_block(stage.x, 0), part, use_acc=False, is_async=True)
    if TAIL_ROWS:
        part_e = warpgroup_mma(a, _x_block(stage.x_tail, 0), part_e, use_acc=False, is_async=True)
    for j in gl.static_range(1, BLOCKS):
        a = _a_block(stage, blocks, sw, j, BLOCK_N, a_layout)  # while the previous block's wgmma runs
        part = warpgroup_mma(a, _x_block(stage.x, j), part, is_async=True)
        if TAIL_ROWS:
            part_e = warpgroup_mma(a, _x_block(stage.x_tail, j), part_e, is_async=True)
    if not TAIL_ROWS:
        part_e = part  # no tail rows: nothing issued for them
    return part, part_e, ref_rows


@gluon.jit
def _fold_inputs(stage: _Buffers, BLOCK_N: gl.constexpr):
    """A landed K tile's packed words as its four blocks' [row, quad] and its rows' scale words broadcast to them: what
    _a_operand_folded takes."""
    blocks = _tile_words(stage, BLOCK_N, _words_layout(BLOCK_N, gl.num_warps()))
    sw = stage.s.load(gl.SliceLayout(1, blocks[0].type.layout))
    return blocks, gl.expand_dims(sw, 1).broadcast_to(blocks[0].shape)


@gluon.jit
def _a_block(stage: _Buffers, blocks, sw, j: gl.constexpr, BLOCK_N: gl.constexpr, a_layout: gl.constexpr):
    """K block j's wgmma A operand: the fold's bytes straight from shared memory where they landed, else the packed
    words folded in registers (blocks, sw: _fold_inputs; None with the bytes)."""
    if _folded(stage.w.dtype):
        a = stage.w.slice(j * _MX_BLOCK, _MX_BLOCK, dim=1)
    else:
        a = _a_operand_folded(blocks[j], sw, j, BLOCK_N, a_layout)
    return a


@gluon.jit
def _ref_scales(stage: _Buffers, acc_layout: gl.constexpr):
    """[rows] 2 ** (r - 127) of a landed tile's fast scale words, r each row's reference exponent (read again at the
    tile's promotion where the words can stay in shared memory: fewer registers held across the next tile's wgmmas)."""
    words = stage.s.load(gl.SliceLayout(1, acc_layout))
    return (words & 0x7F800000).to(gl.float32, bitcast=True)


@gluon.jit
def _chunk_stage(rings, ring: gl.constexpr, p0, c: gl.constexpr, FIRST: gl.constexpr, RING: gl.constexpr,
                 SLOTS: gl.constexpr):  # fmt: skip
    """Step p0 + c's stage in ring `ring`. SLOTS (rings of _Slots, RING 2): p0 - FIRST is a multiple of four, so the
    slot, (p0 + c) // 2 % 2, is (FIRST + c) // 2 % 2, known when compiling."""
    if SLOTS:
        return rings[ring].stage((FIRST + c) // 2 % RING)
    else:
        return rings[ring].stage((p0 + c) // 2 % RING)


@gluon.jit
def _fast_chunk(sums: _Sums, rings, src: _Sources, p0, STEPS: gl.constexpr, FIRST: gl.constexpr,
                AHEAD: gl.constexpr, RING: gl.constexpr, WHOLE: gl.constexpr, N: gl.constexpr,
                BLOCK_N: gl.constexpr, TAIL_ROWS: gl.constexpr, BULK: gl.constexpr = False,
                ROW_TILES: gl.constexpr = 0, SLOTS: gl.constexpr = False) -> _Sums:  # fmt: skip
    """STEPS whole K tiles from step p0 (p0 - FIRST even: step p lives in ring p % 2), the fast mode: each step's
    wgmmas issued into one of two partials while the previous step's partial is promoted; the last one drained.
    Loads run AHEAD steps ahead, into the slot of step p + AHEAD - 4 (RING 2): promoted before they are issued.
    BULK: step p's weights complete on its slot's mbarrier, in phase p // 2 // RING (one completion a use)."""
    acc_layout: gl.constexpr = sums.acc.type.layout
    acc, even, odd = sums.acc, sums.part, sums.spare
    even_flight, odd_flight = even, odd  # each step's wgmmas in flight (bound in the unrolled steps)
    for r in gl.static_range(STEPS):
        cp.wait_group(AHEAD - 1)
        gl.thread_barrier()  # step p0 + r has landed
        ahead = _chunk_stage(rings, (FIRST + r + AHEAD) % 2, p0, r + AHEAD, FIRST, RING, SLOTS)
        _issue_loads(p0 + r + AHEAD - FIRST, ahead, src, WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS, BULK, ROW_TILES)
        landed = _chunk_stage(rings, (FIRST + r) % 2, p0, r, FIRST, RING, SLOTS)
        if BULK:
            mbarrier.wait(landed.bar, (p0 + r) // 2 // RING & 1)
        if r % 2 == 0:
            even_flight = _fast_chain(landed, even, BLOCK_N)[0]
            if r > 0:  # the previous step's partial, while this step's wgmmas run
                odd = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(odd_flight,))
                before = _chunk_stage(rings, (FIRST + r - 1) % 2, p0, r - 1, FIRST, RING, SLOTS)
                acc = _promote(odd, _ref_scales(before, acc_layout)[:, None], acc)
        else:
            odd_flight = _fast_chain(landed, odd, BLOCK_N)[0]
            even = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(even_flight,))
            before = _chunk_stage(rings, (FIRST + r - 1) % 2, p0, r - 1, FIRST, RING, SLOTS)
            acc = _promote(even, _ref_scales(before, acc_layout)[:, None], acc)
    last = _chunk_stage(rings, (FIRST + STEPS - 1) % 2, p0, STEPS - 1, FIRST, RING, SLOTS)
    if STEPS % 2:
        even = warpgroup_mma_wait(num_outstanding=0, deps=(even_flight,))
        acc = _promote(even, _ref_scales(last, acc_layout)[:, None], acc)
    else:
        odd = warpgroup_mma_wait(num_outstanding=0, deps=(odd_flight,))
        acc = _promote(odd, _ref_scales(last, acc_layout)[:, None], acc)
    return _Sums(acc, even, odd, sums.acc_tail, sums.part_tail)


@aggregate
class _Call:
    """The kernel's pointers and scalars, and the program's expert, column block and slice."""

    x: gl.tensor
    words: gl.tensor
    scales: gl.tensor
    bias: gl.tensor
    gather: gl.tensor
    x_scale: gl.tensor
    out_scale: gl.tensor
    out: gl.tensor
    alpha: gl.tensor
    limit: gl.tensor
    expert: gl.tensor
    pid_n: gl.tensor
    size: gl.tensor
    start: gl.tensor
    sums: gl.tensor  # with k_splits: fp32 [tiles, K_SPLITS, BLOCK_N, WS_M], each split's sum
    arrivals: gl.tensor  # int32 [tiles]: the tile's splits done so far (zero between launches)
    tile: gl.tensor  # the (schedule entry, column block) index of the program: its place in `sums`, `arrivals`
    split: gl.tensor  # which of the tile's K splits the program runs (0 without k_splits)
    w_desc: tma.tensor_descriptor | gl.constexpr  # the fp8 layout's TMA descriptor with bulk weights, else None

    @gluon.constexpr_function
    def __init__(self, x, words, scales, bias, gather, x_scale, out_scale, out, alpha, limit, expert, pid_n, size,
                 start, sums, arrivals, tile, split, w_desc=None):  # fmt: skip
        self.x, self.words, self.scales, self.bias, self.gather = x, words, scales, bias, gather
        self.x_scale, self.out_scale, self.out = x_scale, out_scale, out
        self.alpha, self.limit, self.expert, self.pid_n, self.size, self.start = (
            alpha,
            limit,
            expert,
            pid_n,
            size,
            start,
        )
        self.sums, self.arrivals, self.tile, self.split = sums, arrivals, tile, split
        self.w_desc = gl.constexpr(None) if w_desc is None else w_desc


@gluon.jit
def _swiglu_tile(acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, pid_n, start, size,
                 N: gl.constexpr, ACC_SCALE: gl.constexpr):  # fmt: skip
    """swiglu_store of a [BLOCK_N, BLOCK_M] tile at its width: block_m 128 takes the wide form (see _epilogue)."""
    BLOCK_N: gl.constexpr = acc.shape[0]
    BLOCK_M: gl.constexpr = acc.shape[1]
    swiglu_store(
        acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, pid_n, start, size, N, BLOCK_M,
        BLOCK_N, VEC=16 if BLOCK_M >= 128 else 2, NAN_MIN_MAX=BLOCK_M >= 128, ACC_SCALE=ACC_SCALE,
    )  # fmt: skip


@gluon.jit
def _store(acc, call: _Call, row0, m0, N: gl.constexpr, ACC_TIMES: gl.constexpr, ACC_SCALE: gl.constexpr):
    """The tile's epilogue (acc times ACC_TIMES, exact; ACC_SCALE folded into x_scale)."""
    if ACC_TIMES != 1.0:
        acc = acc * ACC_TIMES
    _swiglu_tile(
        acc, call.bias, call.x_scale, call.out_scale, call.out, call.alpha, call.limit, row0, m0, call.pid_n,
        call.start, call.size, N, ACC_SCALE,
    )  # fmt: skip


@gluon.jit
def _split_ptrs(acc, call: _Call, m0, K_SPLITS: gl.constexpr, WS_M: gl.constexpr):
    """Where the program's tile keeps its splits' sums: the base of split 0's (add s * BLOCK_N * WS_M for split s),
    the offsets of the accumulator's elements, and the mask of the slice's rows."""
    layout: gl.constexpr = acc.type.layout
    BLOCK_N: gl.constexpr = acc.shape[0]
    BLOCK_M: gl.constexpr = acc.shape[1]
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
    offs_m = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))
    base = call.sums + call.tile.to(gl.int64) * (K_SPLITS * BLOCK_N * WS_M)
    offs = offs_n[:, None] * WS_M + offs_m[None, :]  # 32-bit: the 64-bit addresses live only at each access
    rows = (m0 + offs_m < call.size)[None, :] & (offs_n >= 0)[:, None]
    return base, offs, rows


@gluon.jit
def _hand_in(acc, call: _Call, ptrs, K_SPLITS: gl.constexpr, WS_M: gl.constexpr):
    """Store this split's sum (the slice's rows only; `ptrs`: _split_ptrs') and count it in; True for the tile's last
    split to arrive, which sets the count back to zero for the next launch. One thread counts (Triton predicates a
    scalar atomic): every thread's stores are ordered before it by the CTA barrier and the atomic's release; the last
    split's loads after its acquire by the barrier through which Triton shares the atomic's result."""
    base, offs, rows = ptrs
    gl.store(base + call.split * (acc.shape[0] * WS_M) + offs, acc, mask=rows)
    gl.thread_barrier()
    arrived = gl.atomic_add(call.arrivals + call.tile, 1, sem="acq_rel", scope="gpu")
    last = arrived == K_SPLITS - 1
    if last:
        gl.store(call.arrivals + call.tile, 0)
    return last


@gluon.jit
def _sum_splits(acc, call: _Call, ptrs, K_SPLITS: gl.constexpr, WS_M: gl.constexpr):
    """The tile's sum: its splits' added in split order whichever arrived last (deterministic), this program's own
    from its registers; `ptrs`: _split_ptrs'."""
    base, offs, rows = ptrs
    split = call.split
    stride: gl.constexpr = acc.shape[0] * WS_M
    total = gl.where(split == 0, acc, gl.load(base + offs, mask=rows & (split != 0), other=0.0, cache_modifier=".cg"))
    for s in range(1, K_SPLITS):  # in split order
        other = gl.load(base + s * stride + offs, mask=rows & (split != s), other=0.0, cache_modifier=".cg")
        total = total + gl.where(split == s, acc, other)
    return total


@gluon.jit
def _tile(
    call: _Call, m0, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, TAIL_ROWS: gl.constexpr,
    NUM_STAGES: gl.constexpr, F16: gl.constexpr, ZERO_SCALE: gl.constexpr, PARITY_RINGS: gl.constexpr,
    TWO_PARTIALS: gl.constexpr, FAST: gl.constexpr, OVERLAP_TILES: gl.constexpr, K_ALL: gl.constexpr = 0,
    K_SPLITS: gl.constexpr = 1, WS_M: gl.constexpr = 0, BULK_W: gl.constexpr = False,
    SLOT_BUFFERS: gl.constexpr = False,
):  # fmt: skip
    """One program's tile: tokens [m0, m0 + BLOCK_M + TAIL_ROWS) of the expert's slice, weight rows of column block
    pid_n; the K loop and the epilogue. TAIL_ROWS tokens past BLOCK_M (0, or a power of two) get a wgmma of their
    own on the same converted weights. With K_SPLITS > 1 the program runs split call.split's K tiles (from
    call.split * _split_tiles(K_ALL, K_SPLITS), K wide) of the K_ALL-wide weights and hands its sum in (_hand_in)."""
    x_ptr, words_ptr, scales_ptr, gather_ptr = call.x, call.words, call.scales, call.gather
    expert, pid_n, size, start = call.expert, call.pid_n, call.size, call.start
    NUM_WARPS: gl.constexpr = gl.num_warps()
    BLOCK_N: gl.constexpr = 16 * NUM_WARPS
    K_TILES: gl.constexpr = _k_steps(K)[0]  # this program's
    K_ROW: gl.constexpr = K_ALL if K_ALL else K  # the weights' and x's K
    ROW_TILES: gl.constexpr = _k_steps(K_ROW)[0]
    W_ROW: gl.constexpr = _w_row(words_ptr.dtype.element_ty)  # a row's elements per K tile
    ROW_ELEMENTS: gl.constexpr = ROW_TILES * W_ROW
    kt0 = 0  # the program's first K tile
    if K_SPLITS > 1:
        kt0 = call.split * _split_tiles(K_ALL, K_SPLITS)

    MMA_K: gl.constexpr = 16 if F16 else 32
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, BLOCK_M, MMA_K]
    )
    # Copy layouts: 16 bytes per thread; x: a 128-byte row piece per K tile.
    x_copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [NUM_WARPS, 1], [1, 0])
    w_copy: gl.constexpr = (
        x_copy if _folded(words_ptr.dtype.element_ty) else gl.BlockedLayout([1, 4], [8, 4], [NUM_WARPS, 1], [1, 0])
    )
    s_copy: gl.constexpr = gl.BlockedLayout([4], [32], [NUM_WARPS], [0])

    # Gathered x rows: the tile's, and the TAIL_ROWS rows after them.
    x_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0, BLOCK_M, x_copy, K_ROW) + kt0 * _TILE_K
    offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, x_copy))  # the copies' K mask
    xe_ptrs = x_ptrs  # unused unless TAIL_ROWS
    if TAIL_ROWS:
        xe_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0 + BLOCK_M, TAIL_ROWS, x_copy, K_ROW) + kt0 * _TILE_K

    # This expert's weight rows [pid_n * BLOCK_N, +BLOCK_N) of W^T.
    row0 = expert.to(gl.int64) * N + pid_n * BLOCK_N
    offs_wn = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, w_copy))
    offs_wc = gl.arange(0, W_ROW, layout=gl.SliceLayout(0, w_copy))
    # Words [row block, K tile, row, word]: one K tile of 64 rows is 4 KB in one piece (layout "fp8": 8 KB).
    w_rows = (row0 + offs_wn) // _ROW_BLOCK * (_ROW_BLOCK * ROW_ELEMENTS) + offs_wn % _ROW_BLOCK * W_ROW
    w_ptrs = words_ptr + w_rows[:, None] + offs_wc[None, :] + kt0 * (_ROW_BLOCK * W_ROW)
    offs_s = gl.arange(0, BLOCK_N, layout=s_copy)
    s_ptrs = scales_ptr + (expert.to(gl.int64) * ROW_TILES + kt0) * N + pid_n * BLOCK_N + offs_s

    # PARITY_RINGS: even K tiles in one ring, odd ones in another, and the loop unrolled by two, so that a tile's
    # copies and the reads of the landed tile touch different allocations: Triton's barrier analysis, which cannot
    # tell ring slots apart, then adds no second bar.sync per tile.
    RINGS: gl.constexpr = 2 if PARITY_RINGS else 1
    RING: gl.constexpr = NUM_STAGES // RINGS
    w_dtype: gl.constexpr = words_ptr.dtype.element_ty
    # BULK_W (Sm90Config.bulk_weights) on the fp8 layout: its weight tiles by TMA, each stage's on an mbarrier.
    BULK: gl.constexpr = BULK_W and _folded(w_dtype)
    SLOTS: gl.constexpr = SLOT_BUFFERS and FAST and PARITY_RINGS and OVERLAP_TILES == 4 and not TAIL_ROWS and RING == 2
    x_dtype: gl.constexpr = x_ptr.dtype.element_ty
    if SLOTS:  # each stage its own allocation (the chunks of four, 4 stages)
        rings = (
            _slot_ring(x_dtype, BLOCK_M, BLOCK_N, w_dtype, BULK),
            _slot_ring(x_dtype, BLOCK_M, BLOCK_N, w_dtype, BULK),
        )
    else:
        rings = (_ring(x_dtype, RING, BLOCK_M, TAIL_ROWS, BLOCK_N, w_dtype, BULK),)
        if PARITY_RINGS:
            rings = (rings[0], _ring(x_dtype, RING, BLOCK_M, TAIL_ROWS, BLOCK_N, w_dtype, BULK))
    if BULK:
        fence_async_shared()  # the barriers' init, before the copies that complete on them
        gl.thread_barrier()
    x16_smem = rings[0].x  # unused unless F16
    if F16:  # x of the tile in flight as fp16, two 64-wide halves (128-byte swizzled rows)
        x16_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
        x16_smem = gl.allocate_shared_memory(gl.float16, [2, BLOCK_M, 64], x16_nvmma)

    # K may end inside the last tile (K = 2880: 2 of its 4 blocks). That tile goes first, with only its blocks, and
    # the loop runs whole tiles. Step p (tile p - FIRST, or the last tile at step 0) lives in ring p % RINGS, slot
    # p // RINGS % RING.
    BLOCKS: gl.constexpr = _TILE_K // _MX_BLOCK
    LAST_BLOCKS: gl.constexpr = _k_steps(K)[1]
    FIRST: gl.constexpr = _k_steps(K)[2]
    WHOLE: gl.constexpr = K_TILES - FIRST
    # Fast, parity rings, overlap_tiles: pairs, or chunks of four (the table's; the loop carries no wgmma in flight)
    PAIRS: gl.constexpr = FAST and PARITY_RINGS and OVERLAP_TILES == 2 and not TAIL_ROWS
    CHUNKS: gl.constexpr = FAST and PARITY_RINGS and OVERLAP_TILES == 4 and not TAIL_ROWS
    OVERLAP: gl.constexpr = PAIRS or CHUNKS
    # Steps loaded ahead; with OVERLAP one fewer, so that a load never lands in the slot of a tile still in flight.
    # With 4 stages that is 2, even: each tile's copies go to the ring of the tile being read, and Triton's barrier
    # analysis adds a second bar.sync per tile (as without parity rings); from 6 stages one fewer again, odd: one.
    AHEAD: gl.constexpr = (NUM_STAGES - 2 - (NUM_STAGES >= 6)) if OVERLAP else NUM_STAGES - 1
    gl.static_assert(AHEAD >= 1, "the ring needs a tile loaded ahead (Sm90Config refuses fewer stages)")
    LAST: gl.constexpr = K_TILES - 1  # the last step
    gl.static_assert(not BULK or (CHUNKS and K_SPLITS == 1), "bulk weights run the chunks of four, one K split")
    src = _Sources(x_ptrs, offs_xk, w_ptrs, offs_wc, s_ptrs, offs_s, xe_ptrs)
    if BULK:  # the row of the program's first row block, K tile 0, in the descriptor's [rows, 128]
        src = _Sources(x_ptrs, offs_xk, w_ptrs, offs_wc, s_ptrs, offs_s, xe_ptrs, call.w_desc,
                       (row0 // _ROW_BLOCK * ROW_TILES * _ROW_BLOCK).to(gl.int32))  # fmt: skip
    for i in gl.static_range(AHEAD):  # step i < FIRST: the last tile; then whole tiles only, as in the loop
        if i < FIRST:
            _issue_loads(LAST, rings[i % RINGS].stage(i // RINGS), src, K, N, K_TILES, TAIL_ROWS, BULK, ROW_TILES)
        else:
            _issue_loads(i - FIRST, rings[i % RINGS].stage(i // RINGS), src, WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS,
                         BULK, ROW_TILES)  # fmt: skip

    acc = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)
    part = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)  # each block's partial sum
    spare = part  # the next block's partial, with TWO_PARTIALS; the second tile's, with OVERLAP
    if TWO_PARTIALS or OVERLAP:
        spare = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)
    acc_e, part_e = acc, part  # the extra tokens' sums, with TAIL_ROWS
    if TAIL_ROWS:
        extra_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, TAIL_ROWS, MMA_K]
        )
        acc_e = gl.zeros((BLOCK_N, TAIL_ROWS), dtype=gl.float32, layout=extra_layout)
        part_e = gl.zeros((BLOCK_N, TAIL_ROWS), dtype=gl.float32, layout=extra_layout)
    sums = _Sums(acc, part, spare, acc_e, part_e)
    if FIRST:  # step 0: the last tile's blocks
        cp.wait_group(AHEAD - 1)
        gl.thread_barrier()
        ahead = rings[AHEAD % RINGS].stage(AHEAD // RINGS % RING)
        _issue_loads(AHEAD - FIRST, ahead, src, WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS, BULK, ROW_TILES)
        if BULK:
            mbarrier.wait(rings[0].stage(0).bar, 0)
        sums = _mma_tile(sums, rings[0].stage(0), x16_smem, BLOCK_N, BLOCK_M, F16, ZERO_SCALE, LAST_BLOCKS,
                         TWO_PARTIALS, TAIL_ROWS, FAST)  # fmt: skip
    if PAIRS:  # fast, parity rings: tile B's wgmmas run while tile A's partial is promoted; drained per pair
        for p0 in range(FIRST, K_TILES - 1, 2):
            cp.wait_group(AHEAD - 1)
            gl.thread_barrier()  # tile A (p0) has landed; the slot loaded next was last read two tiles ago, drained
            _issue_loads(p0 + AHEAD - FIRST, rings[(FIRST + AHEAD) % 2].stage((p0 + AHEAD) // 2 % RING), src,
                         WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS)  # fmt: skip
            part_a, _, ref_a = _fast_chain(rings[FIRST % 2].stage(p0 // 2 % RING), sums.part, BLOCK_N)
            cp.wait_group(AHEAD - 1)
            gl.thread_barrier()  # tile B (p0 + 1) has landed
            _issue_loads(p0 + 1 + AHEAD - FIRST, rings[(FIRST + 1 + AHEAD) % 2].stage((p0 + 1 + AHEAD) // 2 % RING),
                         src, WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS)  # fmt: skip
            part_b, _, ref_b = _fast_chain(rings[(FIRST + 1) % 2].stage((p0 + 1) // 2 % RING), sums.spare, BLOCK_N)
            part_a = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(part_a,))  # B's in flight
            acc = _promote(part_a, ref_a[:, None], sums.acc)
            part_b = warpgroup_mma_wait(num_outstanding=0, deps=(part_b,))
            acc = _promote(part_b, ref_b[:, None], acc)
            sums = _Sums(acc, part_a, part_b, sums.acc_tail, sums.part_tail)
    if CHUNKS:  # fast, parity rings: chunks of OVERLAP_TILES steps, drained at their ends
        for p0 in range(FIRST, FIRST + WHOLE // OVERLAP_TILES * OVERLAP_TILES, OVERLAP_TILES):
            sums = _fast_chunk(sums, rings, src, p0, OVERLAP_TILES, FIRST, AHEAD, RING, WHOLE, N, BLOCK_N, TAIL_ROWS,
                               BULK, ROW_TILES, SLOTS)  # fmt: skip
        if WHOLE % OVERLAP_TILES:
            sums = _fast_chunk(sums, rings, src, FIRST + WHOLE // OVERLAP_TILES * OVERLAP_TILES,
                               WHOLE % OVERLAP_TILES, FIRST, AHEAD, RING, WHOLE, N, BLOCK_N, TAIL_ROWS, BULK,
                               ROW_TILES, SLOTS)  # fmt: skip
    if not OVERLAP:
        for p0 in range(FIRST, K_TILES - RINGS + 1, RINGS):
            for r in gl.static_range(RINGS):
                p = p0 + r  # in ring (r + FIRST) % RINGS
                cp.wait_group(AHEAD - 1)
                gl.thread_barrier()  # step p has landed (every thread's copies); every wgmma of step p - 1 is done
                ahead = rings[(r + FIRST + AHEAD) % RINGS].stage((p + AHEAD) // RINGS % RING)  # the other ring
                _issue_loads(p + AHEAD - FIRST, ahead, src, WHOLE * _TILE_K, N, WHOLE, TAIL_ROWS)  # whole tiles only
                landed = rings[(r + FIRST) % RINGS].stage(p // RINGS % RING)
                sums = _mma_tile(sums, landed, x16_smem, BLOCK_N, BLOCK_M, F16, ZERO_SCALE, BLOCKS, TWO_PARTIALS,
                                 TAIL_ROWS, FAST)  # fmt: skip
    if WHOLE % RINGS and not CHUNKS:  # parity rings and an odd number of whole tiles: the last step
        cp.wait_group(AHEAD - 1)
        gl.thread_barrier()
        sums = _mma_tile(sums, rings[LAST % RINGS].stage(LAST // RINGS % RING), x16_smem, BLOCK_N, BLOCK_M, F16,
                         ZERO_SCALE, BLOCKS, TWO_PARTIALS, TAIL_ROWS, FAST)  # fmt: skip
    cp.wait_group(0)
    if BULK:  # every copy has landed and been waited on: the barriers' memory may serve the epilogue
        gl.thread_barrier()
        for ring in gl.static_range(RINGS):
            for i in gl.static_range(RING):
                mbarrier.invalidate(rings[ring].stage(i).bar)

    acc = sums.acc
    ACC_SCALE: gl.constexpr = _FAST_ACC_SCALE if FAST else 1.0
    ACC_TIMES: gl.constexpr = 64.0 if not F16 and not FAST else 1.0  # the bit-spread encoding's 2 ** -6 (exact)
    if K_SPLITS > 1:  # the last of the tile's programs to finish adds the sums and runs the epilogue
        ptrs = _split_ptrs(acc, call, m0, K_SPLITS, WS_M)
        if _hand_in(acc, call, ptrs, K_SPLITS, WS_M):
            _store(_sum_splits(acc, call, ptrs, K_SPLITS, WS_M), call, row0, m0, N, ACC_TIMES, ACC_SCALE)
    else:
        _store(acc, call, row0, m0, N, ACC_TIMES, ACC_SCALE)
    if TAIL_ROWS:  # (the fp8 paths only)
        _store(sums.acc_tail, call, row0, m0 + BLOCK_M, N, ACC_TIMES, ACC_SCALE)


@gluon.jit
def _bmm1_sm90_kernel(
    x_ptr,  # fp8 [batch, K]
    words_ptr,  # int32 [E, N / 64, cdiv(K, 128), 64, 16] (layout "fp8": e4m3 [E, N / 64, cdiv(K, 128), 64, 128])
    scales_ptr,  # int32 [E, cdiv(K, 128), N]: 4 e8m0 each
    bias_ptr,  # fp32 [E, N]
    gather_ptr,  # int32 [tokens]
    slice_sizes_ptr,  # int32 [E]
    slice_offs_ptr,  # int32 [E + 1]
    schedule_ptr,  # int32 [max_blocks]: slice | pid_m << 16, -1 past the end
    x_scale_ptr,  # fp32 [1]
    out_scale_ptr,  # fp32 [1]
    out_ptr,  # fp8 [tokens, N/2]
    sums_ptr,  # fp32 [tiles, K_SPLITS, BLOCK_N, BLOCK_M] with K_SPLITS > 1 (else unused)
    arrivals_ptr,  # int32 [tiles], zero, with K_SPLITS > 1 (left zero)
    alpha,
    limit,
    w_desc,  # with BULK_W: TMA descriptor of the fp8 layout as [E * N * cdiv(K, 128), 128] bytes, 64-row boxes
    K: gl.constexpr,
    N: gl.constexpr,
    BLOCK_M: gl.constexpr,
    NUM_STAGES: gl.constexpr,
    TAIL_ROWS: gl.constexpr = 0,  # Sm90Config.tail_rows
    F16: gl.constexpr = False,  # fp16 wgmma (prepare_weights(f16=True)); fp8: bit-spread words, 2 ** -6 the values
    ZERO_SCALE: gl.constexpr = True,  # a block with nonzero codes has scale e8m0 0 (Sm90Weights.zero_scale)
    PARITY_RINGS: gl.constexpr = False,  # Sm90Config.parity_rings
    NARROW: gl.constexpr = 0,  # Sm90Config.narrow_last_tile, within what block_m allows (_narrowing)
    TWO_PARTIALS: gl.constexpr = False,  # Sm90Config.two_partials
    FAST: gl.constexpr = False,  # the fast mode (Sm90Weights.fast): block scales folded, one promotion per K tile
    OVERLAP_TILES: gl.constexpr = False,  # Sm90Config.overlap_tiles
    K_SPLITS: gl.constexpr = 1,  # Sm90Config.k_splits, as K's tiles allow (_k_splits)
    BULK_W: gl.constexpr = False,  # Sm90Config.bulk_weights, on weights in the fp8 layout
    SLOT_BUFFERS: gl.constexpr = False,  # Sm90Config.slot_buffers
    WIDE: gl.constexpr = False,  # Sm90Config.wide_tiles: every tile BLOCK_M + TAIL_ROWS rows wide
):
    GRID_N: gl.constexpr = N // (16 * gl.num_warps())
    split = gl.program_id(0) % K_SPLITS  # a tile's splits are consecutive programs
    pid = gl.program_id(0) // K_SPLITS
    entry = gl.load(schedule_ptr + pid // GRID_N)  # consecutive programs share the token block: x stays in cache
    if entry < 0:
        return
    pid_n = pid % GRID_N
    expert = entry & 0xFFFF
    pid_m = entry >> 16
    size = gl.load(slice_sizes_ptr + expert)
    start = gl.load(slice_offs_ptr + expert)

    call = _Call(x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, x_scale_ptr, out_scale_ptr, out_ptr,
                 alpha, limit, expert, pid_n, size, start, sums_ptr, arrivals_ptr, pid, split, w_desc)  # fmt: skip
    m0 = pid_m * (BLOCK_M + TAIL_ROWS if WIDE else BLOCK_M)  # the tile's first row in the slice
    rows_left = size - m0
    if NARROW >= 2 and rows_left <= BLOCK_M // 4:  # the slice's last rows fit a quarter of a tile
        _split_tile(call, m0, K, N, BLOCK_M // 4, NUM_STAGES, F16, ZERO_SCALE, PARITY_RINGS, TWO_PARTIALS,
                    FAST, OVERLAP_TILES, K_SPLITS, BLOCK_M, BULK_W, SLOT_BUFFERS)  # fmt: skip
    elif NARROW >= 1 and rows_left <= BLOCK_M // 2:  # half a tile
        _split_tile(call, m0, K, N, BLOCK_M // 2, NUM_STAGES, F16, ZERO_SCALE, PARITY_RINGS, TWO_PARTIALS,
                    FAST, OVERLAP_TILES, K_SPLITS, BLOCK_M, BULK_W, SLOT_BUFFERS)  # fmt: skip
    elif TAIL_ROWS > 0 and rows_left > BLOCK_M and (WIDE or rows_left <= BLOCK_M + TAIL_ROWS):  # rows past BLOCK_M
        # A wide tile (most tiles) takes the whole ring, paired as the config's; a slice's last tile with its tail
        # rows a ring one stage shallower, odd: unpaired.
        TAIL_STAGES: gl.constexpr = NUM_STAGES if WIDE else NUM_STAGES - 1
        TAIL_PARITY: gl.constexpr = PARITY_RINGS if WIDE else False
        _tile(call, m0, K, N, BLOCK_M, TAIL_ROWS, TAIL_STAGES, F16, ZERO_SCALE, TAIL_PARITY, TWO_PARTIALS, FAST,
              0)  # fmt: skip
    else:
        _split_tile(call, m0, K, N, BLOCK_M, NUM_STAGES, F16, ZERO_SCALE, PARITY_RINGS, TWO_PARTIALS,
                    FAST, OVERLAP_TILES, K_SPLITS, BLOCK_M, BULK_W, SLOT_BUFFERS)  # fmt: skip


@gluon.jit
def _split_tile(
    call: _Call, m0, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
    NUM_STAGES: gl.constexpr, F16: gl.constexpr, ZERO_SCALE: gl.constexpr, PARITY_RINGS: gl.constexpr,
    TWO_PARTIALS: gl.constexpr, FAST: gl.constexpr, OVERLAP_TILES: gl.constexpr, K_SPLITS: gl.constexpr,
    WS_M: gl.constexpr, BULK_W: gl.constexpr = False, SLOT_BUFFERS: gl.constexpr = False,
):  # fmt: skip
    """_tile (without tail rows) over the whole of K, or over split call.split's K tiles: every split but the last
    takes PER whole tiles, the last the rest (with the tile that K ends inside)."""
    if K_SPLITS == 1:
        _tile(call, m0, K, N, BLOCK_M, 0, NUM_STAGES, F16, ZERO_SCALE, PARITY_RINGS, TWO_PARTIALS, FAST,
              OVERLAP_TILES, BULK_W=BULK_W, SLOT_BUFFERS=SLOT_BUFFERS)  # fmt: skip
    else:
        PER: gl.constexpr = _split_tiles(K, K_SPLITS)
        if call.split < K_SPLITS - 1:
            _tile(call, m0, PER * _TILE_K, N, BLOCK_M, 0, NUM_STAGES, F16, ZERO_SCALE, PARITY_RINGS,
                  TWO_PARTIALS, FAST, OVERLAP_TILES, K, K_SPLITS, WS_M)  # fmt: skip
        else:
            _tile(call, m0, K - (K_SPLITS - 1) * PER * _TILE_K, N, BLOCK_M, 0, NUM_STAGES, F16, ZERO_SCALE,
                  PARITY_RINGS, TWO_PARTIALS, FAST, OVERLAP_TILES, K, K_SPLITS, WS_M)  # fmt: skip


@gluon.constexpr_function
def _split_tiles(K, splits):
    """K tiles of each split but the last (which takes the rest, at least one)."""
    return -(-_k_steps(K)[0] // splits)


@functools.cache  # on every launch's path: Triton's constexpr functions are slow to call from the host
def _k_splits(splits: int, k: int) -> int:
    """Splits a launch makes of K: at most `splits` (Sm90Config.k_splits), fewer where the last split would get no
    tile after the others' cdiv(tiles, splits) each (K of 2 tiles: 2 at most; 23 tiles: 12 at most)."""
    if splits == 1:
        return 1
    tiles = _k_steps(k)[0]
    while splits > 1 and (splits - 1) * _split_tiles(k, splits) >= tiles:
        splits -= 1
    return splits


def _narrowing(narrow: int, block_m: int) -> int:
    """Halvings of block_m a launch may make for a slice's last tile: at most `narrow`, down to 8 tokens."""
    return min(narrow, (block_m // 8).bit_length() - 1)


def kernel_constexprs(
    config: Sm90Config, tile: int, k: int, n: int, f16: bool, zero_scale: bool, fast: bool = False
) -> dict:
    """The kernel's compile-time arguments for launch `tile` of `config` (0, or 1 for split_at's large tiles) on
    weights of that shape and path: what `launch` passes, and what the CPU tests compile."""
    block_m, num_stages = config.tiles[tile]
    return {
        "K": k,
        "N": n,
        "BLOCK_M": block_m,
        "NUM_STAGES": num_stages,
        "TAIL_ROWS": config.tail_rows,
        "F16": f16,
        "ZERO_SCALE": zero_scale,
        "PARITY_RINGS": bool(config.parity_rings),
        "NARROW": _narrowing(config.narrow_last_tile, block_m),
        "TWO_PARTIALS": bool(config.two_partials),
        "FAST": fast,
        "OVERLAP_TILES": int(config.overlap_tiles),
        "K_SPLITS": _k_splits(config.k_splits, k),
        "BULK_W": bool(config.bulk_weights),
        "SLOT_BUFFERS": bool(config.slot_buffers),
        "WIDE": bool(config.wide_tiles),
    }


def prepare_for(w, precision: str | None = None, layout: str = "mxfp4") -> Sm90Weights:
    """bmm1.prepare_weights on Hopper: `precision` None takes DEFAULT_PRECISION where the weights' block scales fold
    into e4m3 (every row and K tile within FAST_WINDOW binades), else "accurate"; a precision asked for is kept or
    refused by name, as is a `layout` that precision has not."""
    if precision is not None or layout != "mxfp4":
        return prepare_weights(w, precision=precision or DEFAULT_PRECISION, layout=layout)
    try:
        return prepare_weights(w, precision=DEFAULT_PRECISION)
    except FoldError:
        return prepare_weights(w, precision="accurate")


# fp32 sums a k_splits launch may allocate: decode's 4 rows at N 5760 take 5.6 MiB; 8 splits at uniform-bs512 136 MiB.
K_SPLITS_SCRATCH = 256 << 20


@functools.cache
def _multiprocessors(device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


BULK_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)  # the ring's, x's too


def _bulk_descriptor(folded: torch.Tensor) -> TensorDescriptor:
    """The fp8 layout's bytes [E, N / 64, K tiles, 64, 128] as TMA's [rows, 128], one 64-row K tile a box."""
    return TensorDescriptor.from_tensor(folded.view(-1, TILE_K), [ROW_BLOCK, TILE_K], BULK_LAYOUT)


def launch(x, w: Sm90Weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config=None):
    """Host launcher; arguments already checked by moe_gather.bmm1. One launch per schedule (two with split_at or
    hot_at)."""
    config = config or select_config(ragged, w.precision, w.layout)
    if w.fast and config.two_partials:
        raise ValueError(f"config: the fast precision runs one partial per K tile, got two_partials in {config}")
    if config.warp_specialized and not w.fast:
        raise ValueError(f"config: warp_specialized runs the fast precision only, got {w.precision} weights")
    config = runs_as(config, w)
    if w.n % config.block_n:
        raise ValueError(f"weights: N = {w.n} must be a multiple of {config.block_n}")
    if config.decode_rows:
        from ._sm90_decode import launch_decode  # it builds on this module

        return launch_decode(x, w, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config)
    if config.persistent_fp8 and config.fp8_layout and w.folded is not None:  # (packed_words_config drops it)
        from ._sm90_persistent import launch_persistent  # it builds on this module

        return launch_persistent(x, w.folded.view(torch.float8_e4m3fn), w.scales.view(torch.int32), bias, gather_indx,
                                 ragged, x_scale, out_scale, alpha, limit, out, config, w.k, w.n)  # fmt: skip
    if config.hot_at:  # the hot slices on the weights' table's large entry, in a launch of their own
        hot, cold, hot_schedule = hot_split(config, w, ragged)
        args = (x, w, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out)
        # The hot slices first, on a side stream, so that the cold tiles fill the multiprocessors its tail leaves;
        # neither launch splits K (hot_at refuses k_splits, the large entries run none), so they share no counters.
        with _side_by_side(gather_indx.is_cuda) as beside:
            with beside:
                _run_schedules(*args, hot, (hot_schedule,))
            _run_schedules(*args, config, (cold,))
        return out
    width, extra = _entry_rows(config)
    if config.split_at:
        schedules = ragged.bucket_schedules(config.split_at, config.block_m, config.large_block_m)
    elif config.widest_first:
        schedules = (ragged.widest_first(width, extra),)
    else:
        schedules = (ragged.schedule(width, extra),)
    return _run_schedules(x, w, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config, schedules)


def _entry_rows(config) -> tuple[int, int]:
    """A schedule entry's rows: block_m (a slice's last tile up to tail_rows more), or with wide_tiles both always."""
    return (config.block_m + config.tail_rows, 0) if config.wide_tiles else (config.block_m, config.tail_rows)


def hot_split(config, w: Sm90Weights, ragged):
    """hot_at's two launches (config as runs_as runs it): the large entry of the weights' table, and the schedules
    of the slices of at most config.hot_at rows on config's tiles and of the others on that entry's."""
    hot = runs_as(table(w.precision, w.layout)[-1][1], w)
    if w.n % hot.block_n:
        raise ValueError(f"weights: N = {w.n} must be a multiple of {hot.block_n} (hot_at's large entry)")
    width, extra = _entry_rows(config)
    return hot, *ragged.bucket_schedules(config.hot_at, width, hot.block_m, extra)


@contextlib.contextmanager
def _side_by_side(on_gpu: bool):
    """Yields a context whose block runs on a side stream that waits on the caller's stream (Triton's: the current
    device's); on exit, also where a launch raises, the caller's stream waits on it. Off the GPU (the launches the
    tests record) the blocks run in order."""
    if not on_gpu:
        yield contextlib.nullcontext()
        return
    main = torch.cuda.current_stream()
    side = _side_stream(main)
    side.wait_stream(main)
    try:
        yield torch.cuda.stream(side)
    finally:
        main.wait_stream(side)


@functools.lru_cache(maxsize=64)
def _side_stream(main: torch.cuda.Stream) -> torch.cuda.Stream:
    """hot_at's side stream for calls on `main` (one per caller's stream: callers on other streams stay apart)."""
    return torch.cuda.Stream(main.device)


def _run_schedules(x, w, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config, schedules):
    """One launch of `config` per schedule (split_at's second: its large tiles)."""
    # the kernel takes its path from the words' dtype: e4m3 bytes (layout "fp8"), or packed codes
    folded = config.fp8_layout and w.folded is not None
    words = w.folded.view(torch.float8_e4m3fn) if folded else w.words.view(torch.int32)
    w_desc = _bulk_descriptor(words) if folded and config.bulk_weights else None
    for tile, schedule in enumerate(schedules):
        grid_tiles = schedule.numel() * (w.n // config.block_n)  # (schedule entry, column block) tiles or work items
        if grid_tiles and config.warp_specialized:
            from ._sm90_ws import bmm1_sm90_ws_kernel, launch_options, ws_constexprs  # it builds on this module

            grid = min(grid_tiles, _multiprocessors(gather_indx.device)) if config.persistent else grid_tiles
            bmm1_sm90_ws_kernel[(grid,)](
                x, words, w.scales.view(torch.int32), bias, gather_indx, ragged.slice_sizes,
                ragged.slice_offs, schedule, x_scale, out_scale, out, float(alpha), float(limit), grid_tiles, w_desc,
                **ws_constexprs(config, w.k, w.n), **launch_options(config),
            )  # fmt: skip
        elif grid_tiles:
            constexprs = kernel_constexprs(config, tile, w.k, w.n, w.f16, w.zero_scale, w.fast)
            splits = constexprs["K_SPLITS"]
            sums, arrivals = bias, schedule  # unused with one split
            if splits > 1:
                count = grid_tiles * splits * config.block_n * config.block_m
                if count * 4 > K_SPLITS_SCRATCH:
                    raise ValueError(
                        f"config: k_splits={splits} at block_m {config.block_m} would keep {count * 4 / 2**20:.0f} MiB"
                        f" of sums for {grid_tiles} tiles, over {K_SPLITS_SCRATCH >> 20} MiB: it is for decode"
                    )
                sums = ragged.split_sums(count)
                arrivals = ragged.arrivals(grid_tiles)
            _bmm1_sm90_kernel[(grid_tiles * splits,)](
                x, words, w.scales.view(torch.int32), bias, gather_indx, ragged.slice_sizes,
                ragged.slice_offs, schedule, x_scale, out_scale, out, sums, arrivals, float(alpha), float(limit),
                w_desc, **constexprs, num_warps=config.num_warps, maxnreg=config.maxnreg,
            )  # fmt: skip
    return out
