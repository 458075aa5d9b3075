"""Where one kernel launch spends its warps' time, from Nsight Compute's source page (SASS, per instruction).

    ncu --section SourceCounters ... -o rep python3 tools/sanitize_case.py uniform 2
    ncu -i rep.ncu-rep --page source --csv --print-source sass > full.csv
    python3 tools/ncu_regions.py reduce full.csv small.csv.gz   # the columns below, rows run or sampled (results/)
    python3 tools/ncu_regions.py summary small.csv           # instructions and stall samples by region
    python3 tools/ncu_regions.py hot small.csv               # the same around the loop with the most samples
    python3 tools/ncu_regions.py partitions small.csv        # a warp-specialized kernel's by role

Regions by address: the loops (each backward branch's span: the K loops), the code before the first (the start:
schedule, slice and gather loads, the ring's first copies), between two loops (another tile width's or split's
start), and after the last (the drain, the epilogue, and with k_splits the hand-in).
"""

import csv
import gzip
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
STALLS = ("stall_long_sb", "stall_barrier", "stall_selected", "stall_wait", "stall_short_sb", "stall_membar",
          "stall_not_selected", "stall_imc", "stall_math", "stall_mio", "stall_lg", "stall_dispatch")  # fmt: skip
COLUMNS = ("Address", "Source", EXECUTED, SAMPLES, *STALLS)


def _open(path, mode="r"):
    """A CSV file, gzipped where its name ends in .gz."""
    path = str(path)
    return gzip.open(path, mode + "t", newline="") if path.endswith(".gz") else open(path, mode, newline="")


def reduce(full: str, small: str) -> None:
    """The rows run or sampled, compactly: addresses (and branch targets) as hex offsets from the first row's, each
    instruction as its opcode (a branch with its target), zero counts left empty. A reduced file reduces to itself."""
    with _open(full) as f:
        rows = list(csv.reader(f))
    header = next(i for i, row in enumerate(rows) if row and row[0] == "Address")
    index = {name: i for i, name in enumerate(rows[header])}
    kept = [row for row in rows[header + 1 :] if row and {row[index[EXECUTED]], row[index[SAMPLES]]} - {"", "0"}]
    base = int(kept[0][index["Address"]], 16)

    def source(text: str) -> str:
        words = text.split()
        opcode = words[1] if words[0].startswith("@") else words[0]
        target = BRANCH.search(text)
        return f"{opcode} {int(target[1], 16) - base:#x}" if opcode.startswith("BRA") and target else opcode

    with _open(small, "w") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for row in kept:
            counts = [row[index[c]].replace(",", "") for c in COLUMNS[2:]]
            address = f"{int(row[index['Address']], 16) - base:#x}"
            out.writerow([address, source(row[index["Source"]]), *(c if c != "0" else "" for c in counts)])


BRANCH = re.compile(r"\bBRA (?:`?\()?(0x[0-9a-f]+)")


def _region(address: int, loops: list[tuple[int, int]]) -> str:
    if any(lo <= address <= hi for lo, hi in loops):
        return "loop"
    if address < loops[0][0]:
        return "start"
    return "end" if address > max(hi for _, hi in loops) else "between"


def _read(small: str) -> tuple[list[dict], list[int], int, int]:
    """A reduced page's rows, their addresses, the warps (the kernel's first instruction runs once in each) and the
    samples in all."""
    with _open(small) as f:
        rows = list(csv.DictReader(f))
    return rows, [int(r["Address"], 16) for r in rows], int(rows[0][EXECUTED]), sum(int(r[SAMPLES] or 0) for r in rows)


def _stats(span: list[dict], once: int, total: int) -> dict[str, float]:
    samples = sum(int(r[SAMPLES] or 0) for r in span)
    stalls = {s: sum(int(r[s] or 0) for r in span) / max(samples, 1) for s in STALLS}
    return {"instructions": sum(int(r[EXECUTED] or 0) for r in span) / once, "samples": samples / total, **stalls}


def _loops(rows: list[dict], addresses: list[int]) -> list[tuple[int, int]]:
    """(first, last address) of each backward branch's span, in order."""
    return sorted(
        (int(m[1], 16), a)
        for a, r in zip(addresses, rows, strict=True)
        if (m := BRANCH.search(r["Source"])) and int(m[1], 16) < a
    )


def hot(small: str) -> dict[str, dict[str, float]]:
    """As regions(), split around the loop with the most samples (a config's main tile): 'before' it (the start,
    and any other tile width's code placed earlier), 'hot loop', 'after' it (the rest of K, the epilogue)."""
    rows, addresses, once, total = _read(small)
    rows_at = list(zip(addresses, rows, strict=True))

    def samples(span):
        return sum(int(r[SAMPLES] or 0) for a, r in rows_at if span[0] <= a <= span[1])

    lo, hi = max(_loops(rows, addresses), key=samples)
    return {
        "before": _stats([r for a, r in rows_at if a < lo], once, total),
        "hot loop": _stats([r for a, r in rows_at if lo <= a <= hi], once, total),
        "after": _stats([r for a, r in rows_at if a > hi], once, total),
    }


def partitions(small: str) -> dict[str, dict[str, float]]:
    """A warp-specialized kernel's page split by role: the smallest loops around its wgmmas (the consumers' K loops)
    and around its copies (cp.async or TMA: the producer's loop), less those holding another such loop (a work-item
    loop), and the rest (each partition's work-item start and end, the consumers' epilogues, Triton's partition
    scaffolding)."""
    rows, addresses, once, total = _read(small)
    loops = _loops(rows, addresses)
    roles = {}  # the smallest loop around each wgmma (the consumers') or copy (the producer's)
    for address, row in zip(addresses, rows, strict=True):
        op = row["Source"].split(".")[0]
        role = "consumer K loops" if op == "QGMMA" else "producer loop" if op in ("LDGSTS", "UTMALDG") else None
        around = [(lo, hi) for lo, hi in loops if lo <= address <= hi]
        if role and around:
            roles.setdefault(min(around, key=lambda span: span[1] - span[0]), role)
    # of those, the ones holding no other (a work-item loop around a K loop is not itself one)
    roles = {span: role for span, role in roles.items() if not any(o != span and span[0] <= o[0] <= o[1] <= span[1]
                                                                 for o in roles)}  # fmt: skip
    spans: dict[str, list[dict]] = {"consumer K loops": [], "producer loop": [], "rest": []}
    for address, row in zip(addresses, rows, strict=True):
        spans[next((role for (lo, hi), role in roles.items() if lo <= address <= hi), "rest")].append(row)
    return {name: _stats(span, once, total) for name, span in spans.items()}


def regions(small: str) -> dict[str, dict[str, float]]:
    """{'start' | 'loop' | 'between' | 'end': {'instructions': per warp, 'samples': share, stall: share of the
    region}}. Loops are the spans of backward branches; 'between' is code between two loops (another tile width's or
    another split's prologue)."""
    rows, addresses, once, total = _read(small)
    loops = _loops(rows, addresses)
    spans: dict[str, list[dict]] = {"start": [], "loop": [], "between": [], "end": []}
    for address, row in zip(addresses, rows, strict=True):
        spans[_region(address, loops)].append(row)
    return {name: _stats(span, once, total) for name, span in spans.items() if span}


def summary(small: str, by=None) -> str:
    lines = []
    for name, r in (by or regions)(small).items():
        top = sorted(STALLS, key=lambda s: -r[s])[:3]
        stalls = ", ".join(f"{s[6:]} {r[s]:.0%}" for s in top)
        share = f"{r['samples']:.0%} of the samples"
        lines.append(f"{name}: {r['instructions']:.0f} instructions a warp, {share} ({stalls})")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "reduce":
        reduce(sys.argv[2], sys.argv[3])
    else:
        print(summary(sys.argv[2], {"hot": hot, "partitions": partitions}.get(sys.argv[1], regions)))
