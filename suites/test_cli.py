"""The command line (`python -m moe_gather`, the `moe-gather` script): help, subcommands, arguments refused by name
before any GPU work."""

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
