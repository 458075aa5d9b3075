"""On the GPU: the golden reference against triton_kernels (the second reference), and CPU/GPU agreement of the
inputs. These are the proof that our reference means what the seed's test means."""

import pytest
import torch

from moe_gather import peer
from moe_gather.mxfp4 import quantize_mxfp4
from moe_gather.problem import MODELS, local_shard
from moe_gather.reference import TOLERANCES, check_against
from moe_gather.routing import make_logits, route

pytestmark = pytest.mark.gpu

needs_peer = pytest.mark.skipif(
    not peer.available(), reason="triton_kernels is not importable: put it on PYTHONPATH (README, 'Install')"
)


@needs_peer
def test_reference_agrees_with_triton_kernels(case, problem, reference, record_agreement):
    if problem.tokens == 0:
        pytest.skip(f"{case.id}: the local shard gets no rows, so there is nothing to compare")
    call = peer.prepare(problem, "fp8x", amax=True)
    out = call.run()
    tolerance = TOLERANCES["peer", case.params]
    check_against(reference.out, out, tolerance, f"{case.id} vs triton_kernels", record_agreement("peer"))
    # max |y| before the out scale: the peer's fp32 accumulation and epilogue against fp64, a margin over roundings
    torch.testing.assert_close(call.amax, reference.amax.reshape(1), rtol=1e-5, atol=0)


@needs_peer
def test_mxfp4_quantization_matches_triton_kernels():
    from triton_kernels.numerics_details.mxfp import downcast_to_mxfp

    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn((4, 2880, 512), generator=g, device="cuda") * 3).to(torch.bfloat16)
    w[0, :32, 0] = 0  # an all-zero block
    ours = quantize_mxfp4(w)
    codes, scales = downcast_to_mxfp(w, torch.uint8, axis=1)  # [E, K/2, N] and [E, K/32, N]
    assert torch.equal(ours.codes, codes.transpose(1, 2))
    assert torch.equal(ours.scales, scales.transpose(1, 2))


@pytest.mark.parametrize("routing", ["zipf", "uniform"])
def test_routing_is_the_same_on_cpu_and_gpu(routing):
    model = MODELS["gpt-oss-120b"]
    logits = make_logits(routing, 4096, model.num_experts, model.top_k, seed=11)
    on_cpu = route(logits, model.top_k, model.num_shards, local_shard(model))
    on_gpu = route(logits.cuda(), model.top_k, model.num_shards, local_shard(model))
    assert torch.equal(on_cpu.gather_indx, on_gpu.gather_indx.cpu())
    for block_m, schedule in on_cpu.ragged.block_schedule.items():
        assert torch.equal(schedule, on_gpu.ragged.block_schedule[block_m].cpu())
        assert torch.equal(on_cpu.ragged.widest_first(block_m), on_gpu.ragged.widest_first(block_m).cpu())
