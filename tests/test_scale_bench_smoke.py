"""The scale benchmark runs end to end on a tiny local tree (no download, no peers), reports
numbers for every cas row and judges the goals that apply; the tree it was given is left as it
was."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchtable import table_rows
from tests.conftest import ROOT

CAS_ROWS = (
    "cas pack (cold)",
    "cas pack (cold) + first search",
    "cas render",
    "cas search (fresh process)",
    "cas pack (1% changed)",
)
DEFINED = {f"compute_total_{n}" for n in range(8)} | {f"LedgerEntry{n}" for n in range(8)}
DEFINED |= {"HandleRequest", "RouteTable"}


def _tiny_repo(top: Path) -> Path:
    repo = top / "tinyrepo"
    (repo / "pkg").mkdir(parents=True)
    for n in range(8):
        (repo / "pkg" / f"mod{n}.py").write_text(
            f"def compute_total_{n}(values):\n    return sum(values) + {n}\n\n\n"
            f"class LedgerEntry{n}:\n    pass\n",
            encoding="utf-8",
        )
    (repo / "main.go").write_text(
        "package main\n\nfunc HandleRequest() {}\n\ntype RouteTable struct{}\n", encoding="utf-8"
    )
    (repo / "README.md").write_text("# A tiny repository\n", encoding="utf-8")
    return repo


def _number(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


@pytest.mark.slow
def test_scale_bench_on_a_local_tree(tmp_path: Path) -> None:
    repo = _tiny_repo(tmp_path)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale_bench", repo, "--runs", "1", "--queries", "3",
         "--no-peers", "--out", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    flowed = " ".join(done.stdout.split())  # the header is wrapped
    assert "tinyrepo: the tree at" in flowed
    assert "10 files packed (fewer than 1,500 files: not at scale)" in flowed
    rows = table_rows(done.stdout, "repo", 1)
    for label in CAS_ROWS:
        row = rows[label]
        assert row["repo"] == "tinyrepo", row
        for column in ("s", "cpu s", "RSS MiB"):
            assert _number(row[column]) > 0, (label, column, row)
        assert _number(row["tree MiB"]) >= _number(row["RSS MiB"]), row
    assert rows["cas search (fresh process)"]["runs"] == "3"
    assert _number(rows["cas pack (cold) + first search"]["s"]) > _number(
        rows["cas pack (cold)"]["s"]
    )
    assert rows["cas pack (1% changed)"]["note"].startswith("1 file changed; ")
    for peer in ("repomix", "aider --show-repo-map"):
        assert rows[peer]["note"] == "skipped (--no-peers)"
        assert rows[peer]["repomix/cas"] == "-"

    goals = done.stdout[done.stdout.index("Goals of issue 22 on tinyrepo:") :].splitlines()[1:]
    for goal in (
        "pack after 1% of the files changed at most 1 s",
        "cas search, fresh process, at most 150 ms (median)",
        "peak RSS at most 300 MiB in every cas row, workers included",
    ):
        assert sum(1 for line in goals if re.match(rf"(PASS|MISS)  {re.escape(goal)}", line)) == 1
    assert sum(1 for line in goals if line.startswith("SKIP  ")) == 2  # the two against repomix

    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (result,) = saved["repos"]
    assert result["name"] == "tinyrepo"
    assert result["files"] == 10  # the cas.toml the bench wrote is not packed
    # The queries are names the tree defines, each once.
    assert len(result["queries"]) == 3
    assert set(result["queries"]) <= DEFINED
    assert {r["label"] for r in result["rows"]} >= set(CAS_ROWS)
    # The bench worked on a copy: nothing written into the tree it was given, and its work
    # folder is gone.
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "table.txt"]


def test_scale_bench_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    for args, said in (
        ([str(tmp_path / "missing")], "is not a directory"),
        ([str(tmp_path), "--repo", "django"], "give PATHs or --repo, not both"),
        ([str(tmp_path), "--runs", "0"], "--runs and --queries must be at least 1"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "bench.scale_bench", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines()[-1].endswith(said), done.stderr
        assert "Traceback" not in done.stderr
