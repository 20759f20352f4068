"""The pack benchmark runs end to end on a tiny tree and reports numbers for every cas row."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CAS_ROWS = (
    "cas pack (cold)",
    "cas pack (warm)",
    "cas pack (1% changed)",
    "cas render",
    "cas verify --all",
    "cas gc --grace 0",
    "cas put -r",
)
STAGES = ("scan", "ingest: hash, store, secret scan", "tier: summaries, tokens, budgets, manifest")


def _table(stdout: str) -> dict[str, dict[str, str]]:
    """The table's rows by label, each a {column title: cell} map. Cells are separated by two
    or more spaces; no cell but the last (the note) holds two spaces in a row."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("row "))
    titles = re.split(r"\s{2,}", lines[head].strip())
    rows = {}
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip(), maxsplit=len(titles) - 1)
        cells += [""] * (len(titles) - len(cells))  # an empty note
        rows[cells[0]] = dict(zip(titles, cells, strict=True))
    return rows


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


@pytest.mark.slow
def test_pack_bench_reports_every_cas_row(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "bench.pack_bench", "--files", "300", "--mb", "4", "--runs", "1"]
    done = subprocess.run(
        [*argv, "--no-peers", "--out", tmp_path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = _table(done.stdout)
    for label in CAS_ROWS:
        row = rows[label]
        assert row["runs"] == "1", row
        for column in ("s", "cpu s", "RSS MiB"):
            assert _number(row[column]) > 0, (label, column, row)
    for label in STAGES:
        assert _number(rows[label]["s"]) >= 0, rows[label]
    # The stages are parts of the cold pack: together they cannot take longer than the process.
    assert sum(_number(rows[s]["s"]) for s in STAGES) <= _number(rows["cas pack (cold)"]["s"])
    # Every file is a stat-cache hit on the warm run: the tree's fixed mtimes keep all of them
    # out of the racy window, so the warm row measures a warm pack.
    packed = re.match(r"([\d,]+) files, 6 withheld or redacted", rows["cas pack (cold)"]["note"])
    assert packed is not None, rows["cas pack (cold)"]
    assert rows["cas pack (warm)"]["note"].startswith(f"{packed[1]} stat hits; scan ")
    pruned = re.fullmatch(
        r"pruned (\d+) of (\d+) blobs \((\d+)%\)", rows["cas gc --grace 0"]["note"]
    )
    assert pruned is not None, rows["cas gc --grace 0"]
    assert 35 <= int(pruned[3]) <= 65  # the gc set-up leaves about half the store unreferenced
    assert rows["git add -A"]["note"] == "skipped (--no-peers)"
    assert re.search(r"^(PASS|MISS)  warm pack at least 20x faster than cold", done.stdout, re.M)
    assert re.search(r"^(PASS|MISS)  peak RSS under 300 MiB", done.stdout, re.M)
    saved = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert {r["label"] for r in saved["rows"]} >= set(CAS_ROWS)
    # The work directory (tree, stores, repositories) is removed at the end.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "table.txt"]
