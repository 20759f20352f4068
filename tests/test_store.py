"""The store: a conformance suite any backend must pass, property tests and a state machine."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

import cas.store as store_mod
from cas import Digest, Store, frame
from cas.errors import (
    BlobNotFound,
    CorruptBlob,
    KeyTooLong,
    StoreDamaged,
    StoreExists,
    StoreNotFound,
    StoreVersionError,
)
from tests import rawstore

CHUNK = 4096
SMALL_CHUNK = 4096  # the chunk size of the small_store fixture
Factory = Callable[[Path], Store]


def _lmdb_store(path: Path) -> Store:
    return Store.create(path / ".cas", chunk_size=CHUNK)


# Every backend the project ships is listed here; the suite below runs against each.
BACKENDS = {"lmdb": _lmdb_store}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with BACKENDS[request.param](tmp_path) as s:
        yield s


class TestConformance:
    """What every store must do, whatever keeps the bytes."""

    @pytest.mark.parametrize(
        "size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 1, 5 * CHUNK - 7]
    )
    def test_round_trip_at_chunk_boundaries(self, backend: Store, size: int) -> None:
        data = os.urandom(size)
        d = backend.put(data)
        assert bytes(d) == blake3.blake3(data).digest()
        assert backend.get(d) == data
        assert backend.has(d)
        st_ = backend.stat(d)
        assert st_.raw_size == size
        assert st_.chunks == (0 if size <= CHUNK else -(-size // CHUNK))

    def test_put_is_idempotent_and_dedupes(self, backend: Store) -> None:
        data = b"same content " * 1000
        d1 = backend.put(data)
        before = backend.stats()
        d2 = backend.put(data)
        after = backend.stats()
        assert d1 == d2
        assert after.blobs == before.blobs == 1
        assert after.stored_bytes == before.stored_bytes
        assert after.ingested_bytes == 2 * len(data)
        assert after.dedup_ratio == pytest.approx(2.0)

    def test_large_blob_dedupes_too(self, backend: Store) -> None:
        data = os.urandom(3 * CHUNK + 5)
        backend.put(data)
        before = backend.stats()
        backend.put_stream(io.BytesIO(data))
        assert backend.stats().stored_bytes == before.stored_bytes

    def test_put_file_and_stream_agree_with_put(self, backend: Store, tmp_path: Path) -> None:
        data = os.urandom(3 * CHUNK + 17)
        path = tmp_path / "f"
        path.write_bytes(data)
        assert backend.put_file(path) == backend.put(data)
        assert backend.put_stream(io.BytesIO(data)) == Digest.of(data)

    def test_stream_read_in_odd_sizes(self, backend: Store) -> None:
        data = os.urandom(4 * CHUNK + 3)
        d = backend.put(data)
        with backend.open(d) as reader:
            got = b""
            while piece := reader.read(777):
                got += piece
        assert got == data

    def test_unknown_digest(self, backend: Store) -> None:
        d = Digest.of(b"never stored")
        assert not backend.has(d)
        with pytest.raises(BlobNotFound):
            backend.get(d)
        with pytest.raises(BlobNotFound):
            backend.stat(d)

    def test_iterate_lists_every_blob_once_in_order(self, backend: Store) -> None:
        digests = {backend.put(os.urandom(i * 300)) for i in range(1, 40)}
        listed = list(backend.iterate(page=7))
        assert listed == sorted(digests)

    def test_delete_removes_and_frees(self, backend: Store) -> None:
        keep = backend.put(b"keep" * 100)
        gone = backend.put(os.urandom(3 * CHUNK))
        removed, freed = backend.delete([gone])
        assert removed == 1 and freed > 0
        assert not backend.has(gone) and backend.has(keep)
        # Chunks go in a later sweep, after the grace period.
        count, chunk_bytes = backend.sweep_chunks(older_than_ns=2**62)
        assert count == 3 and chunk_bytes >= 3 * CHUNK
        assert backend.stats().blobs == 1

    def test_a_dedupe_refreshes_last_referenced(self, backend: Store) -> None:
        d = backend.put(b"x" * 100)
        first = backend.stat(d)
        backend.put(b"x" * 100)
        second = backend.stat(d)
        assert second.first_stored_ns == first.first_stored_ns
        assert second.last_referenced_ns > first.last_referenced_ns

    def test_batch_commits_once_and_rolls_back_on_error(self, backend: Store) -> None:
        with backend.batch() as b:
            ds = [b.put(f"item {i}".encode()) for i in range(100)]
            assert not backend.has(ds[0])  # nothing visible before the commit
        assert backend.has_many(ds) == set(ds)
        with pytest.raises(RuntimeError), backend.batch() as b:
            lost = b.put(b"never committed")
            raise RuntimeError("boom")
        assert not backend.has(lost)

    def test_stats_ratios(self, backend: Store) -> None:
        backend.put(b"a" * 100_000)
        st_ = backend.stats()
        assert st_.raw_bytes == 100_000
        assert st_.compression_ratio > 10


def test_blob_bigger_than_the_initial_map_grows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_mod, "_INITIAL_MAP", 1 << 20)
    with Store.create(tmp_path / ".cas") as s:
        data = os.urandom(6 << 20)  # incompressible, six times the initial map
        d = s.put(data)
        assert s.get(d) == data
        many = s.put_many(os.urandom(5000) for _ in range(500))
        assert s.has_many(many) == set(many)


def test_corrupted_value_is_detected_on_read(store: Store) -> None:
    d = store.put(b"precious " * 200)
    value = store.raw_value(d)
    assert value is not None
    damaged = value[:-1] + bytes([value[-1] ^ 1])
    rawstore.put(store, "blobs", d, damaged)
    with pytest.raises(CorruptBlob) as info:
        store.get(d)
    assert str(d) in str(info.value)


def test_corrupted_chunk_is_detected_and_named(small_store: Store) -> None:
    data = os.urandom(3 * CHUNK)
    d = small_store.put(data)
    chunk = Digest.of(data[CHUNK : 2 * CHUNK])
    value = small_store.raw_chunk(chunk)
    assert value is not None
    # its last byte changed (random data: setting it to 0 left it as it was one time in 256)
    rawstore.put(small_store, "chunks", chunk, value[:-1] + bytes([value[-1] ^ 1]))
    with pytest.raises(CorruptBlob) as info:
        small_store.get(d)
    assert str(d) in str(info.value) and str(chunk) in str(info.value)
    # Without verification the reader returns what is there, but never crashes.
    assert len(small_store.get(d, verify=False)) == len(data)


def test_store_version_marker_refuses_newer(tmp_path: Path) -> None:
    s = Store.create(tmp_path / ".cas")
    rawstore.put(s, "info", b"format", b"2")
    s.close()
    with pytest.raises(StoreVersionError) as info:
        Store.at(tmp_path / ".cas")
    assert "format version 2" in str(info.value) and "upgrade cas" in str(info.value)


def test_init_twice_is_refused(tmp_path: Path) -> None:
    Store.create(tmp_path / ".cas").close()
    with pytest.raises(StoreExists):
        Store.create(tmp_path / ".cas")


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=300),
            st.integers(min_value=0, max_value=3 * CHUNK + 1).map(lambda n: b"\x01" * n),
            st.integers(min_value=CHUNK - 2, max_value=CHUNK + 2).map(os.urandom),
        ),
        max_size=12,
    )
)
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory, blobs: list[bytes]) -> None:
    with Store.create(tmp_path_factory.mktemp("s") / ".cas", chunk_size=CHUNK) as s:
        digests = s.put_many(blobs)
        for data, d in zip(blobs, digests, strict=True):
            assert d == Digest.of(data)
            assert s.get(d) == data
        assert s.stats().blobs == len(set(blobs))


class StoreMachine(RuleBasedStateMachine):
    """The store against a plain dict: after any sequence of puts, deletes and reopenings, both
    agree on what is present and what it holds."""

    digests = Bundle("digests")

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        self.path = Path(self._tmp.name) / ".cas"
        self.store = Store.create(self.path, chunk_size=256)
        self.model: dict[Digest, bytes] = {}

    @rule(target=digests, data=st.binary(max_size=900))
    def put(self, data: bytes) -> Digest:
        d = self.store.put(data)
        self.model[d] = data
        return d

    @rule(target=digests, items=st.lists(st.binary(max_size=600), max_size=5))
    def put_batch(self, items: list[bytes]) -> Digest:
        ds = self.store.put_many(items)
        for d, data in zip(ds, items, strict=True):
            self.model[d] = data
        return ds[0] if ds else Digest.of(b"")

    @rule(d=digests)
    def delete(self, d: Digest) -> None:
        removed, _ = self.store.delete([d])
        assert removed == (1 if d in self.model else 0)
        self.model.pop(d, None)

    @rule(d=digests)
    def get(self, d: Digest) -> None:
        if d in self.model:
            assert self.store.get(d) == self.model[d]
        else:
            assert not self.store.has(d)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store.at(self.path)

    @rule()
    def sweep(self) -> None:
        self.store.sweep_chunks(older_than_ns=2**62)

    @invariant()
    def same_contents(self) -> None:
        assert set(self.store.iterate()) == set(self.model)
        st_ = self.store.stats()
        assert st_.blobs == len(self.model)
        assert st_.raw_bytes == sum(len(v) for v in self.model.values())

    def teardown(self) -> None:
        self.store.close()
        self._tmp.cleanup()


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)


# --- frames from elsewhere (no server) ---------------------------------------------------------


def copy_frames(src: Store, dst: Store, digest: Digest) -> None:
    value = src.raw_value(digest)
    assert value is not None
    chunks = []
    if frame.header(value).codec == frame.INDEX:
        for chunk in frame.decode_index(value)[2]:
            piece = src.raw_chunk(chunk)
            assert piece is not None
            chunks.append((chunk, piece))
    dst.put_frames([(digest, value)], chunks=chunks)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 5 * 1024), min_size=1, max_size=6),
    src_chunk=st.sampled_from([512, 1024, 4096]),
    dst_chunk=st.sampled_from([256, 1024, 1 << 20]),
)
def test_put_frames_copies_between_chunk_sizes(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], src_chunk: int, dst_chunk: int
) -> None:
    where = tmp_path_factory.mktemp("frames")
    with (
        Store.create(where / "a", chunk_size=src_chunk) as src,
        Store.create(where / "b", chunk_size=dst_chunk) as dst,
    ):
        bodies = [os.urandom(n // 2) * 2 for n in sizes]
        digests = src.put_many(bodies)
        for d in digests:
            copy_frames(src, dst, d)
            copy_frames(src, dst, d)  # again: nothing new
        for d, body in zip(digests, bodies, strict=True):
            assert dst.get(d) == body
            assert dst.stat(d).raw_size == len(body)
        assert dst.stats().blobs == len(set(digests))
        assert dst.stats().raw_bytes == sum(len(b) for b in {bytes(b) for b in bodies})


def test_put_frames_refuses_what_does_not_match(small_store: Store, tmp_path: Path) -> None:
    with Store.create(tmp_path / "src", chunk_size=SMALL_CHUNK) as src:
        small = src.put(b"small content " * 10)
        large_body = os.urandom(3 * SMALL_CHUNK + 5)
        large = src.put(large_body)
        index = src.raw_value(large)
        assert index is not None
        chunks = frame.decode_index(index)[2]
        chunk_frames = [(c, src.raw_chunk(c) or b"") for c in chunks]
    other = frame.encode(b"other content", 3)
    lying_size = bytearray(frame.encode(b"x" * 100, 0))
    lying_size[4:12] = (1 << 40).to_bytes(8, "big")
    cases: list[tuple[list[tuple[Digest, bytes]], list[tuple[Digest, bytes]], str]] = [
        ([(small, other)], [], "does not match"),
        ([(small, b"CF\x01\x01garbage!")], [], "corrupt"),
        ([(small, bytes(lying_size))], [], "over the limit"),
        ([(large, index)], [], "missing"),  # chunks never sent
        ([], [(chunks[0], chunk_frames[1][1])], "does not match"),
        ([], [(chunks[0], index)], "chunk index where a chunk"),
    ]
    # Chunks that each match but sit in the wrong order: the whole blob does not hash.
    swapped = frame.encode_index(len(large_body), SMALL_CHUNK, [chunks[1], chunks[0], *chunks[2:]])
    cases.append(([(large, swapped)], chunk_frames, "does not match its digest"))
    for blobs, chunk_items, message in cases:
        with pytest.raises(CorruptBlob, match=message) as info:
            small_store.put_frames(blobs, chunks=chunk_items)
        named = blobs[0][0] if blobs else chunk_items[0][0]
        assert str(named) in str(info.value)
        assert not small_store.has(small) and not small_store.has(large)
    assert small_store.stats().blobs == 0
    small_store.put_frames([(large, index)], chunks=chunk_frames)
    assert small_store.get(large) == large_body


# --- chunked reads: each chunk hashed once, each of the size its place needs ------------------


def test_a_chunk_listed_again_is_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.create(tmp_path / "s", chunk_size=4096) as store:
        piece = os.urandom(4096)
        body = piece * 50 + b"end"
        digest = store.put(body)
        assert store.stat(digest).chunks == 51
        hashed: list[int] = []
        real_of = Digest.of.__func__  # type: ignore[attr-defined]

        def counting(cls: type[Digest], data: Any) -> Digest:
            hashed.append(len(data))
            return real_of(cls, data)  # type: ignore[no-any-return]

        monkeypatch.setattr(Digest, "of", classmethod(counting))
        assert store.get(digest, verify=True) == body
        # The repeated chunk once, the last one once; the whole blob is hashed as it streams.
        assert sorted(hashed) == [3, 4096]


def test_a_chunk_that_does_not_fit_its_place_is_refused(small_store: Store) -> None:
    inner = os.urandom(70_000)
    chunk = Digest.of(inner)
    index = frame.encode_index(48, 16, [chunk, chunk, chunk])
    forged = Digest.of(b"whatever")
    with pytest.raises(CorruptBlob, match="holds 70000 bytes where the index implies 16"):
        small_store.put_frames([(forged, index)], chunks=[(chunk, frame.encode(inner, 3))])
    assert not small_store.has(forged)


# --- key-value updates: read and written in one transaction ----------------------------------


def _count(raw: bytes | None) -> bytes:
    return str(int(raw or b"0") + 1).encode()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from([b"a", b"b", b"c\x00d"]), max_size=4), max_size=12))
def test_kv_update_applies_every_update_once_per_key_and_call(
    tmp_path_factory: pytest.TempPathFactory, calls: list[list[bytes]]
) -> None:
    with Store.create(tmp_path_factory.mktemp("kv") / ".cas") as s:
        for keys in calls:
            s.kv.update("usage", keys, _count)
        expected: dict[bytes, int] = {}
        for keys in calls:
            for key in set(keys):
                expected[key] = expected.get(key, 0) + 1
        assert {k: int(v) for k, v in s.kv.items("usage")} == expected
        assert [k for k, _ in s.kv.items("usage")] == sorted(expected)


def test_kv_update_from_two_threads_loses_no_update(store: Store) -> None:
    def bump() -> None:
        for _ in range(50):
            store.kv.update("usage", [b"n"], _count)

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.kv.get("usage", b"n") == b"100"
    with pytest.raises(KeyTooLong):
        store.kv.update("usage", [b"k" * (store.max_key_size + 1)], _count)
    with pytest.raises(ValueError, match="caller-chosen keys"):
        store.kv.update("blobs", [b"k"], _count)  # type: ignore[arg-type]


def test_a_store_made_before_the_usage_table_opens_and_gains_it(tmp_path: Path) -> None:
    where = tmp_path / ".cas"
    with Store.create(where) as s:
        digest = s.put(b"kept")
        rawstore.drop_table(s, "usage")
    with Store.at(where, readonly=True) as s:
        assert s.kv.items("usage") == []  # read as empty, the file untouched
        assert s.get(digest) == b"kept"
    with Store.at(where) as s:  # open to write: the table is made
        s.kv.update("usage", [b"k"], _count)
    with Store.at(where, readonly=True) as s:
        assert s.kv.items("usage") == [(b"k", b"1")]
        assert s.get(digest) == b"kept"


def test_a_missing_table_of_the_first_version_is_still_damage(tmp_path: Path) -> None:
    where = tmp_path / ".cas"
    with Store.create(where) as s:
        rawstore.drop_table(s, "pins")
    with pytest.raises(StoreDamaged, match="'pins' is missing"):
        Store.at(where)


def test_find_store_looks_in_each_folder_up_to_the_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CAS_STORE", raising=False)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    with Store.create(tmp_path / ".cas"):
        pass
    assert store_mod.find_store(deep) == tmp_path / ".cas"
    assert store_mod.find_store(tmp_path) == tmp_path / ".cas"
    # from the top of the file system the search is that one folder, and it ends
    try:
        found: Path | None = store_mod.find_store("/")
    except StoreNotFound:
        found = None
    assert found in (None, Path("/.cas"))
