"""Blackwell (sm_100a) BMM1: the seed's warp-specialized design on triton 3.6.0's Gluon. Compiled, never executed
here: no Blackwell GPU exists in this project's reach (README, "Support").

A persistent grid walks (token block, weight-row block) tiles in banded order. Four partitions share shared-memory
rings and tensor memory:
- activation loader (1 warp): TMA gather of the slice's x rows (rows past the slice read past x: zeros);
- weight loader (1 warp): TMA of the packed e2m1 tile (padded to bytes on the way into shared memory) and its e8m0
  scales, in the layout tcgen05.cp reads;
- MMA (1 warp): scales into tensor memory, then tcgen05 block-scaled MMA, e2m1 weights as the A operand (swap-AB:
  the 128 weight rows fill the MMA's M side, the few tokens its N side), fp32 accumulators in tensor memory;
- epilogue (the default warps): x_scale, bias, SwiGLU, fp8 and direct stores (moe_gather._epilogue).
Left out against the seed: 2-CTA mode and multicast, which triton 3.6.0's Gluon cannot express for this op (its
`tcgen05_mma_scaled` has no two-CTA form, only the unscaled MMA takes one from the accumulator layout; its TMA copies
and gather take no multicast); a tile-major shuffle of the weight values (TMA reads tiles of the K-major packed codes
directly).
"""

from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.blackwell import tma
from triton.experimental.gluon.language.nvidia.hopper import mbarrier
from triton.language.core import _aggregate as aggregate

from ._epilogue import swiglu_store
from ._table import choose
from .mxfp4 import E8M0_BIAS, MX_BLOCK, ExpertShape, MXFP4Weights, dequantize_mxfp4, refuse_nan_scales

TILE_K = 128  # K per stage: 4 scale blocks, 64 bytes of packed codes, 128 bytes of fp8 x
SCALE_ROWS = 128  # rows of one scale-factor group: 32 lanes x 4 row groups (tcgen05.cp 32x128b, warpx4)
_MX_BLOCK = tl.constexpr(MX_BLOCK)
_TILE_K = tl.constexpr(TILE_K)
E8M0_ONE = tl.constexpr(E8M0_BIAS)  # 2 ** 0: x's block scales


@dataclass(frozen=True)
class Sm100Weights(ExpertShape):
    """MXFP4 weights in the sm100 kernel's layout (prepare_weights)."""

    codes: torch.Tensor  # uint8 [E, N, K // 2]: the canonical K-major packed codes, read by TMA as they are
    scales: torch.Tensor  # uint8 [E, N / 128, cdiv(K, 128), 2, 256]: swizzled e8m0 (swizzle_scales), zero past K
    k: int

    precision = "accurate"  # the block-scaled MMA applies each block's scale itself: there is no faster mode


def swizzle_scales(scales: torch.Tensor) -> torch.Tensor:
    """e8m0 [E, N, K/32] -> [E, N/128, K tiles, 2, 256]: per 128 rows and 4 K blocks, 512 bytes with the scale of
    row r, block b at (r % 32) * 16 + (r // 32) * 4 + b, the scale-factor layout tcgen05.cp copies into tensor memory
    (32 lanes, each 4 row groups x 4 blocks). Padded with zeros to whole K tiles."""
    e, n, blocks = scales.shape
    tiles = triton.cdiv(blocks, 4)
    s = torch.nn.functional.pad(scales, (0, 4 * tiles - blocks)).reshape(e, n // SCALE_ROWS, 4, 32, tiles, 4)
    return s.permute(0, 1, 4, 3, 2, 5).reshape(e, n // SCALE_ROWS, tiles, 2, 256).contiguous()


def unswizzle_scales(swizzled: torch.Tensor, blocks: int) -> torch.Tensor:
    """The inverse of swizzle_scales: [E, N/128, tiles, 2, 256] -> [E, N, blocks]."""
    e, groups, tiles = swizzled.shape[:3]
    s = swizzled.reshape(e, groups, tiles, 32, 4, 4).permute(0, 1, 4, 3, 2, 5)
    return s.reshape(e, groups * SCALE_ROWS, 4 * tiles)[..., :blocks]


PRECISIONS = ("accurate",)
DEFAULT_PRECISION = "accurate"


def prepare_for(w: MXFP4Weights, precision: str | None = None, layout: str = "mxfp4") -> Sm100Weights:
    """bmm1.prepare_weights on Blackwell: one precision, "accurate", one layout, "mxfp4"."""
    if layout != "mxfp4":
        raise ValueError(f"layout: the sm100 kernel reads MXFP4 (its MMA applies the block scales), got {layout!r}")
    return prepare_weights(w, precision or DEFAULT_PRECISION)


def prepare_weights(w: MXFP4Weights, precision: str = "accurate") -> Sm100Weights:
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision: the sm100 kernel has {PRECISIONS} (its MMA applies the block scales), got {precision!r}"
        )
    refuse_nan_scales(w)
    if w.n % SCALE_ROWS:
        raise ValueError(f"prepare_weights: the sm100 layout needs N a multiple of {SCALE_ROWS}, got {w.n}")
    return Sm100Weights(w.codes.contiguous(), swizzle_scales(w.scales), w.k)


def emulate_dequant(w: Sm100Weights) -> torch.Tensor:
    """What the kernel multiplies, from Sm100Weights: float64 [E, K, N] (the tests compare it to the exact
    dequantization): the codes as TMA reads them, with the scales read back from their swizzled layout."""
    return dequantize_mxfp4(MXFP4Weights(w.codes, unswizzle_scales(w.scales, w.k // MX_BLOCK)), torch.float64)


@dataclass(frozen=True)
class Sm100Config:
    block_m: int  # tokens per tile: the MMA's N side (16..128)
    block_n: int  # weight rows per tile: the MMA's M side (128, or 256 as two 128-row halves in one CTA)
    x_buffers: int
    w_buffers: int
    acc_buffers: int = 2  # accumulators in tensor memory: the epilogue of one tile overlaps the next tile's MMAs
    num_warps: int = 4  # the epilogue partition
    gather_warps: int = 1  # the activation loader: each thread holds the tile's row indices over these warps
    loader_regs: int = 64  # per thread, both loaders (setmaxnreg)
    mma_regs: int = 48
    occupancy: int = 1  # programs per multiprocessor the persistent grid plans for
    maxnreg: int | None = None
    band_n: int = 18  # column blocks per band of the tile order
    epilogue_m: int | None = None  # tokens per epilogue subtile (None: the whole tile); smaller: less shared memory

    @property
    def epi_m(self) -> int:
        return self.epilogue_m or self.block_m


# The seed's selector as data: expected slice size up to which a config is chosen -> config; first match wins.
# Its 2-CTA entries (block_n 256 over two CTAs for slices of 16-32 and 36-72 rows, 512 from 80) are block_n 128 here;
# its single-CTA block_n 256 (slices of 73-79 rows) is kept, with the epilogue in subtiles of 128 weight rows x 16
# tokens (the seed's subtile factor 8) so that its staging fits beside the rings.
_WIDE = Sm100Config(
    block_m=128, block_n=256, x_buffers=5, w_buffers=4, acc_buffers=1, num_warps=8, gather_warps=4, loader_regs=112,
    band_n=18, epilogue_m=16,
)  # fmt: skip
CONFIGS = (
    (14, Sm100Config(block_m=16, block_n=128, x_buffers=10, w_buffers=5, occupancy=2, maxnreg=64, band_n=22)),
    (32, Sm100Config(block_m=32, block_n=128, x_buffers=5, w_buffers=5, occupancy=2, maxnreg=64, band_n=22)),
    (72, Sm100Config(block_m=64, block_n=128, x_buffers=4, w_buffers=4, occupancy=2, maxnreg=128, band_n=18)),
    (79, _WIDE),
    (
        1 << 30,
        Sm100Config(
            block_m=128, block_n=128, x_buffers=5, w_buffers=4, num_warps=8, gather_warps=4, loader_regs=112, band_n=26
        ),
    ),
)
SHARED_MEMORY_BUDGET = 228 * 1024  # per multiprocessor, B200; each resident block also reserves 1 KiB of it
SHARED_MEMORY_PER_BLOCK = 227 * 1024  # the most one block may allocate
TENSOR_MEMORY_COLUMNS = 512

FORCE_ENV = "MOE_GATHER_SM100_FORCE"


def select_config(ragged, precision: str = "accurate") -> Sm100Config:
    """The seed's key: the global expected slice size (batch * top_k / num_experts); never measured here."""
    return choose(CONFIGS, ragged.expected_slice_size, FORCE_ENV, "sm100")


@aggregate
class _Shared:
    """What the partitions share: descriptors, pointers, rings and their barriers, tensor memory, the tile space."""

    x_desc: tma.tensor_descriptor
    w_desc: tma.tensor_descriptor
    s_desc: tma.tensor_descriptor
    bias_ptr: gl.tensor
    gather_ptr: gl.tensor
    slice_sizes_ptr: gl.tensor
    slice_offs_ptr: gl.tensor
    schedule_ptr: gl.tensor
    x_scale_ptr: gl.tensor
    out_scale_ptr: gl.tensor
    out_ptr: gl.tensor
    alpha: gl.tensor
    limit: gl.tensor
    x_bufs: gl.shared_memory_descriptor
    x_empty: gl.shared_memory_descriptor
    x_ready: gl.shared_memory_descriptor
    w_bufs: gl.shared_memory_descriptor
    s_bufs: gl.shared_memory_descriptor
    w_empty: gl.shared_memory_descriptor
    w_ready: gl.shared_memory_descriptor
    x_scale_tmem: blackwell.tensor_memory_descriptor
    w_scale_tmem: blackwell.tensor_memory_descriptor
    acc_bufs: blackwell.tensor_memory_descriptor
    acc_empty: gl.shared_memory_descriptor
    acc_ready: gl.shared_memory_descriptor
    grid_m: gl.tensor
    num_tiles: gl.tensor
    num_programs: gl.tensor
    N: gl.constexpr
    K: gl.constexpr
    K_TILES: gl.constexpr
    BLOCK_M: gl.constexpr
    BLOCK_N: gl.constexpr
    BAND_N: gl.constexpr
    EPI_M: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, gl.constexpr(value) if name.isupper() else value)

    @gluon.jit
    def tile(self, t):
        """Tile t of the banded order -> (expert, token block, column block): BAND_N column blocks at a time, every
        token block of a band before the next band, so that a band's weights stay in L2 while x streams."""
        GRID_N: gl.constexpr = self.N // self.BLOCK_N
        band_tiles = self.grid_m * self.BAND_N
        band = t // band_tiles
        width = gl.minimum(GRID_N - band * self.BAND_N, self.BAND_N)  # the last band may be narrower
        within = t - band * band_tiles
        entry = gl.load(self.schedule_ptr + within // width)
        return entry & 0xFFFF, entry >> 16, band * self.BAND_N + within % width


@gluon.jit
def _next(index, phase, count: gl.constexpr):
    """Ring position after `index`: wraps to 0 and flips the barrier phase."""
    wrap = index + 1 == count
    return gl.where(wrap, 0, index + 1), gl.where(wrap, phase ^ 1, phase)


@gluon.jit
def _load_activations(p: _Shared):
    rows_layout: gl.constexpr = gl.SliceLayout(0, gl.BlockedLayout([1, 4], [32, 1], [1, gl.num_warps()], [1, 0]))
    count: gl.constexpr = p.x_bufs.shape[0]
    index = 0
    phase = 1  # the first pass through the ring waits on nothing
    for t in range(gl.program_id(0), p.num_tiles, p.num_programs):
        expert, pid_m, _ = p.tile(t)
        size = gl.load(p.slice_sizes_ptr + expert)
        start = gl.load(p.slice_offs_ptr + expert)
        offs_m = pid_m * p.BLOCK_M + gl.arange(0, p.BLOCK_M, layout=rows_layout)
        rows = gl.load(p.gather_ptr + start + offs_m, mask=offs_m < size, other=p.x_desc.shape[0])
        for k in range(p.K_TILES):
            mbarrier.wait(p.x_empty.index(index), phase)
            mbarrier.expect(p.x_ready.index(index), p.BLOCK_M * p.x_desc.block_type.nbytes)
            tma.async_gather(p.x_desc, rows, k * _TILE_K, p.x_ready.index(index), p.x_bufs.index(index))
            index, phase = _next(index, phase, count)


@gluon.jit
def _load_weights(p: _Shared):
    count: gl.constexpr = p.w_bufs.shape[0]
    GROUPS: gl.constexpr = p.BLOCK_N // 128
    # Bytes the copies deliver: the codes arrive padded, one byte per e2m1 value (twice the packed block), and the
    # scale tile as it is.
    nbytes: gl.constexpr = p.BLOCK_N * _TILE_K + p.s_desc.block_type.nbytes
    index = 0
    phase = 1
    for t in range(gl.program_id(0), p.num_tiles, p.num_programs):
        expert, _, pid_n = p.tile(t)
        row0 = expert * p.N + pid_n * p.BLOCK_N
        for k in range(p.K_TILES):
            mbarrier.wait(p.w_empty.index(index), phase)
            mbarrier.expect(p.w_ready.index(index), nbytes)
            tma.async_copy_global_to_shared(p.w_desc, [row0, k * (_TILE_K // 2)], p.w_ready.index(index),
                                            p.w_bufs.index(index))  # fmt: skip
            tma.async_copy_global_to_shared(p.s_desc, [expert, pid_n * GROUPS, k, 0, 0], p.w_ready.index(index),
                                            p.s_bufs.index(index))  # fmt: skip
            index, phase = _next(index, phase, count)


@gluon.jit
def _scales_for_copy(s_buf, BLOCK_N: gl.constexpr):
    """The swizzled scale tile [1, groups, 1, 2, 256] viewed as [BLOCK_N rows, 4 blocks]: a permutation of the
    shared-memory descriptor (no data moves) into the layout tcgen05.cp expects."""
    groups: gl.constexpr = BLOCK_N // 128
    s = s_buf.reshape((groups, 32, 4, 4)).permute((0, 2, 1, 3))  # [group, row group, lane, block]
    return s.reshape((BLOCK_N, 4))


@gluon.jit
def _mma(p: _Shared):
    x_count: gl.constexpr = p.x_bufs.shape[0]
    w_count: gl.constexpr = p.w_bufs.shape[0]
    acc_count: gl.constexpr = p.acc_bufs.shape[0]
    x_index, x_phase = 0, 0
    w_index, w_phase = 0, 0
    acc_index, acc_phase = 0, 1
    for _ in range(gl.program_id(0), p.num_tiles, p.num_programs):
        mbarrier.wait(p.acc_empty.index(acc_index), acc_phase)
        acc = p.acc_bufs.index(acc_index)
        for k in range(p.K_TILES):
            mbarrier.wait(p.w_ready.index(w_index), w_phase)
            blackwell.tcgen05_copy(_scales_for_copy(p.s_bufs.index(w_index), p.BLOCK_N), p.w_scale_tmem)
            mbarrier.wait(p.x_ready.index(x_index), x_phase)
            blackwell.tcgen05_mma_scaled(
                p.w_bufs.index(w_index), p.x_bufs.index(x_index).permute((1, 0)), acc, p.w_scale_tmem,
                p.x_scale_tmem, "e2m1", "e4m3", use_acc=k > 0,
            )  # fmt: skip
            blackwell.tcgen05_commit(p.x_empty.index(x_index))  # the buffers go back once the MMA has read them
            blackwell.tcgen05_commit(p.w_empty.index(w_index))
            x_index, x_phase = _next(x_index, x_phase, x_count)
            w_index, w_phase = _next(w_index, w_phase, w_count)
        blackwell.tcgen05_commit(p.acc_ready.index(acc_index))
        acc_index, acc_phase = _next(acc_index, acc_phase, acc_count)


@gluon.jit
def _epilogue(p: _Shared):
    """Subtiles of 128 weight rows (the halves of a 256-row accumulator) x EPI_M tokens, each stored as a tile of
    its own: the layout conversion of swiglu_store stages one subtile at a time in shared memory."""
    acc_count: gl.constexpr = p.acc_bufs.shape[0]
    HALVES: gl.constexpr = p.BLOCK_N // 128
    M_SPLITS: gl.constexpr = p.BLOCK_M // p.EPI_M
    tmem_layout: gl.constexpr = p.acc_bufs.type.layout
    sub_layout: gl.constexpr = blackwell.get_tmem_reg_layout(
        gl.float32, (128, p.EPI_M), blackwell.TensorMemoryLayout([128, p.EPI_M], col_stride=1), gl.num_warps()
    )
    index, phase = 0, 0
    for t in range(gl.program_id(0), p.num_tiles, p.num_programs):
        expert, pid_m, pid_n = p.tile(t)
        size = gl.load(p.slice_sizes_ptr + expert)
        start = gl.load(p.slice_offs_ptr + expert)
        mbarrier.wait(p.acc_ready.index(index), phase)
        # A [BLOCK_N, BLOCK_M] accumulator sits in tensor memory as HALVES blocks of 128 lanes x BLOCK_M columns.
        halves = p.acc_bufs.index(index)._reinterpret(gl.float32, [HALVES, 128, p.BLOCK_M], tmem_layout)
        for h in gl.static_range(HALVES):
            for c in gl.static_range(M_SPLITS):
                acc = halves.index(h).slice(c * p.EPI_M, p.EPI_M).load(sub_layout)
                if h == HALVES - 1 and c == M_SPLITS - 1:  # the whole buffer read: the MMA may reuse it
                    mbarrier.arrive(p.acc_empty.index(index), count=1)
                row0 = expert.to(gl.int64) * p.N + pid_n * p.BLOCK_N + h * 128
                swiglu_store(
                    acc, p.bias_ptr, p.x_scale_ptr, p.out_scale_ptr, p.out_ptr, p.alpha, p.limit, row0,
                    (pid_m * M_SPLITS + c) * p.EPI_M, pid_n * HALVES + h, start, size, p.N, p.EPI_M, 128,
                )  # fmt: skip
        index, phase = _next(index, phase, acc_count)


@gluon.jit
def _ring(count: gl.constexpr):
    """`count` barriers for the producer's "ready" and `count` for the consumer's "empty", initialized."""
    ready = gl.allocate_shared_memory(gl.int64, [count, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [count, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(count):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    return ready, empty


@gluon.jit
def _bmm1_sm100_kernel(
    x_desc,  # fp8 [batch, K], block [1, 128]: gathered rows
    w_desc,  # e2m1 codes [E * N, K / 2] bytes, block [BLOCK_N, 64], padded to bytes in shared memory
    s_desc,  # swizzled e8m0 [E, N / 128, K tiles, 2, 256], block [1, BLOCK_N / 128, 1, 2, 256]
    bias_ptr, gather_ptr, slice_sizes_ptr, slice_offs_ptr, schedule_ptr, block_offs_ptr, x_scale_ptr, out_scale_ptr,
    out_ptr, alpha, limit, num_programs,
    N: gl.constexpr, K: gl.constexpr, NUM_EXPERTS: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    X_BUFFERS: gl.constexpr, W_BUFFERS: gl.constexpr, ACC_BUFFERS: gl.constexpr,
    BAND_N: gl.constexpr, GATHER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr, MMA_REGS: gl.constexpr,
    EPI_M: gl.constexpr,
):  # fmt: skip
    grid_m = gl.load(block_offs_ptr + NUM_EXPERTS)  # token blocks scheduled, on the device: no host sync
    x_bufs = gl.allocate_shared_memory(x_desc.dtype, [X_BUFFERS, BLOCK_M, _TILE_K], x_desc.layout)
    w_bufs = gl.allocate_shared_memory(w_desc.dtype, [W_BUFFERS] + w_desc.block_type.shape, w_desc.layout)  # noqa: RUF005
    s_bufs = gl.allocate_shared_memory(s_desc.dtype, [W_BUFFERS] + s_desc.block_type.shape, s_desc.layout)  # noqa: RUF005
    x_ready, x_empty = _ring(X_BUFFERS)
    w_ready, w_empty = _ring(W_BUFFERS)
    acc_ready, acc_empty = _ring(ACC_BUFFERS)

    scales_layout: gl.constexpr = blackwell.TensorMemoryScalesLayout()
    x_scale_tmem = blackwell.allocate_tensor_memory(gl.uint8, [BLOCK_M, _TILE_K // _MX_BLOCK], scales_layout)
    w_scale_tmem = blackwell.allocate_tensor_memory(gl.uint8, [BLOCK_N, _TILE_K // _MX_BLOCK], scales_layout)
    acc_layout: gl.constexpr = blackwell.TensorMemoryLayout([128, BLOCK_M], col_stride=1)
    acc_bufs = blackwell.allocate_tensor_memory(gl.float32, [ACC_BUFFERS, BLOCK_N, BLOCK_M], acc_layout)
    ones_layout: gl.constexpr = blackwell.get_tmem_reg_layout(
        gl.uint8, (BLOCK_M, _TILE_K // _MX_BLOCK), scales_layout, gl.num_warps()
    )
    x_scale_tmem.store(gl.full((BLOCK_M, _TILE_K // _MX_BLOCK), E8M0_ONE, gl.uint8, ones_layout))  # x: scale 1

    p = _Shared(
        x_desc=x_desc, w_desc=w_desc, s_desc=s_desc, bias_ptr=bias_ptr, gather_ptr=gather_ptr,
        slice_sizes_ptr=slice_sizes_ptr, slice_offs_ptr=slice_offs_ptr, schedule_ptr=schedule_ptr,
        x_scale_ptr=x_scale_ptr, out_scale_ptr=out_scale_ptr, out_ptr=out_ptr, alpha=alpha, limit=limit,
        x_bufs=x_bufs, x_empty=x_empty, x_ready=x_ready, w_bufs=w_bufs, s_bufs=s_bufs, w_empty=w_empty,
        w_ready=w_ready, x_scale_tmem=x_scale_tmem, w_scale_tmem=w_scale_tmem, acc_bufs=acc_bufs,
        acc_empty=acc_empty, acc_ready=acc_ready, grid_m=grid_m, num_tiles=grid_m * (N // BLOCK_N), N=N, K=K,
        K_TILES=(K + _TILE_K - 1) // _TILE_K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BAND_N=BAND_N, EPI_M=EPI_M,
        num_programs=num_programs,
    )  # fmt: skip
    gl.warp_specialize(
        [(_epilogue, (p,)), (_load_activations, (p,)), (_load_weights, (p,)), (_mma, (p,))],
        [GATHER_WARPS, 1, 1],
        [LOADER_REGS, LOADER_REGS, MMA_REGS],
    )


def _descriptors(x, w: Sm100Weights, config: Sm100Config):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    x_layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    x_desc = TensorDescriptor.from_tensor(x, [1, TILE_K], x_layout)
    codes = w.codes.view(-1, w.codes.shape[-1])
    w_layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, fp4_padded=True)
    w_desc = TensorDescriptor.from_tensor(codes, [config.block_n, TILE_K // 2], w_layout)
    s_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5)
    s_desc = TensorDescriptor.from_tensor(w.scales, [1, config.block_n // SCALE_ROWS, 1, 2, 256], s_layout)
    return x_desc, w_desc, s_desc


def launch(x, w: Sm100Weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config=None):
    """Host launcher; arguments already checked by moe_gather.bmm1."""
    config = config or select_config(ragged)
    if w.n % config.block_n:
        raise ValueError(f"weights: N = {w.n} must be a multiple of {config.block_n}")
    schedule = ragged.block_schedule[config.block_m]
    tiles_bound = schedule.numel() * (w.n // config.block_n)
    programs = max(1, min(torch.cuda.get_device_properties(x.device).multi_processor_count * config.occupancy,
                          tiles_bound))  # fmt: skip
    x_desc, w_desc, s_desc = _descriptors(x, w, config)
    _bmm1_sm100_kernel[(programs,)](
        x_desc, w_desc, s_desc, bias, gather_indx, ragged.slice_sizes, ragged.slice_offs, schedule,
        ragged.block_offs[config.block_m], x_scale, out_scale, out, float(alpha), float(limit), programs,
        N=w.n, K=w.k, NUM_EXPERTS=w.num_experts, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        X_BUFFERS=config.x_buffers, W_BUFFERS=config.w_buffers, ACC_BUFFERS=config.acc_buffers,
        BAND_N=config.band_n, GATHER_WARPS=config.gather_warps, LOADER_REGS=config.loader_regs,
        MMA_REGS=config.mma_regs, EPI_M=config.epi_m, num_warps=config.num_warps, maxnreg=config.maxnreg,
    )  # fmt: skip
    return out
