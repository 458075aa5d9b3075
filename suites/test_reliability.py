"""Reliability on the GPU: guard zones around the output, determinism, batch sizes off the ladder, experts with one
row. They run in the GPU suite (results/h200/suite.log.gz); on the CPU they skip, saying why."""

import dataclasses

import pytest
import torch
from _outputs import assert_launches_alike

from moe_gather import bmm1
from moe_gather.problem import MODELS, Case, local_shard, make_problem, reference_for
from moe_gather.reference import check_against, kernel_tolerance
from moe_gather.routing import route

pytestmark = pytest.mark.gpu
GUARD = 4096  # bytes of sentinel on each side of the output
SENTINEL = 0x5A


def test_output_guard_zones_stay_untouched(case, problem, reference, kernel_weights):
    rows, cols = problem.tokens, problem.case.model.n // 2
    arena = torch.full((2 * GUARD + rows * cols,), SENTINEL, dtype=torch.uint8, device="cuda")
    out = arena[GUARD : GUARD + rows * cols].view(torch.float8_e4m3fn).view(rows, cols)
    bmm1.run_problem(problem, kernel_weights, out)
    assert bool((arena[:GUARD] == SENTINEL).all()), "the kernel wrote before its output"
    assert bool((arena[GUARD + rows * cols :] == SENTINEL).all()), "the kernel wrote after its output"
    check_against(reference.out, out, kernel_tolerance(kernel_weights.precision, case.params), case.id)


def test_bitwise_deterministic_over_three_runs(case, problem, kernel_weights):
    first = bmm1.run_problem(problem, kernel_weights)
    for run in (2, 3):
        assert_launches_alike(problem, kernel_weights, first, what=f"run {run} against run 1")


@pytest.mark.parametrize("routing", ["zipf", "uniform"])
@pytest.mark.parametrize("batch", [1, 3, 77, 999, 40000])
def test_batch_sizes_off_the_ladder(batch, routing, precision):
    problem = make_problem(Case(MODELS["gpt-oss-120b"], routing, batch), "cuda")
    weights = bmm1.prepare_weights(problem.params.weights, precision=precision)
    out = bmm1.run_problem(problem, weights)
    assert out.shape == (problem.tokens, MODELS["gpt-oss-120b"].n // 2)
    tolerance = kernel_tolerance(weights.precision, "seed")
    check_against(reference_for(problem).out, out, tolerance, f"batch {batch} {routing}")


def test_experts_with_one_row(precision):
    model = MODELS["gpt-oss-120b"]
    first = local_shard(model) * model.local_experts
    logits = torch.full((model.local_experts, model.num_experts), -10.0)
    for t in range(model.local_experts):  # token t picks local expert t first, its other picks outside the shard
        logits[t, first + t] = 10
        logits[t, (first + model.local_experts + 3 * t + torch.arange(3)) % model.num_experts] = 5
    routing = route(logits.half().cuda(), model.top_k, model.num_shards, local_shard(model))
    assert routing.ragged.slice_sizes.tolist() == [1] * model.local_experts
    problem = dataclasses.replace(make_problem(Case(model, "uniform", model.local_experts), "cuda"), routing=routing)
    weights = bmm1.prepare_weights(problem.params.weights, precision=precision)
    out = bmm1.run_problem(problem, weights)
    check_against(reference_for(problem).out, out, kernel_tolerance(weights.precision, "seed"), "one row per expert")
