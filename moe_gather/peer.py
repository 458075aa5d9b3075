"""triton_kernels' matmul_ogs (as of triton 3.6.0) as an optional peer: a second reference and the speed to beat.

triton_kernels is not on PyPI; put it on PYTHONPATH (README: "Install"). Everything here is None-safe when it is
absent: `available()` says whether it can be used.

Two ways to call it, both on the same Problem the kernel gets:
- `fp8x`: fp8 x with its x_scale, weights in the plain strided MXFP4 layout. The peer's exact semantics for our op;
  used as the second reference. Slow on Hopper.
- `bf16x`: the peer's fast Hopper path, the one it is timed on: x upcast to bf16 with x_scale folded in
  outside the timed region, weights swizzled for Hopper. For benchmarks; its numerics differ (bf16 rounding of
  x * x_scale).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .problem import Problem
from .reference import E4M3_MAX


@functools.cache
def available() -> bool:
    try:
        import triton_kernels.matmul_ogs  # noqa: F401
    except Exception:  # absent, or broken against this triton: either way not usable
        return False
    return True


@dataclass
class PeerCall:
    """A prepared matmul_ogs call; `run()` writes `out` (and the peer's actual out scale where asked for)."""

    fn: object
    out: torch.Tensor
    actual_scale: torch.Tensor | None  # the peer's flexpoint statistic: max |y| * (1 / 448) + 1e-30, by atomic max

    def run(self) -> torch.Tensor:
        self.fn()
        return self.out

    @property
    def amax(self) -> torch.Tensor:
        """max |y| before the out scale, recovered from actual_scale (exact to a float32 rounding of 1/448)."""
        return self.actual_scale * E4M3_MAX


def _peer_view(weights):
    """matmul_ogs takes MXFP4 as [E, K/2, N] packed along K (mx_axis=1): transposed views of our [E, N, K/2]."""
    return weights.codes.transpose(1, 2), weights.scales.transpose(1, 2)


@functools.lru_cache(maxsize=2)  # one model at both num_warps: a run over the batch ladder swizzles it twice
def _hopper_swizzle(weights, num_warps: int):
    """A model's MXFP4 weights in the peer's fast Hopper layouts (values, scales)."""
    from triton_kernels.tensor import FP4, convert_layout, wrap_torch_tensor
    from triton_kernels.tensor_details import layout

    codes, scales = _peer_view(weights)
    value_layout, value_opts = layout.make_default_matmul_mxfp4_w_layout(mx_axis=1)
    scale_layout, scale_opts = layout.make_default_matmul_mxfp4_w_scale_layout(mx_axis=1, num_warps=num_warps)
    return (
        convert_layout(wrap_torch_tensor(codes, dtype=FP4), value_layout, **value_opts),
        convert_layout(wrap_torch_tensor(scales), scale_layout, **scale_opts),
    )


def prepare(problem: Problem, variant: str = "fp8x", num_warps: int = 4, amax: bool = False) -> PeerCall:
    """The peer's call on `problem`. `amax=True` also has it reduce max |y| (an atomic max per tile, work the kernel
    does not do): for the reference check only, never for timing."""
    from triton_kernels.matmul_ogs import (
        FlexCtx,
        FnSpecs,
        FusedActivation,
        GatherIndx,
        PrecisionConfig,
        RoutingData,
        matmul_ogs,
    )
    from triton_kernels.numerics import InFlexData, OutFlexData
    from triton_kernels.swiglu import swiglu_fn
    from triton_kernels.tensor import FP4, make_ragged_tensor_metadata, wrap_torch_tensor

    model, routing = problem.case.model, problem.routing
    if variant == "fp8x":
        codes, scales = _peer_view(problem.params.weights)
        w, w_scale = wrap_torch_tensor(codes, dtype=FP4), wrap_torch_tensor(scales)
        x, lhs = problem.x, InFlexData(dtype=torch.float8_e4m3fn, scale=problem.x_scale)
    elif variant == "bf16x":
        w, w_scale = _hopper_swizzle(problem.params.weights, num_warps)
        x, lhs = (problem.x.to(torch.float32) * problem.x_scale).to(torch.bfloat16), InFlexData()
    else:
        raise ValueError(f"variant must be 'fp8x' or 'bf16x', got {variant!r}")

    tokens = routing.tokens
    ragged = make_ragged_tensor_metadata(routing.ragged.slice_sizes, tokens)
    routing_data = RoutingData(
        None, routing.ragged.slice_sizes, model.local_experts, model.top_k, ragged,
        expected_tokens_per_expt=routing.ragged.expected_slice_size,
    )  # fmt: skip
    # matmul_ogs gathers row src // top_k: any (token, k) index of the token will do.
    gather = GatherIndx(
        src_indx=routing.gather_indx * model.top_k,
        dst_indx=torch.arange(tokens, device=x.device, dtype=torch.int32),
    )
    actual_scale = torch.zeros(1, dtype=torch.float32, device=x.device) if amax else None
    out_data = OutFlexData(dtype=torch.float8_e4m3fn, expected_scale=problem.out_scale, actual_scale=actual_scale)
    precision = PrecisionConfig(
        flexpoint_saturate_inf=True,
        weight_scale=w_scale,
        out_dtype=torch.float8_e4m3fn,
        flex_ctx=FlexCtx(lhs_data=lhs, rhs_data=InFlexData(), out_data=out_data),
    )
    act = FusedActivation(
        FnSpecs("swiglu", swiglu_fn, ("alpha", "limit"), reduction_n=2), (problem.alpha, problem.limit)
    )
    out = torch.empty((tokens, model.n // 2), dtype=torch.float8_e4m3fn, device=x.device)
    fn = lambda: matmul_ogs(
        x, w, problem.params.bias, routing_data,
        gather_indx=gather, precision_config=precision, y=out, fused_activation=act,
    )  # fmt: skip
    return PeerCall(fn, out, actual_scale)
