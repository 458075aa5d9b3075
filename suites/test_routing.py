"""Routing: determinism, the gather indices, slice sizes and the block schedule against brute force."""

import numpy as np
import pytest
import torch

from moe_gather._table import lookup
from moe_gather.problem import MODELS, batch_sizes, local_shard
from moe_gather.routing import (
    BLOCK_SIZES,
    SCHEDULE_PID_SHIFT,
    SCHEDULE_UNUSED,
    make_logits,
    make_ragged_metadata,
    max_blocks,
    route,
    topk_softmax,
)

GPT_OSS_120B = MODELS["gpt-oss-120b"]


def _route(routing, batch, seed=0, model=GPT_OSS_120B, shard=None):
    logits = make_logits(routing, batch, model.num_experts, model.top_k, seed)
    return logits, route(logits, model.top_k, model.num_shards, local_shard(model) if shard is None else shard)


def test_ladder_is_the_seeds():
    sizes = batch_sizes(GPT_OSS_120B)
    assert len(sizes) == 48
    assert sizes[:4] == (128, 160, 192, 224) and sizes[-1] == 992 * 32
    assert batch_sizes(MODELS["gpt-oss-20b"])[0] == 32


@pytest.mark.parametrize("routing", ["zipf", "uniform"])
def test_routing_is_deterministic_for_a_seed(routing):
    (l1, r1), (l2, r2) = _route(routing, 1024, seed=5), _route(routing, 1024, seed=5)
    assert torch.equal(l1, l2) and torch.equal(r1.gather_indx, r2.gather_indx)
    l3, _ = _route(routing, 1024, seed=6)
    assert not torch.equal(l1, l3)


def test_topk_picks_the_largest_logits_stably_and_softmaxes_them():
    logits = torch.tensor([[0.5, 2.0, 2.0, -1.0], [3.0, 1.0, 0.0, 3.0]], dtype=torch.float16)
    ids, weights = topk_softmax(logits, 2)
    assert ids.tolist() == [[1, 2], [0, 3]]  # ties go to the lower expert id
    assert torch.allclose(weights, torch.full((2, 2), 0.5))
    _, w = topk_softmax(torch.randn(64, 128, dtype=torch.float16), 4)
    assert torch.allclose(w.sum(1), torch.ones(64))


@pytest.mark.parametrize("routing", ["zipf", "uniform"])
@pytest.mark.parametrize("shard", [0, 4, 7])
def test_gathered_rows_are_exactly_the_local_routes(routing, shard):
    _, r = _route(routing, 2048, shard=shard)
    ids = r.expert_ids.tolist()
    want = sorted(
        (e, t) for t, experts in enumerate(ids) for e in experts if e in r.local_experts
    )  # every (expert, token) of the shard, experts in order, tokens ascending
    sizes, gather = r.ragged.slice_sizes.tolist(), r.gather_indx.tolist()
    got = [
        (r.local_experts[i], t) for i, size in enumerate(sizes) for t in gather[sum(sizes[:i]) : sum(sizes[: i + 1])]
    ]
    assert got == want
    assert sum(sizes) == r.tokens == len(want)
    assert r.ragged.slice_offs.tolist() == [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    assert r.ragged.expected_slice_size == 2048 * 4 // 128
    assert r.ragged.local_slice_size == -(-r.tokens // 16)


def test_sm90_keys_its_table_on_the_rows_of_the_call_per_slice():
    """Skewed routing can leave a shard few rows at a large batch: the table follows the rows it has to tile."""
    from moe_gather import _sm90

    sizes = torch.tensor([100, 20] + [8] * 14, dtype=torch.int32)  # 232 rows in 16 slices: 15 per slice
    ragged = make_ragged_metadata(sizes, int(sizes.sum()), 4096 * 4 // 128)  # batch 4096: 128 expected globally
    assert ragged.local_slice_size == 15
    assert _sm90.select_config(ragged) == lookup(_sm90.CONFIGS, 15) != lookup(_sm90.CONFIGS, 128)


def _brute_force_schedule(sizes, block_m, extra=0):
    """Tiles of block_m rows; a slice's last `extra` rows or fewer past a whole tile go into that tile."""
    offs, schedule = [0], []
    for s, size in enumerate(sizes):
        blocks = -(-size // block_m)
        if blocks > 1 and size - (blocks - 1) * block_m <= extra:
            blocks -= 1
        schedule += [s | (pid << 16) for pid in range(blocks)]
        offs.append(offs[-1] + blocks)
    return offs, schedule


@pytest.mark.parametrize(
    "sizes", [[15, 17, 0, 127], [0, 0, 0], [1] * 16, [300, 0, 1, 64, 65, 128, 129, 16, 0, 33], [4000]]
)
def test_block_schedule_equals_brute_force(sizes):
    tokens = sum(sizes)
    ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), tokens, 8)
    for block_m in BLOCK_SIZES:
        offs, schedule = _brute_force_schedule(sizes, block_m)
        bound = max_blocks(len(sizes), tokens, block_m)
        assert len(schedule) <= bound
        assert ragged.block_offs[block_m].tolist() == offs
        assert ragged.block_schedule[block_m].tolist() == schedule + [SCHEDULE_UNUSED] * (bound - len(schedule))
    for block_m, extra in [(64, 16), (32, 16), (16, 4)]:  # a slice's last tile taking up to extra more rows
        _, schedule = _brute_force_schedule(sizes, block_m, extra)
        got = ragged.schedule(block_m, extra).tolist()
        assert got[: len(schedule)] == schedule and set(got[len(schedule) :]) <= {SCHEDULE_UNUSED}
        assert ragged.schedule(block_m, extra) is ragged.schedule(block_m, extra)  # computed once


@pytest.mark.parametrize(
    "sizes", [[126, 38, 6, 4, 4, 3, 2, 1, 0], [8, 7, 7, 6, 5], [0, 0], [300, 0, 1, 64, 65, 16, 17], [40, 40, 40]]
)
@pytest.mark.parametrize(
    ("split_at", "small_m", "large_m", "extra"), [(16, 8, 64, 0), (12, 16, 128, 0), (1, 8, 16, 0), (96, 64, 256, 16)]
)
def test_bucket_schedules_split_the_slices_by_size(sizes, split_at, small_m, large_m, extra):
    """Slices of at most split_at rows are tiled by small_m (a slice's last tile up to `extra` rows wider), the
    others by large_m; together every row once."""
    tokens = sum(sizes)
    ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), tokens, 8)
    small, large = ragged.bucket_schedules(split_at, small_m, large_m, extra)
    for schedule, block_m, rows, in_bucket in (
        (small, small_m, extra, lambda s: s <= split_at),
        (large, large_m, 0, lambda s: s > split_at),
    ):
        _, want = _brute_force_schedule([s if in_bucket(s) else 0 for s in sizes], block_m, rows)
        got = schedule.tolist()
        assert got[: len(want)] == want and set(got[len(want) :]) <= {SCHEDULE_UNUSED}
    assert ragged.bucket_schedules(split_at, small_m, large_m, extra)[0] is small  # computed once


@pytest.mark.parametrize("sizes", [[126, 38, 6, 4, 4, 3, 2, 1, 0], [8, 7, 7, 6, 5], [0, 0], [], [300, 0, 1, 64, 65]])
@pytest.mark.parametrize(("block_m", "extra"), [(8, 0), (32, 0), (64, 0), (64, 16)])
def test_widest_first_reorders_the_tiles_by_rows(sizes, block_m, extra):
    """The same tiles, fullest first; among equals in slice order, then by tile."""
    ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), sum(sizes), 8)
    _, tiles = _brute_force_schedule(sizes, block_m, extra)
    mask = (1 << SCHEDULE_PID_SHIFT) - 1
    left = {t: sizes[t & mask] - (t >> SCHEDULE_PID_SHIFT) * block_m for t in tiles}
    rows = {t: block_m if left[t] > block_m + extra else left[t] for t in tiles}
    want = sorted(tiles, key=lambda t: (-rows[t], t & mask, t >> SCHEDULE_PID_SHIFT))
    got = ragged.widest_first(block_m, extra).tolist()
    assert got[: len(want)] == want and set(got[len(want) :]) <= {SCHEDULE_UNUSED}
    assert len(got) == len(ragged.block_schedule[block_m])
    assert ragged.widest_first(block_m, extra) is ragged.widest_first(block_m, extra)  # computed once


@pytest.mark.parametrize(
    "sizes", [[126, 38, 6, 4, 4, 3, 2, 1, 0], [300, 50, 20, 0], [0, 0], [], [300, 0, 1, 64, 65, 32, 8]]
)
@pytest.mark.parametrize("block_m", [32, 128])
def test_by_width_groups_the_tiles_in_schedule_order(sizes, block_m):
    """The same tiles in three groups, more than block_m / 2 rows, more than a quarter, the rest, each in the
    schedule's order (a slice's tiles of a group together); width_bounds ends each group."""
    ragged = make_ragged_metadata(torch.tensor(sizes, dtype=torch.int32), sum(sizes), 8)
    _, tiles = _brute_force_schedule(sizes, block_m)
    mask = (1 << SCHEDULE_PID_SHIFT) - 1
    rows = {t: min(block_m, sizes[t & mask] - (t >> SCHEDULE_PID_SHIFT) * block_m) for t in tiles}
    groups = [[t for t in tiles if low < rows[t] <= high] for low, high in
              ((block_m // 2, block_m), (block_m // 4, block_m // 2), (0, block_m // 4))]  # fmt: skip
    got = ragged.by_width(block_m).tolist()
    assert got[: len(tiles)] == [t for group in groups for t in group]
    assert set(got[len(tiles) :]) <= {SCHEDULE_UNUSED} and len(got) == len(ragged.block_schedule[block_m])
    ends = [sum(len(g) for g in groups[: i + 1]) for i in range(3)]
    assert ragged.width_bounds(block_m).tolist() == ends
    assert ragged.by_width(block_m) is ragged.by_width(block_m)  # computed once


def test_max_blocks_is_tight():
    # all rows but one packed in slice 0, one row in each other slice: the bound is reached
    for n, tokens, block_m in [(16, 100, 16), (4, 4, 32), (8, 1000, 128), (3, 2, 16)]:
        nonempty = min(n, tokens)
        sizes = [tokens - nonempty + 1] + [1] * (nonempty - 1) + [0] * (n - nonempty)
        _, schedule = _brute_force_schedule(sizes, block_m)
        assert len(schedule) == max_blocks(n, tokens, block_m)


def test_zipf_skew_is_visible():
    def load_spread(routing):
        _, r = _route(routing, 8192)
        hist = torch.bincount(r.expert_ids.flatten().long(), minlength=128).float()
        return (hist.std() / hist.mean()).item()

    assert load_spread("zipf") > 4 * load_spread("uniform")


def test_route_checks_its_arguments():
    logits = torch.zeros(4, 12, dtype=torch.float16)
    with pytest.raises(ValueError, match="shards"):
        route(logits, 2, 5, 0)
    with pytest.raises(ValueError, match="local_shard"):
        route(logits, 2, 4, 4)
    with pytest.raises(ValueError, match="routing must be"):
        make_logits("hot", 4, 12, 2, 0)


LOGITS = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)).half()


@pytest.mark.parametrize(
    ("sizes", "tokens", "why"),
    [
        (torch.tensor([4.7, 1.9]), 6, "slice_sizes must hold integers, got torch.float32"),
        (torch.tensor([True, False]), 1, "slice_sizes must hold integers"),
        (torch.tensor([2**32 + 4, 0]), 4, r"slice_sizes must lie in \[0, 2147483647\]"),
        (torch.tensor([5, -1]), 4, r"slice_sizes must lie in \[0, 2147483647\]"),
        (torch.tensor([4, 2], dtype=torch.int32), 7, "slice_sizes sum to 6, not tokens = 7"),
        (torch.tensor([[4, 2]], dtype=torch.int32), 6, "slice_sizes must be a 1-D tensor"),
        ([4, 2], 6, "slice_sizes must be a 1-D tensor"),
        (torch.tensor([4, 2], dtype=torch.int32), 6.0, "tokens must be an integer >= 0, got 6.0"),
        (torch.tensor([4, 2], dtype=torch.int32), -6, "tokens must be an integer >= 0"),
    ],
    ids=["floats", "bools", "past int32", "negative", "sum", "2-D", "a list", "tokens float", "tokens negative"],
)
def test_ragged_metadata_refuses_bad_sizes_by_name(sizes, tokens, why):
    with pytest.raises(ValueError, match=why):
        make_ragged_metadata(sizes, tokens, 3)


def test_ragged_metadata_takes_int64_and_numpy_counts():
    ragged = make_ragged_metadata(torch.tensor([4, 2]), np.int64(6), np.int32(3))
    assert ragged.slice_sizes.dtype == torch.int32 and ragged.tokens == 6 and ragged.slice_sizes.tolist() == [4, 2]


@pytest.mark.parametrize(
    ("logits", "top_k", "num_shards", "local_shard", "why"),
    [
        (LOGITS, 4, 0, 0, "num_shards must divide the 16 experts, got 0"),
        (LOGITS, 4, 3, 0, "num_shards must divide the 16 experts, got 3"),
        (LOGITS, 4, 2.0, 0, "num_shards must be an integer"),
        (LOGITS, 0, 2, 0, r"top_k must be in \[1, 16\]"),
        (LOGITS, 17, 2, 0, r"top_k must be in \[1, 16\]"),
        (LOGITS, 2.5, 2, 0, "top_k must be an integer"),
        (LOGITS, True, 2, 0, "top_k must be an integer"),
        (LOGITS, 4, 2, 2, r"local_shard must be in \[0, 2\)"),
        (LOGITS, 4, 2, -1, "local_shard must be an integer >= 0"),
        (LOGITS[0], 4, 2, 0, "logits must be a 2-D floating-point tensor"),
        (LOGITS.long(), 4, 2, 0, "logits must be a 2-D floating-point tensor"),
        (torch.where(torch.arange(16) == 3, float("nan"), LOGITS), 4, 2, 0, "logits hold NaN"),
    ],
    ids=["no shards", "shards not dividing", "shards float", "top_k 0", "top_k past experts", "top_k float",
         "top_k bool", "shard past", "shard negative", "1-D logits", "integer logits", "NaN logits"],
)  # fmt: skip
def test_route_refuses_bad_arguments_by_name(logits, top_k, num_shards, local_shard, why):
    with pytest.raises(ValueError, match=why):
        route(logits, top_k, num_shards, local_shard)
