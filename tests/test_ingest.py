"""Ingest in worker processes gives exactly what ingest in threads gives, and falls back to
threads, losing and repeating nothing, when a worker process cannot run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from cas import Store, procpool
from cas.cache import Cache
from packer.ingest import Ingest, IngestReport
from packer.lexicon import cache_namespace, decode, lex
from packer.scan import ScannedFile, scan
from packer.tokens import TokenCounter
from tests.packfixture import build_tree


def _tree(tmp_path: Path) -> Path:
    root = build_tree(tmp_path / "r", with_specials=False)
    # Content seen twice (same digest at two paths), an empty file and a 2 MiB file (chunked).
    (root / "docs" / "copy-of-guide.md").write_bytes((root / "docs" / "guide.md").read_bytes())
    (root / "empty.txt").write_bytes(b"")
    (root / "data.bin").write_bytes(os.urandom(1 << 21))
    return root


def _ingest(root: Path, store_dir: Path, **kwargs: object) -> tuple[IngestReport, set[bytes]]:
    files = scan(root, exclude_dirs=[".cas", "manifests"]).files
    with Store.create(store_dir) as store:
        cache = Cache(store)
        with store.batch() as batch:
            report = Ingest(batch, cache, TokenCounter(), **kwargs).run(files)  # type: ignore[arg-type]
        cache.flush()
        blobs = {bytes(d) for d in store.iterate()}
    return report, blobs


def _facts(report: IngestReport) -> list[tuple[object, ...]]:
    return [(f.path, f.kind, f.size, f.digest, f.forced, f.secret, f.text) for f in report.facts]


def test_processes_and_threads_give_the_same_facts_and_blobs(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    threads, in_threads = _ingest(root, tmp_path / "a", processes=False)
    procs, in_procs = _ingest(root, tmp_path / "b", processes=True)
    assert threads.mode == "threads" and procs.mode == "processes"
    assert _facts(procs) == _facts(threads)
    assert sorted(procs.withheld) == sorted(threads.withheld) and procs.withheld
    assert in_procs == in_threads
    assert procs.bytes_read == threads.bytes_read > 0
    assert set(procs.work) == set(threads.work) == {
        "read", "hash", "secret scan", "compress and check", "lexicon", "terms"
    }  # fmt: skip


def test_a_failing_worker_pool_falls_back_to_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path)
    expected, expected_blobs = _ingest(root, tmp_path / "a", processes=False)
    real = Ingest._in_processes

    def breaks_after_five(
        self: Ingest, todo: list[ScannedFile]
    ) -> Iterator[tuple[ScannedFile, object]]:
        for i, item in enumerate(real(self, todo)):
            if i == 5:
                raise BrokenProcessPool("a worker died")
            yield item

    monkeypatch.setattr(Ingest, "_in_processes", breaks_after_five)
    report, blobs = _ingest(root, tmp_path / "b", processes=True)
    assert "then threads after 5 files" in report.mode
    assert _facts(report) == _facts(expected)
    assert len({f.path for f in report.facts}) == len(report.facts)
    assert blobs == expected_blobs


def test_small_runs_use_threads_and_large_ones_processes(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    files = scan(root, exclude_dirs=[".cas"]).files
    with Store.create(tmp_path / "s") as store, store.batch() as batch:
        auto = Ingest(batch, Cache(store), TokenCounter())
        many = files * (1500 // len(files) + 1)
        procpool.enable_auto(False)
        assert not auto.use_processes(many)  # a program embedding cas gets threads
        procpool.enable_auto(True)  # as the `cas` command does
        try:
            assert not auto.use_processes(files)
            assert auto.use_processes(many) == ((os.cpu_count() or 1) >= 2)
        finally:
            procpool.enable_auto(False)
        assert (
            Ingest(batch, Cache(store), TokenCounter(), processes=False).use_processes(many)
            is False
        )


@pytest.mark.parametrize("processes", [False, True])
def test_the_workers_leave_each_source_files_lexicon_in_the_cache(
    tmp_path: Path, processes: bool
) -> None:
    root = _tree(tmp_path)
    files = scan(root, exclude_dirs=[".cas", "manifests"]).files
    with Store.create(tmp_path / "s") as store:
        cache = Cache(store)
        with store.batch() as batch:
            report = Ingest(batch, cache, TokenCounter(), processes=processes).run(files)
        cache.flush()
        lexed = 0
        for fact in report.facts:
            ns = cache_namespace(fact.path)
            if ns is None or not fact.text or fact.digest is None:
                continue
            raw = cache.get(ns, bytes(fact.digest))
            assert raw is not None, fact.path
            # exactly what the main thread would make from the stored body
            assert decode(raw) == lex(fact.path, store.get(fact.digest)), fact.path
            lexed += 1
        assert lexed >= 5
        assert report.work["lexicon"] > 0
