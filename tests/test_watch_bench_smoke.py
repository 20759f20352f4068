"""The watch benchmark runs end to end on a tiny memory and prints its table."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, cas_env


def test_the_watch_bench_times_saves_until_found_and_writes_back() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.watch_bench", "--days", "3", "--edits", "2"],
        cwd=ROOT, env=cas_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {
        m.group(1): (int(m.group(2)), float(m.group(3)), float(m.group(4)))
        for m in re.finditer(r"^(\S.*?)\s{2,}(\d+)\s+([\d.]+)\s+([\d.]+)$", done.stdout, re.M)
    }
    assert set(rows) == {
        "save -> found, lexical",
        "save -> found, auto (words and meaning)",
        "cas mem add -> in the folder",
    }, done.stdout
    assert all(n == 2 and 0 < median <= slowest for n, median, slowest in rows.values())
    assert re.search(r"^(PASS|MISS): from a save to found by search", done.stdout, re.M)
