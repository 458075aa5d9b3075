"""racecheck's whole report read by source line: the hazards of Triton's warp-specialization scaffolding told from
the kernel's own (docs/sm90.md, "The warp-specialized tile").

compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 0 python3 tools/sanitize_case.py ... 2>&1 \
    | python3 tools/racecheck_report.py          # echoes the other lines, then its verdict; exit 1 on a kernel hazard
compute-sanitizer --tool racecheck ... python3 tools/racecheck_report.py --scaffold [plain|barriers|mbarrier] 2>&1 \
    | python3 tools/racecheck_report.py

Triton lowers gl.warp_specialize to a header in which the default partition writes each worker warp's state byte (its
partition, or exit) and the captured arguments into shared memory, then a barrier of all the program's threads
(barrier.sync 1) releases the workers, which read them in a switch loop: the writes carry the call's line (the exit
state, the kernel's def line), the switch loop the kernel's def line. A hazard whose two accesses are both on such
lines is that scaffolding's; any other is the kernel's and fails. `--scaffold` launches a warp-specialized kernel with
no buffer of its own, each partition storing a captured value to global memory: `plain`, with a named barrier in each
partition (`barriers`), or with one mbarrier (`mbarrier`, the default: initialized before the call, a worker arrives,
the default partition waits): what racecheck reports on the scaffolding alone.
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
HAZARD = re.compile(r"(?:Error|Warning): Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block")
ACCESS = re.compile(r"(Write|Read) Thread \((\d+),\d+,\d+\) at (\S+) in (\S+?):(\d+)")
SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
ECHOED = 4  # the input's last lines other than hazards: the sanitizer's header, the case's line, the summary


@functools.cache
def _scaffold_lines(name: str) -> frozenset[int]:
    """The lines of `name` (in moe_gather/ or tools/) that carry Triton's scaffolding: each gl.warp_specialize call's,
    the `if` line of a constexpr if/else holding it (Triton locates either branch's ops there), and the def line of the
    kernel making it (its header and switch loop take the function's location)."""
    paths = [p for p in (ROOT / "moe_gather" / name, ROOT / "tools" / name) if p.exists()]
    lines = paths[0].read_text().splitlines() if paths else []
    found = set()
    for i, text in enumerate(lines):
        if text.strip().startswith("gl.warp_specialize("):
            found.add(i + 1)
            found.add(next(j + 1 for j in range(i, -1, -1) if lines[j].startswith("def ")))
            if (branch := _enclosing_if(lines, i)) is not None:
                found.add(branch + 1)
    return frozenset(found)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _enclosing_if(lines: list[str], i: int) -> int | None:
    """The index of the `if` line whose body (or else body) holds line i directly, if any."""
    j = next((j for j in range(i - 1, -1, -1) if lines[j].strip() and _indent(lines[j]) < _indent(lines[i])), None)
    if j is None or not lines[j].strip().startswith(("if ", "else:")):
        return None
    while lines[j].strip().startswith("else:"):  # the if it belongs to: the nearest line above at its indent
        j = next(k for k in range(j - 1, -1, -1) if lines[k].strip() and _indent(lines[k]) <= _indent(lines[j]))
    return j if lines[j].strip().startswith("if ") else None


def scaffolding(name: str, line: int) -> bool:
    return line in _scaffold_lines(name)


def report(lines) -> tuple[list[str], int]:
    """The input's last ECHOED other lines, then each (kind, access, access) group's count, warps and shared bytes,
    then the verdict; the status: 1 when a hazard is not the scaffolding's, or the report is not whole (its hazards
    not all displayed, or no summary)."""
    groups = collections.defaultdict(lambda: [0, set(), set(), set()])  # count, warps, warps, addresses
    other, pending, summary = [], None, None
    for line in lines:
        if m := HAZARD.search(line):
            pending = (m[1], int(m[2], 16), [])
        elif pending and (m := ACCESS.search(line)):
            pending[2].append((m[1], int(m[2]) // 32, m[4], int(m[5])))
            if len(pending[2]) == 2:
                (kind, address, (a, b)), pending = pending, None
                group = groups[kind, a[0], a[2], a[3], b[0], b[2], b[3]]
                group[0] += 1
                group[1].add(a[1]), group[2].add(b[1]), group[3].add(address)
        elif not line.startswith("=========     ") and "Current Value" not in line and line.strip("= \n"):
            other.append(line.rstrip("\n"))
            summary = SUMMARY.search(line) or summary
    out = other[-ECHOED:]
    own = sum(g[0] for key, g in groups.items() if not (scaffolding(*key[2:4]) and scaffolding(*key[5:7])))
    total = sum(g[0] for g in groups.values())
    for (kind, ka, fa, la, kb, fb, lb), (n, wa, wb, where) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        whose = "scaffolding" if scaffolding(fa, la) and scaffolding(fb, lb) else "KERNEL"
        out.append(
            f"racecheck_report: {n} {kind} {ka} {fa}:{la} (warps {_span(wa)}) -> {kb} {fb}:{lb} (warps {_span(wb)});"
            f" {len(where)} shared bytes {min(where):#x}..{max(where):#x} ({whose})"
        )
    whole = summary is not None and int(summary[1]) == total == int(summary[2]) + int(summary[3])
    out.append(
        f"racecheck_report: {total} hazards, {total - own} of Triton's warp-specialization scaffolding, {own} the"
        f" kernel's{'' if whole else '; the report is not whole (' + (summary[0] if summary else 'no summary') + ')'}"
    )
    return out, int(bool(own) or not whole)


def _span(warps: set[int]) -> str:
    return f"{min(warps)}-{max(warps)}" if len(warps) > 1 else str(min(warps))


@gluon.jit
def _part(out_ptr, v, base, bar, ROLE: gl.constexpr, MBARRIER: gl.constexpr, BARRIERS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    if MBARRIER and ROLE == 1:  # the default partition: after worker 1's arrival
        mbarrier.wait(bar, 0)
    if BARRIERS:  # the partition's own named barrier (bar.sync id, 128)
        gl.thread_barrier()
    offs = gl.arange(0, 128, layout)
    gl.store(out_ptr + base + offs, gl.full([128], 0, gl.int32, layout) + v + base)
    if MBARRIER and ROLE == 2:
        mbarrier.arrive(bar, count=1)


@gluon.jit
def scaffold_kernel(in_ptr, out_ptr, MBARRIER: gl.constexpr, BARRIERS: gl.constexpr):
    v = gl.load(in_ptr + gl.program_id(0))  # not rematerialized in the workers: captured through shared memory
    base = gl.program_id(0) * 384
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    if MBARRIER:
        mbarrier.init(bar, count=1)
    gl.warp_specialize(
        [(_part, (out_ptr, v, base, bar, 1, MBARRIER, BARRIERS)),
         (_part, (out_ptr, v, base + 128, bar, 2, MBARRIER, BARRIERS)),
         (_part, (out_ptr, v, base + 256, bar, 0, MBARRIER, BARRIERS))],
        [4, 4],
        [224, 56],
    )  # fmt: skip


SCAFFOLDS = {"plain": (False, False), "barriers": (False, True), "mbarrier": (True, False)}  # (MBARRIER, BARRIERS)


def scaffold(form: str, programs: int = 132):
    """scaffold_kernel in `form` (SCAFFOLDS) on `programs` programs, launched as the warp-specialized tile is (4 warps,
    maxnreg 168), its values checked."""
    import torch

    mbarrier_on, barriers = SCAFFOLDS[form]
    x = torch.arange(programs, dtype=torch.int32, device="cuda")
    out = torch.empty(programs * 384, dtype=torch.int32, device="cuda")
    scaffold_kernel[(programs,)](x, out, MBARRIER=mbarrier_on, BARRIERS=barriers, num_warps=4, maxnreg=168)
    expect = x.repeat_interleave(384) + torch.arange(programs * 384, device="cuda") // 128 * 128
    assert torch.equal(out, expect), "the scaffold kernel stored wrong values"
    print(f"scaffold kernel ({form}): {programs} programs of 12 warps, values checked")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scaffold"]:
        scaffold(sys.argv[2] if len(sys.argv) > 2 else "mbarrier")
    else:
        text, status = report(sys.stdin)
        print("\n".join(text))
        sys.exit(status)
