"""The outline benchmark runs end to end on one real corpus and prints a row per language."""

from __future__ import annotations

import subprocess
import sys

from realcode import corpus

from tests.conftest import ROOT


def test_outline_bench_reports_each_language() -> None:
    corpus("anyhow")  # fetched here, so a failed fetch fails this test with its own message
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.outline_bench",
            "--corpus",
            "anyhow",
            "--repeat",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {
        cells[0]: cells
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| language")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert {"rust", "toml", "markdown"} <= rows.keys()
    files, mib, per_file = rows["rust"][1:4]
    assert int(files) >= 20
    assert float(mib) > 0
    assert float(per_file) > 0
