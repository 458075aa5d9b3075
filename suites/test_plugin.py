"""The pytest plugin, driven through pytester: cases, ids, options, tiers and their errors."""

import os
from types import SimpleNamespace

import pytest

from moe_gather import pytest_plugin
from moe_gather.problem import MODELS, batch_sizes

CASE_TEST = """
import pytest

def test_case(case):
    assert case.batch > 0

@pytest.mark.gpu
def test_on_gpu(case):
    assert case.batch > 0
"""


def _collected_ids(pytester, *args):
    pytester.makepyfile(test_cases=CASE_TEST)
    items, _ = pytester.inline_genitems("--gpu", "cpu", *args)
    return [item.callspec.id for item in items if item.name.startswith("test_case")]


def test_96_cases_for_gpt_oss_120b_with_stable_ids(pytester):
    ids = _collected_ids(pytester)
    assert len(ids) == 96
    assert len(set(ids)) == 96
    assert ids[0] == "gpt-oss-120b-zipf-bs128"
    assert "gpt-oss-120b-uniform-bs31744" in ids
    assert {f"gpt-oss-120b-{r}-bs{b}" for r in ("zipf", "uniform") for b in batch_sizes(MODELS["gpt-oss-120b"])} == set(
        ids
    )


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (("--model", "all"), 192),
        (("--model", "gpt-oss-20b", "--routing", "uniform"), 48),
        (("--routing", "zipf"), 48),
        (("--batch-sizes", "128,4096"), 4),
        (("--batch-sizes", "77", "--routing", "uniform", "--model", "all"), 2),
    ],
)
def test_options_select_cases(pytester, args, count):
    assert len(_collected_ids(pytester, *args)) == count


@pytest.mark.parametrize("bad", ["12a", "0", "-4", ","])
def test_bad_batch_sizes_are_a_usage_error(pytester, bad):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", f"--batch-sizes={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--batch-sizes takes*"])


@pytest.mark.parametrize("tier", ["hopper", "blackwell"])
def test_explicit_tier_without_its_gpu_is_a_usage_error(pytester, tier):
    found = pytest_plugin.detect_gpu()
    present = pytest_plugin.ARCH_BY_MAJOR.get(found[1][0]) if found else None
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", tier, "--batch-sizes", "128")
    if present == tier:
        assert result.ret == pytest.ExitCode.OK
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--gpu {tier} needs a {tier.capitalize()} GPU, found *"])


def test_cpu_tier_skips_gpu_tests_with_the_reason(pytester):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", "--batch-sizes", "128", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a GPU kernel tier; running the CPU tier: --gpu cpu*"])


def test_report_header_names_the_stack(pytester):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", "--batch-sizes", "128")
    result.stdout.fnmatch_lines(
        ["moe-gather: tier cpu, device *", "moe-gather: torch *, triton 3.6.0, triton_kernels *"]
    )


def test_resolve_target():
    h200 = ("NVIDIA H200", (9, 0))
    assert pytest_plugin.resolve_target("auto", h200).tier == "hopper"
    assert pytest_plugin.resolve_target("auto", ("B200", (10, 0))).tier == "blackwell"
    assert pytest_plugin.resolve_target("auto", None).why_cpu == "no CUDA device"
    assert pytest_plugin.resolve_target("auto", ("A100", (8, 0))).why_cpu == "no kernel for A100 (sm_80)"
    assert pytest_plugin.resolve_target("cpu", h200).tier == "cpu"
    # benchmarks and baselines belong to the tier measured: --gpu cpu on a GPU machine gates against baselines/cpu
    assert pytest_plugin.resolve_target("cpu", h200).measured is None
    assert pytest_plugin.resolve_target("auto", h200).measured == "NVIDIA H200"
    with pytest.raises(pytest.UsageError, match=r"found NVIDIA H200 \(sm_90\)"):
        pytest_plugin.resolve_target("blackwell", h200)


def test_xdist_workers_take_one_gpu_each(monkeypatch):
    node = SimpleNamespace(workerinput={})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    pytest_plugin.pytest_configure_node(node)
    assert node.workerinput["moe_gather_gpus"] == ["2", "3"]
    for worker, gpu in [("gw0", "2"), ("gw1", "3"), ("gw2", "2")]:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        pytest_plugin._pin_xdist_worker_gpu(SimpleNamespace(workerinput=node.workerinput))
        assert os.environ["CUDA_VISIBLE_DEVICES"] == gpu
