"""The repository as its readers find it, on the CPU: a user's README, results that are current and rendered from
their data, and no talk of how the work was done (numbered work periods, device calls, issue numbers, run folders)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".md", ".sh", ".yml", ".yaml", ".toml", ".txt", ".cfg", ".ini")
# Process talk: a numbered session, call or issue, a run folder, a numbered call of a session.
PROCESS = re.compile(r"\b(sessions?|calls?|issues?|stops?) \d+\b|runs_20\d\d-\d\d-\d\d|\bs\d+ call\b", re.IGNORECASE)


def _tracked() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout: the checks read the tracked files")
    return [ROOT / name for name in names.splitlines() if (ROOT / name).is_file()]


def test_no_process_talk_in_tracked_files():
    found = []
    for path in _tracked():
        if path.suffix in TEXT or path.parent.name == ".ci":
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if PROCESS.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "process talk in tracked files:\n" + "\n".join(found)


def test_the_pattern_sees_what_it_is_for():
    n = 21  # the examples are built here, so that this file passes its own check
    for text in (
        f"session {n}",
        f"Call {n} recorded",
        f"issue {n}'s bar",
        "results/runs_" + f"2026-11-30_s{n}/",
        f"s{n} call",
    ):
        assert PROCESS.search(text), text
    for text in ("pytest_sessionstart(session)", "one call per case", "the issue of alignment", "a call of 16 rows"):
        assert not PROCESS.search(text), text


def test_readme_is_a_users_document():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines"
    assert not re.search(r"\b[0-9a-f]{7,40}\b", "\n".join(lines)), "no commit hashes in the README"


def test_results_are_small_and_each_file_is_indexed():
    files = [p for p in _tracked() if p.is_relative_to(ROOT / "results")]
    assert sum(p.stat().st_size for p in files) <= 2 * 2**20
    index = (ROOT / "results" / "README.md").read_text()
    unnamed = [str(p.relative_to(ROOT)) for p in files if p.name != "README.md" and p.name not in index]
    assert not unnamed, f"not named in results/README.md: {unnamed}"


def test_results_pages_match_their_data():
    done = subprocess.run([sys.executable, "tools/results.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
