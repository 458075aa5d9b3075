"""The public call: GPT-OSS MoE BMM1 with a fused gather, MXFP4 weights, bias, SwiGLU and an fp8 output.

Dispatch on the device's compute capability to an architecture's kernel (its host launcher and config table live in
its own private module). Semantics: exactly moe_gather.reference.moe_bmm1_reference.
"""

from __future__ import annotations

_KERNELS: dict[int, object] = {}  # compute capability major -> kernel module


def has_kernel(capability: tuple[int, int] | None) -> bool:
    return capability is not None and capability[0] in _KERNELS
