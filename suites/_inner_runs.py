"""Fixtures of the tests that run pytest inside pytest (pytester): the inner project as this repository sets itself
up, and the inner runs as plain sessions under pytest-xdist."""

import importlib.util
import os

import pytest

ENABLED = 'pytest_plugins = ("moe_gather.pytest_plugin",)\n'  # the inner runs enable the plugin as this repository does
GATE_ON = "[pytest]\nmoe_gather_gate = true\n"  # and turn its throughput gate on, as pyproject.toml does
H200 = ("NVIDIA H200", (9, 0))  # what detect_gpu returns on an H200: a GPU tier faked by name and capability


@pytest.fixture(autouse=True)
def _plugin_enabled(request):
    if "pytester" in request.fixturenames:
        pytester = request.getfixturevalue("pytester")
        pytester.makeconftest(ENABLED)
        pytester.makeini(GATE_ON)


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """The inner runs are plain pytest sessions, also when this file runs under pytest-xdist: pytest-benchmark
    disables itself wherever PYTEST_XDIST_WORKER is set, and every synthetic benchmark would record nothing."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)


def skip_without_pytest_benchmark() -> None:
    """Skip, saying why, a test whose inner runs need pytest-benchmark where they would run without it."""
    if importlib.util.find_spec("pytest_benchmark") is None:
        pytest.skip("pytest-benchmark is not installed: the inner runs have no --benchmark-* options")
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        pytest.skip("PYTEST_DISABLE_PLUGIN_AUTOLOAD: the inner runs load no pytest-benchmark")


@pytest.fixture
def needs_pytest_benchmark():
    skip_without_pytest_benchmark()
