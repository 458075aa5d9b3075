"""The pytest plugin, driven through pytester: cases, ids, options, tiers and their errors."""

import json
import os
from types import SimpleNamespace

import pytest
import torch
from _inner_runs import H200, _plugin_enabled, needs_pytest_benchmark  # noqa: F401 (fixtures)

from moe_gather import bmm1, pytest_plugin
from moe_gather.problem import DECODE_BATCHES, MODELS, PARAMS, MoEModel, batch_sizes, cases

CASE_TEST = """
import pytest
import torch

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


def _ladder_ids(model: str, suffix: str = "") -> set[str]:
    return {f"{model}-{r}-bs{b}{suffix}" for r in ("zipf", "uniform") for b in batch_sizes(MODELS[model])}


def _decode_ids(model: str, suffix: str = "") -> set[str]:
    return {f"{model}-{r}-decode-bs{b}{suffix}" for r in ("zipf", "uniform") for b in DECODE_BATCHES}


def test_gpt_oss_120b_cases_with_stable_ids(pytester):
    """The seed's 96 ids as they always were (the baselines key on them), their 96 `-real` twins, the decode cases."""
    ids = _collected_ids(pytester)
    assert len(ids) == len(set(ids)) == 2 * (96 + 14)
    assert ids[0] == "gpt-oss-120b-zipf-bs128"
    want = set()
    for suffix in ("", "-real"):
        want |= _ladder_ids("gpt-oss-120b", suffix) | _decode_ids("gpt-oss-120b", suffix)
    assert set(ids) == want
    assert len(_ladder_ids("gpt-oss-120b", "-real")) == 96


def test_both_models_at_real_parameters(pytester):
    ids = set(_collected_ids(pytester, "--model", "all", "--params", "real"))
    for model in MODELS:
        assert _ladder_ids(model, "-real") | _decode_ids(model, "-real") <= ids
        assert len(_ladder_ids(model, "-real")) == 96
    assert len(ids) == 2 * (96 + 14)


def test_decode_ids_cannot_collide_with_the_ladder():
    """gpt-oss-20b's ladder holds batches 32 and 64 too: the decode cases are other cases, with other ids."""
    for model in MODELS:
        ladder = [c.id for c in cases((model,), params=PARAMS)]
        both = [c.id for c in cases((model,), params=PARAMS, decode=True)]
        assert len(set(both)) == len(both) == len(ladder) + 2 * 2 * len(DECODE_BATCHES)  # no decode id is a ladder one
        assert set(ladder) <= set(both)
    assert {32, 64} <= set(batch_sizes(MODELS["gpt-oss-20b"]))


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (("--model", "all", "--params", "seed"), 2 * (96 + 14)),
        (("--model", "gpt-oss-20b", "--routing", "uniform", "--params", "seed"), 48 + 7),
        (("--routing", "zipf", "--params", "real"), 48 + 7),
        (("--batch-sizes", "128,4096"), 8),
        (("--batch-sizes", "77", "--routing", "uniform", "--model", "all", "--params", "seed"), 2),
    ],
)
def test_options_select_cases(pytester, args, count):
    assert len(_collected_ids(pytester, *args)) == count


PARAMS_MARKED = """
import pytest
import torch

@pytest.mark.params("seed")
def test_seed_only(case):
    assert case.params == "seed"
"""


def test_params_marker_narrows_the_cases(pytester):
    pytester.makepyfile(test_marked=PARAMS_MARKED)
    items, _ = pytester.inline_genitems("--gpu", "cpu", "--batch-sizes", "128")
    assert [item.callspec.id for item in items] == ["gpt-oss-120b-zipf-bs128", "gpt-oss-120b-uniform-bs128"]


def test_params_marker_with_none_selected_skips_saying_why(pytester):
    pytester.makepyfile(test_marked=PARAMS_MARKED)
    result = pytester.runpytest("--gpu", "cpu", "--batch-sizes", "128", "--params", "real", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*runs at the seed parameters only; --params real*"])


@pytest.mark.parametrize(
    ("bad", "why"),
    [("12a", "comma-separated integers"), ("0", "positive"), ("-4", "positive"), (",", "positive"), ("8,8", "once")],
)
def test_bad_batch_sizes_are_a_usage_error(pytester, bad, why):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", f"--batch-sizes={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--batch-sizes: batch sizes *{why}*"])


@pytest.mark.parametrize("precision", [[], ["--precision", "accurate"]])
def test_layout_fp8_without_the_fast_precision_is_a_usage_error(pytester, precision):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", "--layout", "fp8", *precision)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--layout fp8 holds the fast precision's folded bytes: add --precision fast*"])


def test_the_plugins_tiers_are_the_kernels_capabilities():
    """A GPU tier is a capability the product has a kernel for, and every kernel has a tier: the gpu marker's skip
    and --gpu auto's refusal are then the only guards a kernel test needs (the plugin's module imports no kernel)."""
    majors = range(16)
    assert [m for m in majors if m in pytest_plugin.ARCH_BY_MAJOR] == [m for m in majors if bmm1.has_kernel((m, 0))]
    assert not bmm1.has_kernel(None)


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
    result.assert_outcomes(passed=4, skipped=4)  # two routings, two parameter sets
    result.stdout.fnmatch_lines(["*SKIPPED*needs a GPU kernel tier; running the CPU tier: --gpu cpu*"])


def test_report_header_names_the_stack(pytester):
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", "--batch-sizes", "128")
    result.stdout.fnmatch_lines(
        ["moe-gather: tier cpu, device *", "moe-gather: torch *, triton 3.6.0, triton_kernels *"]
    )


def test_resolve_target():
    assert pytest_plugin.resolve_target("auto", H200).tier == "hopper"
    assert pytest_plugin.resolve_target("auto", ("B200", (10, 0))).tier == "blackwell"
    assert pytest_plugin.resolve_target("auto", None).why_cpu == "no CUDA device"
    with pytest.raises(pytest.UsageError, match=r"--gpu auto: moe-gather has no kernel for A100 \(sm_80\)"):
        pytest_plugin.resolve_target("auto", ("A100", (8, 0)))
    assert pytest_plugin.resolve_target("cpu", H200).tier == "cpu"
    # benchmarks and baselines belong to the tier measured: --gpu cpu on a GPU machine gates against baselines/cpu
    assert pytest_plugin.resolve_target("cpu", H200).measured is None
    assert pytest_plugin.resolve_target("auto", H200).measured == "NVIDIA H200"
    with pytest.raises(pytest.UsageError, match=r"found NVIDIA H200 \(sm_90\)"):
        pytest_plugin.resolve_target("blackwell", H200)


def test_xdist_workers_take_one_gpu_each(monkeypatch):
    node = SimpleNamespace(workerinput={})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    pytest_plugin.pytest_configure_node(node)
    assert node.workerinput["moe_gather_gpus"] == ["2", "3"]
    for worker, gpu in [("gw0", "2"), ("gw1", "3"), ("gw2", "2")]:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        pytest_plugin._pin_xdist_worker_gpu(SimpleNamespace(workerinput=node.workerinput))
        assert os.environ["CUDA_VISIBLE_DEVICES"] == gpu


def test_case_cache_builds_once_and_drops_the_oldest_past_its_budget():
    from moe_gather.problem import Case, make_problem
    from moe_gather.reference import ReferenceOutput

    tiny = MoEModel("tiny", num_experts=8, top_k=2, num_shards=2, hidden=64, n=16)
    problems = [make_problem(Case(tiny, "uniform", b), "cpu") for b in (64, 128, 256)]
    sizes = [pytest_plugin._CaseCache._size(p) for p in problems]
    assert sizes[0] >= problems[0].x.numel()  # x, the scales and the routing's tensors count
    cache = pytest_plugin._CaseCache(budget=sizes[1] + sizes[2])
    builds = []

    def build(i):
        builds.append(i)
        return problems[i]

    assert cache.get(0, lambda: build(0)) is problems[0] and cache.get(0, lambda: build(0)) is problems[0]
    cache.get(1, lambda: build(1))
    cache.get(2, lambda: build(2))  # over the budget: the oldest goes
    assert builds == [0, 1, 2] and list(cache.entries) == [1, 2] and cache.bytes == sizes[1] + sizes[2]
    ref = ReferenceOutput(out=torch.zeros(4, 8, dtype=torch.float8_e4m3fn), y=None, amax=torch.zeros(()))
    assert pytest_plugin._CaseCache._size(ref) == 32 + 4
    assert pytest_plugin._CaseCache(budget=0).get("big", lambda: problems[2]) is problems[2]  # returned, not kept


ACCURACY_TEST = """
import torch
from moe_gather.reference import TOLERANCES, check_against

def test_records(case, record_agreement):
    ref = torch.linspace(-3, 3, 256).to(torch.float8_e4m3fn)
    out = ref.clone()
    if case.batch == 4096:
        out.view(torch.uint8)[::2] ^= 1  # half the outputs one ulp off: recorded, then failed
    check_against(ref, out, TOLERANCES["kernel", case.params], case.id, record_agreement("kernel"))
"""


def test_accuracy_is_summarised_and_written_as_json(pytester):
    pytester.makepyfile(test_acc=ACCURACY_TEST)
    result = pytester.runpytest(
        "--gpu", "cpu", "--batch-sizes", "128,4096", "--params", "seed", "--accuracy-json=a.json"
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["*accuracy against the golden reference (kernel | peer)*", "*gpt-oss-120b-zipf-bs128 *100.0000%*"]
    )
    records = json.loads((pytester.path / "a.json").read_text())["records"]
    by_case = {r["case"]: r for r in records}
    assert by_case["gpt-oss-120b-zipf-bs4096"]["outcome"] == "failed"
    assert by_case["gpt-oss-120b-zipf-bs4096"]["bitwise_equal"] == 0.5
    assert by_case["gpt-oss-120b-uniform-bs128"]["outcome"] == "passed" and len(records) == 4


def test_auto_on_a_gpu_without_a_kernel_stops_the_run(pytester, monkeypatch):
    """An sm_80 GPU, faked by its capability: no green run that tested nothing."""
    monkeypatch.setattr(pytest_plugin, "detect_gpu", lambda: ("NVIDIA A100-SXM4-80GB", (8, 0)))
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--batch-sizes", "128")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu auto: moe-gather has no kernel for NVIDIA A100-SXM4-80GB (sm_80)*"])


def test_auto_without_a_gpu_runs_the_cpu_tier_and_says_so(pytester, monkeypatch):
    monkeypatch.setattr(pytest_plugin, "detect_gpu", lambda: None)
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--batch-sizes", "128", "--params", "seed")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["moe-gather: tier cpu, device no CUDA device (no CUDA device)"])


BENCH_TEST = """
import pytest

def test_case(case):
    assert case.batch == 128

def test_timed(case, benchmark):
    benchmark(lambda: None)
"""


def test_runs_without_pytest_benchmark(pytester):
    """-p no:benchmark (or pytest-benchmark not installed): no unknown-hook error, correctness runs, benchmarks skip
    saying why."""
    pytester.makepyfile(test_cases=BENCH_TEST)
    result = pytester.runpytest("-p", "no:benchmark", "--gpu", "cpu", "--batch-sizes", "128", "--params", "seed", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*pytest-benchmark is not active here (not installed, or -p no:benchmark)*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_plot_without_matplotlib_is_a_usage_error_up_front(pytester, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--gpu", "cpu", "--batch-sizes", "128", "--benchmark-plot=t.png")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-plot needs matplotlib: pip install 'moe-gather?plot?'*"])


def test_case_cache_keeps_what_it_has_when_an_entry_cannot_fit():
    cache = pytest_plugin._CaseCache(budget=100)
    small = SimpleNamespace(t=torch.zeros(10, dtype=torch.uint8))
    cache.get("small", lambda: small)
    big = SimpleNamespace(t=torch.zeros(1000, dtype=torch.uint8))
    assert cache.get("big", lambda: big) is big
    assert list(cache.entries) == ["small"] and cache.bytes == 10


@pytest.mark.usefixtures("needs_pytest_benchmark")
@pytest.mark.parametrize(
    ("args", "folder"),
    [([], "nvidia-h200"), (["--precision", "fast"], "nvidia-h200-fast"),
     (["--precision", "fast", "--layout", "fp8"], "nvidia-h200-fast-fp8")],
)  # fmt: skip
def test_each_precision_and_layout_compares_against_its_own_folder(pytester, monkeypatch, args, folder):
    """On a GPU tier the gate reads baselines/<gpu>[-precision][-layout]: with none stored there, --benchmark-compare
    is a usage error naming that folder (an H200 faked by its name and capability; nothing runs on it)."""
    monkeypatch.setattr(pytest_plugin, "detect_gpu", lambda: H200)
    pytester.makepyfile(test_cases=CASE_TEST)
    result = pytester.runpytest("--benchmark-compare", "--baselines-dir", str(pytester.path / "none"), *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--benchmark-compare: no baseline * in {pytester.path / 'none' / folder} (*"])
