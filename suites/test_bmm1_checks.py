"""moe_bmm1's host checks: each bad argument is a ValueError naming it, raised before any launch. They run on the
CPU: every check but the last (the device) needs no GPU."""

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from moe_gather import bmm1
from moe_gather.mxfp4 import quantize_mxfp4
from moe_gather.routing import make_ragged_metadata

E, K, N, BATCH = 2, 64, 64, 8


def _args(layout=None, **changes):
    """The call's arguments on the CPU; `layout` given: the weights at the fast precision in that layout."""
    g = torch.Generator().manual_seed(0)
    fast = {"precision": "fast", "layout": layout} if layout else {}
    weights = bmm1.prepare_weights(quantize_mxfp4(torch.randn(E, K, N, generator=g)), capability=(9, 0), **fast)
    sizes = torch.tensor([4, 2], dtype=torch.int32)
    args = {
        "x": torch.randn(BATCH, K, generator=g).to(torch.float8_e4m3fn),
        "weights": weights,
        "bias": torch.randn(E, N, generator=g),
        "gather_indx": torch.tensor([0, 3, 5, 7, 1, 2], dtype=torch.int32),
        "ragged": make_ragged_metadata(sizes, 6, 3),
        "x_scale": torch.ones(1),
        "out_scale": torch.ones(1),
        "alpha": 1.1,
        "limit": 1.4,
        "out": None,
    }
    return args | changes


def _call(**changes):
    a = _args(**changes)
    x, weights, bias, gather, ragged = (a.pop(k) for k in ("x", "weights", "bias", "gather_indx", "ragged"))
    return bmm1.moe_bmm1(x, weights, bias, gather, ragged, **a)


BAD = {
    "x dtype": ({"x": torch.zeros(BATCH, K)}, "x must be torch.float8_e4m3fn"),
    "x ndim": ({"x": torch.zeros(BATCH * K).to(torch.float8_e4m3fn)}, "x must have 2 dimension"),
    "x layout": ({"x": torch.zeros(K, BATCH).to(torch.float8_e4m3fn).t()}, "x must be contiguous"),
    "x not a tensor": ({"x": [[0.0]]}, "x must be a torch.Tensor"),
    "K mismatch": ({"x": torch.zeros(BATCH, K + 32).to(torch.float8_e4m3fn)}, "weights have K = 64, x has K = 96"),
    "K not multiple of 32": ({"x": torch.zeros(BATCH, 48).to(torch.float8_e4m3fn)}, "not a multiple of 32"),
    "weights raw": ({"weights": torch.zeros(E, N, K // 2, dtype=torch.uint8)}, "weights must come from prepare_"),
    "bias dtype": ({"bias": torch.zeros(E, N, dtype=torch.bfloat16)}, "bias must be torch.float32"),
    "bias shape": ({"bias": torch.zeros(E, N + 2)}, r"bias must be \[2, 64\]"),
    "gather dtype": ({"gather_indx": torch.zeros(6, dtype=torch.int64)}, "gather_indx must be torch.int32"),
    "gather ndim": ({"gather_indx": torch.zeros(2, 3, dtype=torch.int32)}, "gather_indx must have 1 dimension"),
    "ragged type": ({"ragged": torch.tensor([4, 2])}, "ragged must be RaggedMetadata"),
    "ragged slices": ({"ragged": make_ragged_metadata(torch.tensor([6], dtype=torch.int32), 6, 3)}, "1 slices"),
    "ragged rows": ({"ragged": make_ragged_metadata(torch.tensor([4, 3], dtype=torch.int32), 7, 3)}, "for 7 rows"),
    "x_scale dtype": ({"x_scale": torch.ones(1, dtype=torch.float64)}, "x_scale must be torch.float32"),
    "out_scale size": ({"out_scale": torch.ones(2)}, "out_scale must hold one element"),
    "alpha nan": ({"alpha": float("nan")}, "alpha must be a finite number"),
    "limit type": ({"limit": "1.4"}, "limit must be a finite number"),
    "alpha tensor": ({"alpha": torch.tensor(1.1)}, "alpha must be a finite number .Python or numpy., got Tensor"),
    "alpha bool": ({"alpha": True}, "alpha must be a finite number"),
    "limit zero": ({"limit": 0.0}, "limit must be a finite positive number, got 0.0"),
    "limit negative numpy": ({"limit": np.float32(-1.4)}, "limit must be a finite positive number"),
    "limit inf": ({"limit": float("inf")}, "limit must be a finite positive number"),
    "config type": ({"config": {"block_m": 64}}, "config must be a kernel config .Sm90Config, Sm100Config. or None"),
    "out dtype": ({"out": torch.zeros(6, N // 2)}, "out must be torch.float8_e4m3fn"),
    "out shape": ({"out": torch.zeros(6, N).to(torch.float8_e4m3fn)}, r"out must be \[6, 32\]"),
}  # fmt: skip


@pytest.mark.parametrize("bad", BAD, ids=list(BAD))
def test_bad_argument_is_named(bad):
    changes, message = BAD[bad]
    with pytest.raises(ValueError, match=message):
        _call(**changes)


def test_odd_n_is_refused():
    """prepare_weights already refuses N that is not a multiple of 64: the call's own check, on weights cut to 63
    rows."""
    weights = _args()["weights"]
    weights = replace(weights, scales=weights.scales[:, :, : N - 1])
    with pytest.raises(ValueError, match="N = 63 must be even"):
        _call(weights=weights, bias=torch.zeros(E, N - 1))


def test_output_aliasing_an_input_is_refused():
    x = torch.zeros(BATCH, K).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="out overlaps x"):
        _call(x=x, out=x.view(-1)[: 6 * (N // 2)].view(6, N // 2))


@pytest.mark.parametrize("number", [1.1, 2, np.float32(1.1), np.float64(1.1), np.int64(2)], ids=repr)
def test_host_numbers_are_accepted_by_one_rule(number):
    """Python and numpy reals alike (numbers.Real): past every check, to the device's."""
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        _call(alpha=number, limit=number)


def _overlaid(t: torch.Tensor, out_bytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(a copy of `t`, an fp8 [6, N/2] output) that share their first bytes."""
    room = torch.zeros(max(out_bytes, t.numel() * t.element_size()), dtype=torch.uint8)
    copy = room[: t.numel() * t.element_size()].view(t.dtype).view(t.shape)
    copy.copy_(t)
    return copy, room[:out_bytes].view(torch.float8_e4m3fn).view(6, N // 2)


@pytest.mark.parametrize(
    "where", ["weights.words", "weights.scales", "weights.folded", "ragged.block_schedule[64]", "ragged.slice_offs"]
)
def test_output_over_the_prepared_weights_or_the_schedules_is_refused(where):
    args = _args(layout="fp8" if where == "weights.folded" else None)
    owner_name, attribute = where.split(".")
    owner = args[owner_name]
    if "[" in attribute:
        attribute, key = attribute.rstrip("]").split("[")
        copy, out = _overlaid(getattr(owner, attribute)[int(key)], 6 * (N // 2))
        getattr(owner, attribute)[int(key)] = copy
    else:
        copy, out = _overlaid(getattr(owner, attribute), 6 * (N // 2))
        args[owner_name] = replace(owner, **{attribute: copy})
    with pytest.raises(ValueError, match=f"out overlaps {re.escape(where)}"):
        _call(**(args | {"out": out}))


@pytest.mark.parametrize("name", ["x_scale", "out_scale"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_scale_values_are_checked_in_debug_mode(monkeypatch, name, value):
    """The scales live on the device: reading them costs a sync (and no graph capture), so MOE_GATHER_DEBUG=1
    checks them; without it the call goes on (here, to the device check)."""
    with pytest.raises(ValueError, match="x must be on a CUDA device"):
        _call(**{name: torch.full((1,), value)})
    monkeypatch.setenv("MOE_GATHER_DEBUG", "1")
    with pytest.raises(ValueError, match=f"{name} must be finite and positive"):
        _call(**{name: torch.full((1,), value)})


def test_cpu_weights_without_a_capability_are_refused():
    w = quantize_mxfp4(torch.randn(E, K, N))
    with pytest.raises(ValueError, match="prepare_weights: weights on cpu need a capability"):
        bmm1.prepare_weights(w)


def test_valid_arguments_on_the_cpu_stop_at_the_device():
    with pytest.raises(ValueError, match="x must be on a CUDA device, got cpu"):
        _call()


def test_a_precision_other_than_the_weights_is_refused_by_name():
    """The two precisions read different encodings: a call asks for its weights' own or none."""
    assert _args()["weights"].precision == "accurate"  # Hopper's default (moe_gather._sm90.DEFAULT_PRECISION)
    with pytest.raises(ValueError, match="precision='fast', but the weights were prepared for 'accurate'"):
        _call(precision="fast")
    with pytest.raises(ValueError, match="precision must be 'accurate', 'fast' or None, got 'exact'"):
        _call(precision="exact")
    with pytest.raises(ValueError, match="precision must be 'accurate', 'fast' or None"):
        bmm1.prepare_weights(quantize_mxfp4(torch.randn(E, K, N)), capability=(9, 0), precision="exact")
    with pytest.raises(ValueError, match="the sm100 kernel has"):
        bmm1.prepare_weights(quantize_mxfp4(torch.randn(E, K, N)), capability=(10, 0), precision="fast")
