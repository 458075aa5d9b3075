"""ptxas -v on a compiled kernel's PTX, for the CPU compile tests: the registers and spills it reports."""

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
