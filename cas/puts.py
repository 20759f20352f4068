"""What a batch hands the store to commit: puts as plain values, and what its commits added.

A `Batch` (`cas.batch`) reads, hashes, compresses and checks outside any transaction, and queues
the result as puts; `Store.commit_puts` writes them in one write transaction, in an order of its
own (chunks before the index that lists them). Nothing here touches the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cas.digest import Digest
from cas.picklable import by_fields


@by_fields
@dataclass(slots=True)
class BlobPut:
    """A blob small enough for one frame."""

    digest: Digest
    frame: bytes | None  # None: the blob was present when checked; only touch it
    raw: bytes | None  # kept for a touch so the blob can be rewritten if gc removed it meanwhile
    # (frame and raw both None: a bare touch, see `Batch.touch`)
    raw_size: int


@by_fields
@dataclass(slots=True)
class ChunkPut:
    """A chunk of a large blob; an empty frame refers to a chunk already stored (its write time
    is refreshed, so a concurrent gc's chunk sweep leaves it alone until the index lands)."""

    digest: Digest
    frame: bytes


@by_fields
@dataclass(slots=True)
class IndexPut:
    """The index of a large blob, committed once its chunks are."""

    digest: Digest
    frame: bytes
    raw_size: int
    stored_size: int
    chunks: list[Digest]


Put = BlobPut | ChunkPut | IndexPut


@dataclass(slots=True)
class Written:
    """What a batch's commits added, kept so that a failure can take it all back
    (`Store.undo`): each blob and chunk it stored, with the time its last commit stamped on
    it. A stamp that has changed since means another writer used the blob or chunk: it stays."""

    blobs: dict[Digest, int] = field(default_factory=dict)
    chunks: dict[Digest, int] = field(default_factory=dict)
    ingested_bytes: int = 0
    ingested_count: int = 0

    def __bool__(self) -> bool:
        return bool(self.blobs or self.chunks or self.ingested_count)

    def update(self, other: Written) -> None:
        self.blobs.update(other.blobs)
        self.chunks.update(other.chunks)
        self.ingested_bytes += other.ingested_bytes
        self.ingested_count += other.ingested_count


def put_order(put: Put) -> tuple[int, bytes]:
    """The order a commit writes puts in: chunks first (an index needs its chunks), a chunk's
    frame before any bare reference to it; in key order within each kind."""
    if isinstance(put, ChunkPut):
        return (0 if put.frame else 1), put.digest
    return (2 if isinstance(put, BlobPut) else 3), put.digest
