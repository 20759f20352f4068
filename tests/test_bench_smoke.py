"""The store benchmark runs end to end on a tiny workload and reports numbers for cas and git."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

MEASURED = {
    ("cas put -r", "tree"),
    ("cas get (Store.get)", "tree"),
    ("cas put FILE", "big"),
    ("cas get -o FILE", "big"),
    ("cas verify --all after put", "big"),
    ("cas get -o after put", "big"),
    ("cas pack, cold", "big"),
    ("cas pack, warm", "big"),
    ("git add -A", "tree"),
    ("git add -A", "big"),
}


def _table(stdout: str) -> dict[tuple[str, str], dict[str, str]]:
    """The table's rows by (row, data), each a {column title: cell} map. Columns are separated
    by two or more spaces; no cell holds two spaces in a row."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("row "))
    titles = re.split(r"\s{2,}", lines[head].strip())
    rows = {}
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(titles), line
        row = dict(zip(titles, cells, strict=True))
        rows[row["row"], row["data"]] = row
    return rows


@pytest.mark.slow
def test_bench_reports_numbers_for_cas_and_git(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "bench.store_bench",
        "--files",
        "200",
        "--big-mib",
        "8",
        "--repeat",
        "1",
    ]
    done = subprocess.run(
        [*argv, "--out", tmp_path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = _table(done.stdout)
    assert rows.keys() >= MEASURED
    for key in MEASURED:
        row = rows[key]
        for column in ("s", "cpu s", "MiB/s", "RSS MiB"):
            assert float(row[column].replace(",", "")) > 0, (key, column, row)
    for key in (("cas put -r", "tree"), ("cas put FILE", "big")):
        assert float(rows[key]["git/cas"]) > 0
    assert re.search(r"^(PASS|MISS)  cas put -r at least 2x faster", done.stdout, re.M)
    assert re.search(r"^(PASS|MISS)  peak RSS under 150 MiB", done.stdout, re.M)
    for key in MEASURED:
        if key[0].startswith("cas"):  # the process and its workers: at least the process alone
            own, with_kids = (
                float(rows[key][c].replace(",", "")) for c in ("RSS MiB", "+kids MiB")
            )
            assert with_kids >= own > 0, (key, rows[key])
    assert re.search(
        r"^(PASS|MISS)  peak RSS, with worker processes, under 300 MiB", done.stdout, re.M
    )
    saved = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert {(r["name"], r["data"]) for r in saved["rows"]} >= MEASURED
    # The work directory (generated files, stores, repositories) is removed at the end.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
