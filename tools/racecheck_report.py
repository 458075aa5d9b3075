"""racecheck's whole report read by source line: the hazards of Triton's warp-specialization scaffolding told from
the kernel's own (docs/sm90.md, "The warp-specialized tile").

compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 0 python3 tools/sanitize_case.py ... 2>&1 \
    | python3 tools/racecheck_report.py          # echoes the other lines, then its verdict; exit 1 on a kernel hazard
compute-sanitizer --tool racecheck ... python3 tools/racecheck_report.py --scaffold 2>&1 \
    | python3 tools/racecheck_report.py

Triton lowers gl.warp_specialize to a header in which the default partition writes each worker warp's state byte (its
partition, or exit) and the captured arguments into shared memory, then a barrier of all the program's threads
(barrier.sync 1) releases the workers, which read them in a switch loop: the writes carry the call's line (the exit
state, the kernel's def line), the switch loop the kernel's def line. A hazard whose two accesses are both on such
lines is that scaffolding's; any other is the kernel's and fails. `--scaffold` launches a warp-specialized kernel with
no buffer of its own but one mbarrier (initialized before the call, a worker arrives, the default partition waits),
each partition storing a captured value to global memory: what racecheck reports on the scaffolding alone.
"""

import collections
import functools
import re
import sys
from pathlib import Path

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

ROOT = Path(__file__).resolve().parents[1]
HAZARD = re.compile(r"Error: Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block \(([\d,]+)\)")
ACCESS = re.compile(r"(Write|Read) Thread \((\d+),\d+,\d+\) at (\S+) in (\S+?):(\d+)")
SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


@functools.cache
def _scaffold_lines(name: str) -> frozenset[int]:
    """The lines of `name` (in moe_gather/ or tools/) that carry Triton's scaffolding: each gl.warp_specialize call's,
    and the def line of the kernel making it (its header and switch loop take the function's location)."""
    paths = [p for p in (ROOT / "moe_gather" / name, ROOT / "tools" / name) if p.exists()]
    lines = paths[0].read_text().splitlines() if paths else []
    found = set()
    for i, text in enumerate(lines):
        if text.strip().startswith("gl.warp_specialize("):
            found.add(i + 1)
            found.add(next(j + 1 for j in range(i, -1, -1) if lines[j].startswith("def ")))
    return frozenset(found)


def scaffolding(name: str, line: int) -> bool:
    return line in _scaffold_lines(name)


def report(lines) -> tuple[list[str], int]:
    """The input's other lines echoed, each (kind, access, access) group counted; the status: 1 when a hazard is not
    the scaffolding's, or the report is not whole (its hazards not all displayed, or no summary)."""
    groups = collections.Counter()
    out, pending, summary = [], None, None
    for line in lines:
        if m := HAZARD.search(line):
            pending = (m[1], [])
        elif pending and (m := ACCESS.search(line)):
            pending[1].append((m[1], int(m[2]) // 32, m[4], int(m[5])))
            if len(pending[1]) == 2:
                (kind, (a, b)), pending = pending, None
                groups[kind, a[0], a[2], a[3], b[0], b[2], b[3]] += 1
        elif not line.startswith("=========     ") and "Current Value" not in line and line.strip("= \n"):
            out.append(line.rstrip("\n"))
            summary = SUMMARY.search(line) or summary
    own = sum(n for key, n in groups.items() if not (scaffolding(*key[2:4]) and scaffolding(*key[5:7])))
    total = sum(groups.values())
    for (kind, ka, fa, la, kb, fb, lb), n in groups.most_common():
        where = "scaffolding" if scaffolding(fa, la) and scaffolding(fb, lb) else "KERNEL"
        out.append(f"racecheck_report: {n} {kind} {ka} {fa}:{la} -> {kb} {fb}:{lb} ({where})")
    whole = summary is not None and int(summary[1]) == total == int(summary[2]) + int(summary[3])
    out.append(
        f"racecheck_report: {total} hazards, {total - own} of Triton's warp-specialization scaffolding, {own} the"
        f" kernel's{'' if whole else '; the report is not whole (' + (summary[0] if summary else 'no summary') + ')'}"
    )
    return out, int(bool(own) or not whole)


@gluon.jit
def _part(out_ptr, v, base, bar, role: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    if role == 1:  # the default partition: after worker 1's arrival
        mbarrier.wait(bar, 0)
    offs = gl.arange(0, 128, layout)
    gl.store(out_ptr + base + offs, gl.full([128], 0, gl.int32, layout) + v + base)
    if role == 2:
        mbarrier.arrive(bar, count=1)


@gluon.jit
def scaffold_kernel(in_ptr, out_ptr):
    v = gl.load(in_ptr + gl.program_id(0))  # not rematerialized in the workers: captured through shared memory
    base = gl.program_id(0) * 384
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize(
        [(_part, (out_ptr, v, base, bar, 1)), (_part, (out_ptr, v, base + 128, bar, 2)),
         (_part, (out_ptr, v, base + 256, bar, 0))],
        [4, 4],
        [224, 56],
    )  # fmt: skip


def scaffold(programs: int = 132):
    """scaffold_kernel on `programs` programs launched as the warp-specialized tile is (4 warps, maxnreg 168), its
    values checked."""
    import torch

    x = torch.arange(programs, dtype=torch.int32, device="cuda")
    out = torch.empty(programs * 384, dtype=torch.int32, device="cuda")
    scaffold_kernel[(programs,)](x, out, num_warps=4, maxnreg=168)
    expect = x.repeat_interleave(384) + torch.arange(programs * 384, device="cuda") // 128 * 128
    assert torch.equal(out, expect), "the scaffold kernel stored wrong values"
    print(f"scaffold kernel: {programs} programs of 12 warps, values checked")


if __name__ == "__main__":
    if sys.argv[1:] == ["--scaffold"]:
        scaffold()
    else:
        text, status = report(sys.stdin)
        print("\n".join(text))
        sys.exit(status)
