"""The sm_90a kernel on the CPU: its weight layout against the exact dequantization, and its compilation."""

import importlib.util
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import triton
from _plans import (
    BULK_PLAN,
    DECODE_PLANS,
    FP8_CHUNKS,
    HALVES_FP8_PLAN,
    HALVES_PLAN,
    K_SPLITS_PLANS,
    PERSISTENT_PLAN,
    WIDE_PLAN,
    WS_CONFIG,
    WS_FP8_PLANS,
)
from _ptxas import (
    after_main_loop_sass,
    innermost_loops_sass,
    kernel_sass,
    main_loop_sass,
    ptxas_report,
    registers_used,
    spilled_bytes,
)
from _weights import random_mxfp4
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type

from moe_gather import _sm90, _sm90_decode, _sm90_persistent, _sm90_ws
from moe_gather.mxfp4 import MXFP4Weights, dequantize_mxfp4
from moe_gather.routing import make_ragged_metadata

SHARED_MEMORY_PER_BLOCK = 227 * 1024  # sm_90's most a program can opt into (the H100/H200 datasheets)


def _random_weights(e=2, n=64, k=128, spread=6, seed=0):
    return random_mxfp4(e, n, k, (127 - spread, 128), seed)  # scales 2**-spread .. 2**0


@pytest.mark.parametrize("encoding", ["spread", "f16"])
def test_prepared_words_convert_to_the_exact_weights(encoding):
    w = _random_weights(spread=6)
    prepared = _sm90.prepare_weights(w, f16=encoding == "f16")
    assert prepared.encoding == encoding
    assert torch.equal(_sm90.emulate_dequant(prepared), dequantize_mxfp4(w, torch.float64))


def test_fp16_path_is_chosen_for_widely_spread_scales_only():
    assert not _sm90.prepare_weights(_random_weights(spread=6)).f16  # GPT-OSS-like: a few binades per row
    w = _random_weights(spread=6)
    w.scales[1, 3, 0] = 127 - 30  # one row spans 2**-30 .. 2**0
    assert _sm90.prepare_weights(w).f16
    w.scales[1, 3, 0] = 0  # an all-zero block's scale does not count as spread
    assert not _sm90.prepare_weights(w).f16


def test_spread_encoding_is_e4m3_times_2_pow_minus_6_for_every_code():
    codes = torch.arange(16, dtype=torch.uint8)  # one 32-block of one row: every code, both nibble positions
    packed = (codes[0::2] | (codes[1::2] << 4)).repeat(2).expand(1, 64, 16).contiguous()  # 64 rows: one row block
    w = MXFP4Weights(packed, torch.full((1, 64, 1), 127, dtype=torch.uint8))
    prepared = _sm90.prepare_weights(w, f16=False)
    assert torch.equal(_sm90.emulate_dequant(prepared), dequantize_mxfp4(w, torch.float64))


def test_every_scale_is_exact_however_wide_the_spread_in_a_row():
    w = _random_weights(e=1, n=64, k=32 * 255)
    scales = torch.arange(255, dtype=torch.uint8).expand(1, 64, 255).contiguous()  # 2**-127 .. 2**127 in every row
    w = MXFP4Weights(w.codes, scales)
    assert torch.equal(_sm90.emulate_dequant(_sm90.prepare_weights(w)), dequantize_mxfp4(w, torch.float64))


def test_exact_zero_scale_only_where_a_block_with_nonzero_codes_has_e8m0_0():
    w = _random_weights()
    assert not _sm90.prepare_weights(w).zero_scale
    w.codes[0, 2, :16] = 0x88  # block 0 of row 2: every code -0
    w.scales[0, 2, 0] = 0  # as a quantizer writes a block of zeros
    assert not _sm90.prepare_weights(w).zero_scale
    w.codes[0, 2, 5] = 0x18  # one nonzero code (0.5) in that block: its scale 2**-127 counts
    assert _sm90.prepare_weights(w).zero_scale


def test_words_are_tile_major_with_zeros_past_k():
    """Each 128-wide K tile of a 64-row block is one contiguous 4 KB piece (one DRAM stream per copy instead of 64
    rows of 64 bytes), K padded to whole tiles: the
    bytes of (row n, tile t) sit where the kernel reads them, ((n // 64 * tiles + t) * 64 + n % 64) * 64, and hold
    what emulate_dequant decodes (row_major_words, checked against the exact weights above)."""
    e, n, tiles = 2, 128, 2
    prepared = _sm90.prepare_weights(_random_weights(e=e, n=n, k=192))  # K = 192: half the second tile past K
    assert prepared.words.shape == (e, n // 64, tiles, 64, 64) and prepared.n == n
    flat, rows = prepared.words.reshape(e, -1), _sm90.row_major_words(prepared)  # rows: [E, N, tiles * 64]
    for x, row, t in ((0, 5, 0), (1, 64 + 5, 1), (1, 127, 0)):
        at = ((row // 64 * tiles + t) * 64 + row % 64) * 64
        assert torch.equal(flat[x, at : at + 64], rows[x, row, 64 * t : 64 * t + 64])
    assert not rows[..., 64 + 32 :].any()  # K 192..255: zeros, read without a mask


@pytest.mark.parametrize("k", [32, 96, 128, 192, 2880])
def test_fast_words_and_scale_words_fold_to_the_exact_weights(k):
    """The fast precision's encoding, read back bit for bit as the kernel reads it (each row and block's byte table,
    the tile's reference power of two), equals the exact dequantization: scales spread over the whole window."""
    w = _random_weights(e=2, n=128, k=k, spread=_sm90.FAST_WINDOW)
    prepared = _sm90.prepare_weights(w, precision="fast")
    assert (prepared.encoding, prepared.precision) == ("fast", "fast")
    assert prepared.scales.view(torch.int32).shape == (2, triton.cdiv(k, 128), 128, 1)  # one word per row and tile
    assert torch.equal(_sm90.emulate_dequant(prepared), dequantize_mxfp4(w, torch.float64))


@pytest.mark.parametrize("k", [32, 96, 192, 2880])
def test_layout_fp8_holds_the_folded_values(k):
    """layout "fp8": beside the fast words, each row's K tile as 128 e4m3 bytes in K order, tile-major ([E, N / 64,
    tile, 64, 128], zeros past K): read back as the kernel reads them, with the scale words, the exact weights."""
    w = _random_weights(e=2, n=128, k=k, spread=_sm90.FAST_WINDOW)
    fp8 = _sm90.prepare_weights(w, precision="fast", layout="fp8")
    fast = _sm90.prepare_weights(w, precision="fast")
    assert (fp8.encoding, fp8.precision, fp8.layout, fast.layout) == ("fast+fp8", "fast", "fp8", "mxfp4")
    assert fp8.folded.shape == (2, 2, triton.cdiv(k, 128), 64, 128) and fp8.n == 128 and fast.folded is None
    assert torch.equal(fp8.scales, fast.scales) and torch.equal(fp8.words, fast.words)
    assert torch.equal(_sm90.emulate_dequant(fp8, folded=True), dequantize_mxfp4(w, torch.float64))
    assert not _sm90.row_major_words(fp8, folded=True)[..., k:].any()
    for read in (_sm90.row_major_words, _sm90.emulate_dequant):  # weights without the bytes: refused by name
        with pytest.raises(ValueError, match="fast weights hold no folded bytes"):
            read(fast, folded=True)


def test_layout_fp8_is_the_fast_precision_s_read_by_the_configs_that_ask(monkeypatch):
    """Asked for with another precision or on Blackwell, the layout is refused by name, as is fp8_layout on split_k;
    the fp8 table's block_m 128 entry (the warp-specialized tile) gets the bytes as e4m3, its other entries (and every
    entry on weights without them) the packed words."""
    from moe_gather import bmm1

    w = _random_weights(e=2, n=128, k=256)
    with pytest.raises(ValueError, match="layout='fp8' holds the fast precision's folded values"):
        bmm1.prepare_weights(w, capability=(9, 0), layout="fp8")
    for capability in ((9, 0), (10, 0)):
        with pytest.raises(ValueError, match="layout must be one of"):
            bmm1.prepare_weights(w, capability=capability, precision="fast", layout="fp4")
    with pytest.raises(ValueError, match="layout: the sm100 kernel reads MXFP4"):
        bmm1.prepare_weights(w, capability=(10, 0), layout="fp8")
    fp8 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast", layout="fp8")
    with pytest.raises(ValueError, match=r"warp_specialized takes .* with split_k none of overlap_tiles, fp8_layout"):
        replace(SPLIT_K_CONFIG, fp8_layout=True)
    assert not any(c.fp8_layout for _, c in _sm90.FAST_CONFIGS)
    assert [c.fp8_layout for _, c in _sm90.FAST_FP8_CONFIGS] == [c.block_m == 128 for _, c in _sm90.FAST_FP8_CONFIGS]
    assert not any(c.fp8_layout for _, c in _sm90.CONFIGS)
    launches = _record(monkeypatch, _sm90, "_bmm1_sm90_kernel", 1)
    _record(monkeypatch, _sm90_ws, "bmm1_sm90_ws_kernel", 1, launches=launches)  # the fp8 table's block_m 128
    monkeypatch.setattr(_sm90, "_multiprocessors", lambda device: 5)
    mxfp4 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast")
    runs = [(weights, config) for weights in (fp8, mxfp4) for _, config in _sm90.table("fast", weights.layout)]
    assert [c for _, c in runs] == [*(c for _, c in _sm90.FAST_FP8_CONFIGS), *(c for _, c in _sm90.FAST_CONFIGS)]
    for weights, config in runs:  # one launch each (hot_at's two: test_hot_slices_launch_on_the_large_entry)
        _launch(weights, [900, 700], replace(config, hot_at=0))
    for (_, words, kwargs), (weights, config) in zip(launches, runs, strict=True):
        if config.fp8_layout and weights is fp8:
            assert words.dtype == torch.float8_e4m3fn and torch.equal(words.view(torch.uint8), fp8.folded)
        else:
            assert words.dtype == torch.int32 and torch.equal(words.view(torch.uint8), weights.words)
        assert ("PRODUCER_REGS" in kwargs) == config.warp_specialized  # the fp8 table's block_m 128 entry
    # the fp8 layout's table: the same configs but its block_m 128 entry, which takes over at FP8_WS_FROM rows per
    # slice rather than 186; a call takes its weights' table
    fp8_table, words_table = _sm90.FAST_FP8_CONFIGS, _sm90.FAST_CONFIGS
    assert [c for _, c in fp8_table[:-1]] == [c for _, c in words_table[:-1]] and fp8_table[0] == words_table[0]
    assert fp8_table[1][0] + 1 == _sm90.FP8_WS_FROM <= words_table[1][0]
    assert (fp8_table[-1][1], words_table[-1][1]) == (_sm90.FP8_WS3, _sm90.WS_HALVES)
    m64 = _sm90.FAST_CONFIGS[1][1]
    # (as they run at N 128: the entry's two-consumer form, test_three_consumers_run_where_n_holds_whole_items)
    for per_slice, chosen in ((800, (_sm90.FP8_WS, _sm90.WS_HALVES)), (_sm90.FP8_WS_FROM, (_sm90.FP8_WS, m64)),
                              (_sm90.FP8_WS_FROM - 1, (m64, m64))):  # fmt: skip
        ragged = make_ragged_metadata(torch.tensor([per_slice] * 2, dtype=torch.int32), 2 * per_slice, 4)
        assert tuple(bmm1.select_config(ragged, (9, 0), "fast", weights) for weights in (fp8, mxfp4)) == chosen


def test_three_consumers_run_where_n_holds_whole_items():
    """The fp8 table's entry (three consumers on 192-row items) runs as it is where N is a multiple of 192; elsewhere
    it runs the two-consumer tile (FP8_WS), as it does on the packed words."""
    from moe_gather import bmm1

    words_form = replace(_sm90.FP8_WS, fp8_layout=False, bulk_weights=False)
    for n, expected in ((384, _sm90.FP8_WS3), (5760, _sm90.FP8_WS3), (128, _sm90.FP8_WS), (640, _sm90.FP8_WS)):
        w = _random_weights(e=1, n=n, k=64)
        fp8 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast", layout="fp8")
        mxfp4 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast")
        assert (_sm90.runs_as(_sm90.FP8_WS3, fp8), _sm90.runs_as(_sm90.FP8_WS3, mxfp4)) == (expected, words_form), n
    assert _sm90.runs_as(_sm90.FP8_WS, fp8) == _sm90.FP8_WS  # a two-consumer config is its own on any N


def test_wide_tiles_take_block_m_plus_tail_rows_a_tile_on_the_fp8_layout_only(monkeypatch):
    """wide_tiles is refused by name without tail rows or the fp8 layout; on weights holding the fold's bytes every
    schedule entry is a tile of block_m + tail_rows rows (the kernel told so), on the packed words the config runs
    without its tail rows, as the plain entry."""
    from moe_gather import bmm1

    for fields in ({"tail_rows": 0}, {"fp8_layout": False}):
        with pytest.raises(ValueError, match="wide_tiles widens every tile by tail_rows on the fp8 layout"):
            replace(WIDE_PLAN, **fields)
    assert not _sm90.f16_config(WIDE_PLAN).wide_tiles
    w = _random_weights(e=2, n=128, k=256)
    fp8 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast", layout="fp8")
    mxfp4 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast")
    launches = _record(monkeypatch, _sm90, "_bmm1_sm90_kernel", 1, 7)  # words, schedule
    sizes = [500, 129]  # 192 + 192 + 116 rows, and one 129-row tile; by 128: 4 + 2 tiles
    for weights in (fp8, mxfp4):
        _launch(weights, sizes, WIDE_PLAN)
    (grid, words, wide, kwargs), (_, plain_words, plain, plain_kwargs) = launches
    assert words.dtype == torch.float8_e4m3fn and plain_words.dtype == torch.int32
    assert kwargs["WIDE"] and kwargs["TAIL_ROWS"] == 64 and not plain_kwargs["WIDE"] and plain_kwargs["TAIL_ROWS"] == 0
    entries = lambda s: [(int(e) & 0xFFFF, int(e) >> 16) for e in s if e >= 0]  # (slice, pid_m)
    assert entries(wide) == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert entries(plain) == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]
    assert grid == (wide.numel(),)  # N = 128: one column block
    launches.clear()  # widest first: the 192-row tiles, then the last ones by their rows (129, then 116)
    _launch(fp8, sizes, replace(WIDE_PLAN, widest_first=True))
    assert entries(launches[0][2]) == [(0, 0), (0, 1), (1, 0), (0, 2)]


def test_wide_tiles_compile_with_both_wgmmas(tmp_path):
    """The wide plan compiles for sm_90a with a tile of the tail rows' wgmmas (N 64) beside the tile's (N 128): more
    of each than the chunks of four's kernel (whose narrowed tiles have N 64 and 32 too), with no more spills than
    the entry's budget (its chunks of four K tiles, compiled in the same kernel)."""

    def wgmmas(config):
        ptx = compile_sm90(config, fast=True, layout="fp8").asm["ptx"]
        shapes = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k32", ptx)
        return {n: shapes.count(n) for n in ("128", "64", "32")}, ptx

    (wide, ptx), (entry, _) = wgmmas(WIDE_PLAN), wgmmas(FP8_CHUNKS)
    assert wide["128"] > entry["128"] and wide["64"] > entry["64"] and wide["32"] == entry["32"], (wide, entry)
    assert spilled_bytes(ptxas_report(ptx, "sm_90a", tmp_path)) <= SPILL_BUDGET[(128, "fast")]


def test_bulk_weights_are_the_fp8_layout_s_in_chunks_and_get_a_descriptor(monkeypatch):
    """bulk_weights is refused by name off the fp8 layout's chunks of four; the launcher hands the kernel a TMA
    descriptor of the fold's bytes (64-row boxes of 128 bytes) only where the config reads them."""
    from moe_gather import bmm1

    base = BULK_PLAN
    for bad in ({"fp8_layout": False}, {"overlap_tiles": 2}, {"k_splits": 2}):
        with pytest.raises(ValueError, match="bulk_weights reads the fp8 layout in chunks of four"):
            replace(base, **bad)
    w = _random_weights(e=2, n=128, k=256)
    fp8 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast", layout="fp8")
    mxfp4 = bmm1.prepare_weights(w, capability=(9, 0), precision="fast")
    launches = _record(monkeypatch, _sm90, "_bmm1_sm90_kernel", 15)
    for weights, config in ((fp8, base), (mxfp4, base), (fp8, replace(base, bulk_weights=False))):
        _launch(weights, [300, 200], config)
    (_, desc, kwargs), *others = launches
    assert kwargs["BULK_W"] and desc.block_shape == [64, 128] and desc.base.dtype == torch.float8_e4m3fn
    assert desc.base.data_ptr() == fp8.folded.data_ptr() and list(desc.shape) == [fp8.folded.numel() // 128, 128]
    assert [d for _, d, _ in others] == [None, None]


def test_bulk_weights_copy_by_tma_and_fewer_cp_async(tmp_path):
    """The bulk plan's PTX: each K tile's issue takes one expect on its stage's barrier and the weights' copies by TMA
    in place of each thread's four 16-byte cp.async of them (x and the scales keep theirs); the barriers are
    invalidated before the epilogue; no spills, within shared memory."""
    plain, bulk = (compile_sm90(c, fast=True, layout="fp8") for c in (replace(BULK_PLAN, bulk_weights=0), BULK_PLAN))
    plain_ptx, bulk_ptx = plain.asm["ptx"], bulk.asm["ptx"]
    assert "cp.async.bulk.tensor" not in plain_ptx and "mbarrier" not in plain_ptx
    issues = bulk_ptx.count("mbarrier.arrive.expect_tx")
    copies = bulk_ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes")
    assert issues and copies == 2 * issues  # a 128-row tile: two row blocks
    weight_copies = 128 * 128 // 16 // (32 * BULK_PLAN.num_warps)  # a thread's 16-byte pieces of a K tile's weights
    assert plain_ptx.count("cp.async.cg.shared.global") - bulk_ptx.count("cp.async.cg.shared.global") == (
        weight_copies * issues
    )
    assert "mbarrier.try_wait" in bulk_ptx and "mbarrier.inval" in bulk_ptx
    assert spilled_bytes(ptxas_report(bulk_ptx, "sm_90a", tmp_path)) == 0
    assert bulk.metadata.shared <= SHARED_MEMORY_PER_BLOCK


@pytest.mark.parametrize("layout", ["mxfp4", "fp8"])
def test_slot_buffers_keep_one_bar_sync_a_k_tile(layout, tmp_path):
    """The chunks of four K tiles load into the ring being read (4 stages, two loaded ahead): with one allocation a
    ring Triton's barrier analysis adds a second bar.sync a tile; with each stage its own allocation (slot_buffers)
    one a tile stays, the loop no longer and spilling no more. Off the chunks of four, slot_buffers is refused."""
    large = FP8_CHUNKS
    for bad in ({"overlap_tiles": 2}, {"num_stages": 6}):
        with pytest.raises(ValueError, match="slot_buffers runs the chunks of four K tiles"):
            replace(large, slot_buffers=True, **bad)
    loops, spills = [], []
    for config in (large, replace(large, slot_buffers=True)):
        kernel = compile_sm90(config, fast=True, layout=layout)
        loops.append(main_loop_sass(kernel.asm["cubin"], tmp_path, wgmma=_wgmma(128)))
        spills.append(spilled_bytes(ptxas_report(kernel.asm["ptx"], "sm_90a", tmp_path)))
        assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK
    (rings, slots), tiles = [loop.count("BAR.SYNC.DEFER_BLOCKING") for loop in loops], large.overlap_tiles
    assert (rings, slots) == (2 * tiles, tiles)
    assert len(loops[1]) <= len(loops[0]) and spills[1] <= spills[0]


def test_fast_byte_tables_are_e4m3_of_every_magnitude_at_every_d():
    """The fold's arithmetic: FAST_TABLE_* less d * 8 on each nonzero byte is, byte for byte, the e4m3 encoding of
    the e2m1 magnitude times 2 ** (6 - d) for every d of the window (no borrow between bytes, the smallest value
    still normal), and zero stays zero."""
    e2m1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float64)
    for d in range(_sm90.FAST_WINDOW + 1):
        lo = (_sm90.FAST_TABLE_LO - d * 0x08080800) & 0xFFFFFFFF
        hi = (_sm90.FAST_TABLE_HI - d * 0x08080808) & 0xFFFFFFFF
        table = torch.tensor([(lo >> 8 * i) & 0xFF for i in range(4)] + [(hi >> 8 * i) & 0xFF for i in range(4)])
        values = table.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)
        assert torch.equal(values, e2m1 * 2.0 ** (6 - d)), d
        assert (table[1:] >= 0x08).all()  # normal: the integer offset is an exact power of two


def test_fast_refuses_scales_outside_its_window_by_name():
    w = _random_weights(e=2, n=64, k=256, spread=3)
    w.scales[1, 5, 6] = 127 - 3 - _sm90.FAST_WINDOW - 1  # a block 12+ binades under its tile's largest
    with pytest.raises(_sm90.FoldError, match=r"expert 1, row 5, K tile 1: block scales .* do not fold exactly"):
        _sm90.prepare_weights(w, precision="fast")
    from moe_gather import bmm1

    assert bmm1.prepare_weights(w, capability=(9, 0)).precision == "accurate"  # the default: the exact path
    w.codes[1, 5, 6 * 16 : 7 * 16] = 0x88  # that block all zeros (-0): any scale folds
    assert _sm90.prepare_weights(w, precision="fast").fast


def test_the_default_takes_accurate_where_the_scales_do_not_fold(monkeypatch):
    """Were the default "fast", weights outside the fold's window would take "accurate" (never fail)."""
    from moe_gather import bmm1

    monkeypatch.setattr(_sm90, "DEFAULT_PRECISION", "fast")
    w = _random_weights(e=1, n=64, k=128, spread=3)
    assert bmm1.prepare_weights(w, capability=(9, 0)).precision == "fast"
    w.scales[0, 7, 1] = 127 - 3 - _sm90.FAST_WINDOW - 1
    assert bmm1.prepare_weights(w, capability=(9, 0)).precision == "accurate"


def test_fold_asm_reads_the_block_s_nibble_and_the_tables_constants():
    """The PTX that builds block j's tables: d from bits 4j .. 4j + 3 of the scale word, the two tables as
    FAST_TABLE_* - d * 0x08080800 / 0x08080808 (mod 2 ** 32), the selectors masked to 3 bits."""
    for j in range(4):
        asm = _sm90._fold_asm(j)
        assert f"bfe.u32 d, $3, {4 * j}, 4;" in asm
        assert f"mad.lo.u32 lo, d, {(-0x08080800) & 0xFFFFFFFF:#x}, {_sm90.FAST_TABLE_LO:#x};" in asm
        assert f"mad.lo.u32 hi, d, {(-0x08080808) & 0xFFFFFFFF:#x}, {_sm90.FAST_TABLE_HI:#x};" in asm
        assert "and.b32 sel, $2, 0x77777777;" in asm


def test_fast_refuses_a_nonzero_block_at_e8m0_0():
    w = _random_weights(e=1, n=64, k=128)
    w.scales[0, 3] = 0  # a whole tile of nonzero blocks at 2 ** -127: its reference word would read 0
    with pytest.raises(_sm90.FoldError, match="expert 0, row 3, K tile 0"):
        _sm90.prepare_weights(w, precision="fast")


def test_fast_table_has_no_two_partials_and_its_chunks_overlap_tiles(recorded_launches):
    """The fast table has no two_partials (a K tile is one chain into one partial; a forced one is refused); the
    chunks of four (FP8_CHUNKS, on the packed words) overlap tiles (overlap_tiles: each tile's wgmmas under the
    previous tile's promotion)."""
    assert not any(c.two_partials for _, c in _sm90.FAST_CONFIGS)
    w = _sm90.prepare_weights(_random_weights(e=2, n=128, k=64), precision="fast")
    with pytest.raises(ValueError, match="the fast precision runs one partial per K tile"):
        _launch(w, [200, 56], _sm90.Sm90Config(block_m=128, num_stages=4, num_warps=8, two_partials=True))
    _launch(w, [900, 700], _sm90.FP8_CHUNKS)
    ((_, _, kwargs),) = recorded_launches
    assert kwargs["FAST"] and kwargs["OVERLAP_TILES"] and kwargs["BLOCK_M"] == 128
    with pytest.raises(ValueError, match="overlap_tiles is 0, 2 or 4 K tiles, through parity_rings of 4 stages"):
        _sm90.Sm90Config(block_m=128, num_stages=4, num_warps=8, overlap_tiles=2)
    with pytest.raises(ValueError, match="parity_rings of 4 stages or more"):  # it loads num_stages - 2 ahead
        _sm90.Sm90Config(block_m=128, num_stages=2, num_warps=8, parity_rings=True, overlap_tiles=2)
    with pytest.raises(ValueError, match="overlap_tiles is 0, 2 or 4 K tiles"):
        _sm90.Sm90Config(block_m=128, num_stages=4, num_warps=8, parity_rings=True, overlap_tiles=3)


def test_weight_rows_must_fill_64_row_blocks():
    with pytest.raises(ValueError, match="sm90 layout needs N a multiple of 64, got 96"):
        _sm90.prepare_weights(_random_weights(n=96))


def test_parity_rings_need_an_even_ring():
    """With pairs, tile t + num_buffers - 1 must land in the other ring than tile t: an odd ring would overwrite a
    stage still being read (a forced `num_stages=3` on a small tile, say), so the config refuses it."""
    config = _sm90.CONFIGS[0][1]
    assert config.parity_rings
    with pytest.raises(ValueError, match="parity_rings needs an even num_stages"):
        replace(config, num_stages=3)
    with pytest.raises(ValueError, match="parity_rings needs an even num_stages and no split_at"):
        replace(config, split_at=16)


def test_widest_first_orders_one_schedule():
    with pytest.raises(ValueError, match="widest_first orders one schedule, not split_at's two"):
        _sm90.Sm90Config(block_m=16, num_stages=4, num_warps=4, widest_first=True, split_at=32)


@pytest.mark.parametrize(
    "fields",
    [
        dict(tail_rows=8),
        dict(tail_rows=48),
        dict(tail_rows=12),
        dict(tail_rows=16, two_partials=True),
        dict(tail_rows=16, split_at=32),
    ],
    ids=str,
)
def test_extra_rows_are_a_power_of_two_up_to_half_a_tile_without_overlap(fields):
    with pytest.raises(
        ValueError, match="tail_rows is 0 or a power of two from 16 to block_m / 2, without two_partials"
    ):
        _sm90.Sm90Config(block_m=64, num_stages=4, num_warps=4, **fields)


def test_narrow_is_zero_one_or_two_halvings():
    with pytest.raises(ValueError, match="narrow_last_tile is 0, 1 or 2 halvings of block_m"):
        _sm90.Sm90Config(block_m=64, num_stages=4, num_warps=4, narrow_last_tile=3)


@pytest.mark.parametrize("precision", ["accurate", "fast"])
def test_decode_calls_split_their_k_tiles(precision, monkeypatch):
    """A call of at most 4 rows runs at most 4 experts: the first entry with its K tiles split as DECODE_SPLITS says,
    by the call's rows alone, however they fall into slices; none, or 5 and more, the table's entry as it is.
    MOE_GATHER_SM90_FORCE still overrides it, and drops the split where a forced field refuses it; the fp16 path
    runs its K tiles on one program."""
    first = _sm90.TABLES[precision][0][1]
    splits = {"accurate": [1, 3, 3, 2, 2, 1, 1], "fast": [1, 2, 2, 2, 2, 1, 1]}[precision]  # by rows, 0 to 6
    for n_slices in (1, 16, 32):
        for rows in range(7):
            for sizes in ([rows] + [0] * (n_slices - 1), [1] * min(rows, n_slices) + [0] * (n_slices - rows)):
                sizes[0] += rows - sum(sizes)
                ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), rows, 1)
                assert _sm90.select_config(ragged, precision) == replace(first, k_splits=splits[rows]), sizes
    assert set(_sm90.decode_configs(precision)) == {replace(first, k_splits=k) for k in splits if k > 1}
    assert all(_sm90.f16_config(c).k_splits == 1 for c in _sm90.decode_configs(precision))
    one_row = make_ragged_metadata(torch.tensor([1, 0], dtype=torch.int32), 1, 1)
    for forced, expected in (
        ("k_splits=1", first),
        ("num_stages=6", replace(first, num_stages=6, k_splits=splits[1])),
        ("tail_rows=16", replace(first, tail_rows=16)),  # tail rows refuse k_splits: the split goes
    ):
        monkeypatch.setenv(_sm90.FORCE_ENV, forced)
        assert _sm90.select_config(one_row, precision) == expected
    monkeypatch.setenv(_sm90.FORCE_ENV, "tail_rows=3")  # wrong on its own: still refused
    with pytest.raises(ValueError, match="tail_rows is 0 or a power of two"):
        _sm90.select_config(one_row, precision)


def test_forced_fields_override_every_table_choice(monkeypatch):
    """MOE_GATHER_SM90_FORCE (tests, sweeps, sanitize runs): the named fields replace every entry's, None included;
    a bool field given as 0/1 stays a bool, so the config prints as a table entry would."""
    from moe_gather._table import choose

    monkeypatch.setenv(
        _sm90.FORCE_ENV, "block_m=64,num_warps=8,maxnreg=None,widest_first=0,two_partials=0,tail_rows=16"
    )
    for limit, entry in _sm90.CONFIGS:
        forced = choose(_sm90.CONFIGS, min(limit, 1 << 20), _sm90.FORCE_ENV, "sm90")
        assert forced == replace(
            entry, block_m=64, num_warps=8, maxnreg=None, widest_first=0, two_partials=0, tail_rows=16
        )
        assert type(forced.widest_first) is bool and "widest_first=False" in repr(forced)


@pytest.mark.parametrize(("block_m", "narrow", "launched"), [(64, 2, 2), (32, 2, 2), (16, 2, 1), (16, 1, 1), (8, 2, 0)])
def test_a_launch_narrows_down_to_8_tokens(recorded_launches, block_m, narrow, launched):
    """wgmma's N is 8 at least: a tile narrows at most to 8 tokens, whatever the config asks (a forced block_m on a
    table entry, say)."""
    config = _sm90.Sm90Config(block_m=block_m, num_stages=4, num_warps=4, narrow_last_tile=narrow)
    _launch(_sm90.prepare_weights(_random_weights(e=2, n=64, k=64)), [40, 3], config)
    ((_, _, kwargs),) = recorded_launches
    assert kwargs["NARROW"] == launched


def test_nan_scale_is_refused():
    w = _random_weights()
    w.scales[0, 0, 0] = 255
    with pytest.raises(ValueError, match="NaN"):
        _sm90.prepare_weights(w)


SIGNATURE = {
    "x_ptr": "*fp8e4nv", "words_ptr": "*i32", "scales_ptr": "*i32", "bias_ptr": "*fp32",
    "gather_ptr": "*i32", "slice_sizes_ptr": "*i32", "slice_offs_ptr": "*i32", "schedule_ptr": "*i32",
    "x_scale_ptr": "*fp32", "out_scale_ptr": "*fp32", "out_ptr": "*fp8e4nv", "sums_ptr": "*fp32",
    "arrivals_ptr": "*i32", "alpha": "fp32", "limit": "fp32", "w_desc": "constexpr",  # None but with bulk weights
    # the launcher's compile-time arguments, by their names in kernel_constexprs
    **dict.fromkeys(_sm90.kernel_constexprs(_sm90.CONFIGS[0][1], 0, 2880, 5760, False, False), "constexpr"),
}  # fmt: skip
ALIGNED = {(i,): [["tt.divisibility", 16]] for i in range(11)}  # what Triton's launcher sees for torch allocations
ALIGNED_SPLITS = ALIGNED | {(i,): [["tt.divisibility", 16]] for i in (11, 12)}  # the table kernel's sums, arrivals


def compile_sm90(config, k=2880, n=5760, f16=False, tile=0, zero_scale=False, fast=False, layout="mxfp4"):
    constexprs = _sm90.kernel_constexprs(config, tile, k, n, f16, zero_scale, fast) | {"w_desc": None}
    signature = SIGNATURE | ({"words_ptr": "*fp8e4nv"} if layout == "fp8" else {})  # the fold's bytes
    if config.bulk_weights and layout == "fp8":  # the launcher's descriptor, by its type
        folded = torch.empty(n // 64, -(-k // 128), 64, 128, dtype=torch.float8_e4m3fn)
        signature["w_desc"] = mangle_type(_sm90._bulk_descriptor(folded))
        del constexprs["w_desc"]
    src = GluonASTSource(_sm90._bmm1_sm90_kernel, signature, constexprs=constexprs, attrs=ALIGNED_SPLITS)
    options = {"num_warps": config.num_warps, "maxnreg": config.maxnreg}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def _launches():
    """Every launch a call can make (each tile of each table entry and decode config) on the fp8 path, with the exact
    e8m0 0 scale (Sm90Weights.zero_scale) too, and on the fp16 path (as the launcher runs it: _sm90.f16_config)."""
    configs = sorted({c for _, c in _sm90.CONFIGS} | set(_sm90.decode_configs("accurate")), key=str)
    fp8 = [(c, tile, path) for c in configs for tile in range(len(c.tiles)) for path in ("fp8", "zero-scale")]
    f16 = {_sm90.f16_config(c) for c in configs}
    fast = [(c, 0, "fast") for c in (*_fast_entries(), *_sm90.decode_configs("fast"))]
    tables = (*_sm90.FAST_CONFIGS, *_sm90.FAST_FP8_CONFIGS)
    ws = [(c, 0, "ws") for c in dict.fromkeys(c for _, c in tables if c.warp_specialized)]  # _sm90_ws's
    return fp8 + [(c, 0, "f16") for c in sorted(f16, key=str)] + fast + ws


def _fast_entries():
    """The fast table's entries that the table kernel runs (its large entry and the fp8 table's: _sm90_ws), and the
    chunks of four (FP8_CHUNKS) that forced configs and the persistent fp8 tile build on."""
    return [*(c for _, c in _sm90.FAST_CONFIGS if not c.warp_specialized), _sm90.FP8_CHUNKS]


# Spill bytes a launch may have: none, but the chunks of four K tiles at block_m 128 (FP8_CHUNKS: three accumulators of
# 64 registers at the 255 cap: 100 bytes stored, 132 loaded, 4 of the instructions inside the loop; measured 0.98-0.99x
# the time of pairs, which spill 8 bytes outside it, on the 4 large cases of results/h200/fast.md's sweeps).
# The warp-specialized tile on the fp8 layout: 8 bytes, two words stored at the kernel's entry and loaded once a work
# item by the producer (56 registers), outside every K loop; 12 on three consumers (the table's entry), a third word
# stored and loaded once an item. Its large entry on the packed words
# (256-token items): 48 bytes, the producer's pointers at its 56 registers; the consumers' loops spill nothing (its
# own test).
SPILL_BUDGET = {(128, "fast"): 132, (128, "ws"): 12, (256, "ws"): 48}


@pytest.mark.parametrize(("config", "tile", "path"), _launches(), ids=str)
def test_every_config_compiles_for_sm90a_without_spills(config, tile, path, tmp_path):
    fast, f16, zero_scale = path == "fast", path == "f16", path == "zero-scale"
    kernel = (
        compile_sm90_ws(config)
        if path == "ws"
        else compile_sm90(config, f16=f16, tile=tile, zero_scale=zero_scale, fast=fast)
    )
    ptx = kernel.asm["ptx"]
    mma = ".f16.f16" if path == "f16" else ".e4m3.e4m3"  # fp8 wgmma, or fp16 (wide block-scale spreads)
    assert "wgmma.mma_async.sync.aligned" in ptx and mma in ptx
    assert "cp.async.cg.shared.global" in ptx
    if config.k_splits > 1:  # the hand-in: one thread counts the program's split in
        assert re.search(r"atom\.global\.gpu\.acq_rel\.add\.u32", ptx)
    report = ptxas_report(ptx, "sm_90a", tmp_path)
    assert spilled_bytes(report) <= SPILL_BUDGET.get((config.block_m, path), 0), report
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


# SASS a warp issues in the main loop (one 128-wide K tile, two for the entries with pairs; with `narrow` or `extra`,
# the loop of the plain width) for each table entry, keyed (block_m, num_warps, extra), as compiled for the kernel
# measured on the H200. Where slices are large the fp8 path issues in two thirds of the cycles, the promotion FFMA in
# most of them: an instruction added here is paid in time there, so the budget fails CI before a GPU run would show
# it. The entries with `pairs` run two K tiles per iteration, each with one bar.sync (the others: two per tile).
LOOP_SASS_BUDGET = {
    (32, 4, 0): 384,
    (32, 8, 16): 387,
    (64, 8, 16): 519,
    (128, 8, 0): 398,
}
# The loop of a tile with `extra` rows: a second wgmma and its promotion a block, its descriptors, a ring of 3 stages
# (slot arithmetic modulo 3), one K tile an iteration (unpaired: the ring is odd).
EXTRA_LOOP_SASS_BUDGET = {(32, 8, 16): 287, (64, 8, 16): 349}
# Registers per thread each entry may use: its programs per multiprocessor (65536 registers) as measured. The
# block_m 64 entry has no cap, so this is what keeps it at 2 programs of 8 warps (124 with pairs and extra rows);
# block_m 128 with two partials on two warpgroups takes 246 (1 program of 8 warps).
REGISTER_BUDGET = {(32, 4, 0): 80, (32, 8, 16): 80, (64, 8, 16): 128, (128, 8, 0): 256}


def _entry(config):
    return config.block_m, config.num_warps, config.tail_rows


def _wgmma(*widths):
    return {f"QGMMA.64x{width}x32.F32.E4M3.E4M3" for width in widths}


@pytest.mark.parametrize("config", [c for _, c in _sm90.CONFIGS], ids=str)
def test_main_loop_stays_within_its_instruction_budget(config, tmp_path):
    """Per K tile: one fp8 wgmma per 32-wide block and one FFMA per accumulator element and block (the exact
    promotion), the wgmmas overlapped with the promotions where the entry asks, and no more instructions in all than
    the budget. The loop of the full width (with `extra`, of the tiles without extra rows)."""
    cubin = compile_sm90(config).asm["cubin"]
    instructions = main_loop_sass(cubin, tmp_path, operands=True, wgmma=_wgmma(config.block_m))
    loop = [text.split()[0] for text in instructions]
    tiles = 2 if config.parity_rings else 1  # K tiles an iteration
    assert loop.count(f"QGMMA.64x{config.block_m}x32.F32.E4M3.E4M3") == 4 * tiles
    assert loop.count("FFMA") == tiles * 4 * 64 * config.block_m // 128  # each thread's share of 64 rows
    assert loop.count("BAR.SYNC.DEFER_BLOCKING") == 2  # a tile: one with pairs, two without (Triton adds one)
    assert len(loop) <= LOOP_SASS_BUDGET[_entry(config)], len(loop)
    # With overlap, three of a tile's four waits leave the next block's wgmma in flight; were ptxas to serialize the
    # wgmmas (as it does when a partial is read while a wgmma that writes it runs), every wait would drain them all.
    waits = [text for text in instructions if text.startswith("WARPGROUP.DEPBAR.LE")]
    assert sum(line.endswith("0x1") for line in waits) == (3 * tiles if config.two_partials else 0), waits
    if config.tail_rows:  # the slices' last tiles with extra rows: both wgmmas on the same weights, both promoted
        loop = main_loop_sass(cubin, tmp_path, wgmma=_wgmma(config.block_m, config.tail_rows))
        assert loop.count(f"QGMMA.64x{config.tail_rows}x32.F32.E4M3.E4M3") == 4
        assert loop.count("FFMA") == 4 * 64 * (config.block_m + config.tail_rows) // 128
        assert len(loop) <= EXTRA_LOOP_SASS_BUDGET[_entry(config)], len(loop)


# The fast table's K loops as compiled (two K tiles an iteration; the chunks of four's, a chunk), per weights
# layout: the mxfp4 layout's byte-table fold costs ~11 SASS per 32-bit word; the fp8 layout copies twice the bytes and
# folds nothing. The promotion is one FFMA per accumulator element per K tile instead of per block.
FAST_LOOP_SASS_BUDGET = {
    "mxfp4": {(32, 4, 0): 357, (64, 8, 16): 392, (128, 8, 0): 806},
    "fp8": {(32, 4, 0): 212, (64, 8, 16): 252, (128, 8, 0): 471},
}
FP8_SPILL_BUDGET = {128: 12}  # bytes, all outside the loop (the chunks of four on the packed words: 132)
FAST_LOOP_SPILLS = {"mxfp4": {128: 4}, "fp8": {}}  # spill instructions in the loop: the chunks of four on the words


@pytest.mark.parametrize("layout", ["mxfp4", "fp8"])
@pytest.mark.parametrize("config", _fast_entries(), ids=str)
def test_fast_loop_promotes_once_per_tile(config, layout, tmp_path):
    """Per K tile: four fp8 wgmmas chained into one partial, one FFMA per accumulator element; with overlap_tiles
    each tile's wgmmas but the iteration's last stay in flight while the tile before is promoted (a wait leaves 4
    groups). The mxfp4 layout folds with two byte permutes a word; the fp8 layout's bytes go to wgmma as they landed,
    no permute, within shared memory on every entry's tile as the table kernel runs it (a forced fp8_layout)."""
    kernel = compile_sm90(config, fast=True, layout=layout)
    if layout == "fp8":
        report = ptxas_report(kernel.asm["ptx"], "sm_90a", tmp_path)
        assert spilled_bytes(report) <= FP8_SPILL_BUDGET.get(config.block_m, 0), report
        assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK
    instructions = main_loop_sass(kernel.asm["cubin"], tmp_path, operands=True, wgmma=_wgmma(config.block_m))
    loop = [text.split()[0] for text in instructions]
    tiles = config.overlap_tiles or 2  # K tiles an iteration
    assert loop.count(f"QGMMA.64x{config.block_m}x32.F32.E4M3.E4M3") == 4 * tiles
    assert loop.count("FFMA") == tiles * 64 * config.block_m // 128
    if layout == "mxfp4":
        assert loop.count("PRMT") >= tiles * 4 * 2 * 2  # two table permutes a word, two words a block per thread
    else:
        assert "PRMT" not in loop
    waits = [text.split()[-1] for text in instructions if text.startswith("WARPGROUP.DEPBAR.LE")]
    if config.overlap_tiles:  # drained once an iteration: ptxas serializes every wgmma carried across the back edge
        assert waits == ["0x4"] * (tiles - 1) + ["0x0"], waits
    else:
        assert "0x4" not in waits, waits
    assert len(loop) <= FAST_LOOP_SASS_BUDGET[layout][_entry(config)], len(loop)
    spills = sum(name.startswith(("STL", "LDL")) for name in loop)
    assert spills <= FAST_LOOP_SPILLS[layout].get(config.block_m, 0), spills


def test_fast_pairs_on_six_stages_load_an_odd_count_ahead_for_one_barrier_a_tile(tmp_path):
    """overlap_tiles with 4 stages loads 2 tiles ahead, into the ring being read: Triton's barrier analysis then adds a
    second bar.sync a tile. From 6 stages it loads 3 ahead (odd: the other ring) and keeps one a tile."""
    for stages, barriers in ((4, 4), (6, 2)):
        config = _sm90.Sm90Config(128, stages, 8, parity_rings=True, narrow_last_tile=2, overlap_tiles=2)
        loop = main_loop_sass(compile_sm90(config, fast=True).asm["cubin"], tmp_path, wgmma=_wgmma(128))
        assert loop.count("BAR.SYNC.DEFER_BLOCKING") == barriers, (stages, loop.count("BAR.SYNC.DEFER_BLOCKING"))


# SASS from the main loop's end to EXIT (the ring's drain and the epilogue of the full-width path), as compiled: the
# block_m 128 epilogue's min / max .NaN clamps and 8-output stores per thread keep it within the budget below.
EPILOGUE_SASS_BUDGET = {
    (32, 4, 0): 325,
    (32, 8, 16): 240,
    (64, 8, 16): 440,
    (128, 8, 0): 601,
}


@pytest.mark.parametrize("config", [c for _, c in _sm90.CONFIGS], ids=str)
def test_epilogue_stays_within_its_instruction_budget(config, tmp_path):
    after = after_main_loop_sass(compile_sm90(config).asm["cubin"], tmp_path, wgmma=_wgmma(config.block_m))
    assert len(after) <= EPILOGUE_SASS_BUDGET[_entry(config)], len(after)
    if config.block_m >= 128:  # one min / max .NaN a gate, two a linear value; no one-byte stores
        assert after.count("FMNMX.NAN") == 3 * (64 * config.block_m // 2) // 128
        assert "STG.E.U8" not in after


@pytest.mark.parametrize("config", [c for _, c in _sm90.CONFIGS], ids=str)
def test_each_entry_keeps_its_programs_a_multiprocessor(config, tmp_path):
    report = ptxas_report(compile_sm90(config).asm["ptx"], "sm_90a", tmp_path)
    assert registers_used(report) <= REGISTER_BUDGET[_entry(config)], report


@pytest.fixture
def recorded_launches(monkeypatch):
    """The launcher's plan on the CPU: the kernel replaced by a recorder of (grid, schedule, keyword arguments)."""
    return _record(monkeypatch, _sm90, "_bmm1_sm90_kernel", 7)


def _record(monkeypatch, module, kernel, *positions, launches=None):
    """module.kernel replaced by a recorder of its launches: (grid, the arguments at `positions`, keywords), into
    `launches` where given (several kernels' launches in call order)."""
    launches = [] if launches is None else launches

    class Recorder:
        def __getitem__(self, grid):
            return lambda *a, **kw: launches.append((grid, *(a[i] for i in positions), kw))

    monkeypatch.setattr(module, kernel, Recorder())
    return launches


def _launch(w, sizes, config):
    ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), sum(sizes), 4)
    gather = torch.zeros(sum(sizes), dtype=torch.int32)
    _sm90.launch(None, w, None, gather, ragged, None, None, 1.0, 1.0, None, config)


@pytest.mark.parametrize(
    ("cases", "precision", "layout"),
    [("sanitize_cases.txt", "accurate", "mxfp4"), ("sanitize_cases_fast.txt", "fast", "mxfp4"),
     ("sanitize_cases_fast_fp8.txt", "fast", "fp8")],
)  # fmt: skip
def test_sanitizer_cases_reach_every_entry_with_each_tool(cases, precision, layout):
    """tools/sanitize.sh's cases (each drawn on its own model: a narrowed N draws another routing) give each tool a
    case on every config a call at the precision can run: each entry of its table, and each decode config; the fp8
    layout's cases, each entry its table does not share with the packed words' and each shared one with hot_at (its
    second launch runs the layout's large entry). An entry with hot_at gets calls with a slice over it (both of its
    launches run)."""
    from moe_gather.problem import Case, local_shard, make_logits
    from moe_gather.routing import route

    tools = Path(__file__).parents[1] / "tools"
    sanitize_case = _tool("sanitize_case")
    chosen = {}
    for tool, routing, batch, n in sanitize_case.read_cases(tools / cases):
        model = sanitize_case.case_model(n)  # a narrowed N draws another routing
        case = Case(model, routing, batch)
        logits = make_logits(routing, case.batch, model.num_experts, model.top_k, case.routing_seed)
        ragged = route(logits, model.top_k, model.num_shards, local_shard(model)).ragged
        weights = SimpleNamespace(f16=False, folded=True if layout == "fp8" else None, n=model.n)  # what runs_as reads
        config = _sm90.select_config(ragged, precision, layout)
        assert not config.hot_at or ragged.slice_sizes.max() > config.hot_at, (
            f"{tool} {routing}-bs{batch}: no hot slice"
        )
        chosen.setdefault(tool, set()).add(_sm90.runs_as(config, weights))
    every = {c for _, c in _sm90.table(precision, layout)} | set(_sm90.decode_configs(precision))
    if layout == "fp8":
        every -= {c for _, c in _sm90.table(precision) if not c.hot_at} | set(_sm90.decode_configs(precision))
    assert chosen == {tool: every for tool in ("memcheck", "racecheck", "synccheck")}


SPLIT_K_CONFIG = _sm90.Sm90Config(16, 6, 8, maxnreg=80, warp_specialized=True, split_k=True)


def compile_sm90_ws(config, k=2880, n=5760):
    """The warp-specialized kernel for `config`, on the fp8 layout's bytes where it has fp8_layout."""
    constexprs = _sm90_ws.ws_constexprs(config, k, n)
    table_only = ("sums_ptr", "arrivals_ptr")  # the table kernel's K splits
    signature = {name: kind for name, kind in SIGNATURE.items() if kind != "constexpr" and name not in table_only}
    signature |= {"items": "i32", "w_desc": "constexpr"} | ({"words_ptr": "*fp8e4nv"} if config.fp8_layout else {})
    constexprs |= {"w_desc": None}
    if config.bulk_weights:  # the launcher's descriptor, by its type
        folded = torch.empty(n // 64, -(-k // 128), 64, 128, dtype=torch.float8_e4m3fn)
        signature["w_desc"] = mangle_type(_sm90._bulk_descriptor(folded))
        del constexprs["w_desc"]
    signature |= dict.fromkeys(constexprs, "constexpr")
    src = GluonASTSource(_sm90_ws.bmm1_sm90_ws_kernel, signature, constexprs=constexprs, attrs=ALIGNED)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=_sm90_ws.launch_options(config))


def test_warp_specialized_configs_are_refused_outside_their_tiles():
    others = ({"block_m": 32}, {"num_warps": 4}, {"parity_rings": True}, {"overlap_tiles": 2, "parity_rings": True},
              {"tail_rows": 16}, {"maxnreg": 200}, {"num_stages": 8})  # fmt: skip
    for fields in others:
        with pytest.raises(ValueError, match=r"takes block_m 64 or 128 \(256 without lag; 16, 32 or 64 with split_k"):
            replace(WS_CONFIG, **fields)
    # three consumers: the fp8 layout's 128-token tile on 4 stages at most, without split_k or lag
    assert replace(_sm90.FP8_WS, num_warps=12, num_stages=4).block_n == 192
    for fields in ({}, {"fp8_layout": False, "bulk_weights": False}, {"lag": 1}, {"block_m": 64}):
        with pytest.raises(ValueError, match=r"12 on the fp8 layout at block_m 128, 4 stages at most"):
            replace(_sm90.FP8_WS, num_warps=12, **({"num_stages": 4} if fields else {}), **fields)
    split_k_others = ({"block_m": 8}, {"block_m": 128}, {"maxnreg": 40}, {"maxnreg": 176}, {"parity_rings": True},
                      {"num_stages": 2})  # fmt: skip
    for fields in split_k_others:
        with pytest.raises(ValueError, match="warp_specialized takes block_m 64 or 128"):
            replace(SPLIT_K_CONFIG, **fields)
    with pytest.raises(ValueError, match="split_k is the warp-specialized tile's"):
        _sm90.Sm90Config(32, 4, 8, split_k=True)
    # on the fp8 layout at most 5 stages of 32.5 KB (7 of 24.5 at block_m 64); lag needs the chunks it holds back and 2
    # stages more
    # at block_m 256 at most 4 stages of 40.5 KB (3 of 48.5 on the fp8 layout), without lag
    for fields in ({"fp8_layout": True, "num_stages": 6}, {"fp8_layout": True, "num_stages": 8, "block_m": 64},
                   {"lag": 2}, {"lag": 1, "num_stages": 5, "overlap_tiles": 4}, {"block_m": 256, "num_stages": 5},
                   {"block_m": 256, "fp8_layout": True}, {"block_m": 256, "lag": 1}):  # fmt: skip
        with pytest.raises(ValueError, match="warp_specialized takes block_m 64 or 128"):
            replace(WS_CONFIG, **fields)
    for base, fields in ((SPLIT_K_CONFIG, {"lag": 1, "split_k": False, "warp_specialized": False}),
                         (WS_CONFIG, {"lag": -1})):  # fmt: skip
        with pytest.raises(ValueError, match="lag is the warp-specialized tile's"):
            replace(base, **fields)
    others = ({"num_stages": 6}, {"narrow_last_tile": 1}, {"fp8_layout": False})  # off the fp8 layout's entry
    for base, fields in ((_sm90.Sm90Config(32, 4, 8), {}), *((PERSISTENT_PLAN, f) for f in others)):
        with pytest.raises(ValueError, match="persistent is the warp-specialized tile's, or the fp8 layout's"):
            replace(base, persistent=True, **fields)
    assert SPLIT_K_CONFIG.block_n == 64 and WS_CONFIG.block_n == 128 and HALVES_PLAN.block_n == 128


def test_warp_specialized_launch_plan(recorded_launches, monkeypatch):
    """warp_specialized launches its own kernel: 4 warps at launch (the default partition, consumer 0; the workers
    add 8), the register cap that lets setmaxnreg hand the producer's registers to the consumers, one work item per
    128 weight rows (split_k: 64) and schedule entry, a program each or one per multiprocessor (persistent); accurate
    weights are refused by name."""
    ws_launches = _record(monkeypatch, _sm90_ws, "bmm1_sm90_ws_kernel", 7, 13)  # schedule, items
    monkeypatch.setattr(_sm90, "_multiprocessors", lambda device: 5)
    w = _sm90.prepare_weights(_random_weights(e=2, n=256, k=64), precision="fast")
    _launch(w, [900, 700], WS_CONFIG)
    _launch(w, [900, 700], replace(WS_CONFIG, persistent=True))  # one program per multiprocessor (5 here)
    _launch(w, [60, 0], replace(WS_CONFIG, persistent=True))  # fewer work items than multiprocessors
    (grid, schedule, items, kwargs), (grid_p, _, items_p, _), (grid_few, few, items_few, _) = ws_launches
    assert not recorded_launches and items == items_p == schedule.numel() * 2 and grid == (items,)
    assert grid_p == (5,) and items_few == few.numel() * 2 < 5 and grid_few == (items_few,)
    assert (kwargs["num_warps"], kwargs["maxnreg"], kwargs["BLOCK_M"], kwargs["NARROW"]) == (4, 168, 128, 2)
    accurate = _sm90.prepare_weights(_random_weights(e=2, n=256, k=64), precision="accurate")
    with pytest.raises(ValueError, match="warp_specialized runs the fast precision only, got accurate weights"):
        _launch(accurate, [900, 700], WS_CONFIG)
    _launch(w, [30, 3], SPLIT_K_CONFIG)  # 64-row items; the 12 warps capped at maxnreg
    grid_s, schedule_s, items_s, kwargs_s = ws_launches[-1]
    assert items_s == schedule_s.numel() * 4 and grid_s == (items_s,)
    assert (kwargs_s["maxnreg"], kwargs_s["SPLIT_K"], kwargs_s["CONSUMER_REGS"], kwargs_s["BLOCK_M"]) == (
        80,
        1,
        104,
        16,
    )


def test_hot_slices_launch_on_the_large_entry(recorded_launches, monkeypatch):
    """hot_at: the slices of more than hot_at rows in a second launch, on the large entry of the weights' table
    (WS_HALVES on the packed words; FP8_WS3 on the fp8 layout's bytes, two consumers where N is not a multiple of 192;
    the accurate table's block_m 128), the others on the config's own tiles (tail rows kept), the hot launch first;
    configs it does not go with are refused by name."""
    # the warp-specialized kernel's launches (words, schedule) into the same list, in call order
    launches = _record(monkeypatch, _sm90_ws, "bmm1_sm90_ws_kernel", 1, 7, launches=recorded_launches)
    monkeypatch.setattr(_sm90, "_multiprocessors", lambda device: 5)
    hot_at = _sm90.FAST_CONFIGS[1][1]  # the fast tables' block_m 64 entry takes it
    m64 = replace(hot_at, hot_at=0)
    assert hot_at.hot_at == _sm90.HOT_AT == _sm90.WS_HALVES.block_m and _sm90.FAST_FP8_CONFIGS[1][1] == hot_at
    sizes = [900, 70, 0, 300]  # slices 0 and 3 hot; slice 1 one tile of its 70 rows (tail rows 16)
    slices = lambda schedule: {int(e) & 0xFFFF for e in schedule.tolist() if e >= 0}
    for n, layout, large, consumers in ((256, "mxfp4", 256, 2), (256, "fp8", 128, 2), (384, "fp8", 128, 3)):
        w = _sm90.prepare_weights(_random_weights(e=4, n=n, k=64), precision="fast", layout=layout)
        _launch(w, sizes, hot_at)
        (_, words, hot, ws_kwargs), (_, cold, kwargs) = launches[-2:]
        assert slices(cold) == {1} and cold.tolist()[0] == 1 and kwargs["BLOCK_M"] == 64
        assert kwargs["TAIL_ROWS"] == 16 and not kwargs["BULK_W"]
        assert slices(hot) == {0, 3} and (ws_kwargs["BLOCK_M"], ws_kwargs["CONSUMERS"]) == (large, consumers)
        assert words.dtype == (torch.float8_e4m3fn if layout == "fp8" else torch.int32)
    assert len(launches) == 6
    assert all(t[-1][1].k_splits == 1 for t in _sm90.TABLES.values())  # the hot launch shares no K-split counters
    accurate = _sm90.prepare_weights(_random_weights(e=4, n=256, k=64), precision="accurate")
    _launch(accurate, sizes, replace(_sm90.CONFIGS[2][1], hot_at=256))
    (_, hot, hot_kwargs), (_, cold, kwargs) = launches[-2:]
    assert slices(cold) == {1} and (kwargs["BLOCK_M"], kwargs["TAIL_ROWS"], kwargs["FAST"]) == (64, 16, False)
    assert slices(hot) == {0, 3} and (hot_kwargs["BLOCK_M"], hot_kwargs["TWO_PARTIALS"]) == (128, True)
    for config in (_sm90.WS_HALVES, _sm90.FAST_CONFIGS[0][1], replace(m64, tail_rows=0, k_splits=2),
                   replace(_sm90.FP8_CHUNKS, persistent=True)):  # fmt: skip
        with pytest.raises(ValueError, match="hot_at is 1 or more rows, on a table kernel's config without"):
            replace(config, hot_at=256)


def test_persistent_fp8_tile_launch_plan(recorded_launches, monkeypatch):
    """The persistent fp8 tile: one program a multiprocessor (fewer where there are fewer items) over the schedule by
    width (RaggedMetadata.by_width), its three phases' ends counted on the device (tiles of more than 64 rows, of more
    than 32, all); on the packed words, and on the fp16 path's, the config runs the table's kernel, one tile a
    program."""
    launches = _record(monkeypatch, _sm90_persistent, "bmm1_sm90_persistent_kernel", 7, 8)  # schedule, bounds
    monkeypatch.setattr(_sm90, "_multiprocessors", lambda device: 5)
    w = _random_weights(e=4, n=256, k=256)
    fp8 = _sm90.prepare_weights(w, precision="fast", layout="fp8")
    _launch(fp8, [300, 50, 20, 0], PERSISTENT_PLAN)  # tiles of 128, 128, 44; 50; 20 rows: 5 tiles, 10 items
    _launch(fp8, [1, 0, 0, 0], PERSISTENT_PLAN)  # one tile, 2 items (the schedule's bound: 1 entry)
    (grid, schedule, bounds, kwargs), (grid_few, _, bounds_few, _) = launches
    assert grid == (5,) and grid_few == (2,) and not recorded_launches
    assert bounds.tolist() == [2, 4, 5] and bounds_few.tolist() == [0, 0, 1]  # phases of 128, 64, 32 tokens
    assert (schedule[:5] >> 16).tolist() == [0, 1, 2, 0, 0] and (schedule[:5] & 0xFFFF).tolist() == [0, 0, 0, 1, 2]
    assert (kwargs["BLOCK_M"], kwargs["NUM_STAGES"], kwargs["num_warps"]) == (128, 4, 8)
    _launch(_sm90.prepare_weights(w, precision="fast"), [300, 50, 20, 0], PERSISTENT_PLAN)
    assert len(launches) == 2 and recorded_launches[-1][-1]["BLOCK_M"] == 128
    _launch(_sm90.prepare_weights(w, precision="accurate", f16=True), [300, 50, 20, 0], PERSISTENT_PLAN)
    assert len(launches) == 2 and recorded_launches[-1][-1]["BLOCK_M"] == _sm90.F16_MAX_BLOCK_M


def compile_sm90_persistent(k):
    signature = SIGNATURE | {"words_ptr": "*fp8e4nv", "bounds_ptr": "*i32"}
    names = _sm90_persistent.bmm1_sm90_persistent_kernel.arg_names
    constexprs = {"K": k, "N": 5760, "BLOCK_M": 128, "NUM_STAGES": 4}
    signature = {name: signature.get(name, "constexpr") for name in names}
    src = GluonASTSource(_sm90_persistent.bmm1_sm90_persistent_kernel, signature, constexprs=constexprs,
                         attrs={(i,): [["tt.divisibility", 16]] for i in range(12)})  # fmt: skip
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})


# The warp-specialized and persistent tiles' budgets (their tests below), a little above what they compile to: SASS in
# a loop (a consumer's is paid in time where slices are large, as LOOP_SASS_BUDGET's) and bytes spilled, all outside
# the K loops (each test checks those for local-memory accesses).
WS_SASS_BUDGET = {
    "pairs": 425,  # WS_CONFIG: a consumer's two K tiles folding the packed words (409-413)
    "halves": 300,  # HALVES_PLAN: a consumer's K tile, folded once for two 128-token halves (296)
    "one half": 210,  # HALVES_PLAN on an item's first half alone (207-208)
    "halves fp8": 225,  # HALVES_FP8_PLAN: the same with A from shared memory (218)
    "one half fp8": 135,  # on its first half alone (129)
    "fp8 tile 64": 100,  # WS_FP8_PLANS: a consumer's K tile, A from shared memory, at block_m 64 (95-96)
    "fp8 tile 128": 135,  # and at block_m 128 (127-133)
    "split_k": 320,  # SPLIT_K_CONFIG: a consumer's two K tiles of 16 tokens (297-299)
    "producer": 100,  # WS_CONFIG's producer: a K tile's 13 copies and its barriers (93)
}
WS_SPILL_BUDGET = {
    "WS_CONFIG": 112,  # the producer's pointers across work items at its 24 registers (104)
    "persistent fp8": 40,  # the persistent fp8 tile: an item's scalars across its K loop (36)
}


@pytest.mark.parametrize("k", [96, 384, 2880])
def test_persistent_fp8_tile_compiles_spill_free_in_its_k_loops(k, tmp_path):
    """The innermost loops holding each width's wgmmas (N 128, 64 and 32: at gpt-oss's K the table's chunk of four K
    tiles, at K 96 and 384 the item loop, its K tiles unrolled) make no local-memory access; what spills (an item's
    scalars across its K loop, a few accesses an item) stays outside them; the ring at 128 tokens and the epilogue's
    scratch fit the multiprocessor's shared memory."""
    kernel = compile_sm90_persistent(k)
    report = ptxas_report(kernel.asm["ptx"], "sm_90a", tmp_path)
    assert spilled_bytes(report) <= WS_SPILL_BUDGET["persistent fp8"], report
    for n in (128, 64, 32):
        loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, _wgmma(n))
        assert loops and all(not op.startswith(("STL", "LDL")) for loop in loops for op in loop)
        if k == 2880:  # a chunk of four K tiles: 16 wgmmas, one FFMA an accumulator element a tile
            chunk = max(loops, key=len)
            assert sum(op.startswith("QGMMA") for op in chunk) == 16
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


def test_warp_specialized_partitions_take_their_registers(tmp_path):
    """The producer warpgroup runs at PRODUCER_REGS and each consumer at CONSUMER_REGS (setmaxnreg: 24 and 240 of
    the 168 a thread at launch); the producer's copies arrive on mbarriers. The spills are the producer's (its
    pointers across work items at 24 registers, 11 instructions a K tile: it waits on the consumers anyway) and the
    consumers' outside their K loops (test below); the ring fits the multiprocessor's shared memory."""
    kernel = compile_sm90_ws(WS_CONFIG)
    ptx = kernel.asm["ptx"]
    assert f"setmaxnreg.dec.sync.aligned.u32 \t{_sm90_ws.PRODUCER_REGS};" in ptx
    assert f"setmaxnreg.inc.sync.aligned.u32 \t{_sm90_ws.CONSUMER_REGS};" in ptx
    assert _sm90_ws.CONSUMER_REGS == 240 and "cp.async.mbarrier.arrive.noinc" in ptx
    report = ptxas_report(ptx, "sm_90a", tmp_path)
    assert spilled_bytes(report) <= WS_SPILL_BUDGET["WS_CONFIG"], report
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, set())
    (producer,) = [loop for loop in loops if "ARRIVES.LDGSTSBAR.64.ARVCNT" in loop]
    assert sum(op.startswith("LDGSTS") for op in producer) == 13  # a K tile: 8 copies of x, 4 of words, 1 of scales
    assert len(producer) <= WS_SASS_BUDGET["producer"], len(producer)
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


def test_warp_specialized_consumers_synchronize_on_their_own_warpgroup(tmp_path):
    """A consumer's loop of the full width (two K tiles): eight fp8 wgmmas, one FFMA per accumulator element a tile,
    the second tile's wgmmas in flight while the first is promoted (DEPBAR 0x4, then 0x0), each tile's slot waited on
    and released through mbarriers, and no barrier wider than its own 128 threads."""
    loops = innermost_loops_sass(compile_sm90_ws(WS_CONFIG).asm["cubin"], tmp_path, _wgmma(128), operands=True)
    pairs = sorted((loop for loop in loops if sum(t.startswith("QGMMA") for t in loop) == 8), key=len)
    for instructions in pairs[:2]:  # each consumer's (the others run from an mbarrier wait's retry block)
        loop = [text.split()[0] for text in instructions]
        assert loop.count("QGMMA.64x128x32.F32.E4M3.E4M3") == 8 and loop.count("FFMA") == 2 * 64
        assert [t.split()[-1] for t in instructions if t.startswith("WARPGROUP.DEPBAR.LE")] == ["0x4", "0x0"]
        assert loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 2 and loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 2
        barriers = [t for t in instructions if t.startswith("BAR.SYNC")]
        assert barriers and all(t.endswith("0x80") for t in barriers), barriers
        assert not any(name.startswith(("STL", "LDL")) for name in loop)
        assert len(loop) <= WS_SASS_BUDGET["pairs"], len(loop)


def test_warp_specialized_halves_fold_once_for_256_tokens(tmp_path):
    """At block_m 256 a consumer's loop is one K tile on two 128-token halves: its words folded once (two PRMT a word,
    16 a tile), each half's four wgmmas on the same registers and its own promotion (one FFMA an accumulator element
    a half), the slot waited on and released once; spill-free, 296 SASS against the pairs' 409 for as many tokens
    and K tiles. An item of at most 128 tokens runs the first half alone: four wgmmas and one promotion a K tile,
    spill-free. The producer (WIDE_PRODUCER_REGS) copies 16 x pieces, 4 of words and the scales a K tile; the ring
    of 4 stages and the epilogues fit the multiprocessor."""
    kernel = compile_sm90_ws(HALVES_PLAN)
    ptx = kernel.asm["ptx"]
    regs = _sm90_ws.producer_regs(HALVES_PLAN)
    assert regs == _sm90_ws.WIDE_PRODUCER_REGS and f"setmaxnreg.dec.sync.aligned.u32 \t{regs};" in ptx
    assert f"setmaxnreg.inc.sync.aligned.u32 \t{_sm90_ws.consumer_regs(_sm90_ws.WS_MAXNREG, regs)};" in ptx
    wgmma = "QGMMA.64x128x32.F32.E4M3.E4M3"
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, {wgmma})
    halves = sorted((loop for loop in loops if loop.count(wgmma) == 8 and loop.count("PRMT") == 16), key=len)
    assert len(halves) >= 2, [len(loop) for loop in loops]
    for loop in halves[:2]:  # each consumer's
        assert loop.count("FFMA") == 2 * 64 and loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 1
        assert loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 1
        assert not any(op.startswith(("STL", "LDL")) for op in loop)
        assert len(loop) <= WS_SASS_BUDGET["halves"], len(loop)
    one = [loop for loop in loops if loop.count(wgmma) == 4 and loop.count("PRMT") == 16]
    assert len(one) >= 2, [len(loop) for loop in loops]
    for loop in one:  # each consumer's, on an item's first half alone
        assert loop.count("FFMA") == 64 and loop.count("WARPGROUP.DEPBAR.LE") == 1  # its wgmmas waited on once
        assert loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 1 and loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 1
        assert not any(op.startswith(("STL", "LDL")) for op in loop)
        assert len(loop) <= WS_SASS_BUDGET["one half"], len(loop)
    copies = innermost_loops_sass(kernel.asm["cubin"], tmp_path, set())
    producer = [loop for loop in copies if "ARRIVES.LDGSTSBAR.64.ARVCNT" in loop]
    assert producer and all(sum(op.startswith("LDGSTS") for op in loop) == 21 for loop in producer)
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


def test_warp_specialized_halves_on_the_fp8_layout_take_a_from_shared_memory(tmp_path):
    """On the fp8 layout's bytes a consumer's K tile of 256 tokens hands each of its eight wgmmas A from shared
    memory: no words loaded, no fold; one FFMA an accumulator element a half, one slot wait and release; spill-free,
    in fewer instructions than the pairs' 258 for as many tokens and K tiles; an item of at most 128 tokens on its
    first half alone; 3 stages of 48.5 KB fit."""
    kernel = compile_sm90_ws(HALVES_FP8_PLAN)
    wgmma = "QGMMA.64x128x32.F32.E4M3.E4M3"
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, {wgmma})
    halves = sorted((loop for loop in loops if loop.count(wgmma) == 8 and loop.count("FFMA") == 2 * 64), key=len)
    assert len(halves) >= 2, [len(loop) for loop in loops]
    for loop in halves[:2]:  # each consumer's
        assert "PRMT" not in loop and sum(op.startswith("LDS") for op in loop) <= 2
        assert loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 1 and loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 1
        assert not any(op.startswith(("STL", "LDL")) for op in loop)
        assert len(loop) <= WS_SASS_BUDGET["halves fp8"], len(loop)
    one = [loop for loop in loops if loop.count(wgmma) == 4 and loop.count("FFMA") == 64 and "PRMT" not in loop]
    assert len(one) >= 2, [len(loop) for loop in loops]
    for loop in one:  # each consumer's, on an item's first half alone
        assert loop.count("WARPGROUP.DEPBAR.LE") == 1 and loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 1
        assert loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 1
        assert not any(op.startswith(("STL", "LDL")) for op in loop)
        assert len(loop) <= WS_SASS_BUDGET["one half fp8"], len(loop)
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


@pytest.mark.parametrize("plan", ["pairs", "chunks", "lag", "two", "m64-7", "table"])
def test_warp_specialized_tile_on_the_fp8_layout_takes_a_from_shared_memory(tmp_path, plan):
    """On the fp8 layout's bytes a consumer hands each wgmma its A from shared memory: no words loaded, no fold. Its
    loop of a chunk (two K tiles, four with `chunks`, one on three consumers: `table`) holds the chunk's wgmmas, one
    FFMA an accumulator element a tile, a slot wait and a release a tile (with lag consumer 0's handshake besides), in
    about half the packed words' instructions (409), spill-free; the ring fits the multiprocessor (on 64-token tiles,
    at 7 stages)."""
    config = WS_FP8_PLANS[plan]
    kernel = compile_sm90_ws(config)
    tiles = 1 if config.num_warps == 12 else config.overlap_tiles or 2  # three consumers: a K tile on one partial
    wgmma = f"QGMMA.64x{config.block_m}x32.F32.E4M3.E4M3"
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, {wgmma})
    chunks = sorted((loop for loop in loops if loop.count(wgmma) == 4 * tiles), key=len)
    assert len(chunks) >= 2, [len(loop) for loop in loops]
    for loop in chunks[:2]:  # each consumer's: 64 weight rows by block_m tokens on 128 threads
        loads = [op for op in loop if op.startswith("LDS")]  # the scale words only
        assert loop.count("FFMA") == config.block_m // 2 * tiles and len(loads) <= 2 * tiles and "PRMT" not in loop
        handshake = (0, 1) if config.lag else (0,)  # consumer 0's word to consumer 1 runs in its loop
        waits, arrives = loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT"), loop.count("SYNCS.ARRIVE.TRANS64.A1T0")
        assert waits - tiles in handshake and arrives - tiles in handshake
        assert not any(op.startswith(("STL", "LDL")) for op in loop)
        assert len(loop) <= WS_SASS_BUDGET[f"fp8 tile {config.block_m}"] * tiles, len(loop)
    assert kernel.metadata.shared <= SHARED_MEMORY_PER_BLOCK


def test_warp_specialized_bulk_weights_copy_each_row_block_by_tma(tmp_path):
    """With bulk_weights the producer copies each row block's K tile of the fp8 layout by one TMA copy on the slot's
    `full` barrier, whose one more arrival expects their bytes: its loop keeps x's 8 cp.async and the scales' one, and
    spills nothing."""
    kernel = compile_sm90_ws(WS_FP8_PLANS["bulk"])
    ptx = kernel.asm["ptx"]
    expects = re.findall(r"mbarrier\.arrive\.expect_tx\.shared\.b64 _, \[%r\d+\], (\d+);", ptx)
    assert expects and set(expects) == {str(2 * 64 * 128)}  # two row blocks' K tile
    assert re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", ptx)[::2] == ["129"] * 4
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, set())
    producer = [loop for loop in loops if any(op.startswith("UTMALDG") for op in loop)]
    assert len(producer) == 1 and sum(op.startswith("UTMALDG") for op in producer[0]) == 2
    assert sum(op.startswith("LDGSTS") for op in producer[0]) == 9
    assert not any(op.startswith(("STL", "LDL")) for op in producer[0])


def test_split_k_consumers_each_take_half_the_k_tiles(tmp_path):
    """split_k at 80 registers a thread (12 warps, two programs a multiprocessor): the consumers at 104, each pairing
    its K tiles (a loop of two tiles' eight N=16 wgmmas, two slot waits and two releases), spill-free in their loops;
    two more mbarriers than the ring's (`handed`, `taken`) are initialized, for the handover of consumer 1's sum."""
    kernel = compile_sm90_ws(SPLIT_K_CONFIG)
    ptx = kernel.asm["ptx"]
    assert "setmaxnreg.inc.sync.aligned.u32 \t104;" in ptx and "setmaxnreg.dec.sync.aligned.u32 \t24;" in ptx
    report = ptxas_report(ptx, "sm_90a", tmp_path)
    assert registers_used(report) == 80, report
    loops = innermost_loops_sass(kernel.asm["cubin"], tmp_path, _wgmma(16))
    pairs = sorted((loop for loop in loops if loop.count("QGMMA.64x16x32.F32.E4M3.E4M3") == 8), key=len)
    assert len(pairs) >= 2, [len(loop) for loop in loops]
    for loop in pairs[:2]:  # each consumer's (the others: the item loops, around an mbarrier wait's retry block)
        assert loop.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 2 and loop.count("SYNCS.ARRIVE.TRANS64.A1T0") == 2
        assert loop.count("FFMA") == 2 * 8 and "BAR.SYNC" not in loop  # a tile's 64 x 16 sums on 128 threads
        assert not any(name.startswith(("STL", "LDL")) for name in loop)
        assert len(loop) <= WS_SASS_BUDGET["split_k"], len(loop)
    plain = compile_sm90_ws(replace(SPLIT_K_CONFIG, split_k=False, block_m=128, maxnreg=None)).asm["ptx"]
    assert ptx.count("mbarrier.init") == plain.count("mbarrier.init") + 2
    assert kernel.metadata.shared <= 113 * 1024  # two programs a multiprocessor (1 KB of each kept by the hardware)


def test_k_splits_configs_are_refused_outside_the_table_kernel():
    base = _sm90.Sm90Config(32, 4, 4, k_splits=4)
    for fields in ({"k_splits": 0}, {"k_splits": 17}, {"tail_rows": 16}, {"split_at": 64}):
        with pytest.raises(ValueError, match="k_splits is 1 to 16"):
            replace(base, **fields)
    with pytest.raises(ValueError, match="k_splits is 1 to 16"):
        replace(WS_CONFIG, k_splits=2)


@pytest.mark.parametrize(
    ("asked", "k", "made"), [(4, 2880, 4), (8, 2880, 8), (16, 2880, 12), (4, 32, 1), (4, 256, 2), (4, 384, 3)]
)
def test_k_splits_as_k_allows(asked, k, made):
    """Every split gets a K tile at least: the first ones cdiv(tiles, splits) each, the last the rest."""
    assert _sm90._k_splits(asked, k) == made
    tiles = -(-k // 128)
    per = _sm90._split_tiles(k, made)
    assert 0 < tiles - (made - 1) * per <= per


@pytest.mark.parametrize("fast", [False, True], ids=["accurate", "fast"])
@pytest.mark.parametrize("config", K_SPLITS_PLANS, ids=str)
def test_k_splits_plans_compile_with_their_hand_in(config, fast, tmp_path):
    """Every k_splits plan the GPU tests run compiles for sm_90a with its hand-in (a predicated, acquire-release atomic
    at GPU scope on the tile's counter) and spills at most 8 bytes (the first entry's, fast, at its 80-register cap)."""
    ptx = compile_sm90(config, fast=fast).asm["ptx"]
    atomics = re.findall(r"^\s*(@%p\d+ )?atom\.global\.gpu\.acq_rel\.add\.u32", ptx, re.M)
    assert atomics and all(atomics), "one thread of the program counts its split in"
    report = ptxas_report(ptx, "sm_90a", tmp_path)
    assert spilled_bytes(report) <= 8, report


def compile_decode(config, fast=False, k=2880, n=5760):
    """The decode tile (_sm90_decode) for sm_90a as the launcher runs `config` (decode_rows set)."""
    dropped = ("sums_ptr", "arrivals_ptr", "w_desc")  # and the table kernel's constexprs
    signature = {name: kind for name, kind in SIGNATURE.items() if name not in dropped and kind != "constexpr"}
    constexprs = _sm90_decode.decode_constexprs(config, k, n, fast, zero_scale=False)
    signature |= dict.fromkeys(constexprs, "constexpr")
    src = GluonASTSource(_sm90_decode._bmm1_sm90_decode_kernel, signature, constexprs=constexprs, attrs=ALIGNED)
    options = {"num_warps": config.num_warps, "maxnreg": config.maxnreg}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


@pytest.mark.parametrize("fast", [False, True], ids=["accurate", "fast"])
@pytest.mark.parametrize("config", DECODE_PLANS, ids=str)
def test_decode_tile_keeps_its_k_loop_in_registers(config, fast, tmp_path):
    """Every decode plan compiles for sm_90a without spills, and its unrolled K loop (up to the last HMMA) runs 8 HMMA
    a K tile and set (ptxas runs an e4m3 mma.sync m16n8k32 as two fp16 m16n8k16 on Hopper) with no shared-memory
    access or barrier: the words, scales and x go from global memory into the operands' registers (the layouts'
    conversions move no data); the sets' sums meet in shared memory after it."""
    kernel = compile_decode(config, fast=fast)
    report = ptxas_report(kernel.asm["ptx"], "sm_90a", tmp_path)
    assert spilled_bytes(report) == 0, report
    sass = kernel_sass(kernel.asm["cubin"], tmp_path)
    last = max(i for i, op in enumerate(sass) if op.startswith("HMMA"))
    sets = config.num_warps // (config.decode_rows // 16)
    assert sass.count("HMMA.16816.F32") == 8 * -(-23 // sets), "K = 2880: 23 tiles, every sets-th a set's"
    assert not [op for op in sass[:last] if op.split(".")[0] in ("LDS", "STS", "BAR", "LDSM")], sass[:last]


def test_decode_configs_refuse_what_the_tile_does_not_run():
    base = _sm90.Sm90Config(8, 2, 4, decode_rows=16)
    assert base.block_n == 16 and replace(base, decode_rows=64, num_warps=8).block_n == 64
    refused = ({"decode_rows": 8}, {"block_m": 16}, {"num_stages": 4}, {"num_warps": 12},
               {"decode_rows": 64, "num_warps": 2}, {"narrow_last_tile": 1}, {"k_splits": 2},
               {"widest_first": True})  # fmt: skip
    for fields in refused:
        with pytest.raises(ValueError, match="decode_rows is 16, 32 or 64"):
            replace(base, **fields)
    assert _sm90.f16_config(base) == _sm90.f16_config(_sm90.CONFIGS[0][1]), "the fp16 path runs the table's tile"


def test_k_splits_launch_plan(monkeypatch):
    """A tile's splits are consecutive programs: the grid is tiles x splits, the sums' buffer holds each split's
    [block_n, block_m] and the counters (zeros, made once per metadata) one per tile."""
    launches = _record(monkeypatch, _sm90, "_bmm1_sm90_kernel", 7, 11, 12)  # schedule, sums, arrivals
    config = _sm90.Sm90Config(block_m=16, num_stages=4, num_warps=4, k_splits=4)
    w = _sm90.prepare_weights(_random_weights(e=2, n=128, k=640))
    ragged = make_ragged_metadata(torch.tensor([40, 3], dtype=torch.int32), 43, 4)
    gather = torch.zeros(43, dtype=torch.int32)
    for _ in range(2):
        _sm90.launch(None, w, torch.zeros(2, 128), gather, ragged, None, None, 1.0, 1.0, None, config)
    (grid, schedule, sums, arrivals, kwargs), (_, _, _, again, _) = launches
    tiles = schedule.numel() * 2  # N = 128: two 64-row blocks
    assert kwargs["K_SPLITS"] == 3  # K = 640: 5 tiles, as 2, 2 and 1
    assert grid == (tiles * 3,) and sums.numel() == tiles * 3 * 64 * 16 and sums.dtype == torch.float32
    assert arrivals.shape == (tiles,) and int(arrivals.abs().sum()) == 0 and again is arrivals
    monkeypatch.setattr(_sm90, "K_SPLITS_SCRATCH", sums.numel() * 4 - 1)  # a byte short: refused by name
    with pytest.raises(ValueError, match="k_splits=3 at block_m 16 would keep"):
        _sm90.launch(None, w, torch.zeros(2, 128), gather, ragged, None, None, 1.0, 1.0, None, config)


def test_split_config_launches_each_bucket_with_its_tile(recorded_launches):
    """split_at sends the hot slice to a second launch tiled by large_block_m; each launch's grid is its schedule
    times the column blocks."""
    config = _sm90.Sm90Config(block_m=8, num_stages=8, num_warps=4, split_at=16, large_block_m=64)
    _launch(_sm90.prepare_weights(_random_weights(e=5, n=128, k=64)), [126, 38, 6, 4, 0], config)
    (grid_s, small, kw_s), (grid_l, large, kw_l) = recorded_launches
    assert (kw_s["BLOCK_M"], kw_s["NUM_STAGES"], kw_l["BLOCK_M"], kw_l["NUM_STAGES"]) == (8, 8, 64, 4)
    assert grid_s == (small.numel() * 2,) and grid_l == (large.numel() * 2,)  # N = 128: two 64-row blocks
    used = lambda s: sorted(v for v in s.tolist() if v >= 0)
    assert used(small) == [2, 3]  # the two light slices, one 8-row tile each
    assert used(large) == sorted([0, 1 << 16, 1])  # the hot slice in two 64-row tiles, the 38-row one in one


def test_fp16_path_caps_the_tile_at_its_largest_spill_free_size(recorded_launches):
    w = _sm90.prepare_weights(_random_weights(e=2, n=128, k=64), f16=True)
    _launch(w, [200, 56], _sm90.Sm90Config(block_m=128, num_stages=4, num_warps=4))
    ((_, schedule, kwargs),) = recorded_launches
    assert (kwargs["BLOCK_M"], kwargs["F16"]) == (_sm90.F16_MAX_BLOCK_M, True)
    assert sorted(v for v in schedule.tolist() if v >= 0) == sorted([0, 1 << 16, 2 << 16, 3 << 16, 1])  # 64 rows


def test_extra_rows_join_the_slices_last_tile(recorded_launches):
    """With extra, a slice's last rows past a whole tile, up to extra of them, ride in that tile: a slice of 70 rows at
    block_m 64 is one tile, one of 90 two (64 + a narrowed 32); the fp16 path, which has no widened loop, tiles by
    block_m alone."""
    config = _sm90.Sm90Config(block_m=64, num_stages=4, num_warps=4, narrow_last_tile=2, tail_rows=16)
    _launch(_sm90.prepare_weights(_random_weights(e=3, n=128, k=64), f16=False), [70, 90, 10], config)
    _launch(_sm90.prepare_weights(_random_weights(e=3, n=128, k=64), f16=True), [70, 90, 10], config)
    (grid, schedule, kwargs), (_, schedule16, kwargs16) = recorded_launches
    used = lambda s: sorted(v for v in s.tolist() if v >= 0)
    assert used(schedule) == sorted([0, 1, 1 << 16 | 1, 2]) and grid == (schedule.numel() * 2,)
    assert (kwargs["BLOCK_M"], kwargs["TAIL_ROWS"], kwargs["NUM_STAGES"]) == (64, 16, 4)
    assert used(schedule16) == sorted([0, 1 << 16, 1, 1 << 16 | 1, 2]) and kwargs16["TAIL_ROWS"] == 0


def _tool(name: str):
    """tools/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hazard(kind, first, second):
    """racecheck's report of one hazard (--racecheck-report hazard): `first` and `second` as (thread, file:line)."""
    return [
        f"========= Error: Potential {kind} hazard detected at __shared__ 0x30e58 in block (3,0,0) :\n",
        f"=========     Write Thread ({first[0]},0,0) at bmm1_sm90_ws_kernel+0xa000 in {first[1]}\n",
        f"=========     Read Thread ({second[0]},0,0) at bmm1_sm90_ws_kernel+0x100 in {second[1]}\n",
        "=========     Current Value : 1\n",
    ]


def test_racecheck_report_tells_the_scaffolding_s_hazards_from_the_kernel_s():
    """tools/racecheck_report.py (sanitize.sh's racecheck): a hazard between Triton's warp-specialization state writes
    (the warp_specialize call's line, or the `if` line of the constexpr if/else choosing the call, and the kernel's
    def line) and its switch loop's reads (the def line) passes; one with an access on any other line fails, as does
    a report whose hazards are not all displayed or that has no summary. The lines are found in the kernel's source,
    not listed."""
    report = _tool("racecheck_report")
    source = (Path(__file__).parents[1] / "moe_gather" / "_sm90_ws.py").read_text().splitlines()
    calls = [i + 1 for i, t in enumerate(source) if t.strip().startswith("gl.warp_specialize(")]
    call = calls[0]
    define = next(i + 1 for i, t in enumerate(source) if t.startswith("def bmm1_sm90_ws_kernel("))
    branch = next(i + 1 for i, t in enumerate(source) if t.strip() == "if CONSUMERS == 3:  # (the partitions'"
                  " arguments written out: a tuple held in a variable loses its constexprs)")  # fmt: skip
    assert len(calls) == 2 and branch < call and source[calls[1] - 2].strip() == "else:"
    assert report._scaffold_lines("_sm90_ws.py") == {*calls, branch, define}
    where = ["    if A:", "        x = 1", "        gl.warp_specialize(", "    else:", "        gl.warp_specialize("]
    assert [report._enclosing_if(where, i) for i in (2, 4)] == [0, 0] and report._enclosing_if(where, 0) is None
    head, case = ["========= COMPUTE-SANITIZER\n"], ["uniform-bs8192: 3937 tokens, N = 128\n"]
    hazards = _hazard("RAW", (31, f"_sm90_ws.py:{call}"), (288, f"_sm90_ws.py:{define}")) + _hazard(
        "RAW", (0, f"_sm90_ws.py:{define}"), (128, f"_sm90_ws.py:{define}")
    )

    def summary(n, shown=None):
        return [f"========= RACECHECK SUMMARY: {shown or n} hazards displayed ({n} errors, 0 warnings)\n"]

    lines, status = report.report(head + hazards + case + summary(2))
    assert status == 0 and lines[:3] == [s.rstrip("\n") for s in head + case + summary(2)]
    assert lines[-1] == "racecheck_report: 2 hazards, 2 of Triton's warp-specialization scaffolding, 0 the kernel's"
    own = _hazard("WAR", (300, f"_sm90_ws.py:{call + 3}"), (40, f"_sm90_ws.py:{define}"))
    lines, status = report.report(head + hazards + own + summary(3))
    assert status == 1 and f"racecheck_report: 1 WAR Write _sm90_ws.py:{call + 3}" in "\n".join(lines)
    assert lines[-1].endswith("2 of Triton's warp-specialization scaffolding, 1 the kernel's")
    for whole in (head + hazards + summary(4, 2), head + hazards):  # hazards left undisplayed, no summary at all
        assert report.report(whole)[1] == 1
    assert report.report(head + summary(0))[1] == 0


def test_each_layout_has_its_fast_table_and_chunks_of_four_can_be_forced_on_the_fp8_one(monkeypatch):
    """table(precision, layout): the fp8 layout's is the fast precision's only (other pairs refused by name). The
    results pages' commands force FP8_CHUNKS over the fp8 table's block_m 128 entry (tools/results.py CHUNKS_FORCE):
    those fields give it exactly."""
    assert _sm90.table("fast", "fp8") is _sm90.FAST_FP8_CONFIGS and _sm90.table("fast") is _sm90.FAST_CONFIGS
    assert _sm90.table("accurate") is _sm90.CONFIGS
    for precision, layout in (("accurate", "fp8"), ("fast", "fp4")):
        with pytest.raises(ValueError, match="layout: 'mxfp4', or 'fp8' at the fast precision"):
            _sm90.table(precision, layout)
    results = _tool("results")
    large = make_ragged_metadata(torch.tensor([900, 700], dtype=torch.int32), 1600, 4)
    monkeypatch.setenv(_sm90.FORCE_ENV, results.CHUNKS_FORCE)
    assert _sm90.select_config(large, "fast", "fp8") == _sm90.FP8_CHUNKS
    monkeypatch.setenv(_sm90.FORCE_ENV, results.CHUNKS_FORCE + ",persistent=1")
    assert _sm90.select_config(large, "fast", "fp8") == replace(_sm90.FP8_CHUNKS, persistent=True)
