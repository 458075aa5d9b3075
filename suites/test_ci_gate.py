""".ci/gate, the nightly's throughput gate of one precision and layout, run on the CPU with a stand-in python3 that
names the baselines folder and records the pytest calls (the real ones need a GPU): a stored baseline is compared,
none saves a candidate and fails, a failing compare fails, missing arguments are a usage error."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parents[1] / ".ci" / "gate"
FOLDER = "baselines/nvidia-h200-fast-fp8/Linux-CPython-3.12-64bit"
# The stand-in: the folder lookup (the script on stdin) prints FOLDER; a pytest call is recorded, a save writes the
# file pytest-benchmark would, and it exits with $PYTEST_RC.
PYTHON3 = f"""#!/usr/bin/env bash
if [ "$1" = "-" ]; then cat > /dev/null; echo "{FOLDER}"; exit 0; fi
echo "$*" >> calls.txt
for arg in "$@"; do
  case $arg in --benchmark-save=*) mkdir -p "{FOLDER}"; touch "{FOLDER}/0002_${{arg#--benchmark-save=}}.json";; esac
done
exit "${{PYTEST_RC:-0}}"
"""


def _gate(tmp_path, *args, rc=0):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    (tmp_path / ".ci").mkdir(exist_ok=True)
    shutil.copy(GATE, tmp_path / ".ci" / "gate")  # it works from its checkout's root: here, tmp_path
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").write_text(PYTHON3)
    (bin_dir / "python3").chmod(0o755)
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTEST_RC": str(rc)}
    run = subprocess.run(["bash", ".ci/gate", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    calls = (tmp_path / "calls.txt").read_text().splitlines() if (tmp_path / "calls.txt").exists() else []
    return run, calls


def test_a_stored_baseline_is_compared(tmp_path):
    (tmp_path / FOLDER).mkdir(parents=True)
    (tmp_path / FOLDER / "0001_h200_fast_fp8.json").write_text("{}")
    run, calls = _gate(tmp_path, "fast_fp8", "fast", "fp8", "--gpu", "hopper")
    assert run.returncode == 0, run.stderr
    assert calls == [
        "-m pytest suites/test_benchmark.py --precision fast --layout fp8 --benchmark-json=bench_fast_fp8.json "
        "-p no:cacheprovider --junitxml=benchmarks_fast_fp8.xml --gpu hopper --benchmark-compare"
    ]
    assert (tmp_path / "benchmarks_fast_fp8.log").exists()


def test_no_baseline_saves_a_candidate_and_fails(tmp_path):
    run, calls = _gate(tmp_path, "fast_fp8", "fast", "fp8")
    assert run.returncode == 1
    assert len(calls) == 1 and calls[0].endswith("--benchmark-save=nightly_fast_fp8")
    assert (tmp_path / "0002_nightly_fast_fp8.json").exists()  # the candidate, for the upload
    assert f"::error::no baseline in {FOLDER}" in run.stdout


def test_a_failing_compare_fails_the_gate(tmp_path):
    (tmp_path / FOLDER).mkdir(parents=True)
    (tmp_path / FOLDER / "0001_h200_fast_fp8.json").write_text("{}")
    run, calls = _gate(tmp_path, "fast_fp8", "fast", "fp8", rc=1)
    assert run.returncode == 1 and calls[0].endswith("--benchmark-compare")


def test_missing_arguments_are_a_usage_error(tmp_path):
    run, calls = _gate(tmp_path, "fast", "fast")
    assert run.returncode == 2 and not calls
    assert "usage: bash .ci/gate NAME PRECISION LAYOUT" in run.stderr
