"""A pack's result: what its report shows without the manifest, and the manifest read once, on
first use, when the run that reports it did not make it (`packer.replay`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cas import manifest as mf
from cas.digest import Digest
from cas.report import report_json
from packer.results import PackResult


def _manifest() -> mf.Manifest:
    entry = mf.Entry(path="a.py", digest=Digest.of(b"x = 1\n"), size=6, tier="high", tokens=4)
    return mf.Manifest(
        "repo", None, "o200k_base", 900, 1000, (entry,), totals={"files": 1, "tokens": {"xml": 9}}
    )


def test_a_result_made_from_its_manifest_reports_its_budget_and_totals() -> None:
    m = _manifest()
    digest = Digest.of(mf.encode(m))
    made = PackResult.made("repo", None, "repo", Path("/p/r.pack"), digest, m, True, {"xml": 9})
    assert made.has_manifest() and made.manifest is m
    out = report_json(made)
    assert out["budget"] == {"target": 900, "max": 1000}
    assert out["totals"] == m.totals
    assert "path" not in out and "_manifest" not in out and "_load" not in out


def test_a_replayed_result_reads_its_manifest_once_and_only_when_asked() -> None:
    m = _manifest()
    reads: list[int] = []

    def load() -> mf.Manifest:
        reads.append(1)
        return m

    result = PackResult(
        "repo", None, "repo", Path("/p/r.pack"), Digest.of(b"m"), False, {"xml": 9}, "r.pack",
        {"target": 900, "max": 1000}, dict(m.totals), None, load,
    )  # fmt: skip
    assert report_json(result)["budget"]["max"] == 1000
    assert not reads and not result.has_manifest()  # the report needs no manifest
    assert result.manifest.entries == m.entries
    assert result.manifest is m and reads == [1]  # read once


def test_a_result_without_its_manifest_or_a_way_to_read_it_says_so() -> None:
    bare = PackResult("repo", None, "repo", Path("/p/r.pack"), Digest.of(b"m"), False, {})
    with pytest.raises(ValueError, match="neither at hand nor readable"):
        _ = bare.manifest
