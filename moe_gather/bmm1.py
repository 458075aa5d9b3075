"""The public call: GPT-OSS MoE BMM1 with a fused gather, MXFP4 weights, bias, SwiGLU and an fp8 output.

    weights = prepare_weights(mxfp4_weights)            # once per model, into the GPU's kernel layout
    out = moe_bmm1(x, weights, bias, gather_indx, ragged, x_scale=..., out_scale=..., alpha=..., limit=...)

Semantics: moe_gather.reference.moe_bmm1_reference (its docstring), within TOLERANCES["kernel", params]. The
call dispatches on the device's compute capability to an architecture's kernel, each in its own private module with
its weight layout, host launcher and config table. Every argument is checked on the host before any launch; a bad
one raises ValueError naming it. The kernel writes only `out`.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os

import torch

from . import _sm90, _sm100
from .mxfp4 import MX_BLOCK, MXFP4Weights
from .routing import DEBUG_ENV, RaggedMetadata  # DEBUG_ENV "1": also check what costs a device sync

_KERNELS = {9: _sm90, 10: _sm100}  # compute capability major -> kernel module (10: compiled, never run here)
_WEIGHT_TYPES = {9: _sm90.Sm90Weights, 10: _sm100.Sm100Weights}
_CONFIG_TYPES = {9: _sm90.Sm90Config, 10: _sm100.Sm100Config}
PRECISIONS = tuple(dict.fromkeys(p for kernel in _KERNELS.values() for p in kernel.PRECISIONS))  # any kernel's
LAYOUTS = _sm90.LAYOUTS  # the weights' layouts: "fp8" is the Hopper kernel's fast precision's (prepare_weights)
layout_refusal = _sm90.layout_refusal  # why a command line's --layout cannot go with its --precision


def has_kernel(capability: tuple[int, int] | None) -> bool:
    return capability is not None and capability[0] in _KERNELS


def supported_precisions(capability: tuple[int, int]) -> tuple[str, ...]:
    """The precisions the kernel for `capability` has."""
    return _kernel(capability).PRECISIONS


def _capability(device: torch.device) -> tuple[int, int]:
    return torch.cuda.get_device_capability(device)


def _kernel(capability: tuple[int, int], where: str = ""):
    """The kernel module for `capability`, or a ValueError naming it."""
    if not has_kernel(capability):
        raise ValueError(f"no moe_gather kernel for compute capability {capability}{where}")
    return _KERNELS[capability[0]]


def select_config(ragged, capability: tuple[int, int] | None = None, precision: str = "accurate", weights=None):
    """The kernel config the call would choose for `ragged` (RaggedMetadata) on `capability` (default: the current
    GPU) at `precision` (the weights' Sm90Weights.precision), for reports; with `weights`, from the table of their
    precision and layout, as it runs on them (sm90: runs_as, the fp16 path's or the packed words' config where the
    weights need it)."""
    kernel = _kernel(capability or _capability(torch.device("cuda")))
    if weights is None or not hasattr(kernel, "runs_as"):
        return kernel.select_config(ragged, precision)
    return kernel.runs_as(kernel.select_config(ragged, weights.precision, weights.layout), weights)


def prepare_weights(
    weights: MXFP4Weights,
    capability: tuple[int, int] | None = None,
    precision: str | None = None,
    layout: str = "mxfp4",
):
    """MXFP4 expert weights -> the layout of the kernel for `capability` (default: their device's GPU).
    Works on any device, so layouts can be built and checked on the CPU (there `capability` is required).

    precision: "accurate" (every 32-K block's products promoted exactly into fp32) or "fast" (Hopper: each block's
    scale folded into the fp8 values, one promotion per 128 K; docs/numerics.md has both measured); the two read
    different encodings, so the prepared weights carry it (`.precision`) and a call runs theirs. None: the kernel's
    default (`_sm90.DEFAULT_PRECISION`, "accurate"; were it "fast", weights whose scales do not fold would take
    "accurate"). "fast" needs the scales to fold exactly (each row's nonzero blocks of a 128-wide K tile within 11
    binades of the largest): other weights are a ValueError naming the first row and tile that do not.

    layout: "mxfp4" (the packed codes, 4.25 bits a weight) or, opt-in on Hopper with precision "fast", "fp8": beside
    the codes, the folded e4m3 bytes themselves, which the large tiles feed to wgmma without converting them: the same
    sums, one byte a weight more (gpt-oss-120b: 271 MB per shard and layer beside the codes' 136 MB; docs/sm90.md)."""
    _check_precision(precision)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not isinstance(weights, MXFP4Weights):
        raise ValueError(f"weights must be MXFP4Weights, got {type(weights).__name__}")
    if capability is None:
        if weights.device.type != "cuda":
            raise ValueError(f"prepare_weights: weights on {weights.device} need a capability, e.g. (9, 0)")
        capability = _capability(weights.device)
    return _kernel(capability).prepare_for(weights, precision, layout)


def _check_precision(precision) -> None:
    if precision is not None and precision not in PRECISIONS:
        names = ", ".join(repr(p) for p in PRECISIONS)
        raise ValueError(f"precision must be {names} or None, got {precision!r}")


def _check_tensor(name, t, dtype, ndim):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    if t.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


def _host_number(name: str, value, positive: bool = False) -> float:
    """A host-side scalar: a Python or numpy real number (not a bool, not a tensor), finite (and > 0 if `positive`)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number (Python or numpy), got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number, got {value!r}")
    return value


def _tensors_of(obj) -> list[tuple[str, torch.Tensor]]:
    """The tensors a prepared-weights or ragged-metadata object holds (its schedules' too), with their names."""
    found = []
    for name, value in vars(obj).items():
        values = value.items() if isinstance(value, dict) else [("", value)]
        found += [(f"{name}[{k}]" if k != "" else name, v) for k, v in values if isinstance(v, torch.Tensor)]
    return found


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def check_arguments(
    x, weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config=None, precision=None
):
    """Every host-side check of moe_bmm1, in an order that needs no GPU until the devices: types, dtypes, shapes,
    contiguity, the output, then devices and the kernel for the device. Raises ValueError naming the argument.
    Returns the output shape (tokens, N/2) and the kernel module for the device."""
    _check_tensor("x", x, torch.float8_e4m3fn, 2)
    batch, k = x.shape
    if not isinstance(weights, tuple(_WEIGHT_TYPES.values())):
        raise ValueError(f"weights must come from prepare_weights, got {type(weights).__name__}")
    _check_precision(precision)
    if precision is not None and precision != weights.precision:
        raise ValueError(
            f"precision={precision!r}, but the weights were prepared for {weights.precision!r}: prepare_weights(...,"
            f" precision={precision!r}) (the two precisions read different encodings)"
        )
    if k % MX_BLOCK:
        raise ValueError(f"x: K = {k} is not a multiple of {MX_BLOCK}")
    if weights.k != k:
        raise ValueError(f"weights have K = {weights.k}, x has K = {k}")
    num_experts, n = weights.num_experts, weights.n
    if n % 2:
        raise ValueError(f"weights: N = {n} must be even (interleaved gate and linear columns)")
    _check_tensor("bias", bias, torch.float32, 2)
    if tuple(bias.shape) != (num_experts, n):
        raise ValueError(f"bias must be [{num_experts}, {n}], got {tuple(bias.shape)}")
    _check_tensor("gather_indx", gather_indx, torch.int32, 1)
    tokens = gather_indx.shape[0]
    if tokens and not batch:
        raise ValueError("x has no rows but gather_indx has some")
    if not isinstance(ragged, RaggedMetadata):
        raise ValueError(f"ragged must be RaggedMetadata, got {type(ragged).__name__}")
    _check_tensor("ragged.slice_sizes", ragged.slice_sizes, torch.int32, 1)
    if ragged.n_slices != num_experts:
        raise ValueError(f"ragged has {ragged.n_slices} slices, weights {num_experts} experts")
    if ragged.tokens != tokens:
        raise ValueError(f"ragged was made for {ragged.tokens} rows, gather_indx has {tokens}")
    for name, scale in (("x_scale", x_scale), ("out_scale", out_scale)):
        _check_tensor(name, scale, torch.float32, 1)
        if scale.numel() != 1:
            raise ValueError(f"{name} must hold one element, got {scale.numel()}")
    _host_number("alpha", alpha)
    _host_number("limit", limit, positive=True)  # the clamps are [-limit, limit]
    if config is not None and not isinstance(config, tuple(_CONFIG_TYPES.values())):
        raise ValueError(
            f"config must be a kernel config (Sm90Config, Sm100Config) or None, got {type(config).__name__}"
        )
    if out is not None:
        _check_tensor("out", out, torch.float8_e4m3fn, 2)
        if tuple(out.shape) != (tokens, n // 2):
            raise ValueError(f"out must be [{tokens}, {n // 2}], got {tuple(out.shape)}")
        inputs = [
            ("x", x),
            ("bias", bias),
            ("gather_indx", gather_indx),
            ("x_scale", x_scale),
            ("out_scale", out_scale),
        ]
        inputs += [(f"weights.{n}", t) for n, t in _tensors_of(weights)]
        inputs += [(f"ragged.{n}", t) for n, t in _tensors_of(ragged)]
        for name, t in inputs:
            if _overlaps(out, t):
                raise ValueError(f"out overlaps {name}")
    debug = os.environ.get(DEBUG_ENV) == "1"  # the checks that cost a device sync
    if debug:
        for name, scale in (("x_scale", x_scale), ("out_scale", out_scale)):
            value = float(scale.item())
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and positive, got {value!r}")
    device = x.device
    if device.type != "cuda":
        raise ValueError(f"x must be on a CUDA device, got {device}")
    named = {"weights": weights.device, "bias": bias.device, "gather_indx": gather_indx.device}
    named |= {"ragged.slice_sizes": ragged.slice_sizes.device, "x_scale": x_scale.device}
    named |= {"out_scale": out_scale.device} | ({"out": out.device} if out is not None else {})
    for name, where in named.items():
        if where != device:
            raise ValueError(f"{name} is on {where}, expected {device} (where x is)")
    capability = _capability(device)
    kernel = _kernel(capability, f" ({device})")
    if not isinstance(weights, _WEIGHT_TYPES[capability[0]]):
        raise ValueError(f"weights were prepared for another GPU ({type(weights).__name__})")
    if config is not None and not isinstance(config, _CONFIG_TYPES[capability[0]]):
        raise ValueError(f"config is a {type(config).__name__}, this GPU runs {_CONFIG_TYPES[capability[0]].__name__}")
    if debug:
        if tokens and (int(gather_indx.min()) < 0 or int(gather_indx.max()) >= batch):
            raise ValueError(f"gather_indx has values outside [0, {batch})")
        if int(ragged.slice_sizes.sum()) != tokens:
            raise ValueError(f"ragged.slice_sizes sum to {int(ragged.slice_sizes.sum())}, gather_indx has {tokens}")
    return tokens, n // 2, kernel


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
    precision: str | None = None,
) -> torch.Tensor:
    """out[t] = e4m3(swiglu(x[gather_indx[t]] * x_scale @ W[e(t)] + bias[e(t)]) / out_scale), [tokens, N/2].

    x fp8 e4m3 [batch, K]; weights from prepare_weights ([E, K, N] logical); bias fp32 [E, N]; gather_indx int32
    [tokens], the rows of each expert's slice in order; ragged: the slices (moe_gather.routing); x_scale and
    out_scale: fp32 tensors of one element (kept on the device, so the call can be captured in a CUDA graph);
    alpha, limit: SwiGLU parameters, Python or numpy numbers (limit > 0); out: optional fp8 [tokens, N/2] output,
    overlapping no input; config: the kernel's own config type, to force one (tests and sweeps), else the kernel's
    table chooses (select_config); precision: None runs the weights' own (prepare_weights), a value must be theirs.
    Contract, checked only with MOE_GATHER_DEBUG=1 (the checks read device memory: a sync, and no CUDA graph
    capture): x_scale and out_scale finite and positive, gather_indx values in [0, batch), ragged.slice_sizes
    summing to the tokens. NaN and Inf in x or bias behave as the golden reference states (NaN propagates; see
    moe_gather.reference). The call runs on x's device, on its current stream. Calls that share one `ragged` run in
    stream order: on Hopper a call of at most 4 rows splits its K tiles between programs, which count in on counters
    the metadata keeps.
    """
    tokens, half_n, kernel = check_arguments(
        x, weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config, precision
    )

    if out is None:
        out = torch.empty((tokens, half_n), dtype=torch.float8_e4m3fn, device=x.device)
    if tokens == 0:
        return out
    # Triton launches on the current device's stream: x's device made current where it is not
    elsewhere = x.device.index != torch.cuda.current_device()
    with torch.cuda.device(x.device) if elsewhere else contextlib.nullcontext():
        return kernel.launch(x, weights, bias, gather_indx, ragged, x_scale, out_scale, alpha, limit, out, config)


def run_problem(problem, weights, out: torch.Tensor | None = None, config=None) -> torch.Tensor:
    """moe_bmm1 on a moe_gather.problem.Problem (tests, benchmarks, sweeps)."""
    routing = problem.routing
    return moe_bmm1(
        problem.x, weights, problem.params.bias, routing.gather_indx, routing.ragged,
        x_scale=problem.x_scale, out_scale=problem.out_scale, alpha=problem.alpha, limit=problem.limit,
        out=out, config=config,
    )  # fmt: skip
