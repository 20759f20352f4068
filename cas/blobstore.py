"""The blob-store contract: what every store of blobs offers, local or remote.

`BlobStore` is a small `typing.Protocol`. Three classes satisfy it, and one conformance suite
(``tests/test_blobstore.py``: plain tests and a state machine against a ``dict``) runs against
each of them:

* `cas.store.Store`, the LMDB store under ``.cas/``;
* `cas.memstore.MemoryStore`, a store held in memory (tests, scratch work);
* `cas.remote.blobs.RemoteBlobStore`, the blobs of a remote: pack objects and index objects on
  S3-compatible storage, or on the in-memory bucket of ``cas.remote.memory_bucket``.

**Content and digests.** A blob is named by its `Digest`, the BLAKE3 of its uncompressed
content. ``put(data)`` returns that digest and is idempotent: the same content is kept once.

**Frames.** Every store keeps each blob as frames (`cas.frame`), and frames what is put
exactly as `frames_of` does: content up to `chunk_size` bytes in one raw or zstd frame; larger
content as chunk frames plus a chunk index frame listing their digests. So the frames of a blob
are the same bytes in every store of the same chunk size and level, and they move between stores
unchanged (a store takes frames of other chunk sizes too):
``raw_value``/``raw_chunk`` give them out, ``put_frames`` takes them in (`copy_frames` moves a
blob with its chunks). A store trusts no frame it is given: `check_frame` holds each one to its
digest (and to a size limit, checked before anything is decompressed), a chunk index is taken
only once every chunk it lists is held and the whole content, read back, hashes to the blob's
digest. A frame that fails raises `CorruptBlob` naming its digest, and no blob of that call is
stored (chunks taken in before the failure may stay, unreferenced, as in `Store.put_frames`).

**Verified reads.** ``get(digest)`` returns the content only after checking it: each chunk is
hashed against the digest the index gives it, and the whole content against ``digest``. It never
returns bytes that do not hash to the digest asked for: it raises `CorruptBlob` instead. A blob
the store does not hold raises `BlobNotFound`; ``raw_value`` then returns None and ``has`` False.

**Order.** ``iterate()`` yields every blob's digest once, in ascending order of its 32 raw bytes
(the order `sorted` gives `Digest` values, and the order of the store's keys).

**Capabilities** are read-only properties, so code asks what a store can do instead of testing
its class:

* ``persistent``: what is stored outlives this object. Opening the same place again (the same
  ``.cas/`` folder, the same bucket and prefix) finds every blob put and flushed. False for a
  `MemoryStore`, whose blobs go with it.
* ``buffered``: puts are held by this object and reach the place other readers see only at
  ``flush()`` (a remote packs them into pack objects and writes one index object naming them).
  Until then this object itself already answers ``has``, ``get`` and ``iterate`` with them.
  False where every put is durable when it returns; ``flush()`` is then a no-op.
* ``chunk_size``: content above this many bytes is stored chunked (chunks of this size).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, Protocol, runtime_checkable

from cas import frame
from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob

DEFAULT_CHUNK_SIZE: Final = 1 << 20
DEFAULT_LEVEL: Final = 3
# The least content a frame received from elsewhere may hold (see `frame_limit`).
FOREIGN_FRAME_MIN_LIMIT: Final = 64 << 20

Frames = Iterable[tuple[Digest, bytes]]


@runtime_checkable
class BlobStore(Protocol):
    """A store of immutable blobs named by their BLAKE3 digest (see the module notes)."""

    @property
    def persistent(self) -> bool:
        """Whether what is stored outlives this object."""
        ...

    @property
    def buffered(self) -> bool:
        """Whether puts reach other readers only at `flush`."""
        ...

    @property
    def chunk_size(self) -> int:
        """Content above this many bytes is stored as chunks of this size."""
        ...

    def has(self, digest: Digest) -> bool:
        """Whether the blob is in the store."""
        ...

    def has_many(self, digests: Iterable[Digest]) -> set[Digest]:
        """The subset of ``digests`` in the store (one pass: cheaper than many `has`)."""
        ...

    def get(self, digest: Digest) -> bytes:
        """The blob's content, verified; `BlobNotFound` or `CorruptBlob` otherwise."""
        ...

    def put(self, data: bytes) -> Digest:
        """Store ``data`` (once, however often it is put); its digest."""
        ...

    def iterate(self) -> Iterator[Digest]:
        """Every blob's digest, once, in ascending order of its raw bytes."""
        ...

    def raw_value(self, digest: Digest) -> bytes | None:
        """The blob's stored frame as it is kept (raw, zstd or chunk index), unchecked; None
        if absent. A store that knows the frame is unreadable (a remote's index names a pack
        that is gone or cut short) raises `CorruptBlob`."""
        ...

    def raw_chunk(self, digest: Digest) -> bytes | None:
        """A chunk's stored frame (raw or zstd); None if absent."""
        ...

    def put_frames(self, blobs: Frames = (), *, chunks: Frames = ()) -> tuple[int, int]:
        """Take frames made by another store, checking every one (see the module notes).
        Returns (new blobs, new stored bytes)."""
        ...

    def flush(self) -> None:
        """Make every put so far durable and visible to other readers of the same place."""
        ...


# --- the frame rules every store shares ---------------------------------------------------------


def frame_limit(chunk_size: int) -> int:
    """The largest content one frame received from elsewhere may hold: the chunk size, or
    `FOREIGN_FRAME_MIN_LIMIT` when that is larger (other stores may use larger chunks)."""
    return max(chunk_size, FOREIGN_FRAME_MIN_LIMIT)


def frames_of(
    data: bytes, *, chunk_size: int, level: int
) -> tuple[Digest, bytes, list[tuple[Digest, bytes]]]:
    """(digest, blob frame, chunk frames) of ``data`` as a store keeps it: one frame up to
    ``chunk_size`` bytes, else a chunk index over chunks of ``chunk_size`` (each frame decoded
    and re-hashed before it is returned). Holds the whole content: `Batch` streams instead."""
    digest = Digest.of(data)
    if len(data) <= chunk_size:
        return digest, frame.checked_frame(data, digest, level), []
    chunks: list[tuple[Digest, bytes]] = []
    view = memoryview(data)
    for start in range(0, len(data), chunk_size):
        piece = view[start : start + chunk_size]
        chunk = Digest.of(piece)
        chunks.append((chunk, frame.checked_frame(piece, chunk, level)))
    index = frame.encode_index(len(data), chunk_size, [c for c, _ in chunks])
    return digest, index, chunks


def check_frame(
    digest: Digest, value: bytes, *, limit: int, chunk: bool = False
) -> tuple[frame.Header, bytes | None]:
    """Hold a frame received from outside to ``digest``: (its header, its content).

    A raw or zstd frame must decode to content that hashes to ``digest``; its content is
    returned. A chunk index (never where a ``chunk`` is expected) must be well formed, with
    chunks of at most ``limit`` bytes; its content is None (its chunks are checked when they are
    read). Content over ``limit`` is refused before anything is decompressed, so a hostile
    header cannot make the reader allocate what it claims. Raises `CorruptBlob` naming
    ``digest``."""
    try:
        head = frame.header(value)
        if head.codec == frame.INDEX:
            if chunk:
                raise frame.FrameError("a chunk index where a chunk was expected")
            _raw_size, chunk_size, _chunks = frame.decode_index(value)
            if chunk_size > limit:
                raise frame.FrameError(
                    f"chunks of {chunk_size} bytes are over the limit of {limit}"
                )
            return head, None
        if head.raw_size > limit:
            raise frame.FrameError(
                f"content of {head.raw_size} bytes is over the limit of {limit} for one frame"
            )
        data = frame.decode(value)
    except frame.FrameError as exc:
        raise CorruptBlob(str(digest), str(exc)) from None
    if Digest.of(data) != digest:
        raise CorruptBlob(str(digest), "content does not match its digest")
    return head, data


def chunk_content(blob: Digest, chunk: Digest, value: bytes | None, *, verify: bool) -> bytes:
    """The content of the chunk frame ``value`` (None: missing) that ``blob``'s index lists as
    ``chunk``, hashed against ``chunk`` with ``verify``: what a store's ``read_chunk`` returns
    to a `cas.reader.BlobReader`. Raises `CorruptBlob` naming ``blob``."""
    if value is None:
        raise CorruptBlob(str(blob), f"chunk {chunk} is missing from the store")
    try:
        data = frame.decode(value)
    except frame.FrameError as exc:
        raise CorruptBlob(str(blob), f"chunk {chunk}: {exc}") from None
    if verify and Digest.of(data) != chunk:
        raise CorruptBlob(str(blob), f"chunk {chunk} does not match its digest")
    return data


def copy_frames(source: BlobStore, dest: BlobStore, digests: Iterable[Digest]) -> tuple[int, int]:
    """Move blobs from ``source`` to ``dest`` as their stored frames (a chunked blob with its
    chunks), unchanged and re-checked by ``dest``. Absent from ``source``: `BlobNotFound`.
    Returns what ``dest.put_frames`` does; a buffered ``dest`` still needs its `flush`."""
    blobs: list[tuple[Digest, bytes]] = []
    chunks: dict[Digest, bytes] = {}
    for digest in sorted(set(digests)):
        value = source.raw_value(digest)
        if value is None:
            raise BlobNotFound(str(digest))
        blobs.append((digest, value))
        try:
            listed = (
                frame.decode_index(value)[2] if frame.header(value).codec == frame.INDEX else []
            )
        except frame.FrameError as exc:
            raise CorruptBlob(str(digest), str(exc)) from None
        for chunk in listed:
            if chunk in chunks:
                continue
            piece = source.raw_chunk(chunk)
            if piece is None:
                raise CorruptBlob(str(digest), f"chunk {chunk} is missing from the store")
            chunks[chunk] = piece
    return dest.put_frames(blobs, chunks=sorted(chunks.items()))
