"""Routing: router logits, top-k with softmax, the local expert shard, its gather indices and ragged metadata.

Pure torch, on the CPU or a GPU. Logits are drawn from a CPU generator, so that a (case, seed) routes the same on
every machine; routing itself runs on whatever device the logits are moved to, with a stable sort (ties go to the
lower expert id) so that CPU and GPU agree.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field

import torch

BLOCK_SIZES = (8, 16, 32, 64, 128)  # block_schedule's tile sizes; others on demand (RaggedMetadata.schedule)
SCHEDULE_PID_SHIFT = 16  # schedule entry = slice | pid_m << 16, as in the seed
SCHEDULE_UNUSED = -1  # padding of the schedule past its last block
INT32_MAX = 2**31 - 1
DEBUG_ENV = "MOE_GATHER_DEBUG"  # "1": also check what costs a device sync (as moe_gather.bmm1)


@dataclass(frozen=True)
class ZipfRouting:
    """The seed's production-like router logits: a stable Zipf popularity over randomly permuted expert ids,
    token clusters that prefer a few experts, a few experts hot for this batch, Gumbel noise (so top-k acts like
    weighted sampling without replacement)."""

    zipf_alpha: float = 1.10
    num_clusters: int = 16
    cluster_boost: float = 1.25
    batch_hot_experts: int = 4
    batch_hot_boost: float = 0.6
    gumbel_scale: float = 0.75

    def logits(self, batch: int, num_experts: int, top_k: int, g: torch.Generator) -> torch.Tensor:
        ranks = torch.arange(1, num_experts + 1, dtype=torch.float32)
        ranked = ranks.pow(-self.zipf_alpha)
        ranked /= ranked.sum()
        popularity = torch.empty_like(ranked)
        popularity[torch.randperm(num_experts, generator=g)] = ranked
        logits = popularity.clamp_min(1e-12).log().expand(batch, -1).clone()

        cluster_size = min(num_experts, max(2 * top_k, num_experts // 16))
        preferred = torch.stack(
            [torch.multinomial(popularity, cluster_size, generator=g) for _ in range(self.num_clusters)]
        )
        token_cluster = torch.randint(self.num_clusters, (batch,), generator=g)
        logits[torch.arange(batch)[:, None], preferred[token_cluster]] += self.cluster_boost

        if self.batch_hot_experts:
            hot = torch.multinomial(popularity, self.batch_hot_experts, generator=g)
            logits[:, hot] += self.batch_hot_boost

        gumbel = -torch.empty_like(logits).exponential_(generator=g).log()
        return (logits + self.gumbel_scale * gumbel).to(torch.float16)


def uniform_logits(batch: int, num_experts: int, g: torch.Generator) -> torch.Tensor:
    return torch.randn((batch, num_experts), generator=g).to(torch.float16)


ROUTINGS = ("zipf", "uniform")


def make_logits(routing: str, batch: int, num_experts: int, top_k: int, seed: int) -> torch.Tensor:
    """fp16 [batch, num_experts] router logits on the CPU, deterministic for (routing, shapes, seed)."""
    g = torch.Generator().manual_seed(seed)
    if routing == "zipf":
        return ZipfRouting().logits(batch, num_experts, top_k, g)
    if routing == "uniform":
        return uniform_logits(batch, num_experts, g)
    raise ValueError(f"routing must be one of {ROUTINGS}, got {routing!r}")


def max_blocks(n_slices: int, tokens: int, block_m: int) -> int:
    """Upper bound on sum(cdiv(slice_sizes, block_m)) from shapes alone (no device sync): each non-empty slice
    holds one block plus floor((size - 1) / block_m) more, at most min(n_slices, tokens) slices are non-empty."""
    nonempty = min(n_slices, tokens)
    return nonempty + (tokens - nonempty) // block_m


@dataclass(frozen=True)
class RaggedMetadata:
    """Where each local expert's rows lie in the expert-sorted token order, and the tiles over them."""

    slice_sizes: torch.Tensor  # int32 [E]: rows routed to each local expert
    slice_offs: torch.Tensor  # int32 [E + 1]: exclusive prefix sum of slice_sizes
    expected_slice_size: int  # batch * top_k / num_experts: the seed's and triton_kernels' config key
    tokens: int  # rows of this call: sum of slice_sizes, the gather indices' length
    block_offs: dict[int, torch.Tensor] = field(repr=False)  # BLOCK_M -> int32 [E + 1], prefix sum of cdiv
    block_schedule: dict[int, torch.Tensor] = field(repr=False)  # BLOCK_M -> int32 [max_blocks]: slice | pid_m << 16
    _buckets: dict = field(default_factory=dict, repr=False, compare=False)  # what _once keeps

    @property
    def n_slices(self) -> int:
        return self.slice_sizes.shape[0]

    @property
    def local_slice_size(self) -> int:
        """Rows of this call per local slice, rounded up: known on the host (tokens is the gather indices' length),
        and under skewed routing a better guess of a slice's rows than the global expected_slice_size (zipf-bs4096
        on gpt-oss-120b: 244 local rows, 15 per slice, where batch * top_k / num_experts is 128)."""
        return -(-self.tokens // max(self.n_slices, 1))

    def _once(self, key, make):
        """make() once per key, kept for the calls after; a value made under a CUDA graph's capture exists only in that
        graph's replays, and is not kept (an eager call, or another graph, makes its own)."""
        if key in self._buckets:
            return self._buckets[key]
        value = make()
        if not (torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()):
            self._buckets[key] = value
        return value

    def bucket_schedules(self, split_at: int, small_m: int, large_m: int, extra: int = 0):
        """Two schedules over the slices for skewed routing, where one hot expert holds many rows and the rest few:
        slices of at most `split_at` rows tiled by small_m (a slice's last tile up to `extra` rows wider, as
        schedule()), the larger ones by large_m (each schedule leaves the other's slices out). On the device,
        without a sync; computed once per argument set (so that a CUDA graph captured after a first call replays no
        host work)."""

        def make():
            n, tokens, small = self.n_slices, self.tokens, self.slice_sizes <= split_at
            few = min(n, tokens // (split_at + 1))  # slices that can hold more than split_at rows
            small_bound = min(max_blocks(n, tokens, small_m), n * -(-split_at // small_m))
            return (
                _tile(torch.where(small, self.slice_sizes, 0), small_m, small_bound, tokens, extra)[1],
                _tile(torch.where(small, 0, self.slice_sizes), large_m, max_blocks(few, tokens, large_m), tokens)[1],
            )

        return self._once((split_at, small_m, large_m, extra), make)

    def schedule(self, block_m: int, extra: int = 0) -> torch.Tensor:
        """block_schedule[block_m], or with `extra` the schedule whose slices' last tiles take up to `extra` rows
        past block_m instead of a tile of their own (Sm90Config.tail_rows; on the device, without a sync, once); a
        block_m block_schedule does not hold (Sm90Config.wide_tiles' block_m + tail_rows) likewise made once."""
        if not extra and block_m in self.block_schedule:
            return self.block_schedule[block_m]

        def make():
            bound = max_blocks(self.n_slices, self.tokens, block_m)
            return _tile(self.slice_sizes, block_m, bound, self.tokens, extra)[1]

        return self._once(("schedule", block_m, extra), make)

    def arrivals(self, tiles: int) -> torch.Tensor:
        """int32 zeros [tiles] on the device, made once per metadata: the counters a launch's K splits arrive on (the
        last one of each tile sets its counter back to zero). Launches that share them run in stream order: two
        concurrent launches on one metadata (on two streams) would share counters."""
        make = lambda: torch.zeros(tiles, dtype=torch.int32, device=self.slice_sizes.device)
        return self._once(("arrivals", tiles), make)

    def split_sums(self, count: int) -> torch.Tensor:
        """fp32 [count] on the device, made once per metadata: the K splits' sums (each split stores its own before it
        arrives, so nothing earlier is read). Shared in stream order, as arrivals()."""
        make = lambda: torch.empty(count, dtype=torch.float32, device=self.slice_sizes.device)
        return self._once(("split_sums", count), make)

    def widest_first(self, block_m: int, extra: int = 0) -> torch.Tensor:
        """schedule(block_m, extra) ordered by the rows each tile holds, most first (stable: among equals, slices and
        their tiles keep their order), so that slices' last tiles, narrower and cheaper than whole ones, run in the
        grid's last wave. On the device, without a sync; once per (block_m, extra)."""

        def make():
            schedule = self.schedule(block_m, extra)
            if not self.n_slices:
                return schedule
            return schedule[torch.sort(self._tile_rows(block_m, extra), descending=True, stable=True).indices]

        return self._once(("widest_first", block_m, extra), make)

    def by_width(self, block_m: int) -> torch.Tensor:
        """schedule(block_m) in three groups, its tiles of more than block_m / 2 rows, of more than block_m / 4, then
        the rest (width_bounds' phases), each in the schedule's order (stable): a slice's tiles of one group stay
        together, so that its weights are read from L2 for the tiles after its first. On the device, without a sync;
        once per block_m."""

        def make():
            schedule = self.schedule(block_m)
            if not self.n_slices:
                return schedule
            return schedule[torch.sort(self._width_phases(block_m), stable=True).indices]

        return self._once(("by_width", block_m), make)

    def width_bounds(self, block_m: int) -> torch.Tensor:
        """int32 [3] on the device: by_width(block_m)'s (or widest_first's) tiles of more than block_m / 2 rows, of
        more than block_m / 4, and all of them (where each narrower width's tiles begin, and the end); without a sync,
        once."""

        def make():
            phases = self._width_phases(block_m)
            return torch.stack([(phases <= phase).sum() for phase in range(3)]).to(torch.int32)

        return self._once(("width_bounds", block_m), make)

    def _width_phases(self, block_m: int) -> torch.Tensor:
        """Each tile of schedule(block_m)'s phase: 0 over block_m / 2 rows, 1 over block_m / 4, 2 the rest, 3 unused."""
        rows = self._tile_rows(block_m, 0)
        return (rows <= block_m // 2).int() + (rows <= block_m // 4).int() + (rows <= 0).int()

    def _tile_rows(self, block_m: int, extra: int) -> torch.Tensor:
        """The rows each tile of schedule(block_m, extra) holds (block_m for a slice's whole tiles), -1 past the end."""
        schedule = self.schedule(block_m, extra)
        expert = (schedule & ((1 << SCHEDULE_PID_SHIFT) - 1)).clamp(max=max(self.n_slices - 1, 0))
        rows = self.slice_sizes[expert] - (schedule >> SCHEDULE_PID_SHIFT) * block_m
        rows = torch.where(rows > block_m + extra, block_m, rows)
        return torch.where(schedule == SCHEDULE_UNUSED, -1, rows)


def _tile(
    sizes: torch.Tensor, block_m: int, bound: int, tokens: int, extra: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Slices of `sizes` tiled by block_m: (block offsets [E + 1], schedule [bound] of slice | pid_m << 16, -1 past
    the last block), on the sizes' device, without a sync. `bound` must hold every block. `extra`: a slice's last
    tile takes up to that many rows past block_m (a slice of block_m + extra rows is one tile)."""
    if bound >= 1 << (31 - SCHEDULE_PID_SHIFT):
        raise ValueError(f"{tokens} rows need {bound} blocks of {block_m}: pid_m overflows the packed schedule")
    n = sizes.shape[0]
    zero = torch.zeros(1, dtype=torch.int32, device=sizes.device)
    counts = (sizes - extra + block_m - 1) // block_m
    if extra:  # a slice of at most block_m + extra rows is still one tile
        counts = torch.where(sizes > 0, counts.clamp(min=1), 0)
    offs = torch.cat((zero, counts.cumsum(0, dtype=torch.int32)))
    j = torch.arange(bound, dtype=torch.int32, device=sizes.device)
    slice_of_block = torch.searchsorted(offs[1:], j, right=True).to(torch.int32).clamp(max=max(n - 1, 0))
    pid_m = j - offs[slice_of_block] if n else j
    packed = slice_of_block | (pid_m << SCHEDULE_PID_SHIFT)
    return offs, torch.where(j < offs[-1], packed, SCHEDULE_UNUSED).to(torch.int32)


def _count(name: str, value) -> int:
    """A host-side count: a Python or numpy integer >= 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def make_ragged_metadata(slice_sizes: torch.Tensor, tokens: int, expected_slice_size: int) -> RaggedMetadata:
    """Ragged metadata from slice sizes, on their device, without a host sync (`tokens` is the sum, known from
    the gather indices' shape). slice_sizes: a 1-D integer tensor; its values (>= 0, within int32, summing to
    `tokens`) are checked where reading them costs no device sync, on the CPU, and on a GPU with MOE_GATHER_DEBUG=1."""
    if not isinstance(slice_sizes, torch.Tensor) or slice_sizes.ndim != 1:
        raise ValueError(f"slice_sizes must be a 1-D tensor, got {getattr(slice_sizes, 'shape', type(slice_sizes))}")
    if slice_sizes.dtype.is_floating_point or slice_sizes.dtype.is_complex or slice_sizes.dtype == torch.bool:
        raise ValueError(f"slice_sizes must hold integers, got {slice_sizes.dtype}")
    tokens, expected_slice_size = _count("tokens", tokens), _count("expected_slice_size", expected_slice_size)
    if slice_sizes.device.type == "cpu" or os.environ.get(DEBUG_ENV) == "1":
        if slice_sizes.numel() and (int(slice_sizes.min()) < 0 or int(slice_sizes.max()) > INT32_MAX):
            raise ValueError(f"slice_sizes must lie in [0, {INT32_MAX}], got {slice_sizes.tolist()}")
        if int(slice_sizes.sum()) != tokens:
            raise ValueError(f"slice_sizes sum to {int(slice_sizes.sum())}, not tokens = {tokens}")
    n = slice_sizes.shape[0]
    if n >= 1 << SCHEDULE_PID_SHIFT:
        raise ValueError(f"at most {(1 << SCHEDULE_PID_SHIFT) - 1} slices fit the packed schedule, got {n}")
    sizes = slice_sizes.to(torch.int32)
    zero = torch.zeros(1, dtype=torch.int32, device=sizes.device)
    slice_offs = torch.cat((zero, sizes.cumsum(0, dtype=torch.int32)))
    block_offs, block_schedule = {}, {}
    for block_m in BLOCK_SIZES:
        block_offs[block_m], block_schedule[block_m] = _tile(sizes, block_m, max_blocks(n, tokens, block_m), tokens)
    return RaggedMetadata(sizes, slice_offs, expected_slice_size, tokens, block_offs, block_schedule)


@dataclass(frozen=True)
class Routing:
    """One batch routed, seen from one expert shard."""

    expert_ids: torch.Tensor  # int32 [batch, top_k], global expert ids, best first
    expert_weights: torch.Tensor  # float32 [batch, top_k], softmax over the selected logits
    local_shard: int
    local_experts: range  # global ids of the shard's experts
    gather_indx: torch.Tensor  # int32 [tokens]: x row of each local output row, expert-sorted, tokens ascending
    ragged: RaggedMetadata

    @property
    def tokens(self) -> int:
        return self.gather_indx.shape[0]


def topk_softmax(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k experts per token (stable: ties go to the lower id) and the softmax of their logits (float32)."""
    values, ids = torch.sort(logits, dim=1, descending=True, stable=True)
    return ids[:, :top_k].to(torch.int32), torch.softmax(values[:, :top_k].to(torch.float32), dim=1)


def route(logits: torch.Tensor, top_k: int, num_shards: int, local_shard: int) -> Routing:
    """Route every token to its top-k experts and keep the rows of `local_shard`'s experts (contiguous ids,
    shard i owns [i * E / shards, (i + 1) * E / shards), as triton_kernels' make_expt_dict_uniform)."""
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or not logits.dtype.is_floating_point:
        got = f"{logits.dtype} of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor) else type(logits)
        raise ValueError(f"logits must be a 2-D floating-point tensor [batch, experts], got {got}")
    batch, num_experts = logits.shape
    num_shards = _count("num_shards", num_shards)
    if not 1 <= _count("top_k", top_k) <= num_experts:
        raise ValueError(f"top_k must be in [1, {num_experts}] (the experts), got {top_k}")
    if num_shards == 0 or num_experts % num_shards:
        raise ValueError(f"num_shards must divide the {num_experts} experts, got {num_shards}")
    if not 0 <= _count("local_shard", local_shard) < num_shards:
        raise ValueError(f"local_shard must be in [0, {num_shards}), got {local_shard}")
    if bool(torch.isnan(logits).any()):  # a sync; routing is host-driven anyway (bincount, shapes)
        raise ValueError("logits hold NaN: top-k of NaN is no routing")
    ids, weights = topk_softmax(logits, top_k)
    per_shard = num_experts // num_shards
    first = local_shard * per_shard
    flat = ids.flatten().long()
    token = torch.arange(batch, device=logits.device).repeat_interleave(top_k)
    local = (flat >= first) & (flat < first + per_shard)
    local_expert, local_token = flat[local] - first, token[local]
    order = torch.argsort(local_expert * batch + local_token, stable=True)
    gather_indx = local_token[order].to(torch.int32)
    slice_sizes = torch.bincount(local_expert, minlength=per_shard).to(torch.int32)
    ragged = make_ragged_metadata(slice_sizes, gather_indx.shape[0], batch * top_k // num_experts)
    return Routing(ids, weights, local_shard, range(first, first + per_shard), gather_indx, ragged)
