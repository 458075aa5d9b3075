"""The parameter sets and decode cases as data (moe_gather.problem), on the CPU: each case is what it claims."""

import zlib

import pytest
import torch

from moe_gather.problem import (
    OUTLIER_CHANNELS,
    REAL_ALPHA,
    REAL_LIMIT,
    Case,
    MoEModel,
    bf16_activations,
    calibrated_out_scale,
    engine_activations,
    make_expert_params,
    make_problem,
    reference_for,
)
from moe_gather.reference import E4M3_MAX, round_to_e4m3
from moe_gather.routing import make_logits

SMALL = MoEModel("small", num_experts=16, top_k=4, num_shards=4, hidden=256, n=32)


@pytest.fixture(scope="module")
def params():
    return make_expert_params(SMALL, "cpu")


def test_seed_cases_draw_from_their_id_as_they_always_did(params):
    """The baselines key on the seed ids: the routing's logits come from crc32(id), x from crc32(id) + 1."""
    case = Case(SMALL, "zipf", 64)
    problem = make_problem(case, "cpu", params)
    seed = zlib.crc32(b"small-zipf-bs64")
    assert case.seed == case.routing_seed == seed
    logits = make_logits("zipf", 64, SMALL.num_experts, SMALL.top_k, seed)
    assert torch.equal(
        problem.routing.expert_ids, torch.sort(logits, dim=1, descending=True, stable=True)[1][:, :4].int()
    )
    x = torch.randn((64, SMALL.hidden), generator=torch.Generator().manual_seed(seed + 1)).to(torch.float8_e4m3fn)
    assert torch.equal(problem.x.view(torch.uint8), x.view(torch.uint8))
    assert 1.0 <= problem.alpha < 1.2 and 1.3 <= problem.limit < 1.5


def test_a_real_case_routes_as_its_seed_twin_with_other_values(params):
    seed, real = (make_problem(Case(SMALL, "uniform", 96, p), "cpu", params) for p in ("seed", "real"))
    assert real.case.id == "small-uniform-bs96-real"
    assert torch.equal(seed.routing.gather_indx, real.routing.gather_indx)
    assert torch.equal(seed.routing.ragged.slice_sizes, real.routing.ragged.slice_sizes)
    assert not torch.equal(seed.x.view(torch.uint8), real.x.view(torch.uint8))
    assert (real.alpha, real.limit) == (REAL_ALPHA, REAL_LIMIT) == (1.702, 7.0)


def test_engine_activations_fill_e4m3_with_a_per_tensor_scale():
    act = bf16_activations(SMALL, 128, seed=7).double()
    x, x_scale = engine_activations(SMALL, 128, seed=7)
    assert x.dtype == torch.float8_e4m3fn and x_scale.dtype == torch.float32 and x_scale.shape == (1,)
    assert x_scale.item() == (act.abs().max().float() / 448).item()  # amax / 448, in fp32
    assert x.float().abs().max().item() == E4M3_MAX  # the amax element lands on 448
    quotient = (act.float() / x_scale).double()  # as the engine divides: in fp32
    assert torch.equal(x.double(), round_to_e4m3(quotient))  # one rounding
    rms = act.square().mean(0).sqrt()
    ratio = rms.topk(OUTLIER_CHANNELS).values / rms.sort().values[:-OUTLIER_CHANNELS].median()
    assert ((ratio > 8) & (ratio < 60)).all()  # the outlier channels, 10-50x the rest


def test_out_scale_is_calibrated_statically_from_a_calibration_batch(params):
    out_scale = calibrated_out_scale(SMALL, params)
    assert calibrated_out_scale(SMALL, params) is out_scale  # once per model and device
    problem = make_problem(Case(SMALL, "zipf", 256, "real"), "cpu", params)
    assert problem.out_scale is out_scale
    out = reference_for(problem).out.float()
    # the case's outputs fill e4m3's range about as the calibration batch's did: near 448, saturating at most a few
    assert 0.25 * E4M3_MAX < out.abs().max().item() <= E4M3_MAX
    assert (out.abs() == E4M3_MAX).float().mean().item() < 0.05  # the clamps' ceiling, 7 * sigmoid(11.9) * 8


def test_real_pre_activations_sit_at_swiglus_scale(params):
    """z's std near the limit: the clamps cut the tails, most gates stay inside them (the seed's draws clamp ~half)."""
    problem = make_problem(Case(SMALL, "uniform", 256, "real"), "cpu", params)
    rows = problem.x[problem.routing.gather_indx.long()].double() * problem.x_scale.double()
    from moe_gather.mxfp4 import dequantize_mxfp4

    w = dequantize_mxfp4(problem.params.weights.expert(0), torch.float64)[0]
    size = int(problem.routing.ragged.slice_sizes[0])
    z = rows[:size] @ w + problem.params.bias[0].double()
    clamped = (z[:, 0::2] > REAL_LIMIT).double().mean().item()
    assert 0.001 < clamped < 0.3


def test_case_refuses_an_unknown_parameter_set():
    with pytest.raises(ValueError, match="params must be one of"):
        Case(SMALL, "zipf", 8, "realistic")


@pytest.mark.parametrize("name", ["zipf-bs8", "uniform-decode-bs2"])
def test_a_case_named_by_its_id_less_the_model_has_that_id(name):
    assert Case.named(SMALL, name).id == f"{SMALL.name}-{name}"
