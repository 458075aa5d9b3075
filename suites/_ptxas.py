"""ptxas -v on a compiled kernel's PTX, for the CPU compile tests: the registers and spills it reports; the SASS of
its main loop."""

import re
import subprocess
from pathlib import Path

import triton

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def ptxas_report(ptx: str, arch: str, tmp_path: Path) -> str:
    """The report of Triton's own ptxas for `arch` (sm_90a, or sm_100a through its Blackwell ptxas)."""
    binary = BIN / ("ptxas-blackwell" if arch.startswith("sm_10") else "ptxas")
    (tmp_path / "k.ptx").write_text(ptx)
    command = [str(binary), f"-arch={arch}", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
    return subprocess.run(command, capture_output=True, text=True, check=True).stderr


def main_loop_sass(cubin: bytes, tmp_path: Path, operands: bool = False) -> list[str]:
    """The instructions of a kernel's longest loop (the span of its longest backward branch), by Triton's cuobjdump,
    without predicates, and without operands unless asked: ["LOP3.LUT", "FFMA", ...]."""
    (tmp_path / "k.cubin").write_bytes(cubin)
    command = [str(BIN / "cuobjdump"), "-sass", str(tmp_path / "k.cubin")]
    sass = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    lines = [(int(a, 16), text) for a, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)]
    spans = [
        (int(target, 16), address)
        for address, text in lines
        for target in re.findall(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if int(target, 16) < address
    ]
    start, end = max(spans, key=lambda span: span[1] - span[0])
    loop = [re.sub(r"^@!?U?P\w+\s+", "", text).strip() for address, text in lines if start <= address <= end]
    return loop if operands else [text.split()[0] for text in loop]
