"""Fixed-layout records kept beside blobs. Private to the store (`cas.store`, `cas.store_tables`).

Every record read from the store is decoded here, and a record of the wrong length raises
`CorruptBlob` naming the blob or chunk it belongs to, never a bare `struct.error`: a damaged
row is data to report (exit 1, and `cas verify` lists it), not a crash.
"""

from __future__ import annotations

import struct
import time
from typing import Any, NamedTuple

from cas.errors import CorruptBlob

# meta table: raw size, stored size, first stored ns, last referenced ns
META = struct.Struct(">QQqq")
# The last referenced ns alone, where a meta row holds it (read without decoding the rest).
META_LAST = struct.Struct(">q")
META_LAST_AT = 24
# chunkrefs table: how many blob indexes reference the chunk, last time a put wrote or reused it
CHUNKREF = struct.Struct(">Iq")
# verified table: last time the blob passed a verify, ns since the epoch
VERIFIED = struct.Struct(">q")


class Meta(NamedTuple):
    raw_size: int
    stored_size: int
    first_ns: int
    last_ns: int


class ChunkRef(NamedTuple):
    refs: int
    written_ns: int


def meta_of(digest: object, raw: bytes) -> Meta:
    """Decode a blob's ``meta`` row; `CorruptBlob` if it is not one."""
    if len(raw) != META.size:
        raise CorruptBlob(
            str(digest), f"its metadata record is damaged ({len(raw)} bytes, not {META.size})"
        )
    return Meta(*META.unpack(raw))


def chunkref_of(chunk: object, raw: bytes) -> ChunkRef:
    """Decode a chunk's ``chunkrefs`` row; `CorruptBlob` (naming the chunk) if it is not one."""
    if len(raw) != CHUNKREF.size:
        raise CorruptBlob(
            str(chunk),
            f"its chunk reference record is damaged ({len(raw)} bytes, not {CHUNKREF.size})",
        )
    return ChunkRef(*CHUNKREF.unpack(raw))


def now_ns() -> int:
    return time.time_ns()


# An LMDB transaction. lmdb's stubs type every read as bytes | memoryview; the store always opens
# transactions with buffers=False, so reads are bytes, and an untyped alias avoids a cast per read.
Txn = Any
