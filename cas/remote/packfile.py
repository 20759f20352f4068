"""Pack objects and index objects: the bytes that carry many small frames to a remote at once.

A **pack object** (``packs/<hex>``) is frames laid end to end, each exactly as the store keeps
it (raw, zstd or chunk index), followed by a trailer that lists them, so a pack describes itself
even if every index object were lost::

    frame 0, frame 1, ...   the frames, in the order of the trailer's entries
    trailer                 a table (below) with one pack, "this pack" (32 zero bytes)
    u32 trailer length      big-endian
    b"CASPACK1"             8 bytes

The name is the BLAKE3 digest of the whole object, so a pack is never overwritten with other
bytes. Nothing trusts that name, though: every frame read from a pack is hashed against the
digest the entry gives it before it is used.

An **index object** (``index/<hex>``) maps blobs and chunks to the packs that hold them. It is a
cas frame (zstd) of a table, named by the BLAKE3 digest of the object's bytes::

    b"CASRIDX1"              8 bytes
    u32 pack count, u32 entry count
    pack digests             32 bytes each, strictly ascending
    entries                  49 bytes each, strictly ascending by (kind, digest):
        digest 32, kind u8 (0 blob, 1 chunk), pack u32 (its number above),
        offset u64, length u32

Everything is big-endian. A table is deterministic: the same entries give the same bytes. A
reader holds a remote to these rules before it uses a table: counts that match the length,
ascending unique keys, pack numbers in range, lengths of at least a frame header; an index frame
may declare at most `MAX_TABLE_BYTES`, checked before it is decompressed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from cas import frame
from cas.digest import SIZE as DIGEST_SIZE
from cas.digest import Digest

BLOB: Final = 0
CHUNK: Final = 1
KIND_NAMES: Final = {BLOB: "blob", CHUNK: "chunk"}

TABLE_MAGIC: Final = b"CASRIDX1"
PACK_MAGIC: Final = b"CASPACK1"
THIS_PACK: Final = bytes(DIGEST_SIZE)
# A table of about five million entries; larger ones are refused unread.
MAX_TABLE_BYTES: Final = 256 << 20

_HEAD = struct.Struct(">8sII")
_ENTRY = struct.Struct(">32sBIQI")
_FOOT = struct.Struct(">I8s")
ENTRY_SIZE: Final = _ENTRY.size
FOOTER_SIZE: Final = _FOOT.size


class TableError(ValueError):
    """Bytes that are not a valid table, index object or pack trailer."""


@dataclass(frozen=True, slots=True, order=True)
class Entry:
    """Where one frame lies: in pack number ``pack`` of a table, ``length`` bytes at ``offset``."""

    kind: int
    digest: Digest
    pack: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Table:
    """The packs a table names and its entries, in (kind, digest) order."""

    packs: tuple[Digest, ...]
    entries: tuple[Entry, ...]


def encode_table(packs: Sequence[Digest], entries: Iterable[Entry]) -> bytes:
    """The table of ``entries`` over ``packs`` (renumbered so the packs are in digest order;
    an entry's ``pack`` is its position in ``packs`` as given)."""
    order = sorted(range(len(packs)), key=lambda i: packs[i])
    renumber = {old: new for new, old in enumerate(order)}
    rows = sorted(
        (
            Entry(e.kind, e.digest, renumber[e.pack], e.offset, e.length)
            for e in entries
            if e.pack in renumber
        ),
        key=lambda e: (e.kind, e.digest),
    )
    out = bytearray(_HEAD.pack(TABLE_MAGIC, len(order), len(rows)))
    for i in order:
        out += packs[i]
    last: tuple[int, Digest] | None = None
    for e in rows:
        key = (e.kind, e.digest)
        if key == last:
            continue  # one place per frame is enough; the first (lowest pack) stays
        last = key
        out += _ENTRY.pack(e.digest, e.kind, e.pack, e.offset, e.length)
    # Fix the count when duplicates were dropped.
    count = (len(out) - _HEAD.size - DIGEST_SIZE * len(order)) // ENTRY_SIZE
    out[: _HEAD.size] = _HEAD.pack(TABLE_MAGIC, len(order), count)
    return bytes(out)


def decode_table(data: bytes | memoryview) -> Table:
    """A table, held to every rule in the module notes; raises `TableError` saying which."""
    view = memoryview(data)
    if len(view) < _HEAD.size:
        raise TableError(f"table of {len(view)} bytes is shorter than its header")
    magic, npacks, count = _HEAD.unpack_from(view)
    if magic != TABLE_MAGIC:
        raise TableError(f"bad table magic {bytes(magic)!r}")
    want = _HEAD.size + npacks * DIGEST_SIZE + count * ENTRY_SIZE
    if len(view) != want:
        raise TableError(
            f"table of {npacks} packs and {count} entries needs {want} bytes, holds {len(view)}"
        )
    at = _HEAD.size
    packs: list[Digest] = []
    for _ in range(npacks):
        pack = Digest(bytes(view[at : at + DIGEST_SIZE]))
        if packs and pack <= packs[-1]:
            raise TableError("pack digests are not in strictly ascending order")
        packs.append(pack)
        at += DIGEST_SIZE
    entries: list[Entry] = []
    last: tuple[int, bytes] | None = None
    for digest, kind, pack, offset, length in _ENTRY.iter_unpack(view[at:]):
        if kind not in KIND_NAMES:
            raise TableError(f"entry of unknown kind {kind}")
        if pack >= npacks:
            raise TableError(f"entry names pack {pack} of {npacks}")
        if length < frame.HEADER_SIZE:
            raise TableError(f"entry of {length} bytes is shorter than a frame header")
        if offset + length > 1 << 62:
            raise TableError("entry lies beyond any pack")
        key = (kind, digest)
        if last is not None and key <= last:
            raise TableError("entries are not in strictly ascending order")
        last = key
        entries.append(Entry(kind, Digest(digest), pack, offset, length))
    return Table(tuple(packs), tuple(entries))


def encode_index(packs: Sequence[Digest], entries: Iterable[Entry], level: int = 3) -> bytes:
    """An index object: the table, zstd-framed."""
    return frame.encode(encode_table(packs, entries), level)


def decode_index(data: bytes) -> Table:
    """The table of an index object; raises `TableError` (a bad frame included)."""
    try:
        head = frame.header(data)
        if head.codec == frame.INDEX:
            raise TableError("a chunk index frame where an index object was expected")
        if head.raw_size > MAX_TABLE_BYTES:
            raise TableError(
                f"index object declares {head.raw_size} bytes, over the limit of {MAX_TABLE_BYTES}"
            )
        return decode_table(frame.decode(data))
    except frame.FrameError as exc:
        raise TableError(str(exc)) from None


class PackBuilder:
    """One pack object being filled: frames are added in order, then it is sealed."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._entries: list[Entry] = []
        self.size = 0

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, kind: int, digest: Digest, value: bytes) -> None:
        self._entries.append(Entry(kind, digest, 0, self.size, len(value)))
        self._parts.append(value)
        self.size += len(value)

    def seal(self) -> tuple[Digest, bytes, list[Entry]]:
        """(the pack's name, its bytes, its entries with ``pack`` 0)."""
        trailer = encode_table([Digest(THIS_PACK)], self._entries)
        data = b"".join([*self._parts, trailer, _FOOT.pack(len(trailer), PACK_MAGIC)])
        return Digest.of(data), data, list(self._entries)


def pack_trailer(data: bytes | memoryview) -> Table:
    """The entries a whole pack object lists in its trailer, checked to lie before it."""
    view = memoryview(data)
    if len(view) < FOOTER_SIZE:
        raise TableError("pack is shorter than its footer")
    length, magic = _FOOT.unpack_from(view, len(view) - FOOTER_SIZE)
    if magic != PACK_MAGIC:
        raise TableError(f"bad pack magic {bytes(magic)!r}")
    start = len(view) - FOOTER_SIZE - length
    if start < 0:
        raise TableError("pack trailer is longer than the pack")
    table = decode_table(view[start : start + length])
    if table.packs != (Digest(THIS_PACK),):
        raise TableError("a pack trailer must name only its own pack")
    for e in table.entries:
        if e.offset + e.length > start:
            raise TableError(f"{KIND_NAMES[e.kind]} {e.digest} lies past the pack's frames")
    return table
