"""Hopper BMM1, the fast precision warp-specialized (Sm90Config.warp_specialized): one producer warpgroup copies,
two consumer warpgroups (three with num_warps 12) compute, synchronized by mbarriers only.

A work item is one (token block, 64 weight rows a consumer) tile, as a program is in _sm90; a program walks its items
from its id by the grid's size (one program per multiprocessor with Sm90Config.persistent). The producer warpgroup
(few registers) issues every K tile's cp.async (the gathered x rows, the packed words, the scale words) into a ring
and has them arrive on the slot's `full` barrier once landed (cp.async.mbarrier.arrive). Each consumer warpgroup
owns 64 of the weight rows: it waits on `full`, folds its words into fp8 and chains the tile's four wgmmas
(_sm90._fast_chain), promotes the partial once per tile, releases the slot on `empty`, and runs its own epilogue.
The two consumers never wait on each other; their registers hold no copy pointers (setmaxnreg gives them the
producer's). On the fp8 layout's bytes (_sm90_config.FP8_WS; on three consumers FP8_WS3, the fast fp8 table's entry)
the producer copies the folded bytes, each row block's K tile by one TMA copy with bulk_weights, and the consumers
hand wgmma its A from shared memory: no fold.

With num_warps 12 (the fp8 layout at block_m 128) three consumers share each x tile, an item 192 weight rows: each
waits on its K tile's wgmmas and promotes them on one partial (their registers: 152 a thread), the others' wgmmas
running meanwhile; each runs its epilogue in two halves of tokens, 2 outputs a store (its shared-memory scratch
then leaves room for 4 stages).

At block_m 256 (_sm90_config.WS_HALVES, the fast table's large entry on the packed words) a work item is 256 tokens:
each consumer folds a K tile's words once and runs them on the item's two 128-token halves in turn
(_consume_halves).

With Sm90Config.split_k a work item is 64 weight rows and the consumers split its K tiles (even ring steps to
consumer 0, odd to 1), each slot released by its one reader: each runs half the K chain; consumer 1 hands its sum
over in shared memory (mbarriers `handed`, `taken`) and consumer 0 adds it (in that order: deterministic) and runs
the item's epilogue. docs/sm90.md has the design and the measurements.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from ._epilogue import swiglu_store
from ._sm90 import (
    _FAST_ACC_SCALE,
    _MX_BLOCK,
    _ROW_BLOCK,
    _TILE_K,
    ROW_BLOCK,
    _a_block,
    _Buffers,
    _fast_chain,
    _fold_inputs,
    _folded,
    _k_steps,
    _narrowing,
    _promote,
    _ref_scales,
    _swiglu_tile,
    _w_row,
    _x_block,
    _x_rows,
)
from ._sm90_config import WS_MAXNREG

PRODUCER_REGS = 24  # registers per producer thread (setmaxnreg); launch_options caps all warps at launch
# On the fp8 layout the producer copies twice the weight bytes (17 copies a K tile): at 24 registers it spills 17
# instructions a K tile, and the consumers wait on their slots; at 56 none (its loop 88 SASS), the consumers at 224
# (no fold to hold). On 256-token items (two halves) it copies twice x's rows (21 copies a K tile) and takes the same
# 56: at 24 the consumers starve (1.34x-1.42x the time of 40), at 40 they take 1.04x-1.10x the time of 56.
WIDE_PRODUCER_REGS = 56


def consumer_regs(maxnreg: int, producer_regs: int = PRODUCER_REGS, consumers: int = 2) -> int:
    """Each consumer thread's registers (setmaxnreg, a multiple of 8): what the producer leaves of all warps'."""
    return (maxnreg * 4 * (consumers + 1) - producer_regs * 4) // (4 * consumers) // 8 * 8


CONSUMER_REGS = consumer_regs(WS_MAXNREG)


@gluon.constexpr_function
def _scale_words(consumers):
    """A ring slot's scale words: a power of two, one for each consumer's 64 rows or more."""
    return 2 * ROW_BLOCK if consumers <= 2 else 4 * ROW_BLOCK


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
             N: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr, SPLIT_K: gl.constexpr,
             w_desc, CONSUMERS: gl.constexpr = 2):  # fmt: skip
    """The producer warpgroup, over the program's work items: step t of an item (its partial K tile first, then tiles
    0, 1, ...) into the ring's next slot once its readers (every consumer; split_k: one) have released it; each
    thread's copies arrive on the
    slot's `full` barrier as they land. Token rows past the slice read nothing (zeros). The ring runs on across
    items, so the next item's first tiles load while the consumers run the last one's epilogue. With `w_desc` (the
    fp8 layout's bytes as rows of 128, Sm90Config.bulk_weights) each row block's K tile is one TMA copy completing on
    `full` (its bytes expected by one more arrival) instead of 4 cp.async a thread."""
    K_TILES: gl.constexpr = _k_steps(K)[0]
    FIRST: gl.constexpr = _k_steps(K)[2]
    BLOCKS_N: gl.constexpr = _item_blocks(SPLIT_K, CONSUMERS)
    ROWS: gl.constexpr = BLOCKS_N * _ROW_BLOCK  # weight rows per item
    S_WORDS: gl.constexpr = _scale_words(CONSUMERS)  # a slot's, ROWS used
    W_ROW: gl.constexpr = _w_row(words_ptr.dtype.element_ty)  # a row's K tile: 16 packed words or 128 fp8 bytes
    ROW_ELEMS: gl.constexpr = K_TILES * W_ROW
    W_TILE: gl.constexpr = _ROW_BLOCK * W_ROW  # one K tile of a row block
    # 16 bytes a copy, a warp's 32 copies on whole 128-byte row pieces (x and fp8 bytes: 4 rows, words: 8 rows of 64)
    x_copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [gl.num_warps(), 1], [1, 0])
    if _folded(words_ptr.dtype.element_ty):
        w_copy: gl.constexpr = x_copy
    else:
        w_copy: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    s_copy: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs_s = gl.arange(0, S_WORDS, layout=s_copy)  # scale words a slot: ROWS of them copied
    offs_xk = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, x_copy))
    offs_wn = gl.arange(0, _ROW_BLOCK, layout=gl.SliceLayout(1, w_copy))
    offs_wc = gl.arange(0, W_ROW, layout=gl.SliceLayout(0, w_copy))
    BULK: gl.constexpr = w_desc is not None
    step = 0  # K tiles through the ring so far
    for item in range(gl.program_id(0), work[3], gl.num_programs(0)):
        entry, expert, pid_n, m0, size, start = _item(work, item, N, BLOCK_M, ROWS)
        if entry >= 0:
            x_ptrs = _x_rows(x_ptr, gather_ptr, start, size, m0, BLOCK_M, x_copy, K)
            in_slice = (m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, x_copy)) < size)[:, None]
            row0 = expert.to(gl.int64) * N + pid_n * ROWS
            # [row block, K tile, row, word or byte]: a consumer's 64 rows of one K tile are one piece (4 or 8 KB)
            w_ptrs = words_ptr + (row0 // _ROW_BLOCK * (_ROW_BLOCK * ROW_ELEMS) + offs_wn * W_ROW)[:, None]
            w_ptrs = w_ptrs + offs_wc[None, :]
            s_rows = gl.minimum(offs_s, ROWS - 1) if S_WORDS > ROWS else offs_s  # masked words stay in bounds
            s_ptrs = scales_ptr + expert.to(gl.int64) * K_TILES * N + pid_n * ROWS + s_rows
            for t in range(K_TILES):
                slot = (step + t) % STAGES
                mbarrier.wait(empty.index(slot), (step + t) // STAGES & 1 ^ 1)  # the first round passes
                tile = t - FIRST + (t < FIRST) * K_TILES  # step 0 takes the partial tile (K_TILES - 1)
                k0 = tile * _TILE_K
                in_k = (offs_xk < K - k0)[None, :]
                cp.async_copy_global_to_shared(x_ring.index(slot), x_ptrs + k0, mask=in_slice & in_k)
                if BULK:
                    mbarrier.expect(full.index(slot), BLOCKS_N * W_TILE)
                    for h in gl.static_range(BLOCKS_N):  # row blocks of K_TILES tiles of 64 rows
                        row = (row0 // _ROW_BLOCK + h) * (K_TILES * _ROW_BLOCK) + tile * _ROW_BLOCK
                        tma.async_copy_global_to_shared(w_desc, [row.to(gl.int32), 0], full.index(slot),
                                                        w_ring[h].index(slot))  # fmt: skip
                else:
                    for h in gl.static_range(BLOCKS_N):  # each consumer's 64 rows: a row block of its own
                        w_half = w_ptrs + (h * _ROW_BLOCK * ROW_ELEMS + tile * W_TILE)
                        cp.async_copy_global_to_shared(w_ring[h].index(slot), w_half)
                if S_WORDS > ROWS:  # ROWS scale words (the rest of the slot is zero-filled, never read)
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
def _chunk(rings, t0, STRIDE: gl.constexpr, STEPS: gl.constexpr, RB: gl.constexpr, W: gl.constexpr,
           STAGES: gl.constexpr, acc, even, odd, BLOCKS: gl.constexpr = _TILE_K // _MX_BLOCK):  # fmt: skip
    """STEPS K tiles of ring steps t0, t0 + STRIDE, ...: each tile's wgmmas chained into one of two partials while
    the tile before is promoted and its slot released; the last drained (a wgmma in flight across the loop's back
    edge would have ptxas serialize them all). BLOCKS: the first tile's 32-wide K blocks (the partial tile's)."""
    even_flight, odd_flight = even, odd
    ref_even = gl.zeros((_ROW_BLOCK,), gl.float32, gl.SliceLayout(1, even.type.layout))
    ref_odd = ref_even
    for r in gl.static_range(STEPS):
        t = t0 + r * STRIDE
        landed = _landed(rings, t, RB, W, STAGES)
        if r % 2 == 0:
            even_flight, _, ref_even = _fast_chain(landed, even, _ROW_BLOCK, BLOCKS if r == 0 else _TILE_K // _MX_BLOCK)
            if r > 0:  # the tile before, while this one's wgmmas run
                odd = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(odd_flight,))
                mbarrier.arrive(rings[4].index((t - STRIDE) % STAGES), count=1)
                acc = _promote(odd, ref_odd[:, None], acc)
        else:
            odd_flight, _, ref_odd = _fast_chain(landed, odd, _ROW_BLOCK)
            even = warpgroup_mma_wait(num_outstanding=_TILE_K // _MX_BLOCK, deps=(even_flight,))
            mbarrier.arrive(rings[4].index((t - STRIDE) % STAGES), count=1)
            acc = _promote(even, ref_even[:, None], acc)
    last = (t0 + (STEPS - 1) * STRIDE) % STAGES
    if STEPS % 2:
        even = warpgroup_mma_wait(num_outstanding=0, deps=(even_flight,))
        mbarrier.arrive(rings[4].index(last), count=1)
        acc = _promote(even, ref_even[:, None], acc)
    else:
        odd = warpgroup_mma_wait(num_outstanding=0, deps=(odd_flight,))
        mbarrier.arrive(rings[4].index(last), count=1)
        acc = _promote(odd, ref_odd[:, None], acc)
    return acc, even, odd


@gluon.jit
def _one_tile(rings, step, RB: gl.constexpr, W: gl.constexpr, STAGES: gl.constexpr, acc, part, BLOCKS: gl.constexpr):
    """Ring step `step`'s K tile on one partial: its wgmmas chained, waited on, the slot released, the partial
    promoted into acc."""
    landed = _landed(rings, step, RB, W, STAGES)
    flight, _, ref = _fast_chain(landed, part, _ROW_BLOCK, BLOCKS)
    part = warpgroup_mma_wait(num_outstanding=0, deps=(flight,))
    mbarrier.arrive(rings[4].index(step % STAGES), count=1)
    return _promote(part, ref[:, None], acc), part


@gluon.jit
def _lead(WG: gl.constexpr, handover):
    """With LAG: consumer 0 tells consumer 1 it may start the item (once 1 has taken the last such word); consumer 1
    waits for it. `handover`: (`handed`, `taken`, phase), split_k's barriers (LAG and split_k never meet)."""
    handed, taken, phase = handover
    if WG == 0:
        mbarrier.wait(taken, phase ^ 1)  # the first round passes
        mbarrier.arrive(handed, count=1)
    else:
        mbarrier.wait(handed, phase)
        mbarrier.arrive(taken, count=1)


@gluon.jit
def _consume_width(WG: gl.constexpr, rings, epi, step, K: gl.constexpr, N: gl.constexpr, W: gl.constexpr,
                   STAGES: gl.constexpr, SPLIT_K: gl.constexpr, handover, CHUNK: gl.constexpr,
                   LAG: gl.constexpr, CONSUMERS: gl.constexpr = 2):  # fmt: skip
    """Consumer WG's K loop on an item's first W tokens, its K tiles from ring step `step` on (with SPLIT_K, every
    other one from step + WG), in chunks of CHUNK (_chunk), then its epilogue (with SPLIT_K: consumer 1 hands its sum
    to consumer 0, which adds it and stores). With LAG, consumer 1 starts the item's K loop once consumer 0 has done
    LAG chunks of it (ping-pong: each one's epilogue under the other's wgmmas). `rings`: (x, words, scales, full,
    empty, handover buffer); `epi`: (bias, x_scale, out_scale, out, alpha, limit, expert, pid_n, size, start, m0);
    `handover`: (`handed`, `taken` barrier, phase)."""
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert, pid_n, size, start, m0 = epi
    K_TILES: gl.constexpr = _k_steps(K)[0]
    LAST_BLOCKS: gl.constexpr = _k_steps(K)[1]
    FIRST: gl.constexpr = _k_steps(K)[2] * (WG == 0 or not SPLIT_K)  # the partial tile is ring step 0's
    STRIDE: gl.constexpr = 1 + SPLIT_K  # ring steps between this consumer's K tiles
    MINE: gl.constexpr = (K_TILES - WG * SPLIT_K + SPLIT_K) // STRIDE  # its K tiles
    CHUNKS: gl.constexpr = (MINE - FIRST) // CHUNK
    RB: gl.constexpr = WG * (1 - SPLIT_K)  # the row block it reads (split_k: the item's one)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, W, 32]
    )
    acc = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    even = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    odd = gl.zeros((_ROW_BLOCK, W), dtype=gl.float32, layout=acc_layout)
    first = step + WG * SPLIT_K  # its first ring step
    if LAG and WG == 1:
        _lead(WG, handover)
    if CONSUMERS > 2:  # one partial, each K tile waited on and promoted: the other consumers' wgmmas run meanwhile
        if FIRST:
            acc, even = _one_tile(rings, first, RB, W, STAGES, acc, even, LAST_BLOCKS)
        for t in range(FIRST, MINE):
            acc, even = _one_tile(rings, first + t, RB, W, STAGES, acc, even, _TILE_K // _MX_BLOCK)
    else:
        if FIRST:
            acc, even, odd = _chunk(rings, first, STRIDE, 1, RB, W, STAGES, acc, even, odd, LAST_BLOCKS)
        for c in range(CHUNKS):
            acc, even, odd = _chunk(rings, first + (FIRST + c * CHUNK) * STRIDE, STRIDE, CHUNK, RB, W, STAGES, acc,
                                    even, odd)  # fmt: skip
            if LAG and WG == 0:  # noqa: SIM102 (constexprs, then a runtime test: Gluon folds the first away)
                if c == LAG - 1:
                    _lead(WG, handover)
        if (MINE - FIRST) % CHUNK:  # the whole tiles past the last chunk
            acc, even, odd = _chunk(rings, first + (FIRST + CHUNKS * CHUNK) * STRIDE, STRIDE, (MINE - FIRST) % CHUNK,
                                    RB, W, STAGES, acc, even, odd)  # fmt: skip
    if LAG and WG == 0 and CHUNKS < LAG:  # fewer chunks than LAG: consumer 1 starts now
        _lead(WG, handover)
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
        block = _item_blocks(SPLIT_K, CONSUMERS) * pid_n + WG  # this warpgroup's 64-row column block
        row0 = expert.to(gl.int64) * N + block * _ROW_BLOCK
        if CONSUMERS > 2 and W > 64:  # in two halves of tokens: half the epilogue's shared-memory scratch
            lower, upper = gl.split(gl.permute(acc.reshape([_ROW_BLOCK, 2, W // 2]), (0, 2, 1)))  # tokens
            # each half's stores 2 outputs wide (a token row's 32 bytes a half-warp; 8 wide would not fit 4 stages)
            swiglu_store(lower, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, block, start,
                         size, N, W // 2, _ROW_BLOCK, 4, True, _FAST_ACC_SCALE)  # fmt: skip
            swiglu_store(upper, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0 + W // 2,
                         block, start, size, N, W // 2, _ROW_BLOCK, 4, True, _FAST_ACC_SCALE)  # fmt: skip
        else:
            _swiglu_tile(
                acc, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, block, start, size, N,
                _FAST_ACC_SCALE,
            )  # fmt: skip


@gluon.jit
def _landed_halves(rings, step, WG: gl.constexpr, STAGES: gl.constexpr):
    """_landed for two 128-token halves: the first half as x, the second as x_tail."""
    whole = _landed(rings, step, WG, 4 * _ROW_BLOCK, STAGES)
    HALF: gl.constexpr = 2 * _ROW_BLOCK
    return _Buffers(whole.x.slice(0, HALF, dim=0), whole.w, whole.s, whole.x.slice(HALF, HALF, dim=0))


@gluon.jit
def _half_chain(a, x_tile, part, BLOCKS: gl.constexpr):
    """One token half's chain of a K tile's first BLOCKS wgmmas on the blocks' A operands `a`, waited on."""
    part = warpgroup_mma(a[0], _x_block(x_tile, 0), part, use_acc=False, is_async=True)
    for j in gl.static_range(1, BLOCKS):
        part = warpgroup_mma(a[j], _x_block(x_tile, j), part, is_async=True)
    return warpgroup_mma_wait(num_outstanding=0, deps=(part,))


@gluon.jit
def _halves_tile(stage: _Buffers, part, acc0, acc1, BLOCKS: gl.constexpr, HALVES: gl.constexpr = 2):
    """A K tile on two token halves (stage.x, stage.x_tail) of one fold: the weights folded once and kept in
    registers, each half's chain promoted into its own sum before the next half's chain takes the partial. HALVES 1:
    the first half alone (an item of at most 128 tokens)."""
    acc_layout: gl.constexpr = part.type.layout
    ref = _ref_scales(stage, acc_layout)[:, None]
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=4)
    blocks, sw = (None, None) if _folded(stage.w.dtype) else _fold_inputs(stage, _ROW_BLOCK)
    a0 = _a_block(stage, blocks, sw, 0, _ROW_BLOCK, a_layout)
    a1 = a0
    a2 = a0
    a3 = a0
    if BLOCKS > 1:
        a1 = _a_block(stage, blocks, sw, 1, _ROW_BLOCK, a_layout)
    if BLOCKS > 2:
        a2 = _a_block(stage, blocks, sw, 2, _ROW_BLOCK, a_layout)
    if BLOCKS > 3:
        a3 = _a_block(stage, blocks, sw, 3, _ROW_BLOCK, a_layout)
    a = (a0, a1, a2, a3)
    part = _half_chain(a, stage.x, part, BLOCKS)
    acc0 = _promote(part, ref, acc0)
    if HALVES == 2:
        part = _half_chain(a, stage.x_tail, part, BLOCKS)
        acc1 = _promote(part, ref, acc1)
    return part, acc0, acc1


@gluon.jit
def _consume_halves(WG: gl.constexpr, rings, epi, step, K: gl.constexpr, N: gl.constexpr, STAGES: gl.constexpr,
                    HALVES: gl.constexpr):  # fmt: skip
    """Consumer WG's K loop on an item of two 128-token halves (BLOCK_M 256, the packed words): each K tile's words
    folded once for both (_halves_tile), its slot released once both halves' wgmmas are done; then each half's
    epilogue. HALVES 1: an item of at most 128 tokens, on one partial and one sum (the pairs' two partials and sum
    would not fit the consumer's registers)."""
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, expert, pid_n, size, start, m0 = epi
    K_TILES: gl.constexpr = _k_steps(K)[0]
    LAST_BLOCKS: gl.constexpr = _k_steps(K)[1]
    FIRST: gl.constexpr = _k_steps(K)[2]
    HALF: gl.constexpr = 2 * _ROW_BLOCK
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, HALF, 32]
    )
    acc0 = gl.zeros((_ROW_BLOCK, HALF), dtype=gl.float32, layout=acc_layout)
    acc1 = gl.zeros((_ROW_BLOCK, HALF), dtype=gl.float32, layout=acc_layout)
    part = gl.zeros((_ROW_BLOCK, HALF), dtype=gl.float32, layout=acc_layout)
    if FIRST:  # ring step 0: the partial tile's blocks
        part, acc0, acc1 = _halves_tile(_landed_halves(rings, step, WG, STAGES), part, acc0, acc1, LAST_BLOCKS, HALVES)
        mbarrier.arrive(rings[4].index(step % STAGES), count=1)
    for t in range(FIRST, K_TILES):
        landed = _landed_halves(rings, step + t, WG, STAGES)
        part, acc0, acc1 = _halves_tile(landed, part, acc0, acc1, _TILE_K // _MX_BLOCK, HALVES)
        mbarrier.arrive(rings[4].index((step + t) % STAGES), count=1)
    block = 2 * pid_n + WG  # this warpgroup's 64-row column block
    row0 = expert.to(gl.int64) * N + block * _ROW_BLOCK
    _swiglu_tile(acc0, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0, block, start, size, N,
                 _FAST_ACC_SCALE)  # fmt: skip
    if HALVES == 2:
        _swiglu_tile(acc1, bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, row0, m0 + HALF, block, start,
                     size, N, _FAST_ACC_SCALE)  # fmt: skip


@gluon.jit
def _consume(WG: gl.constexpr, rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
             STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr, CHUNK: gl.constexpr,
             LAG: gl.constexpr, CONSUMERS: gl.constexpr):  # fmt: skip
    """Consumer warpgroup WG (0: the default partition, 1 and 2: workers) over the program's work items, each on its
    tile's width: a slice's last rows take a half or a quarter of BLOCK_M where they fit (NARROW halvings at most).
    `out`: (bias, x_scale, out_scale, out, alpha, limit); `handover`: split_k's or LAG's (`handed`, `taken`)
    barriers."""
    K_TILES: gl.constexpr = _k_steps(K)[0]
    step = 0  # K tiles through the ring so far
    done = 0  # items taken: the handover barriers' phase
    ROWS: gl.constexpr = _item_blocks(SPLIT_K, CONSUMERS) * _ROW_BLOCK  # weight rows per item
    for item in range(gl.program_id(0), work[3], gl.num_programs(0)):
        entry, expert, pid_n, m0, size, start = _item(work, item, N, BLOCK_M, ROWS)
        if entry >= 0:
            epi = (out[0], out[1], out[2], out[3], out[4], out[5], expert, pid_n, size, start, m0)
            hand = (handover[0], handover[1], done & 1)
            if NARROW >= 2 and size - m0 <= BLOCK_M // 4:
                _consume_width(WG, rings, epi, step, K, N, BLOCK_M // 4, STAGES, SPLIT_K, hand, CHUNK, LAG, CONSUMERS)
            elif NARROW >= 1 and size - m0 <= BLOCK_M // 2:
                if BLOCK_M == 4 * _ROW_BLOCK:  # one half of one fold
                    _consume_halves(WG, rings, epi, step, K, N, STAGES, 1)
                else:
                    _consume_width(
                        WG, rings, epi, step, K, N, BLOCK_M // 2, STAGES, SPLIT_K, hand, CHUNK, LAG, CONSUMERS
                    )
            elif BLOCK_M == 4 * _ROW_BLOCK:  # two 128-token halves of one fold
                _consume_halves(WG, rings, epi, step, K, N, STAGES, 2)
            else:
                _consume_width(WG, rings, epi, step, K, N, BLOCK_M, STAGES, SPLIT_K, hand, CHUNK, LAG, CONSUMERS)
            step += K_TILES
            done += 1


@gluon.jit
def _consume_0(rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
               STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr, CHUNK: gl.constexpr,
               LAG: gl.constexpr, CONSUMERS: gl.constexpr):  # fmt: skip
    _consume(0, rings, out, work, handover, K, N, BLOCK_M, STAGES, NARROW, SPLIT_K, CHUNK, LAG, CONSUMERS)


@gluon.jit
def _consume_1(rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
               STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr, CHUNK: gl.constexpr,
               LAG: gl.constexpr, CONSUMERS: gl.constexpr):  # fmt: skip
    _consume(1, rings, out, work, handover, K, N, BLOCK_M, STAGES, NARROW, SPLIT_K, CHUNK, LAG, CONSUMERS)


@gluon.jit
def _consume_2(rings, out, work, handover, K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr,
               STAGES: gl.constexpr, NARROW: gl.constexpr, SPLIT_K: gl.constexpr, CHUNK: gl.constexpr,
               LAG: gl.constexpr, CONSUMERS: gl.constexpr):  # fmt: skip
    _consume(2, rings, out, work, handover, K, N, BLOCK_M, STAGES, NARROW, SPLIT_K, CHUNK, LAG, CONSUMERS)


@gluon.jit
def bmm1_sm90_ws_kernel(
    x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, schedule_ptr, x_scale_ptr,
    out_scale_ptr, out_ptr, alpha, limit,  # as _sm90._bmm1_sm90_kernel's
    items,  # schedule entries x column blocks (64 rows a consumer, split_k's 64 an item): a program takes pid, ...
    w_desc,  # with bulk weights, the fp8 layout's TMA descriptor (_sm90._bulk_descriptor), else None
    K: gl.constexpr, N: gl.constexpr, BLOCK_M: gl.constexpr, NUM_STAGES: gl.constexpr, NARROW: gl.constexpr,
    SPLIT_K: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr, CHUNK: gl.constexpr,
    LAG: gl.constexpr, CONSUMERS: gl.constexpr,  # consumer warpgroups, each on 64 weight rows of an item
):  # fmt: skip
    S_WORDS: gl.constexpr = _scale_words(CONSUMERS)  # a slot's scale words (_produce)
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
        if _folded(words_ptr.dtype.element_ty):  # the fp8 layout's bytes: wgmma's A, 128-byte swizzled as x
            fp8_shape: gl.constexpr = [NUM_STAGES, _ROW_BLOCK, _TILE_K]
            w0 = gl.allocate_shared_memory(words_ptr.dtype.element_ty, fp8_shape, x_nvmma)
            w1 = gl.allocate_shared_memory(words_ptr.dtype.element_ty, fp8_shape, x_nvmma)
            if CONSUMERS == 3:
                w_ring = (w0, w1, gl.allocate_shared_memory(words_ptr.dtype.element_ty, fp8_shape, x_nvmma))
            else:
                w_ring = (w0, w1)
        else:
            w_ring = (
                gl.allocate_shared_memory(gl.int32, w_shape, plain2),
                gl.allocate_shared_memory(gl.int32, w_shape, plain2),
            )
        sums = x_ring  # (not read)
        hand = (full.index(0), empty.index(0))  # (not waited on)
        if LAG:  # consumer 0's word that consumer 1 may start an item, and 1's that it has taken it
            lead = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
            mbarrier.init(lead.index(0), count=1)
            mbarrier.init(lead.index(1), count=1)
            hand = (lead.index(0), lead.index(1))
    s_ring = gl.allocate_shared_memory(gl.int32, [NUM_STAGES, S_WORDS], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    for i in gl.static_range(NUM_STAGES):
        # each producer thread's copies (4 warps), and with bulk weights the arrival that expects their bytes
        mbarrier.init(full.index(i), count=32 * 4 + (w_desc is not None))
        mbarrier.init(empty.index(i), count=1 if SPLIT_K else CONSUMERS)  # each consumer that reads the slot

    rings = (x_ring, w_ring, s_ring, full, empty, sums)
    out = (bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit)
    work = (schedule_ptr, slice_sizes_ptr, slice_offs_ptr, items)
    if CONSUMERS == 3:  # (the partitions' arguments written out: a tuple held in a variable loses its constexprs)
        gl.warp_specialize(
            [
                (_consume_0, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K, CHUNK, LAG, 3)),
                (_consume_1, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K, CHUNK, LAG, 3)),
                (_consume_2, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K, CHUNK, LAG, 3)),
                (_produce, (x_ptr, gather_ptr, words_ptr, scales_ptr, work, x_ring, w_ring, s_ring, full, empty, K, N,
                            BLOCK_M, NUM_STAGES, SPLIT_K, w_desc, 3)),
            ],
            [4, 4, 4],
            [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS],
        )  # fmt: skip
    else:
        gl.warp_specialize(
            [
                (_consume_0, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K, CHUNK, LAG, 2)),
                (_consume_1, (rings, out, work, hand, K, N, BLOCK_M, NUM_STAGES, NARROW, SPLIT_K, CHUNK, LAG, 2)),
                (_produce, (x_ptr, gather_ptr, words_ptr, scales_ptr, work, x_ring, w_ring, s_ring, full, empty, K, N,
                            BLOCK_M, NUM_STAGES, SPLIT_K, w_desc, 2)),
            ],
            [4, 4],
            [CONSUMER_REGS, PRODUCER_REGS],
        )  # fmt: skip


@gluon.constexpr_function
def _item_blocks(SPLIT_K, CONSUMERS):
    """The 64-row column blocks of a work item: split_k's one (its consumers split the K tiles), else a consumer's."""
    return 1 if SPLIT_K else CONSUMERS


def ws_constexprs(config, k: int, n: int) -> dict:
    """The warp-specialized kernel's compile-time arguments for `config` on weights of that shape."""
    consumers, producer = config.num_warps // 4, producer_regs(config)
    return {
        "K": k,
        "N": n,
        "BLOCK_M": config.block_m,
        "NUM_STAGES": config.num_stages,
        "NARROW": _narrowing(config.narrow_last_tile, config.block_m),
        "SPLIT_K": int(config.split_k),
        "CONSUMER_REGS": consumer_regs(launch_options(config)["maxnreg"], producer, consumers),
        "PRODUCER_REGS": producer,
        "CHUNK": config.overlap_tiles or 2,
        "LAG": config.lag,
        "CONSUMERS": consumers,
    }


def producer_regs(config) -> int:
    """The producer's registers: more where it copies the fp8 layout's bytes or 256 token rows (WIDE_PRODUCER_REGS)."""
    return WIDE_PRODUCER_REGS if config.fp8_layout or config.block_m == 4 * ROW_BLOCK else PRODUCER_REGS


def launch_options(config) -> dict:
    """The default partition's warps (the workers add the other consumers' and the producer's) and the register cap
    of all of them."""
    if config.num_warps == 12:  # three consumers: 16 warps share the register file
        return {"num_warps": 4, "maxnreg": 65536 // (32 * 16)}
    return {"num_warps": 4, "maxnreg": config.maxnreg or WS_MAXNREG}  # Sm90Config.maxnreg with split_k: lower
