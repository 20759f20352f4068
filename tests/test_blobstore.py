"""The blob-store contract (`cas.blobstore`): one suite, run against every store that keeps it.

The backends: the LMDB store, the in-memory store, and the remote store (`RemoteBlobStore`) on
the in-memory bucket and on a real S3 server (SeaweedFS, started once for the session, each
store under its own prefix). Plain tests pin the cases that matter (empty and chunked blobs,
idempotent puts, order, missing digests, frames moved between stores and damaged on the way);
a state machine checks every backend against a plain ``dict``. Capabilities decide what is
asked: only a ``persistent`` store is reopened, only a ``buffered`` one hides unflushed puts.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cas import Digest, Store, frame
from cas.blobstore import BlobStore, copy_frames, frames_of
from cas.errors import BlobNotFound, CorruptBlob
from cas.memstore import MemoryStore
from cas.remote.blobs import RemoteBlobStore
from cas.remote.config import make_remote
from cas.remote.memory_bucket import MemoryBucket
from cas.remote.storage import ObjectStorage
from tests.s3server import SeaweedS3, s3server

__all__ = ["s3server"]  # the session fixture, imported so pytest finds it here

CHUNK = 4096  # every store of the suite chunks above 4 KiB, so chunking is cheap to reach


# --- backends -----------------------------------------------------------------------------------


class Backend:
    """Opens empty stores of one kind and closes what it opened."""

    name = ""
    examples = 30  # state machine runs
    steps = 25

    def __init__(self) -> None:
        self._closers: list[Callable[[], None]] = []

    def open(self) -> BlobStore:
        raise NotImplementedError

    def reopen(self, store: BlobStore) -> BlobStore:
        """The same place opened again, ``store`` dropped (what it did not flush is lost)."""
        raise NotImplementedError

    def other(self, store: BlobStore) -> BlobStore:
        """A second reader of the place ``store`` writes to, beside it."""
        raise NotImplementedError

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()


class LmdbBackend(Backend):
    name = "lmdb"
    examples = 20

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def open(self) -> BlobStore:
        store = Store.create(self.root / uuid.uuid4().hex / ".cas", chunk_size=CHUNK)
        self._closers.append(store.close)
        return store

    def reopen(self, store: BlobStore) -> BlobStore:
        assert isinstance(store, Store)
        store.close()
        again = Store.at(store.path)
        self._closers.append(again.close)
        return again


class MemoryBackend(Backend):
    name = "memory"
    examples = 40

    def open(self) -> BlobStore:
        return MemoryStore(chunk_size=CHUNK)


class RemoteBackend(Backend):
    def __init__(
        self, name: str, new_bucket: Callable[[], ObjectStorage], examples: int, steps: int
    ) -> None:
        super().__init__()
        self.name = name
        self.new_bucket = new_bucket
        self.examples = examples
        self.steps = steps

    def open(self) -> BlobStore:
        bucket = self.new_bucket()
        self._closers.append(bucket.close)
        return RemoteBlobStore(bucket, chunk_size=CHUNK, jobs=2)

    def reopen(self, store: BlobStore) -> BlobStore:
        assert isinstance(store, RemoteBlobStore)
        return RemoteBlobStore(store.bucket, chunk_size=CHUNK, jobs=2)

    other = reopen


def seaweed_buckets(
    server: SeaweedS3, home: Path, mp: pytest.MonkeyPatch
) -> Callable[[], ObjectStorage]:
    """A maker of real buckets, each under a prefix of its own; boto3 in this process reads
    the server's credentials from the environment, as cas always does."""
    from cas.remote.s3 import Bucket

    for key in [k for k in os.environ if k.startswith("AWS_")]:
        mp.delenv(key)
    for key, value in server.env(home).items():
        mp.setenv(key, value)

    def new() -> ObjectStorage:
        prefix = "bs" + uuid.uuid4().hex[:10]
        url = f"s3://{server.bucket}/{prefix}"
        bucket: ObjectStorage = Bucket(make_remote("t", url, endpoint=server.endpoint))
        return bucket

    return new


BACKENDS = ["lmdb", "memory", "remote-memory", "remote-seaweedfs"]


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Backend]:
    chosen: Backend
    if request.param == "lmdb":
        chosen = LmdbBackend(tmp_path)
    elif request.param == "memory":
        chosen = MemoryBackend()
    elif request.param == "remote-memory":
        chosen = RemoteBackend("remote-memory", MemoryBucket, examples=30, steps=25)
    else:
        server = request.getfixturevalue("s3server")
        new = seaweed_buckets(server, tmp_path, monkeypatch)
        # Every step is a request or a few: few runs keep this backend within seconds.
        chosen = RemoteBackend("remote-seaweedfs", new, examples=15, steps=20)
    try:
        yield chosen
    finally:
        chosen.close()


@pytest.fixture
def store(backend: Backend) -> BlobStore:
    return backend.open()


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Store]:
    """An LMDB store of the same chunk size: the reference for frames."""
    with Store.create(tmp_path / "peer" / ".cas", chunk_size=CHUNK) as s:
        yield s


def noise(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


# Content of every shape that matters: empty, tiny, compressible, exactly one chunk, one byte
# over, chunked and incompressible, chunked with the same chunk listed twice.
SHAPES = [
    b"",
    b"x",
    b"hello, world\n" * 40,
    noise(CHUNK, 1),
    noise(CHUNK + 1, 2),
    noise(3 * CHUNK + 17, 3),
    b"ab" * (CHUNK + 10),
]


# --- plain tests ------------------------------------------------------------------------------


def test_every_store_keeps_the_contract(store: BlobStore) -> None:
    assert isinstance(store, BlobStore)
    assert store.chunk_size == CHUNK
    assert isinstance(store.persistent, bool) and isinstance(store.buffered, bool)


def test_round_trip_of_every_shape(backend: Backend, store: BlobStore) -> None:
    digests = [store.put(data) for data in SHAPES]
    assert digests == [Digest.of(data) for data in SHAPES]
    for digest, data in zip(digests, SHAPES, strict=True):
        assert store.has(digest)
        assert store.get(digest) == data
    assert list(store.iterate()) == sorted(set(digests))
    store.flush()
    if store.persistent:
        again = backend.reopen(store)
        assert [again.get(d) for d in digests] == SHAPES
        assert list(again.iterate()) == sorted(set(digests))


def test_large_content_is_chunked_as_the_store_says(store: BlobStore) -> None:
    data = noise(2 * CHUNK + 5, 4)
    digest = store.put(data)
    value = store.raw_value(digest)
    assert value is not None and frame.header(value).codec == frame.INDEX
    raw_size, chunk_size, chunks = frame.decode_index(value)
    assert (raw_size, chunk_size, len(chunks)) == (len(data), CHUNK, 3)
    for i, chunk in enumerate(chunks):
        piece = store.raw_chunk(chunk)
        assert piece is not None
        assert frame.decode(piece) == data[i * CHUNK : (i + 1) * CHUNK]
    small = store.raw_value(store.put(data[:CHUNK]))
    assert small is not None and frame.header(small).codec != frame.INDEX


def test_the_empty_blob(store: BlobStore) -> None:
    digest = store.put(b"")
    assert digest == Digest.of(b"")
    assert store.get(digest) == b""
    assert store.raw_value(digest) == frames_of(b"", chunk_size=CHUNK, level=3)[1]
    assert len(store.raw_value(digest) or b"") == frame.HEADER_SIZE


def test_put_is_idempotent(store: BlobStore) -> None:
    data = noise(CHUNK * 2, 5)
    first = store.put(data)
    value = store.raw_value(first)
    assert store.put(data) == first
    assert store.raw_value(first) == value
    assert list(store.iterate()) == [first]
    side = MemoryStore(chunk_size=CHUNK)
    side.put(data)
    assert copy_frames(side, store, [first]) == (0, 0)  # nothing new: already there
    store.flush()
    assert list(store.iterate()) == [first]


def test_has_many_and_order(store: BlobStore) -> None:
    contents = [f"blob {i}".encode() * (i + 1) for i in range(30)]
    digests = [store.put(data) for data in contents]
    absent = [Digest.of(f"absent {i}".encode()) for i in range(5)]
    some = set(digests[::3])
    assert store.has_many([*some, *absent]) == some
    assert store.has_many([]) == set()
    listed = list(store.iterate())
    assert listed == sorted(digests)  # ascending by raw bytes, each once
    assert [bytes(d) for d in listed] == sorted(bytes(d) for d in digests)
    store.flush()
    assert list(store.iterate()) == listed
    assert store.has_many([*digests, *absent]) == set(digests)


def test_a_missing_digest(store: BlobStore) -> None:
    store.put(b"something else")
    missing = Digest.of(b"never stored")
    assert not store.has(missing)
    assert store.has_many([missing]) == set()
    assert store.raw_value(missing) is None
    assert store.raw_chunk(missing) is None
    with pytest.raises(BlobNotFound) as info:
        store.get(missing)
    assert info.value.digest == str(missing)


@pytest.mark.parametrize("data", SHAPES[1:], ids=lambda d: f"{len(d)}B")
def test_frames_are_the_same_bytes_in_every_store(
    store: BlobStore, peer: Store, data: bytes
) -> None:
    digest = store.put(data)
    assert peer.put(data) == digest
    value = store.raw_value(digest)
    assert value == peer.raw_value(digest)
    assert value is not None
    if frame.header(value).codec == frame.INDEX:
        for chunk in frame.decode_index(value)[2]:
            assert store.raw_chunk(chunk) == peer.raw_chunk(chunk)


def test_frames_move_between_stores_and_are_checked_again(
    backend: Backend, store: BlobStore, peer: Store
) -> None:
    # From the reference store into this one ...
    incoming = [peer.put(data) for data in SHAPES]
    new, nbytes = copy_frames(peer, store, incoming)
    assert new == len(set(incoming)) and nbytes > 0
    assert [store.get(d) for d in incoming] == SHAPES
    # ... and from this one into another store.
    outgoing = [store.put(b"out " + data) for data in SHAPES]
    side = MemoryStore(chunk_size=CHUNK)
    assert copy_frames(store, side, outgoing)[0] == len(outgoing)
    assert [side.get(d) for d in outgoing] == [b"out " + data for data in SHAPES]
    store.flush()
    if store.persistent:
        again = backend.reopen(store)
        assert [again.get(d) for d in incoming] == SHAPES


def damaged(value: bytes, how: str, at: int) -> bytes:
    if how == "flip":
        i = at % len(value)
        return value[:i] + bytes([value[i] ^ 0x5A]) + value[i + 1 :]
    if how == "truncate":
        return value[: at % len(value)]
    return value + bytes([at % 256]) * (1 + at % 7)  # "extend"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.sampled_from(SHAPES),
    how=st.sampled_from(["flip", "truncate", "extend"]),
    at=st.integers(0, 1 << 16),
    where=st.sampled_from(["blob", "chunk"]),
)
def test_a_damaged_frame_is_refused_and_nothing_stored(
    store: BlobStore, data: bytes, how: str, at: int, where: str
) -> None:
    digest, value, chunks = frames_of(data, chunk_size=CHUNK, level=3)
    if where == "chunk" and chunks:
        first, piece = chunks[0]
        chunks = [(first, damaged(piece, how, at)), *chunks[1:]]
    else:
        value = damaged(value, how, at)
    had = store.has(digest)
    try:
        store.put_frames([(digest, value)], chunks=chunks)
    except CorruptBlob as exc:
        note(f"refused: {exc}")
        assert store.has(digest) == had
        assert store.has_many([digest]) == ({digest} if had else set())
    else:
        # A change that still decodes to exactly the content (zstd may allow one) is no harm.
        assert store.get(digest) == data


def test_a_frame_under_another_digest_is_refused(store: BlobStore) -> None:
    a, b = b"the content of a" * 10, b"the content of b" * 10
    da, va, _ = frames_of(a, chunk_size=CHUNK, level=3)
    db, vb, _ = frames_of(b, chunk_size=CHUNK, level=3)
    with pytest.raises(CorruptBlob) as info:
        store.put_frames([(da, vb)])
    assert info.value.digest == str(da)
    assert not store.has(da)
    # One bad frame in a call: no blob of the call is taken, the good one neither.
    with pytest.raises(CorruptBlob):
        store.put_frames([(da, va), (db, va)])
    assert store.has_many([da, db]) == set()
    assert list(store.iterate()) == []
    assert store.put_frames([(da, va), (db, vb)]) [0] == 2  # fmt: skip


def test_a_chunk_index_needs_every_chunk_it_lists(store: BlobStore) -> None:
    data = noise(3 * CHUNK, 6)
    digest, index, chunks = frames_of(data, chunk_size=CHUNK, level=3)
    with pytest.raises(CorruptBlob) as info:
        store.put_frames([(digest, index)], chunks=chunks[:2])
    assert "missing" in info.value.problem
    assert not store.has(digest)
    # Chunks swapped in the index: every chunk is sound, the whole is not the content.
    _raw, size, listed = frame.decode_index(index)
    swapped = frame.encode_index(len(data), size, [listed[1], listed[0], listed[2]])
    with pytest.raises(CorruptBlob) as info:
        store.put_frames([(digest, swapped)], chunks=chunks)
    assert "does not match" in info.value.problem
    assert not store.has(digest)
    # A chunk index where a chunk belongs is refused.
    with pytest.raises(CorruptBlob):
        store.put_frames(chunks=[(listed[0], index)])
    assert store.put_frames([(digest, index)], chunks=chunks)[0] == 1
    assert store.get(digest) == data


def test_what_is_flushed_outlives_the_object(backend: Backend, store: BlobStore) -> None:
    if not store.persistent:
        # What "not persistent" promises: the object keeps what it holds through a flush, and
        # nothing outlives it (a new store of the kind starts empty).
        kept = store.put(b"kept")
        store.flush()
        assert store.get(kept) == b"kept" and list(store.iterate()) == [kept]
        assert list(backend.open().iterate()) == []
        return
    kept = store.put(b"kept")
    store.flush()
    data = noise(CHUNK + 100, 7)
    digest = store.put(data)
    if store.buffered:
        other = backend.other(store)
        assert other.has(kept) and not other.has(digest)
        assert list(other.iterate()) == [kept]
        dropped = backend.reopen(store)  # unflushed: gone with the object that held it
        assert not dropped.has(digest)
        digest = store.put(data)
    store.flush()
    again = backend.reopen(store)
    assert again.get(digest) == data and again.get(kept) == b"kept"
    assert list(again.iterate()) == sorted([kept, digest])


# --- the state machine --------------------------------------------------------------------------


def _repeated(piece: bytes, times: int) -> bytes:
    return piece * times


def _noise(seed: int, size: int) -> bytes:
    return noise(size, seed)


CONTENTS = st.one_of(
    st.binary(max_size=80),
    # Compressible, often chunked, with chunks shared between blobs and within one.
    st.builds(_repeated, st.binary(min_size=1, max_size=16), st.integers(1, 800)),
    # Incompressible and chunked.
    st.builds(_noise, st.integers(0, 50), st.integers(CHUNK - 2, 3 * CHUNK + 2)),
)
ABSENT = st.binary(min_size=32, max_size=32).map(Digest)


class BlobStoreMachine(RuleBasedStateMachine):
    """One store against a ``dict`` of what it must hold. ``flushed`` is what reopening keeps."""

    backend: Backend  # set on the subclass made for each backend

    digests = Bundle("digests")

    def __init__(self) -> None:
        super().__init__()
        self.store = self.backend.open()
        self.model: dict[Digest, bytes] = {}
        self.flushed: set[Digest] = set()

    def _took(self, digest: Digest, data: bytes) -> None:
        self.model[digest] = data
        if not self.store.buffered:
            self.flushed.add(digest)

    @rule(target=digests, data=CONTENTS)
    def put(self, data: bytes) -> Digest:
        digest = self.store.put(data)
        assert digest == Digest.of(data)
        self._took(digest, data)
        return digest

    @rule(target=digests, data=CONTENTS)
    def receive_frames(self, data: bytes) -> Digest:
        side = MemoryStore(chunk_size=CHUNK)
        digest = side.put(data)
        new, _nbytes = copy_frames(side, self.store, [digest])
        assert new == (0 if digest in self.model else 1)
        self._took(digest, data)
        return digest

    @rule(digest=digests)
    def get(self, digest: Digest) -> None:
        if digest in self.model:
            assert self.store.get(digest) == self.model[digest]
        else:  # put, then dropped unflushed by a reopen
            with pytest.raises(BlobNotFound):
                self.store.get(digest)

    @rule(digest=st.one_of(digests, ABSENT))
    def has(self, digest: Digest) -> None:
        assert self.store.has(digest) == (digest in self.model)

    @rule(wanted=st.lists(st.one_of(digests, ABSENT), max_size=6))
    def has_many(self, wanted: list[Digest]) -> None:
        assert self.store.has_many(wanted) == {d for d in wanted if d in self.model}

    @rule()
    def iterate(self) -> None:
        assert list(self.store.iterate()) == sorted(self.model)

    @rule()
    def flush(self) -> None:
        self.store.flush()
        self.flushed = set(self.model)

    @precondition(lambda self: self.store.persistent)
    @rule()
    def reopen(self) -> None:
        self.store = self.backend.reopen(self.store)
        self.model = {d: v for d, v in self.model.items() if d in self.flushed}
        assert list(self.store.iterate()) == sorted(self.model)

    def teardown(self) -> None:
        self.backend.close()


def test_state_machine_against_a_dict(backend: Backend) -> None:
    machine = type(f"BlobStoreMachine_{backend.name}", (BlobStoreMachine,), {"backend": backend})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=backend.examples,
            stateful_step_count=backend.steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
