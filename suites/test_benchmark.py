"""Throughput of the kernel per case, recorded by pytest-benchmark and gated against the stored baselines.

Timing: CUDA-graph replays of one call, ITERATIONS replays a round timed with a device-synchronizing timer
(moe_gather.benchmarking.cuda_timer), warm-up rounds over WARMUP_S, then rounds over WINDOW_S (at least MIN_ROUNDS):
a sustained rate, since the H200 cycles its clock at its power limit (moe_gather.benchmarking); the gate reads the
median, and measures a suspected regression again the same way. The peer is timed the same way. No L2 flush
between replays: one expert's weights are ~8.8 MB and the H200's L2 50 MB, so from six active experts on the weights
stream from HBM every replay; smaller cases keep part of them in L2, as they would in a decode loop.
Each case's output is checked against the golden reference first: a baseline is only as good as its output.
The gate runs at the seed's parameters (its baselines key on those ids; the kernel's instructions do not depend on
the values, though under the H200's power limit its clock may, a little). A decode case whose local shard gets no
rows launches nothing and skips, saying so.
"""

import pytest
import torch

from moe_gather import bmm1, peer
from moe_gather.bench import VendorWeights, case_row, measure_ceilings, time_peer, time_vendor
from moe_gather.benchmarking import ITERATIONS, graphed, sustained_rounds, sustained_seconds
from moe_gather.pytest_plugin import gate_on
from moe_gather.reference import check_against, kernel_tolerance

pytestmark = [pytest.mark.gpu, pytest.mark.benchmark, pytest.mark.params("seed")]


@pytest.fixture(scope="session")
def ceilings():
    return measure_ceilings()


@pytest.fixture(scope="session")
def _vendor_cache():
    return {}


@pytest.fixture
def vendor_weights(problem, _vendor_cache):
    """A getter of the model's weights dense in e4m3 for the vendor anchor (moe_gather.bench), built on first use
    (~1 GB of fp32 on the way), once per model."""

    def get():
        key = problem.case.model.name
        if key not in _vendor_cache:
            _vendor_cache.clear()
            _vendor_cache[key] = VendorWeights(problem.params.weights)
        return _vendor_cache[key]

    return get


def test_throughput(
    case, problem, reference, kernel_weights, vendor_weights, benchmark, throughput_gate, ceilings, request
):
    if benchmark.disabled:
        pytest.skip("pytest-benchmark is disabled here (pytest-xdist or --benchmark-disable): one process per GPU")
    if not gate_on(request.config):
        pytest.fail("the throughput gate is off (ini moe_gather_gate): these benchmarks would judge nothing")
    if problem.tokens == 0:
        pytest.skip(f"{case.id}: the local shard gets no rows, so the call launches nothing to time")
    out = torch.empty((problem.tokens, problem.case.model.n // 2), dtype=torch.float8_e4m3fn, device="cuda")
    replay = graphed(lambda: bmm1.run_problem(problem, kernel_weights, out))  # `out`: its eager call's result
    check_against(reference.out, out, kernel_tolerance(kernel_weights.precision, case.params), case.id)
    warmup, rounds = sustained_rounds(replay)
    benchmark.pedantic(replay, rounds=rounds, iterations=ITERATIONS, warmup_rounds=warmup)
    median = benchmark.stats.stats.median
    record = {
        "name": request.node.name, "model": case.model.name, "routing": case.routing, "batch": case.batch,
        **case_row(problem, median, ceilings, kernel_weights),
        "read_bw": ceilings["read_bw"], "fp8_flops": ceilings["fp8_flops"],
    }  # fmt: skip
    record["roof_tflops"] = problem.flops() / record["roof_us"] / 1e6
    if peer.available():
        record["peer_us"] = time_peer(problem)
        record["peer_tflops"] = problem.flops() / record["peer_us"] / 1e6
        record["speedup"] = record["peer_us"] / record["us"]
    try:  # torch._scaled_grouped_mm (a private op), weights dense fp8: its failure is recorded, never the gate's
        record["vendor_us"] = time_vendor(problem, vendor_weights())
        record["vendor_speedup"] = record["vendor_us"] / record["us"]
    except Exception as e:
        record["vendor_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    benchmark.extra_info.update({k: v for k, v in record.items() if k != "name"})
    request.node.user_properties.append(("bench", record))
    throughput_gate(request.node.name, median, remeasure=lambda: sustained_seconds(replay))


def test_the_vendor_anchor_computes_the_gemm_it_is_timed_for(gpu):
    """The vendor anchor (bench.vendor_call) on a gpt-oss-120b problem: each slice's gathered rows times its expert's
    dense fp8 weights, against the same product in fp32: within 2**-7 of each value and of the slice's largest (its
    bf16 output rounds at up to 2**-8 relative; the rest allows the fp8 GEMM's own order of accumulation over K)."""
    if gpu.capability is None or gpu.capability[0] != 9:
        pytest.skip(f"the vendor anchor is timed on Hopper only, this is {gpu.found}")
    from moe_gather.bench import vendor_call, vendor_rows
    from moe_gather.problem import MODELS, Case, make_problem

    problem = make_problem(Case(MODELS["gpt-oss-120b"], "zipf", 512), "cuda")
    vendor = VendorWeights(problem.params.weights)
    out = vendor_call(problem, vendor)().float()
    rows, offs = vendor_rows(problem.x, problem.routing.gather_indx, problem.routing.ragged.slice_sizes)
    starts = [0, *offs.tolist()[:-1]]
    for e, (start, end) in enumerate(zip(starts, offs.tolist(), strict=True)):
        if end == start:  # an expert without rows: nothing to compare
            continue
        w = vendor.e4m3[e].float() * vendor.scale[e][:, None]  # [N, K]
        expected = rows[start:end].float() @ w.t()
        torch.testing.assert_close(out[start:end], expected, rtol=2**-7, atol=2**-7 * float(expected.abs().max()))
