"""Launch plans of the sm90 kernels beside the tables' entries (and the entries they are built on), shared by the CPU
compile tests (suites/test_sm90.py) and the GPU tests (suites/test_kernel_edges.py)."""

from dataclasses import replace

from moe_gather import _sm90

# The warp-specialized tile (fast only): a producer warpgroup, two consumers on block_m 128.
WS_CONFIG = _sm90.Sm90Config(128, 4, 8, narrow_last_tile=2, warp_specialized=True)

# It on 256-token items (the packed words): each consumer folds a K tile once for two 128-token halves; persistent.
HALVES_PLAN = _sm90.WS_HALVES
# The same on the fp8 layout's bytes (wgmma's A from shared memory, the weights by TMA): 3 stages of 48.5 KB.
HALVES_FP8_PLAN = replace(HALVES_PLAN, num_stages=3, fp8_layout=True, bulk_weights=True)

# It on the fp8 layout's bytes (wgmma's A from shared memory): K tiles in pairs, in chunks of four, consumer 1 a chunk
# of two behind consumer 0 (lag: each one's epilogue under the other's wgmmas), the same persistent (one program a
# multiprocessor: many items a program, every width), the weights by TMA ("two": what the fast fp8 table's entry runs
# where N is not a multiple of 192), on 64-token tiles (narrowed to 32 and 16) on 5 and 7 stages; the table's entry on
# three consumers (192 weight rows an item, one partial each, 4 stages).
WS_FP8 = replace(WS_CONFIG, fp8_layout=True)
WS_FP8_PLANS = {
    "pairs": WS_FP8,
    "chunks": replace(WS_FP8, overlap_tiles=4, num_stages=5),
    "lag": replace(WS_FP8, lag=1, num_stages=5),
    "lag-persistent": replace(WS_FP8, lag=1, num_stages=5, persistent=True),
    "bulk": replace(WS_FP8, bulk_weights=True),
    "two": _sm90.FP8_WS,
    "m64": replace(_sm90.FP8_WS, block_m=64),
    "m64-7": replace(_sm90.FP8_WS, block_m=64, num_stages=7),
    "table": _sm90.FP8_WS3,
}

# The fast table's block_m 64 entry with the slices of more than 96 rows in a launch of their own on the large entry
# of the weights' table (hot_at: WS_HALVES on the packed words, FP8_WS3 on the fp8 layout's bytes, the accurate
# table's block_m 128 on accurate weights); slices of 65-80 rows keep the entry's tail rows.
HOT_PLAN = replace(_sm90.FAST_CONFIGS[1][1], hot_at=96)

# Its split_k form (64-row items, the K tiles split between the consumers), one item a program and persistent.
SPLIT_K_PLANS = [
    _sm90.Sm90Config(block_m=32, num_stages=4, num_warps=8, narrow_last_tile=2, warp_specialized=True, split_k=True),
    _sm90.Sm90Config(
        block_m=16, num_stages=6, num_warps=8, maxnreg=80, warp_specialized=True, split_k=True, persistent=True
    ),
]

# The table kernel with each tile's K tiles split between programs (the last to finish adds the sums): the first
# entries' tiles and the block_m 64 one, 2 to 8 splits (8: gpt-oss's 23 K tiles as 3 each and 2 for the last).
K_SPLITS_PLANS = [
    replace(_sm90.CONFIGS[0][1], k_splits=4),  # the first entry
    _sm90.Sm90Config(32, 4, 8, maxnreg=80, parity_rings=True, narrow_last_tile=2, k_splits=2),
    _sm90.Sm90Config(64, 4, 8, parity_rings=True, narrow_last_tile=2, k_splits=3),
    _sm90.Sm90Config(16, 4, 4, narrow_last_tile=1, k_splits=8),
]

# The chunks of four K tiles at block_m 128 on the fp8 layout (on the packed words where the weights lack its bytes)
# with its weight tiles by TMA, and with each stage its own allocation.
FP8_CHUNKS = _sm90.FP8_CHUNKS
BULK_PLAN = replace(FP8_CHUNKS, bulk_weights=True)
SLOTS_PLAN = replace(FP8_CHUNKS, slot_buffers=True)
# The same persistent: one program a multiprocessor, phases of 128-, 64- and 32-token tiles (_sm90_persistent).
PERSISTENT_PLAN = replace(FP8_CHUNKS, persistent=True)

# Decode's register tile (mma.sync on the packed words in registers, no ring): 16 rows a program with K split in 4 or
# 8 sets, one or two K tiles loaded ahead; 32 and 64 rows a program.
DECODE_PLANS = [
    _sm90.Sm90Config(8, 2, 4, decode_rows=16),
    _sm90.Sm90Config(8, 3, 8, decode_rows=16),
    _sm90.Sm90Config(8, 2, 8, decode_rows=32),
    _sm90.Sm90Config(8, 3, 16, decode_rows=64),
]

# The chunks of four with 64 tail rows in every tile where the weights hold the fp8 layout (192 tokens a tile;
# wide_tiles).
WIDE_PLAN = replace(FP8_CHUNKS, tail_rows=64, wide_tiles=True)
