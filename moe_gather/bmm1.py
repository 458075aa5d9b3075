"""The public call: GPT-OSS MoE BMM1 with a fused gather, MXFP4 weights, bias, SwiGLU and an fp8 output.

    weights = prepare_weights(mxfp4_weights)            # once per model, into the GPU's kernel layout
    out = moe_bmm1(x, weights, bias, gather_indx, ragged, x_scale=..., out_scale=..., alpha=..., limit=...)

Semantics: moe_gather.reference.moe_bmm1_reference (its docstring), within TOLERANCES["kernel"]. The call
dispatches on the device's compute capability to an architecture's kernel, each in its own private module with
its weight layout, host launcher and config table. Every argument is checked on the host before any launch; a bad
one raises ValueError naming it. The kernel writes only `out`.
"""

from __future__ import annotations

import math

import torch

from . import _sm90
from .mxfp4 import MX_BLOCK, MXFP4Weights
from .routing import RaggedMetadata

_KERNELS = {9: _sm90}  # compute capability major -> kernel module
_WEIGHT_TYPES = {9: _sm90.Sm90Weights}


def has_kernel(capability: tuple[int, int] | None) -> bool:
    return capability is not None and capability[0] in _KERNELS


def _capability(device: torch.device) -> tuple[int, int]:
    return torch.cuda.get_device_capability(device)


def prepare_weights(weights: MXFP4Weights, capability: tuple[int, int] | None = None):
    """MXFP4 expert weights -> the layout of the kernel for `capability` (default: their device's GPU).
    Works on any device, so layouts can be built and checked on the CPU."""
    if not isinstance(weights, MXFP4Weights):
        raise ValueError(f"weights must be MXFP4Weights, got {type(weights).__name__}")
    capability = capability or _capability(weights.device)
    if not has_kernel(capability):
        raise ValueError(f"no moe_gather kernel for compute capability {capability}")
    return _KERNELS[capability[0]].prepare_weights(weights)


def _check_tensor(name, t, dtype, ndim, device):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    if t.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device}, expected {device} (where x is)")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def moe_bmm1(
    x: torch.Tensor,
    weights,
    bias: torch.Tensor,
    gather_indx: torch.Tensor,
    ragged: RaggedMetadata,
    *,
    x_scale: torch.Tensor,
    out_scale: torch.Tensor,
    alpha: float,
    limit: float,
    out: torch.Tensor | None = None,
    config=None,
) -> torch.Tensor:
    """out[t] = e4m3(swiglu(x[gather_indx[t]] * x_scale @ W[e(t)] + bias[e(t)]) / out_scale), [tokens, N/2].

    x fp8 e4m3 [batch, K]; weights from prepare_weights ([E, K, N] logical); bias fp32 [E, N]; gather_indx int32
    [tokens], the rows of each expert's slice in order; ragged: the slices (moe_gather.routing); x_scale and
    out_scale: fp32 tensors of one element (kept on the device, so the call can be captured in a CUDA graph);
    alpha, limit: SwiGLU parameters; out: optional fp8 [tokens, N/2] output; config: a kernel config to force
    (tests and sweeps), else chosen from the expected slice size. Contract: gather_indx values lie in [0, batch)
    (not checked: that would cost a device sync).
    """
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    device = x.device
    if device.type != "cuda":
        raise ValueError(f"x must be on a CUDA device, got {device}")
    capability = _capability(device)
    if not has_kernel(capability):
        raise ValueError(f"no moe_gather kernel for compute capability {capability} ({device})")
    _check_tensor("x", x, torch.float8_e4m3fn, 2, device)
    batch, k = x.shape
    weight_type = _WEIGHT_TYPES[capability[0]]
    if not isinstance(weights, weight_type):
        raise ValueError(f"weights must come from prepare_weights for this GPU ({weight_type.__name__})")
    if weights.device != device:
        raise ValueError(f"weights are on {weights.device}, expected {device} (where x is)")
    if k % MX_BLOCK:
        raise ValueError(f"x: K = {k} is not a multiple of {MX_BLOCK}")
    if weights.k != k:
        raise ValueError(f"weights have K = {weights.k}, x has K = {k}")
    num_experts, n = weights.num_experts, weights.n
    if n % 2:
        raise ValueError(f"weights: N = {n} must be even (interleaved gate and linear columns)")
    _check_tensor("bias", bias, torch.float32, 2, device)
    if tuple(bias.shape) != (num_experts, n):
        raise ValueError(f"bias must be [{num_experts}, {n}], got {tuple(bias.shape)}")
    _check_tensor("gather_indx", gather_indx, torch.int32, 1, device)
    tokens = gather_indx.shape[0]
    if not isinstance(ragged, RaggedMetadata):
        raise ValueError(f"ragged must be RaggedMetadata, got {type(ragged).__name__}")
    _check_tensor("ragged.slice_sizes", ragged.slice_sizes, torch.int32, 1, device)
    if ragged.n_slices != num_experts:
        raise ValueError(f"ragged has {ragged.n_slices} slices, weights {num_experts} experts")
    for name, scale in (("x_scale", x_scale), ("out_scale", out_scale)):
        _check_tensor(name, scale, torch.float32, 1, device)
        if scale.numel() != 1:
            raise ValueError(f"{name} must hold one element, got {scale.numel()}")
    for name, value in (("alpha", alpha), ("limit", limit)):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if out is None:
        out = torch.empty((tokens, n // 2), dtype=torch.float8_e4m3fn, device=device)
    else:
        _check_tensor("out", out, torch.float8_e4m3fn, 2, device)
        if tuple(out.shape) != (tokens, n // 2):
            raise ValueError(f"out must be [{tokens}, {n // 2}], got {tuple(out.shape)}")
        for name, t in (("x", x), ("bias", bias), ("gather_indx", gather_indx)):
            if _overlaps(out, t):
                raise ValueError(f"out overlaps {name}")
    if tokens == 0:
        return out
    if batch == 0:
        raise ValueError("x has no rows but gather_indx has some")
    return _KERNELS[capability[0]].launch(
        x, weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config
    )


def run_problem(problem, weights, out: torch.Tensor | None = None, config=None) -> torch.Tensor:
    """moe_bmm1 on a moe_gather.problem.Problem (tests, benchmarks, sweeps)."""
    routing = problem.routing
    return moe_bmm1(
        problem.x, weights, problem.params.bias, routing.gather_indx, routing.ragged,
        x_scale=problem.x_scale, out_scale=problem.out_scale, alpha=problem.alpha, limit=problem.limit,
        out=out, config=config,
    )  # fmt: skip
