"""ptxas -v on a compiled kernel's PTX, for the CPU compile tests: the registers and spills it reports; the SASS of
its main loop and of what follows it."""

import re
import subprocess
from pathlib import Path

import triton

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def spilled_bytes(report: str) -> int:
    """The larger of a ptxas report's spill stores and spill loads, in bytes."""
    found = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    if not found:
        raise ValueError(f"no spill line in the ptxas report: {report}")
    return max(int(b) for b in found.groups())


def registers_used(report: str) -> int:
    """The registers per thread a ptxas report gives."""
    return int(re.search(r"Used (\d+) registers", report)[1])


def ptxas_report(ptx: str, arch: str, tmp_path: Path) -> str:
    """The report of Triton's own ptxas for `arch` (sm_90a, or sm_100a through its Blackwell ptxas)."""
    binary = BIN / ("ptxas-blackwell" if arch.startswith("sm_10") else "ptxas")
    (tmp_path / "k.ptx").write_text(ptx)
    command = [str(binary), f"-arch={arch}", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
    return subprocess.run(command, capture_output=True, text=True, check=True).stderr


def _sass(cubin: bytes, tmp_path: Path) -> list[tuple[int, str]]:
    """(address, instruction text) of a cubin's SASS, by Triton's cuobjdump."""
    (tmp_path / "k.cubin").write_bytes(cubin)
    command = [str(BIN / "cuobjdump"), "-sass", str(tmp_path / "k.cubin")]
    sass = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [(int(a, 16), text) for a, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)]


def _loops(lines: list[tuple[int, str]], wgmma: set[str] | None = None) -> list[tuple[int, int]]:
    """First and last address of each backward branch's span; with `wgmma`, of those whose wgmma instructions are
    exactly those (e.g. {"QGMMA.64x64x32.F32.E4M3.E4M3"}: the K loop of one tile width)."""
    spans = [
        (int(target, 16), address)
        for address, text in lines
        for target in re.findall(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if int(target, 16) < address
    ]
    if wgmma is not None:
        spans = [
            (start, end)
            for start, end in spans
            if {text.split()[0] for address, text in lines if start <= address <= end and "GMMA." in text} == wgmma
        ]
    return spans


def _longest_loop(lines: list[tuple[int, str]], wgmma: set[str] | None = None) -> tuple[int, int]:
    return max(_loops(lines, wgmma), key=lambda span: span[1] - span[0])


def _strip(text: str, operands: bool) -> str:
    text = re.sub(r"^@!?U?P\w+\s+", "", text).strip()  # the predicate
    return text if operands else text.split()[0]


def main_loop_sass(cubin: bytes, tmp_path: Path, operands: bool = False, wgmma: set[str] | None = None) -> list[str]:
    """The instructions of a kernel's longest loop (the span of its longest backward branch; with `wgmma`, of the
    longest with those wgmmas), by Triton's cuobjdump, without predicates, and without operands unless asked:
    ["LOP3.LUT", "FFMA", ...]."""
    lines = _sass(cubin, tmp_path)
    start, end = _longest_loop(lines, wgmma)
    return [_strip(text, operands) for address, text in lines if start <= address <= end]


def kernel_sass(cubin: bytes, tmp_path: Path) -> list[str]:
    """Every instruction of a kernel (an unrolled K loop has no backward branch), as main_loop_sass gives them."""
    return [_strip(text, False) for address, text in _sass(cubin, tmp_path)]


def innermost_loops_sass(cubin: bytes, tmp_path: Path, wgmma: set[str], operands: bool = False) -> list[list[str]]:
    """The instructions of each loop with exactly those wgmmas that holds no other such loop (a warp-specialized
    kernel's partitions sit in an outer loop of Triton's, which main_loop_sass would take; a branch back from an
    mbarrier wait's retry block spans a loop too), as main_loop_sass."""
    lines = _sass(cubin, tmp_path)
    spans = _loops(lines, wgmma)
    inner = [(a, b) for a, b in spans if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in spans)]
    return [[_strip(text, operands) for address, text in lines if a <= address <= b] for a, b in inner]


def after_main_loop_sass(cubin: bytes, tmp_path: Path, wgmma: set[str] | None = None) -> list[str]:
    """The instructions from the longest loop's end (as main_loop_sass picks it) to the next EXIT (the pipeline's
    drain and the epilogue of that path), without predicates and operands."""
    lines = _sass(cubin, tmp_path)
    _, end = _longest_loop(lines, wgmma)
    after = []
    for address, text in lines:
        if address > end:
            after.append(_strip(text, False))
            if after[-1] == "EXIT":
                return after
    raise AssertionError("no EXIT after the main loop")
