"""The memory benchmark runs end to end in a small configuration and reports every row, for cas
and for its peers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_the_memory_bench_reports_every_row(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory_bench", "--ops", "3", "--budget", "1500",
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for row in ("short-term write (add_turn)", "long-term search (hybrid)",
                "end-to-end turn (add_turn + get_context)", "tokens of the conversation",
                "critical gaps (turns)", "continuity (new session has the summary)"):  # fmt: skip
        assert row in done.stdout, row
    results = json.loads((tmp_path / "results.json").read_text())
    ops = {r["row"]: r for r in results["operations"]}
    assert all(r["cas_p50_ms"] > 0 for r in ops.values())
    assert ops["fact read (get_fact)"]["peer_p50_ms"] > 0
    conv = results["conversation"]
    assert len(conv["tokens"]) == 30 and max(conv["tokens"]) <= 1500
    assert len(results["stateless"]["tokens"]) == 30
    assert conv["continuity"] is True
