"""The command line (`python -m moe_gather`, the `moe-gather` script): help, subcommands, arguments refused by name
before any GPU work; the bench's vendor operand, built on the CPU."""

import shutil
import subprocess
import sys

import pytest
import torch

from moe_gather import __main__ as cli


def test_help_lists_the_subcommands(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: python -m moe_gather {bench,accuracy}" in out and "accuracy  Accuracy anchors" in out


def test_no_or_unknown_command_is_a_usage_error(capsys):
    assert cli.main([]) == 2
    assert cli.main(["benchmark"]) == 2
    assert "unknown command 'benchmark'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["bench", "accuracy"])
@pytest.mark.parametrize(
    ("sizes", "why"), [("abc", "comma-separated integers"), ("0,-5", "positive integers"), ("8,8", "once")]
)
def test_bad_batch_sizes_are_refused_by_name(capsys, command, sizes, why):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--batch-sizes", sizes])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--batch-sizes: batch sizes" in err and why in err


@pytest.mark.parametrize("precision", [[], ["--precision", "accurate"]])
def test_bench_refuses_the_fp8_layout_without_the_fast_precision(capsys, precision):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "--layout", "fp8", *precision])
    assert exit_.value.code == 2
    assert "--layout fp8 holds the fast precision's folded bytes: add --precision fast" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU machine's answer: here a GPU would measure")
@pytest.mark.parametrize("command", ["bench", "accuracy"])
def test_measuring_without_a_gpu_says_so(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--batch-sizes", "128"])
    assert exit_.value.code == 2 and "CUDA GPU" in capsys.readouterr().err


def test_the_console_script_runs_the_same_main():
    script = shutil.which("moe-gather")
    assert script, "the moe-gather console script is installed with the package"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "{bench,accuracy}" in done.stdout
    module = subprocess.run([sys.executable, "-m", "moe_gather", "nope"], capture_output=True, text=True)
    assert module.returncode == 2 and "unknown command 'nope'" in module.stderr


def test_vendor_rows_are_each_slice_gathered_and_padded_to_16():
    """The vendor anchor's operand: slice e's rows x[gather_indx] at the start of its group, zeros after them up to a
    multiple of 16 rows; the offsets are the groups' ends."""
    from moe_gather.bench import vendor_rows

    x = torch.arange(40 * 4, dtype=torch.float32).reshape(40, 4)
    sizes = torch.tensor([3, 0, 17, 1], dtype=torch.int32)
    gather = torch.randperm(40, generator=torch.Generator().manual_seed(0))[:21].to(torch.int32)
    rows, offs = vendor_rows(x, gather, sizes)
    assert offs.tolist() == [16, 16, 48, 64] and rows.shape == (64, 4)
    expected = torch.zeros(64, 4)
    for start, first, size in ((0, 0, 3), (16, 3, 17), (48, 20, 1)):
        expected[start : start + size] = x[gather[first : first + size].long()]
    assert torch.equal(rows, expected)
