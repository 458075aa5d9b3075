"""The throughput gate through pytester, with synthetic benchmarks (a sleep) and synthetic baseline JSON:
regression, improvement, missing baseline, baseline from another device, corrupted file, refused save; the wider
allowance against a baseline from another GPU of the model (judge, directly); the sustained timing's window; and the
committed baselines themselves, against the cases the nightly gate measures."""

import json
import statistics
from pathlib import Path

import pytest
from _inner_runs import _not_an_xdist_worker, _plugin_enabled, skip_without_pytest_benchmark  # noqa: F401

from moe_gather import benchmarking
from moe_gather._sm90_layout import LAYOUTS, PRECISIONS
from moe_gather.benchmarking import OTHER_GPU_PCT, Baseline, Thresholds, baseline_folder_name, judge
from moe_gather.problem import MODELS, cases, local_shard
from moe_gather.routing import make_logits, route

STORED = Path(__file__).resolve().parents[1] / "baselines"

SYNTHETIC = """
import time

def test_synthetic(benchmark, throughput_gate, request):
    benchmark.pedantic(time.sleep, args=(0.002,), rounds=5, iterations=1)
    remeasured = []
    throughput_gate(request.node.name, benchmark.stats.stats.median, remeasure=lambda: remeasured.append(1) or 0.0021)
    print("remeasured", len(remeasured))

def test_other(benchmark):
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=3, iterations=1)
"""


def _stats(median, iqr=0.0):
    """pytest-benchmark's stats record of a run whose rounds took `median` seconds, quartiles `iqr` apart."""
    keys = ("min", "max", "mean", "median", "q1", "q3", "ld15iqr", "hd15iqr", "total")
    return {**dict.fromkeys(keys, median), "stddev": 0.0, "iqr": iqr, "rounds": 5, "iterations": 1, "ops": 1 / median,
            "outliers": "0;0", "iqr_outliers": 0, "stddev_outliers": 0}  # fmt: skip


def _baseline(pytester, medians, device="cpu", name="0001_base.json", text=None, iqr=0.0, folder=None):
    """A saved benchmark file in pytest-benchmark's default storage (the CPU tier leaves it as it is), at its root or
    in a machine-id `folder`."""
    folder = pytester.path / ".benchmarks" / (folder or "")
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "machine_info": {"moe_gather": {"device": device}},
        "benchmarks": [
            {"name": n, "fullname": f"test_gate_synthetic.py::{n}", "group": None, "params": None, "param": None,
             "extra_info": {}, "options": {}, "stats": _stats(m, iqr * m)}
            for n, m in medians.items()
        ],
    }  # fmt: skip
    (folder / name).write_text(text if text is not None else json.dumps(data))


def _run(pytester, *args, benchmarks=True):
    """An inner run of the synthetic benchmarks (skipping this test where `benchmarks` needs pytest-benchmark and the
    inner run would lack it)."""
    if benchmarks:
        skip_without_pytest_benchmark()
    pytester.makepyfile(test_gate_synthetic=SYNTHETIC)
    # pytest-benchmark warns that the synthetic files lack its host details: the gate compares devices only
    noise = ("-W", "ignore::pytest_benchmark.logger.PytestBenchmarkWarning")
    return pytester.runpytest("--gpu", "cpu", "-p", "no:cacheprovider", "-s", *noise, *args)


def test_regression_is_measured_again_then_fails(pytester):
    _baseline(pytester, {"test_synthetic": 0.001, "test_other": 0.001})  # half the time the sleep takes
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_synthetic: * us against 1000.0 us baseline, time +*(REGRESSED, allowed +5%), throughput -*"]
    )
    assert "remeasured 1" not in result.stdout.str()  # it failed after measuring again, before the print


@pytest.mark.parametrize(
    ("iqr", "median", "verdict", "allowed"),
    [(0.0, 0.0018, "REGRESSED", "+5%"), (0.2, 0.0018, "within noise", "+20%"), (1.0, 0.0015, "REGRESSED", "+20%")],
)
def test_the_baseline_spread_widens_the_allowed_slowdown_up_to_a_cap(pytester, iqr, median, verdict, allowed):
    """The sleep takes ~15% longer than a 1.8 ms median: a regression against a baseline whose rounds agree, within
    noise against one whose quartiles lie 20% apart; a baseline spread a whole median still allows only MAX_SPREAD
    (20%), which ~35% over 1.5 ms exceeds."""
    _baseline(pytester, {"test_synthetic": median, "test_other": 0.001}, iqr=iqr)
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=1 + (verdict != "REGRESSED"), failed=int(verdict == "REGRESSED"))
    result.stdout.fnmatch_lines(
        [f"*test_synthetic: * us against {median * 1e6:.1f} us baseline, time +*({verdict}, allowed {allowed})*"]
    )


def test_improvement_is_reported_and_passes(pytester):
    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.001})
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*test_synthetic: * us against 4000.0 us baseline, time -*(improved, allowed +5%), throughput +*"]
    )
    assert "remeasured 0" in result.stdout.str()


def test_case_without_baseline_fails(pytester):
    _baseline(pytester, {"test_other": 0.001})
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*no baseline for test_synthetic in *0001_base.json or any older file beside it*"])


def test_baseline_from_another_device_is_a_usage_error(pytester):
    _baseline(pytester, {"test_synthetic": 0.002}, device="NVIDIA H200")
    result = _run(pytester, "--benchmark-compare")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*was measured on NVIDIA H200, this run is on cpu*"])


ZERO_MEDIAN = json.dumps(
    {"machine_info": {"moe_gather": {"device": "cpu"}}, "benchmarks": [{"name": "t", "stats": {"median": 0, "iqr": 0}}]}
)  # a spread relative to a zero median


@pytest.mark.parametrize(
    "text", ["{not json", '{"benchmarks": []}', '{"machine_info": {}, "benchmarks": 3}', ZERO_MEDIAN]
)
def test_corrupted_baseline_is_a_usage_error(pytester, text):
    _baseline(pytester, {}, text=text)
    result = _run(pytester, "--benchmark-compare")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*0001_base.json is corrupted or not a moe-gather benchmark file*"])


def test_missing_baseline_folder_is_a_usage_error(pytester):
    result = _run(pytester, "--benchmark-compare")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no baseline for cpu in *.benchmarks (for this machine's Python)*"])


def test_the_gate_reads_the_files_pytest_benchmark_selects(pytester):
    """A save from another Python lands in another machine-id folder: pytest-benchmark compares with this machine's
    files only, and so does the gate (judged against the other Python's file, both cases would regress)."""
    from pytest_benchmark.utils import get_machine_id

    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.001}, name="0001_this.json", folder=get_machine_id())
    _baseline(pytester, {"test_synthetic": 0.0005, "test_other": 0.001}, name="0002_other.json", folder="Linux-X-1")
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*against 4000.0 us baseline*", "*test_synthetic (0001_this)*"])


def test_compare_num_names_the_one_file_judged_against(pytester):
    """--benchmark-compare=0001: that file alone, as pytest-benchmark compares (the newer 0002 would pass both)."""
    _baseline(pytester, {"test_synthetic": 0.001, "test_other": 0.001}, name="0001_old.json")
    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.004}, name="0002_new.json")
    result = _run(pytester, "--benchmark-compare=0001")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_synthetic: * us against 1000.0 us baseline*REGRESSED*"])


def test_benchmark_compare_fail_is_refused_for_the_gate(pytester):
    """pytest-benchmark's own fail rule compares with its newest file only: the gate's per-case rule would disagree."""
    _baseline(pytester, {"test_synthetic": 0.002, "test_other": 0.001})
    result = _run(pytester, "--benchmark-compare", "--benchmark-compare-fail=mean:5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-compare-fail compares with pytest-benchmark's newest file only*"])


def test_compare_against_a_file_named_by_its_path(pytester):
    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.001}, name="0001_base.json")
    result = _run(pytester, "--benchmark-compare=.benchmarks/0001_base.json")
    result.assert_outcomes(passed=2)


def test_an_explicit_benchmark_storage_is_honoured(pytester):
    _baseline(pytester, {"test_synthetic": 0.001, "test_other": 0.001})  # the default storage: would fail
    folder = pytester.path / "elsewhere"
    folder.mkdir()
    (folder / "0001_base.json").write_text((pytester.path / ".benchmarks" / "0001_base.json").read_text())
    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.004}, name="0002_base.json")
    (folder / "0002_base.json").write_text((pytester.path / ".benchmarks" / "0002_base.json").read_text())
    (pytester.path / ".benchmarks" / "0002_base.json").unlink()
    result = _run(pytester, "--benchmark-compare", f"--benchmark-storage=file://{folder}")
    result.assert_outcomes(passed=2)


def test_newest_baseline_is_used(pytester):
    _baseline(pytester, {"test_synthetic": 0.001, "test_other": 0.001}, name="0001_old.json")
    _baseline(pytester, {"test_synthetic": 0.004, "test_other": 0.001}, name="0002_new.json")
    _run(pytester, "--benchmark-compare").assert_outcomes(passed=2)


def test_a_case_the_newest_baseline_lacks_is_judged_against_an_older_one(pytester):
    """A save of some cases (one model) leaves the others' baselines standing: each case from the newest file that
    holds it."""
    _baseline(pytester, {"test_synthetic": 0.001, "test_other": 0.004}, name="0001_old.json")  # test_synthetic: 2x
    _baseline(pytester, {"test_other": 0.004}, name="0002_one_model.json")
    result = _run(pytester, "--benchmark-compare")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_synthetic: * us against 1000.0 us baseline, time +*(REGRESSED*"])


def test_each_case_is_judged_against_the_gpu_of_its_own_baseline_file():
    baseline = Baseline(
        Path("new.json"), "NVIDIA H200", {"new": 200e-6, "old": 200e-6}, {"new": 0.0, "old": 0.0},
        {"new": "GPU-a", "old": "GPU-b"},
    )  # fmt: skip
    thresholds = Thresholds.parse("5,10,100")
    verdicts = {name: judge(name, 200e-6, baseline, thresholds, gpu="GPU-b") for name in baseline.medians}
    assert verdicts["new"].other_gpu and not verdicts["old"].other_gpu


def test_save_writes_a_baseline_that_names_the_device(pytester):
    result = _run(pytester, "--benchmark-save=base")
    result.assert_outcomes(passed=2)
    saved = list((pytester.path / ".benchmarks").glob("*/*_base.json"))
    assert len(saved) == 1
    data = json.loads(saved[0].read_text())
    assert data["machine_info"]["moe_gather"]["device"] == "cpu"
    assert data["machine_info"]["moe_gather"]["gpu_uuid"] is None  # a GPU run records its GPU's UUID
    assert {b["name"] for b in data["benchmarks"]} == {"test_synthetic", "test_other"}
    _run(pytester, "--benchmark-compare").assert_outcomes(passed=2)  # and the gate reads it back


def test_save_is_refused_when_a_test_failed(pytester):
    pytester.makepyfile(test_broken="def test_broken():\n    assert 1 == 2\n")
    result = _run(pytester, "--benchmark-save=base")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*NOT saving the benchmark baseline: 1 test(s) failed*"])
    assert not list((pytester.path / ".benchmarks").rglob("*.json"))


def test_thresholds_are_noise_aware():
    t = Thresholds.parse("5,10,100")
    assert t.allowed(150e-6) == 0.05 and t.allowed(50e-6) == 0.10


@pytest.mark.parametrize(
    ("text", "why"),
    [("5,10", "LONG_PCT"), ("5,0,100", "percentages"), ("nan,nan,nan", "percentages"), ("inf,10,100", "percentages"),
     ("1e9,10,100", "percentages"), ("5,10,nan", "boundary"), ("5,10,-1", "boundary"), ("5,10,inf", "boundary")],
)  # fmt: skip
def test_thresholds_that_would_switch_the_gate_off_are_refused(text, why):
    with pytest.raises(ValueError, match=why):
        Thresholds.parse(text)


WIDER = 0.05 + OTHER_GPU_PCT / 100


@pytest.mark.parametrize(
    ("baseline_gpu", "run_gpu", "allowed"),
    [("GPU-a", "GPU-a", 0.05), ("GPU-a", "GPU-b", WIDER), (None, "GPU-b", WIDER), (None, None, 0.05)],
)
def test_a_baseline_from_another_gpu_allows_more_slowdown(baseline_gpu, run_gpu, allowed):
    """Same GPU (UUID): the threshold; another GPU of the model, or a baseline that does not say which: OTHER_GPU_PCT
    points more; the CPU tier (no UUID): the threshold."""
    baseline = Baseline(Path("b.json"), "NVIDIA H200", {"case": 200e-6}, {"case": 0.0}, {"case": baseline_gpu})
    slower = 200e-6 * (1 + allowed - 0.01), 200e-6 * (1 + allowed + 0.01)
    verdicts = [judge("case", t, baseline, Thresholds.parse("5,10,100"), gpu=run_gpu) for t in slower]
    assert [v.allowed for v in verdicts] == pytest.approx([allowed, allowed])
    assert [v.regressed for v in verdicts] == [False, True]
    assert ("on another GPU" in str(verdicts[1])) == (allowed > 0.05)


@pytest.mark.parametrize("plugins", [(), ("-p", "no:benchmark")], ids=["benchmark", "no-benchmark"])
@pytest.mark.parametrize("text", ["fast", "nan,nan,nan"])
def test_bad_threshold_option_is_a_usage_error(pytester, text, plugins):
    """Refused by name with pytest-benchmark or without it."""
    result = _run(pytester, *plugins, "--regression-threshold", text, benchmarks=not plugins)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--regression-threshold*"])


class _ScriptedClock:
    """The gate's timer on a clock that only the timed calls advance: each call of round r (the first round 0) takes
    `seconds(r)`."""

    def __init__(self, seconds, iterations: int):
        self.now, self.calls, self.seconds, self.iterations = 0.0, 0, seconds, iterations

    def timer(self) -> float:
        return self.now

    def call(self):
        self.now += self.seconds(self.calls // self.iterations)
        self.calls += 1


def test_sustained_timing_spans_its_window_and_reads_the_median(monkeypatch):
    """Rounds sized from one timed round to span the warm-up and the window, and the median round read: every round
    takes its own time, so the minimum, a mean or an unsorted middle round read instead would differ. The times are
    binary fractions of a second, so every sum and count is exact (no wall clock: no load can move them)."""
    monkeypatch.setattr(benchmarking, "WARMUP_S", 0.25)
    monkeypatch.setattr(benchmarking, "WINDOW_S", 65 / 64)
    call_seconds = lambda r: (1 + 7 * r % 31) / 128  # round 0, the sizing one: 1/128 a call
    clock = _ScriptedClock(call_seconds, iterations=2)
    monkeypatch.setattr(benchmarking, "cuda_timer", clock.timer)
    assert benchmarking.sustained_rounds(clock.call, iterations=2) == (16, 65)  # from a round of 1/64 s
    clock.calls = 0
    warmup, rounds = 16, 65
    timed = [call_seconds(r) for r in range(1 + warmup, 1 + warmup + rounds)]
    assert benchmarking.sustained_seconds(clock.call, iterations=2) == statistics.median(timed)
    assert clock.calls == 2 * (1 + warmup + rounds)


def _local_rows(case) -> int:
    model = case.model
    logits = make_logits(case.routing, case.batch, model.num_experts, model.top_k, case.routing_seed)
    return route(logits, model.top_k, model.num_shards, local_shard(model)).tokens


@pytest.mark.parametrize("folder", sorted(p for p in STORED.iterdir() if any(p.rglob("*.json"))), ids=lambda p: p.name)
def test_the_committed_baselines_hold_every_nightly_case(folder):
    """Each GPU's committed baselines load as the gate loads them (one device, the folder's, every file readable) and
    hold exactly the cases the nightly gate measures (the seed's parameters, the ladder and the decode batches, less
    those whose local shard gets no rows: they skip; `--model all`, and gpt-oss-120b alone in a `-fast` or
    `-fast-fp8` folder, the fast precision's gates): none missing, none stale."""
    from pytest_benchmark.logger import Logger
    from pytest_benchmark.storage.file import FileStorage

    device = benchmarking._read_baseline(next(folder.rglob("*.json")))[0]
    named = {baseline_folder_name(device, p, layout): p for p in PRECISIONS for layout in LAYOUTS}
    assert folder.name in named  # a folder the plugin names for a precision and layout on that device
    fast = named[folder.name] == "fast"
    precisions = set()
    for machine in sorted(p.name for p in folder.iterdir() if p.is_dir()):  # as pytest-benchmark on that machine
        storage = FileStorage(folder, Logger(Logger.QUIET, config=None), default_machine_id=machine)
        files = list(storage.load("[0-9][0-9][0-9][0-9]_"))
        assert len(files) == len(storage.query("[0-9][0-9][0-9][0-9]_"))  # every file readable
        baseline = benchmarking.baseline_from(files, device, str(folder))
        precisions |= {b["extra_info"].get("precision") for _, data in files for b in data["benchmarks"]}
        models = ("gpt-oss-120b",) if fast else tuple(MODELS)
        timed = [case for case in cases(models=models, decode=True) if _local_rows(case)]
        # gpt-oss-120b's uniform decode batch of 1 routes nothing to the local shard
        assert len(timed) == (96 + 13 if fast else 2 * 96 + 27)
        assert set(baseline.medians) == {f"test_throughput[{case.id}]" for case in timed}
    assert all(0 < seconds < 1 for seconds in baseline.medians.values())
    assert precisions <= ({"fast"} if fast else {"accurate", None})  # None: saved before the precision was recorded


def test_each_precision_keeps_its_own_baselines(monkeypatch):
    """The fast precision's times go to their own folder: judged against the accurate precision's, every case would
    look faster, and the accurate precision's regressions would hide behind them. --precision default is the
    kernel's default precision's folder, whichever that is."""
    from moe_gather import _sm90_config
    from moe_gather.pytest_plugin import baseline_folder

    assert baseline_folder_name("NVIDIA H200") == baseline_folder_name("NVIDIA H200", "accurate") == "nvidia-h200"
    assert baseline_folder("fast", "NVIDIA H200") == "nvidia-h200-fast"
    assert baseline_folder("fast", "NVIDIA H200", "fp8") == "nvidia-h200-fast-fp8"  # the folded bytes: faster
    assert baseline_folder("default", "NVIDIA H200") == "nvidia-h200"  # the default is "accurate"
    monkeypatch.setattr(_sm90_config, "DEFAULT_PRECISION", "fast")
    assert baseline_folder("default", "NVIDIA H200") == "nvidia-h200-fast"
