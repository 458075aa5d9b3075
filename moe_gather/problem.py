"""The problem as data: models, the batch ladder and decode sizes, parameter sets, test cases, and their inputs.

A Case is (model, routing mode, batch size, parameter set, decode or not); its id keys the stored benchmark
baselines, so ids never change meaning: `gpt-oss-120b-zipf-bs4096` (the ladder, the seed's parameters),
`gpt-oss-120b-zipf-bs4096-real` (GPT-OSS's own parameters), `gpt-oss-120b-zipf-decode-bs8` (a decode batch).

Parameter sets (PARAMS):
- `seed`: the seed's test draws: SwiGLU alpha in [1.0, 1.2), limit in [1.3, 1.5), x = e4m3(N(0, 1)), x_scale in
  [0.5, 1.5), out_scale in [3.5, 4.5).
- `real`: what GPT-OSS under an fp8 engine runs: alpha 1.702, limit 7.0; bf16 activations with a few outlier hidden
  channels, quantized to e4m3 with a per-tensor x_scale = amax / 448 (engine_activations); an out_scale calibrated
  statically, from the amax of a calibration batch's outputs (calibrated_out_scale).
A real case routes exactly as its seed twin (the same logits): only the values differ.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from itertools import chain

import torch

from .mxfp4 import MXFP4Weights, quantize_mxfp4
from .routing import ROUTINGS, Routing, make_logits, route


@dataclass(frozen=True)
class MoEModel:
    name: str
    num_experts: int
    top_k: int
    num_shards: int  # expert-parallel shards; one shard's experts are the local problem
    hidden: int  # K of BMM1
    n: int  # N of BMM1: interleaved (gate, linear) columns, 2 * intermediate size

    @property
    def local_experts(self) -> int:
        return self.num_experts // self.num_shards

    @property
    def expert_weight_bytes(self) -> int:
        """One expert's MXFP4 weights: e2m1 codes and e8m0 scales."""
        return self.hidden * self.n // 2 + self.hidden * self.n // 32


MODELS = {
    m.name: m
    for m in (
        MoEModel("gpt-oss-120b", num_experts=128, top_k=4, num_shards=8, hidden=2880, n=2 * 2880),
        MoEModel("gpt-oss-20b", num_experts=32, top_k=4, num_shards=1, hidden=2880, n=2 * 2880),
    )
}

# The seed's ladder of rows per expert: 4..7, 8..14 step 2, 16..28 step 4, 32..56 step 8, 64..112 step 16,
# then steps of 32 from 128 to 992 (48 sizes).
BATCH_PER_EXPERT = tuple(chain.from_iterable(range(2 ** (2 + i), 2 ** (3 + i), min(2**i, 32)) for i in range(8)))


def batch_sizes(model: MoEModel) -> tuple[int, ...]:
    return tuple(b * model.num_experts // model.top_k for b in BATCH_PER_EXPERT)


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """ "128,4096" -> (128, 4096): positive integers, each once; a ValueError that quotes the text otherwise."""
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"batch sizes are comma-separated integers, got {text!r}") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError(f"batch sizes are positive integers, got {text!r}")
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"batch sizes name each size once (case ids must be unique), got {text!r}")
    return sizes


# What a serving engine runs most: decode steps of a few sequences (one shard of gpt-oss-120b often gets no rows).
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64)
PARAMS = ("seed", "real")


WEIGHT_SEED = 0  # one set of expert weights per model; its seed also picks the local shard, as the seed's harness


def local_shard(model: MoEModel, seed: int = WEIGHT_SEED) -> int:
    return int(torch.randint(0, model.num_shards, (), generator=torch.Generator().manual_seed(seed)))


@dataclass(frozen=True)
class Case:
    model: MoEModel
    routing: str
    batch: int
    params: str = "seed"  # a name of PARAMS
    decode: bool = False  # a decode batch (DECODE_BATCHES): its own ids, apart from the ladder's

    def __post_init__(self):
        if self.params not in PARAMS:
            raise ValueError(f"Case: params must be one of {PARAMS}, got {self.params!r}")

    @classmethod
    def named(cls, model: MoEModel, name: str) -> Case:
        """`model`'s case a tool names by its id less the model: "zipf-bs8" (a ladder-style batch) or
        "zipf-decode-bs8" (the decode batch), at the seed's parameters."""
        routing, batch = name.split("-bs")
        return cls(model, routing.removesuffix("-decode"), int(batch), decode=routing.endswith("-decode"))

    @property
    def routing_id(self) -> str:
        """The id without the parameter set: what the routing is drawn from (a real case routes as its seed twin)."""
        return f"{self.model.name}-{self.routing}-{'decode-' if self.decode else ''}bs{self.batch}"

    @property
    def id(self) -> str:
        return self.routing_id + ("" if self.params == "seed" else f"-{self.params}")

    @property
    def seed(self) -> int:
        """The seed of the case's values (x, scalars); the routing's is routing_seed."""
        return zlib.crc32(self.id.encode())

    @property
    def routing_seed(self) -> int:
        return zlib.crc32(self.routing_id.encode())

    def __str__(self):
        return self.id


def cases(
    models=("gpt-oss-120b",),
    routings=ROUTINGS,
    batches: tuple[int, ...] | None = None,
    params=("seed",),
    decode: bool = False,
) -> list[Case]:
    """Every (model, params, routing, batch) case: batches default to the model's ladder, and `decode` adds
    DECODE_BATCHES after it (with explicit batches too)."""
    out = []
    for m in models:
        model = MODELS[m]
        sizes = [(b, False) for b in (batches or batch_sizes(model))] + [(b, True) for b in DECODE_BATCHES] * decode
        out += [Case(model, r, b, p, d) for p in params for r in routings for b, d in sizes]
    return out


@dataclass(frozen=True)
class ExpertParams:
    """The weights of one shard's experts: the same for every case of a model."""

    weights: MXFP4Weights  # [E_local, K, N]
    bias: torch.Tensor  # float32 [E_local, N]
    _calibration: dict = field(default_factory=dict, repr=False, compare=False)  # calibrated_out_scale, once


def make_expert_params(model: MoEModel, device, seed: int = WEIGHT_SEED) -> ExpertParams:
    """bf16 N(0, 1) weights quantized to MXFP4 (round to nearest even), N(0, 1) fp32 bias."""
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (model.local_experts, model.hidden, model.n)
    w = torch.randn(shape, generator=g, device=device, dtype=torch.float32).to(torch.bfloat16)
    bias = torch.randn((model.local_experts, model.n), generator=g, device=device, dtype=torch.float32)
    return ExpertParams(quantize_mxfp4(w), bias)


# ===----------------------------------------------------------------------=== #
# The `real` parameter set
# ===----------------------------------------------------------------------=== #

REAL_ALPHA = 1.702  # GPT-OSS's SwiGLU
REAL_LIMIT = 7.0
# GPT-OSS's first-matmul weights are small (std ~0.02) against activations of RMS ~1, so its pre-activations sit at
# SwiGLU's scale, O(1) to O(limit). The weights here are N(0, 1): the activations carry a small factor instead,
# chosen to put z's std at ~5 (the seed's at 27-80): the clamps cut only the tails, and the sigmoid's bend and
# (linear + 1)'s cancellation are populated. x_scale absorbs the factor: the fp8 codes are what an engine feeds.
REAL_ACTIVATION_STD = 2.0**-4
OUTLIER_CHANNELS = 4  # hidden channels 10-50x larger than the rest, as the activations of real LLMs have
OUTLIER_GAIN = (10.0, 50.0)
CALIBRATION_BATCH = 512  # tokens of the static calibration batch (uniform routing) behind out_scale


def bf16_activations(model: MoEModel, batch: int, seed: int) -> torch.Tensor:
    """bf16 [batch, K] on the CPU: N(0, REAL_ACTIVATION_STD^2), OUTLIER_CHANNELS channels (fixed per model, as a
    model's are) 10-50x larger."""
    fixed = torch.Generator().manual_seed(WEIGHT_SEED + 1)
    channels = torch.randperm(model.hidden, generator=fixed)[:OUTLIER_CHANNELS]
    lo, hi = OUTLIER_GAIN
    gains = lo + (hi - lo) * torch.rand(OUTLIER_CHANNELS, generator=fixed)
    act = torch.randn((batch, model.hidden), generator=torch.Generator().manual_seed(seed)) * REAL_ACTIVATION_STD
    act[:, channels] *= gains
    return act.to(torch.bfloat16)


def engine_activations(model: MoEModel, batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(x e4m3 [batch, K], x_scale float32 [1]) as an fp8 engine makes them from bf16_activations, on the CPU: the
    per-tensor scale x_scale = amax / 448 in fp32, x = act / x_scale in fp32, clamped to +-448 and cast (one RNE)."""
    from .reference import E4M3_MAX

    act = bf16_activations(model, batch, seed).to(torch.float32)
    x_scale = (act.abs().amax() / E4M3_MAX).reshape(1)
    return (act / x_scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), x_scale


def calibrated_out_scale(model: MoEModel, params: ExpertParams) -> torch.Tensor:
    """The `real` set's out_scale, float32 [1] on the params' device: static calibration as an fp8 engine does it, once
    per model: the amax of the outputs (before the out scale) of a calibration batch of CALIBRATION_BATCH tokens
    (uniform routing, engine activations, GPT-OSS's SwiGLU), over 448. The clamps bound y at
    limit * sigmoid(alpha * limit) * (limit + 1), which the calibration batch reaches: ~1% of the outputs of any
    batch sit on +-448, none beyond."""
    device = params.bias.device
    if device not in params._calibration:
        case = Case(model, "uniform", CALIBRATION_BATCH, "real")
        x, x_scale = engine_activations(model, CALIBRATION_BATCH, zlib.crc32(b"calibration:" + model.name.encode()))
        logits = make_logits(case.routing, case.batch, model.num_experts, model.top_k, case.routing_seed)
        routing = route(logits.to(device), model.top_k, model.num_shards, local_shard(model))
        one = torch.ones(1, device=device)
        calib = Problem(case, x.to(device), params, routing, x_scale.to(device), one, REAL_ALPHA, REAL_LIMIT)
        amax = reference_for(calib).amax
        params._calibration[device] = (amax / 448.0).to(torch.float32).reshape(1)
    return params._calibration[device]


@dataclass(frozen=True)
class Problem:
    """Everything one BMM1 call needs, on one device."""

    case: Case
    x: torch.Tensor  # float8_e4m3fn [batch, K]
    params: ExpertParams
    routing: Routing
    x_scale: torch.Tensor  # float32 [1]
    out_scale: torch.Tensor  # float32 [1]
    alpha: float
    limit: float

    @property
    def tokens(self) -> int:
        return self.routing.tokens

    def flops(self) -> int:
        return 2 * self.tokens * self.case.model.hidden * self.case.model.n

    def active_experts(self) -> int:
        return int((self.routing.ragged.slice_sizes > 0).sum())

    def bytes(self) -> int:
        """Fewest bytes moved: gathered x rows, each active expert's weights, scales and
        bias once, the fp8 output."""
        m = self.case.model
        per_expert = m.expert_weight_bytes + 4 * m.n
        return self.tokens * m.hidden + self.active_experts() * per_expert + self.tokens * m.n // 2


def make_problem(case: Case, device, params: ExpertParams | None = None) -> Problem:
    """Inputs of `case` on `device`, as its parameter set makes them (module docstring). Seed scalars are drawn as
    the seed draws them: SwiGLU alpha in [1.0, 1.2), limit in [1.3, 1.5), x_scale in [0.5, 1.5), out_scale in
    [3.5, 4.5)."""
    model = case.model
    params = params or make_expert_params(model, device)
    logits = make_logits(case.routing, case.batch, model.num_experts, model.top_k, case.routing_seed)
    routing = route(logits.to(device), model.top_k, model.num_shards, local_shard(model))
    if case.params == "real":
        x, x_scale = engine_activations(model, case.batch, case.seed + 1)
        out_scale = calibrated_out_scale(model, params)
        return Problem(case, x.to(device), params, routing, x_scale.to(device), out_scale, REAL_ALPHA, REAL_LIMIT)
    g = torch.Generator().manual_seed(case.seed + 1)
    x = torch.randn((case.batch, model.hidden), generator=g).to(torch.float8_e4m3fn).to(device)
    alpha = 1.0 + float(torch.rand((), generator=g)) / 5
    limit = 1.3 + float(torch.rand((), generator=g)) / 5
    x_scale = (torch.rand(1, generator=g) + 0.5).to(device)
    out_scale = (torch.rand(1, generator=g) + 3.5).to(device)
    return Problem(case, x, params, routing, x_scale, out_scale, alpha, limit)


def reference_for(problem: Problem):
    """The golden reference of a problem (see reference.moe_bmm1_reference)."""
    from .reference import moe_bmm1_reference

    return moe_bmm1_reference(
        problem.x,
        problem.params.weights,
        problem.params.bias,
        problem.routing.gather_indx,
        problem.routing.ragged.slice_sizes,
        x_scale=problem.x_scale,
        out_scale=problem.out_scale,
        alpha=problem.alpha,
        limit=problem.limit,
    )
