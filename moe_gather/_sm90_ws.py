"""Hopper BMM1, the fast precision warp-specialized (Sm90Config.warp_specialized): one producer warpgroup copies,
two consumer warpgroups compute, synchronized by mbarriers only.

A program is one (token block, 128 weight rows) tile, as in _sm90. The producer warpgroup (few registers) issues
every K tile's cp.async (the gathered x rows, the packed words, the scale words) into a ring and has them arrive on
the slot's `full` barrier once landed (cp.async.mbarrier.arrive). Each consumer warpgroup owns 64 of the weight rows:
it waits on `full`, folds its words into fp8 and chains the tile's four wgmmas (_sm90._fast_chain), promotes the
partial once per tile, releases the slot on `empty`, and runs its own epilogue. The two consumers never wait on each
other, so one's promotion and conversion run while the other's wgmmas hold the tensor cores; their registers hold no
copy pointers (setmaxnreg gives them the producer's). docs/sm90.md has the design and the measurements.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma_wait

from ._epilogue import swiglu_store
from ._sm90 import _MX_BLOCK, _ROW_BLOCK, _TILE_K, _Buffers, _fast_chain, _narrowing, _promote
from ._sm90_layout import FAST_SHIFT, TILE_K
from .mxfp4 import MX_BLOCK

CONSUMER_ROWS = 64  # weight rows per consumer warpgroup (wgmma's m64)
PRODUCER_REGS = 40  # registers per producer thread (setmaxnreg)
MAXNREG = 168  # 12 warps at launch: 168 * 12 * 32 <= 65536 registers
CONSUMER_REGS = (MAXNREG * 12 - PRODUCER_REGS * 4) // 8 // 8 * 8  # each consumer thread's: the rest
_CONSUMER_ROWS = gl.constexpr(CONSUMER_ROWS)
_ACC_SCALE = gl.constexpr(2.0**-FAST_SHIFT)  # the fast tables' 2 ** 6, folded into x_scale


@gluon.constexpr_function
def _k_steps(K):
    """(K tiles, blocks of the tile that K ends inside, 1 if that tile is partial and goes first)."""
    k_tiles = (K + TILE_K - 1) // TILE_K
    last_blocks = (K - (k_tiles - 1) * TILE_K + MX_BLOCK - 1) // MX_BLOCK
    return k_tiles, last_blocks, int(last_blocks < TILE_K // MX_BLOCK)


@gluon.jit
def _produce(x_ptr, gather_ptr, words_ptr, scales_ptr, expert, pid_n, size, start, m0, entry, x_ring, w_ring, s_ring,
             full, empty, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr):  # fmt: skip
    """The producer warpgroup: step t's K tile (the partial one first, then tiles 0, 1, ...) into slot t % STAGES
    once both consumers have released it; each thread's copies arrive on the slot's `full` barrier as they land.
    Token rows past the slice read nothing (zeros)."""
    if entry >= 0:
        K_TILES: gl.constexpr = _k_steps(K)[0]
        FIRST: gl.constexpr = _k_steps(K)[2]
        ROWS: gl.constexpr = 2 * _CONSUMER_ROWS
        ROW_WORDS: gl.constexpr = K_TILES * _TILE_K // 8
        # 16 bytes a copy, a warp's 32 copies on whole 128-byte row pieces (x: 4 rows, words: 8 rows of 64 bytes)
        x_copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [gl.num_warps(), 1], [1, 0])
        w_copy: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
        s_copy: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
        offs_m = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, x_copy))
        rows = gl.load(gather_ptr + start + gl.minimum(offs_m, size - 1))
        offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, x_copy))
        x_ptrs = x_ptr + rows.to(gl.int64)[:, None] * K + offs_xk[None, :]
        in_slice = (offs_m < size)[:, None]
        row0 = expert.to(gl.int64) * N + pid_n * ROWS
        offs_wn = gl.arange(0, _CONSUMER_ROWS, layout=gl.SliceLayout(1, w_copy))
        offs_wc = gl.arange(0, _TILE_K // 8, layout=gl.SliceLayout(0, w_copy))
        # Words [row block, K tile, row, word]: a consumer's 64 rows of one K tile are 4 KB in one piece.
        w_ptrs = words_ptr + (row0 // _ROW_BLOCK * (_ROW_BLOCK * ROW_WORDS) + offs_wn * (_TILE_K // 8))[:, None]
        w_ptrs = w_ptrs + offs_wc[None, :]
        s_ptrs = scales_ptr + expert.to(gl.int64) * K_TILES * N + pid_n * ROWS + gl.arange(0, ROWS, layout=s_copy)
        W_TILE: gl.constexpr = _ROW_BLOCK * _TILE_K // 8  # words of one K tile of a row block
        for t in range(K_TILES):
            slot = t % STAGES
            mbarrier.wait(empty.index(slot), (t // STAGES) & 1 ^ 1)  # the first round passes
            tile = t - FIRST + (t < FIRST) * K_TILES  # step 0 takes the partial tile (K_TILES - 1)
            k0 = tile * _TILE_K
            cp.async_copy_global_to_shared(x_ring.index(slot), x_ptrs + k0, mask=in_slice & (offs_xk < K - k0)[None, :])
            for h in gl.static_range(2):
                cp.async_copy_global_to_shared(
                    w_ring.index(2 * slot + h), w_ptrs + h * _ROW_BLOCK * ROW_WORDS + tile * W_TILE
                )
            cp.async_copy_global_to_shared(s_ring.index(slot), s_ptrs + tile * N)
            cp.mbarrier_arrive(full.index(slot), increment_count=False)


@gluon.jit
def _consume_width(WG: gl.constexpr, rings, epi, K: gl.constexpr, N: gl.constexpr, W: gl.constexpr,
                   STAGES: gl.constexpr):  # fmt: skip
    """Consumer WG's K loop on the tile's first W tokens, K tiles in pairs (the second's wgmmas in flight while the
    first's partial is promoted), then its epilogue. `rings`: (x, words, scales, full, empty); `epi`: (bias,
    x_scale, out_scale, out, alpha, limit, expert, pid_n, size, start, m0)."""
    x_ring, w_ring, s_ring, full, empty = rings
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert, pid_n, size, start, m0 = epi
    K_TILES: gl.constexpr = _k_steps(K)[0]
    LAST_BLOCKS: gl.constexpr = _k_steps(K)[1]
    FIRST: gl.constexpr = _k_steps(K)[2]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, W, 32]
    )
    acc = gl.zeros((_CONSUMER_ROWS, W), dtype=gl.float32, layout=acc_layout)
    part = gl.zeros((_CONSUMER_ROWS, W), dtype=gl.float32, layout=acc_layout)
    spare = gl.zeros((_CONSUMER_ROWS, W), dtype=gl.float32, layout=acc_layout)
    if FIRST:
        mbarrier.wait(full.index(0), 0)
        part, _, ref = _fast_chain(_stage(x_ring, w_ring, s_ring, 0, WG, W), part, _CONSUMER_ROWS, LAST_BLOCKS)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
        mbarrier.arrive(empty.index(0), count=1)
        acc = _promote(part, ref[:, None], acc)
    for t in range(FIRST, K_TILES - 1, 2):
        a = t % STAGES
        mbarrier.wait(full.index(a), (t // STAGES) & 1)
        part_a, _, ref_a = _fast_chain(_stage(x_ring, w_ring, s_ring, a, WG, W), part, _CONSUMER_ROWS)
        b = (t + 1) % STAGES
        mbarrier.wait(full.index(b), ((t + 1) // STAGES) & 1)
        part_b, _, ref_b = _fast_chain(_stage(x_ring, w_ring, s_ring, b, WG, W), spare, _CONSUMER_ROWS)
        part = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(part_a,))  # b's wgmmas in flight
        mbarrier.arrive(empty.index(a), count=1)
        acc = _promote(part, ref_a[:, None], acc)
        spare = warpgroup_mma_wait(num_outstanding=0, deps=(part_b,))
        mbarrier.arrive(empty.index(b), count=1)
        acc = _promote(spare, ref_b[:, None], acc)
    if (K_TILES - FIRST) % 2:  # an odd number of whole tiles: the last
        t = K_TILES - 1
        mbarrier.wait(full.index(t % STAGES), (t // STAGES) & 1)
        part, _, ref = _fast_chain(_stage(x_ring, w_ring, s_ring, t % STAGES, WG, W), part, _CONSUMER_ROWS)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
        mbarrier.arrive(empty.index(t % STAGES), count=1)
        acc = _promote(part, ref[:, None], acc)
    block = 2 * pid_n + WG  # this warpgroup's 64-row column block
    swiglu_store(
        acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert.to(gl.int64) * N + block * 64, m0,
        block, start, size, N, W, _CONSUMER_ROWS, VEC=16 if W >= 128 else 2, NAN_MIN_MAX=W >= 128,
        ACC_SCALE=_ACC_SCALE,
    )  # fmt: skip


@gluon.jit
def _stage(x_ring, w_ring, s_ring, slot, WG: gl.constexpr, W: gl.constexpr):
    """Consumer WG's view of a ring slot: the first W token rows of x, its 64 rows' words and scale words."""
    x = x_ring.index(slot)
    if x.shape[0] > W:
        x = x.slice(0, W, dim=0)
    return _Buffers(x, w_ring.index(2 * slot + WG), s_ring.index(slot).slice(WG * _CONSUMER_ROWS, _CONSUMER_ROWS), x)


@gluon.jit
def _consume(WG: gl.constexpr, rings, epi, entry, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
             STAGES: gl.constexpr, NARROW: gl.constexpr):  # fmt: skip
    """Consumer warpgroup WG (0: the default partition, 1: a worker), on the tile's width: a slice's last rows take
    a half or a quarter of BLOCK_M where they fit (NARROW halvings at most)."""
    if entry >= 0:
        rows_left = epi[8] - epi[10]  # size - m0
        if NARROW >= 2 and rows_left <= BLOCK_M // 4:
            _consume_width(WG, rings, epi, K, N, BLOCK_M // 4, STAGES)
        elif NARROW >= 1 and rows_left <= BLOCK_M // 2:
            _consume_width(WG, rings, epi, K, N, BLOCK_M // 2, STAGES)
        else:
            _consume_width(WG, rings, epi, K, N, BLOCK_M, STAGES)


@gluon.jit
def _consume_0(rings, epi, entry, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr,
               NARROW: gl.constexpr):  # fmt: skip
    _consume(0, rings, epi, entry, K, N, BLOCK_M, STAGES, NARROW)


@gluon.jit
def _consume_1(rings, epi, entry, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr,
               NARROW: gl.constexpr):  # fmt: skip
    _consume(1, rings, epi, entry, K, N, BLOCK_M, STAGES, NARROW)


@gluon.jit
def bmm1_sm90_ws_kernel(
    x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, schedule_ptr, x_scale_ptr,
    out_scale_ptr, out_ptr, alpha, limit,  # as _sm90._bmm1_sm90_kernel's
    K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, NUM_STAGES: gl.constexpr, NARROW: gl.constexpr,
    CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr,
):  # fmt: skip
    ROWS: gl.constexpr = 2 * _CONSUMER_ROWS
    GRID_N: gl.constexpr = N // ROWS
    pid = gl.program_id(0)
    entry = gl.load(schedule_ptr + pid // GRID_N)  # -1 past the schedule's end: every partition skips its work
    pid_n = pid % GRID_N
    expert = gl.maximum(entry, 0) & 0xFFFF  # (expert 0 there: the loads below stay in bounds)
    m0 = (entry >> 16) * BLOCK_M
    size = gl.load(slice_sizes_ptr + expert)
    start = gl.load(slice_offs_ptr + expert)

    x_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    plain2: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    x_ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NUM_STAGES, BLOCK_M, _TILE_K], x_nvmma)
    w_ring = gl.allocate_shared_memory(gl.int32, [2 * NUM_STAGES, _CONSUMER_ROWS, _TILE_K // 8], plain2)
    s_ring = gl.allocate_shared_memory(gl.int32, [NUM_STAGES, ROWS], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    full = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(full.index(i), count=32 * 4)  # each producer thread's copies (4 warps)
        mbarrier.init(empty.index(i), count=2)  # each consumer warpgroup

    rings = (x_ring, w_ring, s_ring, full, empty)
    epi = (bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert, pid_n, size, start, m0)
    gl.warp_specialize(
        [
            (_consume_0, (rings, epi, entry, K, N, BLOCK_M, NUM_STAGES, NARROW)),
            (_consume_1, (rings, epi, entry, K, N, BLOCK_M, NUM_STAGES, NARROW)),
            (_produce, (x_ptr, gather_ptr, words_ptr, scales_ptr, expert, pid_n, size, start, m0, entry, x_ring,
                        w_ring, s_ring, full, empty, K, N, BLOCK_M, NUM_STAGES)),
        ],
        [4, 4],
        [CONSUMER_REGS, PRODUCER_REGS],
    )  # fmt: skip


def ws_constexprs(config, k: int, n: int) -> dict:
    """The warp-specialized kernel's compile-time arguments for `config` on weights of that shape."""
    return {
        "K": k,
        "N": n,
        "BLOCK_M": config.block_m,
        "NUM_STAGES": config.num_stages,
        "NARROW": _narrowing(config.narrow_last_tile, config.block_m),
        "CONSUMER_REGS": CONSUMER_REGS,
        "PRODUCER_REGS": PRODUCER_REGS,
    }


LAUNCH_OPTIONS = {"num_warps": 4, "maxnreg": MAXNREG}  # the default partition's warps; the workers add 8
