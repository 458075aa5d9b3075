"""An unrelated project in the same environment, through pytester: installing moe-gather changes nothing there (its
plugin loads only where a conftest or -p asks for it)."""

import subprocess
import sys

import pytest

UNRELATED = """
import time

def test_timed(benchmark):
    benchmark(time.sleep, 0)
"""


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """The other project's runs are plain pytest processes, also when this file runs under pytest-xdist: its
    variables, inherited, would make pytest-benchmark disable itself there."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)


def _benchmark_file(pytester):
    return next((pytester.path / ".benchmarks").rglob("*.json"))


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
