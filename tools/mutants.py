"""Deliberately degraded sm90 kernels, to show that the suite's tolerances catch them (run on an sm_90 GPU).

    python tools/mutants.py MUTANT [pytest arguments ...]     # e.g. partial-11 suites/test_kernel.py --gpu hopper
    python tools/mutants.py --report RUN.json ... [--markdown PAGE]   # RUN.json: a run's --accuracy-json

Each mutant replaces one Gluon helper of the kernel before anything compiles, then runs pytest in this process:
- partial-BITS (partial-11, partial-12, ...): each partial sum keeps BITS significant bits (truncated) before its
  promotion into the fp32 accumulator (a 32-wide K block's; with --precision fast, a 128-wide K tile's); Hopper's fp8
  wgmma itself keeps ~13;
- epilogue-EXP (epilogue-9, epilogue-12, ...): the epilogue's two approximations (ex2 and rcp in the sigmoid) each
  come out 2**-EXP too large, so y is off by about 2**-EXP relative.
Exit status: pytest's, so a mutant that the suite fails to catch shows as a run that passes. With pytest's
--accuracy-json, the file also records the mutant; --report tabulates such files per mutant and parameter set.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import sys

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.runtime.jit import JITFunction

from moe_gather import _epilogue, _sm90, _sm90_decode, _sm90_persistent, _sm90_ws

_promote = _sm90._promote
_approx = _epilogue._approx
_PARTIAL_ASM = gl.constexpr("")  # applied() sets the mask of the bits kept
_FACTOR = gl.constexpr(1.0)  # applied() sets 1 + 2**-EXP


@gluon.jit
def _truncating_promote(part, scale, acc):
    part = gl.inline_asm_elementwise(_PARTIAL_ASM, "=r,r", [part], dtype=gl.float32, is_pure=True, pack=1)
    return _promote(part, scale, acc)


@gluon.jit
def _skewed_approx(instruction: gl.constexpr, v):
    return _approx(instruction, v) * _FACTOR


# The kernels' modules: a mutant replaces a helper's name in every one that binds it (and each one's compiled hashes
# are forgotten: _sm90_persistent calls the helpers through _sm90's).
KERNEL_MODULES = (_sm90, _sm90_ws, _sm90_decode, _sm90_persistent)


def _forget_compiled_hashes():
    """Triton keeps each jitted function's source hash and the globals it saw once computed; the kernel's must see the
    swapped helper and its constants."""
    for namespace in (*(vars(m) for m in KERNEL_MODULES), vars(_epilogue), globals()):
        for value in namespace.values():
            if isinstance(value, JITFunction):
                value.hash, value.used_global_vals = None, {}


@contextlib.contextmanager
def applied(name: str):
    """The kernel with mutant `name` in place (module docstring), restored on exit."""
    if (m := re.fullmatch(r"partial-(\d+)", name)) and 1 <= int(m[1]) <= 24:
        mask = (0xFFFFFFFF << (24 - int(m[1]))) & 0xFFFFFFFF  # sign, exponent and BITS - 1 stored mantissa bits
        globals()["_PARTIAL_ASM"] = gl.constexpr(f"and.b32 $0, $1, {mask:#x};")
        modules, attr, replacement = KERNEL_MODULES, "_promote", _truncating_promote
    elif m := re.fullmatch(r"epilogue-(\d+)", name):
        globals()["_FACTOR"] = gl.constexpr(1.0 + 2.0 ** -int(m[1]))
        modules, attr, replacement = (_epilogue,), "_approx", _skewed_approx
    else:
        raise ValueError(f"unknown mutant {name!r}: partial-BITS or epilogue-EXP")
    originals = [(module, getattr(module, attr)) for module in modules if hasattr(module, attr)]
    for module, _ in originals:
        setattr(module, attr, replacement)
    _forget_compiled_hashes()
    try:
        yield
    finally:
        for module, original in originals:
            setattr(module, attr, original)
        _forget_compiled_hashes()


def report(paths: list[str], page: str = "PAGE") -> str:
    """A markdown page of mutant runs: per mutant and parameter set, the kernel tests failed and the worst figures."""
    lines = [
        "# Degraded kernels against the suite's tolerances",
        "",
        "Each mutant (tools/mutants.py) runs the kernel tests on the same cases; a mutant caught fails them. Page: "
        f"`python tools/mutants.py --report {' '.join(paths)} --markdown {page}`.",
        "",
        "| mutant | precision | params | failed | least bitwise | worst ulp | worst scaled | command |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        words = run["argv_mutant"]
        if "--accuracy-json" in words[:-1]:  # where it wrote, not what it ran
            at = words.index("--accuracy-json")
            words = words[:at] + words[at + 2 :]
        words = [a for a in words if not a.startswith("--accuracy-json=")]
        command = "python tools/mutants.py " + " ".join(words)
        given = [b for a, b in itertools.pairwise(words) if a == "--precision"]
        given += [a.split("=", 1)[1] for a in words if a.startswith("--precision=")]
        precision = given[-1] if given and given[-1] != "default" else "accurate"  # the default precision
        layouts = [b for a, b in itertools.pairwise(words) if a == "--layout"]
        layouts += [a.split("=", 1)[1] for a in words if a.startswith("--layout=")]
        precision += f", {layouts[-1]} layout" if layouts and layouts[-1] != "mxfp4" else ""
        for params in ("seed", "real"):
            records = [
                r
                for r in run["records"]
                if r["source"] == "kernel" and r["case"].endswith("-real") == (params == "real")
            ]
            if records:
                failed = sum(r["outcome"] == "failed" for r in records)
                lines.append(
                    f"| {run['mutant']} | {precision} | {params} | {failed} of {len(records)} | "
                    f"{min(r['bitwise_equal'] for r in records):.4%} | {max(r['max_ulp'] for r in records):g} | "
                    f"{max(r['max_scaled'] for r in records):.3g} | `{command}` |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--report":
        paths = [a for a in argv[1:] if not a.startswith("--markdown")]
        page = argv[argv.index("--markdown") + 1] if "--markdown" in argv else None
        paths = [p for p in paths if p != page]
        text = report(paths, page or "PAGE")
        if page:
            with open(page, "w") as f:
                f.write(text)
        print(text, end="")
        return 0
    with applied(argv[0]):
        status = int(pytest.main(argv[1:]))
    out = next((a.split("=", 1)[1] for a in argv if a.startswith("--accuracy-json=")), None)
    if out is None and "--accuracy-json" in argv[:-1]:
        out = argv[argv.index("--accuracy-json") + 1]
    if out:  # name the mutant in the run's record
        with open(out) as f:
            run = json.load(f)
        with open(out, "w") as f:
            json.dump(run | {"mutant": argv[0], "argv_mutant": argv}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
