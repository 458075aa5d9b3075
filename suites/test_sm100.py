"""The sm_100a kernel on the CPU: its weight layout against the exact dequantization, and its compilation for every
config with the shared- and tensor-memory budgets. No Blackwell GPU exists here: this path is compiled, never
executed, until a Blackwell runner runs the nightly workflow (README, "Support")."""

import re

import pytest
import torch
import triton
from _ptxas import ptxas_report, spilled_bytes
from _weights import random_mxfp4
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

from moe_gather import _sm100
from moe_gather.mxfp4 import dequantize_mxfp4


def _random_weights(e=2, n=256, k=320, exponents=(100, 140)):
    return random_mxfp4(e, n, k, exponents)


def test_prepared_weights_dequantize_exactly():
    w = _random_weights()  # K = 320: 2.5 tiles of 128, the last one padded
    assert torch.equal(_sm100.emulate_dequant(_sm100.prepare_weights(w)), dequantize_mxfp4(w, torch.float64))


def test_scale_swizzle_places_each_scale_where_tcgen05_cp_reads_it():
    w = _random_weights(e=1, n=128, k=256, exponents=(0, 255))
    swizzled = _sm100.prepare_weights(w).scales.reshape(1, 1, 2, 512)  # [E, row groups of 128, K tiles, bytes]
    for row in (0, 1, 31, 32, 77, 127):
        for block in range(8):
            tile, b = divmod(block, 4)
            offset = (row % 32) * 16 + (row // 32) * 4 + b  # 32 lanes x (4 row groups x 4 blocks)
            assert swizzled[0, 0, tile, offset] == w.scales[0, row, block]
    assert torch.equal(_sm100.unswizzle_scales(_sm100.swizzle_scales(w.scales), 8), w.scales)


def test_layout_refuses_nan_scales_and_ragged_n():
    w = _random_weights()
    w.scales[0, 0, 0] = 255
    with pytest.raises(ValueError, match="NaN"):
        _sm100.prepare_weights(w)
    with pytest.raises(ValueError, match="multiple of 128"):
        _sm100.prepare_weights(_random_weights(n=96))


X_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
W_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, fp4_padded=True)
S_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5)
CONSTEXPRS = ("N", "K", "NUM_EXPERTS", "BLOCK_M", "BLOCK_N", "X_BUFFERS", "W_BUFFERS", "ACC_BUFFERS", "BAND_N",
              "GATHER_WARPS", "LOADER_REGS", "MMA_REGS", "EPI_M")  # fmt: skip


def compile_sm100(config, n=5760, k=2880, experts=16):
    """triton.compile for sm_100a with the descriptors the launcher builds (their signature strings)."""
    signature = {
        "x_desc": f"tensordesc<fp8e4nv[1, 128],{X_LAYOUT!r}>",
        "w_desc": f"tensordesc<u8[{config.block_n}, 64],{W_LAYOUT!r}>",
        "s_desc": f"tensordesc<u8[1, {config.block_n // 128}, 1, 2, 256],{S_LAYOUT!r}>",
        "bias_ptr": "*fp32", "gather_ptr": "*i32", "slice_sizes_ptr": "*i32", "slice_offs_ptr": "*i32",
        "schedule_ptr": "*i32", "block_offs_ptr": "*i32", "x_scale_ptr": "*fp32", "out_scale_ptr": "*fp32",
        "out_ptr": "*fp8e4nv", "alpha": "fp32", "limit": "fp32", "num_programs": "i32",
        **dict.fromkeys(CONSTEXPRS, "constexpr"),
    }  # fmt: skip
    values = (n, k, experts, config.block_m, config.block_n, config.x_buffers, config.w_buffers, config.acc_buffers,
              config.band_n, config.gather_warps, config.loader_regs, config.mma_regs, config.epi_m)  # fmt: skip
    aligned = {(i,): [["tt.divisibility", 16]] for i in range(3, 14)}  # the pointers, as torch allocates them
    src = GluonASTSource(
        _sm100._bmm1_sm100_kernel, signature, constexprs=dict(zip(CONSTEXPRS, values, strict=True)), attrs=aligned
    )
    options = {"num_warps": config.num_warps, "maxnreg": config.maxnreg}
    return triton.compile(src, target=GPUTarget("cuda", 100, 32), options=options)


@pytest.mark.parametrize("config", [c for _, c in _sm100.CONFIGS], ids=lambda c: f"m{c.block_m}-n{c.block_n}")
def test_every_config_compiles_for_sm100a_within_the_budgets(config, record_property, tmp_path):
    kernel = compile_sm100(config)
    ptx = kernel.asm["ptx"]
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale" in ptx  # e2m1 x e4m3 with e8m0 scales
    assert "tcgen05.cp.cta_group::1.warpx4.32x128b" in ptx  # scales into tensor memory
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.tile::gather4", ptx)  # the fused gather of x rows
    assert "setmaxnreg" in ptx  # warp specialization with register budgets
    report = ptxas_report(ptx, "sm_100a", tmp_path)
    assert spilled_bytes(report) == 0, report
    shared, tmem = kernel.metadata.shared, kernel.metadata.tmem_size
    record_property("resources", f"shared {shared} B x {config.occupancy}, tensor memory {tmem} columns")
    print(f"{config}: shared memory {shared} B, tensor memory {tmem} columns, {config.occupancy} per SM")
    assert shared <= _sm100.SHARED_MEMORY_PER_BLOCK
    assert (shared + 1024) * config.occupancy <= _sm100.SHARED_MEMORY_BUDGET
    assert tmem * config.occupancy <= _sm100.TENSOR_MEMORY_COLUMNS


def test_wide_tile_runs_two_128_row_halves_and_a_subtiled_epilogue():
    """block_n 256 in one CTA (the seed's entry for slices of 73-79 rows): per K tile, each 128-row half of the
    weights gets its own four k-32 block-scaled MMAs and its own scale copy; the epilogue reads the accumulator in
    (half, token subtile) pieces, one tensor-memory load each."""
    wide = next(c for _, c in _sm100.CONFIGS if c.block_n == 256)
    narrow = next(c for _, c in _sm100.CONFIGS if c.block_n == 128 and c.block_m == wide.block_m)
    count = lambda ptx, pattern: len(re.findall(pattern, ptx))
    mma, copy, load = r"tcgen05\.mma\.cta_group::1", r"tcgen05\.cp\.cta_group::1", r"tcgen05\.ld\.sync"
    ptx_wide, ptx_narrow = compile_sm100(wide).asm["ptx"], compile_sm100(narrow).asm["ptx"]
    assert count(ptx_wide, mma) == 2 * count(ptx_narrow, mma) == 2 * 128 // 32
    assert count(ptx_wide, copy) == 2 * count(ptx_narrow, copy) == 2
    assert count(ptx_wide, load) == (wide.block_n // 128) * (wide.block_m // wide.epi_m)
