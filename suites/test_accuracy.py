"""The accuracy anchors (moe_gather.accuracy) on the CPU: the weight fold, the vendor and fp32 paths against the
golden reference (on the CPU both accumulate exactly enough to agree), and the page rendered from committed data."""

import gzip
import json

import pytest
import torch

from moe_gather import accuracy
from moe_gather.mxfp4 import MXFP4Weights, dequantize_mxfp4
from moe_gather.problem import Case, MoEModel, make_expert_params, make_problem

SMALL = MoEModel("small", num_experts=8, top_k=2, num_shards=2, hidden=512, n=64)


@pytest.fixture(scope="module")
def params():
    return make_expert_params(SMALL, "cpu")


def test_fold_into_e4m3_is_exact(params):
    w = dequantize_mxfp4(params.weights.expert(0), torch.float64)[0]
    folded, p = accuracy.fold_e4m3(w)
    assert folded.dtype == torch.float8_e4m3fn and folded.float().abs().max().item() <= 384
    assert torch.equal(folded.double() * 2.0**p, w)


def test_fold_refuses_scales_spread_past_e4m3():
    codes = torch.full((1, 2, 16), 0x22, dtype=torch.uint8)  # 1.0 everywhere, 32 values per row
    wide = MXFP4Weights(codes, torch.tensor([[[127], [127 - 20]]], dtype=torch.uint8))  # rows at 1 and 2**-20
    with pytest.raises(ValueError, match="do not fold exactly"):
        accuracy.fold_e4m3(dequantize_mxfp4(wide, torch.float64)[0])


@pytest.mark.parametrize("params_set", ["seed", "real"])
def test_vendor_and_fp32_paths_match_the_reference(params, params_set):
    """On the CPU torch's fp32 matmul and _scaled_mm round rarely: both sit within a rounding flip of the reference,
    which proves the gather order, the padding to 16 rows, the fold's power of two and the epilogue."""
    problem = make_problem(Case(SMALL, "zipf", 100, params_set), "cpu", params)
    assert problem.tokens % accuracy.CUBLAS_ROWS  # the padding is exercised
    row = accuracy.measure(problem, kernel_weights=None, with_peer=False)
    assert set(row["agreement"]) == {"fp32", "cublas_fp8", "cublas_fp8_fast"}
    for name, a in row["agreement"].items():
        assert a["count"] == problem.tokens * SMALL.n // 2, name
        # within a rounding flip: at most one output in a thousand off, none by more than one scaled ulp
        assert a["bitwise_equal"] > 0.999 and a["max_scaled"] <= 1, (name, a)


def test_page_renders_from_the_json(params, tmp_path):
    rows = [
        accuracy.measure(make_problem(Case(SMALL, "uniform", 64, p), "cpu", params), None, False)
        for p in ("seed", "real")
    ]
    data = {"device": {"name": "CPU"}, "stack": "torch", "command": "python -m moe_gather accuracy --model small"}
    data |= {"summary": accuracy.summarize(rows), "rows": rows}
    (tmp_path / "a.json").write_text(json.dumps(data))
    accuracy.main(["--from-json", str(tmp_path / "a.json"), "--markdown", str(tmp_path / "a.md")])
    page = (tmp_path / "a.md").read_text()
    assert page.startswith("# Accuracy on the CPU")
    assert "| real | cublas_fp8_fast | 1 |" in page and "| small-uniform-bs64-real |" in page
    worst = data["summary"]["seed/fp32"]
    assert f"| seed | fp32 | 1 | {worst['min_bitwise_equal']:.4%} |" in page
    # the committed runs are gzip-compressed: the same page from a .json.gz
    (tmp_path / "a.json.gz").write_bytes(gzip.compress((tmp_path / "a.json").read_bytes()))
    accuracy.main(["--from-json", str(tmp_path / "a.json.gz"), "--markdown", str(tmp_path / "b.md")])
    assert (tmp_path / "b.md").read_text() == page.replace("a.json", "a.json.gz").replace("a.md", "b.md")


def test_a_measured_run_is_written_gzip_compressed_where_its_name_says(params, tmp_path, monkeypatch):
    """`--json X.json.gz` writes gzip (the committed runs), read back whole by --from-json; a plain name writes
    plain JSON. The measuring itself is replaced by a CPU row (it needs a GPU)."""
    row = accuracy.measure(make_problem(Case(SMALL, "uniform", 64), "cpu", params), None, False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "CPU")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda: (0, 0))
    monkeypatch.setattr(accuracy, "run", lambda *args, **kwargs: args[4].append(row))
    for name, opener in (("a.json.gz", gzip.open), ("a.json", open)):
        accuracy.main(["--model", "gpt-oss-120b", "--json", str(tmp_path / name)])
        with opener(tmp_path / name, "rt") as f:
            assert json.load(f)["rows"] == [row]
        assert accuracy._merged([str(tmp_path / name)])["summary"] == accuracy.summarize([row])


def test_the_module_runs_as_a_script_too(tmp_path, params):
    """`python -m moe_gather.accuracy ARGS` takes the same arguments as `python -m moe_gather accuracy ARGS`."""
    import subprocess
    import sys

    rows = [accuracy.measure(make_problem(Case(SMALL, "uniform", 64), "cpu", params), None, False)]
    data = {
        "device": {"name": "CPU"},
        "stack": "torch",
        "command": "c",
        "summary": accuracy.summarize(rows),
        "rows": rows,
    }
    (tmp_path / "a.json").write_text(json.dumps(data))
    page = tmp_path / "a.md"
    command = [
        sys.executable,
        "-m",
        "moe_gather.accuracy",
        "--from-json",
        str(tmp_path / "a.json"),
        "--markdown",
        str(page),
    ]
    subprocess.run(command, check=True, capture_output=True)
    assert page.read_text().startswith("# Accuracy on the CPU")
