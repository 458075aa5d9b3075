"""Hopper BMM1, the fast precision warp-specialized (Sm90Config.warp_specialized): one producer warpgroup copies,
two consumer warpgroups compute, synchronized by mbarriers only.

A work item is one (token block, 128 weight rows) tile, as a program is in _sm90; a program walks the launch's items
from its id by the grid's size (one program per multiprocessor with Sm90Config.persistent). The producer warpgroup
(few registers) issues every K tile's cp.async (the gathered x rows, the packed words, the scale words) into a ring
and has them arrive on the slot's `full` barrier once landed (cp.async.mbarrier.arrive). Each consumer warpgroup
owns 64 of the weight rows: it waits on `full`, folds its words into fp8 and chains the tile's four wgmmas
(_sm90._fast_chain), promotes the partial once per tile, releases the slot on `empty`, and runs its own epilogue.
The two consumers never wait on each other; their registers hold no copy pointers (setmaxnreg gives them the
producer's).

With Sm90Config.split_k a work item is 64 weight rows and the consumers split its K tiles (even ring steps to
consumer 0, odd to 1), each slot released by its one reader: each runs half the K chain; consumer 1 hands its sum
over in shared memory (mbarriers `handed`, `taken`) and consumer 0 adds it (in that order: deterministic) and runs
the item's epilogue. docs/sm90.md has the design and the measurements.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma_wait

from ._sm90 import (
    _FAST_ACC_SCALE,
    _MX_BLOCK,
    _ROW_BLOCK,
    _TILE_K,
    _Buffers,
    _fast_chain,
    _k_steps,
    _narrowing,
    _promote,
    _swiglu_tile,
    _x_rows,
)
from ._sm90_config import WS_MAXNREG

PRODUCER_REGS = 24  # registers per producer thread (setmaxnreg); WS_MAXNREG caps the 12 warps at launch


def consumer_regs(maxnreg: int) -> int:
    """Each consumer thread's registers (setmaxnreg, a multiple of 8): what the producer leaves of 12 warps'."""
    return (maxnreg * 12 - PRODUCER_REGS * 4) // 8 // 8 * 8


CONSUMER_REGS = consumer_regs(WS_MAXNREG)


@gluon.jit
def _item(work, item, N: gl.constexpr, BLOCK_M: gl.constexpr, ROWS: gl.constexpr):
    """Work item `item` of the launch: (schedule entry, or -1 past its end; expert; ROWS-row column block; the tile's
    first row in the slice; the slice's size and first output row). `work`: (schedule, slice sizes, slice offsets,
    items)."""
    GRID_N: gl.constexpr = N // ROWS
    entry = gl.load(work[0] + item // GRID_N)  # consecutive items share the token block: x stays in cache
    valid = gl.maximum(entry, 0)  # (-1 reads as expert 0: the loads stay in bounds, the item is skipped)
    expert = valid & 0xFFFF
    return entry, expert, item % GRID_N, (valid >> 16) * BLOCK_M, gl.load(work[1] + expert), gl.load(work[2] + expert)


@gluon.jit
def _produce(x_ptr, gather_ptr, words_ptr, scales_ptr, work, x_ring, w_ring, s_ring, full, empty, K: gl.constexpr,
             N: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr, SPLIT_K: gl.constexpr):  # fmt: skip
    """The producer warpgroup, over the program's work items: step t of an item (its partial K tile first, then tiles
    0, 1, ...) into the ring's next slot once its readers (both consumers; split_k: one) have released it; each
    thread's copies arrive on the
    slot's `full` barrier as they land. Token rows past the slice read nothing (zeros). The ring runs on across
    items, so the next item's first tiles load while the consumers run the last one's epilogue."""
    K_TILES: gl.constexpr = _k_steps(K)[0]
    FIRST: gl.constexpr = _k_steps(K)[2]
    ROWS: gl.constexpr = (2 - SPLIT_K) * _ROW_BLOCK  # weight rows per item
    ROW_WORDS: gl.constexpr = K_TILES * _TILE_K // 8
    W_TILE: gl.constexpr = _ROW_BLOCK * _TILE_K // 8  # words of one K tile of a row block
    # 16 bytes a copy, a warp's 32 copies on whole 128-byte row pieces (x: 4 rows, words: 8 rows of 64 bytes)
    x_copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [gl.num_warps(), 1], [1, 0])
    w_copy: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    s_copy: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs_s = gl.arange(0, 2 * _ROW_BLOCK, layout=s_copy)  # a scale word a thread: ROWS of them copied
    offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, x_copy))
    offs_wn = gl.arange(0, _ROW_BLOCK, layout=gl.SliceLayout(1, w_copy))
    offs_wc = gl.arange(0, _TILE_K // 8, layout=gl.SliceLayout(0, w_copy))
    step = 0  # K tiles through the ring so far
    for item in range(gl.program_id(0), work[3], gl.num_programs(0)):
        entry, expert, pid_n, m0, size, start = _item(work, item, N, BLOCK_M, ROWS)
        if entry >= 0:
            x_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0, BLOCK_M, x_copy, K)
            in_slice = (m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, x_copy)) < size)[:, None]
            row0 = expert.to(gl.int64) * N + pid_n * ROWS
            # Words [row block, K tile, row, word]: a consumer's 64 rows of one K tile are 4 KB in one piece.
            w_ptrs = words_ptr + (row0 // _ROW_BLOCK * (_ROW_BLOCK * ROW_WORDS) + offs_wn * (_TILE_K // 8))[:, None]
            w_ptrs = w_ptrs + offs_wc[None, :]
            s_rows = gl.minimum(offs_s, ROWS - 1) if SPLIT_K else offs_s  # split_k's masked half stays in bounds
            s_ptrs = scales_ptr + expert.to(gl.int64) * K_TILES * N + pid_n * ROWS + s_rows
            for t in range(K_TILES):
                slot = (step + t) % STAGES
                mbarrier.wait(empty.index(slot), (step + t) // STAGES & 1 ^ 1)  # the first round passes
                tile = t - FIRST + (t < FIRST) * K_TILES  # step 0 takes the partial tile (K_TILES - 1)
                k0 = tile * _TILE_K
                in_k = (offs_xk < K - k0)[None, :]
                cp.async_copy_global_to_shared(x_ring.index(slot), x_ptrs + k0, mask=in_slice & in_k)
                for h in gl.static_range(2 - SPLIT_K):  # each consumer's 64 rows: a row block of its own
                    w_half = w_ptrs + (h * _ROW_BLOCK * ROW_WORDS + tile * W_TILE)
                    cp.async_copy_global_to_shared(w_ring[h].index(slot), w_half)
                if SPLIT_K:  # 64 scale words (the other half of the slot is zero-filled, never read)
                    cp.async_copy_global_to_shared(s_ring.index(slot), s_ptrs + tile * N, mask=offs_s < ROWS)
                else:
                    cp.async_copy_global_to_shared(s_ring.index(slot), s_ptrs + tile * N)
                cp.mbarrier_arrive(full.index(slot), increment_count=False)
            step += K_TILES


@gluon.jit
def _landed(rings, step, WG: gl.constexpr, W: gl.constexpr, STAGES: gl.constexpr):
    """Consumer WG's view of the ring slot of `step`, once landed: the first W token rows of x, its 64 rows' words
    and scale words (with split_k both consumers read row block 0: the item's)."""
    x_ring, w_ring, s_ring, full, _, _ = rings
    slot = step % STAGES
    mbarrier.wait(full.index(slot), step // STAGES & 1)
    x = x_ring.index(slot)
    if x.shape[0] > W:
        x = x.slice(0, W, dim=0)
    return _Buffers(x, w_ring[WG].index(slot), s_ring.index(slot).slice(WG * _ROW_BLOCK, _ROW_BLOCK), x)


@gluon.jit
def _chain_tile(rings, step, RB: gl.constexpr, W: gl.constexpr, STAGES: gl.constexpr, acc, part, BLOCKS: gl.constexpr):
    """One K tile of ring step `step` alone: its chain, drained, the slot released, the partial promoted."""
    part, _, ref = _fast_chain(_landed(rings, step, RB, W, STAGES), part, _ROW_BLOCK, BLOCKS)
    part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
    mbarrier.arrive(rings[4].index(step % STAGES), count=1)
    return _promote(part, ref[:, None], acc), part


@gluon.jit
def _consume_width(WG: gl.constexpr, rings, epi, step, K: gl.constexpr, N: gl.constexpr, W: gl.constexpr,
                   STAGES: gl.constexpr, SPLIT_K: gl.constexpr, handover):  # fmt: skip
    """Consumer WG's K loop on an item's first W tokens, its K tiles from ring step `step` on (with SPLIT_K, every
    other one from step + WG), in pairs (the second's wgmmas in flight while the first's partial is promoted), then
    its epilogue (with SPLIT_K: consumer 1 hands its sum to consumer 0, which adds it and stores). `rings`: (x,
    words, scales, full, empty, handover buffer); `epi`: (bias, x_scale, out_scale, out, alpha, limit, expert, pid_n,
    size, start, m0); `handover`: (`handed`, `taken` barrier, phase)."""
    empty = rings[4]
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert, pid_n, size, start, m0 = epi
    K_TILES: gl.constexpr = _k_steps(K)[0]
    LAST_BLOCKS: gl.constexpr = _k_steps(K)[1]
    FIRST: gl.constexpr = _k_steps(K)[2] * (WG == 0 or not SPLIT_K)  # the partial tile is ring step 0's
    STRIDE: gl.constexpr = 1 + SPLIT_K  # ring steps between this consumer's K tiles
    MINE: gl.constexpr = (K_TILES - WG * SPLIT_K + SPLIT_K) // STRIDE  # its K tiles
    RB: gl.constexpr = WG * (1 - SPLIT_K)  # the row block it reads (split_k: the item's one)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, W, 32]
    )
    acc = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    part = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    spare = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    first = step + WG * SPLIT_K  # its first ring step
    if FIRST:
        acc, part = _chain_tile(rings, first, RB, W, STAGES, acc, part, LAST_BLOCKS)
    for i in range(FIRST, MINE - 1, 2):
        t = first + i * STRIDE
        part_a, _, ref_a = _fast_chain(_landed(rings, t, RB, W, STAGES), part, _ROW_BLOCK)
        part_b, _, ref_b = _fast_chain(_landed(rings, t + STRIDE, RB, W, STAGES), spare, _ROW_BLOCK)
        part = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(part_a,))  # b's wgmmas in flight
        mbarrier.arrive(empty.index(t % STAGES), count=1)
        acc = _promote(part, ref_a[:, None], acc)
        spare = warpgroup_mma_wait(num_outstanding=0, deps=(part_b,))
        mbarrier.arrive(empty.index((t + STRIDE) % STAGES), count=1)
        acc = _promote(spare, ref_b[:, None], acc)
    if (MINE - FIRST) % 2:  # an odd number of whole tiles: the last
        acc, part = _chain_tile(rings, first + (MINE - 1) * STRIDE, RB, W, STAGES, acc, part, _TILE_K // _MX_BLOCK)
    if SPLIT_K:
        sums = rings[5]
        view = sums.slice(0, W, dim=1) if sums.shape[1] > W else sums
        handed, taken, phase = handover
        if WG == 1:  # hand the sum over once consumer 0 has taken the last one
            mbarrier.wait(taken, phase ^ 1)
            view.store(acc)
            gl.thread_barrier()  # this warpgroup's stores, before its one arrival
            mbarrier.arrive(handed, count=1)
        else:
            mbarrier.wait(handed, phase)
            acc = acc + view.load(acc_layout)
            gl.thread_barrier()  # this warpgroup's loads, before the buffer is handed back
            mbarrier.arrive(taken, count=1)
    if WG == 0 or not SPLIT_K:
        block = (2 - SPLIT_K) * pid_n + WG  # this warpgroup's 64-row column block
        row0 = expert.to(gl.int64) * N + block * _ROW_BLOCK
        _swiglu_tile(
            acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, block, start, size, N,
            _FAST_ACC_SCALE,
        )  # fmt: skip


@gluon.jit
def _consume(WG: gl.constexpr, rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
             STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr):  # fmt: skip
    """Consumer warpgroup WG (0: the default partition, 1: a worker) over the program's work items, each on its
    tile's width: a slice's last rows take a half or a quarter of BLOCK_M where they fit (NARROW halvings at most).
    `out`: (bias, x_scale, out_scale, out, alpha, limit); `handover`: split_k's (`handed`, `taken`) barriers."""
    K_TILES: gl.constexpr = _k_steps(K)[0]
    step = 0  # K tiles through the ring so far
    done = 0  # items taken: the handover barriers' phase
    for item in range(gl.program_id(0), work[3], gl.num_programs(0)):
        entry, expert, pid_n, m0, size, start = _item(work, item, N, BLOCK_M, (2 - SPLIT_K) * _ROW_BLOCK)
        if entry >= 0:
            epi = (out[0], out[1], out[2], out[3], out[4], out[5], expert, pid_n, size, start, m0)
            hand = (handover[0], handover[1], done & 1)
            if NARROW >= 2 and size - m0 <= BLOCK_M // 4:
                _consume_width(WG, rings, epi, step, K, N, BLOCK_M // 4, STAGES, SPLIT_K, hand)
            elif NARROW >= 1 and size - m0 <= BLOCK_M // 2:
                _consume_width(WG, rings, epi, step, K, N, BLOCK_M // 2, STAGES, SPLIT_K, hand)
            else:
                _consume_width(WG, rings, epi, step, K, N, BLOCK_M, STAGES, SPLIT_K, hand)
            step += K_TILES
            done += 1


@gluon.jit
def _consume_0(rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
               STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr):  # fmt: skip
    _consume(0, rings, out, work, handover, K, N, BLOCK_M, STAGES, NARROW, SPLIT_K)


@gluon.jit
def _consume_1(rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
               STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr):  # fmt: skip
    _consume(1, rings, out, work, handover, K, N, BLOCK_M, STAGES, NARROW, SPLIT_K)


@gluon.jit
def bmm1_sm90_ws_kernel(
    x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, schedule_ptr, x_scale_ptr,
    out_scale_ptr, out_ptr, alpha, limit,  # as _sm90._bmm1_sm90_kernel's
    items,  # schedule entries x column blocks (128 rows, 64 with SPLIT_K): a program takes items pid, pid + grid, ...
    K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, NUM_STAGES: gl.constexpr, NARROW: gl.constexpr,
    SPLIT_K: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr,
):  # fmt: skip
    ROWS: gl.constexpr = 2 * _ROW_BLOCK
    x_nvmma: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    plain2: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    x_ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NUM_STAGES, BLOCK_M, _TILE_K], x_nvmma)
    w_shape: gl.constexpr = [NUM_STAGES, _ROW_BLOCK, _TILE_K // 8]
    full = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    if SPLIT_K:  # one row block, read by both consumers; consumer 1's sum handed over through `sums`
        w_one = gl.allocate_shared_memory(gl.int32, w_shape, plain2)
        w_ring = (w_one, w_one)
        sums = gl.allocate_shared_memory(gl.float32, [_ROW_BLOCK, BLOCK_M], plain2)
        handover = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        mbarrier.init(handover.index(0), count=1)
        mbarrier.init(handover.index(1), count=1)
        hand = (handover.index(0), handover.index(1))
    else:
        # each consumer's words in a ring of their own: the copies into one do not order those into the other
        w_ring = (
            gl.allocate_shared_memory(gl.int32, w_shape, plain2),
            gl.allocate_shared_memory(gl.int32, w_shape, plain2),
        )
        sums = x_ring  # (not read)
        hand = (full.index(0), empty.index(0))  # (not waited on)
    s_ring = gl.allocate_shared_memory(gl.int32, [NUM_STAGES, ROWS], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(full.index(i), count=32 * 4)  # each producer thread's copies (4 warps)
        mbarrier.init(empty.index(i), count=2 - SPLIT_K)  # each consumer warpgroup that reads the slot

    rings = (x_ring, w_ring, s_ring, full, empty, sums)
    out = (bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit)
    work = (schedule_ptr, slice_sizes_ptr, slice_offs_ptr, items)
    gl.warp_specialize(
        [
            (_consume_0, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K)),
            (_consume_1, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K)),
            (_produce, (x_ptr, gather_ptr, words_ptr, scales_ptr, work, x_ring, w_ring, s_ring, full, empty, K, N,
                        BLOCK_M, NUM_STAGES, SPLIT_K)),
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
        "SPLIT_K": int(config.split_k),
        "CONSUMER_REGS": consumer_regs(launch_options(config)["maxnreg"]),
        "PRODUCER_REGS": PRODUCER_REGS,
    }


def launch_options(config) -> dict:
    """The default partition's warps (the workers add 8) and the register cap of all 12."""
    return {"num_warps": 4, "maxnreg": config.maxnreg or WS_MAXNREG}  # Sm90Config.maxnreg with split_k: lower
