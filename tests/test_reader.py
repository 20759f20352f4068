"""cas.reader: a blob streamed in pieces, each chunk re-hashed before any of it is returned."""

from __future__ import annotations

import os
import random
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store, frame
from cas.errors import CorruptBlob
from cas.reader import READ_AHEAD, BlobReader
from tests import rawstore

CHUNK = 4096


def _reader(store: Store, digest: Digest, *, verify: bool = True) -> BlobReader:
    value = store.raw_value(digest)
    assert value is not None
    return BlobReader(store, digest, value, verify=verify)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(min_value=0, max_value=40 * CHUNK + 7),
    st.lists(st.integers(min_value=1, max_value=3 * CHUNK), min_size=1, max_size=30),
)
def test_read_ahead_returns_every_byte_in_order(size: int, reads: list[int]) -> None:
    data = random.Random(size).randbytes(size)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.create(Path(tmp) / ".cas", chunk_size=CHUNK) as store,
    ):
        digest = store.put(data)
        got = bytearray()
        with store.open(digest) as reader:
            for n in reads * (size // sum(reads) + 2):
                piece = reader.read(n)
                if not piece:
                    break
                got += piece
        assert bytes(got) == data


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=0, max_value=12 * CHUNK + 5),
    st.lists(st.integers(min_value=0, max_value=2 * CHUNK + 3), max_size=8),
    st.booleans(),
)
def test_any_split_of_reads_gives_the_slices_of_the_content(
    size: int, sizes: list[int], rest_in_pieces: bool
) -> None:
    """Reads of any sizes (0 included) return consecutive slices of the content, each as long
    as asked until the end; what is left, read whole or piece by piece, is the rest."""
    data = random.Random(size * 31 + len(sizes)).randbytes(size)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.create(Path(tmp) / ".cas", chunk_size=CHUNK) as store,
    ):
        digest = store.put(data)
        with store.open(digest) as reader:
            assert reader.size == size
            offset = 0
            for n in sizes:
                piece = reader.read(n)
                assert piece == data[offset : offset + n]
                offset += len(piece)
            rest = b"".join(reader.chunks()) if rest_in_pieces else reader.read()
            assert rest == data[offset:]
            assert reader.read(10) == b"" and reader.read() == b""


def test_pieces_are_at_most_one_chunk(small_store: Store) -> None:
    data = os.urandom(5 * CHUNK + 100)
    with small_store.open(small_store.put(data)) as reader:
        pieces = list(reader.chunks())
    assert [len(p) for p in pieces] == [CHUNK] * 5 + [100]
    inline = small_store.put(b"small")
    with small_store.open(inline) as reader:
        assert list(reader.chunks()) == [b"small"]


def test_a_damaged_chunk_is_refused_before_any_of_it_is_returned(small_store: Store) -> None:
    data = os.urandom(4 * CHUNK)
    digest = small_store.put(data)
    bad = Digest.of(data[2 * CHUNK : 3 * CHUNK])
    rawstore.change(small_store, "chunks", bad, lambda v: v[:-1] + bytes([v[-1] ^ 1]))
    got = bytearray()
    with pytest.raises(CorruptBlob) as caught, _reader(small_store, digest) as reader:
        for piece in reader.chunks():
            got += piece
    assert str(bad) in str(caught.value) and str(digest) in str(caught.value)
    assert bytes(got) == data[: 2 * CHUNK]  # what came before, and nothing of the bad chunk
    # Without verification the bytes come back as they are, never a crash.
    with _reader(small_store, digest, verify=False) as reader:
        assert len(reader.read()) == len(data)


def test_a_chunk_of_the_wrong_length_is_refused_even_without_verification(
    small_store: Store,
) -> None:
    """Every chunk must hold what its place in the index implies, so reading never does more
    work than the index declares, whatever the chunks hold."""
    data = os.urandom(3 * CHUNK)
    digest = small_store.put(data)
    middle = Digest.of(data[CHUNK : 2 * CHUNK])
    rawstore.put(small_store, "chunks", middle, frame.encode(os.urandom(3 * CHUNK), 3))
    unverified = _reader(small_store, digest, verify=False)
    with pytest.raises(CorruptBlob, match=f"a chunk at byte {CHUNK} holds {3 * CHUNK} bytes"):
        unverified.read()
    unverified.close()
    verified = _reader(small_store, digest)
    with pytest.raises(CorruptBlob, match=str(middle)):  # verified: its hash fails first
        verified.read()
    verified.close()


def test_content_that_does_not_hash_to_the_digest_is_refused_at_the_end(
    small_store: Store,
) -> None:
    """Each chunk may be sound and the whole still not be what the digest names (an index
    stored under another blob's digest): the end of the read says so."""
    data = os.urandom(3 * CHUNK)
    index = small_store.raw_value(small_store.put(data))
    assert index is not None
    other = Digest.of(b"another blob")
    with BlobReader(small_store, other, index, verify=True) as reader:
        assert reader.read(CHUNK) == data[:CHUNK]
        with pytest.raises(CorruptBlob, match="content does not match its digest"):
            reader.read()
    with BlobReader(small_store, other, index, verify=False) as reader:
        assert reader.read() == data


def test_a_value_that_is_no_frame_is_corrupt_at_once(small_store: Store) -> None:
    digest = Digest.of(b"whatever")
    with pytest.raises(CorruptBlob) as caught:
        BlobReader(small_store, digest, b"not a frame", verify=True)
    assert str(digest) in str(caught.value)


def test_a_chunk_listed_twice_is_hashed_once(
    small_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    piece = os.urandom(CHUNK)
    data = piece * 3 + os.urandom(CHUNK)
    digest = small_store.put(data)
    checked: list[Digest] = []
    real = small_store.read_chunk

    def spied(blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        if verify:
            checked.append(chunk)
        return real(blob, chunk, verify=verify)

    monkeypatch.setattr(small_store, "read_chunk", spied)
    with small_store.open(digest) as reader:
        assert reader.read() == data
    assert sorted(checked) == sorted({Digest.of(piece), Digest.of(data[3 * CHUNK :])})


def _read_threads() -> Iterator[threading.Thread]:
    return (t for t in threading.enumerate() if t.name.startswith("cas-read"))


def test_closing_a_reader_early_stops_its_read_ahead(tmp_path: Path) -> None:
    data = os.urandom(64 * CHUNK)
    with Store.create(tmp_path / ".cas", chunk_size=CHUNK) as store:
        digest = store.put(data)
        with store.open(digest) as reader:
            assert reader.read(CHUNK) == data[:CHUNK]
            assert any(_read_threads())
        assert not any(_read_threads())


def test_read_ahead_holds_a_few_chunks_not_the_blob(
    small_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the first piece is held, at most `READ_AHEAD` chunks (and the one being returned)
    have been read: memory stays at a few chunks whatever the size."""
    data = os.urandom(40 * CHUNK)
    digest = small_store.put(data)
    reads = 0
    real = small_store.read_chunk

    def counted(blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        nonlocal reads
        reads += 1
        return real(blob, chunk, verify=verify)

    monkeypatch.setattr(small_store, "read_chunk", counted)
    with small_store.open(digest) as reader:
        assert reader.read(1) == data[:1]
        assert reads <= READ_AHEAD + 1
        assert reader.read() == data[1:]
    assert reads == 40


def test_a_reader_with_no_read_ahead_reads_each_chunk_when_asked_in_the_callers_thread(
    small_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ahead=0`` (a search showing a few lines of a large body): a piece reads one chunk,
    in the thread that asks, and no worker thread starts; every byte still comes, checked."""
    data = os.urandom(12 * CHUNK + 5)
    digest = small_store.put(data)
    readers: list[str] = []
    real = small_store.read_chunk

    def counted(blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        readers.append(threading.current_thread().name)
        return real(blob, chunk, verify=verify)

    monkeypatch.setattr(small_store, "read_chunk", counted)
    with small_store.open(digest, ahead=0) as reader:
        pieces = reader.chunks()
        assert next(pieces) == data[:CHUNK]
        assert len(readers) == 1 and not any(_read_threads())
        assert b"".join(pieces) == data[CHUNK:]
    assert readers == [threading.current_thread().name] * 13
