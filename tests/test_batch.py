"""cas.batch: many puts, few commits; a batch that fails leaves nothing of its own behind."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store
from cas import batch as batch_mod
from cas.errors import CorruptBlob, InputError

CHUNK = 4096


def test_nothing_is_visible_before_the_commit_and_everything_after(store: Store) -> None:
    with store.batch() as batch:
        digests = [batch.put(f"file {i}\n".encode() * 10) for i in range(50)]
        again = batch.put(b"file 0\n" * 10)  # the same content twice in one batch
        assert again == digests[0]
        assert not store.has_many(digests)
    assert store.has_many(digests) == set(digests)
    assert batch.new_blobs == 50
    assert batch.new_bytes == sum(store.stat(d).stored_size for d in digests)
    for i, d in enumerate(digests):
        assert store.get(d) == f"file {i}\n".encode() * 10
    stats = store.stats()
    assert (stats.blobs, stats.ingested_count) == (50, 51)


def test_flush_commits_what_is_pending_and_the_batch_goes_on(store: Store) -> None:
    with store.batch() as batch:
        first = batch.put(b"first")
        batch.flush()
        assert store.has(first)
        second = batch.put(b"second")
        assert not store.has(second)
    assert store.has(second)


def test_a_batch_commits_by_itself_once_it_holds_enough_records(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_mod, "FLUSH_OPS", 10)  # the bound, not the mechanism
    with store.batch() as batch:
        digests = [batch.put(f"{i}".encode()) for i in range(25)]
        assert store.has_many(digests) == set(digests[:20])  # two commits of ten so far
    assert store.has_many(digests) == set(digests)


def test_a_failed_batch_takes_back_its_commits_but_not_what_another_writer_used(
    store: Store,
) -> None:
    kept_before = store.put(b"there before")
    before = store.stats()
    with pytest.raises(RuntimeError), store.batch() as batch:
        ours = batch.put(b"only this batch's")
        shared = batch.put(b"put by another writer too")
        batch.put(b"there before")  # used again: it stays
        batch.flush()
        assert store.has(ours) and store.has(shared)
        assert store.put(b"put by another writer too") == shared  # a writer uses it since
        raise RuntimeError("the caller fails after the commit")
    assert not store.has(ours)
    assert store.get(shared) == b"put by another writer too"
    assert store.get(kept_before) == b"there before"
    after = store.stats()
    assert after.blobs == before.blobs + 1
    assert batch.new_blobs == 0 and batch.new_bytes == 0


def test_a_put_whose_blob_vanished_before_the_commit_stores_it_again(store: Store) -> None:
    """The batch found the content stored and queued only a touch; a gc deleted it before the
    commit: the commit stores it again rather than leave a digest that names nothing."""
    digest = store.put(b"kept by the next pack\n" * 50)
    with store.batch() as batch:
        assert batch.put(b"kept by the next pack\n" * 50) == digest
        store.delete([digest])  # what a gc in another process does meanwhile
        assert not store.has(digest)
    assert store.get(digest) == b"kept by the next pack\n" * 50


def test_an_index_whose_chunk_vanished_fails_and_commits_nothing(small_store: Store) -> None:
    data = os.urandom(3 * CHUNK)
    digest = small_store.put(data)
    with pytest.raises(CorruptBlob, match="vanished"), small_store.batch() as batch:
        assert batch.put(data) == digest  # its chunks are stored: only referred to
        small_store.delete([digest])  # a gc deletes the blob and sweeps its chunks
        small_store.sweep_chunks(older_than_ns=2**62)
    assert not small_store.has(digest)
    assert small_store.stats().blobs == 0


def test_touch_refreshes_the_last_referenced_time_of_a_present_blob(store: Store) -> None:
    digest = store.put(b"summary")
    first = store.stat(digest)
    absent = Digest.of(b"never stored")
    with store.batch() as batch:
        batch.touch(digest)
        batch.touch(absent)
    later = store.stat(digest)
    assert later.last_referenced_ns > first.last_referenced_ns
    assert later.first_stored_ns == first.first_stored_ns
    assert not store.has(absent)
    assert store.stats().ingested_count == 1  # a touch is not a put


@settings(max_examples=30, deadline=None)
@given(
    st.binary(max_size=3 * 256 + 17),
    st.lists(st.integers(min_value=0, max_value=3 * 256 + 17), max_size=6),
)
def test_pieces_split_anywhere_store_the_blob_put_stores(data: bytes, cuts: list[int]) -> None:
    bounds = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *bounds], [*bounds, len(data)], strict=True)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.create(Path(tmp) / ".cas", chunk_size=256) as store,
    ):
        with store.batch() as batch:
            digest, size = batch.put_pieces(iter(pieces))
        assert (digest, size) == (Digest.of(data), len(data))
        assert store.get(digest) == data
        assert store.stat(digest).chunks == (0 if len(data) <= 256 else -(-len(data) // 256))
        assert store.put(data) == digest and store.stats().blobs == 1


def test_prepared_in_threads_and_added_is_what_a_put_stores(small_store: Store) -> None:
    large = os.urandom(5 * CHUNK)
    contents = [b"small one", large, b"small two", large]  # the large one twice
    with small_store.batch() as batch:
        with ThreadPoolExecutor(4) as pool:
            prepared = list(pool.map(batch.prepare, contents))
        digests = [batch.add(p) for p in prepared]
    assert digests == [Digest.of(c) for c in contents]
    assert [small_store.get(d) for d in digests] == contents
    # the large content was stored once, its chunks counted once
    stats = small_store.stats()
    assert batch.new_blobs == stats.blobs == 3 and stats.ingested_count == 4
    assert stats.stored_bytes == sum(small_store.stat(d).stored_size for d in set(digests))


def test_put_file_refuses_what_is_not_a_regular_file(tmp_path: Path, store: Store) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "real").write_bytes(b"real\n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    with store.batch() as batch:
        for name, problem in (
            ("dir", "is a directory"),
            ("pipe", "is a FIFO"),
            ("nope", "no such file"),
        ):
            with pytest.raises(InputError) as caught:
                batch.put_file(tmp_path / name)
            assert caught.value.problem == problem
        assert batch.put_file(tmp_path / "link") == Digest.of(b"real\n")
        with pytest.raises(InputError) as caught:
            batch.put_file(tmp_path / "link", follow_symlinks=False)
        assert caught.value.problem == "is a symlink"
