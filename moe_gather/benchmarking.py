"""The throughput regression gate: stored pytest-benchmark baselines per GPU model, and the verdict per case.

Baselines are pytest-benchmark's own JSON under baselines/<device-slug>/<machine id>/ (`nvidia-h200`, `nvidia-b200`;
`<slug>-fast`, `<slug>-fast-fp8` for the fast precision and its fp8 layout), each file recording the device it was
measured on in machine_info["moe_gather"]["device"]. The files are the ones pytest-benchmark's storage selects for
this machine (the plugin hands them to baseline_from): each case's baseline is the newest of them that holds it (a
save of one model's cases leaves the other's standing); a file from another device is an error, never a warning.

What pytest-benchmark cannot express, and so lives here: thresholds that depend on the case's duration, a second
measurement before a case fails, the allowance for another physical GPU of the model, and a verdict per case from
several files.

A case regresses when its median time grows past a noise-aware threshold: by default 5% for cases of 100 us or more
and 10% below (short kernels jitter more), or the baseline's own interquartile range relative to its median where
that is wider, up to MAX_SPREAD. A suspected regression is measured again before it fails. The allowed slowdown widens
by OTHER_GPU_PCT points when the baseline was measured on another physical GPU of the model (or does not record
which). On the CPU tier (synthetic benchmarks) no GPU is named and the thresholds apply as they are. The timing method
and the measured spreads behind each number: docs/gate.md.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .reference import with_precision

DEFAULT_THRESHOLDS = "5,10,100"  # percent for long cases, percent for short ones, the boundary in us
OTHER_GPU_PCT = 5.0  # points added to the allowed slowdown against a baseline from another GPU of the same model
MAX_PCT = 50.0  # a threshold above this switches the gate off rather than setting it
# A baseline's own interquartile spread widens its case's allowance up to this: the committed H200 baselines spread
# 2.1-4.6% at the most, and a wider spread means a baseline too noisy to judge by, not a licence to pass anything.
MAX_SPREAD = 0.20


def cuda_timer() -> float:
    """pytest-benchmark timer for GPU work: waits for the device, then reads the host clock, so that a round of
    graph replays is timed from its first launch to the end of its last kernel."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


# Sustained timing: the H200 at its power limit cycles its clock about once a second, so a burst times whichever phase
# it lands on; every time here is the median of rounds over a whole cycle after a warm-up (docs/gate.md).
WARMUP_S = 0.25
WINDOW_S = 1.0
ITERATIONS = 20  # calls per round: launch gaps amortised, short kernels above the timer's resolution
MIN_ROUNDS = 15


def round_seconds(fn, iterations: int = ITERATIONS) -> float:
    """One round of `iterations` calls of `fn`, timed (seconds)."""
    start = cuda_timer()
    for _ in range(iterations):
        fn()
    return cuda_timer() - start


def sustained_rounds(fn, iterations: int = ITERATIONS) -> tuple[int, int]:
    """(warm-up rounds, timed rounds) of `iterations` calls of `fn` that span WARMUP_S and WINDOW_S (at least
    MIN_ROUNDS timed), from one round timed now."""
    seconds = round_seconds(fn, iterations)
    return math.ceil(WARMUP_S / seconds), max(MIN_ROUNDS, math.ceil(WINDOW_S / seconds))


def sustained_seconds(fn, iterations: int = ITERATIONS) -> float:
    """Seconds a call of `fn` (a CUDA-graph replay, say): the median round over WINDOW_S after WARMUP_S."""
    warmup, rounds = sustained_rounds(fn, iterations)
    for _ in range(warmup):
        round_seconds(fn, iterations)
    times = sorted(round_seconds(fn, iterations) for _ in range(rounds))
    return times[len(times) // 2] / iterations


def graphed(fn):
    """`fn` captured into a CUDA graph (after one eager call: allocations and compilation stay outside the
    capture); returns the graph's replay."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def gpu_uuid() -> str | None:
    """The physical GPU under test (its UUID), None without one: a baseline records where it was measured."""
    if not torch.cuda.is_available():
        return None
    return str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)


def device_slug(device_name: str | None) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'; no GPU -> 'cpu'. The name of a device's baseline folder."""
    if not device_name:
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


def baseline_folder_name(device_name: str | None, precision: str | None = None, layout: str = "mxfp4") -> str:
    """A device's baseline folder for a precision and weight layout: the default's (None, "accurate") is
    device_slug's; another precision's has its own ('nvidia-h200-fast'), as has another layout ('nvidia-h200-fast-fp8'),
    so that their times are never judged against another's."""
    name = with_precision(device_slug(device_name), precision)
    return name if layout == "mxfp4" else f"{name}-{layout}"


class BaselineError(Exception):
    """A baseline that cannot be used: corrupted, from another device, or absent."""


@dataclass(frozen=True)
class Baseline:
    path: Path  # the newest file
    device: str
    medians: dict[str, float]  # benchmark name (test id) -> median seconds
    spreads: dict[str, float]  # benchmark name -> interquartile range / median of the baseline's rounds
    # benchmark name -> the physical GPU its file was measured on (None: not recorded, or the CPU)
    gpus: dict[str, str | None] = field(default_factory=dict)


def _parse_baseline(path, data) -> tuple[str, dict[str, float], dict[str, float], str | None]:
    """(device, medians, spreads, GPU UUID) of one saved benchmark file's JSON."""
    try:
        recorded = data["machine_info"]["moe_gather"]["device"]
        medians = {b["name"]: float(b["stats"]["median"]) for b in data["benchmarks"]}
        spreads = {b["name"]: float(b["stats"]["iqr"]) / float(b["stats"]["median"]) for b in data["benchmarks"]}
        return recorded, medians, spreads, data["machine_info"]["moe_gather"].get("gpu_uuid")
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        raise BaselineError(f"baseline {path} is corrupted or not a moe-gather benchmark file: {e!r}") from None


def _read_baseline(path: Path) -> tuple[str, dict[str, float], dict[str, float], str | None]:
    """_parse_baseline of a file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BaselineError(f"baseline {path} is corrupted or not a moe-gather benchmark file: {e!r}") from None
    return _parse_baseline(path, data)


def baseline_from(files, device_name: str | None, where: str) -> Baseline:
    """The baseline of `files` ((path, JSON) pairs, oldest first, as pytest-benchmark's storage loads them), each
    checked to come from `device_name`: every case from the newest file that holds it. `where` names the storage."""
    device = device_name or "cpu"
    files = list(files)
    if not files:
        raise BaselineError(f"no baseline for {device} in {where} (for this machine's Python): save one first")
    medians, spreads, gpus = {}, {}, {}
    for path, data in files:  # oldest first: a newer file's cases replace an older one's
        recorded, file_medians, file_spreads, gpu = _parse_baseline(path, data)
        if recorded != device:
            raise BaselineError(f"baseline {path} was measured on {recorded}, this run is on {device}")
        medians |= file_medians
        spreads |= file_spreads
        gpus |= dict.fromkeys(file_medians, gpu)
    return Baseline(Path(files[-1][0]), device, medians, spreads, gpus)


@dataclass(frozen=True)
class Thresholds:
    long_pct: float  # allowed slowdown, percent, for cases of at least boundary_us
    short_pct: float  # ... and below it
    boundary_us: float

    @classmethod
    def parse(cls, text: str) -> Thresholds:
        try:
            long_pct, short_pct, boundary = (float(v) for v in text.split(","))
        except ValueError:
            raise ValueError(f"--regression-threshold takes LONG_PCT,SHORT_PCT,BOUNDARY_US, got {text!r}") from None
        if not all(0 < pct <= MAX_PCT for pct in (long_pct, short_pct)):  # NaN fails every comparison
            raise ValueError(f"--regression-threshold: percentages must lie in (0, {MAX_PCT:g}], got {text!r}")
        if not 0 < boundary <= 1e6:
            raise ValueError(f"--regression-threshold: the boundary must lie in (0, 1e6] us, got {text!r}")
        return cls(long_pct, short_pct, boundary)

    def allowed(self, baseline_seconds: float) -> float:
        """Allowed relative slowdown for a case whose baseline median is `baseline_seconds`."""
        return (self.long_pct if baseline_seconds * 1e6 >= self.boundary_us else self.short_pct) / 100


@dataclass(frozen=True)
class Verdict:
    name: str
    baseline: float  # seconds
    measured: float  # seconds (the better of the measurements)
    allowed: float  # relative slowdown allowed
    other_gpu: bool = False  # the baseline comes from another GPU of the model: `allowed` includes OTHER_GPU_PCT

    @property
    def change(self) -> float:
        """Throughput change: +0.10 is 10% faster than the baseline."""
        return self.baseline / self.measured - 1

    @property
    def regressed(self) -> bool:
        return self.measured > self.baseline * (1 + self.allowed)

    @property
    def improved(self) -> bool:
        return self.measured < self.baseline / (1 + self.allowed)

    def __str__(self):
        word = "REGRESSED" if self.regressed else "improved" if self.improved else "within noise"
        return (  # the threshold is on the time (README); the throughput change beside it
            f"{self.name}: {self.measured * 1e6:.1f} us against {self.baseline * 1e6:.1f} us baseline, "
            f"time {self.measured / self.baseline - 1:+.1%} ({word}, allowed +{self.allowed:.0%}"
            f"{' on another GPU' if self.other_gpu else ''}), "
            f"throughput {self.change:+.1%}"
        )


def judge(
    name: str, measured: float, baseline: Baseline, thresholds: Thresholds, remeasure=None, gpu: str | None = None
) -> Verdict:
    """Compare a case's median with its baseline; the allowed slowdown is the threshold or the baseline's spread,
    whichever is wider, OTHER_GPU_PCT points more where `gpu` (this run's GPU UUID) is not the baseline's. A
    suspected regression is measured again (`remeasure()` returns seconds) and the better of the two counts. A case
    absent from the baseline raises BaselineError. The spread counts up to MAX_SPREAD."""
    if name not in baseline.medians:
        raise BaselineError(f"no baseline for {name} in {baseline.path} or any older file beside it")
    reference = baseline.medians[name]
    other_gpu = gpu is not None and gpu != baseline.gpus.get(name)
    spread = min(baseline.spreads[name], MAX_SPREAD)
    allowed = max(thresholds.allowed(reference), spread) + (OTHER_GPU_PCT / 100 if other_gpu else 0)
    verdict = Verdict(name, reference, measured, allowed, other_gpu)
    if verdict.regressed and remeasure is not None:
        verdict = Verdict(name, reference, min(measured, remeasure()), allowed, other_gpu)
    return verdict
