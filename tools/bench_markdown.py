"""Render a `python -m moe_gather bench --json` file, or a pytest-benchmark JSON of suites/test_benchmark.py (its
extra_info), as the markdown table of results/sm90_h200.md.

python3 tools/bench_markdown.py results/sm90_bench_h200.json
"""

import json
import sys
from pathlib import Path

from moe_gather.bench import summarize


def main(path):
    data = json.loads(Path(path).read_text())
    if "benchmarks" in data:  # pytest-benchmark: one extra_info per case, the ceilings in each
        rows = [b["extra_info"] for b in data["benchmarks"]]
        data = {"ceilings": rows[0], "summary": summarize(rows), "rows": rows}
    c, s = data["ceilings"], data["summary"]
    print(f"Ceilings measured in the run: read {c['read_bw'] / 1e12:.2f} TB/s, fp8 dense {c['fp8_flops'] / 1e12:.0f} "
          f"TFLOP/s. Roofline time = max(bytes / read, flops / fp8).")  # fmt: skip
    print(f"Geomean {s['geomean_pct_roof']:.1%} of roofline (min {s['min_pct_roof']:.1%}); speedup over the peer: "
          f"geomean {s['geomean_speedup']:.2f}x, min {s['min_speedup']:.2f}x, {s['cases_slower_than_peer']} of "
          f"{s['peer_cases']} cases slower than the peer.\n")  # fmt: skip
    print("| case | tokens | experts | us | TFLOP/s | TB/s | % roof | peer us | speedup | config |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in data["rows"]:
        config = r["config"].removeprefix("Sm90Config(").removesuffix(")").replace(", maxnreg=None", "")
        config = config.replace(", split_at=0, large_block_m=64, large_num_buffers=4", "")  # one launch
        config = config.replace(", extra=0", "")
        print(f"| {r['case']} | {r['tokens']} | {r['active_experts']} | {r['us']:.1f} | {r['tflops']:.1f} | "
              f"{r['tbps']:.2f} | {r['pct_roof']:.1%} | {r.get('peer_us', float('nan')):.1f} | "
              f"{r.get('speedup', float('nan')):.2f} | {config} |")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
