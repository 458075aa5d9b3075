"""The degraded kernels of tools/mutants.py, on the CPU: each compiles for sm_90a with its change in the PTX, and the
kernel is itself again afterwards. On the H200 they fail the kernel tests (results/h200/mutants.md)."""

import importlib.util
import json
import re
from pathlib import Path

import pytest
from test_sm90 import compile_sm90, compile_sm90_ws

from moe_gather import _sm90

SPEC = importlib.util.spec_from_file_location("mutants", Path(__file__).parents[1] / "tools" / "mutants.py")
mutants = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(mutants)
CONFIG = _sm90.CONFIGS[-1][1]  # the block_m 128 entry


def _code(ptx: str) -> str:
    """PTX's code without its debug information (.file and .loc directives, .debug sections): a kernel taken from
    Triton's cache names the checkout that compiled it, and the file table's order follows what compiled first."""
    code = ptx.split(".section\t.debug", 1)[0]
    return re.sub(r"^\s*\.(file|loc)\s.*$", "", code, flags=re.M)


def _ptx() -> str:
    return _code(compile_sm90(CONFIG, f16=False, tile=0, zero_scale=False).asm["ptx"])


def _ws_ptx() -> str:
    return _code(compile_sm90_ws(_sm90.FP8_WS3).asm["ptx"])


@pytest.mark.parametrize(("name", "mask"), [("partial-11", "0xffffe000"), ("partial-13", "0xfffff800")])
def test_partial_mutant_truncates_each_partial_before_its_promotion(name, mask):
    plain = _ptx()
    with mutants.applied(name):
        mutated = _ptx()
    assert mask in mutated.lower() and mask not in plain.lower()
    # one mask per promotion: as many as the plain kernel has promotions (fma.rn into a tied accumulator)
    assert mutated.lower().count(mask) == len(re.findall(r"fma\.rn\.f32 (%r\d+), %r\d+, %r\d+, \1;", plain))
    assert _ptx() == plain


def test_partial_mutant_reaches_the_warp_specialized_tile():
    """The fast table's fp8-layout entry (_sm90_ws, which binds _sm90's helpers by name): one mask per promotion."""
    plain = _ws_ptx()
    with mutants.applied("partial-11"):
        mutated = _ws_ptx()
    promotions = len(re.findall(r"fma\.rn\.f32 (%r\d+), %r\d+, %r\d+, \1;", plain))
    assert promotions and mutated.lower().count("0xffffe000") == promotions
    assert _ws_ptx() == plain


def test_epilogue_mutant_scales_both_approximations():
    plain = _ptx()
    with mutants.applied("epilogue-9"):
        mutated = _ptx()
    factor = "0f3F804000"  # 1 + 2**-9 as PTX writes an fp32 immediate
    assert factor in mutated and factor not in plain
    assert _ptx() == plain


def test_unknown_mutant_is_refused():
    with pytest.raises(ValueError, match="unknown mutant"), mutants.applied("partial-0"):
        pass


def test_report_tabulates_runs_per_mutant_and_parameter_set(tmp_path):
    fields = ("case", "source", "outcome", "bitwise_equal", "max_ulp", "max_scaled")
    records = [
        dict(zip(fields, ("m-zipf-bs8", "kernel", "passed", 0.9995, 1, 1), strict=True)),
        dict(zip(fields, ("m-zipf-bs8-real", "kernel", "failed", 0.97, 24, 5), strict=True)),
        dict(zip(fields, ("m-zipf-bs8-real", "peer", "passed", 1.0, 0, 0), strict=True)),
    ]
    argv = ["epilogue-9", "suites/test_kernel.py", "--accuracy-json", "out.json"]
    run = {"mutant": "epilogue-9", "argv_mutant": argv, "records": records}
    (tmp_path / "run.json").write_text(json.dumps(run))
    table = mutants.report([str(tmp_path / "run.json")])
    assert "| epilogue-9 | accurate | seed | 0 of 1 | 99.9500% | 1 | 1 |" in table
    command = "`python tools/mutants.py epilogue-9 suites/test_kernel.py`"  # where it wrote is not part of it
    assert f"| epilogue-9 | accurate | real | 1 of 1 | 97.0000% | 24 | 5 | {command} |" in table
    for given in (["--precision", "fast"], ["--precision=fast"]):
        run["argv_mutant"] = ["epilogue-9", "suites/test_kernel.py", *given]
        (tmp_path / "fast.json").write_text(json.dumps(run))
        assert "| epilogue-9 | fast | seed | 0 of 1 |" in mutants.report([str(tmp_path / "fast.json")])
    assert table.startswith("# Degraded kernels")
