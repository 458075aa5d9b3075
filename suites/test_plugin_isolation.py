"""An unrelated project in the same environment, through pytester: installing moe-gather changes nothing there (its
plugin loads only where a conftest or -p asks for it), and enabling the plugin there leaves the project's own `case`
fixture, parametrizations and benchmarks as they are (the gate is on only where its ini option says so)."""

import subprocess
import sys
from pathlib import Path

import pytest
from _inner_runs import H200, _not_an_xdist_worker, needs_pytest_benchmark  # noqa: F401 (fixtures)

UNRELATED = """
import time

def test_timed(benchmark):
    benchmark(time.sleep, 0)
"""


def _benchmark_file(pytester):
    return next((pytester.path / ".benchmarks").rglob("*.json"))


@pytest.mark.usefixtures("needs_pytest_benchmark")
def test_an_unrelated_project_keeps_pytest_benchmarks_defaults(pytester):
    pytester.makepyfile(test_unrelated=UNRELATED)
    # in a process of its own, as another project runs: in-process runs share this session's loaded plugins
    result = pytester.runpytest_subprocess("--benchmark-save=mine", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "baselines").exists()  # no folder of ours created
    saved = _benchmark_file(pytester).read_text()
    assert '"moe_gather"' not in saved and '"timer": "perf_counter"' in saved  # its timer, its storage, no info of ours
    again = pytester.runpytest_subprocess("--benchmark-compare", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)  # its compare against its own .benchmarks works as ever
    assert again.ret == pytest.ExitCode.OK


def test_an_unrelated_project_has_none_of_our_options_or_imports(pytester):
    pytester.makepyfile(test_unrelated="def test_plain():\n    assert True\n")
    code = (
        "import sys, pytest; rc = pytest.main(['-q', '-p', 'no:cacheprovider', '--co']); "
        "print('imported', sorted(m for m in ('torch', 'triton', 'moe_gather') if m in sys.modules)); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=pytester.path, capture_output=True, text=True, check=True)
    assert "imported []" in out.stdout
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], cwd=pytester.path, capture_output=True, text=True, check=True
    ).stdout
    assert "--gpu" not in help_text and "--regression-threshold" not in help_text
    enabled = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "moe_gather.pytest_plugin", "--help"],
        cwd=pytester.path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "--regression-threshold" in enabled  # and -p enables it anywhere


OWN_CASE = """
import pytest

@pytest.fixture
def case():
    return "the project's own"

def test_fixture(case):
    assert case == "the project's own"

@pytest.mark.parametrize("case", [1, 2])
def test_parametrized(case):
    assert case in (1, 2)
"""


@pytest.mark.usefixtures("needs_pytest_benchmark")
def test_a_project_that_enables_the_plugin_keeps_its_case_and_its_benchmarks(pytester):
    pytester.makepyfile(test_own_case=OWN_CASE, test_unrelated=UNRELATED)
    enabled = ("-p", "moe_gather.pytest_plugin", "--gpu", "cpu", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*enabled, "--benchmark-save=mine")
    result.assert_outcomes(passed=4)  # its own case: one fixture value, two parameters; no GPT-OSS case of ours
    assert not (pytester.path / "baselines").exists()
    saved = _benchmark_file(pytester).read_text()
    assert '"moe_gather"' not in saved and '"timer": "perf_counter"' in saved
    again = pytester.runpytest_subprocess(*enabled, "--benchmark-compare")
    again.assert_outcomes(passed=4)  # its own files compare as pytest-benchmark's, not refused by the gate
    pytester.makepyfile(test_fails="def test_fails(benchmark):\n    benchmark(int)\n    assert False\n")
    failed = pytester.runpytest_subprocess(*enabled, "--benchmark-save=failed")
    failed.assert_outcomes(passed=4, failed=1)
    assert list((pytester.path / ".benchmarks").rglob("*_failed.json"))  # saved as ever: the gate refuses only its own
    refused = pytester.runpytest_subprocess(*enabled, "--regression-threshold", "7,10,100")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--regression-threshold*the throughput gate is off here (ini moe_gather_gate)*"])


FAKE_H200 = f"""
from moe_gather import pytest_plugin

pytest_plugin.detect_gpu = lambda: {H200!r}
"""


@pytest.mark.usefixtures("needs_pytest_benchmark")
def test_on_a_gpu_tier_the_gate_off_leaves_pytest_benchmarks_storage_and_timer(pytester):
    """Where the plugin finds a GPU with a kernel tier, its gate takes the storage and timer only where the ini
    option asks: the same project, the gate on, saves under baselines/ with the device's timer (the fake works)."""
    pytester.makeconftest(FAKE_H200)
    pytester.makepyfile(test_unrelated=UNRELATED)
    enabled = ("-p", "moe_gather.pytest_plugin", "-p", "no:cacheprovider", "--benchmark-save=mine")
    result = pytester.runpytest_subprocess(*enabled)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["moe-gather: tier hopper, device NVIDIA H200 (sm_90)"])
    assert not (pytester.path / "baselines").exists()
    saved = _benchmark_file(pytester).read_text()
    assert '"moe_gather"' not in saved and '"timer": "perf_counter"' in saved
    pytester.makeini("[pytest]\nmoe_gather_gate = true\n")
    gated = pytester.runpytest_subprocess(*enabled)
    gated.assert_outcomes(passed=1)
    (ours,) = (pytester.path / "baselines" / "nvidia-h200").rglob("*_mine.json")
    assert '"timer": "cuda_timer"' in ours.read_text() and '"moe_gather"' in ours.read_text()


def test_the_package_declares_no_pytest_entry_point():
    """This tree's metadata, not the installed copy's: a pytest11 entry point would load the plugin in every project."""
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert "pytest11" not in pyproject
