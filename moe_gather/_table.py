"""Config tables of the kernels: rows per slice (each kernel says which estimate) -> config, first match wins."""

import functools
import os
from dataclasses import replace

PRINT_ENV = "MOE_GATHER_PRINT_CONFIG"  # "1": print each choice


def parse_fields(text: str, like=None) -> dict:
    """ "block_m=64,maxnreg=None" -> {"block_m": 64, "maxnreg": None}: config fields to override. A field that the
    config `like` holds as a bool, given as 0 or 1, stays a bool (the config prints as a table entry would)."""
    fields = {k: None if v == "None" else int(v) for k, v in (item.split("=") for item in text.split(","))}
    return {k: bool(v) if isinstance(getattr(like, k, None), bool) and v in (0, 1) else v for k, v in fields.items()}


def lookup(table, slice_size: int):
    """The table's entry for `slice_size`: the first whose limit holds it."""
    return next(c for limit, c in table if slice_size <= limit)


@functools.cache  # a rule's few configs, made (and checked) once each
def _with(entry, fields: tuple):
    return replace(entry, **dict(fields))


def choose(table, slice_size: int, force_env: str, arch: str, **fields):
    """The table's config for `slice_size` with `fields` replaced (a rule beside the table's key); `force_env`
    (e.g. "block_m=16,num_stages=2") overrides fields of every choice, for tests and sweeps, and drops the rule's
    where the two do not go together (a forced field the config refuses beside them)."""
    entry = lookup(table, slice_size)
    config = _with(entry, tuple(sorted(fields.items()))) if fields else entry
    if forced := os.environ.get(force_env):
        forced = parse_fields(forced, entry)
        try:
            config = replace(config, **forced)
        except ValueError:
            config = replace(entry, **forced)  # still refused: the forced fields alone are wrong
    if os.environ.get(PRINT_ENV):
        print(f"moe_gather {arch}: slice_size={slice_size} -> {config}", flush=True)
    return config
