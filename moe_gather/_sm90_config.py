"""The sm90 kernel's configs and the table that chooses one per call, on the host (docs/sm90.md: why each entry)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ._table import choose

F16_MAX_BLOCK_M = 64  # the fp16 path's largest tile: block_m 128 spills with two k16 partials per block
WS_MAXNREG = 168  # two consumers' 12 warps at launch: 168 * 12 * 32 <= 65536 (three consumers' 16 take 128)


@dataclass(frozen=True)
class Sm90Config:
    block_m: int  # tokens per tile: the wgmma N side (8..256)
    num_stages: int  # pipeline stages; num_stages - 1 K tiles are loaded ahead (num_stages - 2 with overlap_tiles)
    num_warps: int  # 4 or 8 (12: warp_specialized's three consumers): one warpgroup per 64 weight rows
    maxnreg: int | None = None  # register cap per thread: more programs per multiprocessor
    # Even and odd K tiles in separate buffers, the loop unrolled by two: one bar.sync per K tile instead of two.
    parity_rings: bool = False
    # A slice's last tile at block_m / 2 (1) or block_m / 4 (2) tokens when its rows fit, down to 8 tokens.
    narrow_last_tile: int = 0
    # The grid's tiles ordered by the rows they hold, most first: the narrowed last tiles run in the last wave.
    widest_first: bool = False
    # Two partial sums per warpgroup: block j + 1's wgmma runs while block j's partial is promoted.
    two_partials: bool = False
    # Skewed routing: slices of more than split_at rows in a second launch tiled by large_block_m (0: one launch).
    split_at: int = 0
    large_block_m: int = 64
    large_num_stages: int = 4
    # Rows past block_m that a slice's last tile takes on a second wgmma per block instead of a tile of their own
    # (0, or a power of two from 16 to block_m / 2); that tile runs a ring one stage shallower, unpaired.
    tail_rows: int = 0
    # The fast precision with parity rings (the accurate one runs the plain loop): K tiles in chunks of overlap_tiles
    # (0, 2 or 4) through two partials, each
    # tile's wgmmas running while the previous tile's partial is promoted, the chunk's last drained (loads one tile
    # less ahead, so that none lands in a slot still read).
    overlap_tiles: int = 0
    # The fast precision on a producer warpgroup (cp.async, mbarriers) and two consumer warpgroups that never wait on
    # each other, each pairing K tiles on its own 64 weight rows (_sm90_ws; split_k changes that): num_warps 8 counts
    # the consumers (12: three on items of 192 weight rows, each K tile on one partial; the fp8 layout's block_m 128).
    # At block_m 256 (the packed words) each consumer folds a K tile once for two 128-token halves.
    warp_specialized: bool = False
    # One program per multiprocessor over the launch's tiles, its ring running on from one tile to the next (the next
    # tile's first K tiles load while the last one's epilogue runs): the warp-specialized tile's, or the fp8 layout's
    # block_m 128 chunks of four (_sm90_persistent; on the packed words the config runs one tile a program).
    persistent: bool = False
    # With warp_specialized: work items of 64 weight rows whose K tiles the two consumers split (even, odd), consumer
    # 1's sum added to consumer 0's in shared memory before the one epilogue: twice the items, each K chain halved
    # (decode: few programs, each bound by its chain). block_m 16 to 64; maxnreg caps the 12 warps (default 168); 3
    # stages or more (a consumer's pair waits on two of its slots two steps apart before releasing the first).
    split_k: bool = False
    # Programs that split each tile's K tiles (fewer where K has fewer tiles): each stores its fp32 sum, and the last
    # to finish adds them in split order (deterministic) and runs the epilogue. Decode: few tiles, each a long chain.
    # Up to 16 (gpt-oss's 23 K tiles give 12 at most). Its counters live in the RaggedMetadata: launches sharing one
    # must run in stream order.
    k_splits: int = 1
    # The fast precision's weights prepared in layout "fp8" (their folded e4m3 bytes beside the packed codes): this
    # config reads the bytes, wgmma's A operand straight from shared memory, no fold (twice the bytes a K tile).
    # Weights without them run the packed codes.
    fp8_layout: bool = False
    # With fp8_layout: each K tile's weights by TMA (one 8 KB copy a row block, on an mbarrier a stage) instead of
    # cp.async of 16 bytes a thread (1,024 a 128-row tile): fewer copy instructions. The chunks of four K tiles only.
    bulk_weights: bool = False
    # The fast precision's chunks of four K tiles on 4 stages with each stage in its own allocation (its slots known
    # when compiling): Triton's barrier analysis then adds no second bar.sync a K tile.
    slot_buffers: bool = False
    # Decode's register tile (_sm90_decode) instead of the wgmma kernel: programs of `decode_rows` weight rows (16, 32
    # or 64) on 8-token blocks (block_m 8), the packed words loaded straight into mma.sync's registers num_stages - 1
    # K tiles ahead (no shared-memory ring); num_warps / (decode_rows / 16) sets of warps split the K tiles.
    decode_rows: int = 0
    # Every tile block_m + tail_rows tokens wide where the weights hold the fp8 layout's bytes: the tail rows' wgmma on
    # the same weights in each tile, not only in a slice's last (192 tokens at block_m 128: fewer bytes a flop from L2);
    # a slice's last block_m rows or fewer run the plain tile. On the packed words the config runs without its tail.
    wide_tiles: bool = False
    # With warp_specialized (not split_k): consumer 1 starts each work item's K loop once consumer 0 has done `lag`
    # chunks of it (overlap_tiles K tiles, 2 by default), so that each one's epilogue runs under the other's wgmmas
    # (ping-pong on one shared x ring, which holds the lag: lag * chunk + 2 stages or more).
    lag: int = 0
    # Skewed routing: slices of more than hot_at rows in a second launch on the large entry of the weights' table
    # (the accurate one's block_m 128; the fast one's WS_HALVES, FP8_WS3 on the fp8 layout's bytes), the rest on this
    # config; where no slice passes it, that launch finds no work (0: one launch). The second launch runs first, on a
    # side stream, beside this config's (the caller's stream waits on it before the call returns).
    hot_at: int = 0

    def __post_init__(self):
        # A ring loads num_stages - 1 tiles ahead (- 2 with overlap_tiles; a tile with tail_rows runs one stage less).
        least = 2 + bool(self.tail_rows)
        if self.num_stages < least or (self.split_at and self.large_num_stages < 2):
            raise ValueError(f"Sm90Config: num_stages needs {least} or more (large_num_stages 2 or more), got {self}")
        if self.parity_rings and (self.num_stages % 2 or self.split_at):
            raise ValueError(f"Sm90Config: parity_rings needs an even num_stages and no split_at, got {self}")
        if self.overlap_tiles not in (0, 2, 4) or (
            self.overlap_tiles and not self.warp_specialized and (not self.parity_rings or self.num_stages < 4)
        ):  # it loads num_stages - 2 tiles ahead (the warp-specialized consumers: their chunk of K tiles)
            raise ValueError(
                f"Sm90Config: overlap_tiles is 0, 2 or 4 K tiles, through parity_rings of 4 stages or more, got {self}"
            )
        others = (self.tail_rows, self.two_partials, self.split_at, self.parity_rings)
        block_ms = (16, 32, 64) if self.split_k else (64, 128) if self.lag else (64, 128, 256)
        chunk = self.overlap_tiles or 2
        most_stages = {128: 5 if self.fp8_layout else 7, 256: 3 if self.fp8_layout else 4}.get(self.block_m, 7)
        three = (self.fp8_layout, self.block_m == 128, self.num_stages <= 4, not self.split_k, not self.lag)
        if self.warp_specialized and (
            self.block_m not in block_ms
            or self.num_warps not in (8, 12)
            or (self.num_warps == 12 and not (all(three) and self.overlap_tiles in (0, 2)))
            or self.num_stages > most_stages
            or any(others)
            or (self.maxnreg and not (self.split_k and 48 <= self.maxnreg <= WS_MAXNREG))
            or (self.split_k and (self.num_stages < 3 or self.overlap_tiles or self.fp8_layout or self.lag))
            or (self.lag and self.num_stages < self.lag * chunk + 2)
        ):  # 8 stages of 24.5 KB (6 of 32.5 on the fp8 layout at block_m 128, 5 of 40.5 at 256, 4 of 48.5 on the fp8
            # layout) and the epilogues' scratch pass 227 KB; block_m 64 on the fp8 layout is held to the 7 measured
            raise ValueError(
                "Sm90Config: warp_specialized takes block_m 64 or 128 (256 without lag; 16, 32 or 64 with split_k),"
                " num_warps 8 (its consumers; 12 on the fp8 layout at block_m 128, 4 stages at most, no split_k, lag"
                " or chunks of four),"
                " num_stages up to 7 (5 with fp8_layout at block_m 128, 4 at block_m"
                " 256, 3 with fp8_layout; 3 or more with split_k,"
                " lag * overlap_tiles + 2 or more with lag), maxnreg 48-168 only with split_k, none of tail_rows,"
                " two_partials, split_at, parity_rings, and with split_k none of overlap_tiles, fp8_layout, lag, got"
                f" {self}"
            )
        if self.hot_at and (
            self.hot_at < 0
            or self.warp_specialized
            or self.persistent
            or self.split_at
            or self.widest_first
            or self.k_splits > 1
            or self.decode_rows
            or self.wide_tiles
        ):
            raise ValueError(
                "Sm90Config: hot_at is 1 or more rows, on a table kernel's config without warp_specialized,"
                f" persistent, split_at, widest_first, k_splits, decode_rows or wide_tiles, got {self}"
            )
        if self.lag and (self.lag < 0 or not self.warp_specialized):
            raise ValueError(f"Sm90Config: lag is the warp-specialized tile's, 1 or more chunks, got {self}")
        if self.split_k and not self.warp_specialized:
            raise ValueError(f"Sm90Config: split_k is the warp-specialized tile's, got {self}")
        if self.persistent_fp8 and replace(self, persistent=False) != FP8_CHUNKS:
            raise ValueError(
                f"Sm90Config: persistent is the warp-specialized tile's, or the fp8 layout's {FP8_CHUNKS}, got {self}"
            )
        if not 1 <= self.k_splits <= 16 or (
            self.k_splits > 1 and (self.tail_rows or self.split_at or self.warp_specialized)
        ):
            raise ValueError(
                "Sm90Config: k_splits is 1 to 16, and above 1 without tail_rows, split_at or warp_specialized,"
                f" got {self}"
            )
        if self.bulk_weights and not (
            self.fp8_layout
            and (self.overlap_tiles == 4 or self.warp_specialized)
            and not self.tail_rows
            and self.k_splits == 1
        ):
            raise ValueError(
                f"Sm90Config: bulk_weights reads the fp8 layout in chunks of four K tiles (overlap_tiles=4) or on the"
                f" warp-specialized tile's producer, without tail_rows or k_splits, got {self}"
            )
        if self.slot_buffers and not (self.overlap_tiles == 4 and self.num_stages == 4 and not self.tail_rows):
            raise ValueError(
                f"Sm90Config: slot_buffers runs the chunks of four K tiles (overlap_tiles=4) on 4 stages, without"
                f" tail_rows, got {self}"
            )
        if self.decode_rows:
            along = self.decode_rows // 16
            sets = self.num_warps // along if self.decode_rows in (16, 32, 64) else 0
            plain = replace(self, decode_rows=0, maxnreg=None, num_stages=2)  # what the decode tile may not change
            if (
                self.num_stages not in (2, 3)
                or sets < 1
                or self.num_warps % along
                or sets & (sets - 1)
                or plain != Sm90Config(8, 2, self.num_warps)
            ):
                raise ValueError(
                    "Sm90Config: decode_rows is 16, 32 or 64 weight rows, with block_m 8, num_stages 2 or 3, num_warps"
                    " a power-of-two multiple of decode_rows / 16, maxnreg at most and no other option, got"
                    f" {self}"
                )
        if self.wide_tiles and not (self.tail_rows and self.fp8_layout):
            raise ValueError(f"Sm90Config: wide_tiles widens every tile by tail_rows on the fp8 layout, got {self}")
        if self.widest_first and self.split_at:
            raise ValueError(f"Sm90Config: widest_first orders one schedule, not split_at's two, got {self}")
        if self.narrow_last_tile not in (0, 1, 2):
            raise ValueError(f"Sm90Config: narrow_last_tile is 0, 1 or 2 halvings of block_m, got {self}")
        rows = self.tail_rows
        if rows and (rows & (rows - 1) or not 16 <= rows <= self.block_m // 2 or self.two_partials or self.split_at):
            raise ValueError(
                f"Sm90Config: tail_rows is 0 or a power of two from 16 to block_m / 2, without two_partials or"
                f" split_at, got {self}"
            )

    @property
    def block_n(self) -> int:  # weight rows per tile (a work item's, split_k's one row block, the decode tile's)
        return 64 if self.split_k else self.decode_rows or 16 * self.num_warps

    @property
    def persistent_fp8(self) -> bool:  # the fp8 layout's persistent tile (_sm90_persistent), not _sm90_ws's
        return self.persistent and not self.warp_specialized

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        """(block_m, num_stages) of each launch: the small tiles' and, with split_at, the large ones'."""
        small = (self.block_m, self.num_stages)
        return (small, (self.large_block_m, self.large_num_stages)) if self.split_at else (small,)


# Rows per local slice of the call (select_config) up to which an entry is chosen; first match wins. Chosen by sweeps on
# the H200, sustained timing (docs/sm90.md says why each entry wins, docs/sm90-tried.md what lost).
# (rows per slice up to which, Sm90Config(block_m, num_stages, num_warps, ...))
CONFIGS = (
    # Weight-streaming: twice the programs on one warpgroup, the slices' narrowed last tiles in the last wave.
    (24, Sm90Config(32, 4, 4, maxnreg=80, parity_rings=True, narrow_last_tile=2, widest_first=True)),
    # Two warpgroups share each x tile; slices of 33-48 rows convert their weights once (tail_rows).
    (40, Sm90Config(32, 4, 8, maxnreg=80, parity_rings=True, narrow_last_tile=2, tail_rows=16)),
    # Two programs of 8 warps per multiprocessor at 124 registers; slices of 65-80 rows in one tile.
    (192, Sm90Config(64, 4, 8, parity_rings=True, narrow_last_tile=2, tail_rows=16)),
    # Each converted weight serves 128 tokens; the second partial sum hides the wgmma's latency.
    (1 << 30, Sm90Config(128, 4, 8, narrow_last_tile=2, two_partials=True)),
)


# The block_m 128 tile of the fast precision in K tiles in chunks of four (reading the fp8 layout's bytes where the
# weights hold them and a config asks; persistent there: _sm90_persistent).
FP8_CHUNKS = Sm90Config(128, 4, 8, parity_rings=True, narrow_last_tile=2, overlap_tiles=4, fp8_layout=True)

# The warp-specialized tile (_sm90_ws) on the fp8 layout: its producer copies each row block's K tile by TMA, 5
# stages, one program a multiprocessor. It runs the fp8 table's entry (FP8_WS3) where N is not a multiple of 192;
# without fp8_layout, on the packed words (packed_words_config).
FP8_WS = Sm90Config(
    128, 5, 8, narrow_last_tile=2, warp_specialized=True, persistent=True, fp8_layout=True, bulk_weights=True
)
# The fast fp8 table's: that tile on three consumers, 192-row items, one partial each, 4 stages (docs/sm90.md).
FP8_WS3 = replace(FP8_WS, num_stages=4, num_warps=12)
# The fast table's large entry: the warp-specialized tile on 256-token items of the packed words, each consumer
# folding a K tile once for two 128-token halves; one program a multiprocessor (0.82x-0.98x FP8_CHUNKS's time from 227
# rows per slice, docs/sm90.md).
WS_HALVES = Sm90Config(256, 4, 8, narrow_last_tile=2, warp_specialized=True, persistent=True)

# The fast precision's table: one partial per K tile (its promotion is a quarter of the accurate path's); block_m 64
# takes over from 25 rows (block_m 32 on two warpgroups runs 1.02x-1.19x its time there), the 256-token tile from
# HALVES_FROM (at 192 rows it takes 0.90x block_m 64's time, at 162-185 0.98x-1.04x, at 113-142 1.07x-1.21x:
# docs/sm90.md); the block_m 64 entry's slices of more than HOT_AT rows run on it too, in a launch of their own (hot_at:
# 0.82x-0.96x the time on seven skewed calls, 0.98x-1.03x on seven others, 1.00x-1.02x on uniform ones). Weights
# holding the fp8 layout's bytes take FAST_FP8_CONFIGS below, whose smaller tiles read the packed words: they stream
# their weights, and twice the bytes cost more there than the fold.
HALVES_FROM = 186
HOT_AT = 256  # the block_m 64 entry's slices of more than one WS_HALVES item run on the large entry (hot_at)
FAST_CONFIGS = (
    (24, Sm90Config(32, 4, 4, maxnreg=80, parity_rings=True, narrow_last_tile=2, widest_first=True)),
    (HALVES_FROM - 1, Sm90Config(64, 4, 8, parity_rings=True, narrow_last_tile=2, tail_rows=16, hot_at=HOT_AT)),
    (1 << 30, WS_HALVES),
)

# The fast precision's table where the weights hold the fp8 layout's bytes: its block_m 128 entry the warp-specialized
# tile on three consumers (FP8_WS3; its two-consumer form 0.85x-0.94x FP8_CHUNKS's time there, FP8_WS3 0.91x-0.99x
# FP8_WS's; on the packed words the tile takes 1.00x-1.16x theirs), taking over from
# the block_m 64 entry at FP8_WS_FROM rows per slice (docs/sm90.md).
FP8_WS_FROM = 90
FAST_FP8_CONFIGS = (*FAST_CONFIGS[:-2], (FP8_WS_FROM - 1, FAST_CONFIGS[-2][1]), (1 << 30, FP8_WS3))

TABLES = {"accurate": CONFIGS, "fast": FAST_CONFIGS, "fast+fp8": FAST_FP8_CONFIGS}  # precision, or fast+layout


def table(precision: str, layout: str = "mxfp4"):
    """The table a call at `precision` on weights in `layout` ("mxfp4" or "fp8", the fast precision's) chooses from."""
    if layout not in ("mxfp4", "fp8") or (layout == "fp8" and precision != "fast"):
        raise ValueError(f"layout: 'mxfp4', or 'fp8' at the fast precision, got {layout!r} at {precision!r}")
    return TABLES["fast+fp8" if layout == "fp8" else precision]


# "fast" becomes the default once it is measured within the numerics budget on every case of both models and faster
# on each (docs/numerics.md, docs/sm90.md); until then it is asked for by name.
DEFAULT_PRECISION = "accurate"

FORCE_ENV = "MOE_GATHER_SM90_FORCE"  # e.g. "block_m=16,num_warps=8": overrides fields of every choice (tests, sweeps)


# Decode: a call of at most `rows` rows (RaggedMetadata.tokens, known on the host) runs at most that many experts, each
# tile a long K chain on few programs; the table's first entry then splits each tile's K tiles between programs.
# Per precision, (rows of the call up to which, k_splits); beyond the last, none (docs/sm90.md, "Decode: what bounds
# it"). The fp16 path runs its K tiles on one program (f16_config). The fast
# precision takes 2 splits throughout: at 3 its first entry spills 16 bytes, for a gain within the runs' spread.
DECODE_SPLITS = {"accurate": ((2, 3), (4, 2)), "fast": ((4, 2),)}


def select_config(ragged, precision: str = "accurate", layout: str = "mxfp4") -> Sm90Config:
    """The table's config (table(precision, layout)) for the rows per local slice of this call
    (RaggedMetadata.local_slice_size), its K tiles split where the call has decode's few rows (DECODE_SPLITS)."""
    splits = next((s for rows, s in DECODE_SPLITS[precision] if 0 < ragged.tokens <= rows), 1)
    fields = {"k_splits": splits} if splits > 1 else {}
    where = f"sm90 {precision}" + (" fp8" if layout == "fp8" else "")
    return choose(table(precision, layout), ragged.local_slice_size, FORCE_ENV, where, **fields)


def decode_configs(precision: str) -> tuple[Sm90Config, ...]:
    """The configs select_config makes by DECODE_SPLITS (the first entry's, with each k_splits): with the table's,
    every config a call at `precision` can run (the compile, sanitizer and GPU tests cover them)."""
    return tuple(replace(TABLES[precision][0][1], k_splits=splits) for _, splits in DECODE_SPLITS[precision])


def packed_words_config(config: Sm90Config) -> Sm90Config:
    """What `config` runs on weights without the fp8 layout's bytes (the packed words): wide tiles without their tail
    rows, the persistent fp8 tile one tile a program, the warp-specialized tile on the words, the plain entry."""
    if config.persistent_fp8:
        return replace(config, persistent=False)
    if config.warp_specialized and config.fp8_layout:  # its producer's registers go back to the consumers' fold
        return replace(two_consumers(config), fp8_layout=False, bulk_weights=False)
    return replace(config, wide_tiles=False, tail_rows=0) if config.wide_tiles else config


def runs_as(config: Sm90Config, w) -> Sm90Config:
    """What `config` runs on weights `w` (Sm90Weights): the fp16 path's (f16_config) where they hold wide block-scale
    spreads, packed_words_config's where they lack the fp8 layout's bytes, two_consumers' where N is not a multiple
    of three consumers' items."""
    if w.f16:
        return f16_config(config)
    if w.n % config.block_n:
        config = two_consumers(config)
    return config if config.fp8_layout and w.folded is not None else packed_words_config(config)


def two_consumers(config: Sm90Config) -> Sm90Config:
    """The two-consumer tile (FP8_WS's stages) for a three-consumer `config`: where N is not a multiple of its 192-row
    items, or the weights hold only the packed words."""
    return replace(config, num_warps=8, num_stages=FP8_WS.num_stages) if config.num_warps == 12 else config


def f16_config(config: Sm90Config) -> Sm90Config:
    """What the fp16 path runs for `config`: at most F16_MAX_BLOCK_M tokens per tile, no register cap (its block_m 64
    tile needs 142 registers; capped at 128 it spills), its K tiles on one program (k_splits is not measured there)."""
    if config.decode_rows:  # the decode tile reads the fp8 path's words: the table's first entry instead
        config = TABLES["accurate"][0][1]
    config = replace(packed_words_config(config), maxnreg=None, tail_rows=0, k_splits=1)  # no fp8 layout's bytes
    if config.block_m > F16_MAX_BLOCK_M:
        config = replace(config, block_m=F16_MAX_BLOCK_M, num_stages=config.large_num_stages)
    return config
