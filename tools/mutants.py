"""Deliberately degraded sm90 kernels, to show that the suite's tolerances catch them (run on an sm_90 GPU).

    python tools/mutants.py MUTANT [pytest arguments ...]     # e.g. partial-11 suites/test_kernel.py --gpu hopper

Each mutant replaces one Gluon helper of the kernel before anything compiles, then runs pytest in this process:
- partial-BITS (partial-11, partial-12, ...): each 32-wide K block's partial sum keeps BITS significant bits
  (truncated) before its promotion into the fp32 accumulator; Hopper's fp8 wgmma itself keeps ~13;
- epilogue-EXP (epilogue-9, epilogue-12, ...): the epilogue's two approximations (ex2 and rcp in the sigmoid) each
  come out 2**-EXP too large, so y is off by about 2**-EXP relative.
Exit status: pytest's, so a mutant that the suite fails to catch shows as a run that passes.
"""

from __future__ import annotations

import contextlib
import re
import sys

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.runtime.jit import JITFunction

from moe_gather import _epilogue, _sm90

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


def _forget_compiled_hashes():
    """Triton keeps each jitted function's source hash and the globals it saw once computed; the kernel's must see the
    swapped helper and its constants."""
    for namespace in (vars(_sm90), vars(_epilogue), globals()):
        for value in namespace.values():
            if isinstance(value, JITFunction):
                value.hash, value.used_global_vals = None, {}


@contextlib.contextmanager
def applied(name: str):
    """The kernel with mutant `name` in place (module docstring), restored on exit."""
    if (m := re.fullmatch(r"partial-(\d+)", name)) and 1 <= int(m[1]) <= 24:
        mask = (0xFFFFFFFF << (24 - int(m[1]))) & 0xFFFFFFFF  # sign, exponent and BITS - 1 stored mantissa bits
        globals()["_PARTIAL_ASM"] = gl.constexpr(f"and.b32 $0, $1, {mask:#x};")
        module, attr, replacement = _sm90, "_promote", _truncating_promote
    elif m := re.fullmatch(r"epilogue-(\d+)", name):
        globals()["_FACTOR"] = gl.constexpr(1.0 + 2.0 ** -int(m[1]))
        module, attr, replacement = _epilogue, "_approx", _skewed_approx
    else:
        raise ValueError(f"unknown mutant {name!r}: partial-BITS or epilogue-EXP")
    original = getattr(module, attr)
    setattr(module, attr, replacement)
    _forget_compiled_hashes()
    try:
        yield
    finally:
        setattr(module, attr, original)
        _forget_compiled_hashes()


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    with applied(argv[0]):
        return int(pytest.main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
