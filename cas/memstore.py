"""A blob store held in memory: the blob-store contract (`cas.blobstore`) without a disk.

Frames are made as `cas.store.Store` makes them (`cas.blobstore.frames_of`: one raw or zstd
frame up to the chunk size, chunks plus a chunk index above it), so frames move between a
`MemoryStore`, an LMDB store and a remote unchanged, and the same content has the same frame
bytes in each (given the same chunk size and level). Nothing is kept beyond the object: it is
for tests and scratch work, and for checking the contract itself. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from cas import frame
from cas.blobstore import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_LEVEL,
    BlobStore,
    Frames,
    check_frame,
    chunk_content,
    frame_limit,
    frames_of,
)
from cas.digest import Digest
from cas.errors import BlobNotFound
from cas.reader import BlobReader


class MemoryStore:
    """Blobs in two dicts, digest -> frame: blobs (raw, zstd or chunk index) and chunks."""

    def __init__(self, *, chunk_size: int = DEFAULT_CHUNK_SIZE, level: int = DEFAULT_LEVEL) -> None:
        if chunk_size < 1 or not 1 <= level <= 22:
            raise ValueError(f"chunk size {chunk_size} or level {level} is out of range")
        self._chunk_size = chunk_size
        self.level = level
        self._blobs: dict[Digest, bytes] = {}
        self._chunks: dict[Digest, bytes] = {}
        self._lock = threading.Lock()

    # --- capabilities ---------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        """False: the blobs go with this object."""
        return False

    @property
    def buffered(self) -> bool:
        """False: a put is in the store when it returns."""
        return False

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    @property
    def foreign_frame_limit(self) -> int:
        """The largest content one frame from elsewhere may hold (`cas.blobstore.frame_limit`)."""
        return frame_limit(self._chunk_size)

    # --- reading --------------------------------------------------------------------------------

    def has(self, digest: Digest) -> bool:
        return digest in self._blobs

    def has_many(self, digests: Iterable[Digest]) -> set[Digest]:
        return {d for d in digests if d in self._blobs}

    def get(self, digest: Digest) -> bytes:
        """The content, each chunk and the whole re-hashed (`CorruptBlob` if any differs)."""
        value = self._blobs.get(digest)
        if value is None:
            raise BlobNotFound(str(digest))
        with BlobReader(self, digest, value, verify=True) as reader:
            return reader.read()

    def read_chunk(self, blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        """A chunk's content, for a `BlobReader` reading ``blob``."""
        return chunk_content(blob, chunk, self._chunks.get(chunk), verify=verify)

    def iterate(self) -> Iterator[Digest]:
        """Every blob digest in ascending order, as the blobs were when the call was made."""
        with self._lock:
            digests = sorted(self._blobs)
        return iter(digests)

    def raw_value(self, digest: Digest) -> bytes | None:
        return self._blobs.get(digest)

    def raw_chunk(self, digest: Digest) -> bytes | None:
        return self._chunks.get(digest)

    def __len__(self) -> int:
        return len(self._blobs)

    # --- writing --------------------------------------------------------------------------------

    def put(self, data: bytes) -> Digest:
        digest, value, chunks = frames_of(data, chunk_size=self._chunk_size, level=self.level)
        with self._lock:
            if digest not in self._blobs:
                for chunk, piece in chunks:
                    self._chunks.setdefault(chunk, piece)
                self._blobs[digest] = value
        return digest

    def put_frames(self, blobs: Frames = (), *, chunks: Frames = ()) -> tuple[int, int]:
        """Take frames made elsewhere, as `cas.store.Store.put_frames` does: every frame checked
        first; chunks taken in, then each new chunk index read back whole through them; then
        the blobs, none of them if any frame failed (`CorruptBlob`)."""
        chunk_items = sorted(dict(chunks).items())
        blob_items = sorted(dict(blobs).items())
        limit = self.foreign_frame_limit
        for digest, value in chunk_items:
            check_frame(digest, value, limit=limit, chunk=True)
        heads = {d: check_frame(d, value, limit=limit)[0] for d, value in blob_items}
        new_bytes = 0
        with self._lock:
            for digest, value in chunk_items:
                if digest not in self._chunks:
                    self._chunks[digest] = value
                    new_bytes += len(value)
        for digest, value in blob_items:
            if heads[digest].codec == frame.INDEX and digest not in self._blobs:
                # A verifying reader hashes each chunk, then the whole content.
                with BlobReader(self, digest, value, verify=True) as reader:
                    for _piece in reader.chunks():
                        pass
        new_blobs = 0
        with self._lock:
            for digest, value in blob_items:
                if digest not in self._blobs:
                    self._blobs[digest] = value
                    new_blobs += 1
                    new_bytes += len(value)
        return new_blobs, new_bytes

    def flush(self) -> None:
        """Nothing to do: a put is in the store when it returns."""


def _keeps_the_contract(store: MemoryStore) -> BlobStore:
    """mypy holds `MemoryStore` to the blob-store contract here (`cas.blobstore.BlobStore`)."""
    return store
