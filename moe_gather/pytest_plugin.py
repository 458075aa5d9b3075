"""moe-gather's pytest plugin: the GPT-OSS BMM1 cases, the GPU under test, and the tiers.

Enabled by this repository's conftest.py (`pytest_plugins`), or in any run with `-p moe_gather.pytest_plugin`;
installing moe-gather changes nothing in another project's pytest run (no entry point: none of its options, timer,
storage or imports). Enabled elsewhere, it leaves that project's own tests and benchmarks as they are: it parametrizes
`case` only where no fixture or parametrize of that name exists, and the throughput gate (below) takes pytest-
benchmark's storage, timer and compare only where the ini option `moe_gather_gate` is true, as this repository's
pyproject.toml sets it. Measured on a 2-core CPU machine, `pytest --collect-only` of a one-test project beside pytest-
benchmark, median of 5 runs: 0.77-0.81 s with moe-gather installed, 0.75 s without; importing this module, and torch
and triton with it, takes 1.4 s, which a pytest11 entry point would add to every run; this repository's suites collect
in 2.9 s.

Options
    --gpu {auto,hopper,blackwell,cpu}   which kernel tier to test (default auto).
        auto       the GPU present decides: compute capability 9.x -> hopper, 10.x -> blackwell; no CUDA device ->
                   cpu (the header says so); a GPU with no kernel stops the run with a usage error naming it.
        hopper     requires an sm_90 GPU, blackwell requires an sm_100-class GPU; anything else stops the run
                   with a usage error naming what was found (never a green run that tested nothing).
        cpu        the CPU tier only: GPU tests skip, saying so.
    --routing {zipf,uniform,all}        routing modes to parametrize (default all).
    --model {gpt-oss-120b,gpt-oss-20b,all}   models to parametrize (default gpt-oss-120b).
    --params {seed,real,all}            parameter sets (default all): the seed's draws, or GPT-OSS's own (SwiGLU
                                        1.702 / 7.0, engine-quantized activations, a calibrated out scale).
    --batch-sizes 128,4096              batch sizes (default: the model's 48-size ladder and the decode batches
                                        1, 2, 4, 8, 16, 32, 64). Given sizes make ladder-style cases (`...-bs8`,
                                        other inputs than `...-decode-bs8`); select decode cases with -k decode.
    --precision {default,accurate,fast} the kernel's precision (default: prepare_weights' choice, "accurate").
    --layout {mxfp4,fp8}                the weights' layout; fp8 adds the fast precision's folded bytes (needs
                                        --precision fast; a usage error otherwise).

Tests ask for the `case` fixture to be parametrized over every selected (model, params, routing, batch) with ids
like `gpt-oss-120b-zipf-bs4096`, `gpt-oss-120b-zipf-bs4096-real` and `gpt-oss-120b-zipf-decode-bs8` (220 cases for
gpt-oss-120b: 48 ladder and 7 decode batches, two routings, two parameter sets); a test marked `params("seed")`
runs at those parameter sets only. `problem` gives that case's inputs on the GPU under test and `reference` its
golden reference (both built once per case and session, within a memory budget; expert weights once per model).
`record_agreement(source)` gives a callback for reference.check_against that reports the case's accuracy.
`gpu` gives the resolved GpuTarget.

Throughput gate (ini `moe_gather_gate = true`, else its options below are a usage error and pytest-benchmark stays
the project's own; pytest-benchmark: without it the benchmark tests skip, saying so, and the rest runs as ever)
    --benchmark-compare[=NUM]           compare with the stored baselines of the GPU under test, the files that
                                        pytest-benchmark's storage holds for this machine (its --benchmark-storage,
                                        by default <rootdir>/baselines/<gpu>/, <gpu>-fast/ with --precision fast,
                                        <gpu>-fast-fp8/ with --layout fp8 too, and its machine-id folder): each case
                                        against the newest file that holds it (pytest-benchmark itself shows the
                                        newest), or with NUM against that file alone. A case with no baseline fails, a
                                        baseline from another device is a usage error, a case slower than its
                                        threshold is measured again, then fails.
    --regression-threshold 5,10,100     allowed slowdown: 5% for cases of at least 100 us, 10% below (default); each
                                        percentage in (0, 50], the boundary in (0, 10^6] us. A baseline's own spread
                                        widens it up to MAX_SPREAD; 5 points more against a baseline saved on another
                                        GPU of the model (its UUID).
    --baselines-dir DIR                 where the per-GPU baseline folders are (default: <rootdir>/baselines); an
                                        explicit --benchmark-storage wins.
    --benchmark-save NAME               save this run as a new baseline; refused when any test failed.
    --benchmark-plot PATH               write a PNG of throughput against batch size, gate on or off (needs
                                        matplotlib: the `plot` extra; its absence is a usage error before any test
                                        runs).
    Benchmarks time CUDA-graph replays of one call with a timer that synchronizes the device
    (moe_gather.benchmarking.cuda_timer) on the GPU tiers; the CPU tier leaves pytest-benchmark's timer and storage
    as they are. Under pytest-xdist pytest-benchmark disables itself: the benchmark tests then skip, saying so; run
    correctness in parallel (-n) and benchmarks in one process per GPU.

Markers
    gpu          needs a CUDA GPU with a kernel tier (hopper or blackwell); skipped on the CPU tier with the reason.
    hopper       needs the hopper tier.      blackwell   needs the blackwell tier.
    benchmark    a throughput measurement (pytest-benchmark's marker; registered here only without it).
    params(*names)   the parameter sets whose cases the test takes (the throughput gate: seed only).

Summary: per case, the accuracy of the kernel beside the peer's (bitwise-equal fraction, worst ulp, worst scaled
error and the fraction over 1: moe_gather.reference.scaled_errors), then the throughput table.
    --accuracy-json PATH                also write those figures, with each test's outcome, as JSON.

pytest-xdist: each worker takes one GPU (worker i of n gets GPU i mod count), set through CUDA_VISIBLE_DEVICES
before CUDA initialises in the worker; with --dist loadgroup each case's tests run on one worker (its inputs and
reference built once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import triton  # imported here, once: pytester's in-process runs cannot re-import its native module

from . import benchmarking
from ._sm90_layout import LAYOUTS, PRECISIONS, layout_refusal  # the sm90 kernel's precisions (others') and layouts
from .problem import MODELS, PARAMS, cases, parse_batch_sizes
from .routing import ROUTINGS

ARCH_BY_MAJOR = {9: "hopper", 10: "blackwell"}  # compute capability major -> kernel tier
TIERS = ("auto", "hopper", "blackwell", "cpu")
_TARGET = pytest.StashKey["GpuTarget"]()
_GATE = pytest.StashKey["Gate | None"]()
_REFUSED = pytest.StashKey[int]()  # tests failed in a run asked to save a baseline
_THRESHOLDS = pytest.StashKey["benchmarking.Thresholds"]()


@dataclass(frozen=True)
class GpuTarget:
    tier: str  # "hopper", "blackwell" or "cpu"
    name: str | None = None  # device name, None without a CUDA device
    capability: tuple[int, int] | None = None
    why_cpu: str = ""  # why the tier is cpu

    @property
    def measured(self) -> str | None:
        """The device this run's benchmarks measure and its baselines belong to: None (the CPU) on the cpu tier,
        also where a GPU is present (the synthetic benchmarks of the plugin's own tests)."""
        return None if self.tier == "cpu" else self.name

    @property
    def found(self) -> str:
        if self.name is None:
            return "no CUDA device"
        return f"{self.name} (sm_{self.capability[0]}{self.capability[1]})"


def detect_gpu() -> tuple[str, tuple[int, int]] | None:
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(), torch.cuda.get_device_capability()


def resolve_target(requested: str, found) -> GpuTarget:
    """--gpu value and the detected device -> GpuTarget; raises pytest.UsageError when they disagree."""
    name, capability = found if found else (None, None)
    arch = ARCH_BY_MAJOR.get(capability[0]) if capability else None
    target = GpuTarget(arch or "cpu", name, capability)
    if requested == "cpu":
        return GpuTarget("cpu", name, capability, "--gpu cpu: CPU tier only")
    if requested == "auto":
        if name is None:
            return GpuTarget("cpu", None, None, "no CUDA device")
        if arch is None:
            raise pytest.UsageError(
                f"--gpu auto: moe-gather has no kernel for {target.found}; --gpu cpu runs the CPU tier only"
            )
        return target
    if arch != requested:
        raise pytest.UsageError(f"--gpu {requested} needs a {requested.capitalize()} GPU, found {target.found}")
    return target


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def _parse_batch_sizes(text: str) -> tuple[int, ...]:
    try:
        return parse_batch_sizes(text)
    except ValueError as e:
        raise pytest.UsageError(f"--batch-sizes: {e}") from None


def pytest_addoption(parser):
    group = parser.getgroup("moe-gather")
    group.addoption("--gpu", choices=TIERS, default="auto", help="kernel tier to test (default: auto)")
    group.addoption("--routing", choices=(*ROUTINGS, "all"), default="all", help="routing modes (default: all)")
    group.addoption("--model", choices=(*MODELS, "all"), default="gpt-oss-120b", help="models (default: 120b)")
    group.addoption("--params", choices=(*PARAMS, "all"), default="all", help="parameter sets (default: all)")
    group.addoption("--batch-sizes", default=None, help="comma-separated batch sizes (default: the ladder)")
    group.addoption(
        "--precision",
        choices=("default", *PRECISIONS),  # the union of the kernels' (the plugin loads no kernel module)
        default="default",
        help="the kernel's precision (default: prepare_weights' own choice)",
    )
    group.addoption(
        "--layout",
        choices=LAYOUTS,
        default="mxfp4",
        help="the weights' layout: fp8 holds the fast precision's folded bytes beside the codes (default: mxfp4)",
    )
    group.addoption("--baselines-dir", default=None, help="per-GPU baseline folders (default: <rootdir>/baselines)")
    group.addoption(
        "--regression-threshold",
        default=None,
        help=f"LONG_PCT,SHORT_PCT,BOUNDARY_US: allowed slowdown (default: {benchmarking.DEFAULT_THRESHOLDS})",
    )
    group.addoption("--benchmark-plot", default=None, metavar="PATH", help="write a throughput plot (PNG) here")
    group.addoption(
        "--accuracy-json", default=None, metavar="PATH", help="write each case's recorded accuracy (JSON) here"
    )
    parser.addini(
        "moe_gather_gate",
        type="bool",
        default=False,
        help="the throughput gate takes pytest-benchmark's storage, timer and compare (moe-gather's own suites)",
    )


def _pin_xdist_worker_gpu(config):
    """Under pytest-xdist, give this worker its own GPU before anything initialises CUDA."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    gpus = getattr(config, "workerinput", {}).get("moe_gather_gpus")
    if worker and gpus:
        index = int(worker.removeprefix("gw"))
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: tell each worker the GPUs to choose from (the controller's visible devices)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        visible = ",".join(str(i) for i in range(torch.cuda.device_count()))
    node.workerinput["moe_gather_gpus"] = [g for g in visible.split(",") if g.strip()]


def pytest_configure(config):
    markers = [
        "gpu: needs a CUDA GPU with a kernel tier (skipped on the CPU tier, with the reason)",
        "hopper: needs the hopper tier (sm_90)",
        "blackwell: needs the blackwell tier (sm_100)",
        "params(*names): the parameter sets whose cases the test takes",
    ]
    if not config.pluginmanager.hasplugin("benchmark"):  # pytest-benchmark registers its own
        markers.append("benchmark: a throughput measurement (pytest-benchmark is absent: these skip)")
    for marker in markers:
        config.addinivalue_line("markers", marker)
    if config.getoption("batch_sizes") is not None:
        _parse_batch_sizes(config.getoption("batch_sizes"))
    refusal = layout_refusal(config.getoption("layout"), chosen_precision(config.getoption("precision")))
    if refusal:
        raise pytest.UsageError(refusal)
    if config.getoption("benchmark_plot"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise pytest.UsageError("--benchmark-plot needs matplotlib: pip install 'moe-gather[plot]'") from None
    try:
        thresholds = config.getoption("regression_threshold") or benchmarking.DEFAULT_THRESHOLDS
        config.stash[_THRESHOLDS] = benchmarking.Thresholds.parse(thresholds)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    gated = gate_on(config)
    if not gated:
        given = [f"--{name.replace('_', '-')}" for name in _GATE_OPTIONS if config.getoption(name) is not None]
        if given:
            raise pytest.UsageError(f"{', '.join(given)}: the throughput gate is off here (ini moe_gather_gate)")
    _pin_xdist_worker_gpu(config)
    target = config.stash[_TARGET] = resolve_target(config.getoption("gpu"), detect_gpu())
    config.stash[_GATE] = None
    if gated:  # its hooks into pytest-benchmark exist only here: where the gate is off, none of them run
        config.pluginmanager.register(_GateHooks(), "moe_gather_gate")
        if config.pluginmanager.hasplugin("benchmark"):
            _configure_benchmarks(config, target)


_GATE_OPTIONS = ("regression_threshold", "baselines_dir")  # the gate's own: a usage error where it is off


def gate_on(config) -> bool:
    """The project asked for the throughput gate (ini moe_gather_gate): elsewhere pytest-benchmark stays its own."""
    return config.getini("moe_gather_gate")


@dataclass
class Gate:
    baseline: benchmarking.Baseline
    thresholds: benchmarking.Thresholds
    gpu: str | None  # this run's GPU UUID (None on the CPU tier)


def baseline_folder(precision_option: str, device: str | None, layout: str = "mxfp4") -> str:
    """The baselines folder of --precision ("default": the Hopper kernel's default precision) and --layout on
    `device`."""
    return benchmarking.baseline_folder_name(device, chosen_precision(precision_option), layout)


def chosen_precision(option: str) -> str:
    """--precision resolved: "default" is the Hopper kernel's default precision."""
    from ._sm90_config import DEFAULT_PRECISION

    return DEFAULT_PRECISION if option == "default" else option


def _configure_benchmarks(config, target: GpuTarget):
    """Before pytest-benchmark reads its options: on a GPU tier, store under baselines/<gpu> (<gpu>-fast with
    --precision fast, <gpu>-fast-fp8 with --layout fp8 too; unless --benchmark-storage is given) and time with a
    device-synchronizing timer (unless --benchmark-timer is). The baselines load at session start, from the files
    pytest-benchmark's storage selects."""
    if target.measured is not None:
        folder = Path(config.getoption("baselines_dir") or config.rootpath / "baselines")
        folder = config.rootpath / folder if not folder.is_absolute() else folder
        if config.getoption("benchmark_storage") == "file://./.benchmarks":  # pytest-benchmark's default: not chosen
            name = baseline_folder(config.getoption("precision"), target.measured, config.getoption("layout"))
            config.option.benchmark_storage = f"file://{folder / name}"
        if config.getoption("benchmark_timer") == "time.perf_counter":
            config.option.benchmark_timer = "moe_gather.benchmarking.cuda_timer"
    if config.getoption("benchmark_compare_fail"):
        raise pytest.UsageError(
            "--benchmark-compare-fail compares with pytest-benchmark's newest file only; the gate judges every case "
            "against the newest file that holds it: use --benchmark-compare with --regression-threshold"
        )
    compare = config.getoption("benchmark_compare")
    if compare:
        try:
            baseline = _stored_baseline(config.getoption("benchmark_storage"), compare, target.measured)
        except benchmarking.BaselineError as e:
            raise pytest.UsageError(f"--benchmark-compare: {e}") from None
        config.stash[_GATE] = Gate(baseline, config.stash[_THRESHOLDS], _measured_gpu(target))


def _stored_baseline(storage: str, compare, device: str | None) -> benchmarking.Baseline:
    """The gate's baseline from the files pytest-benchmark will compare with: its FileStorage on the same folder and
    machine id, all numbered files (each case from the newest that holds it) or the one --benchmark-compare=NUM
    names. Read before pytest-benchmark does, so that a file it cannot use is refused by name, not a crash."""
    from pytest_benchmark.logger import Logger
    from pytest_benchmark.storage.file import FileStorage
    from pytest_benchmark.utils import get_machine_id

    if "://" not in storage:
        storage = "file://" + storage  # as pytest-benchmark reads it
    if not storage.startswith("file://"):
        raise benchmarking.BaselineError(f"the gate reads file storage only, got {storage!r}")
    files = FileStorage(storage[len("file://") :], Logger(Logger.QUIET, config=None), get_machine_id())
    pattern = "[0-9][0-9][0-9][0-9]_" if compare is True else compare  # pytest-benchmark's own selection
    with warnings.catch_warnings():  # a file it cannot read: refused below, by name
        warnings.simplefilter("ignore")
        selected = list(files.load(pattern))
    loaded = {(path if Path(path).is_absolute() or Path(path).exists() else files.path / path) for path, _ in selected}
    loaded = {Path(path).resolve() for path in loaded}
    for path in files.query(pattern):  # load() skips, with a warning, what it cannot read: refuse it instead
        if path.resolve() not in loaded:
            raise benchmarking.BaselineError(f"baseline {path} is corrupted or not a moe-gather benchmark file")
    return benchmarking.baseline_from(selected, device, str(files))


def _measured_gpu(target: GpuTarget) -> str | None:
    """The UUID of the GPU whose benchmarks this run measures; None on the cpu tier."""
    return benchmarking.gpu_uuid() if target.measured is not None else None


class _GateHooks:
    """The throughput gate's hooks, registered by pytest_configure where the gate is on."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_benchmark_compare_machine_info(self, config, benchmarksession, machine_info, compared_benchmark):
        """pytest-benchmark's check of the file it compares with: one from another device is a usage error (its own
        check only warns, and warns on any difference of host details)."""
        recorded = (compared_benchmark.get("machine_info") or {}).get("moe_gather", {}).get("device")
        device = config.stash[_TARGET].measured or "cpu"
        if recorded is not None and recorded != device:  # no record at all: the gate's loader refuses the file by name
            raise pytest.UsageError(
                f"--benchmark-compare: the baseline in {benchmarksession.storage} was measured on {recorded}, "
                f"this run is on {device}"
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_benchmark_update_machine_info(self, config, machine_info):
        """Record the device in every saved benchmark file: the gate refuses a baseline from another model, and allows
        more slowdown against one from another GPU of the model (benchmarking.OTHER_GPU_PCT)."""
        target = config.stash[_TARGET]
        on_gpu = target.measured is not None
        machine_info["moe_gather"] = {
            "device": target.measured or "cpu",
            "gpu_uuid": _measured_gpu(target),
            "capability": list(target.capability) if on_gpu else None,
            "driver": _driver_version() if on_gpu else None,
            "torch": torch.__version__,
            "triton": triton.__version__,
        }

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Refuse to save a baseline from a run in which anything failed (before pytest-benchmark saves)."""
        bench = getattr(session.config, "_benchmarksession", None)
        if bench is not None and (bench.save or bench.autosave) and session.testsfailed:
            bench.save = bench.autosave = None
            session.config.stash[_REFUSED] = session.testsfailed
        yield


@pytest.fixture
def throughput_gate(request):
    """check(name, median_seconds, remeasure) -> Verdict or None: fails the test on a regression or a missing
    baseline when --benchmark-compare is on; records the verdict for the report."""
    gate = request.config.stash[_GATE]

    def check(name, measured, remeasure=None):
        if gate is None:
            return None
        try:
            verdict = benchmarking.judge(name, measured, gate.baseline, gate.thresholds, remeasure, gate.gpu)
        except benchmarking.BaselineError as e:
            pytest.fail(str(e))
        request.node.user_properties.append(("verdict", verdict))
        if verdict.regressed:
            pytest.fail(str(verdict))
        return verdict

    return check


def pytest_report_header(config):
    target = config.stash[_TARGET]
    lines = [
        f"moe-gather: tier {target.tier}, device {target.found}" + (f" ({target.why_cpu})" if target.why_cpu else "")
    ]
    if target.name is not None:
        lines.append(f"moe-gather: driver {_driver_version()}, CUDA {torch.version.cuda}")
    lines.append(
        f"moe-gather: torch {torch.__version__}, triton {triton.__version__}, triton_kernels {_peer_version()}"
    )
    return lines


def _peer_version() -> str:
    from . import peer

    return "present" if peer.available() else "absent"


def _chosen(config, name: str, every: tuple[str, ...]) -> tuple[str, ...]:
    value = config.getoption(name)
    return every if value == "all" else (value,)


def selected_cases(config, params: tuple[str, ...] | None = None):
    """The cases the options select; `params` narrows the parameter sets further (a test's `params` marker)."""
    models, routings = _chosen(config, "model", tuple(MODELS)), _chosen(config, "routing", ROUTINGS)
    chosen = _chosen(config, "params", PARAMS)
    chosen = tuple(p for p in chosen if params is None or p in params)
    text = config.getoption("batch_sizes")
    batches = _parse_batch_sizes(text) if text else None
    return cases(models, routings, batches, chosen, decode=batches is None)


def _parametrizes_case(metafunc) -> bool:
    """`case` is the plugin's to parametrize where the test's project defines no fixture of that name and does not
    parametrize it itself."""
    if "case" not in metafunc.fixturenames or metafunc._arg2fixturedefs.get("case"):
        return False
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if "case" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return False
    return True


def pytest_generate_tests(metafunc):
    if not _parametrizes_case(metafunc):
        return
    marker = metafunc.definition.get_closest_marker("params")
    selected = selected_cases(metafunc.config, marker.args if marker else None)
    if not selected:  # e.g. --params real for a test marked params("seed"): say so rather than collect nothing
        reason = f"runs at the {', '.join(marker.args)} parameters only; --params {metafunc.config.getoption('params')}"
        metafunc.parametrize("case", [pytest.param(None, marks=pytest.mark.skip(reason=reason))], ids=["none"])
        return
    # Under pytest-xdist's --dist loadgroup, every test of a case runs on one worker, whose caches then build the
    # case's inputs and reference once.
    grouped = metafunc.config.pluginmanager.hasplugin("xdist")
    params = [pytest.param(c, id=c.id, marks=[pytest.mark.xdist_group(c.id)] if grouped else []) for c in selected]
    metafunc.parametrize("case", params, scope="function")


def _skip_reason(marker: str, target: GpuTarget) -> str | None:
    if marker == "gpu" and target.tier == "cpu":
        return (
            f"needs a GPU kernel tier; running the CPU tier: {target.why_cpu} "
            "(the blackwell kernel is compile-checked on the CPU and never executed here)"
        )
    if marker in ("hopper", "blackwell") and target.tier != marker:
        return f"needs the {marker} tier; running the {target.tier} tier on {target.found}"
    return None


def pytest_collection_modifyitems(config, items):
    target = config.stash[_TARGET]
    no_benchmark = pytest.mark.skip(reason="pytest-benchmark is not active here (not installed, or -p no:benchmark)")
    for item in items:
        if "benchmark" in getattr(item, "fixturenames", ()) and not config.pluginmanager.hasplugin("benchmark"):
            item.add_marker(no_benchmark)
            continue
        for marker in ("gpu", "hopper", "blackwell"):
            if item.get_closest_marker(marker) and (reason := _skip_reason(marker, target)):
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture(scope="session")
def gpu(request) -> GpuTarget:
    return request.config.stash[_TARGET]


@pytest.fixture(scope="session")
def precision(request) -> str | None:
    """--precision as bmm1.prepare_weights takes it: None for the kernel's default."""
    chosen = request.config.getoption("--precision")
    return None if chosen == "default" else chosen


class _CaseCache:
    """Problems and references per case id, built once per session while their device bytes stay within a budget
    (a quarter of the GPU's memory: both models' cases take ~20 GB); the oldest go first past it. Tests of a case sit
    in several modules, so without it each of them would draw its inputs again on the CPU and recompute its
    reference."""

    def __init__(self, budget: int | None = None):
        self.entries: dict[tuple, object] = {}
        self.bytes = 0
        if budget is None:
            budget = torch.cuda.get_device_properties(0).total_memory // 4 if torch.cuda.is_available() else 0
        self.budget = budget

    @staticmethod
    def _size(value) -> int:
        """Bytes of the tensors a problem or reference holds (its routing's too; the shared expert weights not)."""
        parts = [value] + ([value.routing] if hasattr(value, "routing") else [])
        tensors = [v for part in parts for v in vars(part).values() if isinstance(v, torch.Tensor)]
        return sum(t.numel() * t.element_size() for t in tensors)

    def get(self, key, build):
        if key not in self.entries:
            value = build()
            size = self._size(value)
            if size > self.budget:  # never kept: the others stay
                return value
            while self.entries and self.bytes + size > self.budget:
                self.bytes -= self._size(self.entries.pop(next(iter(self.entries))))
            self.entries[key], self.bytes = value, self.bytes + size
            return value
        return self.entries[key]


@pytest.fixture(scope="session")
def _case_cache():
    return _CaseCache()


@pytest.fixture(scope="session")
def _expert_params_cache():
    return {}


def _device(gpu) -> str:
    return "cuda" if gpu.tier != "cpu" else "cpu"


@pytest.fixture
def problem(case, gpu, _expert_params_cache, _case_cache):
    """The case's inputs on the GPU under test (CPU on the CPU tier)."""
    from .problem import make_expert_params, make_problem

    device = _device(gpu)
    key = (case.model.name, device)
    if key not in _expert_params_cache:
        _expert_params_cache[key] = make_expert_params(case.model, device)
    return _case_cache.get(("problem", case.id, device), lambda: make_problem(case, device, _expert_params_cache[key]))


@pytest.fixture
def reference(case, problem, gpu, _case_cache):
    """The case's golden reference (moe_gather.reference.ReferenceOutput; `y` dropped: it is 8 bytes per output)."""
    from dataclasses import replace

    from .problem import reference_for

    return _case_cache.get(("reference", case.id, _device(gpu)), lambda: replace(reference_for(problem), y=None))


def agreement_recorder(record_property, label: str, source: str):
    """A callback for reference.check_against that reports the accuracy of `label` (a case id) from `source` for the
    summary."""
    return lambda agreement: record_property("accuracy", {"case": label, "source": source, **agreement.as_dict()})


@pytest.fixture
def record_agreement(case, record_property):
    """record_agreement(source) -> a callback for reference.check_against: the case's accuracy for the summary."""
    return lambda source: agreement_recorder(record_property, case.id, source)


@pytest.fixture(scope="session")
def _kernel_weights_cache():
    return {}


@pytest.fixture(scope="session")
def layout(request) -> str:
    """--layout as bmm1.prepare_weights takes it."""
    return request.config.getoption("--layout")


@pytest.fixture
def kernel_weights(problem, precision, layout, _kernel_weights_cache):
    """The problem's expert weights in the kernel layout of the GPU under test at --precision and --layout, built once
    per model."""
    from . import bmm1

    key = (problem.case.model.name, precision, layout)
    if key not in _kernel_weights_cache:
        _kernel_weights_cache.clear()
        _kernel_weights_cache[key] = bmm1.prepare_weights(problem.params.weights, precision=precision, layout=layout)
    return _kernel_weights_cache[key]


def _accuracy_rows(terminalreporter) -> dict[str, dict[str, dict]]:
    """case id -> source ("kernel", "peer") -> the accuracy recorded by record_agreement, passed and failed tests
    (with the test's outcome)."""
    rows: dict[str, dict[str, dict]] = {}
    for outcome in ("passed", "failed"):
        for rep in terminalreporter.stats.get(outcome, []):
            for name, value in getattr(rep, "user_properties", ()):
                if name == "accuracy" and rep.when == "call":
                    rows.setdefault(value["case"], {})[value["source"]] = value | {"outcome": outcome}
    return rows


def _accuracy_cell(value: dict | None) -> str:
    if value is None:
        return f"{'-':>10} {'-':>5} {'-':>7} {'-':>8}"
    return (
        f"{value['bitwise_equal']:>10.4%} {value['max_ulp']:>5g} {value['max_scaled']:>7.3g} "
        f"{value['scaled_over_one']:>8.4%}"
    )


def pytest_terminal_summary(terminalreporter):
    """Per case, the accuracy of the kernel beside the peer's; the throughput table; the gate's verdicts."""
    rows = _accuracy_rows(terminalreporter)
    if rows:
        terminalreporter.section("moe-gather: accuracy against the golden reference (kernel | peer)")
        head = f"{'bitwise':>10} {'ulp':>5} {'scaled':>7} {'over 1':>8}"
        terminalreporter.write_line(f"{'case':>36} {head} | {head}")
        for case_id in sorted(rows):
            by_source = rows[case_id]
            terminalreporter.write_line(
                f"{case_id:>36} {_accuracy_cell(by_source.get('kernel'))} | {_accuracy_cell(by_source.get('peer'))}"
            )
    if path := terminalreporter.config.getoption("accuracy_json"):
        records = [value for case_id in sorted(rows) for value in rows[case_id].values()]
        with open(path, "w") as f:
            json.dump({"argv": sys.argv, "records": records}, f, indent=1)
    reports = [rep for outcome in ("passed", "failed") for rep in terminalreporter.stats.get(outcome, [])]
    props = [dict(rep.user_properties) for rep in reports if rep.when == "call"]
    benches = [p["bench"] for p in props if "bench" in p]
    verdicts = {str(p["verdict"].name): p["verdict"] for p in props if "verdict" in p}
    if benches:
        terminalreporter.section("moe-gather: throughput")
        terminalreporter.write_line(
            f"{'case':>30} {'us':>9} {'TFLOP/s':>8} {'TB/s':>6} {'% roof':>7} {'peer us':>8} {'vs baseline':>12}"
        )
        for b in sorted(benches, key=lambda b: (b["routing"], b["model"], b["batch"])):
            verdict = verdicts.get(b["name"])
            change = f"{verdict.change:+.1%}" if verdict else "-"
            terminalreporter.write_line(
                f"{b['case']:>30} {b['us']:>9.1f} {b['tflops']:>8.1f} {b['tbps']:>6.2f} {b['pct_roof']:>7.1%} "
                f"{b.get('peer_us', float('nan')):>8.1f} {change:>12}"
            )
        plot = terminalreporter.config.getoption("benchmark_plot")
        if plot:
            from .plot import plot_throughput

            plot_throughput(benches, plot)
            terminalreporter.write_line(f"moe-gather: throughput plot written to {plot}")
    if verdicts:
        terminalreporter.section("moe-gather: throughput against the baseline")
        for verdict in sorted(verdicts.values(), key=lambda v: v.name):
            terminalreporter.write_line(str(verdict))
    refused = terminalreporter.config.stash.get(_REFUSED, 0)
    if refused:
        terminalreporter.write_line(
            f"moe-gather: NOT saving the benchmark baseline: {refused} test(s) failed", red=True
        )
