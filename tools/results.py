"""Render every page of results/ from the committed data beside it (and the baselines), or check that they match.

    python tools/results.py            # write the pages
    python tools/results.py --check    # exit 1 naming each page that differs from what its data renders (CI)

Pages: results/h200/speed.md (baselines/nvidia-h200), accuracy.md (accuracy_*.json.gz), mutants.md (mutants/*.json),
reliability.md (sanitize.log, suite.log.gz), gate.md (gate/*.log, *.log.gz), fast.md (fast/).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import os
import re
import sys
from pathlib import Path
from statistics import geometric_mean

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "results" / "h200"
BASELINES = ROOT / "baselines" / "nvidia-h200" / "Linux-CPython-3.12-64bit"
sys.path.insert(0, str(ROOT))

from moe_gather import accuracy  # noqa: E402
from moe_gather._sm90_config import (  # noqa: E402
    FAST_CONFIGS,
    FP8_CHUNKS,
    FP8_WS3,
    FP8_WS_FROM,
    HALVES_FROM,
    HOT_AT,
    WS_HALVES,
    Sm90Config,
)
from moe_gather.bench import summarize  # noqa: E402
from moe_gather.benchmarking import baseline_folder_name  # noqa: E402
from moe_gather.problem import DECODE_BATCHES, MODELS  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
import mutants  # noqa: E402
import ncu_regions  # noqa: E402
import sanitize_case  # noqa: E402
from decode_floor import DECODE_TILE, READ_PROGRAMS  # noqa: E402


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# Older data records some fields by their earlier names.
_RENAMED = {"num_buffers": "num_stages", "large_num_buffers": "large_num_stages", "pairs": "parity_rings",
            "narrow": "narrow_last_tile", "overlap": "two_partials", "extra": "tail_rows"}  # fmt: skip
_REVALUED = {"overlap_tiles=True": "overlap_tiles=2", "overlap_tiles=False": "overlap_tiles=0"}  # its earlier bool
_DEFAULTS = {f"{f.name}={f.default}" for f in dataclasses.fields(Sm90Config) if f.default is not dataclasses.MISSING}
# forced configs' flags read back as 0 / 1
_DEFAULTS |= {f"{d.split('=')[0]}={int(d.endswith('True'))}" for d in _DEFAULTS if d.endswith(("=False", "=True"))}


def _short_config(config: str) -> str:
    """Sm90Config(...) by its fields' current names, without those at their defaults."""
    fields = config.removeprefix("Sm90Config(").removesuffix(")").split(", ")
    fields = [f"{_RENAMED.get(f.split('=')[0], f.split('=')[0])}={f.split('=', 1)[1]}" for f in fields]
    fields = [_REVALUED.get(f, f) for f in fields]
    return ", ".join(f for f in fields if f not in _DEFAULTS)


def speed() -> str:
    lines = ["# Speed on the NVIDIA H200", ""]
    files = sorted(BASELINES.glob("*.json"))
    summary, tables = [], []
    for path in files:
        data = json.loads(path.read_text())
        rows = [b["extra_info"] for b in data["benchmarks"]]
        first, s = rows[0], summarize(rows)
        peer = (
            f"{s['geomean_speedup']:.2f}x the peer in geometric mean (min {s['min_speedup']:.2f}x, "
            f"{s['cases_slower_than_peer']} slower)"
            if "geomean_speedup" in s
            else "peer not timed"
        )
        summary.append(
            f"| `{path.name}` | {len(rows)} | {s['geomean_pct_roof']:.1%} | {s['min_pct_roof']:.1%} | {peer} |"
        )
        tables += [
            "",
            f"## {path.name}: {len(rows)} cases",
            "",
            f"Ceilings measured in the run: HBM read {first['read_bw'] / 1e12:.2f} TB/s, fp8 dense "
            f"{first['fp8_flops'] / 1e12:.0f} TFLOP/s; roofline time = max(bytes / read, flops / fp8).",
            "",
            "| case | rows | experts | us | TFLOP/s | TB/s | % roof | peer us | vs peer | config |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in rows:
            peer_us = f"{r['peer_us']:.1f}" if "peer_us" in r else "-"
            vs = f"{r['speedup']:.2f}x" if "speedup" in r else "-"
            tables.append(
                f"| {r['case']} | {r['tokens']} | {r['active_experts']} | {r['us']:.1f} | {r['tflops']:.1f} | "
                f"{r['tbps']:.2f} | {r['pct_roof']:.1%} | {peer_us} | {vs} | {_short_config(r['config'])} |"
            )
    lines += [
        "The throughput gate's baselines: sustained times (the median round over a second of CUDA-graph replays), "
        "the kernel and triton_kernels' matmul_ogs (its fast Hopper path, bf16 x) on the same inputs and routing, "
        f"ceilings measured in the same run. Data: `{_rel(BASELINES)}/*.json`; measured by "
        "`pytest suites/test_benchmark.py --gpu hopper --model all --benchmark-save=NAME` (triton_kernels on "
        f"PYTHONPATH for the peer's times); this page: `python tools/results.py`.",
        "",
        "| baseline | cases | roofline, geometric mean | least | against the peer |",
        "|---|---:|---:|---:|---|",
        *summary,
        *tables,
    ]
    return "\n".join(lines) + "\n"


VERDICT = re.compile(r"test_throughput\[(?P<case>[^\]]+)\]: .* time (?P<change>[+-][\d.]+)% \((?P<word>[^,]+),")
CLOSING = re.compile(r"^=*\s*(\d+ (passed|failed).*) in [\d.]+s")


def _gate_row(path: Path) -> str:
    text = _log(path)
    verdicts = {m["case"]: (float(m["change"]), m["word"]) for m in VERDICT.finditer(text)}
    closing = _closing(path)
    changes = [c for c, _ in verdicts.values()]
    spread = f"{min(changes):+.1f}% .. {max(changes):+.1f}%" if changes else "-"
    regressed = sum(word == "REGRESSED" for _, word in verdicts.values())
    return f"| `{path.name}` | {closing} | {len(verdicts)} | {spread} | {regressed} |"


def gate() -> str:
    logs = sorted([*(H200 / "gate").glob("*.log"), *(H200 / "gate").glob("*.log.gz")],
                  key=lambda p: p.name.removesuffix(".gz"))  # fmt: skip
    names = [p.name.removesuffix(".gz") for p in logs]
    if len(set(names)) != len(names):
        raise SystemExit("results/h200/gate: a log is there both plain and gzip-compressed")
    slowed = "MOE_GATHER_SM90_FORCE=block_m=16,num_stages=2,tail_rows=0,two_partials=0"
    lead = (
        "Each log is one run of `pytest suites/test_benchmark.py --gpu hopper ...`: compares of the unchanged kernel "
        "against its baselines, the saves of the decode baselines and of the fast precision's fp8 layout "
        "(`--precision fast --layout fp8`; `save_fast_fp8_three.log.gz`: the 55 cases of its block_m 128 entry, the "
        "warp-specialized tile on three consumers, by test id, with `--benchmark-compare` against the files before) "
        "and of its "
        "packed words (`--precision fast`; `save_fast_one_half.log.gz`: the 42 cases of 193 rows per slice and more "
        "when the 256-token tile took a slice's last 65-128 rows on its first half alone, the same way; "
        f"`save_fast_halves_from.log`: the case it took when it took over from {HALVES_FROM} rows; "
        f"`save_fast_hot.log.gz`, and `save_fast_fp8_hot.log.gz` in the fp8 layout: the block_m 64 entry's cases when "
        f"it took its slices of more than {HOT_AT} rows to a second launch), and a run "
        "with a slower config forced "
        f"(`{slowed} ... --benchmark-compare`) that the gate fails. Time change: the measured median against the "
        "baseline's. How the gate decides: docs/gate.md. This page: `python tools/results.py`."
    )
    rows = [_gate_row(p) for p in logs]
    head = ["| log | outcome | cases judged | time change | regressed |", "|---|---|---:|---|---:|"]
    return "\n".join(["# The throughput gate on the NVIDIA H200", "", lead, "", *head, *rows]) + "\n"


SANITIZE = re.compile(r"== (?P<tool>\w+) (?P<case>\S+)(?: N=(?P<n>\d+))?\n(?P<body>.*?)exit status (?P<rc>\d+)", re.S)


def _sanitize_summary(m: re.Match) -> str:
    """A sanitize.log run's summary line (ERROR or RACECHECK SUMMARY, with tools/racecheck_report.py's verdict where
    it read the report), '-' without one."""
    summary = re.search(r"(ERROR SUMMARY: .*|RACECHECK SUMMARY: .*)", m["body"])
    verdict = re.search(r"racecheck_report: (\d+ hazards, .*)", m["body"])
    return (summary[1] if summary else "-") + (f"; {verdict[1]}" if verdict else "")


def _run_config(m: re.Match) -> str:
    """The config a sanitize.log run launched (sanitize_case.py prints it), shortened; '-' without one."""
    config = re.search(r"(Sm90Config\([^)]*\))", m["body"])
    return _short_config(config[1]) if config else "-"


@functools.cache
def _sanitize_runs(log: Path) -> list[re.Match]:
    """A sanitize log's runs (tools/sanitize.sh), read once for its table and its missing cases."""
    return list(SANITIZE.finditer(log.read_text()))


def _not_run(log: Path, cases: str) -> str:
    """The cases of tools/<cases> that `log` has no run of, as a sentence ('' when it has them all)."""
    ran = {(m["tool"], m["case"], m["n"] and int(m["n"])) for m in _sanitize_runs(log)}
    lines = sanitize_case.read_cases(ROOT / "tools" / cases)
    missing = [
        " ".join(str(f) for f in line if f is not None)
        for line in lines
        if (line[0], f"{line[1]}-bs{line[2]}", line[3]) not in ran
    ]
    return f" Not run yet: {'; '.join(missing)}." if missing else ""


def _log(path: Path) -> str:
    """A log's text, gzip-compressed (.gz) or plain."""
    with accuracy.open_run(path) as f:
        return f.read()


def _closing(path: Path) -> str:
    """pytest's closing counts in a log."""
    return next((m[1] for line in _log(path).splitlines() if (m := CLOSING.match(line))), "no closing line")


# Tests of the committed results files themselves: a failure of one in a GPU run's log says nothing of the kernel.
RESULTS_TESTS = {"test_results_pages_match_their_data", "test_fast_bounds_fail_a_partial_truncated_to_13_bits"}


def _failures(path: Path) -> list[str]:
    """The tests a pytest log reports failed (its failures' section headers)."""
    return re.findall(r"^_+ (\S.*?) _+$", _log(path), re.MULTILINE)


def _sanitize_table(*logs: Path) -> list[str]:
    """sanitize.log runs as one table: tool, case, N, the config launched, the summary line, the exit status."""
    return [
        "| tool | case | N | config | summary | exit |",
        "|---|---|---:|---|---|---:|",
        *(
            f"| {m['tool']} | {m['case']} | {m['n'] or ('-' if m['case'].startswith('scaffold') else 5760)} | "
            f"{_run_config(m)} | {_sanitize_summary(m)} | {m['rc']} |"
            for log in logs
            for m in _sanitize_runs(log)
        ),
    ]


def reliability() -> str:
    closing = _closing(H200 / "suite.log.gz")
    return "\n".join([
        "# Reliability on the NVIDIA H200",
        "",
        f"The whole suite, both models, both parameter sets, ladder and decode batches: {closing} "
        "(`suite.log.gz`: `pytest suites/ --gpu hopper --model all --params all -n 8 --dist loadgroup "
        "--benchmark-disable`). Its reliability tests: guard zones around the output untouched, bitwise determinism "
        "over three runs, batch sizes off the ladder, one row per expert, NaN and Inf inputs through every table "
        "entry.",
        "",
        "compute-sanitizer on a case of each table entry (`sanitize.log`: `bash tools/sanitize.sh`, the cases of "
        "tools/sanitize_cases.txt; N narrowed where racecheck would take too long at the full N)."
        f"{_not_run(H200 / 'sanitize.log', 'sanitize_cases.txt')} This page: `python tools/results.py`.",
        "",
        *_sanitize_table(H200 / "sanitize.log"),
    ]) + "\n"  # fmt: skip


FAST = H200 / "fast"
FAST_BATCHES = (  # every other batch size of the gpt-oss-120b ladder
    "128,192,256,384,512,768,1024,1536,2048,3072,4096,6144,8192,10240,12288,14336,16384,18432,20480,22528,24576,"
    "26624,28672,30720"
)
FAST_DECODE = ",".join(map(str, DECODE_BATCHES))  # the decode sizes, in a run of their own (*_decode.json)


def _bar_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows the bar judges against the vendor (512 rows per slice and more) and the roofline (up to 16)."""
    return [r for r in rows if _rows_per_slice(r) >= 512], [r for r in rows if _rows_per_slice(r) <= 16]


def _rows_per_slice(row: dict) -> float:
    model = next(m for name, m in MODELS.items() if row["case"].startswith(f"{name}-"))
    return row["tokens"] / model.local_experts  # RaggedMetadata.local_slice_size


# The config sweeps behind the fast table (tools/sweep_sm90.py --precision fast --cases ... --configs "A;B;C"): each
# log's configs in the order its lines give them, per case (the first four logs print no overlap_tiles: their pairs
# ran the pair loop that overlap_tiles=2 names; sweep_chunks' twos ran the chunk loop by twos).
_P = "parity_rings=1,narrow_last_tile=2"
_O = f"{_P},overlap_tiles=2"
_C = f"{_P},overlap_tiles=4"
_WS = "block_m=128,num_warps=8,narrow_last_tile=2,warp_specialized=1"
_AT = " (at 40 and 232 registers, one work item a program)"  # the form those sweeps timed
_D = "num_warps=4,maxnreg=80,parity_rings=1,narrow_last_tile=2,widest_first=1"  # the first entry's other fields
_S = "num_warps=8,warp_specialized=1,split_k=1"
FAST_SWEEPS = {
    "sweep_overlap.log": [f"block_m=128,num_warps=8,{_O}", "block_m=128,num_warps=8,narrow_last_tile=2",
                          f"block_m=64,num_warps=8,{_P},tail_rows=16"],
    "sweep_large.log": [f"block_m=128,num_warps=8,{_O}", f"block_m=128,num_warps=4,{_O}",
                        f"block_m=64,num_warps=4,{_O}"],
    "sweep_mid.log": [f"block_m=64,num_warps=8,{_P},tail_rows=16", f"block_m=64,num_warps=4,{_O}",
                      f"block_m=128,num_warps=4,{_O}"],
    "sweep_small.log": [f"block_m=32,num_warps=8,{_P},maxnreg=80", f"block_m=32,num_warps=4,{_P},maxnreg=80",
                        f"block_m=32,num_warps=4,{_O}"],
    "sweep_chunks.log": [f"block_m=128,num_warps=8,{_P}, chunks of 2", f"block_m=128,num_warps=8,{_P},overlap_tiles=4"]
    * 2,
    "sweep_variants.log": [f"block_m=128,num_warps=8,{_O}", f"block_m=128,num_warps=8,{_P},overlap_tiles=4",
                           f"block_m=128,num_warps=8,{_O},num_stages=6"] * 2,
    "sweep_ws.log": [f"block_m=128,num_warps=8,{_C}", _WS + _AT, f"{_WS},num_stages=6{_AT}"] * 2,
    "sweep_ws_mid.log": [f"block_m=64,num_warps=8,{_P},tail_rows=16", _WS + _AT, f"block_m=128,num_warps=8,{_C}"] * 2,
    "sweep_ws_persistent.log": [f"block_m=128,num_warps=8,{_C}", f"{_WS},persistent=1",
                                f"{_WS},persistent=1,num_stages=6"] * 2,
    "sweep_decode.log": [f"block_m={m},num_stages={s},{_D}" for m, s in ((32, 4), (16, 8), (16, 16), (8, 16), (8, 24),
                                                                         (32, 8))] * 2,
    "sweep_split_k.log": [f"block_m=32,num_stages=4,{_D}", f"block_m=16,{_S},maxnreg=80",
                          f"block_m=32,narrow_last_tile=2,{_S},maxnreg=80", f"block_m=16,{_S}",
                          f"block_m=16,num_stages=6,{_S},maxnreg=80"] * 2,
    "sweep_overlap_small.log": [f"block_m=32,num_stages=4,{_D}", f"block_m=32,num_stages=4,{_D},overlap_tiles=2",
                                f"block_m=32,num_stages=6,{_D},overlap_tiles=2"] * 2,
    "sweep_overlap_entry1.log": ["block_m=32,num_stages=4,num_warps=8,maxnreg=80," + _P,
                                 f"block_m=32,num_stages=4,num_warps=8,maxnreg=80,{_O}"] * 2,
}  # fmt: skip
# A sweep line: the case, the weights' layout (printed since tools/sweep_sm90.py takes --layouts), the config, the time.
SWEEP_LINE = re.compile(r"^\s*(?P<case>\S+) (?:(?:mxfp4|fp8) )?m\d+ .*?:\s+(?P<us>[\d.]+) us", re.M)


def _sweeps() -> list[str]:
    """The sweeps as a table of times, one column per config of a log (listed twice where the log interleaves)."""
    width = max(len(names) for names in FAST_SWEEPS.values())
    lines = ["| log | case | " + " | ".join(f"config {i + 1}" for i in range(width)) + " |"]
    lines.append("|---|---|" + "---:|" * width)
    configs = []
    for name, names in FAST_SWEEPS.items():
        by_case: dict[str, list[str]] = {}
        text = (FAST / name).read_text()
        for m in SWEEP_LINE.finditer(text):
            by_case.setdefault(m["case"], []).append(m["us"])
        if "FAILED" in text or any(len(us) != len(names) for us in by_case.values()):
            raise ValueError(f"{name}: a config failed or a case lacks one; its columns would not match {names}")
        pad = ["-"] * (width - len(names))
        lines += [f"| `{name}` | {case} | " + " | ".join(us + pad) + " |" for case, us in by_case.items()]
        configs.append(f"- `{name}`: " + "; ".join(f"{i + 1}: `{n}`" for i, n in enumerate(names)))
    return [*configs, "", *lines]


def _baselines(layout: str) -> Path:
    """The fast precision's baselines folder for a weight layout (as the plugin names it)."""
    return ROOT / "baselines" / baseline_folder_name("NVIDIA H200", "fast", layout) / "Linux-CPython-3.12-64bit"


@functools.cache
def _saves(layout: str) -> dict[Path, list[dict]]:
    """The fast gate's baseline files in a weight layout, oldest first: their benchmarks (read once a run)."""
    return {p: json.loads(p.read_text())["benchmarks"] for p in sorted(_baselines(layout).glob("*.json"))}


def _gate_rows(saves: dict[Path, list[dict]]) -> list[dict]:
    """Each case's extra_info from the newest save holding it, as the gate judges it."""
    return list({b["name"]: b["extra_info"] for benchmarks in saves.values() for b in benchmarks}.values())


def _gate_by_case(layout: str) -> dict[str, dict]:
    """The fast gate's rows in a weight layout (_gate_rows) by case."""
    return {r["case"]: r for r in _gate_rows(_saves(layout))}


def _fast_gate(layout: str = "mxfp4") -> tuple[list[str], list[str]]:
    """The fast gate's baseline in a weight layout against the bar: its summary lines and its per-case table (the fp8
    layout's: the cases whose config reads its bytes; the others run the mxfp4 layout's kernel)."""
    saves = _saves(layout)
    paths = list(saves)
    rows = _gate_rows(saves)  # each test from the newest file holding it, as the gate judges it
    ladder = summarize([r for r in rows if "decode" not in r["case"]])
    decode = summarize([r for r in rows if "decode" in r["case"]])
    large, small_rows = _bar_rows(rows)
    large, small = [r["vendor_speedup"] for r in large], [r["pct_roof"] for r in small_rows]
    empty = next(m for m in _floor_lines() if m["what"] == "empty kernel")
    floor = float(empty["suite"])  # the suite's timing of a kernel that does nothing
    floored = [r for r in small_rows if r["roof_us"] < floor]

    def bound(fraction):  # % of roofline in geometric mean, each case at `fraction` of its roofline, floored
        return geometric_mean([r["roof_us"] / max(r["roof_us"] / fraction, floor) for r in small_rows])

    names = ", ".join(f"`{_rel(p)}`" for p in paths)
    option = "" if layout == "mxfp4" else f" --layout {layout}"
    summary = [
        f"The fast gate's baseline{' in the fp8 layout' if option else ''} ({names}: `pytest suites/test_benchmark.py "
        f"--gpu hopper --precision fast{option} --benchmark-save=NAME`, triton_kernels on PYTHONPATH"
        f"{_newer_saves(saves)}), against the bar:",
        "",
        f"- {ladder['cases']} ladder cases: {ladder['geomean_speedup']:.2f}x triton_kernels in geometric mean (min "
        f"{ladder['min_speedup']:.2f}x, slower on {ladder['cases_slower_than_peer']}; the bar 1.8x); "
        f"{decode['cases']} decode cases: {decode['geomean_speedup']:.2f}x (min {decode['min_speedup']:.2f}x).",
        f"- from 512 rows per slice ({len(large)} cases): {min(large):.2f}x .. {max(large):.2f}x the vendor anchor's "
        f"speed, {sum(v < 0.9 for v in large)} under 0.9 (the bar: none).",
        f"- up to 16 rows per slice ({len(small)} cases): {geometric_mean(small):.1%} of roofline in geometric mean "
        f"(the bar 85%). The suite's timing of an empty kernel ({floor} us, `decode_floor_floor.log`) is above the "
        f"roofline of {len(floored)} of them ({', '.join(r['case'] for r in floored)}): a kernel at its roofline on "
        f"every case would measure {bound(1.0):.1%}, one at 85% of it {bound(0.85):.1%}.",
    ]
    table = [
        "| case | rows | us | TFLOP/s | % roof | peer us | x peer | vendor us | x vendor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['case']} | {r['tokens']} | {r['us']:.1f} | {r['tflops']:.0f} | {r['pct_roof']:.1%} | "
            f"{r['peer_us']:.1f} | {r['speedup']:.2f} | {r['vendor_us']:.1f} | {r['vendor_speedup']:.2f} |"
            for r in rows
            if layout == "mxfp4" or "fp8_layout=True" in r["config"]
        ),
    ]
    return summary, table


def _words_over_bytes() -> str:
    """The packed words' gate time over the fp8 layout's on the uniform cases of the 256-token tile (HALVES_FROM rows
    per slice and more: slices near their mean), grouped by the rows of a slice's last item (the mean rows per slice
    mod 256)."""
    words, fp8 = _gate_by_case("mxfp4"), _gate_by_case("fp8")
    groups: dict[str, list[float]] = {"1-64": [], "65-128": [], "129-256": []}
    for case, r in words.items():
        rows = _rows_per_slice(r)
        if "-uniform-bs" not in case or math.ceil(rows) < HALVES_FROM:
            continue
        last = (math.ceil(rows) - 1) % 256 + 1  # a mean just past a multiple of 256: a few rows more
        groups["1-64" if last <= 64 else "65-128" if last <= 128 else "129-256"].append(r["us"] / fp8[case]["us"])
    return (
        "- the packed words' time over the fp8 layout's (the two gate baselines, other processes) on the uniform "
        f"cases from {HALVES_FROM} rows per slice, by the rows of a slice's last 256-token item (the mean rows per "
        "slice mod 256, the mean rounded up): "
        + "; ".join(f"{name} ({len(v)} cases) {min(v):.2f}x-{max(v):.2f}x" for name, v in groups.items())
        + ": the fold costs most where it serves the fewest tokens."
    )


# FP8_CHUNKS's fields where it differs from the fast fp8 table's block_m 128 entry, as MOE_GATHER_SM90_FORCE takes
# them (booleans 0 / 1): the commands of its forms on the fp8 layout.
def _force_fields(config: Sm90Config, unlike: Sm90Config | None = None) -> str:
    """`config`'s fields (those that differ from `unlike`'s) as MOE_GATHER_SM90_FORCE and --configs take them."""
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    return ",".join(
        f"{k}={int(v) if isinstance(v, bool) else v}"
        for k, v in values.items()
        if unlike is None or v != getattr(unlike, k)
    )


CHUNKS_FORCE = _force_fields(FP8_CHUNKS, FP8_WS3)  # over the fp8 table's block_m 128 entry


# Why a baselines folder holds a save after its first (the gate judges each case against the newest file holding it),
# by file name.
NEWER_SAVES = {
    **{
        f"0002_h200_fast{layout}": "saved when the table's block_m 64 entry took over from 25 rows per slice, four of "
        "them with a new config"
        for layout in ("", "_fp8")
    },
    **{
        f"0003_h200_fast{layout}": "saved when calls of up to 4 rows took their K tiles split between programs "
        "(DECODE_SPLITS)"
        for layout in ("", "_fp8")
    },
    # (why, which cases) where a save selected its cases otherwise than by batch size or `-k decode`
    "0005_h200_fast": (
        "saved when the table's large entry, the warp-specialized tile on 256-token items (WS_HALVES), took a slice's "
        "last 65-128 rows on its first half alone",
        "the {n} cases of 193 rows per slice and more (by test id: `suites/test_benchmark.py::test_throughput[CASE]`)",
    ),
    "0006_h200_fast": (
        "saved when the table's large entry (WS_HALVES) took over from {from_} rows per slice rather than 193",
        "the {n} case it moved (by test id: `suites/test_benchmark.py::test_throughput[CASE]`)",
    ),
    **{
        f"0007_h200_fast{layout}": (
            "saved when the table's block_m 64 entry took its slices of more than {hot} rows to a second launch on "
            "the large entry, on a side stream (hot_at)",
            f"the {{n}} cases of the block_m 64 entry, 25-{last} rows per slice (by test id: "
            "`suites/test_benchmark.py::test_throughput[CASE]`)",
        )
        for layout, last in (("", HALVES_FROM - 1), ("_fp8", FP8_WS_FROM - 1))
    },
    "0006_h200_fast_fp8": (
        "saved when that entry became the warp-specialized tile on three consumers (FP8_WS3)",
        "the {n} cases of the fp8 layout's block_m 128 entry, from 90 rows per slice (by test id: "
        "`suites/test_benchmark.py::test_throughput[CASE]`)",
    ),
}


def _newer_saves(saves: dict[Path, list[dict]]) -> str:
    """What the files after a folder's first hold (file -> its benchmarks, oldest first), and why they were saved
    (NEWER_SAVES)."""
    later = []
    for p, benchmarks in list(saves.items())[1:]:
        if p.stem not in NEWER_SAVES:
            raise ValueError(f"{p}: NEWER_SAVES does not say why it was saved")
        why = NEWER_SAVES[p.stem]
        if isinstance(why, tuple):
            why, which = why[0].format(from_=HALVES_FROM, hot=HOT_AT), why[1].format(n=len(benchmarks))
        elif all("decode" in b["extra_info"]["case"] for b in benchmarks):
            which = "the decode cases (`-k decode`)"
        else:
            batches = sorted({b["extra_info"]["batch"] for b in benchmarks})
            which = f"the cases at batch {','.join(map(str, batches))} (`--batch-sizes` those)"
        later.append(f"`{p.name}` {which}, {why}")
    return "".join(f"; {text}" for text in later)


def _sweep_label(r: dict) -> str:
    """A sweep row's config in a few words."""
    return (
        f"m{r['block_m']} w{r['num_warps']} {r['num_stages']} stages"
        + (f" overlap {r['overlap_tiles']}" if r["overlap_tiles"] else "")
        + (f" tail {r['tail_rows']}" if r["tail_rows"] else "")
        + (f" cap {r['maxnreg']}" if r["maxnreg"] else "")
        + ("" if r["parity_rings"] else " no parity rings")
        + (" fp8 layout" if r.get("fp8_layout") else "")
        + (f" narrow_last_tile={r['narrow_last_tile']}" if r["narrow_last_tile"] != 2 else "")
        + (" widest first" if r["widest_first"] else "")
        + (" split_k" if r.get("split_k") else " warp-specialized" if r.get("warp_specialized") else "")
        + (" persistent" if r.get("persistent") else "")
        + (f" lag {r['lag']}" if r.get("lag") else "")
        + (f" k_splits {r['k_splits']}" if r.get("k_splits", 1) > 1 else "")
        + (" bulk weights" if r.get("bulk_weights") else "")
        + (" slot buffers" if r.get("slot_buffers") else "")
        + (" wide tiles" if r.get("wide_tiles") else "")
    )


def _fast_beside_cublas(runs: list[dict]) -> list[str]:
    """Per model, the fast precision against cuBLAS's promoted fp8 GEMM case by case: its worst ulp and scaled
    error against cuBLAS's, and how many outputs more (or fewer) than cuBLAS's are off the reference or over 1."""
    lines = ["| model | cases | worst ulp minus cuBLAS's (least, most) | worst scaled minus cuBLAS's | outputs off the "
             "reference minus cuBLAS's (least, most; cases fewer / more) | outputs over 1 minus cuBLAS's (most; cases "
             "more) |",
             "|---|---:|---|---|---|---|"]  # fmt: skip
    for run in runs:
        pairs = [(r["agreement"]["kernel_fast"], r["agreement"]["cublas_fp8"]) for r in run["rows"]]
        off = [round((c["bitwise_equal"] - f["bitwise_equal"]) * f["count"]) for f, c in pairs]
        over = [round((f["scaled_over_one"] - c["scaled_over_one"]) * f["count"]) for f, c in pairs]
        ulp = [f["max_ulp"] - c["max_ulp"] for f, c in pairs]
        scaled = [f["max_scaled"] - c["max_scaled"] for f, c in pairs]
        lines.append(
            f"| {run['rows'][0]['model']} | {len(pairs)} | {min(ulp):g}, {max(ulp):g} | {min(scaled):g}, "
            f"{max(scaled):g} | {min(off)}, {max(off)}; {sum(o < 0 for o in off)} / {sum(o > 0 for o in off)} | "
            f"{max(over)}; {sum(o > 0 for o in over)} |"
        )
    return lines


def _config_sweep(name: str, table_ends: bool = False, ends: str = "the table's choice") -> list[str]:
    """A sweep of configs on one weights object (tools/sweep_sm90.py --layouts fp8, JSON; a config without
    fp8_layout reads its packed words): per case, each config's time in the order run and over the first's.
    table_ends: the first and last configs are each case's table choice ('table'), its k splits by the case, headed
    `ends`."""
    by_case = _sweep_by_case(name)
    if not by_case:
        raise ValueError(f"{name}: no rows")

    def labelled(rows):
        labels = [_sweep_label(r) for r in rows]
        return [ends, *labels[1:-1], ends] if table_ends else labels

    labels = labelled(next(iter(by_case.values())))
    if any(labelled(rows) != labels for rows in by_case.values()):
        raise ValueError(f"{name}: the cases ran different configs; its columns would not match")
    if table_ends:
        if any(_sweep_label(rows[0]) != _sweep_label(rows[-1]) for rows in by_case.values()):
            raise ValueError(f"{name}: a case's first and last configs differ: not its table choice run twice")
        by_case = {
            case + (f" (k_splits {rows[0]['k_splits']})" if rows[0]["k_splits"] > 1 else ""): rows
            for case, rows in by_case.items()
        }
    lines = [
        "| case | " + " | ".join(f"{i + 1}: {c}" + (" | / 1" if i else "") for i, c in enumerate(labels)) + " |",
        "|---|" + "---:|" * (2 * len(labels) - 1),
    ]
    for case, rows in by_case.items():
        first = rows[0]["us"]
        cells = [f"{rows[0]['us']:.1f}", *(f"{r['us']:.1f} | {r['us'] / first:.3f}" for r in rows[1:])]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return lines


def _sweep_by_case(name: str) -> dict[str, list[dict]]:
    """A sweep's rows (tools/sweep_sm90.py --json) by case, each case's in the order run."""
    by_case: dict[str, list[dict]] = {}
    for r in json.loads(_log(FAST / name)):  # gzip-compressed where the name ends in .gz
        by_case.setdefault(r["case"], []).append(r)
    return by_case


def _sweep_runs(name: str, configs: int) -> list[list[dict]]:
    """Each case's `configs` runs of a sweep in the order run, their outputs agreeing with the reference alike (a config
    differing there would not be the same computation)."""
    by_case = _sweep_by_case(name)
    if any(len(runs) != configs or len({r["bitwise"] for r in runs}) != 1 for runs in by_case.values()):
        raise SystemExit(f"{name}: a case lacks a run, or its configs agree with the reference differently")
    return list(by_case.values())


def _over_ends(runs: list[dict], i: int) -> float:
    """Run i's time over the mean of the first and last runs' (the same config run twice)."""
    return runs[i]["us"] * 2 / (runs[0]["us"] + runs[-1]["us"])


def _ab_rows(name: str, key: str | None = None) -> list[dict]:
    """A tools/ab_commit.py --json file's rows (those under `key` in a file of several runs), refused unless both
    sides had the same inputs and equal outputs."""
    ab = json.loads((FAST / name).read_text())
    ab = ab[key] if key else ab
    if not all(r["identical"] and r["same_inputs"] for r in ab):
        raise SystemExit(f"{name}: the two sides' outputs differ")
    return ab


def _halves_from() -> str:
    """Where the fast table's large entry takes over (HALVES_FROM): the A/B that sets the bound, one process."""
    ab = _ab_rows("ab_halves_from.json")
    words = _gate_by_case("mxfp4")  # its cases' tokens
    rows = {r["case"]: math.ceil(_rows_per_slice(words[f"gpt-oss-120b-{r['case']}"])) for r in ab}
    cases = ", ".join(f"{r['case']} ({rows[r['case']]} rows) {r['new_us'] / r['base_us']:.2f}x" for r in ab)
    ab_20b = _ab_rows("ab_20b_192.json")
    twenty = " and ".join(f"{r['new_us'] / r['base_us']:.2f}x ({r['case']})" for r in ab_20b)
    return (
        f"The table takes it from {HALVES_FROM} rows: forced on the block_m 64 entry's upper range against the table "
        f"in one process, best of 3 rounds, outputs byte-identical, its time over the entry's: {cases} "
        "(`ab_halves_from.json`: `python tools/ab_commit.py .peers/base "
        f"{','.join(r['case'] for r in ab)} --rounds 3 --precision fast --new-force "
        f"{_force_fields(WS_HALVES, FAST_CONFIGS[-2][1])} --json ...`, .peers/base this "
        "tree's moe_gather before the bound moved). On gpt-oss-20b, whose batch of 1536 has 192 rows per slice in "
        f"both routings, the block_m 64 entry forced (without hot_at) takes {twenty} the 256-token tile's time "
        f"(`ab_20b_192.json`: `... {','.join(r['case'] for r in ab_20b)} --model gpt-oss-20b --new-force "
        f"{_force_fields(dataclasses.replace(FAST_CONFIGS[-2][1], hot_at=0), WS_HALVES)}`, .peers/base this tree's "
        "moe_gather). The 256-token "
        "tile's sweep (`sweep_one_half_mid.json.gz`):"
    )


def _by_routing(ratio: dict[str, float]) -> tuple[list[float], list[float]]:
    """Per-case ratios split into the skewed (zipf) and the uniform cases'."""
    return tuple([v for case, v in ratio.items() if case.startswith(routing)] for routing in ("zipf", "uniform"))


def _ab_ratios(name: str, key: str | None = None) -> dict[str, float]:
    """An A/B file's (its run under `key`) time ratio by case: the new side's time over the base's."""
    return {r["case"]: r["new_us"] / r["base_us"] for r in _ab_rows(name, key)}


def _hot_cases(name: str, layout: str, key: str | None = None) -> tuple[str, list[float], list[float]]:
    """An A/B file (its run under `key`) of a hot_at form against the table: each case with its rows per slice and
    its time ratio, and the ratios of its skewed and its uniform cases."""
    gate = _gate_by_case(layout)
    ratio = _ab_ratios(name, key)
    text = ", ".join(
        f"{case} ({math.ceil(_rows_per_slice(gate[f'gpt-oss-120b-{case}']))}) {value:.3f}x"
        for case, value in sorted(ratio.items(), key=lambda item: item[1])
    )
    return text, *_by_routing(ratio)


def _hot() -> list[str]:
    """The block_m 64 entry's hot slices on a side stream (hot_at): the A/Bs that set it, its tests."""
    forced, forced_zipf, forced_uniform = _hot_cases("ab_hot_stream.json", "mxfp4")
    table, table_zipf, table_uniform = _hot_cases("ab_hot_table.json", "mxfp4")
    fp8, fp8_zipf, fp8_uniform = _hot_cases("ab_hot_table_fp8.json", "fp8")
    at_185, _, _ = _hot_cases("ab_hot_185.json", "mxfp4")
    forms = {key: _hot_cases("ab_hot_forms.json", "mxfp4", key)[0] for key in HOT_FORMS}
    serial_zipf, serial_uniform = _by_routing(_ab_ratios("ab_hot.json", "hot_words"))
    zipf, uniform = forced_zipf + table_zipf, forced_uniform + table_uniform
    span = lambda values: f"{min(values):.3f}x-{max(values):.3f}x"
    ab = "`python tools/ab_commit.py .peers/base CASES --rounds 3 --precision fast"
    forms_ab = "`python tools/ab_commit.py .peers/base CASES --rounds 3 --precision P"
    return [
        f"`hot_at={HOT_AT}` on the fast tables' block_m 64 entry: a call's slices of more than {HOT_AT} rows run on "
        "the large entry of the weights' table (`WS_HALVES`; `FP8_WS3` on the fp8 layout's bytes) in a second launch "
        "on a side stream, which the caller's stream waits on before the call returns; the other slices on the "
        "entry's own tiles (docs/sm90.md). Its time over the table's before it took it, in one process, best of 3 "
        f"rounds, outputs byte-identical, by case (rows per slice): on the packed words {span(zipf)} on the skewed "
        f"routing and {span(uniform)} on the uniform one (the empty second launch); on the fp8 layout's bytes "
        f"{span(fp8_zipf)} and {span(fp8_uniform)}.",
        "",
        f"- packed words, `ab_hot_stream.json` ({ab} --new-force hot_at={HOT_AT} --json ...`, before the table took "
        f"it): {forced}",
        f"- packed words, `ab_hot_table.json` ({ab} --json ...`, .peers/base this tree's moe_gather before the "
        f"table took it): {table}",
        f"- fp8 layout, `ab_hot_table_fp8.json` (the same with `--layout fp8`; its block_m 64 entry runs up to "
        f"{FP8_WS_FROM - 1} rows): {fp8}",
        f"- hot_at=185 instead (`ab_hot_185.json`, `--new-force hot_at=185`, before the table took it): {at_185}",
        "",
        "Forms the tables do not take, against the table in one process (`ab_hot_forms.json`, a run a key; "
        f"{forms_ab} ...`, P fast unless named, .peers/base this tree's moe_gather; best of 3 rounds, outputs "
        "byte-identical; docs/sm90-tried.md):",
        "",
        *(f"- `{key}`, {what}: {forms[key]}" for key, what in HOT_FORMS.items()),
        "",
        "In stream order (the form not kept: `ab_hot.json`, its `hot_words` rows, `--new-force hot_at=256` against "
        f"the table then) the two launches took {span(serial_zipf)} the table's time on skewed calls and "
        f"{span(serial_uniform)} on uniform ones (docs/sm90-tried.md). Tests: the hot slices of every kind against "
        "the reference, and captured in a CUDA graph and called on a stream of the caller's, both streams kept busy "
        "before the call, and a call on a GPU other than the current one (it needs two: on one GPU it skips, saying "
        "so); they run in the whole suites of both precisions and both layouts (`suite.log.gz`, Reliability, and the "
        "fast page's), "
        f"and the edge module alone on the fp8 layout's weights, {_closing(FAST / 'edges_fp8.log.gz')} "
        "(`edges_fp8.log.gz`: `pytest suites/test_kernel_edges.py --gpu hopper --precision fast --layout fp8 -n 8 "
        "--dist loadgroup -q -rs`). "
        "compute-sanitizer on zipf-bs3072 (both launches; `sanitize.log`, the fast "
        "table's cases) and, on the fp8 layout's bytes, zipf-bs10240 and zipf-bs9216 at N 384 (`fp8_sanitize.log`).",
    ]


AB_SELF = {  # ab_same.json's runs: the order the tool took its sides in
    "base_first": "the base first in every round, this tree's weights and problems made first",
    "each_first_in_turn": "each side first in turn, round by round (the tool as it is)",
    "base_made_first": "each side first in turn, the base's weights and problems made, called and captured first",
}


def _ab_self() -> list[str]:
    """tools/ab_commit.py against a copy of this tree's own package: the tool's bias between its two sides."""
    runs = {key: _ab_ratios("ab_same.json", key) for key in AB_SELF}
    every = [v for ratio in runs.values() for v in ratio.values()]
    cases = next(iter(runs.values()))
    return [
        f"`tools/ab_commit.py` with its base a copy of this tree's `moe_gather` (`ab_same.json`: `python "
        f"tools/ab_commit.py .peers/same {','.join(cases)} --rounds 4 --precision fast`, .peers/same that copy; 3 "
        "rounds in the first run; the first and the third run the tool with only its order changed): the tree's side "
        f"takes {min(every):.3f}x-{max(every):.3f}x the base's time, outputs byte-identical, in each of three runs:",
        "",
        *(
            f"- {what}: " + ", ".join(f"{case} {v:.3f}x" for case, v in runs[key].items())
            for key, what in AB_SELF.items()
        ),
        "",
        "The same code imported as the tree's package runs about 1% slower than as the base, whichever side goes "
        "first and whichever's buffers are made first: on identical code the tool prints 0.98x-1.00x (base over "
        "tree), only a ratio outside that is a difference between the kernels, and a variant at 1.00x-1.02x the time "
        "of its base may have cost nothing.",
    ]


HOT_FORMS = {  # ab_hot_forms.json's runs: what each forced on the table's choice
    "hot128_words": "hot_at=128 on the packed words, on the cases where it moves slices (`--new-force hot_at=128`)",
    "hot128_fp8": "hot_at=128 on the fp8 layout (`--layout fp8 --new-force hot_at=128`)",
    "fp8_m64_hot": (
        "the fp8 layout's block_m 64 entry with hot_at=256 where its table runs `FP8_WS3`, 90-185 rows per slice "
        "(`--layout fp8 --new-force block_m=64,num_warps=8,parity_rings=1,tail_rows=16,warp_specialized=0,"
        "persistent=0,fp8_layout=0,bulk_weights=0,hot_at=256`)"
    ),
    "accurate_stream": "the accurate table with hot_at=256 (`--precision accurate --new-force hot_at=256`)",
    "first_hot64": (
        "the first entry (up to 24 rows per slice) with hot_at=64 and widest_first off (hot_at refuses widest_first; "
        "`--new-force widest_first=0,hot_at=64`; uniform-bs256 and -bs768 hold no slice over 64 rows: an empty second "
        "launch)"
    ),
    "first_hot128": "the same with hot_at=128",
    "first_widest_off": "the first entry with widest_first off alone (`--new-force widest_first=0,hot_at=0`)",
}


def _halves() -> list[str]:
    """The fast table's large entry (WS_HALVES) against the chunks of four and the block_m 64 entry, its fp8-layout
    form against the fp8 table's, its tests, sanitizers."""
    fields = _force_fields(WS_HALVES)
    chunks = _force_fields(FP8_CHUNKS)
    fp8_fields = _force_fields(dataclasses.replace(WS_HALVES, num_stages=3, fp8_layout=True, bulk_weights=True))
    fp8_runs = _sweep_runs("sweep_halves_fp8.json", 3)
    swept_runs = _sweep_runs("sweep_halves.json", 3)
    words = [_over_ends(runs, 1) for runs in swept_runs]
    fp8 = [_over_ends(runs, 1) for runs in fp8_runs]
    drift = [runs[-1]["us"] / runs[0]["us"] for runs in fp8_runs]
    mid_w128 = [_over_ends(runs, 1) for runs in _sweep_runs("sweep_halves_mid.json", 3)]
    mid = {runs[0]["case"]: (runs[1]["us"] + runs[3]["us"]) / (runs[0]["us"] + runs[2]["us"])
           for runs in _sweep_runs("sweep_one_half_mid.json.gz", 4)}  # fmt: skip
    ab = _ab_rows("ab_one_half.json")
    ab_ratio = [r["new_us"] / r["base_us"] for r in ab]
    wins = [f"{case} {ratio:.3f}x" for case, ratio in mid.items() if ratio < 1]
    swept = sorted(runs[0]["tokens"] / MODELS["gpt-oss-120b"].local_experts for runs in swept_runs)
    return [
        f"`{_short_config(str(WS_HALVES))}`, the fast table's entry from {HALVES_FROM} rows per slice on the packed "
        "words: each "
        "consumer folds a K tile's words once and runs them on two 128-token halves, each half's four wgmmas on the "
        "same registers and its own promotion (docs/sm90.md); a slice's last 65-128 rows on the first half alone. "
        "Against the chunks of four K tiles at block_m 128 (`FP8_CHUNKS`, on the packed words) on "
        f"{len(swept)} cases from {swept[0]:.0f} to {swept[-1]:.0f} rows per slice, each run first and last: "
        f"{min(words):.3f}x to {max(words):.3f}x its time (over the mean of its two runs), its outputs' agreement "
        "with the reference the same on every case (`sweep_halves.json`: `python tools/sweep_sm90.py --precision "
        f'fast --cases ... --configs "C;{fields};C" --json ...`, C `{chunks}`). Against its earlier form (those '
        "last rows on the 128-token pairs, whose loop spilled, as did the 64-token pairs'): "
        f"{min(ab_ratio):.3f}x-{max(ab_ratio):.3f}x its time, outputs byte-identical, on {len(ab)} cases with few "
        "to many such slices (docs/sm90.md; `ab_one_half.json`: `python tools/ab_commit.py .peers/base "
        f"{','.join(r['case'] for r in ab)} --rounds 3 --precision fast --json ...`, .peers/base the earlier "
        "form's moe_gather):",
        "",
        *_config_sweep("sweep_halves.json", table_ends=True, ends="FP8_CHUNKS"),
        "",
        "At 90-192 rows per slice (the 13 gate cases there), against the block_m 64 entry (`table` in the sweeps "
        "below: the table's choice on all 13 when they ran, its bound then 192): the 256-token tile "
        f"takes {min(mid.values()):.3f}x-{max(mid.values()):.3f}x its time (the mean of two "
        f"runs each, interleaved; under 1.000x at {', '.join(wins) or 'none'}: `sweep_one_half_mid.json.gz`: "
        "`--configs "
        f'"table;{fields};table;{fields}"`), the 128-token tile on the packed words {min(mid_w128):.3f}x-'
        f"{max(mid_w128):.3f}x (`sweep_halves_mid.json`: `--configs "
        f'"table;{_force_fields(dataclasses.replace(WS_HALVES, block_m=128, num_stages=5))};table"`, its runs '
        "from a sweep that also ran the 256-token tile's earlier form after the first, those rows since replaced by "
        "`sweep_one_half_mid.json.gz`). " + _halves_from(),
        "",
        *_config_sweep("sweep_one_half_mid.json.gz"),
        "",
        "The 128-token tile:",
        "",
        *_config_sweep("sweep_halves_mid.json", table_ends=True),
        "",
        f"Its form on the fp8 layout's bytes (`HALVES_FP8_PLAN` in suites/_plans.py: A from shared memory, 3 stages) "
        f"against that table's warp-specialized entry (`FP8_WS`): {min(fp8):.3f}x to {max(fp8):.3f}x its time, "
        f"{geometric_mean(fp8):.3f}x in geometric mean, the entry's second run taking {min(drift):.3f}x to "
        f"{max(drift):.3f}x the time of its first. The fp8 table keeps FP8_WS: a gain of that size is under the "
        "gate's 5% threshold and its compares' run-to-run spread (docs/gate.md), so a table change could not be "
        f'confirmed there (`sweep_halves_fp8.json`: `--layouts fp8 --configs "table;{fp8_fields};table"`):',
        "",
        *_config_sweep("sweep_halves_fp8.json", table_ends=True),
        "",
        f"Against the reference and byte for byte against the chunks of four (the fp8-layout plan: against the packed "
        f"words' output): "
        f"{_closing(FAST / 'halves_edges.log')} (`halves_edges.log`: `pytest suites/test_kernel_edges.py --gpu hopper "
        "--precision fast` with the test ids of `test_warp_specialized_halves` and of the 256-token plans in the "
        "fp8-layout and opt-in tests: K = 96, 384 and 2880 on slices of every width it takes). compute-sanitizer "
        "with it forced (`halves_sanitize.log`: "
        f"`PRECISION=fast MOE_GATHER_SM90_FORCE={fields} SANITIZE_CASES=... bash tools/sanitize.sh`; the table's "
        "own run is in `sanitize.log`, under Reliability):",
        "",
        *_sanitize_table(FAST / "halves_sanitize.log"),
    ]


def _decode_rows() -> str:
    """The rows of each case of the decode sweeps (tools/sweep_sm90.py records them), as "case: rows" items."""
    rows = {}
    for name in ("decode_fast_120b", "decode_fast_20b"):
        model = name.split("_")[-1]
        rows |= {f"{model} {r['case']}": r["tokens"] for r in json.loads(_log(FAST / f"sweep_{name}.json.gz"))}
    return ", ".join(f"{case} {n}" for case, n in rows.items())


def _fp8_20b() -> list[str]:
    """gpt-oss-20b's cases in the fp8 layout beside the packed words' run of the same cases."""
    words = {r["case"]: r for r in json.loads((FAST / "bench_fast_20b.json").read_text())["rows"]}
    lines = [
        "| case | fp8 us | % roof | vendor us | x vendor | words us | x vendor | fp8 / words |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in json.loads((FAST / "bench_fast_fp8_20b.json").read_text())["rows"]:
        w = words[r["case"]]
        lines.append(
            f"| {r['case']} | {r['us']:.1f} | {r['pct_roof']:.1%} | {r['vendor_us']:.1f} | "
            f"{r['vendor_speedup']:.2f} | {w['us']:.1f} | {w['vendor_speedup']:.2f} | {r['us'] / w['us']:.3f} |"
        )
    return lines


def _layout_sweep(name: str) -> list[str]:
    """A sweep of configs on both weight layouts (tools/sweep_sm90.py --layouts mxfp4,fp8, JSON): per case and config,
    each layout's time and fp8's over mxfp4's."""
    rows = json.loads((FAST / name).read_text())
    configs = list(dict.fromkeys(_sweep_label(r) for r in rows))
    us = {(r["case"], _sweep_label(r), r["layout"]): r["us"] for r in rows}
    if len(us) != len(rows):
        raise ValueError(f"{name}: two rows share a case, layout and label; the label misses a field they differ in")
    cases = list(dict.fromkeys(r["case"] for r in rows))
    head = "| case | " + " | ".join(f"{c}: mxfp4 | fp8 | fp8 / mxfp4" for c in configs) + " |"
    lines = [head, "|---|" + "---:|---:|---:|" * len(configs)]
    for case in cases:
        cells = []
        for c in configs:
            mx, fp = us[case, c, "mxfp4"], us[case, c, "fp8"]
            cells += [f"{mx:.1f}", f"{fp:.1f}", f"{fp / mx:.3f}"]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return lines


FLOOR_LINE = re.compile(
    r"^(?P<what>.+?): suite (?P<suite>[\d.]+) us, in one graph (?P<graph>[\d.]+) us"
    r"(?:; bytes at 4.4 TB/s (?P<roof>[\d.]+) us)?$",
    re.M,
)


@functools.cache
def _floor_lines() -> list[re.Match]:
    """decode_floor_floor.log's lines: the empty kernel's and each decode case's times."""
    return list(FLOOR_LINE.finditer((FAST / "decode_floor_floor.log").read_text()))


READ_LINE = re.compile(
    r"^read (?P<experts>\d+) experts \((?P<mb>[\d.]+) MB\) on (?P<programs>\d+) programs: (?P<us>[\d.]+) us", re.M
)
K_LINE = re.compile(r"^K (?P<k>\d+) (?P<case>\S+): (?P<us>[\d.]+) us \((?P<tbps>[\d.]+) TB/s\)", re.M)


def _decode_floor() -> list[str]:
    """tools/decode_floor.py's two logs as tables: the timing method's floor, the plain reads, the kernel against K."""
    floor = _floor_lines()
    reads_text = (FAST / "decode_floor_reads.log").read_text()
    reads: dict[tuple[str, str], dict[str, str]] = {}
    for m in READ_LINE.finditer(reads_text):
        reads.setdefault((m["experts"], m["mb"]), {})[m["programs"]] = m["us"]
    programs = sorted({p for row in reads.values() for p in row}, key=int)
    ks: dict[str, dict[str, str]] = {}
    for m in K_LINE.finditer(reads_text):
        ks.setdefault(m["case"], {})[m["k"]] = m["us"] + ("" if float(m["tbps"]) else " (no rows)")
    k_values = sorted({k for row in ks.values() for k in row}, key=int)
    return [
        "Per call, the fast kernel: as the suite times it (one CUDA-graph replay a call, 20 a round) and with 20 "
        "calls captured in one graph (`decode_floor_floor.log`: `python tools/decode_floor.py floor`); the roofline "
        "time of the bytes at 4.4 TB/s.",
        "",
        "| case | suite us | in one graph us | bytes at 4.4 TB/s, us |",
        "|---|---:|---:|---:|",
        *(f"| {m['what']} | {m['suite']} | {m['graph']} | {m['roof'] or '-'} |" for m in floor),
        "",
        "A plain Triton read of one to sixteen experts' bytes (suite timing), and the kernel against K "
        "(`decode_floor_reads.log`: `python tools/decode_floor.py reads`; each K draws its own routing, and where "
        "it routes no row to the local shard the call launches nothing), us:",
        "",
        "| experts | MB | " + " | ".join(f"{p} programs" for p in programs) + " |",
        "|---:|---:|" + "---:|" * len(programs),
        *(f"| {e} | {mb} | " + " | ".join(row.get(p, "-") for p in programs) + " |" for (e, mb), row in reads.items()),
        "",
        "| case | " + " | ".join(f"K {k}" for k in k_values) + " |",
        "|---|" + "---:|" * len(k_values),
        *(f"| {case} | " + " | ".join(row.get(k, "-") for k in k_values) + " |" for case, row in ks.items()),
    ]


def _gate_reads() -> tuple[str, list[str]]:
    """gate_reads.json (tools/decode_floor.py gate-reads): the bar's cases and a plain read of their bytes, timed as
    the gate times; its line for the page's opening, and its table."""
    data = json.loads((FAST / "gate_reads.json").read_text())
    rows = data["rows"]
    share = {k: geometric_mean([r["roof_us"] / r[f"{k}_us"] for r in rows]) for k in ("fast", "accurate", "read")}
    over = [r["fast_us"] / r["read_us"] for r in rows]
    command = "`python tools/decode_floor.py gate-reads --json results/h200/fast/gate_reads.json`"
    opening = (
        f"- The bar's {len(rows)} cases timed as the gate times them, in one process ({command}; "
        f'"Decode: what bounds it"): a plain read of each case\'s roofline bytes reaches {share["read"]:.1%} of '
        f"roofline in geometric mean (the bar 85%), the kernel {share['fast']:.1%} (fast) and "
        f"{share['accurate']:.1%} (accurate), {min(over):.2f}x-{max(over):.2f}x the read's time (fast)."
    )
    table = [
        f"The bar's cases (up to 16 rows per slice), each timed as the gate times it, in one process: the kernel at "
        f"both precisions, and a plain Triton read of a buffer of the case's roofline bytes on the fastest of "
        f"{', '.join(map(str, data['grids']))} programs (`gate_reads.json`: {command}). {data['device']}; read ceiling "
        f"{data['ceilings']['read_bw'] / 1e12:.2f} TB/s; an empty kernel {data['empty_us']:.2f} us a call. A read "
        "above 100% finds its bytes in L2 (50 MB), as the gate's replays of one call's weights can.",
        "",
        f"- % of roofline in geometric mean: read {share['read']:.1%}, fast {share['fast']:.1%}, accurate "
        f"{share['accurate']:.1%}; the fast kernel {min(over):.2f}x-{max(over):.2f}x the read's time.",
        "",
        "| case | rows | experts | roofline us | read us | read programs | fast us | accurate us | read % roof "
        "| fast % roof | fast / read |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['case']} | {r['tokens']} | {r['active_experts']} | {r['roof_us']:.2f} | {r['read_us']:.2f} | "
            f"{r['read_programs']} | {r['fast_us']:.2f} | {r['accurate_us']:.2f} | {r['roof_us'] / r['read_us']:.1%} "
            f"| {r['roof_us'] / r['fast_us']:.1%} | {r['fast_us'] / r['read_us']:.2f} |"
            for r in rows
        ),
    ]
    return opening, table


def _decode_cold() -> tuple[str, list[str]]:
    """decode_cold.json (tools/decode_floor.py cold): its summary line for the page's opening, and its section."""
    data = json.loads((FAST / "decode_cold.json").read_text())
    rows = data["rows"]
    gate = _gate_by_case("mxfp4")
    small = [r for r in rows if _rows_per_slice(r) <= 16]
    cold_roof = geometric_mean([r["roof_us"] / r["fast_cold"] for r in small])
    read_roof = geometric_mean([r["roof_us"] / r["read_cold"] for r in small])
    read_less_empty = geometric_mean([r["roof_us"] / (r["read_cold"] - data["empty_us"]) for r in small])
    reads = (
        f"a plain read of the same bytes {read_roof:.1%} ({read_less_empty:.1%} with an empty kernel's time taken "
        "off): cold, the bar's 85% is above what the plain read of the weights alone reaches here"
    )
    gate_roof = geometric_mean([gate[r["case"]]["pct_roof"] for r in small])
    one = next(r for r in rows if r["case"].endswith("zipf-decode-bs1"))
    few = [r for r in rows if r["active_experts"] <= 3]
    many = [r for r in rows if r["active_experts"] >= 9]
    added = [r["fast_cold"] - r["fast_warm"] for r in few]
    moved = [r["fast_cold"] / r["fast_warm"] for r in many]
    forms = ("fast_decode_tile_cold", "fast_k1_cold", "fast_k2_cold", "fast_k4_cold")
    decode = [r for r in rows if "decode" in r["case"]]
    best = [min(r[f] for f in forms) / r["fast_cold"] for r in decode]
    command = "`python tools/decode_floor.py cold --json results/h200/fast/decode_cold.json`"
    opening = (
        f"- In device time with the weights cold ({command}; below): batch 1 (zipf-decode-bs1) "
        f"{one['fast_cold']:.1f} us (a plain read of its weights {one['read_cold']:.1f} us, triton_kernels "
        f"{one['peer_cold']:.1f}, the vendor {one['vendor_cold']:.1f}); up to 16 rows per slice ({len(small)} cases) "
        f"{cold_roof:.1%} of roofline in geometric mean, {gate_roof:.1%} on the same cases as the gate times them; "
        f"{reads}."
    )

    def us(r, key):
        return f"{r[key]:.1f}" if key in r else "-"

    section = [
        f"Per call, {data['calls']} or more calls captured in one graph, each call on a copy of the layer's weights "
        "in turn (the kernel's at each precision, the peer's, the vendor's, a plain reader's buffers), as many copies "
        "as keep each call's weights out of L2 until it comes round again (the others' bytes at least twice the "
        "L2's 50 MB: 16 copies for one expert, 2 from 16); warm: one copy, its weights in L2 where they fit. The "
        "weights of a model's other layers pass between two calls of one layer: cold is what a decode step sees. "
        f"x, the routing and the bias stay the same (in L2). {data['device']}; read ceiling "
        f"{data['ceilings']['read_bw'] / 1e12:.2f} TB/s; an empty kernel {data['empty_us']:.2f} us a call. The "
        f"plain read: the call's weight bytes (MXFP4 codes and scales of its active experts) on {READ_PROGRAMS} "
        "programs (`tools/read_ceiling.py`'s reader). Command: " + command + ".",
        "",
        f"- Batch 1 (zipf-decode-bs1, one expert's 8.8 MB): {one['fast_cold']:.1f} us fast, "
        f"{one['accurate_cold']:.1f} accurate, a plain read {one['read_cold']:.1f}, triton_kernels "
        f"{one['peer_cold']:.1f}, the vendor {one['vendor_cold']:.1f}; its roofline {one['roof_us']:.1f} us.",
        f"- Up to 16 rows per slice ({len(small)} cases): fast {cold_roof:.1%} of roofline in geometric mean cold; "
        f"the gate's baseline (one replay a call, the same weights every call) {gate_roof:.1%} on these cases; "
        f"{reads}.",
        f"- Cold against warm: {min(added):.1f} to {max(added):.1f} us more a call where 1-3 experts run "
        f"({len(few)} cases), {min(moved):.3f}x to {max(moved):.3f}x the time from 9 experts ({len(many)} cases).",
        f"- The fast kernel takes {min(r['fast_cold'] / r['read_cold'] for r in rows):.2f}x to "
        f"{max(r['fast_cold'] / r['read_cold'] for r in rows):.2f}x a plain read's time, "
        f"{min(r['peer_cold'] / r['fast_cold'] for r in rows):.2f}x to "
        f"{max(r['peer_cold'] / r['fast_cold'] for r in rows):.2f}x faster than triton_kernels, "
        f"{min(r['vendor_cold'] / r['fast_cold'] for r in rows):.2f}x to "
        f"{max(r['vendor_cold'] / r['fast_cold'] for r in rows):.2f}x faster than the vendor.",
        f"- The fast precision's other decode forms, cold (the decode tile `{_short_config(str(DECODE_TILE))}`; the "
        f"table's tile at 1, 2 and 4 K splits): the best of them {min(best):.3f}x to {max(best):.3f}x the table's "
        f"time on the {len(decode)} decode cases.",
        "",
        "| case | rows | experts | copies | roofline | read | fast cold | fast warm | accurate cold | accurate warm "
        "| peer cold | peer warm | vendor cold | vendor warm | fast % roof | decode tile | 1 split | 2 splits "
        "| 4 splits |",
        "|---|---:|---:|---:|" + "---:|" * 15,
        *(
            f"| {r['case']} | {r['tokens']} | {r['active_experts']} | {r['copies']} | {r['roof_us']:.1f} | "
            f"{r['read_cold']:.1f} | {r['fast_cold']:.1f} | {r['fast_warm']:.1f} | {r['accurate_cold']:.1f} | "
            f"{r['accurate_warm']:.1f} | {us(r, 'peer_cold')} | {us(r, 'peer_warm')} | {r['vendor_cold']:.1f} | "
            f"{r['vendor_warm']:.1f} | {r['roof_us'] / r['fast_cold']:.1%} | "
            + " | ".join(us(r, f) for f in forms)
            + " |"
            for r in rows
        ),
    ]
    return opening, section


def _decode_cold_forms() -> list[str]:
    """decode_cold_forms.json (tools/decode_floor.py cold-forms): the table's first entry with fields replaced, cold."""
    data = json.loads((FAST / "decode_cold_forms.json").read_text())
    cases = list(dict.fromkeys(r["case"] for r in data["rows"]))
    forms = list(dict.fromkeys(r["form"] for r in data["rows"]))
    times = {(r["case"], r["form"]): [] for r in data["rows"]}
    for r in data["rows"]:
        times[r["case"], r["form"]].append(r["us"])
    if any(r["equal"] != 1.0 for r in data["rows"]):
        raise SystemExit("decode_cold_forms.json: a form's output differs from the table's")
    return [
        "The fast table's choice with fields replaced, cold as above, its output equal to the table's byte for byte on "
        "every case (`decode_cold_forms.json`: `python tools/decode_floor.py cold-forms --cases "
        f'{",".join(cases)} --forms "{";".join(forms)};table" --json ...`; the table first and last), us:',
        "",
        "| form | " + " | ".join(cases) + " |",
        "|---|" + "---:|" * len(cases),
        *(
            f"| `{form}` | " + " | ".join(" / ".join(f"{t:.2f}" for t in times[case, form]) for case in cases) + " |"
            for form in forms
        ),
    ]


SPLITS_LINE = re.compile(
    r"^(?P<case>\S+) k_splits=(?P<s>\d+): one graph (?P<graph>[\d.]+) us, suite (?P<suite>[\d.]+) us", re.M
)
DURATION = re.compile(r"Duration\s+us\s+([\d.]+)")


PROFILED = (("uniform-bs16384", "fp8", "the chunks of four (`FP8_CHUNKS`) on the fp8 layout"),
            ("uniform-bs3072", "mxfp4", "the block_m 64 entry"), ("zipf-bs8192", "mxfp4", "the block_m 64 entry"),
            ("uniform-bs32", "mxfp4", "the first entry"))  # fmt: skip
SOL = {"us under ncu": DURATION.pattern, "SM GHz": r"SM Frequency\s+Ghz\s+([\d.]+)",
       "busiest pipe": r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)",
       "issue slots busy": r"Issue Slots Busy\s+%\s+([\d.]+)",
       "eligible / active warps a scheduler": r"Eligible Warps Per Scheduler\s+warp\s+([\d.]+)",
       "L2 throughput": r"L2 Cache Throughput\s+%\s+([\d.]+)", "L2 hit": r"L2 Hit Rate\s+%\s+([\d.]+)",
       "DRAM throughput": r"DRAM Throughput\s+%\s+([\d.]+)",
       "registers": r"Registers Per Thread\s+register/thread\s+(\d+)",
       "achieved warps an SM": r"Achieved Active Warps Per SM\s+warp\s+([\d.]+)"}  # fmt: skip
MBYTES = {"Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}
ACTIVE = r"(?<!Theoretical )Active Warps Per Scheduler\s+warp\s+([\d.]+)"
NCU_METRIC = re.compile(r"^\s+([a-z0-9_.]+)\s+(\S+)\s+([\d,.]+)\s*$", re.M)


def _sol(text: str, name: str) -> str:
    m = re.search(SOL[name], text)
    if name == "busiest pipe":
        return f"{m[1]} {m[2]}%"
    if name == "eligible / active warps a scheduler":
        return f"{m[1]} / {re.search(ACTIVE, text)[1]}"
    return m[1] + ("%" if "%" in SOL[name] else "")


K_SCAN_LINE = re.compile(r"^K (\d+) (\S+): kernel ([\d.]+) us, vendor ([\d.]+) us", re.M)
K_SCAN_STEP = re.compile(r"^step (\S+) K (\d+) to (\d+): kernel (\d+) TFLOP/s, vendor (\d+) TFLOP/s$", re.M)


def _span(fractions: list[float]) -> str:
    low, high = min(fractions), max(fractions)
    return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%}-{high:.0%}"


def _k_scan_config(text: str, case: str) -> str:
    return re.search(rf"^K \d+ {re.escape(case)}: .*?\((\d+ rows, .*)\)$", text, re.M)[1]


def _k_scan() -> list[str]:
    """The kernel and the vendor anchor against K (k_scan.log): times per K, and each added K's marginal rate."""
    text = (FAST / "k_scan.log").read_text()
    times = {(m[2], int(m[1])): (float(m[3]), float(m[4])) for m in K_SCAN_LINE.finditer(text)}
    ks = sorted({k for _, k in times})
    steps = {(m[1], int(m[2])): (m[4], m[5]) for m in K_SCAN_STEP.finditer(text)}
    cases = dict.fromkeys(case for case, _ in times)
    rate = {(case, k, who): int(steps[case, k][who]) for case, k in steps for who in (0, 1)}
    largest, *rest = cases
    first = rate[largest, ks[0], 0] / rate[largest, ks[0], 1]
    others = [rate[c, ks[0], 0] / rate[c, ks[0], 1] for c in rest]
    wide = [c for c in cases if "block_m=128" in _k_scan_config(text, c)]
    falls = [1 - rate[c, ks[1], 0] / rate[c, ks[0], 0] for c in wide]
    vendor_falls = [1 - rate[c, ks[1], 1] / rate[c, ks[0], 1] for c in wide]
    rows = []
    for case in cases:
        us = " | ".join(f"{times[case, k][0]:.1f} / {times[case, k][1]:.1f}" for k in ks)
        rates = " | ".join(f"{steps[case, k][0]} / {steps[case, k][1]}" for k in ks[:-1])
        rows.append(f"| {case} | {us} | {rates} |")
    return [
        "The kernel (the fast table's choice on the fp8 layout) and the vendor anchor on the same cases at K = "
        f"{', '.join(map(str, ks))} (gpt-oss-120b's routing of each case at every K; `k_scan.log`: "
        "`python tools/k_scan.py`). Times, kernel / vendor, and each added K's marginal rate (the flops it brings over "
        "the time it adds):",
        "",
        "| case | "
        + " | ".join(f"K {k} us" for k in ks)
        + " | "
        + " | ".join(f"TFLOP/s K {a}-{b}" for a, b in itertools.pairwise(ks))
        + " |",
        "|---|" + "---:|" * (2 * len(ks) - 1),
        *rows,
        "",
        f"From K {ks[0]} to {ks[1]} the kernel's added K runs at {first:.2f}x the vendor's rate on {largest} and "
        f"{'faster' if all(r > 1 for r in others) else 'at ' + ', '.join(f'{r:.2f}x' for r in others)} on the "
        f"others; from {ks[1]} to {ks[2]} the kernel's rate falls by {_span(falls)} on the block_m 128 cases while "
        f"the vendor's falls by {_span(vendor_falls)}. The kernel's time grows faster than K, so no straight line "
        "through these times separates a fixed part of a call from its K loop (one hypothesis, not measured here: "
        "an expert's fold bytes, 24 MB at K 4224 and 32 MB at 5632, outgrow what L2 keeps between its tiles).",
    ]


def _ws_profile() -> list[str]:
    """One launch of the fast fp8 table's warp-specialized entry under Nsight Compute: its headline metrics and its
    stall samples by role (tools/ncu_regions.py partitions)."""
    name = "ncu_ws_uniform-bs16384_fp8"
    text = _log(FAST / f"{name}.txt.gz")
    # (no registers: 168 a thread at launch, then setmaxnreg's split)
    metrics = "; ".join(f"{n} {_sol(text, n)}" for n in SOL if n != "registers")
    roles = ncu_regions.summary(FAST / f"{name}.csv.gz", ncu_regions.partitions).replace("\n", "; ")
    return [
        "One launch of the two-consumer tile (`FP8_WS`, the entry before three consumers) at uniform-bs16384 under "
        "Nsight Compute, its clocks locked to base "
        "(`PRECISION=fast LAYOUT=fp8 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section "
        "MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section "
        "SourceCounters --kernel-name regex:bmm1 --launch-count 1 -o rep python3 tools/sanitize_case.py uniform "
        f"16384`: `{name}.txt.gz`, its source page reduced in `{name}.csv.gz`): {metrics}. Its stall samples by role "
        f"(`python3 tools/ncu_regions.py partitions {name}.csv.gz`; 'rest': the item starts, the epilogues and "
        f"Triton's partition scaffolding): {roles}.",
    ]


def _bounds() -> list[str]:
    """What bounds each size: Nsight Compute's full set on two cases, the bytes the SMs read from L2 against what
    plain readers reach, and stall sampling around each case's hottest loop."""
    full = {(c, lay): (FAST / f"ncu_full_{c}_{lay}.txt").read_text() for c, lay, _ in PROFILED[:2]}
    sol = [
        "| case | " + " | ".join(SOL) + " |",
        "|---|" + "---|" * len(SOL),
        *(f"| {c} ({lay}) | " + " | ".join(_sol(t, n) for n in SOL) + " |" for (c, lay), t in full.items()),
    ]
    moved, pulled = [], {}
    for c, lay, _ in PROFILED[:2]:
        m = {k: (unit, float(v.replace(",", ""))) for k, unit, v in NCU_METRIC.findall(
            (FAST / f"ncu_bytes_{c}_{lay}.txt").read_text())}  # fmt: skip
        ghz, dram = m["sm__cycles_elapsed.avg.per_second"][1], m["dram__bytes_read.sum"]
        sms = int(re.search(r"# SMs\s+SM\s+(\d+)", full[c, lay])[1])
        rate = m["l1tex__m_xbar2l1tex_read_bytes.sum.per_second"]
        tbps = pulled[c] = rate[1] * {"Tbyte/s": 1, "Gbyte/s": 1e-3}[rate[0]]
        hit = m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"][1] / m["lts__t_sectors_srcunit_tex_op_read.sum"][1]
        moved.append(f"{c} ({lay}) {tbps:.2f} TB/s from L2 into the SMs ({tbps * 1e3 / sms / ghz:.0f} bytes a cycle "
                     f"an SM at {ghz} GHz), {hit:.1%} of its reads hit L2, "
                     f"{dram[1] * MBYTES[dram[0]]:.0f} MB read from DRAM")  # fmt: skip
    readers = json.loads((FAST / "l2_ceiling.json").read_text())["l2_rows"]
    reader_rows = [
        "| programs an SM | warps | TB/s | GB/s an SM |",
        "|---:|---:|---:|---:|",
        *(f"| {r['programs_per_sm']} | {r['warps']} | {r['l2_tbps']:.2f} | {r['gbps_per_sm']:.1f} |" for r in readers),
    ]
    hot = [
        f"- {c} ({lay}; {label}: `ncu_{c}_{lay}.csv.gz`, `ncu_{c}_{lay}.txt`): "
        f"{DURATION.search((FAST / f'ncu_{c}_{lay}.txt').read_text())[1]} us under ncu; "
        + ncu_regions.summary(FAST / f"ncu_{c}_{lay}.csv.gz", ncu_regions.hot).replace("\n", "; ")
        + "."
        for c, lay, label in PROFILED
    ]
    return [
        "One launch of each case's config (the fast table's choice; on the fp8 layout `FP8_CHUNKS`, the chunks of "
        "four, the warp-specialized entry not profiled) under Nsight Compute (`ncu --clock-control none --set full "
        "--kernel-name regex:bmm1 --launch-count 1 python3 tools/sanitize_case.py uniform B`, `PRECISION=fast "
        "LAYOUT=L`: `ncu_full_*.txt`):",
        "",
        *sol,
        "",
        "Bytes the SMs read from L2 on the same cases, one launch each (`ncu --metrics "
        "l1tex__m_xbar2l1tex_read_bytes.sum,... python3 tools/sanitize_case.py ...`: `ncu_bytes_*.txt`): "
        + "; ".join(moved)
        + ". What plain readers pull from L2 (`l2_ceiling.json`: `python3 tools/read_ceiling.py --l2`; a 16 MB "
        "buffer read again and again past L1, 16 bytes a thread a load):",
        "",
        *reader_rows,
        "",
        "The 8-warp readers pull less as programs are added: a limit of that reader (its cause not known), not of "
        f"L2: the kernel's one 8-warp program an SM pulls {pulled[PROFILED[0][0]]:.1f} TB/s at {PROFILED[0][0]}.",
        "",
        "Stall sampling split around each launch's hottest loop (`ncu --section SourceCounters --section "
        "WarpStateStats ...`, reduced by `tools/ncu_regions.py reduce` and summed by `tools/ncu_regions.py hot`; the "
        "`.txt` keeps the details page's sections up to its occupancy graphs; "
        "'before' holds the start and the code of the kernel's other tile widths, placed before the main tile's "
        "loop, 'after' the rest of K and the epilogue):",
        "",
        *hot,
    ]


def _k_splits() -> list[str]:
    """k_splits: the sweep (sweep_k_splits.json.gz), decode device times (decode_floor_splits.log), where one decode
    launch's warps spend their time (the ncu_uniform-bs2*.csv.gz source pages), its GPU tests and sanitizers."""
    times: dict[str, dict[int, float]] = {}
    for row in json.loads(_log(FAST / "sweep_k_splits.json.gz")):
        times.setdefault(row["case"], {})[row["k_splits"]] = row["us"]
    splits = sorted({s for row in times.values() for s in row})
    sweep = [
        "| case | " + " | ".join(f"k_splits {s}" for s in splits) + " | best / 1 |",
        "|---|" + "---:|" * (len(splits) + 1),
        *(f"| {case} | " + " | ".join(f"{row[s]:.1f}" for s in splits) + f" | {min(row.values()) / row[1]:.2f} |"
          for case, row in times.items()),
    ]  # fmt: skip
    one_graph: dict[str, dict[str, tuple[str, str]]] = {}
    for m in SPLITS_LINE.finditer((FAST / "decode_floor_splits.log").read_text()):
        one_graph.setdefault(m["case"], {})[m["s"]] = (m["graph"], m["suite"])
    ks = sorted({s for row in one_graph.values() for s in row}, key=int)
    device = [
        "| case | " + " | ".join(f"k_splits {s}: one graph / suite us" for s in ks) + " |",
        "|---|" + "---:|" * len(ks),
        *(f"| {case} | " + " | ".join(" / ".join(row[s]) for s in ks) + " |" for case, row in one_graph.items()),
    ]
    profiles = []
    for name, label in (("ncu_uniform-bs2", "the table's tile"), ("ncu_uniform-bs2_k_splits4", "k_splits 4")):
        duration = DURATION.search((FAST / f"{name}.txt").read_text())[1]
        regions = ncu_regions.summary(FAST / f"{name}.csv.gz").replace("\n", "; ")
        profiles.append(f"- {label} (`{name}.csv.gz`, `{name}.txt`): {duration} us under ncu; {regions}.")
    return [
        "Each tile's K tiles split between programs, the last to finish adding their sums (`Sm90Config.k_splits`; "
        "the table takes it for calls of at most 4 rows, `DECODE_SPLITS`), on the fast table's first entry. Suite "
        "timing, us (`sweep_k_splits.json.gz`: "
        '`python tools/sweep_sm90.py --precision fast --cases ... --configs "E0;E0,k_splits=2;..." --json ...`, E0 '
        "the entry's fields):",
        "",
        *sweep,
        "",
        "Per call with 20 calls in one graph (the host's launch cost paid once) and as the suite times it "
        "(`decode_floor_splits.log`: `python tools/decode_floor.py splits`):",
        "",
        *device,
        "",
        "Where one launch's warps spend their time at uniform-bs2 (one expert, one row: 90 programs of 4 warps; "
        "k_splits 4: 360), by region of the SASS, from Nsight Compute's stall sampling (`ncu --section "
        "SourceCounters ... python3 tools/sanitize_case.py uniform 2`, reduced by `tools/ncu_regions.py`; ncu runs "
        "the SMs at 1.36 GHz):",
        "",
        *profiles,
        "",
        f"Against the reference: {_closing(FAST / 'k_splits_edges_fast.log')} with --precision fast "
        f"(`k_splits_edges_fast.log`), {_closing(FAST / 'k_splits_edges_accurate.log')} with accurate "
        "(`k_splits_edges_accurate.log`): `pytest suites/test_kernel_edges.py --gpu hopper --precision P -k "
        "k_splits`, which selects the k_splits tests and, by their ids, every opt-in plan. compute-sanitizer with "
        "k_splits 4 on the table's choice (`k_splits_sanitize.log`: `PRECISION=fast MOE_GATHER_SM90_FORCE=k_splits=4 "
        "bash tools/sanitize.sh` with the cases below):",
        "",
        *_sanitize_table(FAST / "k_splits_sanitize.log"),
    ]


def _beside_accurate(rows: list[dict], accurate: dict) -> tuple[list[str], list[str]]:
    """Fast's rows beside the accurate precision's times on the same cases: summary lines and a per-case table."""
    over_accurate = [accurate[r["case"]]["us"] / r["us"] for r in rows]
    large, small = _bar_rows(rows)
    s = summarize(rows)
    summary = [
        f"- fast: {s['geomean_speedup']:.2f}x triton_kernels in geometric mean over "
        f"{len(rows)} cases (min {s['min_speedup']:.2f}x), "
        f"{s['geomean_pct_roof']:.1%} of roofline; the accurate precision "
        f"{geometric_mean([r['peer_us'] / accurate[r['case']]['us'] for r in rows]):.2f}x, "
        f"{geometric_mean([accurate[r['case']]['pct_roof'] for r in rows]):.1%}.",
        f"- fast against accurate: {geometric_mean(over_accurate):.3f}x the speed in geometric mean "
        f"({min(over_accurate):.3f}x .. {max(over_accurate):.3f}x; slower on {sum(x < 1 for x in over_accurate)}).",
        f"- the vendor anchor's time over fast's, from 512 rows per slice ({len(large)} cases): "
        f"{min(r['vendor_speedup'] for r in large):.2f}x .. {max(r['vendor_speedup'] for r in large):.2f}x"
        + (
            f"; up to 16 rows per slice ({len(small)} cases): {geometric_mean([r['pct_roof'] for r in small]):.1%} "
            "of roofline in geometric mean."
            if small
            else "."
        ),
    ]
    table = [
        "| case | rows | fast us | accurate us | fast / accurate | TFLOP/s | % roof | peer us | x peer | vendor us "
        "| x vendor | fast config |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        a = accurate[r["case"]]
        table.append(
            f"| {r['case']} | {r['tokens']} | {r['us']:.1f} | {a['us']:.1f} | {a['us'] / r['us']:.3f} | "
            f"{r['tflops']:.0f} | {r['pct_roof']:.1%} | {r['peer_us']:.1f} | {r['speedup']:.2f} | "
            f"{r['vendor_us']:.1f} | {r['vendor_speedup']:.2f} | {_short_config(r['config'])} |"
        )
    return summary, table


FAST_20B_BATCHES = "32,64,128,256,512,1024,2048,3072,4096,5120,6144,7680"  # every fourth of its ladder


def fast() -> str:
    """The fast precision beside the accurate one, the peer and the vendor anchor (one process each run)."""
    gate_summary, gate_table = _fast_gate()
    fp8_summary, fp8_table = _fast_gate("fp8")
    cold_opening, cold_section = _decode_cold()
    reads_opening, reads_table = _gate_reads()
    fast_data = json.loads((FAST / "bench_fast.json").read_text())
    decode = json.loads((FAST / "bench_fast_decode.json").read_text())
    accurate = {
        r["case"]: r
        for name in ("bench_accurate.json", "bench_accurate_decode.json")
        for r in json.loads((FAST / name).read_text())["rows"]
    }
    rows = [r for r in decode["rows"] + fast_data["rows"] if r["tokens"]]  # cases with rows on this shard
    ceilings = fast_data["ceilings"]
    summary, table = _beside_accurate(rows, accurate)
    rows_20b = json.loads((FAST / "bench_fast_20b.json").read_text())
    accurate_20b = {r["case"]: r for r in json.loads((FAST / "bench_accurate_20b.json").read_text())["rows"]}
    summary_20b, table_20b = _beside_accurate(rows_20b["rows"], accurate_20b)
    acc_runs = [accuracy._merged([str(H200 / f"accuracy_{model}.json.gz")]) for model in ("120b", "20b")]
    acc_rows = [
        f"| {run['rows'][0]['model']} | {key.split('/')[0]} | {key.split('/')[1]} | {w['cases']} | "
        f"{w['min_bitwise_equal']:.4%} | {w['max_ulp']:g} | {w['max_scaled']:g} | {w['max_scaled_over_one']:.4%} |"
        for run in acc_runs
        for key, w in sorted(run["summary"].items())  # _merged summarizes each run
    ]
    closing = _closing(FAST / "suite.log.gz")
    failures = sorted({*_failures(FAST / "suite.log.gz"), *_failures(FAST / "suite_fp8.log.gz")})
    if kernel_failures := [name for name in failures if name not in RESULTS_TESTS]:
        raise SystemExit(f"the fast suite's logs report kernel tests failed: {kernel_failures}")
    failed = (
        f" Failed in them: {', '.join(f'`{name}`' for name in failures)}, tests of the committed results files, not"
        " of the kernel (no GPU needed; CI runs them on the tree): those runs read results files other than the"
        " committed ones. Every other test passes."
        if failures
        else ""
    )
    return "\n".join([
        "# The fast precision on the NVIDIA H200",
        "",
        *gate_summary,
        "",
        *fp8_summary,
        _words_over_bytes(),
        "",
        reads_opening,
        cold_opening,
        "",
        f"Beside the accurate precision: gpt-oss-120b, {len(rows)} cases (every other ladder batch size from 128 "
        "and the decode sizes 1-64 with rows on the shard, both routings), "
        f"{fast_data['device']['name']}; ceilings measured in the run: read {ceilings['read_bw'] / 1e12:.2f} TB/s, "
        f"fp8 {ceilings['fp8_flops'] / 1e12:.0f} TFLOP/s.",
        "",
        *summary,
        "",
        "Measured by `python -m moe_gather bench --precision fast --batch-sizes B --json "
        f"{_rel(FAST / 'bench_fast.json')}` (the kernel, triton_kernels and the vendor anchor, "
        "`torch._scaled_grouped_mm` with the weights dense fp8, in one process) and `python -m moe_gather bench "
        f"--precision accurate --no-peer --no-vendor --batch-sizes B --json {_rel(FAST / 'bench_accurate.json')}`, "
        f"B = {FAST_BATCHES}; the same with B = {FAST_DECODE} into `*_decode.json` (its vendor and peer in their own "
        "process, so the ceilings above are the main run's). This page: `python tools/results.py`.",
        "",
        *table,
        "",
        "## gpt-oss-20b",
        "",
        f"{len(rows_20b['rows'])} cases, both routings, one process a run: `python -m moe_gather bench --model "
        f"gpt-oss-20b --precision fast --batch-sizes B --json {_rel(FAST / 'bench_fast_20b.json')}` and the "
        f"accurate precision's with `--no-peer --no-vendor` into `{_rel(FAST / 'bench_accurate_20b.json')}`, "
        f"B = {FAST_20B_BATCHES}; ceilings measured in the run: read "
        f"{rows_20b['ceilings']['read_bw'] / 1e12:.2f} TB/s, fp8 {rows_20b['ceilings']['fp8_flops'] / 1e12:.0f} "
        "TFLOP/s.",
        "",
        *summary_20b,
        "",
        *table_20b,
        "",
        "## The fast gate's baseline, per case",
        "",
        *gate_table,
        "",
        "## The configs compared (us, sustained; `python tools/sweep_sm90.py --precision fast --cases ... --configs "
        '"1;2;..."`)',
        "",
        *_sweeps(),
        "",
        "The table's bounds, each config on the same weights in one process (`--layouts fp8 --json ...`; the "
        "configs without fp8_layout read the packed words):",
        "",
        "- `sweep_boundary_small.json`, 13-140 rows per slice (uniform-bs768: 24, -bs896: 30, -bs1024: 31, -bs1280: "
        "40, -bs1536: 50; zipf-bs160: 13, -bs4096: 16, -bs5120: 22, -bs2048: 35, -bs1792: 140):",
        "",
        *_config_sweep("sweep_boundary_small.json"),
        "",
        "- `sweep_boundary_large.json`, 192-411 rows per slice (uniform-bs6144: 192, -bs6656: 208, -bs7168: 227, "
        "-bs7680: 241, -bs8192: 257; zipf-bs24576: 208, -bs3584: 409, -bs6144: 411):",
        "",
        *_config_sweep("sweep_boundary_large.json"),
        "",
        "- `sweep_tail32.json.gz`, 40-227 rows per slice: the block_m 64 entry's tail rows 16 (run first and last) "
        "against 32, at 128 registers and uncapped:",
        "",
        *_config_sweep("sweep_tail32.json.gz"),
        "",
        "- `sweep_m64_overlap.json`, 40-227 rows per slice: the block_m 64 entry (run first and last) against its "
        "tile with K tiles in pairs or chunks of four (overlap_tiles 2, 4; no tail rows):",
        "",
        *_config_sweep("sweep_m64_overlap.json"),
        "",
        "- `sweep_m16_capped.json.gz`, decode and up to 32 rows per slice: the first entry (run first and last; 2 K "
        "splits up to 4 rows) against block_m 16 on 4 stages at 64 or 72 registers (8 or 7 programs a "
        "multiprocessor, 6 for the entry; a slice of 17-32 rows takes two tiles):",
        "",
        *_config_sweep("sweep_m16_capped.json.gz", table_ends=True),
        "",
        "Decode: calls of 1-16 rows (`sweep_decode_*.json.gz`, the words alone: `--layouts mxfp4`), the first entry "
        "(run first and last) against its K tiles split between programs (k_splits) and, fast only, the "
        "warp-specialized tile's split_k form; the table splits calls of at most 4 rows (`DECODE_SPLITS`). Rows of "
        "each case: " + _decode_rows() + ".",
        "",
        *(
            line
            for name in ("decode_fast_120b", "decode_fast_20b", "decode_accurate_120b", "decode_accurate_20b")
            for line in (f"- `sweep_{name}.json.gz`:", "", *_config_sweep(f"sweep_{name}.json.gz"), "")
        ),
        "## The fp8 layout",
        "",
        "`prepare_weights(..., precision=\"fast\", layout=\"fp8\")` holds the fold's e4m3 bytes beside the packed "
        "words; weights holding them take the fast fp8 table (`FAST_FP8_CONFIGS`), whose block_m 128 entry hands them "
        "to wgmma from shared memory: the warp-specialized tile (`FP8_WS3`: a producer warpgroup copying each row "
        "block's K tile by TMA, three consumers on 192-row items, 4 stages, one program a multiprocessor; two "
        "consumers, `FP8_WS`, where N is not a multiple of 192); the packed words' table "
        f"takes the 256-token tile from {HALVES_FROM} rows per slice (`WS_HALVES`, below). Forced over the fp8 table, "
        f"`MOE_GATHER_SM90_FORCE={CHUNKS_FORCE}` runs `FP8_CHUNKS` on the bytes. "
        "Below, the sweeps, forms and profiles that name the block_m 128 entry ran `FP8_CHUNKS` reading the fp8 "
        "layout (each row's config says so). Its gate baseline's cases that read the bytes (the others run the "
        "mxfp4 layout's kernel):",
        "",
        *fp8_table,
        "",
        "Each config on both layouts in one process, us (`python tools/sweep_sm90.py --precision fast --layouts "
        'mxfp4,fp8 --cases ... --configs "C1,fp8_layout=1;..." --json ...`; the rows have no `fp8_layout` field: '
        "their fp8 rows read the folded bytes on every config, as `fp8_layout=1` asks):",
        "",
        "- `sweep_fp8_large.json`:",
        "",
        *_layout_sweep("sweep_fp8_large.json"),
        "",
        "- `sweep_fp8_mid.json` (the block_m 64 entry's tiles and the block_m 128 entry's):",
        "",
        *_layout_sweep("sweep_fp8_mid.json"),
        "",
        "- `sweep_shallow.json` (the first entry, and shallower rings at 64 and 80 registers: 8 and 6 programs a "
        "multiprocessor):",
        "",
        *_layout_sweep("sweep_shallow.json"),
        "",
        "On the fp8 layout alone (`--layouts fp8`):",
        "",
        "- `sweep_fp8_chunks.json`: the block_m 128 entry in chunks of 4, 6 and 8 K tiles (6 and 8 with "
        "`Sm90Config`'s overlap_tiles check and the kernel's `CHUNKS` test widened to them; the table's 4 run again "
        "last):",
        "",
        *_config_sweep("sweep_fp8_chunks.json"),
        "",
        "- `sweep_fp8_midrange.json`: 96-192 rows per slice, the block_m 64 entry against block_m 128 reading the fp8 "
        "layout (one tile a slice up to 128 rows), its last tiles narrowed twice or once:",
        "",
        *_config_sweep("sweep_fp8_midrange.json"),
        "",
        "- `sweep_fp8_m64_large.json`: from 193 rows per slice, the block_m 128 entry (run first and last) against the "
        "block_m 64 tile reading the fp8 layout, with tail rows 16 or its K tiles in pairs (two programs a "
        "multiprocessor):",
        "",
        *_config_sweep("sweep_fp8_m64_large.json"),
        "",
        "- `sweep_fp8_tail64.json`: 161 and 175 rows per slice (uniform-bs5120, -bs5632), the table's block_m 64 "
        "entry on the packed words (run first and last) against block_m 128 reading the fp8 layout with 64 tail "
        "rows (a slice of 129-192 rows in one tile of 128 + 64 tokens) and in chunks of four K tiles:",
        "",
        *_config_sweep("sweep_fp8_tail64.json"),
        "",
        "- `sweep_wide_mid.json`, `sweep_wide_large.json`: every tile 192 tokens (`wide_tiles`: block_m 128 with 64 "
        "tail rows in each tile, the whole ring paired; 160 with 32) against each case's table choice, run first and "
        "last:",
        "",
        *_config_sweep("sweep_wide_mid.json", table_ends=True),
        "",
        *_config_sweep("sweep_wide_large.json", table_ends=True),
        "",
        "Its GPU tests: in `fp8_layout_edges.log.gz` below (the ids holding `wide_tiles=True`, and "
        "`test_wide_tiles_on_slices_of_several_tiles`: against the "
        "reference, the packed words' bytes and a second launch). compute-sanitizer with it forced on the block_m 128 "
        "entry's cases (`wide_sanitize.log`: `PRECISION=fast LAYOUT=fp8 "
        f"MOE_GATHER_SM90_FORCE={CHUNKS_FORCE},tail_rows=64,wide_tiles=1 SANITIZE_CASES=... bash tools/sanitize.sh` "
        "with the cases below):",
        "",
        *_sanitize_table(FAST / "wide_sanitize.log"),
        "",
        "The block_m 128 entry in a persistent form (`persistent`, opt-in: one program a multiprocessor over the "
        "schedule in phases of 128-, 64- and 32-token tiles, each in the schedule's order, its stride running on from "
        "the last phase's, the next tile's first K tiles loaded before this one's epilogue): against the reference, "
        f"the packed words' bytes and a second launch, {_closing(FAST / 'persistent_edges.log')} "
        "(`persistent_edges.log`: `pytest suites/test_kernel_edges.py --gpu hopper --precision fast -k "
        "persistent_fp8`: K = 96, 384 and 2880 at N 256, the every-width slices and 43 tiles of every width at "
        "gpt-oss-120b's N, about 15 items a program; and many items of each phase a program on three programs at K "
        "96 and 384); compute-sanitizer with it forced on a case of about two items a program "
        f"(`persistent_sanitize.log`: `PRECISION=fast LAYOUT=fp8 MOE_GATHER_SM90_FORCE={CHUNKS_FORCE},persistent=1 "
        "SANITIZE_CASES=... bash tools/sanitize.sh` with the cases below):",
        "",
        *_sanitize_table(FAST / "persistent_sanitize.log"),
        "",
        "Its time against the table's block_m 128 entry, each run twice in one process, us (`sweep_persistent.json`: "
        "`python tools/sweep_sm90.py --precision fast --layouts fp8 --cases uniform-bs31744,uniform-bs16384,"
        'uniform-bs12288,uniform-bs8192,zipf-bs26624,zipf-bs16384,zipf-bs6144 --configs "table;E,persistent=1;'
        'table;E,persistent=1" --json ...`, E the entry\'s fields):',
        "",
        *_config_sweep("sweep_persistent.json"),
        "",
        "The warp-specialized tile on the fp8 layout (docs/sm90.md), its forms against `FP8_CHUNKS` run first, each "
        "set run twice in one process, us (`sweep_ws_fp8.json.gz`: `python tools/sweep_sm90.py --precision fast "
        "--layouts fp8 --cases uniform-bs31744,uniform-bs16384,uniform-bs8192,zipf-bs16384,zipf-bs6144 --configs "
        '"E;W;W,num_stages=5,persistent=1;W,bulk_weights=1;W,bulk_weights=1,num_stages=5,persistent=1;'
        'W,bulk_weights=1,lag=1,num_stages=5,persistent=1;E;..." --json ...`, E the fields of `FP8_CHUNKS`, W '
        "`block_m=128,num_stages=4,num_warps=8,narrow_last_tile=2,warp_specialized=1,fp8_layout=1`):",
        "",
        *_config_sweep("sweep_ws_fp8.json.gz"),
        "",
        "The table's entry (`FP8_WS`) against `FP8_CHUNKS` and against itself in chunks of four K tiles, on the "
        "smallest and largest cases it takes under each routing, twice (`sweep_ws_entry.json`: `--cases "
        'uniform-bs7168,zipf-bs3584,uniform-bs31744,zipf-bs26624 --configs "table;E;W5,overlap_tiles=4;table;..."`, '
        "W5 the entry's fields):",
        "",
        *_config_sweep("sweep_ws_entry.json"),
        "",
        "Where it takes over from the block_m 64 entry (`FP8_WS_FROM`, rows per slice): the entry and its form on "
        "64-token tiles (5 and 7 stages) against the block_m 64 entry M from 31 to 192 rows per slice "
        "(`sweep_ws_m64.json`: `--cases uniform-bs1024,uniform-bs1536,uniform-bs2048,uniform-bs3072,uniform-bs4096,"
        'uniform-bs6144,zipf-bs2048,zipf-bs8192,zipf-bs12288 --configs "M;W5;W5,block_m=64;W5,block_m=64,'
        'num_stages=7;M;W5,block_m=64,num_stages=7"`), and at 58-89 rows, twice (`sweep_ws_bound.json`: '
        '`--cases uniform-bs1792,zipf-bs11264,zipf-bs2560,uniform-bs2560,zipf-bs10240,zipf-bs7168,zipf-bs19456 '
        '--configs "M;W5;M;W5"`), M `block_m=64,num_stages=4,num_warps=8,parity_rings=1,narrow_last_tile=2,'
        "tail_rows=16`; the rows per slice: uniform-bs1024 31, zipf-bs2048 35, uniform-bs1536 50, -bs1792 58, "
        "zipf-bs11264 59, uniform-bs2048 63, zipf-bs2560 64, uniform-bs2560 78, zipf-bs10240 83, -bs7168 88, "
        "-bs19456 89, uniform-bs3072 96, -bs4096 125, zipf-bs8192 131, -bs12288 142, uniform-bs6144 192. Its GPU tests "
        "on 64-token tiles (`ws_m64_edges.log`: `pytest suites/test_kernel_edges.py --gpu hopper -k "
        '"warp_specialized_on_the_fp8_layout and m64"`): '
        f"{_closing(FAST / 'ws_m64_edges.log')}:",
        "",
        *_config_sweep("sweep_ws_m64.json"),
        "",
        *_config_sweep("sweep_ws_bound.json"),
        "",
        *_ws_profile(),
        "",
        "racecheck on it reads the whole report (`tools/racecheck_report.py`, from `tools/sanitize.sh`; "
        "`fp8_sanitize.log` below): every hazard pairs a write of Triton's warp-specialization state bytes (the "
        "default partition's, at the `gl.warp_specialize` call or the kernel's def line) with the worker warps' read "
        "of them in Triton's switch loop (the def line); none touches the kernel's buffers. A kernel with no buffer of "
        "its own draws such reports once it uses an mbarrier (`race_scaffold.log`: `compute-sanitizer --tool "
        "racecheck --racecheck-report hazard --print-limit 0 python3 tools/racecheck_report.py --scaffold FORM 2>&1 | "
        "python3 tools/racecheck_report.py`, FORM plain, barriers, mbarrier):",
        "",
        *_sanitize_table(FAST / "race_scaffold.log"),
        "",
        "gpt-oss-20b in the fp8 layout from 2048 tokens, vendor in the same process (`python -m moe_gather bench "
        "--model gpt-oss-20b --precision fast --layout fp8 --no-peer --batch-sizes 2048,3072,4096,5120,6144,7680 "
        f"--json {_rel(FAST / 'bench_fast_fp8_20b.json')}`), beside the packed words' run of the same cases "
        "(`bench_fast_20b.json`, another process):",
        "",
        *_fp8_20b(),
        "",
        "Against the reference and byte for byte against the packed words' output: "
        f"{_closing(FAST / 'fp8_layout_edges.log.gz')} (`fp8_layout_edges.log.gz`: `pytest suites/test_kernel_edges.py "
        "--gpu hopper --precision fast -k 'layout_fp8 or wide_tiles'`, which selects every test parametrized by "
        "a config, as each config's id names `wide_tiles`: the fp8 layout on every fast entry, the K tiles in "
        "pairs, k_splits and the wide tiles at K = 96, 384 and 2880 and on the every-width slices, the opt-in "
        "plans, and the K tests of k_splits, split_k and the decode tile. "
        "`compare_fast_fp8.log.gz`, on the gate page, checks every gate case of the "
        "fp8 layout against the reference. The k_splits K tests at the accurate precision: `k_splits_k_accurate.log`, "
        f"{_closing(FAST / 'k_splits_k_accurate.log')}.) compute-sanitizer on the block_m 128 entry reading the fp8 "
        "layout (`FP8_WS3`), and on the block_m 64 entry's calls with a slice over hot_at (`FP8_WS3` its second "
        "launch; `fp8_sanitize.log`: `PRECISION=fast LAYOUT=fp8 bash tools/sanitize.sh`, the cases of "
        "tools/sanitize_cases_fast_fp8.txt, racecheck's report read whole by `tools/racecheck_report.py`):"
        f"{_not_run(FAST / 'fp8_sanitize.log', 'sanitize_cases_fast_fp8.txt')}",
        "",
        *_sanitize_table(FAST / "fp8_sanitize.log"),
        "",
        "The block_m 128 entry with its weight tiles by TMA (`bulk_weights`: two 8 KB copies a K tile on an mbarrier "
        "a stage, x and the scales by cp.async as before), alternating with the entry, each run twice "
        "(`sweep_bulk.json`: `python tools/sweep_sm90.py --precision fast --layouts fp8 --cases ... --configs "
        '"E;E,bulk_weights=1;E;E,bulk_weights=1" --json ...`, E the entry\'s fields; its bulk kernel did not yet '
        "invalidate the barriers after the K loop, a bar.sync and four instructions a program):",
        "",
        *_config_sweep("sweep_bulk.json"),
        "",
        "Each K tile's four bar.sync halved (`slot_buffers`: each of the 4 stages its own allocation, so Triton's "
        "barrier analysis tells the slots apart), alone and with the weights by TMA, alternating with the entry, each "
        "run twice (`sweep_slots.json`: `python tools/sweep_sm90.py --precision fast --layouts fp8 --cases ... "
        '--configs "E;E,slot_buffers=1;E,bulk_weights=1,slot_buffers=1;E;E,slot_buffers=1;'
        'E,bulk_weights=1,slot_buffers=1" --json ...`):',
        "",
        *_config_sweep("sweep_slots.json"),
        "",
        f"Against the reference and the packed words' bytes, every fp8-layout plan with the two opt-ins: "
        f"{_closing(FAST / 'opt_in_edges.log')} (`opt_in_edges.log`: `pytest suites/test_kernel_edges.py --gpu hopper "
        "--precision fast -k layout_fp8`: K = 96, 384 and 2880 and the every-width slices). compute-sanitizer with "
        "each forced (`bulk_sanitize.log`, `slots_sanitize.log`: `PRECISION=fast LAYOUT=fp8 "
        f"MOE_GATHER_SM90_FORCE={CHUNKS_FORCE},bulk_weights=1` (or `slot_buffers=1`) `SANITIZE_CASES=... bash "
        "tools/sanitize.sh` with the cases below; "
        "the config column shows a forced field as its log prints it, 1 for True):",
        "",
        *_sanitize_table(FAST / "bulk_sanitize.log", FAST / "slots_sanitize.log"),
        "",
        "## 256-token items on the packed words: the large entry",
        "",
        *_halves(),
        "",
        "## Hot slices on a side stream: the block_m 64 entry's second launch",
        "",
        *_hot(),
        "",
        "## The A/B tool against itself",
        "",
        *_ab_self(),
        "",
        "## Decode: what bounds it",
        "",
        *_decode_floor(),
        "",
        *reads_table,
        "",
        "## Decode in device time, the weights cold",
        "",
        *cold_section,
        "",
        *_decode_cold_forms(),
        "",
        "## What bounds each size",
        "",
        *_bounds(),
        "",
        "## Against K",
        "",
        *_k_scan(),
        "",
        "## Split K across programs",
        "",
        *_k_splits(),
        "",
        "## Accuracy",
        "",
        *[f"- `{run['command']}` ({run['stack']})" for run in acc_runs],
        "",
        "Every case of both models and parameter sets (the data of `accuracy.md`). The worst over the cases, per "
        "model, parameter set and computation (kernel: accurate; kernel_fast: fast; cublas_fp8: cuBLAS's promoted "
        "fp8 GEMM on the same inputs, the fast precision's budget).",
        "",
        "| model | params | computation | cases | bitwise | ulp | scaled | over 1 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
        *acc_rows,
        "",
        *_fast_beside_cublas(acc_runs),
        "",
        "The kernel's tests pass its tolerances (`TOLERANCES['kernel-fast', params]`) on every case of both models "
        "and parameter sets, in both weight layouts (Reliability, below).",
        "",
        "## Reliability",
        "",
        f"The whole suite at the fast precision, every case of both models and parameter sets (guard zones, "
        f"three-run determinism, the reference and the peer): packed words {closing}, fp8 layout "
        f"{_closing(FAST / 'suite_fp8.log.gz')} (`suite.log.gz`, `suite_fp8.log.gz`: `pytest suites/ --gpu hopper "
        "--precision fast --layout L --model all --params all -n 8 -q --dist loadgroup "
        "--benchmark-disable`; each ends with every case's agreement, the same in both layouts; the fp16-path tests "
        f"and weights outside the fold's window run the accurate kernel).{failed} compute-sanitizer on a case of each "
        "table entry "
        "with each tool (`sanitize.log`: `PRECISION=fast bash tools/sanitize.sh`, the cases of "
        "tools/sanitize_cases_fast.txt), with the config each run launched."
        f"{_not_run(FAST / 'sanitize.log', 'sanitize_cases_fast.txt')}",
        "",
        *_sanitize_table(FAST / "sanitize.log"),
        "",
        "Decode calls of up to 4 rows split their K tiles (`DECODE_SPLITS`); the tests that run them, at each "
        f"precision: accurate {_closing(FAST / 'decode_edges_accurate.log')}, fast "
        f"{_closing(FAST / 'decode_edges_fast.log')} (`decode_edges_*.log`: `pytest suites/test_kernel_edges.py "
        "suites/test_kernel.py suites/test_reliability.py --gpu hopper --precision P --model all -k 'decode or "
        "off_the_ladder or one_row or through_k_splits or k_splits_are'`: both models' decode cases with guard zones "
        "and three-run determinism, calls of 1-5 rows, a graph captured on a first decode call, K ending anywhere "
        "through 4 splits).",
        "",
        f"The warp-specialized tile's split_k form (opt-in), K ending anywhere: {_closing(FAST / 'split_k_edges.log')} "
        "(`split_k_edges.log`: `pytest suites/test_kernel_edges.py --gpu hopper --precision fast -k "
        "through_split_k`; its opt-in plans ran in `k_splits_edges_fast.log`, above); compute-sanitizer on a decode "
        "case, one item a program (`split_k_sanitize.log`) and persistent (`split_k_persistent_sanitize.log`): "
        "`PRECISION=fast MOE_GATHER_SM90_FORCE=... bash tools/sanitize.sh` with the cases below; each racecheck run's "
        "hazards by where they were written and read are in its log, docs/sm90.md says what they are.",
        "",
        *_sanitize_table(FAST / "split_k_sanitize.log", FAST / "split_k_persistent_sanitize.log"),
    ]) + "\n"  # fmt: skip


def _mutant_order(path: Path) -> tuple:
    """partial-11.., epilogue-9.., then the fast precision's (fast-*), then its fp8 layout's (fp8-*)."""
    prefix = path.stem.split("-")[0]
    return (("fast", "fp8").index(prefix) + 1 if prefix in ("fast", "fp8") else 0, "epilogue-" in path.stem,
            int(path.stem.rsplit("-", 1)[1]))  # fmt: skip


def pages() -> dict[Path, str]:
    data = accuracy._merged([str(p) for p in sorted(H200.glob("accuracy_*.json.gz"))])
    json_paths = " ".join(_rel(p) for p in sorted(H200.glob("accuracy_*.json.gz")))
    runs = sorted(
        (H200 / "mutants").glob("*.json"),
        key=_mutant_order,
    )
    return {
        H200 / "speed.md": speed(),
        H200 / "accuracy.md": accuracy.markdown(data, json_paths, _rel(H200 / "accuracy.md")),
        H200 / "mutants.md": mutants.report([_rel(p) for p in runs], _rel(H200 / "mutants.md")),
        H200 / "reliability.md": reliability(),
        H200 / "gate.md": gate(),
        H200 / "fast.md": fast(),
    }


def main(argv: list[str]) -> int:
    os.chdir(ROOT)  # the pages name their data relative to the repository
    stale = []
    for path, text in pages().items():
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(_rel(path))
        else:
            path.write_text(text)
    for path in stale:
        print(f"{path} differs from what its data renders: run python tools/results.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
