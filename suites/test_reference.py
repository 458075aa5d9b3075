"""The golden reference against an independent scalar float64 computation, and the comparison helpers."""

import json
import math
from pathlib import Path

import pytest
import torch

from moe_gather.accuracy import _merged
from moe_gather.mxfp4 import E2M1_VALUES, unpack_codes
from moe_gather.problem import Case, MoEModel, make_problem, reference_for
from moe_gather.reference import (
    TOLERANCES,
    Agreement,
    Tolerance,
    assert_close,
    check_against,
    compare_fp8,
    e4m3_ordinal,
    kernel_tolerance,
    round_to_e4m3,
    scaled_errors,
    swiglu_reference,
    to_e4m3,
)

E4M3_FINITE = sorted({v for v in torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float().tolist()
                      if math.isfinite(v)})  # fmt: skip


def _scalar_e4m3(v: float) -> float:
    """Independent e4m3 rounding: nearest of the 253 finite values, ties to the even code, saturating."""
    if math.isnan(v):
        return v
    if abs(v) >= 448:
        return math.copysign(448.0, v)
    mag = abs(v)
    codes = torch.tensor(E4M3_FINITE).abs().unique().tolist()
    best = min(codes, key=lambda c: (abs(c - mag), _e4m3_code(c) % 2))
    return math.copysign(best, v)


def _e4m3_code(value: float) -> int:
    return int(torch.tensor([value]).to(torch.float8_e4m3fn).view(torch.uint8))


def test_every_e4m3_value_is_a_fixed_point():
    v = torch.tensor(E4M3_FINITE, dtype=torch.float64)
    assert torch.equal(round_to_e4m3(v), v)


def test_e4m3_rounding_matches_scalar_rule():
    g = torch.Generator().manual_seed(3)
    draw = lambda n, top: torch.rand(n, generator=g) * top
    mags = torch.cat((draw(300, 500), draw(100, 2**-6), draw(50, 4)))
    grid = torch.tensor(E4M3_FINITE, dtype=torch.float64)
    ties = (grid[1:] + grid[:-1]) / 2  # every midpoint, the hard cases
    v = torch.cat((mags.double(), -mags.double(), ties))
    want = torch.tensor([_scalar_e4m3(x) for x in v.tolist()], dtype=torch.float64)
    assert torch.equal(round_to_e4m3(v), want)


def test_e4m3_saturates_and_keeps_nan():
    out = to_e4m3(torch.tensor([500.0, -1e30, float("inf"), -float("inf"), float("nan"), 464.0, 0.0, -0.0]))
    got = out.float().tolist()
    assert got[:4] == [448.0, -448.0, 448.0, -448.0]
    assert math.isnan(got[4]) and got[5] == 448.0  # 464 is the tie between 448 and 480 (not finite): even -> 448
    assert out.view(torch.uint8)[6:].tolist() == [0x00, 0x80]


def _scalar_swiglu(g, lin, alpha, limit):
    gate = g if math.isnan(g) else min(g, limit)
    lin = lin if math.isnan(lin) else max(-limit, min(lin, limit))
    return gate / (1 + math.exp(-alpha * gate)) * (lin + 1)


def test_swiglu_matches_scalar_formula_on_interleaved_pairs():
    z = torch.tensor([[-3.0, 0.5, 0.2, -2.0, 1.4, 9.0, 50.0, -0.3]], dtype=torch.float64)
    got = swiglu_reference(z, alpha=1.1, limit=1.35)[0].tolist()
    pairs = z[0].view(-1, 2).tolist()
    want = [_scalar_swiglu(g, lin, 1.1, 1.35) for g, lin in pairs]
    assert got == pytest.approx(want, rel=1e-15, abs=0)


def test_swiglu_propagates_nan():
    z = torch.tensor([[float("nan"), 0.1, 0.3, float("nan"), float("-inf"), 0.0, float("inf"), 0.0]])
    got = swiglu_reference(z.double(), alpha=1.0, limit=1.4)[0]
    assert torch.isnan(got[:3]).all()  # NaN gate, NaN linear, -Inf gate (-Inf * sigmoid(-Inf) = -Inf * 0)
    assert got[3].item() == pytest.approx(1.4 / (1 + math.exp(-1.4)))  # +Inf gate clips to the limit


TINY = MoEModel("tiny", num_experts=16, top_k=4, num_shards=4, hidden=64, n=16)


def _scalar_bmm1(problem):
    """Independent float64 computation, one output at a time, from the raw bytes."""
    w, bias = problem.params.weights, problem.params.bias
    codes = unpack_codes(w.codes).tolist()  # [E][N][K]
    scales = w.scales.tolist()  # [E][N][K/32]
    x = problem.x.float().tolist()
    sizes = problem.routing.ragged.slice_sizes.tolist()
    gather = problem.routing.gather_indx.tolist()
    x_scale, out_scale = problem.x_scale.item(), problem.out_scale.item()
    out, t = [], 0
    for e, size in enumerate(sizes):
        for _ in range(size):
            row = x[gather[t]]
            z = []
            for n in range(problem.case.model.n):
                terms = [
                    row[k] * math.copysign(E2M1_VALUES[codes[e][n][k] & 7], -1 if codes[e][n][k] & 8 else 1)
                    * 2.0 ** (scales[e][n][k // 32] - 127)
                    for k in range(problem.case.model.hidden)
                ]  # fmt: skip
                z.append(math.fsum(terms) * x_scale + bias[e][n].item())
            y = [_scalar_swiglu(z[j], z[j + 1], problem.alpha, problem.limit) for j in range(0, len(z), 2)]
            out.append([_scalar_e4m3(v / out_scale) for v in y])
            t += 1
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("routing", ["zipf", "uniform"])
def test_reference_matches_independent_scalar_computation(routing):
    problem = make_problem(Case(TINY, routing, 24), "cpu")
    ref = reference_for(problem)
    assert problem.tokens > 0
    assert torch.equal(ref.out.to(torch.float64), _scalar_bmm1(problem))
    assert ref.amax.item() == pytest.approx(ref.y.abs().max().item())


def test_assert_close_normalises_by_max_and_rms():
    ref = torch.tensor([1.0, 2.0, 4.0, 8.0])
    assert assert_close(ref, ref.clone(), maxtol=0, rmstol=0) == (0.0, 0.0)
    off = ref.clone()
    off[0] += 0.5  # error 0.5/8 against max(rms, 1/8): 0.0625 / 0.5728 = 0.109
    max_err, _ = assert_close(ref, off, maxtol=0.125, rmstol=0.1)
    assert max_err == pytest.approx(0.0625 / ((1 + 4 + 16 + 64) / 4 / 64) ** 0.5, rel=1e-5)
    with pytest.raises(AssertionError, match="max relative error"):
        assert_close(ref, off, maxtol=0.1, rmstol=0.1)


def test_assert_close_never_passes_nan_or_inf_mismatch():
    ref = torch.tensor([1.0, 2.0, float("nan")])
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(ref, torch.tensor([1.0, 2.0, 3.0]), maxtol=1, rmstol=1)
    with pytest.raises(AssertionError, match="Inf"):
        assert_close(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, -float("inf")]), maxtol=1, rmstol=1)
    assert_close(ref, ref.clone(), maxtol=0, rmstol=0)


def test_compare_fp8_counts_bytes_and_ulps():
    a = torch.tensor([1.0, 1.0, -2.0, 0.0, 448.0, float("nan")]).to(torch.float8_e4m3fn)
    b = torch.tensor([1.0, 1.125, -2.5, -0.0, 448.0, float("nan")]).to(torch.float8_e4m3fn)
    agreement = compare_fp8(a, b)
    assert agreement.bitwise_equal == 3  # 1.0, 448, NaN; -0 differs from +0 in its byte
    assert agreement.max_ulp == 2.0  # -2.0 -> -2.5 is two steps of 0.25
    assert agreement.nan_mismatch == 0
    b2 = b.clone()
    b2[0] = float("nan")
    assert compare_fp8(a, b2).max_ulp == float("inf")


def test_check_against_enforces_bitwise_floor():
    ref = torch.linspace(-3, 3, 1000).to(torch.float8_e4m3fn)
    off = ref.clone().view(torch.uint8)
    off[::20] ^= 1  # 5% one ulp off: within maxtol, below a 99% bitwise floor
    loose = Tolerance(maxtol=0.125, rmstol=1.0, min_bitwise_equal=0.99, max_ulp=1, reason="the bitwise floor alone")
    with pytest.raises(AssertionError, match="bitwise equal"):
        check_against(ref, off.view(torch.float8_e4m3fn), loose)
    with pytest.raises(AssertionError, match="RMS"):  # the seed's rmstol alone already refuses 5% off by one ulp
        check_against(ref, off.view(torch.float8_e4m3fn), TOLERANCES["kernel", "seed"])
    assert check_against(ref, ref.clone(), TOLERANCES["kernel", "seed"]).bitwise_equal_fraction == 1.0
    two_ulp = ref.clone().view(torch.uint8)
    two_ulp[500] += 2  # one value two ulps off: within every fraction, beyond the ulp bound
    with pytest.raises(AssertionError, match="at most 1 ulp"):
        check_against(ref, two_ulp.view(torch.float8_e4m3fn), loose)


H200 = Path(__file__).parents[1] / "results" / "h200"


def _measured(source: str):
    """(case, params, Agreement) of `source` on every case of the committed H200 accuracy runs."""
    for row in _merged([str(p) for p in sorted(H200.glob("accuracy_*.json.gz"))])["rows"]:
        yield row["case"], row["params"], Agreement.from_dict(row["agreement"][source])


# The bounds against the data they come from: the kernel at each precision on its own, and cuBLAS's promoted fp8 GEMM
# (the fast precision's budget) under the fast bounds.
@pytest.mark.parametrize("source, precision", [("kernel", "accurate"), ("kernel_fast", "fast"), ("cublas_fp8", "fast")])
def test_tolerances_hold_every_measured_case(source, precision):
    measured = list(_measured(source))
    assert len(measured) == 440  # both models, both parameter sets
    outside = [case for case, params, a in measured if not a.within(kernel_tolerance(precision, params))]
    assert not outside, f"{source} outside the {precision} bounds on {outside}"


def test_fast_bounds_fail_a_partial_truncated_to_13_bits():
    """The fast precision's bitwise floors fail its partials truncated to 13 bits (the mutant run's figures)."""
    run = json.loads((H200 / "mutants" / "fast-partial-13.json").read_text())
    kernel = [r for r in run["records"] if r["source"] == "kernel"]
    caught = [r["case"] for r in kernel if not Agreement.from_dict(r).within(
        kernel_tolerance("fast", "real" if r["case"].endswith("-real") else "seed"))]  # fmt: skip
    assert len(kernel) == 16 and len(caught) >= 14
    assert caught == [r["case"] for r in kernel if r["outcome"] == "failed"]  # what the GPU run itself found


E4M3_GRID = torch.tensor(E4M3_FINITE, dtype=torch.float32).to(torch.float8_e4m3fn)


def _neighbour(t: torch.Tensor, step: int) -> torch.Tensor:
    """Each e4m3 value `step` ordinals away (clamped to the finite range)."""
    ordinal = (e4m3_ordinal(t) + step).clamp(-126, 126)
    return torch.where(ordinal < 0, 0x80 | -ordinal, ordinal).to(torch.uint8).view(torch.float8_e4m3fn)


def test_one_rounding_flip_scores_at_most_one_anywhere():
    for step in (1, -1):
        errors = scaled_errors(E4M3_GRID, _neighbour(E4M3_GRID, step))
        assert errors.max().item() <= 1.0
    assert scaled_errors(E4M3_GRID, E4M3_GRID).max().item() == 0.0


def test_scaled_error_near_zero_counts_in_ulps_of_the_floor():
    """amax 448: the floor is 448 / 1024 = 0.4375, whose e4m3 ulp is 2**-5. An output 2**-7 off near zero scores
    0.25 there (in ordinals: 4), one 2**-6 off 0.5 (8 ordinals); at and above the floor, the error in ulps of |ref|."""
    ref = torch.tensor([448.0, 0.0, 2.0**-9, 3.0]).to(torch.float8_e4m3fn)
    out = torch.tensor([416.0, 2.0**-7, 2.0**-6 + 2.0**-9, 3.25]).to(torch.float8_e4m3fn)
    errors = scaled_errors(ref, out)
    assert errors.tolist() == [1.0, 0.25, 0.5, 1.0]
    assert compare_fp8(ref, out).max_ulp == 8  # 2**-9 -> 2**-6 + 2**-9 is eight subnormal steps


def test_scaled_error_does_not_depend_on_the_out_scale():
    """Scaling reference and output by a power of two (within e4m3's normal range) leaves every score unchanged."""
    g = torch.Generator().manual_seed(4)
    ref = (torch.randn(4096, generator=g) * 20).clamp(-400, 400).to(torch.float8_e4m3fn)
    ref = torch.where(ref.float().abs() < 0.5, torch.tensor(0.5), ref.float()).to(torch.float8_e4m3fn)
    out = _neighbour(ref, 3)
    base = scaled_errors(ref, out)
    for scale in (2.0**-4, 2.0**-2):
        scaled = scaled_errors(
            (ref.float() * scale).to(torch.float8_e4m3fn), (out.float() * scale).to(torch.float8_e4m3fn)
        )
        assert torch.equal(scaled, base)


def test_scaled_error_of_nan():
    ref = torch.tensor([float("nan"), 1.0, float("nan")]).to(torch.float8_e4m3fn)
    out = torch.tensor([float("nan"), float("nan"), 2.0]).to(torch.float8_e4m3fn)
    assert scaled_errors(ref, out).tolist() == [0.0, float("inf"), float("inf")]
    assert compare_fp8(ref, ref.clone()).max_scaled == 0.0


PROBE = MoEModel("probe", num_experts=4, top_k=1, num_shards=1, hidden=2880, n=64)


def _rounded_accumulation(problem, bits):
    """fp8 outputs of an accumulation that rounds each 32-product block's sum to `bits` significant bits before
    adding it (exactly) to the rest: fewer bits, as a GEMM of lower accumulation precision. The epilogue exact."""
    from moe_gather.mxfp4 import dequantize_mxfp4

    y, start = [], 0
    for e, size in enumerate(problem.routing.ragged.slice_sizes.tolist()):
        rows = problem.x[problem.routing.gather_indx[start : start + size].long()].double()
        w = dequantize_mxfp4(problem.params.weights.expert(e), torch.float64)[0]
        blocks = torch.einsum("tbk,bkn->tbn", rows.reshape(size, -1, 32), w.reshape(-1, 32, w.shape[1]))
        mantissa, exponent = torch.frexp(blocks)
        acc = (torch.round(mantissa * 2.0**bits) * 2.0**-bits * torch.exp2(exponent.double())).sum(1)
        y.append(
            swiglu_reference(
                acc * problem.x_scale.double() + problem.params.bias[e].double(), problem.alpha, problem.limit
            )
        )
        start += size
    return to_e4m3(torch.cat(y) / problem.out_scale.double())


def test_scaled_error_sees_accumulation_precision_at_real_parameters():
    """The metric ranks accumulations by their precision where ordinals and assert_close cannot: an fp32-like one
    (24 bits per block) scores <= 1, fewer bits score more, in order."""
    problem = make_problem(Case(PROBE, "uniform", 512, "real"), "cpu")
    ref = reference_for(problem).out
    worst = {bits: compare_fp8(ref, _rounded_accumulation(problem, bits)) for bits in (24, 12, 10, 8)}
    assert worst[24].max_scaled <= 1
    assert worst[12].max_scaled < worst[10].max_scaled < worst[8].max_scaled
    assert worst[12].scaled_over_one < worst[10].scaled_over_one < worst[8].scaled_over_one
    assert worst[8].max_scaled > 1
