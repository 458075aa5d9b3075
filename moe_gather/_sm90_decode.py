"""Hopper (sm_90a) BMM1 for decode: the packed weights straight from global memory into mma.sync's registers.

A call of a few rows reads each active expert's weights once and has little else to do: what bounds it is how many
bytes are in flight and how long each warp's K chain is. This tile keeps no shared-memory ring: each warp loads its
own packed words (the same words and order as the wgmma kernel's, whose 32-bit word is one thread's A fragment for a
32-wide block; mma.sync m16n8k32's per-warp fragment is wgmma's) a few K tiles ahead into registers, converts them
as the wgmma kernel does, and runs one m16n8k32 e4m3 mma.sync per block and warp on up to 8 tokens. A program holds
`decode_rows` weight rows (Sm90Config), 16 a warp; the rest of its warps form sets that take every sets-th K tile (a
batched mma: the set is the batch), and the sets' sums are added across warps before the shared epilogue.
Accumulation follows the wgmma kernel's order (the accurate precision promotes each block's fresh partial exactly in
fp32, the fast one chains a K tile's four blocks and promotes the tile), but ptxas runs e4m3 mma.sync on Hopper as
fp16 HMMA on converted operands: exact products, fp32 sums. Opt-in: docs/sm90.md, "The decode tile", has its
measurements.
"""

import torch
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from ._sm90 import (
    _FAST_ACC_SCALE,
    _MX_BLOCK,
    _ROW_BLOCK,
    _SPREAD_TO_E4M3_ASM,
    _TILE_K,
    TILE_K,
    _as_e4m3,
    _block_scales,
    _fold_words,
    _k_steps,
    _promote,
    _split_blocks,
    _swiglu_tile,
    _two_words,
)

DECODE_M = 8  # tokens per tile: mma.sync's N
_DECODE_M = tl.constexpr(DECODE_M)
_WORDS = tl.constexpr(TILE_K // 8)  # packed words of one row's K tile


@gluon.constexpr_function
def _group_bases(groups, warps_m, rank, row_dim=1):
    """Warp bases: warps_m warps per set along the rows (16 each, mma's warp order; none with row_dim None: they
    hold the same values), then the sets (dimension 0)."""
    rows = [[0] * rank for _ in range(warps_m.bit_length() - 1)]
    if row_dim is not None:
        rows = [[0] * row_dim + [16 << b] + [0] * (rank - row_dim - 1) for b in range(warps_m.bit_length() - 1)]
    return rows + [[1 << b] + [0] * (rank - 1) for b in range(groups.bit_length() - 1)]


@gluon.constexpr_function
def _words_layout(groups, warps_m):
    """A K tile of packed words as [set, row, chunk, quad, block parity]: lane l of a set's warp w holds rows
    16w + l // 4 and 16w + l // 4 + 8, quad l % 4, both chunks and parities: its A fragments of the tile's 4 blocks."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 0, 0, 1], [0, 0, 1, 0, 0], [0, 8, 0, 0, 0]],
        lane_bases=[[0, 0, 0, 1, 0], [0, 0, 0, 2, 0], [0, 1, 0, 0, 0], [0, 2, 0, 0, 0], [0, 4, 0, 0, 0]],
        warp_bases=_group_bases(groups, warps_m, 5),
        block_bases=[],
        shape=[groups, 16 * warps_m, 2, 4, 2],
    )


@gluon.constexpr_function
def _packed_layout(groups, warps_m):
    """[set, row, word, element], K = 4 * word + element: reshaped to [set, row, 32], mma's A fragment for e4m3."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 0, 1], [0, 0, 0, 2], [0, 8, 0, 0], [0, 0, 4, 0]],
        lane_bases=[[0, 0, 1, 0], [0, 0, 2, 0], [0, 1, 0, 0], [0, 2, 0, 0], [0, 4, 0, 0]],
        warp_bases=_group_bases(groups, warps_m, 4),
        block_bases=[],
        shape=[groups, 16 * warps_m, 8, 4],
    )


@gluon.constexpr_function
def _x_layout(groups, warps_m):
    """x as [set, word, element, token], K = 4 * word + element: reshaped to [set, 32, token], mma's B fragment for
    e4m3 (lane l: K = 4 (l % 4) + e and 16 + those, token l // 4); a set's warps hold the same."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1, 0], [0, 0, 2, 0], [0, 4, 0, 0]],
        lane_bases=[[0, 1, 0, 0], [0, 2, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 4]],
        warp_bases=_group_bases(groups, warps_m, 4, None),
        block_bases=[],
        shape=[groups, 8, 4, 8],
    )


@gluon.jit
def _operand(lo, hi, a_layout: gl.constexpr):
    """Words [set, row, quad] of K = 4q + i (`lo`) and 16 + 4q + i (`hi`), e4m3 bytes -> A [set, row, 32]."""
    GROUPS: gl.constexpr = lo.shape[0]
    ROWS: gl.constexpr = lo.shape[1]
    words = gl.join(lo, hi).permute((0, 1, 3, 2)).reshape([GROUPS, ROWS, 8])  # word 4h + q
    packed: gl.constexpr = _packed_layout(GROUPS, ROWS // 16)
    words = gl.convert_layout(words, gl.SliceLayout(3, packed))
    values = _as_e4m3(gl.expand_dims(words, 3).broadcast_to([GROUPS, ROWS, 8, 4]))
    return gl.convert_layout(values.reshape([GROUPS, ROWS, 32]), a_layout)


@gluon.jit
def _x_operand(words, b_layout: gl.constexpr):
    """x words [set, word, token] of one block -> mma's B operand [set, 32, token] (no data moves)."""
    GROUPS: gl.constexpr = words.shape[0]
    values = _as_e4m3(gl.expand_dims(words, 2).broadcast_to([GROUPS, 8, 4, words.shape[2]]))
    return gl.convert_layout(values.reshape([GROUPS, 32, words.shape[2]]), b_layout)


@gluon.jit
def _load_tile(i, words_base, offs_w, s_base, offs_s, offs_sw, x_base, offs_x, x_k, s_tile, K: gl.constexpr,
               N: gl.constexpr, K_TILES: gl.constexpr, FAST: gl.constexpr):  # fmt: skip
    """Step i's loads: each set's K tile s + i * GROUPS (masked past the last): its words, the rows' scale words (in
    the accumulator's row layout, and with FAST in the words' too) and the 4 blocks' x as words [set, word, token]
    (zero past K)."""
    GROUPS: gl.constexpr = s_tile.shape[0]
    t = s_tile + i * GROUPS  # [set]
    live = t < K_TILES
    w_t = gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(t, 1), 2), 3), 4)
    w_live = gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(live, 1), 2), 3), 4)
    words = gl.load(words_base + w_t * (_ROW_BLOCK * _WORDS) + offs_w, mask=w_live, other=0)
    s_layout: gl.constexpr = offs_s.type.layout
    t_s = gl.expand_dims(gl.convert_layout(t, gl.SliceLayout(1, s_layout)), 1)
    scales = gl.load(s_base + t_s * N + offs_s, mask=t_s < K_TILES, other=0)
    sw = scales
    if FAST:
        sw_layout: gl.constexpr = offs_sw.type.layout
        t_w = gl.expand_dims(gl.convert_layout(t, gl.SliceLayout(1, sw_layout)), 1)
        sw = gl.load(s_base + t_w * N + offs_sw, mask=t_w < K_TILES, other=0)
    x_layout: gl.constexpr = x_k.type.layout
    k0 = gl.expand_dims(gl.expand_dims(gl.convert_layout(t, gl.SliceLayout(1, gl.SliceLayout(2, x_layout))), 1), 2)
    k0 = k0 * _TILE_K + x_k  # [set, word, 1]: the K of the word's first byte, block 0
    xs = (
        _x_words(x_base, offs_x, k0, 0, K),
        _x_words(x_base, offs_x, k0, 1, K),
        _x_words(x_base, offs_x, k0, 2, K),
        _x_words(x_base, offs_x, k0, 3, K),
    )
    return words, scales, sw, xs


@gluon.jit
def _x_words(x_base, offs_x, k0, j: gl.constexpr, K: gl.constexpr):
    """Block j's x words [set, word, token] (zero past K) from the K tile's first bytes `k0`."""
    k = k0 + j * _MX_BLOCK
    return gl.load(x_base + offs_x + k // 4, mask=(k < K) & (offs_x >= 0), other=0)


@gluon.jit
def _step(acc, words, scales, sw, xs, a_layout: gl.constexpr, b_layout: gl.constexpr, FAST: gl.constexpr,
          ZERO_SCALE: gl.constexpr):  # fmt: skip
    """One K tile per set: its blocks converted and multiplied; promoted per block (accurate) or per tile (FAST)."""
    blocks = _split_blocks(words)
    acc_layout: gl.constexpr = acc.type.layout
    zero = gl.zeros(acc.shape, gl.float32, layout=acc_layout)
    if FAST:
        blocks_layout: gl.constexpr = blocks[0].type.layout
        sw_b = gl.convert_layout(gl.expand_dims(sw, 2).broadcast_to(blocks[0].shape), blocks_layout)
        part = zero
        for j in gl.static_range(_TILE_K // _MX_BLOCK):
            lo, hi = _fold_words(blocks[j], sw_b, j)
            part = mma_v2(_operand(lo, hi, a_layout), _x_operand(xs[j], b_layout), part)
        ref = (scales & 0x7F800000).to(gl.float32, bitcast=True)
        acc = _promote(part, gl.expand_dims(ref, 2), acc)
    else:
        for j in gl.static_range(_TILE_K // _MX_BLOCK):
            lo, hi = _two_words(_SPREAD_TO_E4M3_ASM, blocks[j])
            part = mma_v2(_operand(lo, hi, a_layout), _x_operand(xs[j], b_layout), zero)  # a fresh partial per block
            acc = _promote(part, gl.expand_dims(_block_scales(scales, j, ZERO_SCALE), 2), acc)
    return acc


@gluon.jit
def _bmm1_sm90_decode_kernel(
    x_ptr,  # fp8 [batch, K]
    words_ptr,  # int32 [E, N / 64, cdiv(K, 128), 64, 16]: the packed codes (either precision's)
    scales_ptr,  # int32 [E, cdiv(K, 128), N]
    bias_ptr,  # fp32 [E, N]
    gather_ptr,  # int32 [tokens]
    slice_sizes_ptr,  # int32 [E]
    slice_offs_ptr,  # int32 [E + 1]
    schedule_ptr,  # int32 [max_blocks]: slice | pid_m << 16 (8-token blocks), -1 past the end
    x_scale_ptr,  # fp32 [1]
    out_scale_ptr,  # fp32 [1]
    out_ptr,  # fp8 [tokens, N/2]
    alpha,
    limit,
    K: gl.constexpr,
    N: gl.constexpr,
    WARPS_M: gl.constexpr,  # warps along a program's rows (16 each); the others split K in sets of WARPS_M
    AHEAD: gl.constexpr,  # K tiles each warp loads ahead of the one it computes (1 or 2)
    FAST: gl.constexpr = False,
    ZERO_SCALE: gl.constexpr = True,
):
    GROUPS: gl.constexpr = gl.num_warps() // WARPS_M
    ROWS: gl.constexpr = 16 * WARPS_M
    GRID_N: gl.constexpr = N // ROWS
    pid = gl.program_id(0)
    entry = gl.load(schedule_ptr + pid // GRID_N)
    if entry < 0:
        return
    pid_n = pid % GRID_N
    expert = entry & 0xFFFF
    m0 = (entry >> 16) * _DECODE_M
    size = gl.load(slice_sizes_ptr + expert)
    start = gl.load(slice_offs_ptr + expert)
    K_TILES: gl.constexpr = _k_steps(K)[0]
    STEPS: gl.constexpr = (K_TILES + GROUPS - 1) // GROUPS

    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[2, 0], warps_per_cta=[GROUPS, WARPS_M, 1], instr_shape=[1, 16, 8]
    )
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=4)
    b_layout: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=acc_layout, k_width=4)
    w_layout: gl.constexpr = _words_layout(GROUPS, WARPS_M)
    row_layout: gl.constexpr = gl.SliceLayout(2, acc_layout)  # [set, row]
    x_layout: gl.constexpr = gl.SliceLayout(2, _x_layout(GROUPS, WARPS_M))  # [set, word, token]

    # Words [E, N / 64, K tile, 64, 16] from the program's first row, K tile 0, as [set, row, chunk, quad, parity]:
    # word row * 16 + chunk * 8 + quad * 2 + parity.
    row0 = expert.to(gl.int64) * N + pid_n * ROWS
    in_block = row0 % _ROW_BLOCK
    words_base = words_ptr + (row0 - in_block) * (K_TILES * _WORDS) + in_block * _WORDS
    w4: gl.constexpr = gl.SliceLayout(4, w_layout)
    w3: gl.constexpr = gl.SliceLayout(3, w_layout)
    d_row = gl.arange(0, ROWS, layout=gl.SliceLayout(0, gl.SliceLayout(2, gl.SliceLayout(3, w4))))
    d_chunk = gl.arange(0, 2, layout=gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(3, w4))))
    d_quad = gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(2, w4))))
    d_par = gl.arange(0, 2, layout=gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(2, w3))))
    offs_w = (
        gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(d_row, 0), 2), 3), 4) * _WORDS
        + gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(d_chunk, 0), 1), 3), 4) * 8
        + gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(d_quad, 0), 1), 2), 4) * 2
        + gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.expand_dims(d_par, 0), 1), 2), 3)
    )
    s_tile = gl.arange(0, GROUPS, layout=gl.SliceLayout(1, gl.SliceLayout(2, gl.SliceLayout(3, w4))))
    # Scale words [E, K tile, N]: the rows' in the accumulator's row layout, and (FAST) in the blocks' [set, row].
    s_base = scales_ptr + expert.to(gl.int64) * K_TILES * N + pid_n * ROWS
    offs_s = gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(0, row_layout)), 0)
    sw_layout: gl.constexpr = gl.SliceLayout(2, gl.SliceLayout(2, w4))  # [set, row]
    offs_sw = gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(0, sw_layout)), 0)

    # x as int32 words [set, word, token]: the slice's rows m0.. (past the slice: its last row, never stored).
    x_rows = gl.arange(0, _DECODE_M, layout=gl.SliceLayout(0, gl.SliceLayout(1, x_layout)))
    rows = gl.load(gather_ptr + start + gl.minimum(m0 + x_rows, size - 1))
    offs_x = gl.expand_dims(gl.expand_dims(rows.to(gl.int64) * (K // 4), 0), 1)  # [1, 1, token]
    x_k = gl.expand_dims(gl.expand_dims(gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(2, x_layout))), 0), 2)
    x_k = x_k * 4  # [1, word, 1]: the K of each word's first byte in a block
    x_words = x_ptr.to(gl.pointer_type(gl.int32), bitcast=True)

    acc = gl.zeros([GROUPS, ROWS, _DECODE_M], gl.float32, layout=acc_layout)
    loaded = _load_tile(0, words_base, offs_w, s_base, offs_s, offs_sw, x_words, offs_x, x_k, s_tile, K, N, K_TILES,
                        FAST)  # fmt: skip
    second = loaded
    if AHEAD == 2:
        second = _load_tile(1, words_base, offs_w, s_base, offs_s, offs_sw, x_words, offs_x, x_k, s_tile, K, N,
                            K_TILES, FAST)  # fmt: skip
    for i in gl.static_range(STEPS):  # unrolled: no register copies of loads in flight
        ahead = _load_tile(i + AHEAD, words_base, offs_w, s_base, offs_s, offs_sw, x_words, offs_x, x_k, s_tile, K,
                           N, K_TILES, FAST)  # fmt: skip
        words, scales, sw, xs = loaded
        acc = _step(acc, words, scales, sw, xs, a_layout, b_layout, FAST, ZERO_SCALE)
        if AHEAD == 2:
            loaded = second
            second = ahead
        else:
            loaded = ahead

    total = gl.sum(acc, axis=0)  # the sets' sums, in a fixed order
    ACC_TIMES: gl.constexpr = 1.0 if FAST else 64.0  # the bit-spread encoding's 2 ** -6 (exact)
    ACC_SCALE: gl.constexpr = _FAST_ACC_SCALE if FAST else 1.0
    if ACC_TIMES != 1.0:
        total = total * ACC_TIMES
    _swiglu_tile(total, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, pid_n, start, size, N,
                 ACC_SCALE)  # fmt: skip


def decode_constexprs(config, k: int, n: int, fast: bool, zero_scale: bool) -> dict:
    """The decode kernel's compile-time arguments for `config` (decode_rows set) on weights of that shape and path."""
    return {
        "K": k,
        "N": n,
        "WARPS_M": config.decode_rows // 16,
        "AHEAD": config.num_stages - 1,
        "FAST": fast,
        "ZERO_SCALE": zero_scale,
    }


def launch_decode(x, w, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config):
    """The decode tile's launch (_sm90.launch's, for a config with decode_rows): one program per 8-token block of a
    slice and decode_rows weight rows, on the packed words (either layout keeps them)."""
    schedule = ragged.schedule(DECODE_M)
    grid = schedule.numel() * (w.n // config.decode_rows)
    if grid:
        _bmm1_sm90_decode_kernel[(grid,)](
            x, w.words.view(torch.int32), w.scales.view(torch.int32), bias, gather_indx, ragged.slice_sizes,
            ragged.slice_offs, schedule, x_scale, out_scale, out, float(alpha), float(limit),
            **decode_constexprs(config, w.k, w.n, w.fast, w.zero_scale), num_warps=config.num_warps,
            maxnreg=config.maxnreg,
        )  # fmt: skip
    return out
