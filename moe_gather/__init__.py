"""moe-gather: the GPT-OSS MoE first matmul (BMM1) with a fused gather, MXFP4 weights, fused SwiGLU and fp8 out.

Layers point one way: the public call (bmm1) -> per-architecture kernels (_sm90, _sm100) -> shared pieces
(_epilogue, _table, mxfp4, routing).
The golden reference (reference) and the problem as data (problem) sit beside them; the pytest plugin
(pytest_plugin) drives the suites in suites/.
"""

from .mxfp4 import MXFP4Weights, dequantize_mxfp4, quantize_mxfp4
from .problem import MODELS, Case, MoEModel, Problem, batch_sizes, cases, make_problem
from .reference import assert_close, compare_fp8, moe_bmm1_reference
from .routing import RaggedMetadata, Routing, make_logits, make_ragged_metadata, route

__all__ = [
    "MODELS",
    "Case",
    "MXFP4Weights",
    "MoEModel",
    "Problem",
    "RaggedMetadata",
    "Routing",
    "assert_close",
    "batch_sizes",
    "cases",
    "compare_fp8",
    "dequantize_mxfp4",
    "make_logits",
    "make_problem",
    "make_ragged_metadata",
    "moe_bmm1_reference",
    "quantize_mxfp4",
    "route",
]
