"""The problem as data: models, the batch ladder, test cases, and their inputs.

A Case is (model, routing mode, batch size); its id, e.g. `gpt-oss-120b-zipf-bs4096`, keys the stored benchmark
baselines, so ids never change meaning.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
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


WEIGHT_SEED = 0  # one set of expert weights per model; its seed also picks the local shard, as the seed's harness


def local_shard(model: MoEModel, seed: int = WEIGHT_SEED) -> int:
    return int(torch.randint(0, model.num_shards, (), generator=torch.Generator().manual_seed(seed)))


@dataclass(frozen=True)
class Case:
    model: MoEModel
    routing: str
    batch: int

    @property
    def id(self) -> str:
        return f"{self.model.name}-{self.routing}-bs{self.batch}"

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def __str__(self):
        return self.id


def cases(models=("gpt-oss-120b",), routings=ROUTINGS, batches: tuple[int, ...] | None = None) -> list[Case]:
    """Every (model, routing, batch) case; batches default to the model's ladder."""
    return [Case(MODELS[m], r, b) for m in models for r in routings for b in (batches or batch_sizes(MODELS[m]))]


@dataclass(frozen=True)
class ExpertParams:
    """The weights of one shard's experts: the same for every case of a model."""

    weights: MXFP4Weights  # [E_local, K, N]
    bias: torch.Tensor  # float32 [E_local, N]


def make_expert_params(model: MoEModel, device, seed: int = WEIGHT_SEED) -> ExpertParams:
    """bf16 N(0, 1) weights quantized to MXFP4 (round to nearest even), N(0, 1) fp32 bias."""
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (model.local_experts, model.hidden, model.n)
    w = torch.randn(shape, generator=g, device=device, dtype=torch.float32).to(torch.bfloat16)
    bias = torch.randn((model.local_experts, model.n), generator=g, device=device, dtype=torch.float32)
    return ExpertParams(quantize_mxfp4(w), bias)


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
        """Fewest bytes moved (../shared/anchors.md): gathered x rows, each active expert's weights, scales and
        bias once, the fp8 output."""
        m = self.case.model
        per_expert = m.hidden * m.n // 2 + m.hidden * m.n // 32 + 4 * m.n
        return self.tokens * m.hidden + self.active_experts() * per_expert + self.tokens * m.n // 2


def make_problem(case: Case, device, params: ExpertParams | None = None) -> Problem:
    """Inputs of `case` on `device`. Scalars are drawn as the seed draws them: SwiGLU alpha in [1.0, 1.2), limit in
    [1.3, 1.5), x_scale in [0.5, 1.5), out_scale in [3.5, 4.5)."""
    model = case.model
    params = params or make_expert_params(model, device)
    logits = make_logits(case.routing, case.batch, model.num_experts, model.top_k, case.seed)
    routing = route(logits.to(device), model.top_k, model.num_shards, local_shard(model))
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
