"""cas.report: every report a command prints with --json goes through `report_json`.

Each report class is built here with every kind of value it holds; its JSON must be what the
CLI printed before the convention (the same keys), survive `json.dumps`, and come from the
one path: no module of cas/ or packer/ writes a report's JSON by hand any more.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from cas import Digest
from cas import manifest as mf
from cas.gc import GcReport
from cas.remote.gc import RemoteGcReport
from cas.remote.pull import PullReport
from cas.remote.push import PushReport
from cas.remote.report import RemoteReport
from cas.remote.verify import RemoteProblem, RemoteVerifyReport
from cas.report import json_value, report_json
from cas.verify import Problem, VerifyReport
from packer.results import PackReport, PackResult
from packer.scan import ScanNote
from packer.search import Hit
from tests.conftest import ROOT

D = Digest.of(b"a blob")
REQUESTS = {"GetObject": 3, "ListObjectsV2": 2}
REMOTE_KEYS = {"remote", "url", "requests", "request_count", "seconds"}


def _pack_report() -> PackReport:
    m = mf.Manifest("repo", None, "o200k_base", 100, 120, (), {"files": 0})
    result = PackResult.made(
        "repo", None, "repo", Path("/p/manifests/repo.pack"), D, m, True, {"markdown": 7},
        "manifests/repo.pack",
    )  # fmt: skip
    return PackReport(
        Path("/p"),
        results=[result],
        notes=[ScanNote("odd\\xff", "not UTF-8")],
        withheld=[(".env", "aws")],
        redacted=[("conf.py", "token")],
        stale=["repo"],
        timings={"scan": 0.123456},
        work={"ingest: read": 1.000049},
        files=3,
        bytes_read=40,
        stat_hits=1,
    )


# (report, the keys its JSON has: those the CLI printed before `report_json`)
CASES: dict[str, tuple[Any, set[str]]] = {
    "verify": (
        VerifyReport(problems=[Problem("", "gone", ("a.pack",))], subset=(2, 5), seconds=1.23456),
        {"ok", "problems", "manifests", "pins", "checked", "bytes_checked", "not_reached",
         "outside_subset", "vanished", "seconds", "subset", "recorded", "search_index"},
    ),
    "gc": (
        GcReport(dry_run=True, grace_ns=1_500_000_000, waited_s=0.5, digests=[D]),
        {"dry_run", "grace_s", "manifests", "pins", "reachable", "pruned", "bytes_freed",
         "chunks_pruned", "chunk_bytes_freed", "kept_by_grace", "spared_late",
         "stale_leases_cleared", "live_leases", "waited_s", "bytes_given_back", "index_dropped",
         "digests"},
    ),
    "pack": (
        _pack_report(),
        {"root", "files", "stat_hits", "bytes_read", "packs", "withheld", "redacted", "notes",
         "stale", "timings", "work", "ingest_mode", "replayed", "orphans", "pruned"},
    ),
    "push": (
        PushReport("origin", "s3://b/p", manifests=[{"name": "repo", "digest": str(D),
                   "status": "uploaded"}], requests=dict(REQUESTS), seconds=2.0004),
        REMOTE_KEYS | {"manifests", "blobs_referenced", "blobs_present", "blobs_uploaded",
                       "chunks_uploaded", "packs_uploaded", "indexes_uploaded", "bytes_uploaded"},
    ),
    "pull": (
        PullReport("origin", "s3://b/p", requests=dict(REQUESTS)),
        REMOTE_KEYS | {"manifests", "blobs_referenced", "blobs_present", "blobs_downloaded",
                       "chunks_downloaded", "bytes_downloaded"},
    ),
    "remote verify": (
        RemoteVerifyReport("origin", "s3://b/p", True,
                           problems=[RemoteProblem("missing", str(D), "not there")]),
        REMOTE_KEYS | {"deep", "ok", "manifests", "blobs", "chunks", "bytes_downloaded",
                       "problems"},
    ),
    "remote gc": (
        RemoteGcReport("origin", "s3://b/p", False, 3600.0, requests=dict(REQUESTS)),
        REMOTE_KEYS | {"dry_run", "grace_s", "manifests", "live_blobs", "live_chunks",
                       "packs_before", "packs_after", "packs_deleted", "packs_repacked",
                       "packs_written", "frames_copied", "loose_packed", "loose_deleted",
                       "indexes_replaced", "kept_by_grace", "bytes_before", "bytes_freed",
                       "stale_locks"},
    ),
    "search hit": (
        Hit("src/a.py", ("repo",), D, 3, 5, 42, ((3, "def a():"), (4, "    pass"))),
        {"path", "packs", "lines", "score", "digest", "snippet"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_report_serializes_through_the_one_path(name: str) -> None:
    report, keys = CASES[name]
    out = report_json(report)
    assert set(out) == keys
    assert json.loads(json.dumps(out)) == out  # plain JSON data, nothing left to convert
    if isinstance(report, RemoteReport):
        assert out["request_count"] == sum(report.requests.values())
        assert (out["remote"], out["url"]) == (report.remote, report.url)


def test_the_field_rules_give_what_the_cli_printed() -> None:
    verify = report_json(CASES["verify"][0])
    assert verify["problems"] == [{"digest": None, "what": "gone", "manifests": ["a.pack"]}]
    assert (verify["subset"], verify["seconds"], verify["ok"]) == ("2/5", 1.235, False)
    gc = report_json(CASES["gc"][0])
    assert (gc["grace_s"], gc["digests"], gc["waited_s"]) == (1.5, [str(D)], 0.5)
    pack = report_json(CASES["pack"][0])
    assert pack["root"] == "/p"
    assert pack["packs"] == [
        {"name": "repo", "scope": "repo", "target": None, "digest": str(D),
         "manifest": "manifests/repo.pack", "written": True, "tokens": {"markdown": 7},
         "budget": {"target": 100, "max": 120}, "totals": {"files": 0}},
    ]  # fmt: skip
    assert pack["withheld"] == [{"path": ".env", "kind": "aws"}]
    assert pack["notes"] == [{"path": "odd\\xff", "reason": "not UTF-8"}]
    assert (pack["timings"], pack["work"]) == ({"scan": 0.1235}, {"ingest: read": 1.0})
    remote = report_json(CASES["remote verify"][0])
    assert remote["problems"] == [{"kind": "missing", "what": str(D), "detail": "not there"}]
    assert remote["ok"] is False and remote["deep"] is True
    hit = report_json(CASES["search hit"][0])
    assert hit["lines"] == [3, 5]
    assert hit["snippet"] == [{"line": 3, "text": "def a():"}, {"line": 4, "text": "    pass"}]


def test_a_value_without_a_rule_is_refused() -> None:
    with pytest.raises(TypeError, match="no JSON rule for bytes"):
        json_value(b"raw")
    with pytest.raises(TypeError, match="a report is a dataclass"):
        report_json({"not": "a report"})


def test_no_module_writes_a_reports_json_by_hand() -> None:
    """No ``as_json``, ``as_dict`` or ``to_json`` method outside the allowed one (a remote's
    configuration record, which is not a report)."""
    allowed = {("cas/remote/config.py", "as_json")}
    found = set()
    for package in ("cas", "packer"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and node.name in {
                    "as_json",
                    "as_dict",
                    "to_json",
                }:
                    found.add((rel, node.name))
    assert found <= allowed


def test_a_named_tuple_is_a_report_by_the_rules_it_was_given() -> None:
    """A NamedTuple made a report (`named_report`) gives its fields in order, each by its rule,
    then its extras; nested in another report it is an object, not a list; a NamedTuple that
    is no report is a list, as any tuple."""
    from typing import NamedTuple

    from cas.report import json_rule, named_report

    class Row(NamedTuple):
        name: str
        hidden: int
        spans: tuple[tuple[int, int], ...]

        @property
        def total(self) -> int:
            return sum(b - a for a, b in self.spans)

    class Plain(NamedTuple):
        a: int
        b: str

    named_report(
        Row,
        extra=("total",),
        hidden=json_rule(omit=True),
        spans=json_rule(key="ranges"),
    )
    row = Row("x", 7, ((1, 3), (10, 14)))
    assert report_json(row) == {"name": "x", "ranges": [[1, 3], [10, 14]], "total": 6}
    assert json_value({"rows": [row], "plain": Plain(1, "b")}) == {
        "rows": [{"name": "x", "ranges": [[1, 3], [10, 14]], "total": 6}],
        "plain": [1, "b"],
    }
    with pytest.raises(TypeError, match="a report is"):
        report_json(Plain(1, "b"))
    with pytest.raises(TypeError, match="no field 'nope'"):
        named_report(Plain, nope=json_rule(omit=True))
    with pytest.raises(TypeError, match="not a NamedTuple"):
        named_report(dict, a=json_rule(omit=True))
