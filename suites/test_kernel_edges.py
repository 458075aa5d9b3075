"""The kernel on hard inputs: scales spread widely within a weight row, x near +-448, NaN and
Inf inputs, an out scale that saturates, empty local experts, one expert taking every row, a shard with no rows;
and every tile width of each sm90 table entry (a slice's last tile narrowed to its rows).
Each against the golden reference with the kernel's tolerance, on the GPU: gpt-oss-120b problems of up to a few
thousand tokens (K = 2880, N = 5760), and K from 32 to 2976 on narrower weights (N 256 or 384) where K's end is
tested."""

import dataclasses
import functools

import pytest
import torch
from _outputs import POISON, assert_launches_alike, assert_same_bytes, poisoned_output
from _plans import (
    BULK_PLAN,
    DECODE_PLANS,
    FP8_CHUNKS,
    HALVES_FP8_PLAN,
    HALVES_PLAN,
    HOT_PLAN,
    K_SPLITS_PLANS,
    PERSISTENT_PLAN,
    SLOTS_PLAN,
    SPLIT_K_PLANS,
    WIDE_PLAN,
    WS_CONFIG,
    WS_FP8_PLANS,
)

from moe_gather import _sm90, bmm1
from moe_gather.mxfp4 import MXFP4Weights
from moe_gather.problem import (
    MODELS,
    Case,
    ExpertParams,
    local_shard,
    make_expert_params,
    make_problem,
    reference_for,
)
from moe_gather.pytest_plugin import agreement_recorder, chosen_precision
from moe_gather.reference import TOLERANCES, check_against, kernel_tolerance
from moe_gather.routing import SCHEDULE_UNUSED, route

pytestmark = pytest.mark.gpu
MODEL = MODELS["gpt-oss-120b"]


@pytest.fixture(scope="module")
def params():
    return make_expert_params(MODEL, "cuda")


@pytest.fixture
def sm90(gpu):
    if gpu.capability[0] != 9:
        pytest.skip(f"the sm90 table's entries run on sm_90 only, this is {gpu.found}")


@pytest.fixture(scope="module")
def weights(params, precision, layout):
    """The module's weights at --precision, in --layout."""
    return bmm1.prepare_weights(params.weights, precision=precision, layout=layout)


def pytest_generate_tests(metafunc):
    """`entry`: each index of the table of --precision and --layout (the tables differ in length)."""
    if "entry" in metafunc.fixturenames:
        options = metafunc.config.getoption
        table = _sm90.table(chosen_precision(options("precision")), options("layout"))
        metafunc.parametrize("entry", range(len(table)))


def _entry(weights, i):
    return _sm90.table(weights.precision, weights.layout)[i][1]


def _check(problem, weights, description, tolerance=None, config=None, out=None):
    """The call (with `config`: forced; into `out` where given) against the reference at `tolerance` (default: the
    seed's); its output."""
    out = bmm1.run_problem(problem, weights, config=config, out=out)
    tolerance = tolerance or kernel_tolerance(weights.precision, "seed")
    check_against(reference_for(problem).out, out, tolerance, description)
    return out


def _k_params(k, n=256):
    """gpt-oss-120b with K = k and N = n (256; 384 for items of 192 rows): the model and its expert parameters (made
    once per K and N)."""
    return _k_model_params(k, n)


@functools.cache
def _k_model_params(k, n):
    model = dataclasses.replace(MODEL, name=f"gpt-oss-120b-k{k}" + (f"-n{n}" if n != 256 else ""), hidden=k, n=n)
    return model, make_expert_params(model, "cuda")


def _k_weights(k, precision, layout="mxfp4", n=256):
    """_k_params' weights at `precision` in `layout` (made once: the K tests run them through every entry and plan)."""
    return _k_layout_weights(k, precision, layout, n)


@functools.cache
def _k_layout_weights(k, precision, layout, n):
    return bmm1.prepare_weights(_k_params(k, n)[1].weights, precision=precision, layout=layout)


def _k_n(config):
    """The K tests' N for `config`: whole items of its weight rows (384 for three consumers' 192, else 256)."""
    return 384 if config.block_n == 192 else 256


def _k_problem(k, precision, layout="mxfp4", n=256):
    """_k_params' model with uniform routing of 1024 tokens (a fresh problem: its metadata holds k_splits' counters),
    and the weights."""
    model, k_params = _k_params(k, n)
    return make_problem(Case(model, "uniform", 1024), "cuda", k_params), _k_weights(k, precision, layout, n)


def _problem(base_params, batch=1024, routing="uniform", **changes):
    """A gpt-oss-120b problem; `routing` a mode's name, or a Routing to use instead; `changes` replace fields."""
    if not isinstance(routing, str):
        changes["routing"], routing = routing, "uniform"
    return dataclasses.replace(make_problem(Case(MODEL, routing, batch), "cuda", base_params), **changes)


def test_fast_fold_across_its_whole_window(params, sm90):
    """The fast precision on weights whose block scales span the fold's whole window in every K tile (each tile's
    blocks at r, r - 11, r - 5, r - 2): folded exactly in e4m3, chained in one wgmma accumulator a tile, held to the
    tolerance measured for that spread (a block folded a binade off fails it)."""
    w = params.weights
    tile = torch.tensor([127, 127 - _sm90.FAST_WINDOW, 127 - 5, 127 - 2], device="cuda", dtype=torch.uint8)
    scales = tile.repeat(w.scales.shape[-1] // 4 + 1)[: w.scales.shape[-1]].expand_as(w.scales).contiguous()
    spread = ExpertParams(MXFP4Weights(w.codes, scales), params.bias)
    weights = bmm1.prepare_weights(spread.weights, precision="fast")
    tolerance = kernel_tolerance("fast", "seed", path="spread")
    _check(_problem(params, params=spread), weights, "block scales across the fold's window", tolerance)


def _unfolded(w, precision):
    """Weights whose block scales do not fold into e4m3 (the fast precision's window): an explicit "fast" refuses
    them by name, the default takes "accurate"."""
    if precision == "fast":
        with pytest.raises(ValueError, match="do not fold exactly into e4m3"):
            bmm1.prepare_weights(w, precision="fast")
    weights = bmm1.prepare_weights(w)
    assert weights.precision == "accurate"
    return weights


def test_scales_spread_from_2_pow_minus_30_to_2_pow_10_within_rows(params, precision):
    """On Hopper such weights take the fp16 wgmma path (prepare_weights): the fp8 one keeps ~13 bits within a
    32-product group, and outputs born of cancellation between 2**10-scaled blocks missed maxtol (0.89 measured on
    the H200)."""
    w = params.weights
    blocks = w.scales.shape[-1]
    spread = torch.arange(127 - 30, 127 + 11, device="cuda", dtype=torch.int32)  # 2**-30 .. 2**10
    scales = spread[torch.arange(blocks, device="cuda") % spread.numel()].to(torch.uint8).expand_as(w.scales)
    wide = ExpertParams(MXFP4Weights(w.codes, scales.contiguous()), params.bias)
    weights = _unfolded(wide.weights, precision)
    assert weights.f16 if isinstance(weights, _sm90.Sm90Weights) else True  # Hopper: the fp16 path
    _check(_problem(params, params=wide), weights, "wide e8m0 spread")


def test_block_scale_e8m0_0_is_2_pow_minus_127(params, precision):
    """Every block at e8m0 0 (2**-127, an fp32 subnormal), no bias, and x_scale 2**100 to lift the outputs back into
    range: the kernel's exact path for such scales (on Hopper Sm90Weights.zero_scale); one that read e8m0 0 as 0, or
    flushed the subnormal, would give zeros."""
    w = params.weights
    tiny = ExpertParams(MXFP4Weights(w.codes, torch.zeros_like(w.scales)), torch.zeros_like(params.bias))
    x_scale, out_scale = (torch.full((1,), v, device="cuda") for v in (2.0**100, 2.0**-21))
    problem = _problem(params, params=tiny, x_scale=x_scale, out_scale=out_scale)
    ref = reference_for(problem).out.float()
    assert (ref != 0).float().mean() > 0.5 and (ref.abs() < 448).float().mean() > 0.9  # the case is what it claims
    weights = _unfolded(tiny.weights, precision)
    assert weights.zero_scale if isinstance(weights, _sm90.Sm90Weights) else True  # Hopper: the exact path for e8m0 0
    _check(problem, weights, "block scales 2**-127")


def test_x_near_448(params, weights):
    problem = _problem(params)
    g = torch.Generator(device="cuda").manual_seed(5)
    sign = torch.randint(0, 2, problem.x.shape, generator=g, device="cuda") * 2 - 1
    mag = torch.tensor([448.0, 416.0, 384.0, 352.0], device="cuda")[
        torch.randint(0, 4, problem.x.shape, generator=g, device="cuda")
    ]
    _check(dataclasses.replace(problem, x=(sign * mag).to(torch.float8_e4m3fn)), weights, "x near +-448")


def _nan_and_inf_problem(params, batch):
    """NaN x elements (e4m3fn has no Inf) in gathered rows of several slices; bias NaN, +Inf on a gate (clamped to
    limit), -Inf on a gate (NaN: -Inf * sigmoid(-Inf)) and on a linear column (clamped), in four local experts."""
    problem = _problem(params, batch=batch)
    x = problem.x.clone()
    x.view(torch.uint8)[problem.routing.gather_indx[::97][:8].long(), 7] = 0x7F
    bias = params.bias.clone()
    bias[0, 0], bias[1, 2], bias[2, 4], bias[3, 9] = float("nan"), float("inf"), float("-inf"), float("-inf")
    problem = dataclasses.replace(problem, x=x, params=ExpertParams(params.weights, bias))
    assert reference_for(problem).out.float().isnan().any()  # the case holds NaN outputs to match
    return problem


def test_nan_and_inf_inputs_behave_as_the_reference(params, weights):
    """The outputs match the golden reference's, NaN in place."""
    _check(_nan_and_inf_problem(params, 1024), weights, "NaN and Inf inputs")


def test_nan_and_inf_through_each_sm90_entry(params, sm90, weights, entry):
    """The same through each table entry's full-width tiles (~128 rows per slice, ~256 for the 256-token tile: the
    epilogues of 128 tokens, each half's of the 256-token tile too, clamp with min / max .NaN, the others with
    selects)."""
    config = _entry(weights, entry)
    batch = 4096 * max(1, config.block_m // 128)
    _check(_nan_and_inf_problem(params, batch), weights, f"NaN and Inf inputs, {config}", config=config)


def test_out_scale_that_saturates(params, weights):
    problem = _problem(params, out_scale=torch.full((1,), 1e-3, device="cuda"))
    ref = reference_for(problem).out.float()
    assert (ref.abs() == 448).float().mean() > 0.4  # the case is what it claims (negative gates give ~0 instead)
    _check(problem, weights, "saturating out_scale", kernel_tolerance(weights.precision, "seed", "saturating"))


def test_empty_local_experts(params, weights):
    problem = _problem(params, batch=128, routing="zipf")
    assert (problem.routing.ragged.slice_sizes == 0).any()
    _check(problem, weights, "empty experts")


def _forced_routing(batch, expert):
    """Every token's best expert is `expert` (global id), the rest of its top-k elsewhere."""
    logits = torch.randn((batch, MODEL.num_experts), generator=torch.Generator().manual_seed(3)).half()
    logits[:, expert] = 100
    return route(logits.cuda(), MODEL.top_k, MODEL.num_shards, local_shard(MODEL))


def test_one_expert_takes_every_row(params, weights):
    shard = local_shard(MODEL)
    expert = shard * MODEL.local_experts + 3
    routing = _forced_routing(4096, expert)
    assert int(routing.ragged.slice_sizes[3]) == 4096
    _check(_problem(params, batch=4096, routing=routing), weights, "one expert takes every row")


def test_shard_with_no_rows_launches_nothing(params, weights, monkeypatch):
    kernel = bmm1._kernel(torch.cuda.get_device_capability())
    launched = []
    monkeypatch.setattr(kernel, "launch", lambda *args, **kwargs: launched.append(args))
    other = (local_shard(MODEL) + 1) % MODEL.num_shards
    logits = torch.full((256, MODEL.num_experts), -100.0).half()
    logits[:, other * MODEL.local_experts : (other + 1) * MODEL.local_experts] = 1  # all top-k in another shard
    routing = route(logits.cuda(), MODEL.top_k, MODEL.num_shards, local_shard(MODEL))
    assert routing.tokens == 0
    problem = _problem(params, batch=256, routing=routing)
    out = bmm1.run_problem(problem, weights)
    assert launched == []
    assert out.shape == (0, MODEL.n // 2)
    assert reference_for(problem).out.shape == (0, MODEL.n // 2)


def _sized_routing(sizes):
    """Local slice e gets exactly sizes[e] rows: each token's best expert is its slice's, the rest of its top-k in
    other shards."""
    shard, per_shard = local_shard(MODEL), MODEL.local_experts
    assert len(sizes) == per_shard
    logits = torch.full((sum(sizes), MODEL.num_experts), 50.0)
    logits[:, shard * per_shard : (shard + 1) * per_shard] = -100
    group = torch.repeat_interleave(torch.arange(per_shard), torch.tensor(sizes))
    logits[torch.arange(sum(sizes)), shard * per_shard + group] = 100
    logits += torch.rand(logits.shape, generator=torch.Generator().manual_seed(5))  # ties broken, order kept
    return route(logits.half().cuda(), MODEL.top_k, MODEL.num_shards, shard)


# Local slice sizes whose last tiles take every width a table entry narrows to or extends to (block_m 64: 65-80 rows in
# one tile), and some that end on a tile boundary.
EVERY_WIDTH = [1, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 80, 128, 144, 0]


def _sized_problem(params, sizes):
    """gpt-oss-120b with local slices of `sizes` rows, in one launch."""
    return _problem(params, batch=sum(sizes), routing=_sized_routing(sizes))


def _every_width_problem(params):
    return _sized_problem(params, EVERY_WIDTH)


def test_every_tile_width_of_each_sm90_entry(params, sm90, weights, entry):
    """Slices whose last tile takes each width an entry narrows to (block_m, / 2, / 4) or extends to (block_m +
    extra) and ones that end on a tile boundary, in one launch: each against the reference."""
    problem = _every_width_problem(params)
    assert problem.routing.ragged.slice_sizes.tolist() == EVERY_WIDTH
    config = _entry(weights, entry)
    _check(problem, weights, f"tile widths, {config}", config=config)


@pytest.mark.parametrize("k", [32, 96, 128, 384, 2816, 2848, 2912, 2976])
def test_k_ending_anywhere_in_a_tile(params, sm90, precision, entry, k):
    """K on a 128-wide tile boundary (all whole tiles), or 1, 2 (gpt-oss: 2880) or 3 blocks of 32 into its last
    tile, which the sm90 kernel then runs first with only its blocks; K under one tile leaves its loop none; an odd
    number of whole tiles (384, 2976) ends the fast precision's overlapped pairs with a single tile."""
    problem, weights = _k_problem(k, precision)
    config = _entry(weights, entry)
    _check(problem, weights, f"K = {k}, {config}", config=config)


@pytest.mark.parametrize("k", [32, 96, 128, 256, 384, 512, 576, 2816, 2880, 2912])
@pytest.mark.parametrize("config", SPLIT_K_PLANS, ids=str)
def test_k_ending_anywhere_through_split_k(params, sm90, config, k):
    """split_k gives consumer 0 the partial tile and every even ring step, consumer 1 the odd ones. K tiles 1 (consumer
    1 has none and hands over zeros), 2 (one each), 3 and 4 (a trailing single tile, or pairs only, for either), 5
    with a partial tile (consumer 0: it, then a pair), and gpt-oss's 23 with one. The fast precision's, whatever
    --precision is (the tile runs no other)."""
    problem, weights = _k_problem(k, "fast")
    _check(problem, weights, f"K = {k}, {config}", config=config)


# The first entry at 4 splits, and at the decode rule's 2 and 3 (DECODE_SPLITS: both tables' first entries are alike).
FIRST_ENTRY_SPLITS = list(
    dict.fromkeys((K_SPLITS_PLANS[0], *_sm90.decode_configs("accurate"), *_sm90.decode_configs("fast")))
)


@pytest.mark.parametrize("k", [32, 256, 384, 576, 640, 2816, 2880, 2912, 2944])
@pytest.mark.parametrize("config", FIRST_ENTRY_SPLITS, ids=str)
def test_k_ending_anywhere_through_k_splits(params, sm90, precision, config, k):
    """The first entry's splits where K has 1 tile (no split), 2 and 3 (one each, or fewer splits), 5 (4 splits: 2, 2
    and a partial tile alone at 576 or a whole one at 640; 3: 2, 2, 1; 2: 3, 2), 22 whole, 23 with a partial last tile
    (2880, 2912) and 23 whole (2944)."""
    problem, weights = _k_problem(k, precision)
    _check(problem, weights, f"K = {k}, {config}", config=config)


def test_k_splits_are_deterministic_and_leave_their_counters_zero(params, sm90, weights):
    """Two launches give the same bytes (the sums are added in split order whichever finishes last; the fp8 output
    would hide most other orders, so this checks agreement, not the order) and each tile's counter is back to zero
    after a launch (the next one counts from it)."""
    problem = _every_width_problem(params)
    config = K_SPLITS_PLANS[0]
    first = _check(problem, weights, f"launch plan {config}", config=config)
    assert_launches_alike(problem, weights, first, config)
    counters = [v for key, v in problem.routing.ragged._buckets.items() if key[0] == "arrivals"]
    assert counters and all(int(c.abs().sum()) == 0 for c in counters)


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5])
def test_decode_calls_with_their_k_tiles_split(params, sm90, weights, rows):
    """Calls of 1-5 rows, all in one slice or one row a slice (as many experts as rows), through the config the table
    chooses (DECODE_SPLITS: the first entry's K tiles split between programs up to 4 rows): against the reference."""
    n = MODEL.local_experts
    for sizes in ([rows] + [0] * (n - 1), [1] * rows + [0] * (n - rows)):
        problem = _sized_problem(params, sizes)
        config = bmm1.select_config(problem.routing.ragged, precision=weights.precision)
        assert (config.k_splits > 1) == (rows <= 4), config
        _check(problem, weights, f"{rows} rows in slices {sizes}, {config}")


@pytest.mark.parametrize("k", [32, 256, 384, 576, 640, 2816, 2880, 2944])
@pytest.mark.parametrize("config", DECODE_PLANS, ids=str)
def test_k_ending_anywhere_through_the_decode_tile(params, sm90, precision, config, k):
    """The decode tile's sets take every sets-th K tile: K of 1 tile (the other sets have none), 2 and 3 (some sets
    none), 5 with a partial last tile or a whole one, 22 whole, 23 with a partial last tile (2880) and 23 whole."""
    problem, weights = _k_problem(k, precision)
    _check(problem, weights, f"K = {k}, {config}", config=config)


@pytest.mark.parametrize("config", DECODE_PLANS, ids=str)
def test_decode_tile_on_slices_of_every_size(params, sm90, weights, config):
    """Slices of 1 to 8 rows (one 8-token block), of 9 to 24 (blocks of 8 and a last one narrower), empty ones, and
    a slice of 1024 rows, through the decode tile: against the reference; two launches give the same bytes."""
    n = MODEL.local_experts
    for sizes in ([1, 2, 3, 4, 5, 6, 7, 8] + [0] * (n - 8), [9, 0, 16, 17, 24, 0, 1] + [0] * (n - 7)):
        problem = _sized_problem(params, sizes)
        first = _check(problem, weights, f"slices {sizes}, {config}", config=config)
        assert_launches_alike(problem, weights, first, config, f"slices {sizes}, {config}")
    _check(_problem(params, batch=256), weights, f"uniform routing of 256 tokens, {config}", config=config)


def test_decode_tile_reads_the_packed_words_of_either_layout(params, sm90):
    """Weights in the fp8 layout keep the packed words beside the folded bytes: the decode tile reads those, and its
    outputs equal the mxfp4 layout's byte for byte."""
    problem = _sized_problem(params, [1, 3, 0, 2] + [0] * (MODEL.local_experts - 4))
    config = DECODE_PLANS[1]
    outs = [
        _check(problem, bmm1.prepare_weights(params.weights, precision="fast", layout=layout), layout, config=config)
        for layout in ("mxfp4", "fp8")
    ]
    assert_same_bytes(outs[1], outs[0])


def test_a_decode_call_captured_first_leaves_eager_calls_right(params, sm90, weights):
    """A decode call's K splits count in on counters its metadata makes once and keeps (and its widest-first
    schedule). Made under a graph's capture, they exist only in its replays: the metadata keeps none of what a capture
    made, so an eager call between the capture and its first replay, the replays, and an eager call after them on the
    same metadata each match the reference."""
    sizes = [1, 1] + [0] * (MODEL.local_experts - 2)
    _check(_sized_problem(params, sizes), weights, "decode")  # compiled before the capture
    problem = _sized_problem(params, sizes)
    assert bmm1.select_config(problem.routing.ragged, precision=weights.precision).k_splits > 1
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = bmm1.run_problem(problem, weights)
    assert not problem.routing.ragged._buckets, "nothing made under the capture is kept"
    _check(problem, weights, "decode, eager after the capture, before its replays")
    for replay in range(2):
        graph.replay()
        torch.cuda.synchronize()
        check_against(reference_for(problem).out, out, kernel_tolerance(weights.precision, "seed"), f"replay {replay}")
    _check(problem, weights, "decode, eager after a capture")


# The fast precision's K tiles in pairs (the accurate precision runs it as a plain parity-ring loop).
FAST_PAIRS_PLAN = _sm90.Sm90Config(128, 4, 8, parity_rings=True, narrow_last_tile=2, overlap_tiles=2)

# Launch plans no table entry runs: split_at's two launches (light slices tiled small, the others large), extra rows
# on another tile than the table's, and each entry of either table with the other grid order (widest_first).
OPT_IN_PLANS = [
    _sm90.Sm90Config(block_m=16, num_stages=4, num_warps=4, narrow_last_tile=1, split_at=32),
    _sm90.Sm90Config(block_m=32, num_stages=4, num_warps=8, narrow_last_tile=2, split_at=16, large_block_m=64),
    _sm90.Sm90Config(block_m=64, num_stages=4, num_warps=4, narrow_last_tile=1, tail_rows=32),
    *dict.fromkeys(
        dataclasses.replace(c, widest_first=not c.widest_first, hot_at=0)
        for _, c in (*_sm90.CONFIGS, *_sm90.FAST_CONFIGS)
    ),
    # The fast precision's K tiles in pairs, and its warp-specialized tile (fast only).
    FAST_PAIRS_PLAN,
    WS_CONFIG,
    dataclasses.replace(WS_CONFIG, persistent=True),
    HALVES_PLAN,
    # The fast block_m 64 entry with the slices over 96 rows on the large entry of the weights' table, in a second
    # launch.
    HOT_PLAN,
    # Its split_k form (64-row items, the K tiles split between the consumers), one item a program and persistent.
    *SPLIT_K_PLANS,
    *K_SPLITS_PLANS,
]


@pytest.mark.parametrize("config", OPT_IN_PLANS, ids=str)
def test_opt_in_sm90_launch_plans(params, sm90, weights, config):
    """The same slices as the tile-width test, every size class, through each opt-in plan: against the reference.
    The warp-specialized tile runs the fast arithmetic in the same order: its bytes equal the chunks of four's
    (FP8_CHUNKS; split_k adds two sums of half the K tiles each: another order, held to the reference alone)."""
    if weights.fast and config.two_partials:
        pytest.skip("two_partials is the accurate precision's (the fast one refuses it: test_sm90)")
    if config.warp_specialized and not weights.fast:
        pytest.skip("warp_specialized runs the fast precision only (others are refused by name: test_sm90)")
    problem = _every_width_problem(params)
    out = _check(problem, weights, f"launch plan {config}", config=config)
    if config.warp_specialized and not config.split_k:
        chunks = bmm1.run_problem(problem, weights, config=FP8_CHUNKS)
        assert_same_bytes(out, chunks)


# Slices on either side of HOT_PLAN's 96 rows: cold ones of one tile, a tail-row tile (65-80) or two tiles, hot ones of
# one large tile (narrowed or not) and of several.
HOT_SIZES = [97, 96, 80, 65, 64, 600, 1, 257, 129, 0, 300, 33, 513, 7, 160, 2]


def test_hot_slices_of_several_large_tiles(params, sm90, weights):
    """hot_at's two launches on slices of every kind on either side of its bound, hot ones of up to three large
    tiles: against the reference."""
    problem = _sized_problem(params, HOT_SIZES)
    assert problem.routing.ragged.slice_sizes.tolist() == HOT_SIZES
    _check(problem, weights, f"hot slices, {HOT_PLAN}", config=HOT_PLAN)


# Slices all within HOT_PLAN's 96 rows, enough rows in all for a hot slice: its second launch runs on an empty schedule.
COLD_SIZES = [96, 80, 65, 64, 1, 0, 33, 7, 2, 95, 17, 40, 96, 0, 9, 64]


def test_hot_at_on_a_call_without_a_hot_slice(params, sm90, weights):
    """The host cannot see the slices' sizes, so hot_at's second launch runs on a call without a hot slice, on a
    schedule of unused entries only (its programs skip every item): the output, poisoned before the call, against
    the reference."""
    problem = _sized_problem(params, COLD_SIZES)
    ragged = problem.routing.ragged
    assert ragged.slice_sizes.tolist() == COLD_SIZES
    _, _, hot_schedule = _sm90.hot_split(_sm90.runs_as(HOT_PLAN, weights), weights, ragged)
    assert hot_schedule.numel() and (hot_schedule == SCHEDULE_UNUSED).all()  # launched, and empty
    _check(problem, weights, f"no hot slice, {HOT_PLAN}", config=HOT_PLAN, out=poisoned_output(problem))


def test_hot_slices_in_a_graph_and_on_a_callers_stream(params, sm90, weights):
    """hot_at's hot launch runs on a side stream that the caller's stream waits on before the call returns: captured
    in a CUDA graph (the two launches its branches), each replay rewrites a poisoned output to match the reference,
    and an eager call on a stream of the caller's, both streams kept busy before it, is read right after on that
    stream."""
    problem = _sized_problem(params, HOT_SIZES)
    bmm1.run_problem(problem, weights, config=HOT_PLAN)  # compiled (and its schedules made) before the capture
    expected = reference_for(problem).out
    tolerance = kernel_tolerance(weights.precision, "seed")
    out = poisoned_output(problem)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bmm1.run_problem(problem, weights, out, config=HOT_PLAN)
    for replay in range(2):
        out.view(torch.uint8).fill_(POISON)
        graph.replay()
        torch.cuda.synchronize()
        check_against(expected, out, tolerance, f"replay {replay}")
    stream = torch.cuda.Stream()
    assert _sm90._side_stream(stream) is not _sm90._side_stream(torch.cuda.current_stream())  # one per caller's stream
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_sm90._side_stream(stream)):
        torch.cuda._sleep(10**7)  # the side stream busy: a read not ordered after the hot launch sees the poison
    with torch.cuda.stream(stream):
        torch.cuda._sleep(10**7)  # the caller's stream busy: a hot launch not ordered after the poison is overwritten
        out = poisoned_output(problem)
        read = bmm1.run_problem(problem, weights, out, config=HOT_PLAN).view(torch.uint8).clone()
    stream.synchronize()
    check_against(expected, read.view(torch.float8_e4m3fn), tolerance, "on the caller's stream")


def test_a_call_on_a_device_other_than_the_current_one(precision, layout):
    """Triton launches on the current device's stream: a call whose tensors are on another GPU runs there, on that
    device's current stream (on Hopper with hot_at's side stream: a slice of 2550 rows), and matches the reference.
    Needs two GPUs in the process (one per xdist worker skips it)."""
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two GPUs, this process sees {torch.cuda.device_count()}")
    capability = torch.cuda.get_device_capability(1)
    if not bmm1.has_kernel(capability):
        pytest.skip(f"NYI: no kernel for {torch.cuda.get_device_name(1)} (cuda:1)")
    params = make_expert_params(MODEL, "cuda:1")
    problem = make_problem(Case(MODEL, "zipf", 3072), "cuda:1", params)
    weights = bmm1.prepare_weights(params.weights, precision=precision, layout=layout)
    config = HOT_PLAN if capability[0] == 9 else None
    assert torch.cuda.current_device() == 0
    out = bmm1.run_problem(problem, weights, config=config)
    torch.cuda.synchronize(1)
    check_against(reference_for(problem).out, out, kernel_tolerance(weights.precision, "seed"), "on cuda:1")


# Slices whose last tile at block_m 256 takes a quarter (64 rows or fewer), a half (65-128) or both halves (129-256,
# the second partly empty), and slices of more than one such tile.
HALVES_SIZES = [1, 64, 65, 128, 129, 200, 255, 256, 257, 300, 384, 513, 0, 0, 0, 600]


@pytest.mark.parametrize("config", [HALVES_PLAN, HALVES_FP8_PLAN], ids=["words", "fp8-layout"])
@pytest.mark.parametrize("k", [96, 384, 2880])
def test_warp_specialized_halves(sm90, k, config):
    """The warp-specialized tile on 256-token items (each consumer's K tile serving two 128-token halves: folded
    once, or on the fp8 layout read from shared memory) on slices of every width it takes, K under a tile, an odd
    count of whole tiles and gpt-oss's: against the reference, and byte for byte against the chunks of four on the
    packed words (the same values, chains and promotions in the same order)."""
    model, k_params = _k_params(k)
    problem = make_problem(Case(model, "uniform", sum(HALVES_SIZES)), "cuda", k_params)
    problem = dataclasses.replace(problem, routing=_sized_routing(HALVES_SIZES))
    weights = _k_weights(k, "fast", "fp8" if config.fp8_layout else "mxfp4")
    out = _check(problem, weights, f"K = {k}, {config}", config=config, out=poisoned_output(problem))
    table = bmm1.run_problem(problem, weights, config=FP8_CHUNKS)
    assert_same_bytes(out, table)


# The fast precision's fp8 layout read by each entry of its tables (the packed words' and the fp8 one's), its K tiles
# in pairs, and split between programs; the chunks of four with its weight tiles by TMA (bulk_weights) and with each
# stage its own allocation.
FP8_TABLE_ENTRIES = [
    *(dataclasses.replace(c, fp8_layout=True) for _, c in _sm90.FAST_CONFIGS if not c.warp_specialized),
    HALVES_FP8_PLAN,
    _sm90.FP8_WS3,
]
FP8_LAYOUT_PLANS = [
    *FP8_TABLE_ENTRIES,
    *(dataclasses.replace(c, fp8_layout=True) for c in (FAST_PAIRS_PLAN, K_SPLITS_PLANS[0])),
    BULK_PLAN,
    SLOTS_PLAN,
    WIDE_PLAN,
]  # fmt: skip


def _both_layouts(problem, weights, config, description):
    """The call reading the fp8 layout's bytes (`config`) against the reference, and byte for byte against the same
    config reading the packed words (as the launcher runs it there: wide tiles without their tail rows): the same
    values, chained and promoted in the same order (for wide tiles: the same dot products in wgmmas of other N).
    Returns the fp8 layout's output."""
    out = _check(problem, weights, f"{description}, {config}", config=config, out=poisoned_output(problem))
    words_config = dataclasses.replace(_sm90.packed_words_config(config), fp8_layout=False, bulk_weights=False)
    words = bmm1.run_problem(problem, weights, config=words_config)
    assert_same_bytes(out, words)
    return out


@pytest.mark.parametrize("k", [96, 384, 2880])
@pytest.mark.parametrize("config", FP8_LAYOUT_PLANS, ids=str)
def test_layout_fp8_gives_the_packed_words_bytes(params, sm90, config, k):
    """K under a tile, an odd count of whole tiles, and gpt-oss's (N whole items of the config's weight rows)."""
    problem, weights = _k_problem(k, "fast", "fp8", _k_n(config))
    _both_layouts(problem, weights, config, f"K = {k}, layout fp8")


@pytest.mark.parametrize("config", WS_FP8_PLANS.values(), ids=WS_FP8_PLANS)
def test_warp_specialized_on_the_fp8_layout(params, sm90, fp8_layout, config):
    """The warp-specialized tile reading the fp8 layout's bytes: K under a tile, an odd count of whole tiles and
    gpt-oss's, and the every-width slices at gpt-oss-120b's K and N; byte for byte the packed words' (as the launcher
    runs the config there) and the chunks of four's on the same bytes (the same values chained and promoted in the
    same order)."""
    problems = [_k_problem(k, "fast", "fp8", _k_n(config)) for k in (96, 384, 2880)]
    for problem, weights in [*problems, (_every_width_problem(params), fp8_layout)]:
        out = _both_layouts(problem, weights, config, f"K = {problem.x.shape[1]}, warp-specialized on the fp8 layout")
        table = bmm1.run_problem(problem, weights, config=FP8_CHUNKS)
        assert_same_bytes(out, table)


@pytest.fixture(scope="module")
def fp8_layout(params):
    """gpt-oss-120b's weights at the fast precision in layout "fp8"."""
    return bmm1.prepare_weights(params.weights, precision="fast", layout="fp8")


@pytest.mark.parametrize("config", [*FP8_TABLE_ENTRIES, BULK_PLAN, SLOTS_PLAN, WIDE_PLAN], ids=str)
def test_layout_fp8_through_every_tile_width(params, sm90, fp8_layout, config):
    """The every-width slices at gpt-oss-120b's K and N through each fast entry reading the fp8 layout, and the chunks
    of four's weight tiles by TMA, its stages in allocations of their own, and its tiles widened by 64 tail rows."""
    problem = _every_width_problem(params)
    _both_layouts(problem, fp8_layout, config, "tile widths, layout fp8")


def test_wide_tiles_on_slices_of_several_tiles(params, sm90, fp8_layout):
    """Slices of one to four 192-row tiles, ending at a tile boundary, a row past one, within a tile's tail rows or
    in its first 128 rows (then the plain or a narrowed tile), through wide_tiles: against the reference, the packed
    words' bytes (the entry without tail rows), and two launches alike."""
    sizes = [193, 384, 385, 500, 320, 129, 192, 700, 342, 1, 64, 242, 210, 0, 0, 0]
    problem = _sized_problem(params, sizes)
    first = _both_layouts(problem, fp8_layout, WIDE_PLAN, f"slices {sizes}, layout fp8")
    assert_launches_alike(problem, fp8_layout, first, WIDE_PLAN)


# Slices whose tiles take each phase of the persistent tile (more than 64 rows, 33-64, up to 32), several tiles a
# slice: 43 tiles; at gpt-oss-120b's N, 1935 (tile, column block) items, about 15 a program on an H200's 132.
PERSISTENT_SIZES = [700, 385, 1, 64, 129, 33, 500, 256, 0, 97, 31, 1000, 65, 32, 200, 900]


def _persistent_problem(k):
    """PERSISTENT_SIZES' slices at K = k (N 256) and the fast precision's fp8 layout for them."""
    model, k_params = _k_params(k)
    case = Case(model, "uniform", sum(PERSISTENT_SIZES))
    problem = dataclasses.replace(make_problem(case, "cuda", k_params), routing=_sized_routing(PERSISTENT_SIZES))
    return problem, _k_weights(k, "fast", "fp8")


@pytest.mark.parametrize("k", [96, 384, 2880])
def test_persistent_fp8_tile_at_each_k(params, sm90, k):
    """The persistent tile at K under a tile, an odd count of whole tiles, and gpt-oss's, on slices of every phase:
    against the reference, the packed words' bytes (the chunks of four, one tile a program), and a second launch
    alike (its schedule's phase bounds are kept with the metadata)."""
    problem, weights = _persistent_problem(k)
    first = _both_layouts(problem, weights, PERSISTENT_PLAN, f"K = {k}, persistent")
    assert_launches_alike(problem, weights, first, PERSISTENT_PLAN)


@pytest.mark.parametrize("k", [96, 384])
def test_persistent_fp8_tile_on_three_programs(params, sm90, monkeypatch, k):
    """The K tests' slices (N 256: 86 items) on three programs, so that each one runs many items of every phase at K
    under a tile and at an odd count of whole tiles: against the reference and the packed words' bytes."""
    monkeypatch.setattr(_sm90, "_multiprocessors", lambda device: 3)
    problem, weights = _persistent_problem(k)
    _both_layouts(problem, weights, PERSISTENT_PLAN, f"K = {k}, persistent on 3 programs")


def test_persistent_fp8_tile_through_every_tile_width(params, sm90, fp8_layout):
    """The every-width slices at gpt-oss-120b's K and N through the persistent tile, and slices of several tiles:
    against the reference and the packed words' bytes."""
    _both_layouts(_every_width_problem(params), fp8_layout, PERSISTENT_PLAN, "tile widths, persistent")
    _both_layouts(_sized_problem(params, PERSISTENT_SIZES), fp8_layout, PERSISTENT_PLAN, "many tiles, persistent")


@pytest.mark.parametrize("params_set", ["seed", "real"])
@pytest.mark.parametrize(("routing", "batch"), [("uniform", 4096), ("zipf", 1024)])
def test_fp16_path_at_each_parameter_set(params, sm90, params_set, routing, batch, record_property):
    """The fp16 wgmma path (forced here; prepare_weights picks it for widely spread block scales) held to 1 ulp at
    each parameter set: it accumulates each 32-block in fp32, where fp8 wgmma keeps ~13 bits."""
    case = Case(MODEL, routing, batch, params_set)
    problem = make_problem(case, "cuda", params)
    out = bmm1.run_problem(problem, _sm90.prepare_weights(params.weights, f16=True))
    label = f"{case.id} (fp16 path)"
    record = agreement_recorder(record_property, label, "kernel")
    check_against(reference_for(problem).out, out, TOLERANCES["kernel-f16", params_set], label, record)
