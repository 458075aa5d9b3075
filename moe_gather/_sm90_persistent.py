"""The fp8 layout's block_m 128 tile (fast precision, K tiles in chunks of four) in a persistent form
(Sm90Config.persistent without warp_specialized): one program a multiprocessor walks the schedule in three phases
(RaggedMetadata.by_width), its tiles of more than 64 rows at 128 tokens, then those of 33-64 at 64, then the rest at
32, each in the schedule's order (a slice's tiles of a phase one after the other: its weights stay in L2), each
phase's (schedule entry, column block) items in stride, the stride running on from the last phase's (the programs
that took one item more of a phase come last in the next phase's rounds). An item's K loop is the table kernel's
(_sm90._fast_chunk on a ring allocated once at 128 tokens, a narrower item on each stage's first rows); the next
item's first ring tiles are issued before this item's epilogue. Each phase is its own loop at one width: with the
three widths in one loop, ptxas spills in the 128-token K loop (docs/sm90-tried.md)."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.language.core import _aggregate as aggregate

from . import _sm90
from ._sm90 import _ROW_BLOCK, _TILE_K
from .routing import SCHEDULE_PID_SHIFT

_PID_SHIFT = gl.constexpr(SCHEDULE_PID_SHIFT)  # Triton reads only constexpr globals


@aggregate
class _Prefix:
    """A ring whose stages hold x's first `width` rows (a prefix of each stage: the same 128-byte swizzle)."""

    x: gl.shared_memory_descriptor
    w: gl.shared_memory_descriptor
    s: gl.shared_memory_descriptor
    width: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, x, w, s, width):
        self.x, self.w, self.s, self.width = x, w, s, gl.constexpr(width)

    @gluon.jit
    def stage(self, i):
        x = self.x.index(i).slice(0, self.width, dim=0)
        return _sm90._Buffers(x, self.w.index(i), self.s.index(i), x)


@gluon.jit
def _at_width(rings, W: gl.constexpr):
    if rings[0].x.shape[1] == W:
        return rings
    else:
        return (_Prefix(rings[0].x, rings[0].w, rings[0].s, W), _Prefix(rings[1].x, rings[1].w, rings[1].s, W))


@gluon.jit
def _entry(schedule_ptr, item, items, GRID_N: gl.constexpr):
    """The schedule entry of work item `item` (column block item % GRID_N), -1 from `items` on."""
    return gl.load(schedule_ptr + item // GRID_N, mask=item < items, other=-1)


@gluon.jit
def _slice_of(entry, slice_sizes_ptr, slice_offs_ptr):
    """(expert, pid_m, size, start) of a schedule entry; -1 reads slice 0 as one row (nothing is issued for it)."""
    used = entry >= 0
    expert = gl.where(used, entry & ((1 << _PID_SHIFT) - 1), 0)
    pid_m = gl.where(used, entry >> _PID_SHIFT, 0)
    size = gl.where(used, gl.load(slice_sizes_ptr + expert), 1)
    return expert, pid_m, size, gl.load(slice_offs_ptr + expert)


@gluon.jit
def _sources(x_ptr, words_ptr, scales_ptr, gather_ptr, expert, pid_n, size, start, m0, K: gl.constexpr,
             N: gl.constexpr, W: gl.constexpr, BLOCK_N: gl.constexpr):  # fmt: skip
    """The item's copies' sources (_sm90._Sources) at K tile 0: x rows [m0, m0 + W) of the slice, the fp8 layout's
    rows of column block pid_n, their scale words."""
    NUM_WARPS: gl.constexpr = gl.num_warps()
    copy: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [NUM_WARPS, 1], [1, 0])  # 16 bytes a thread
    s_copy: gl.constexpr = gl.BlockedLayout([4], [32], [NUM_WARPS], [0])
    ROW_TILES: gl.constexpr = _sm90._k_steps(K)[0]
    x_ptrs = _sm90._x_rows(x_ptr, gather_ptr, start, size, m0, W, copy, K)
    offs_k = gl.arange(0, _TILE_K, layout=gl.SliceLayout(0, copy))
    rows = expert.to(gl.int64) * N + pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, copy))
    # [row block, K tile, row, 128 bytes]
    w_rows = rows // _ROW_BLOCK * (_ROW_BLOCK * ROW_TILES * _TILE_K) + rows % _ROW_BLOCK * _TILE_K
    w_ptrs = words_ptr + w_rows[:, None]
    offs_s = gl.arange(0, BLOCK_N, layout=s_copy)
    s_ptrs = scales_ptr + expert.to(gl.int64) * ROW_TILES * N + pid_n * BLOCK_N + offs_s
    return _sm90._Sources(x_ptrs, offs_k, w_ptrs + offs_k[None, :], offs_k, s_ptrs, offs_s, x_ptrs)


@gluon.jit
def _item(schedule, item, items, x_ptr, words_ptr, scales_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr,
          K: gl.constexpr, N: gl.constexpr, W: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):  # fmt: skip
    """Work item `item` of a phase (`schedule`: its entries): its entry (-1 from `items` on), expert, first row in the
    slice, the slice's size and first output row, and its copies' sources (_sources) at width W."""
    GRID_N: gl.constexpr = N // BLOCK_N
    entry = _entry(schedule, item, items, GRID_N)
    expert, pid_m, size, start = _slice_of(entry, slice_sizes_ptr, slice_offs_ptr)
    m0 = pid_m * BLOCK_M
    src = _sources(x_ptr, words_ptr, scales_ptr, gather_ptr, expert, item % GRID_N, size, start, m0, K, N, W, BLOCK_N)
    return entry, expert, m0, size, start, src


@gluon.jit
def _fill(rings, src, K: gl.constexpr, N: gl.constexpr, AHEAD: gl.constexpr):
    """An item's first AHEAD ring steps: step 0 the tile that K ends inside (where it is partial), then whole tiles."""
    K_TILES: gl.constexpr = _sm90._k_steps(K)[0]
    FIRST: gl.constexpr = _sm90._k_steps(K)[2]
    WHOLE: gl.constexpr = K_TILES - FIRST
    for i in gl.static_range(AHEAD):
        if i < FIRST:
            _sm90._issue_loads(K_TILES - 1, rings[i % 2].stage(i // 2), src, K, N, K_TILES, 0)
        else:
            _sm90._issue_loads(i - FIRST, rings[i % 2].stage(i // 2), src, WHOLE * _TILE_K, N, WHOLE, 0)


@gluon.jit
def _k_loop(rings, src, K: gl.constexpr, N: gl.constexpr, W: gl.constexpr, BLOCK_N: gl.constexpr,
            AHEAD: gl.constexpr, RING: gl.constexpr):  # fmt: skip
    """An item's K loop once _fill has issued its first steps: the table kernel's (step 0 the partial tile, then
    chunks of four whole tiles); returns the fp32 sums, every copy landed and every wgmma done."""
    K_TILES: gl.constexpr = _sm90._k_steps(K)[0]
    FIRST: gl.constexpr = _sm90._k_steps(K)[2]
    WHOLE: gl.constexpr = K_TILES - FIRST
    CHUNK: gl.constexpr = 4
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, W, 32]
    )
    zeros = gl.zeros((BLOCK_N, W), dtype=gl.float32, layout=acc_layout)
    sums = _sm90._Sums(zeros, zeros, zeros, zeros, zeros)
    if FIRST:
        cp.wait_group(AHEAD - 1)
        gl.thread_barrier()
        _sm90._issue_loads(AHEAD - FIRST, rings[AHEAD % 2].stage(AHEAD // 2 % RING), src, WHOLE * _TILE_K, N, WHOLE, 0)
        sums = _sm90._mma_tile(sums, rings[0].stage(0), rings[0].x, BLOCK_N, W, False, False,
                               _sm90._k_steps(K)[1], False, 0, True)  # fmt: skip
    for p0 in range(FIRST, FIRST + WHOLE // CHUNK * CHUNK, CHUNK):
        sums = _sm90._fast_chunk(sums, rings, src, p0, CHUNK, FIRST, AHEAD, RING, WHOLE, N, BLOCK_N, 0)
    if WHOLE % CHUNK:
        sums = _sm90._fast_chunk(sums, rings, src, FIRST + WHOLE // CHUNK * CHUNK, WHOLE % CHUNK, FIRST, AHEAD, RING,
                                 WHOLE, N, BLOCK_N, 0)  # fmt: skip
    cp.wait_group(0)
    return sums.acc


@gluon.jit
def _phase(rings, x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, schedule_ptr,
           x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, lo, hi, K: gl.constexpr, N: gl.constexpr,
           W: gl.constexpr, NUM_STAGES: gl.constexpr):  # fmt: skip
    """Schedule entries [lo, hi), each tile at width W: their (entry, column block) items in stride, going on from
    the phases before (their lo * GRID_N items): program p takes the items i with (lo * GRID_N + i) % programs == p."""
    BLOCK_N: gl.constexpr = 16 * gl.num_warps()
    GRID_N: gl.constexpr = N // BLOCK_N
    RING: gl.constexpr = NUM_STAGES // 2
    AHEAD: gl.constexpr = NUM_STAGES - 2  # as the table's chunks: no copy lands in a slot still read
    ring = _at_width(rings, W)
    items = (hi - lo) * GRID_N
    schedule = schedule_ptr + lo
    stride = gl.num_programs(0)
    item = (gl.program_id(0) - lo * GRID_N % stride + stride) % stride
    BLOCK_M: gl.constexpr = rings[0].x.shape[1]  # a schedule entry's tokens, whatever the phase's width
    entry, expert, m0, size, start, src = _item(schedule, item, items, x_ptr, words_ptr, scales_ptr, gather_ptr,
                                                slice_sizes_ptr, slice_offs_ptr, K, N, W, BLOCK_M, BLOCK_N)  # fmt: skip
    if entry >= 0:
        _fill(ring, src, K, N, AHEAD)
    while entry >= 0:
        pid_n = item % GRID_N
        acc = _k_loop(ring, src, K, N, W, BLOCK_N, AHEAD, RING)
        # The next item's first steps, before this one's epilogue: every warp's wgmmas are done, the ring is free.
        after = item + stride
        next_entry, n_expert, n_m0, n_size, n_start, next_src = _item(
            schedule, after, items, x_ptr, words_ptr, scales_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, K, N, W,
            BLOCK_M, BLOCK_N
        )  # fmt: skip
        gl.thread_barrier()
        if next_entry >= 0:
            _fill(ring, next_src, K, N, AHEAD)
        call = _sm90._Call(x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, x_scale_ptr, out_scale_ptr, out_ptr,
                           alpha, limit, expert, pid_n, size, start, bias_ptr, schedule_ptr, item, item)  # fmt: skip
        _sm90._store(acc, call, expert.to(gl.int64) * N + pid_n * BLOCK_N, m0, N, 1.0, _sm90._FAST_ACC_SCALE)
        item, entry, src = after, next_entry, next_src
        expert, m0, size, start = n_expert, n_m0, n_size, n_start
    gl.thread_barrier()  # the next phase's first fill after every warp's last epilogue (the ring itself is
    # ordered by the loop's barrier before each fill)


@gluon.jit
def bmm1_sm90_persistent_kernel(
    x_ptr,  # fp8 [batch, K]
    words_ptr,  # the fp8 layout: e4m3 [E, N / 64, cdiv(K, 128), 64, 128]
    scales_ptr,  # int32 [E, cdiv(K, 128), N]: the fast scale words
    bias_ptr,  # fp32 [E, N]
    gather_ptr,  # int32 [tokens]
    slice_sizes_ptr,  # int32 [E]
    slice_offs_ptr,  # int32 [E + 1]
    schedule_ptr,  # int32 [max_blocks]: RaggedMetadata.by_width(block_m), -1 past the end
    bounds_ptr,  # int32 [3]: RaggedMetadata.width_bounds(block_m), each phase's end in the schedule
    x_scale_ptr,  # fp32 [1]
    out_scale_ptr,  # fp32 [1]
    out_ptr,  # fp8 [tokens, N/2]
    alpha,
    limit,
    K: gl.constexpr,
    N: gl.constexpr,
    BLOCK_M: gl.constexpr,
    NUM_STAGES: gl.constexpr,
):
    BLOCK_N: gl.constexpr = 16 * gl.num_warps()
    RING: gl.constexpr = NUM_STAGES // 2
    x_dtype: gl.constexpr = x_ptr.dtype.element_ty
    w_dtype: gl.constexpr = words_ptr.dtype.element_ty
    rings = (
        _sm90._ring(x_dtype, RING, BLOCK_M, 0, BLOCK_N, w_dtype),
        _sm90._ring(x_dtype, RING, BLOCK_M, 0, BLOCK_N, w_dtype),
    )
    lo = 0
    for phase in gl.static_range(3):
        hi = gl.load(bounds_ptr + phase)
        _phase(rings, x_ptr, words_ptr, scales_ptr, bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr,
               schedule_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit, lo, hi, K, N, BLOCK_M >> phase,
               NUM_STAGES)  # fmt: skip
        lo = hi


def launch_persistent(x, words, scales, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config, k, n):
    """One program a multiprocessor (fewer where the schedule has fewer items) over the schedule by width."""
    schedule = ragged.by_width(config.block_m)
    grid = min(schedule.numel() * (n // config.block_n), _sm90._multiprocessors(gather_indx.device))
    if grid:
        bmm1_sm90_persistent_kernel[(grid,)](
            x, words, scales, bias, gather_indx, ragged.slice_sizes, ragged.slice_offs, schedule,
            ragged.width_bounds(config.block_m), x_scale, out_scale, out, float(alpha), float(limit), K=k, N=n,
            BLOCK_M=config.block_m, NUM_STAGES=config.num_stages, num_warps=config.num_warps,
        )  # fmt: skip
    return out
