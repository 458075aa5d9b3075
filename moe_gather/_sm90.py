"""Hopper (sm_90a) BMM1: a Gluon kernel on fp8 wgmma with the weights in registers, MXFP4 block scales exact in fp32.

One program computes one (token block, weight-row block) tile of one expert, swap-AB: the weights are the wgmma's
64-row side (each warpgroup owns 64 rows of W^T) and the expert's few gathered tokens its N side (block_m = 8..128),
so small slices waste no MMA rows; a slice's last tile narrows to the width its rows need (a half or a quarter of
block_m, one launch), or takes up to `extra` rows past block_m on a second wgmma per block. A ring of shared-memory
stages, filled with cp.async, holds for each 128-wide K tile the gathered x rows, the packed weights and their scales.
Each thread reads its own packed words and turns them into fp8 in registers, directly in the layout of wgmma's
register A operand (e2m1 values are e4m3 values times 2 ** -6 once their bits sit where e4m3 keeps them: 5 logic ops
per 32-bit word of 8; `prepare_weights` places the bits and orders the words so that a thread's word holds exactly the
8 values of its A fragment); the weights never go back to shared memory.

The tile that K ends inside (K = 2880: 2 of its 4 blocks) runs first, with only its blocks, while the ring fills.
Each 32-wide K block is its own wgmma into a fresh partial sum: Hopper's fp8 wgmma adds with fewer bits than fp32,
and one e8m0 scale covers exactly those 32 products. While block j's wgmma runs, block j+1's weights are converted;
then the partial is promoted into the fp32 accumulator times its block's 2 ** (s - 127), exactly, whatever the spread
of the scales. Other programs on the multiprocessor keep the tensor cores busy meanwhile. x_scale,
bias, SwiGLU, 1/out_scale and the fp8 rounding follow in the epilogue.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from ._epilogue import swiglu_store
from ._table import choose
from .mxfp4 import MX_BLOCK, ExpertShape, MXFP4Weights, decode_e8m0, refuse_nan_scales, unpack_codes

# e4m3 bytes of the e2m1 magnitudes 0, .5, 1, 1.5 | 2, 3, 4, 6: byte-permute tables, byte i = code i.
E4M3_OF_E2M1_LO = 0x3C383000
E4M3_OF_E2M1_HI = 0x4C484440
TILE_K = 128  # K per pipeline stage: 4 e8m0 blocks, one 128-byte swizzled row of fp8 x
ROW_BLOCK = 64  # weight rows of one warpgroup: the words are stored [row block, K tile, row, 64 bytes]
CHUNK_K = 64  # K per group of 8 packed words in the weight layout (prepare_weights)
_MX_BLOCK = tl.constexpr(MX_BLOCK)  # Triton reads only constexpr globals
_TILE_K = tl.constexpr(TILE_K)
_ROW_BLOCK = tl.constexpr(ROW_BLOCK)


@dataclass(frozen=True)
class Sm90Weights(ExpertShape):
    """MXFP4 weights in the sm90 kernel's layout (prepare_weights)."""

    words: torch.Tensor  # uint8 [E, N / 64, cdiv(K, 128), 64, 64]: codes re-packed, tile-major, zeros past K
    scales: torch.Tensor  # uint8 [E, cdiv(K, 128), N, 4]: e8m0 per K tile, then row, then block; zero past K
    k: int
    f16: bool = False  # the fp16 wgmma path, for rows whose block scales spread too widely for fp8 (prepare_weights)
    zero_scale: bool = True  # a block with nonzero codes has scale e8m0 0 (2 ** -127): one more op per scale

    _leading = "scales"

    @property
    def n(self) -> int:
        return self.scales.shape[2]

    @property
    def encoding(self) -> str:
        """For reports: "f16" or "spread"."""
        return "f16" if self.f16 else "spread"


F16_SPREAD = 16  # binades between a row's largest and smallest nonzero block scale above which fp16 wgmma is used
F16_MAX_BLOCK_M = 64  # the fp16 path's largest tile (block_m 128 spills: two k16 partials per block)


def prepare_weights(w: MXFP4Weights, f16: bool | None = None) -> Sm90Weights:
    """Re-pack codes and scales for the kernel.

    Words: K = 64c + 32b + 16h + 4q + i (chunk c, block parity b, half h, quad q, byte i). Chunk c of a row is 8
    32-bit words, word 2q + b holding the 8 codes (h, i) of quad q: exactly the fp8 values that the thread of lane
    quad q holds in wgmma's A fragment for block 2c + b (K = 4q + i and 16 + 4q + i of the block). Within a word,
    magnitudes (3 bits) are byte-permute selectors, half h's byte i in nibble 4h + i; signs sit where one shift lands
    them on the fp8 sign bits: half 0's sign of byte i at bit 8i + 3 (shifted left by 4), half 1's at bit 8i + 7.
    The words are stored tile-major, [E, row block of 64, K tile of 128, row, 64 bytes], K padded with zeros to whole
    tiles: a stage's copy of a row block is one 4 KB piece, one DRAM stream instead of 64 of 64 bytes.
    Scales: [E, K tile, N, block of the tile], so that one K tile's scales for a block of rows are contiguous.
    `zero_scale`: whether a block with a nonzero code has scale e8m0 0 (2 ** -127, which the kernel then builds as
    an fp32 subnormal, one instruction more per scale); a block of zeros gives zeros at any scale, so the kernel reads
    e8m0 0 as 0 when no such block exists (and quantizers write all-zero blocks with scale 0).

    The fp8 path's bit-spread encoding (faster than magnitudes as selectors of a byte-permute table, which the fp16
    path keeps): the codes' bits sit where
    an e4m3 byte has them: code (s, e1, e0, m) as the byte s << 7 | e1 << 4 | e0 << 3 | m << 2 is the e4m3 value of
    the e2m1 value times 2 ** -6, exactly (e2m1's exponent 0 lands on e4m3's subnormals). Half 0's byte i holds bits
    7, 4, 3, 2 of byte i (one AND yields its fp8 word); half 1 sits in bits 5, 6, 1, 0 (s, e1, e0, m), which two
    shifts and two logic ops move onto 7, 4, 3, 2. Five instructions per 8 values instead of eight; the kernel
    multiplies the accumulator by 2 ** 6 at the end.

    `f16` (default: whether some row's nonzero block scales span more than F16_SPREAD binades): the kernel runs fp16
    wgmma instead (weights and x are exact in fp16; it accumulates each 32-block in fp32 where fp8 wgmma keeps ~13
    bits, which outputs born of cancellation between very large blocks cannot afford). Its words hold the values of
    the fp16 A fragment instead: K = 16h + 8j + 2q + l for byte i = 2j + l of half h.
    """
    if f16 is None:
        nonzero = torch.where(w.scales > 0, w.scales, 255).amin(-1).clamp(max=254).to(torch.int32)
        f16 = bool((w.scales.amax(-1).to(torch.int32) - nonzero > F16_SPREAD).any())
    refuse_nan_scales(w)
    e, n, k = w.num_experts, w.codes.shape[1], w.k
    if n % ROW_BLOCK:
        raise ValueError(f"prepare_weights: the sm90 layout needs N a multiple of {ROW_BLOCK}, got {n}")
    tiles = triton.cdiv(k, TILE_K)
    chunks = tiles * (TILE_K // CHUNK_K)
    words = torch.empty((e, n, chunks * CHUNK_K // 2), dtype=torch.uint8, device=w.codes.device)
    i = torch.arange(4, device=w.codes.device)
    for x in range(e):  # one expert at a time bounds the int64 temporaries
        c = torch.nn.functional.pad(unpack_codes(w.codes[x]).to(torch.int64), (0, chunks * CHUNK_K - k))
        if f16:  # K = 64 chunk + 32 b + 16 h + 8 j + 2 q + l
            c = c.reshape(n, chunks, 2, 2, 2, 4, 2).permute(0, 1, 5, 2, 3, 4, 6).reshape(n, chunks, 4, 2, 2, 4)
        else:  # K = 64 chunk + 32 b + 16 h + 4 q + i
            c = c.reshape(n, chunks, 2, 2, 4, 4).permute(0, 1, 4, 2, 3, 5)  # [N, chunk, q, b, h, i]
        if not f16:  # the bit-spread encoding
            bits = [(c >> b) & 1 for b in range(4)]  # m, e0, e1, s
            half0 = sum(bit[..., 0, :] << p for bit, p in zip(bits, (2, 3, 4, 7), strict=True))
            half1 = sum(bit[..., 1, :] << p for bit, p in zip(bits, (0, 1, 6, 5), strict=True))
            word = ((half0 + half1) << (8 * i)).sum(-1).reshape(n, -1)
        else:  # byte-permute table selectors (below)
            mag, sign = c & 7, c >> 3
            word = (
                (mag[..., 0, :] << (4 * i)).sum(-1)
                + (mag[..., 1, :] << (16 + 4 * i)).sum(-1)
                + (sign[..., 0, :] << (8 * i + 3)).sum(-1)
                + (sign[..., 1, :] << (8 * i + 7)).sum(-1)
            ).reshape(n, -1)  # [N, K/8] in kernel order, < 2**32
        words[x] = torch.stack([(word >> (8 * byte)) & 0xFF for byte in range(4)], dim=-1).reshape(n, -1)
    scales = torch.nn.functional.pad(w.scales, (0, 4 * tiles - w.scales.shape[-1]))
    scales = scales.reshape(e, n, tiles, 4).transpose(1, 2).contiguous()
    nonzero_blocks = ((w.codes & 0x77) != 0).reshape(e, n, -1, MX_BLOCK // 2).any(-1)  # a magnitude not 0
    zero_scale = bool(((w.scales == 0) & nonzero_blocks).any())  # quantizers give all-zero blocks e8m0 0
    words = words.reshape(e, n // ROW_BLOCK, ROW_BLOCK, tiles, TILE_K // 2).transpose(2, 3).contiguous()
    return Sm90Weights(words, scales, k, f16, zero_scale)


def row_major_words(w: Sm90Weights) -> torch.Tensor:
    """The words row-major, [E, N, cdiv(K, 128) * 64] (K order within a row as in the kernel)."""
    e, blocks, tiles, rows, width = w.words.shape
    return w.words.transpose(2, 3).reshape(e, blocks * rows, tiles * width)


def emulate_dequant(w: Sm90Weights) -> torch.Tensor:
    """What the kernel computes from Sm90Weights, in torch: float64 [E, K, N] (tests compare it to the exact
    dequantization). Bit for bit the kernel's table, permutes and sign placement, then the block's power of two."""
    e, n = w.num_experts, w.n
    words = row_major_words(w).contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # [E, N, K/8]
    lut = E4M3_OF_E2M1_LO | (E4M3_OF_E2M1_HI << 32)
    halves = []
    if not w.f16:  # the bit-spread encoding
        moved = (((words << 2) & 0x8C8C8C8C) | ((words >> 2) & 0x10101010)) & 0xFFFFFFFF
        for word in (words & 0x9C9C9C9C, moved):
            halves.append(torch.stack([(word >> (8 * i)) & 0xFF for i in range(4)], dim=-1))
    for half_shift, sign_shift in ((0, 4), (16, 0)) if w.f16 else ():  # selectors at bits 0..15 | 16..31
        sel = torch.stack([(words >> (half_shift + 4 * i)) & 7 for i in range(4)], dim=-1)
        sign = torch.stack([((words << sign_shift) >> (8 * i + 7)) & 1 for i in range(4)], dim=-1)
        halves.append(((lut >> (8 * sel)) & 0xFF) | (sign << 7))
    fp8 = torch.stack(halves, dim=-2)  # [E, N, K/8, h, i]
    if w.f16:  # [chunk, q, b, h, j, l] -> K = 64 chunk + 32 b + 16 h + 8 j + 2 q + l
        fp8 = fp8.reshape(e, n, -1, 4, 2, 2, 2, 2).permute(0, 1, 2, 4, 5, 6, 3, 7)
    else:  # [chunk, q, b, h, i] -> K = 64 chunk + 32 b + 16 h + 4 q + i
        fp8 = fp8.reshape(e, n, -1, 4, 2, 2, 4).permute(0, 1, 2, 4, 5, 3, 6)
    fp8 = fp8.reshape(e, n, -1)[..., : w.k]
    values = fp8.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float64) * (1.0 if w.f16 else 2.0**6)
    s = w.scales.transpose(1, 2).reshape(e, n, -1)[..., : w.k // MX_BLOCK]
    return (values * decode_e8m0(s, torch.float64).repeat_interleave(MX_BLOCK, dim=-1)).transpose(1, 2)


@dataclass(frozen=True)
class Sm90Config:
    block_m: int  # tokens per tile: the wgmma N side (8..256)
    num_buffers: int  # pipeline stages; num_buffers - 1 K tiles are loaded ahead
    num_warps: int  # 4 or 8: one warpgroup per 64 weight rows
    maxnreg: int | None = None  # register cap per thread: more programs per multiprocessor
    # Even and odd K tiles in two sets of buffers, the loop unrolled by two: one bar.sync per tile instead of two (the
    # kernel's PAIRS). Unrolled, ptxas keeps more of two tiles live: the block_m 32 entries need an 80-register cap
    # for it (98 uncapped); block_m 64 on one warpgroup would lose a program a multiprocessor (162 registers), on two
    # it keeps its 2 (124 with extra rows).
    pairs: bool = False
    # A slice's last tile at block_m / 2 (narrow 1) or block_m / 4 (2) tokens when its rows fit: one launch, the
    # wgmma, promotion and x copies of the width the rows need (the kernel holds a K loop for each width). At most:
    # a launch's tile narrows down to 8 tokens (wgmma's smallest N), so a forced smaller block_m keeps working.
    narrow: int = 0
    # The grid's tiles ordered by the rows they hold, most first (RaggedMetadata.widest_first): the slices' narrowed
    # last tiles run last. False: slice by slice.
    widest_first: bool = False
    # Two partial sums per warpgroup: block j + 1's wgmma runs while block j's partial is promoted (32 registers more a
    # thread at block_m 64). Without, each warp waits on its wgmma before promoting.
    overlap: bool = False
    # Skewed routing (one hot expert, many light ones): slices of more than split_at rows go to a second launch
    # tiled by large_block_m, so that a hot expert's weights are not converted once per small tile. 0: one launch.
    split_at: int = 0
    large_block_m: int = 64
    large_num_buffers: int = 4
    # Rows past block_m that a slice's last tile takes instead of a tile of their own (0, or a power of two from 16
    # up to block_m / 2): a second wgmma per block, of `extra` tokens, on the same converted weights, with a ring one
    # stage shallower (so that its x rows fit the same shared memory; with pairs, that tile runs unpaired). A slice
    # of 65-80 rows at block_m 64 converts its weights once instead of twice.
    extra: int = 0

    def __post_init__(self):
        if self.pairs and (self.num_buffers % 2 or self.split_at):
            raise ValueError(f"Sm90Config: pairs needs an even num_buffers and no split_at, got {self}")
        if self.widest_first and self.split_at:
            raise ValueError(f"Sm90Config: widest_first orders one schedule, not split_at's two, got {self}")
        if self.narrow not in (0, 1, 2):
            raise ValueError(f"Sm90Config: narrow is 0, 1 or 2 halvings of block_m, got {self}")
        if self.extra and (
            self.extra & (self.extra - 1) or not 16 <= self.extra <= self.block_m // 2 or self.overlap or self.split_at
        ):
            raise ValueError(
                f"Sm90Config: extra is 0 or a power of two from 16 to block_m / 2, without overlap or split_at,"
                f" got {self}"
            )

    @property
    def block_n(self) -> int:  # weight rows per tile
        return 16 * self.num_warps

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        """(block_m, num_buffers) of each launch: the small tiles' and, with split_at, the large ones'."""
        small = (self.block_m, self.num_buffers)
        return (small, (self.large_block_m, self.large_num_buffers)) if self.split_at else (small,)


# Rows per local slice of the call (select_config) up to which an entry is chosen; first match wins. Chosen by sweeps on
# the H200, sustained timing (docs/sm90.md says why each entry wins, docs/sm90-tried.md what lost).
CONFIGS = (
    # Weight-streaming: twice the programs on one warpgroup, the slices' narrowed last tiles in the last wave.
    (24, Sm90Config(block_m=32, num_buffers=4, num_warps=4, maxnreg=80, pairs=True, narrow=2, widest_first=True)),
    # Two warpgroups share each x tile; slices of 33-48 rows convert their weights once (extra).
    (40, Sm90Config(block_m=32, num_buffers=4, num_warps=8, maxnreg=80, pairs=True, narrow=2, extra=16)),
    # Two programs of 8 warps per multiprocessor at 124 registers; slices of 65-80 rows in one tile.
    (192, Sm90Config(block_m=64, num_buffers=4, num_warps=8, pairs=True, narrow=2, extra=16)),
    # Each converted weight serves 128 tokens; the second partial sum hides the wgmma's latency.
    (1 << 30, Sm90Config(block_m=128, num_buffers=4, num_warps=8, narrow=2, overlap=True)),
)


FORCE_ENV = "MOE_GATHER_SM90_FORCE"  # e.g. "block_m=16,num_warps=8": overrides fields of every choice (tests, sweeps)


def select_config(ragged) -> Sm90Config:
    """The table's config for the rows per local slice of this call (RaggedMetadata.local_slice_size)."""
    return choose(CONFIGS, ragged.local_slice_size, FORCE_ENV, "sm90")


def f16_config(config: Sm90Config) -> Sm90Config:
    """What the fp16 path runs for `config`: at most F16_MAX_BLOCK_M tokens per tile, no register cap (its block_m 64
    tile needs 142 registers; capped at 128 it spills)."""
    if config.block_m > F16_MAX_BLOCK_M:
        config = replace(config, block_m=F16_MAX_BLOCK_M, num_buffers=config.large_num_buffers)
    return replace(config, maxnreg=None, extra=0)


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
        values = gl.inline_asm_elementwise(
            asm="mov.b32 $0, $1;", constraints="=r,r,r,r,r", args=[as_elements], dtype=gl.float8e4nv, is_pure=True,
            pack=4,
        )  # fmt: skip
    else:
        values = gl.inline_asm_elementwise(
            asm="mov.b32 $0, $1;", constraints="=r,r,r", args=[as_elements], dtype=gl.float16, is_pure=True, pack=2
        )  # the word, read as its elements
    return gl.convert_layout(values.reshape([BLOCK_N, 8 * PER_WORD]), layout)


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


@gluon.jit
def _ring(x_dtype: gl.constexpr, RING: gl.constexpr, BLOCK_M: gl.constexpr, EXTRA: gl.constexpr,
          BLOCK_N: gl.constexpr):  # fmt: skip
    """The buffers of RING pipeline stages: gathered x rows (128-byte swizzled, wgmma's B), packed words, scales,
    and the EXTRA tokens' x rows (the first x buffers again where EXTRA is 0: never touched)."""
    x_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    plain2: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    x = gl.allocate_shared_memory(x_dtype, [RING, BLOCK_M, _TILE_K], x_nvmma)
    extra = x
    if EXTRA:
        extra = gl.allocate_shared_memory(x_dtype, [RING, EXTRA, _TILE_K], x_nvmma)
    return (
        x,
        gl.allocate_shared_memory(gl.int32, [RING, BLOCK_N, _TILE_K // 8], plain2),
        gl.allocate_shared_memory(gl.int32, [RING, BLOCK_N], gl.SwizzledSharedLayout(1, 1, 1, [0])),
        extra,
    )


@gluon.jit
def _stage(ring, i):
    """Slot i of a ring (its x, words, scales and extra x buffers): one pipeline stage's buffers."""
    return ring[0].index(i), ring[1].index(i), ring[2].index(i), ring[3].index(i)


@gluon.jit
def _issue_loads(
    tile, stage, x_ptrs, offs_xk, w_ptrs, offs_wc, s_ptrs, offs_s, xe_ptrs, K: gl.constexpr, N: gl.constexpr,
    K_TILES: gl.constexpr, EXTRA: gl.constexpr,
):  # fmt: skip
    """cp.async of K tile `tile` (x rows, packed words, scales) into `stage`; x zero-filled from K on (the words and
    scales hold zeros there), nothing from tile K_TILES on. The loop passes the end of the whole tiles as K and
    K_TILES, so that its copies past them (the tile that K ends inside was step 0's) move nothing."""
    x_dst, w_dst, s_dst, xe_dst = stage
    k0 = tile * _TILE_K
    cp.async_copy_global_to_shared(x_dst, x_ptrs + k0, mask=(offs_xk < K - k0)[None, :])
    if EXTRA:
        cp.async_copy_global_to_shared(xe_dst, xe_ptrs + k0, mask=(offs_xk < K - k0)[None, :])
    w_tile: gl.constexpr = _ROW_BLOCK * _TILE_K // 8  # words of one K tile of a row block
    in_w = (offs_wc >= 0) & (tile < K_TILES)
    cp.async_copy_global_to_shared(w_dst, w_ptrs + tile * w_tile, mask=in_w[None, :])
    cp.async_copy_global_to_shared(s_dst, s_ptrs + tile * N, mask=(offs_s >= 0) & (tile < K_TILES))
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


@gluon.jit
def _mma_tile(
    sums, stage, x16_smem, BLOCK_N: gl.constexpr, BLOCK_M: gl.constexpr, F16: gl.constexpr,
    ZERO_SCALE: gl.constexpr, BLOCKS: gl.constexpr, OVERLAP: gl.constexpr, EXTRA: gl.constexpr,
):  # fmt: skip
    """One landed K tile (`stage`): its first BLOCKS blocks' weights converted (4; fewer in the tile that K ends
    inside), one wgmma each, each partial promoted into acc. The operand layouts follow from the accumulator's.
    `sums`: (acc, part, spare, acc_e, part_e). OVERLAP: block j + 1's wgmma writes `spare` while block j's partial
    is promoted (Sm90Config.overlap). EXTRA: a second wgmma per block on the same weights, for the extra tokens."""
    acc, part, spare, acc_e, part_e = sums
    acc_layout: gl.constexpr = acc.type.layout
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=4)
    a16_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    words_layout: gl.constexpr = _words_layout(BLOCK_N, gl.num_warps())
    rows_layout: gl.constexpr = gl.SliceLayout(1, acc_layout)  # per weight row, as the accumulator holds them
    e_rows: gl.constexpr = gl.SliceLayout(1, acc_e.type.layout)  # EXTRA's: the same rows per thread, no data moves
    x_tile, w_tile, s_tile, xe_tile = stage
    words = w_tile.reshape([BLOCK_N, 2, 4, 2]).load(words_layout)  # [row, chunk, quad, parity]
    scale_words = s_tile.load(rows_layout)
    even, odd = gl.split(words)  # blocks 0, 2 | 1, 3 as [row, chunk, quad]
    block0, block2 = gl.split(even.permute((0, 2, 1)))
    block1, block3 = gl.split(odd.permute((0, 2, 1)))
    blocks = (block0, block1, block2, block3)
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
        a = _a_operand(block0, BLOCK_N, a_layout)
        part = warpgroup_mma(a, _x_block(x_tile, 0), part, use_acc=False, is_async=True)
        if EXTRA:
            part_e = warpgroup_mma(a, _x_block(xe_tile, 0), part_e, use_acc=False, is_async=True)
        for j in gl.static_range(BLOCKS):
            if j + 1 < BLOCKS:
                a = _a_operand(blocks[j + 1], BLOCK_N, a_layout)  # while the wgmma runs
            scale_rows = _block_scales(scale_words, j, ZERO_SCALE)
            scale = scale_rows[:, None]
            if OVERLAP and j + 1 < BLOCKS:
                spare = warpgroup_mma(a, _x_block(x_tile, j + 1), spare, use_acc=False, is_async=True)
                part = warpgroup_mma_wait(num_outstanding=1, deps=(part,))  # block j's done, j + 1's in flight
                acc = _promote(part, scale, acc)
                part, spare = spare, part
            else:
                # Promote once the wgmma is done: without a spare partial, reading its registers while the next
                # wgmma (which writes them) is in flight would make ptxas serialize every wgmma.
                if EXTRA:
                    part, part_e = warpgroup_mma_wait(num_outstanding=0, deps=(part, part_e))
                    acc_e = _promote(part_e, gl.convert_layout(scale_rows, e_rows)[:, None], acc_e)
                else:
                    part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
                acc = _promote(part, scale, acc)
                if j + 1 < BLOCKS:
                    part = warpgroup_mma(a, _x_block(x_tile, j + 1), part, use_acc=False, is_async=True)
                    if EXTRA:
                        part_e = warpgroup_mma(a, _x_block(xe_tile, j + 1), part_e, use_acc=False, is_async=True)
    return acc, part, spare, acc_e, part_e


@gluon.jit
def _tile(
    call, m0, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, EXTRA: gl.constexpr,
    NUM_BUFFERS: gl.constexpr, F16: gl.constexpr, ZERO_SCALE: gl.constexpr, PAIRS: gl.constexpr,
    OVERLAP: gl.constexpr,
):  # fmt: skip
    """One program's tile: tokens [m0, m0 + BLOCK_M + EXTRA) of the expert's slice, weight rows of column block
    pid_n; the K loop and the epilogue. `call`: the kernel's pointers and scalars, and the program's slice. EXTRA
    tokens past BLOCK_M (0, or a power of two) get a wgmma of their own on the same converted weights."""
    x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, x_scale_ptr, out_scale_ptr, out_ptr = call[0]
    alpha, limit, expert, pid_n, size, start = call[1]
    NUM_WARPS: gl.constexpr = gl.num_warps()
    BLOCK_N: gl.constexpr = 16 * NUM_WARPS
    K_TILES: gl.constexpr = (K + _TILE_K - 1) // _TILE_K
    ROW_WORDS: gl.constexpr = K_TILES * _TILE_K // 8

    MMA_K: gl.constexpr = 16 if F16 else 32
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, BLOCK_M, MMA_K]
    )
    # Copy layouts: 16 bytes per thread; x: a 128-byte row piece per K tile.
    x_copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [NUM_WARPS, 1], [1, 0])
    w_copy: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [NUM_WARPS, 1], [1, 0])
    s_copy: gl.constexpr = gl.BlockedLayout([4], [32], [NUM_WARPS], [0])

    # Gathered x rows: the tile's, and the EXTRA rows after them.
    x_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0, BLOCK_M, x_copy, K)
    offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, x_copy))  # the copies' K mask
    xe_ptrs = x_ptrs  # unused unless EXTRA
    if EXTRA:
        xe_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0 + BLOCK_M, EXTRA, x_copy, K)

    # This expert's weight rows [pid_n * BLOCK_N, +BLOCK_N) of W^T.
    row0 = expert.to(gl.int64) * N + pid_n * BLOCK_N
    offs_wn = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, w_copy))
    offs_wc = gl.arange(0, _TILE_K // 8, layout=gl.SliceLayout(0, w_copy))
    # Words [row block, K tile, row, word]: one K tile of 64 rows is 4 KB in one piece.
    w_rows = (row0 + offs_wn) // _ROW_BLOCK * (_ROW_BLOCK * ROW_WORDS) + offs_wn % _ROW_BLOCK * (_TILE_K // 8)
    w_ptrs = words_ptr + w_rows[:, None] + offs_wc[None, :]
    offs_s = gl.arange(0, BLOCK_N, layout=s_copy)
    s_ptrs = scales_ptr + expert.to(gl.int64) * K_TILES * N + pid_n * BLOCK_N + offs_s

    # PAIRS: even K tiles in one set of buffers, odd ones in another, and the loop unrolled by two, so that a tile's
    # copies and the reads of the landed tile touch different allocations: Triton's barrier analysis, which cannot
    # tell ring slots apart, then adds no second bar.sync per tile.
    RINGS: gl.constexpr = 2 if PAIRS else 1
    RING: gl.constexpr = NUM_BUFFERS // RINGS
    rings = (_ring(x_ptr.dtype.element_ty, RING, BLOCK_M, EXTRA, BLOCK_N),)
    if PAIRS:
        rings = (rings[0], _ring(x_ptr.dtype.element_ty, RING, BLOCK_M, EXTRA, BLOCK_N))
    x16_smem = rings[0][0]  # unused unless F16
    if F16:  # x of the tile in flight as fp16, two 64-wide halves (128-byte swizzled rows)
        x16_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
        x16_smem = gl.allocate_shared_memory(gl.float16, [2, BLOCK_M, 64], x16_nvmma)

    # K may end inside the last tile (K = 2880: 2 of its 4 blocks). That tile goes first, with only its blocks, and
    # the loop runs whole tiles. Step p (tile p - FIRST, or the last tile at step 0) lives in ring p % RINGS, slot
    # p // RINGS % RING.
    BLOCKS: gl.constexpr = _TILE_K // _MX_BLOCK
    LAST_BLOCKS: gl.constexpr = (K - (K_TILES - 1) * _TILE_K + _MX_BLOCK - 1) // _MX_BLOCK
    FIRST: gl.constexpr = 1 if LAST_BLOCKS < BLOCKS else 0
    WHOLE: gl.constexpr = K_TILES - FIRST
    AHEAD: gl.constexpr = NUM_BUFFERS - 1  # steps loaded ahead
    LAST: gl.constexpr = K_TILES - 1  # the last step
    loads = (x_ptrs, offs_xk, w_ptrs, offs_wc, s_ptrs, offs_s, xe_ptrs)
    for i in gl.static_range(AHEAD):  # step i < FIRST: the last tile; then whole tiles only, as in the loop
        if i < FIRST:
            _issue_loads(LAST, _stage(rings[i % RINGS], i // RINGS), *loads, K, N, K_TILES, EXTRA)
        else:
            _issue_loads(i - FIRST, _stage(rings[i % RINGS], i // RINGS), *loads, WHOLE * _TILE_K, N, WHOLE, EXTRA)

    acc = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)
    part = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)  # each block's partial sum
    spare = part  # the next block's partial, with OVERLAP
    if OVERLAP:
        spare = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=acc_layout)
    acc_e, part_e = acc, part  # the extra tokens' sums, with EXTRA
    if EXTRA:
        extra_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, EXTRA, MMA_K]
        )
        acc_e = gl.zeros((BLOCK_N, EXTRA), dtype=gl.float32, layout=extra_layout)
        part_e = gl.zeros((BLOCK_N, EXTRA), dtype=gl.float32, layout=extra_layout)
    sums = (acc, part, spare, acc_e, part_e)
    if FIRST:  # step 0: the last tile's blocks
        cp.wait_group(NUM_BUFFERS - 2)
        gl.thread_barrier()
        ahead = _stage(rings[AHEAD % RINGS], AHEAD // RINGS % RING)
        _issue_loads(AHEAD - FIRST, ahead, *loads, WHOLE * _TILE_K, N, WHOLE, EXTRA)
        sums = _mma_tile(sums, _stage(rings[0], 0), x16_smem, BLOCK_N, BLOCK_M, F16, ZERO_SCALE, LAST_BLOCKS, OVERLAP,
                         EXTRA)  # fmt: skip
    for p0 in range(FIRST, K_TILES - RINGS + 1, RINGS):
        for r in gl.static_range(RINGS):
            p = p0 + r  # in ring (r + FIRST) % RINGS
            cp.wait_group(NUM_BUFFERS - 2)
            gl.thread_barrier()  # step p has landed (every thread's copies); every wgmma of step p - 1 is done
            ahead = _stage(rings[(r + FIRST + AHEAD) % RINGS], (p + AHEAD) // RINGS % RING)  # the other ring with PAIRS
            _issue_loads(p + AHEAD - FIRST, ahead, *loads, WHOLE * _TILE_K, N, WHOLE, EXTRA)  # whole tiles only
            landed = _stage(rings[(r + FIRST) % RINGS], p // RINGS % RING)
            sums = _mma_tile(sums, landed, x16_smem, BLOCK_N, BLOCK_M, F16, ZERO_SCALE, BLOCKS, OVERLAP, EXTRA)
    if WHOLE % RINGS:  # PAIRS and an odd number of whole tiles: the last step
        cp.wait_group(NUM_BUFFERS - 2)
        gl.thread_barrier()
        sums = _mma_tile(sums, _stage(rings[LAST % RINGS], LAST // RINGS % RING), x16_smem, BLOCK_N, BLOCK_M, F16,
                         ZERO_SCALE, BLOCKS, OVERLAP, EXTRA)  # fmt: skip
    cp.wait_group(0)

    acc = sums[0]
    if not F16:  # the bit-spread encoding
        acc = acc * 64.0  # exact: a power of two
    swiglu_store(
        acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, pid_n, start, size,
        N, BLOCK_M, BLOCK_N, VEC=16 if BLOCK_M >= 128 else 2, NAN_MIN_MAX=BLOCK_M >= 128,  # see _epilogue
    )  # fmt: skip
    if EXTRA:  # (the fp8 path only)
        swiglu_store(sums[3] * 64.0, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0,
                     m0 + BLOCK_M, pid_n, start, size, N, EXTRA, BLOCK_N)  # fmt: skip


@gluon.jit
def _bmm1_sm90_kernel(
    x_ptr,  # fp8 [batch, K]
    words_ptr,  # int32 [E, N / 64, cdiv(K, 128), 64, 16]
    scales_ptr,  # int32 [E, cdiv(K, 128), N]: 4 e8m0 each
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
    NUM_BUFFERS: gl.constexpr,
    EXTRA: gl.constexpr = 0,  # Sm90Config.extra: tokens that a tile holds past BLOCK_M, on a second wgmma per block
    F16: gl.constexpr = False,  # fp16 wgmma (prepare_weights(f16=True)); fp8: bit-spread words, 2 ** -6 the values
    ZERO_SCALE: gl.constexpr = True,  # a block with nonzero codes has scale e8m0 0 (Sm90Weights.zero_scale)
    PAIRS: gl.constexpr = False,  # Sm90Config.pairs: the ring split by tile parity, the loop unrolled by two
    NARROW: gl.constexpr = 0,  # Sm90Config.narrow: a slice's last tile at a half or a quarter of the width
    OVERLAP: gl.constexpr = False,  # Sm90Config.overlap: two partial sums, a block's promotion beside the next wgmma
):
    GRID_N: gl.constexpr = N // (16 * gl.num_warps())
    pid = gl.program_id(0)
    entry = gl.load(schedule_ptr + pid // GRID_N)  # consecutive programs share the token block: x stays in cache
    if entry < 0:
        return
    pid_n = pid % GRID_N
    expert = entry & 0xFFFF
    pid_m = entry >> 16
    size = gl.load(slice_sizes_ptr + expert)
    start = gl.load(slice_offs_ptr + expert)

    call = (
        (x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, x_scale_ptr, out_scale_ptr, out_ptr),
        (alpha, limit, expert, pid_n, size, start),
    )
    m0 = pid_m * BLOCK_M  # the tile's first row in the slice
    rows_left = size - m0
    if NARROW >= 2 and rows_left <= BLOCK_M // 4:  # the slice's last rows fit a quarter of a tile
        _tile(call, m0, K, N, BLOCK_M // 4, 0, NUM_BUFFERS, F16, ZERO_SCALE, PAIRS, OVERLAP)
    elif NARROW >= 1 and rows_left <= BLOCK_M // 2:  # half a tile
        _tile(call, m0, K, N, BLOCK_M // 2, 0, NUM_BUFFERS, F16, ZERO_SCALE, PAIRS, OVERLAP)
    elif EXTRA > 0 and rows_left > BLOCK_M and rows_left <= BLOCK_M + EXTRA:  # the slice's last rows, EXTRA more
        _tile(call, m0, K, N, BLOCK_M, EXTRA, NUM_BUFFERS - 1, F16, ZERO_SCALE, False, OVERLAP)  # odd ring: unpaired
    else:
        _tile(call, m0, K, N, BLOCK_M, 0, NUM_BUFFERS, F16, ZERO_SCALE, PAIRS, OVERLAP)


def _narrowing(narrow: int, block_m: int) -> int:
    """Halvings of block_m a launch may make for a slice's last tile: at most `narrow`, down to 8 tokens."""
    return min(narrow, (block_m // 8).bit_length() - 1)


def kernel_constexprs(config: Sm90Config, tile: int, k: int, n: int, f16: bool, zero_scale: bool) -> dict:
    """The kernel's compile-time arguments for launch `tile` of `config` (0, or 1 for split_at's large tiles) on
    weights of that shape and path: what `launch` passes, and what the CPU tests compile."""
    block_m, num_buffers = config.tiles[tile]
    return {"K": k, "N": n, "BLOCK_M": block_m, "NUM_BUFFERS": num_buffers, "EXTRA": config.extra,
            "F16": f16, "ZERO_SCALE": zero_scale, "PAIRS": bool(config.pairs),
            "NARROW": _narrowing(config.narrow, block_m), "OVERLAP": bool(config.overlap)}  # fmt: skip


def launch(x, w: Sm90Weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config=None):
    """Host launcher; arguments already checked by moe_gather.bmm1. One launch per schedule (two with split_at)."""
    config = config or select_config(ragged)
    if w.f16:
        config = f16_config(config)
    if w.n % config.block_n:
        raise ValueError(f"weights: N = {w.n} must be a multiple of {config.block_n}")
    if config.split_at:
        schedules = ragged.bucket_schedules(config.split_at, config.block_m, config.large_block_m)
    elif config.widest_first:
        schedules = (ragged.widest_first(config.block_m, config.extra),)
    else:
        schedules = (ragged.schedule(config.block_m, config.extra),)
    for tile, schedule in enumerate(schedules):
        if schedule.numel():
            _bmm1_sm90_kernel[(schedule.numel() * (w.n // config.block_n),)](
                x, w.words.view(torch.int32), w.scales.view(torch.int32), bias, gather_indx, ragged.slice_sizes,
                ragged.slice_offs, schedule, x_scale, out_scale, out, float(alpha), float(limit),
                **kernel_constexprs(config, tile, w.k, w.n, w.f16, w.zero_scale),
                num_warps=config.num_warps, maxnreg=config.maxnreg,
            )  # fmt: skip
    return out
