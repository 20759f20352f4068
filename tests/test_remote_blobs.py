"""`RemoteBlobStore` beyond the shared contract: what its reads and flushes cost, and a remote
that lies or breaks (on the in-memory bucket, where faults come on cue; the contract itself is
checked on a real server too, in test_blobstore.py)."""

from __future__ import annotations

import os

import pytest

from cas import Digest, frame
from cas.blobstore import copy_frames, frames_of
from cas.errors import BlobNotFound, CorruptBlob, RemoteBusy
from cas.memstore import MemoryStore
from cas.remote.blobs import RemoteBlobStore
from cas.remote.config import make_remote
from cas.remote.lock import GC, LOCKS, RemoteLock
from cas.remote.memory_bucket import MemoryBucket
from cas.remote.objects import INDEXES, PACKS
from cas.remote.packfile import decode_index, encode_index

CHUNK = 4096


def names(bucket: MemoryBucket, folder: str) -> list[str]:
    return [n for n in bucket.objects if n.startswith(folder)]


def spent(bucket: MemoryBucket, before: dict[str, int]) -> dict[str, int]:
    now = bucket.requests()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


def flushed(bucket: MemoryBucket, *contents: bytes) -> list[Digest]:
    with RemoteBlobStore(bucket, chunk_size=CHUNK) as store:
        return [store.put(data) for data in contents]


def test_a_flush_writes_packs_then_one_index_under_a_lock() -> None:
    bucket = MemoryBucket()
    store = RemoteBlobStore(bucket, chunk_size=CHUNK)
    digests = [store.put(f"blob {i}".encode() * 50) for i in range(20)]
    big = store.put(os.urandom(3 * CHUNK))
    assert bucket.objects == {}  # buffered: nothing sent yet
    store.flush()
    assert len(names(bucket, PACKS)) == 1 and len(names(bucket, INDEXES)) == 1
    assert names(bucket, LOCKS) == []  # the lock object is taken back
    (index,) = names(bucket, INDEXES)
    table = decode_index(bucket.objects[index].data)
    assert {e.digest for e in table.entries if e.kind == 0} == {*digests, big}
    assert sum(1 for e in table.entries if e.kind == 1) == 3  # the big blob's chunks
    store.flush()  # nothing held: nothing sent
    assert len(names(bucket, PACKS)) == 1


def test_a_small_blob_costs_one_ranged_get() -> None:
    bucket = MemoryBucket()
    (digest,) = flushed(bucket, b"small content" * 10)
    reader = RemoteBlobStore(bucket, chunk_size=CHUNK)
    before = bucket.requests()
    assert reader.get(digest) == b"small content" * 10
    assert spent(bucket, before) == {"GetObject": 1}
    before = bucket.requests()
    assert reader.has(digest)  # named by an index: no request
    assert spent(bucket, before) == {}


def test_a_damaged_pack_is_never_read_as_content() -> None:
    bucket = MemoryBucket()
    small, big = flushed(bucket, b"x" * 3000, os.urandom(2 * CHUNK))
    (pack,) = names(bucket, PACKS)
    (index,) = names(bucket, INDEXES)
    data = bytearray(bucket.objects[pack].data)
    for entry in decode_index(bucket.objects[index].data).entries:
        # A byte past the header of the small blob's frame and of each chunk of the big one.
        if entry.digest != big:
            data[entry.offset + frame.HEADER_SIZE + 3] ^= 0xFF
    bucket.replace(pack, bytes(data))
    reader = RemoteBlobStore(bucket, chunk_size=CHUNK)
    for digest in (small, big):
        assert reader.has(digest)
        with pytest.raises(CorruptBlob) as info:
            reader.get(digest)
        assert info.value.digest == str(digest)
    # Moved elsewhere, the damaged frames are refused there too, and nothing is stored.
    side = MemoryStore(chunk_size=CHUNK)
    for digest in (small, big):
        with pytest.raises(CorruptBlob):
            copy_frames(reader, side, [digest])
    assert len(side) == 0


def test_a_pack_cut_short_or_gone() -> None:
    bucket = MemoryBucket()
    (digest,) = flushed(bucket, b"content " * 100)
    (pack,) = names(bucket, PACKS)
    bucket.replace(pack, bucket.objects[pack].data[:20])
    reader = RemoteBlobStore(bucket)
    with pytest.raises(CorruptBlob) as info:
        reader.get(digest)
    assert "cut short" in info.value.problem
    bucket.delete([pack])
    with pytest.raises(CorruptBlob) as info:
        reader.raw_value(digest)
    assert "is missing" in info.value.problem


def test_an_index_that_lies_about_a_length_is_not_believed() -> None:
    bucket = MemoryBucket()
    (digest,) = flushed(bucket, b"the real content" * 40)
    (index,) = names(bucket, INDEXES)
    table = decode_index(bucket.objects[index].data)
    lying = encode_index(
        table.packs,
        [
            type(e)(e.kind, e.digest, e.pack, e.offset, e.length - 3) if e.digest == digest else e
            for e in table.entries
        ],
    )
    bucket.delete([index])
    bucket.put(INDEXES + Digest.of(lying).hex(), lying)
    with pytest.raises(CorruptBlob):
        RemoteBlobStore(bucket).get(digest)
    # An index object whose bytes do not hash to its name is not used at all.
    bucket.put(INDEXES + "0" * 64, lying)
    reader = RemoteBlobStore(bucket)
    assert [key for key, _why in reader.problems] == [INDEXES + "0" * 64]


def test_a_chunk_index_over_the_blob_limit_is_refused_unread() -> None:
    bucket = MemoryBucket(make_remote("m", "s3://memory", max_blob=1 << 20))
    store = RemoteBlobStore(bucket, chunk_size=CHUNK)
    digest = Digest.of(b"a claim")
    chunk = Digest.of(b"a chunk")
    claim = frame.encode_index(2 << 20, 1 << 20, [chunk, chunk])
    bucket.put("blobs/" + digest.hex(), claim)  # a loose object, as older remotes hold them
    before = bucket.requests()
    with pytest.raises(CorruptBlob) as info:
        store.get(digest)
    assert "over the limit" in info.value.problem
    assert spent(bucket, before) == {"GetObject": 1, "ListObjectsV2": 1}  # no chunk fetched


def test_loose_objects_of_older_remotes_are_read() -> None:
    bucket = MemoryBucket()
    data = os.urandom(2 * CHUNK + 1)
    digest, index, chunks = frames_of(data, chunk_size=CHUNK, level=3)
    bucket.put("blobs/" + digest.hex(), index)
    for chunk, value in chunks:
        bucket.put("chunks/" + chunk.hex(), value)
    (packed,) = flushed(bucket, b"packed")
    reader = RemoteBlobStore(bucket, chunk_size=CHUNK)
    assert reader.has_many([digest, packed]) == {digest, packed}
    assert reader.get(digest) == data
    assert list(reader.iterate()) == sorted([digest, packed])


def test_a_flush_steps_back_from_a_gc_and_keeps_what_it_holds() -> None:
    bucket = MemoryBucket()
    store = RemoteBlobStore(bucket)
    digest = store.put(b"waiting")
    with RemoteLock(bucket, GC, "gc"), pytest.raises(RemoteBusy):
        store.flush()
    assert names(bucket, PACKS) == [] and store.get(digest) == b"waiting"
    store.flush()
    assert RemoteBlobStore(bucket).get(digest) == b"waiting"


def test_leaving_with_an_error_drops_what_was_not_flushed() -> None:
    bucket = MemoryBucket()
    with pytest.raises(RuntimeError), RemoteBlobStore(bucket) as store:
        digest = store.put(b"lost")
        raise RuntimeError("stop")
    assert bucket.objects == {}
    assert not store.has(digest)
    with pytest.raises(BlobNotFound):
        RemoteBlobStore(bucket).get(digest)


def test_two_writers_of_one_blob() -> None:
    bucket = MemoryBucket()
    (first,) = flushed(bucket, b"shared" * 100)
    (second,) = flushed(bucket, b"shared" * 100)  # already named by an index: not sent again
    assert first == second and len(names(bucket, PACKS)) == 1
    a, b = RemoteBlobStore(bucket), RemoteBlobStore(bucket)
    a.put(b"both" * 100)
    digest = b.put(b"both" * 100)
    a.flush()
    b.flush()  # b read the indexes before a flushed: it sends its copy too
    reader = RemoteBlobStore(bucket)
    assert reader.get(digest) == b"both" * 100
    assert list(reader.iterate()) == sorted({first, digest})
