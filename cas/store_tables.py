"""The store's tables and their records, inside one LMDB transaction. Private to `cas.store`.

Every row of the store is read and written here, and nowhere else: `Store` opens a transaction
(with its retries, map growth and error mapping) and hands it to a `Tables`, whose methods are
the named operations on records. Other modules call `Store` (or, for work that must be atomic
across concerns, the `cas.store.Update` view of one write transaction), never this module.

Tables (LMDB named databases):

``info``      format version, chunk size, compression level, running totals, recorded folders
``blobs``     digest -> frame (raw/zstd content, or a chunk index for large content)
``chunks``    chunk digest -> frame (pieces of large blobs)
``chunkrefs`` chunk digest -> (blobs referencing it, last written ns)
``meta``      digest -> raw size, stored size, first stored ns, last referenced ns
``pins``      name -> digest (extra gc roots)
``cache``     namespaced keys -> values that may be dropped at any time
``leases``    id -> holder record of a pack in progress (gc waits for or refuses these)
``verified``  digest -> last verified ns (verify checks the stalest first)
``remotes``   name -> remote configuration (no credentials)
``usage``     namespaced name -> when it was last used and how often (memory's entities)

A table added after stores were first made (`ADDED`) is created when a store without it is
opened for writing; a store opened only to read sees it empty until then.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Container, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import msgpack

from cas import frame
from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob, StoreDamaged
from cas.records import (
    CHUNKREF,
    META,
    META_LAST,
    META_LAST_AT,
    VERIFIED,
    Meta,
    Txn,
    chunkref_of,
    meta_of,
)
from cas.residency import FAULT_AROUND, MapReleaser

_T = TypeVar("_T")

if TYPE_CHECKING:
    from cas.puts import Put, Written  # what a writer hands over: never loaded by a reader

NAMES: Final = (
    "info",
    "blobs",
    "chunks",
    "chunkrefs",
    "meta",
    "pins",
    "cache",
    "leases",
    "verified",
    "remotes",
    "usage",
)
# Tables later versions added: missing from an older store is not damage (see `Store`).
ADDED: Final = frozenset({"usage"})
# Tables keyed by a digest: a key of any other size is damage the walk of the file reports.
KEY_SIZES: Final = dict.fromkeys(("blobs", "chunks", "chunkrefs", "meta", "verified"), 32)
TOTAL_KEYS: Final = ("blobs", "raw_bytes", "stored_bytes", "ingested_bytes", "ingested_count")
# Tables whose keys and values callers choose (`Store.kv_get` and friends).
KV_TABLES: Final = ("cache", "remotes", "usage")
# info key: the folders whose manifests are gc roots besides the default one (`cas.roots`).
_ROOT_DIRS: Final = b"root_dirs"
# (digest, stored frame or None, raw size its metadata records or -1): `Tables.frames_and_sizes`
FrameRow = tuple[Digest, bytes | None, int]
# A commit gives back the pages of the map it faulted in every this many records.
_RELEASE_OPS: Final = 512
# The page size a walk of rows reads (LMDB's default on the hosts the store runs on), and the
# bytes a row takes in it beside its key and value (node header, offset).
_PAGE: Final = 4096
_NODE_BYTES: Final = 10


def _walked_rows(rows: int, row_bytes: int) -> int:
    """What a walk of ``rows`` rows in key order may leave mapped: a fault-around for each leaf
    page it reads (`cas.residency.FAULT_AROUND`), since neighbouring pages belong to other
    tables."""
    pages = -(-rows * (row_bytes + _NODE_BYTES) // _PAGE)
    return pages * FAULT_AROUND


def _decode_dirs(raw: bytes | None) -> list[str]:
    if raw is None:
        return []
    loaded = msgpack.unpackb(raw)
    if not isinstance(loaded, list):
        return []
    return [
        os.fsdecode(p) if isinstance(p, bytes) else p for p in loaded if isinstance(p, str | bytes)
    ]


def _encode_dir(path: str) -> str | bytes:
    """A folder as the store keeps it: UTF-8 text when it is text, else the raw bytes of its
    name (a path that is not UTF-8 must still be recorded, or its packs are lost to gc)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


class Faces(Protocol):
    """What the store's faces (`cas.store_refs.References`, `cas.store_kv.KeyValues`) use of
    it: a read transaction, a write transaction, the map's releaser and the longest key."""

    @property
    def max_key_size(self) -> int: ...

    @property
    def residency(self) -> MapReleaser: ...

    def read(self) -> AbstractContextManager[Tables]: ...

    def change(
        self, fn: Callable[[Tables], _T], *, expected_bytes: int = 0, cleanup: bool = False
    ) -> _T: ...


class Tables:
    """The tables as one transaction sees them (written through it if it is a write one)."""

    __slots__ = ("_dbs", "_path", "_residency", "_txn")

    def __init__(self, txn: Txn, dbs: dict[str, Any], path: Path, residency: MapReleaser) -> None:
        self._txn = txn
        self._dbs = dbs
        self._path = path
        self._residency = residency

    # --- info and totals ----------------------------------------------------------------------

    def info(self, key: bytes) -> bytes | None:
        value: bytes | None = self._txn.get(key, db=self._dbs["info"])
        return value

    def put_info(self, key: bytes, value: bytes) -> None:
        self._txn.put(key, value, db=self._dbs["info"])

    def totals(self) -> dict[str, int]:
        raw = self.info(b"totals")
        try:
            loaded = msgpack.unpackb(raw) if raw else {}
            totals = {k: loaded.get(k, 0) for k in TOTAL_KEYS}
            if all(type(v) is int for v in totals.values()):
                return totals
        except (ValueError, TypeError, AttributeError, msgpack.ExtraData):
            pass
        raise StoreDamaged(str(self._path), "the running totals in its info table are damaged")

    def add_totals(self, delta: dict[str, int]) -> None:
        totals = self.totals()
        for key, value in delta.items():
            totals[key] += value
        self.put_info(b"totals", msgpack.packb(totals))

    def entries(self, table: str) -> int:
        count: int = self._txn.stat(self._dbs[table])["entries"]
        return count

    # --- blobs and their metadata -------------------------------------------------------------

    # Presence is read from the small `meta` rows, written and deleted with each blob (as a put
    # already judges it): looking a blob up in `blobs` would fault its whole value into memory.

    def has(self, digest: Digest) -> bool:
        return self._txn.get(digest, db=self._dbs["meta"]) is not None

    def blob_frame(self, digest: Digest) -> bytes | None:
        value: bytes | None = self._txn.get(digest, db=self._dbs["blobs"])
        return value

    def chunk_frame(self, digest: Digest) -> bytes | None:
        value: bytes | None = self._txn.get(digest, db=self._dbs["chunks"])
        return value

    def meta_record(self, digest: Digest) -> bytes | None:
        value: bytes | None = self._txn.get(digest, db=self._dbs["meta"])
        return value

    def frames_and_sizes(self, digests: Iterable[Digest]) -> tuple[list[FrameRow], int]:
        """(digest, frame or None, raw size its metadata records or -1) for each digest, and
        what reading the frames mapped (each read maps at least `FAULT_AROUND`)."""
        txn = self._txn
        blobs_db, meta_db = self._dbs["blobs"], self._dbs["meta"]
        rows: list[FrameRow] = []
        mapped = 0
        for digest in digests:
            value = txn.get(digest, db=blobs_db)
            raw = txn.get(digest, db=meta_db)
            size = META.unpack(raw)[0] if raw is not None and len(raw) == META.size else -1
            if value is not None:
                mapped += max(len(value), FAULT_AROUND)
            rows.append((digest, value, size))
        return rows, mapped

    def meta(self, digest: Digest) -> Meta | None:
        """A blob's metadata; None if it has none; `CorruptBlob` if its record is damaged."""
        raw = self.meta_record(digest)
        return None if raw is None else meta_of(digest, raw)

    def keys(self, table: str, after: bytes | None, start: bytes, page: int) -> list[bytes]:
        """Up to ``page`` keys of ``table`` in order: from ``start``, or after ``after``."""
        keys: list[bytes] = []
        cur = self._txn.cursor(db=self._dbs[table])
        positioned = cur.set_range(after if after is not None else start)
        if positioned and after is not None and cur.key() == after:
            positioned = cur.next()
        while positioned and len(keys) < page:
            keys.append(cur.key())
            if table == "blobs":
                self._residency.note(0)
            positioned = cur.next()
        return keys

    def meta_rows(self, after: bytes, page: int) -> list[tuple[bytes, bytes]]:
        """Up to ``page`` (key, meta record) rows after ``after``, undecoded."""
        rows: list[tuple[bytes, bytes]] = []
        cur = self._txn.cursor(db=self._dbs["meta"])
        positioned = cur.set_range(after)
        if positioned and after and cur.key() == after:
            positioned = cur.next()
        while positioned and len(rows) < page:
            rows.append((cur.key(), cur.value()))
            positioned = cur.next()
        return rows

    def present_chunks(self, digests: Iterable[Digest]) -> set[Digest]:
        # A cursor positions on a key without copying its value (up to a chunk per key).
        cursor = self._txn.cursor(db=self._dbs["chunks"])
        return {d for d in digests if cursor.set_key(d)}

    def chunk_refs(self, chunks: Iterable[Digest]) -> list[tuple[Digest, int | CorruptBlob]]:
        """Each chunk once, in key order, with how many blob indexes reference it (0: no record),
        or the `CorruptBlob` that describes its damaged record."""
        out: list[tuple[Digest, int | CorruptBlob]] = []
        refs_db = self._dbs["chunkrefs"]
        for chunk in sorted(set(chunks)):
            ref = self._txn.get(chunk, db=refs_db)
            try:
                out.append((chunk, chunkref_of(chunk, ref).refs if ref is not None else 0))
            except CorruptBlob as exc:
                out.append((chunk, exc))
        return out

    def touch(self, digest: Digest, now: int) -> bool:
        """Refresh a blob's last-referenced time; False if it is not in the store."""
        meta_db = self._dbs["meta"]
        raw = self._txn.get(digest, db=meta_db)
        if raw is None:
            return False
        try:
            size, stored, first, _last = meta_of(digest, raw)
        except CorruptBlob:
            # A damaged row is rebuilt from the blob itself when a put or a pack brings the
            # same content again (its first-stored time is lost).
            size, stored = self._measure(digest)
            first = now
        self._txn.put(digest, META.pack(size, stored, first, now), db=meta_db)
        return True

    def _measure(self, digest: Digest) -> tuple[int, int]:
        """(raw size, stored size) of a blob, from its frame and its chunks' frames."""
        value = self.blob_frame(digest)
        if value is None:
            raise CorruptBlob(str(digest), "its metadata record is left without its blob")
        try:
            head = frame.header(value)
            chunks = frame.decode_index(value)[2] if head.codec == frame.INDEX else []
        except frame.FrameError as exc:
            raise CorruptBlob(str(digest), str(exc)) from None
        stored = len(value)
        cursor = self._txn.cursor(db=self._dbs["chunks"])
        for chunk in sorted(set(chunks)):
            if cursor.set_key(chunk):
                stored += len(cursor.value())
        return head.raw_size, stored

    def unreferenced(
        self, after: bytes, page: int, reachable: Container[bytes], before_ns: int
    ) -> tuple[list[Digest], int, int, bytes | None]:
        """Up to ``page`` metadata rows after ``after``, in key order: the blobs not in
        ``reachable`` last referenced before ``before_ns``, how many rows were read, how many of
        them were kept (not reachable but referenced since, or damaged: no time to judge), and
        the last key read when the page was full (None: the table ended)."""
        found: list[Digest] = []
        rows = kept = 0
        cur = self._txn.cursor(db=self._dbs["meta"])
        positioned = cur.set_range(after)
        if positioned and after and cur.key() == after:
            positioned = cur.next()
        if not positioned:
            return found, 0, 0, None
        size = META.size
        for key, value in cur:
            rows += 1
            if len(value) != size:
                kept += 1
            elif key not in reachable:
                if META_LAST.unpack_from(value, META_LAST_AT)[0] >= before_ns:
                    kept += 1
                else:
                    found.append(Digest(key))
            if rows >= page:
                self._residency.note(_walked_rows(rows, 32 + size))
                return found, rows, kept, key
        self._residency.note(_walked_rows(rows, 32 + size))
        return found, rows, kept, None

    def prune(
        self, digests: Iterable[Digest], before_ns: int, keep: Container[bytes], now: int
    ) -> tuple[list[Digest], int, int, int]:
        """Delete each of ``digests`` (in key order, for the cursors) that is still unreferenced:
        not in ``keep``, and last referenced before ``before_ns`` by its metadata read now (a
        put that deduplicated onto it since refreshed that). Returns the blobs judged
        unreferenced, how many were spared (referenced since, or a damaged metadata row), then
        as `delete` (blobs removed, stored bytes freed)."""
        meta = self._txn.cursor(db=self._dbs["meta"])
        blobs = self._txn.cursor(db=self._dbs["blobs"])
        judged: list[Digest] = []
        spared = removed = freed = raw_freed = 0
        for digest in digests:
            if not meta.set_key(digest):
                continue  # gone since: nothing to judge
            row = meta.value()
            if len(row) != META.size or digest in keep:
                spared += 1
                continue
            if META_LAST.unpack_from(row, META_LAST_AT)[0] >= before_ns:
                spared += 1
                continue
            judged.append(digest)
            # A metadata row without its blob is left as it is (as `delete` leaves it).
            if blobs.set_key(digest):
                freed += self._remove(digest, blobs, meta, now)
                removed += 1
                raw_freed += META.unpack(row)[0]
        if removed:
            self.add_totals({"blobs": -removed, "raw_bytes": -raw_freed, "stored_bytes": -freed})
        return judged, spared, removed, freed

    def delete(self, digests: Iterable[Digest], now: int) -> tuple[int, int]:
        """Remove blobs; a chunked blob's chunks lose one reference each (see `Store.delete`).
        Returns (blobs removed, stored bytes freed)."""
        meta = self._txn.cursor(db=self._dbs["meta"])
        blobs = self._txn.cursor(db=self._dbs["blobs"])
        removed = freed = raw_freed = 0
        for digest in digests:
            if not blobs.set_key(digest):
                continue
            row = meta.value() if meta.set_key(digest) else None
            raw_freed += META.unpack(row)[0] if row is not None and len(row) == META.size else 0
            freed += self._remove(digest, blobs, meta if row is not None else None, now)
            removed += 1
        if removed:
            self.add_totals({"blobs": -removed, "raw_bytes": -raw_freed, "stored_bytes": -freed})
        return removed, freed

    def _remove(self, digest: Digest, blobs: Any, meta: Any | None, now: int) -> int:
        """Delete the blob ``blobs`` is positioned on, the metadata row ``meta`` is positioned
        on (None: it has none) and its verified time; a chunk index's chunks lose a reference
        each. Returns the stored bytes of its frame."""
        value = blobs.value()
        self._residency.note(len(value))
        with contextlib.suppress(frame.FrameError):
            if frame.header(value).codec == frame.INDEX:
                refs_db = self._dbs["chunkrefs"]
                for chunk in sorted(set(frame.decode_index(value)[2])):
                    ref = self._txn.get(chunk, db=refs_db)
                    if ref is not None and len(ref) != CHUNKREF.size:
                        continue  # damaged: left as it is, so no sweep ever takes it
                    count = CHUNKREF.unpack(ref)[0] if ref else 1
                    self._txn.put(chunk, CHUNKREF.pack(max(count - 1, 0), now), db=refs_db)
        blobs.delete()
        if meta is not None:
            meta.delete()
        self._txn.delete(digest, db=self._dbs["verified"])
        return len(value)

    def sweep_chunks(self, older_than_ns: int, *, dry_run: bool = False) -> tuple[int, int]:
        """Remove chunks no blob references whose last write is older than ``older_than_ns``
        (with ``dry_run``, only count them). Returns (chunks, stored bytes)."""
        txn = self._txn
        refs_db, chunks_db = self._dbs["chunkrefs"], self._dbs["chunks"]
        doomed: list[bytes] = []
        for key, ref in txn.cursor(db=refs_db):
            if len(ref) != CHUNKREF.size:
                continue  # a damaged count is never taken for zero ('cas verify' reports it)
            count, written = CHUNKREF.unpack(ref)
            if count == 0 and written < older_than_ns:
                doomed.append(bytes(key))
        freed = 0
        for key in doomed:
            value = txn.get(key, db=chunks_db)
            freed += len(value) if value is not None else 0
            # its pages are mapped now: counted, so a sweep of a large blob's chunks gives
            # them back as it goes
            self._residency.note(len(value or b""))
            if not dry_run:
                txn.delete(key, db=chunks_db)
                txn.delete(key, db=refs_db)
        if freed and not dry_run:
            self.add_totals({"stored_bytes": -freed})
        return len(doomed), freed

    # --- a batch's puts -----------------------------------------------------------------------

    def commit_puts(
        self, puts: list[Put], level: int, mine: Written, now: int
    ) -> tuple[int, int, Written]:
        """Write a batch's puts (see `Store.commit_puts`)."""
        from cas.puts import BlobPut, ChunkPut, IndexPut, Written, put_order

        txn = self._txn
        # In key order, consecutive records share their B-tree pages: fewer pages are faulted in
        # and copied.
        puts = sorted(puts, key=put_order)
        blobs_db, meta_db = self._dbs["blobs"], self._dbs["meta"]
        chunks_db, refs_db = self._dbs["chunks"], self._dbs["chunkrefs"]
        # A chunk's value is never read to learn whether it exists: reading would fault every
        # page of it into this process. Its chunkrefs row (written and deleted with it) says
        # whether it is there, and a put that must not overwrite adds it only if it is not.
        new_blobs = new_raw = new_stored = ingested = count = 0
        added = Written()
        for i, op in enumerate(puts):
            if i and i % _RELEASE_OPS == 0:
                # Each op's lookups fault in B-tree pages and the pages around them: a commit of
                # thousands of small blobs would map much of the file. The map is only read here
                # (written pages live in LMDB's buffers until the commit).
                self._residency.release()
            if isinstance(op, ChunkPut):
                ref = txn.get(op.digest, db=refs_db)
                refs = chunkref_of(op.digest, ref).refs if ref else 0
                if op.frame:
                    if txn.put(op.digest, op.frame, db=chunks_db, overwrite=False):
                        new_stored += len(op.frame)
                        added.chunks[op.digest] = now
                elif ref is None:
                    raise CorruptBlob(str(op.digest), "chunk vanished during the put")
                if op.digest in mine.chunks:
                    added.chunks[op.digest] = now
                txn.put(op.digest, CHUNKREF.pack(refs, now), db=refs_db)
                continue
            count += 1
            if isinstance(op, BlobPut) and op.frame is None and op.raw is None:
                if self.touch(op.digest, now) and op.digest in mine.blobs:
                    added.blobs[op.digest] = now
                count -= 1
                continue
            ingested += op.raw_size
            if self.touch(op.digest, now):
                if op.digest in mine.blobs:
                    added.blobs[op.digest] = now  # still only this batch's
                continue
            if isinstance(op, IndexPut):
                for chunk in sorted(set(op.chunks)):
                    ref = txn.get(chunk, db=refs_db)
                    if ref is None:
                        raise CorruptBlob(str(op.digest), f"chunk {chunk} vanished during put")
                    refs = chunkref_of(chunk, ref).refs
                    txn.put(chunk, CHUNKREF.pack(refs + 1, now), db=refs_db)
                    if chunk in mine.chunks:
                        added.chunks[chunk] = now  # stamped by this batch again
                value = op.frame
                stored_size = op.stored_size
            else:
                value = op.frame or frame.checked_frame(op.raw or b"", op.digest, level)
                stored_size = len(value)
            txn.put(op.digest, value, db=blobs_db)
            txn.put(op.digest, META.pack(op.raw_size, stored_size, now, now), db=meta_db)
            added.blobs[op.digest] = now
            new_blobs += 1
            new_raw += op.raw_size
            new_stored += len(value)
        self.add_totals(
            {
                "blobs": new_blobs,
                "raw_bytes": new_raw,
                "stored_bytes": new_stored,
                "ingested_bytes": ingested,
                "ingested_count": count,
            }
        )
        added.ingested_bytes, added.ingested_count = ingested, count
        return new_blobs, new_stored, added

    def undo(self, written: Written, now: int) -> None:
        """Take back what a failed batch committed (see `Store.undo`)."""
        txn = self._txn
        meta_db, refs_db, chunks_db = (
            self._dbs["meta"],
            self._dbs["chunkrefs"],
            self._dbs["chunks"],
        )
        ours: list[Digest] = []
        for chunk, stamp in sorted(written.chunks.items()):
            ref = txn.get(chunk, db=refs_db)
            if ref is not None and len(ref) == CHUNKREF.size and CHUNKREF.unpack(ref)[1] == stamp:
                ours.append(chunk)
        blobs = []
        for digest, stamp in sorted(written.blobs.items()):
            raw = txn.get(digest, db=meta_db)
            if raw is not None and len(raw) == META.size and META.unpack(raw)[3] == stamp:
                blobs.append(digest)
        self.delete(blobs, now)  # decrements the counts of the chunks they list
        freed = 0
        cursor = txn.cursor(db=chunks_db)
        for chunk in ours:
            ref = txn.get(chunk, db=refs_db)
            if ref is None or CHUNKREF.unpack(ref)[0] != 0:
                continue  # another blob's index lists it now
            if cursor.set_key(chunk):
                freed += len(cursor.value())
                cursor.delete()
            txn.delete(chunk, db=refs_db)
        self.add_totals(
            {
                "stored_bytes": -freed,
                "ingested_bytes": -written.ingested_bytes,
                "ingested_count": -written.ingested_count,
            }
        )

    # --- frames made elsewhere (remotes) ------------------------------------------------------

    def commit_foreign_chunks(self, items: list[tuple[Digest, bytes]], now: int) -> int:
        txn = self._txn
        chunks_db, refs_db = self._dbs["chunks"], self._dbs["chunkrefs"]
        added = 0
        for digest, value in items:
            ref = txn.get(digest, db=refs_db)
            refs = chunkref_of(digest, ref).refs if ref else 0
            if txn.get(digest, db=chunks_db) is None:
                txn.put(digest, value, db=chunks_db)
                added += len(value)
            # A fresh write time keeps a concurrent gc's chunk sweep off the chunk until the
            # index that references it is committed.
            txn.put(digest, CHUNKREF.pack(refs, now), db=refs_db)
        if added:
            self.add_totals({"stored_bytes": added})
        return added

    def commit_foreign_blobs(
        self, items: list[tuple[Digest, bytes]], heads: dict[Digest, frame.Header], now: int
    ) -> tuple[int, int]:
        txn = self._txn
        blobs_db, meta_db = self._dbs["blobs"], self._dbs["meta"]
        chunks_db, refs_db = self._dbs["chunks"], self._dbs["chunkrefs"]
        new_blobs = new_raw = new_stored = 0
        for digest, value in items:
            if txn.get(digest, db=blobs_db) is not None:
                self.touch(digest, now)
                continue
            stored = len(value)
            if heads[digest].codec == frame.INDEX:
                for chunk in frame.decode_index(value)[2]:
                    piece = txn.get(chunk, db=chunks_db)
                    if piece is None:
                        raise CorruptBlob(str(digest), f"chunk {chunk} vanished during put")
                    stored += len(piece)
                for chunk in sorted(set(frame.decode_index(value)[2])):
                    ref = txn.get(chunk, db=refs_db)
                    refs = chunkref_of(chunk, ref).refs if ref else 0
                    txn.put(chunk, CHUNKREF.pack(refs + 1, now), db=refs_db)
            raw_size = heads[digest].raw_size
            txn.put(digest, value, db=blobs_db)
            txn.put(digest, META.pack(raw_size, stored, now, now), db=meta_db)
            new_blobs += 1
            new_raw += raw_size
            new_stored += len(value)
        self.add_totals(
            {
                "blobs": new_blobs,
                "raw_bytes": new_raw,
                "stored_bytes": new_stored,
                "ingested_bytes": new_raw,
                "ingested_count": new_blobs,
            }
        )
        return new_blobs, new_stored

    # --- verified times -----------------------------------------------------------------------

    def verified_and_sizes(self, digests: Iterable[Digest]) -> list[tuple[Digest, int, int]]:
        """(digest, last verified ns or -1, raw size or 0) for each digest (a damaged metadata
        record is a size of 0: unknown, and verify reports the record)."""
        txn = self._txn
        meta_db, verified_db = self._dbs["meta"], self._dbs["verified"]
        rows: list[tuple[Digest, int, int]] = []
        for digest in digests:
            raw = txn.get(digest, db=meta_db)
            size = META.unpack(raw)[0] if raw is not None and len(raw) == META.size else 0
            stamp = txn.get(digest, db=verified_db)
            when = VERIFIED.unpack(stamp)[0] if stamp is not None and len(stamp) == 8 else -1
            rows.append((digest, when, size))
        return rows

    def stamp_verified(self, digests: Iterable[Digest], when_ns: int) -> int:
        stamp = VERIFIED.pack(when_ns)
        meta_db, verified_db = self._dbs["meta"], self._dbs["verified"]
        stamped = 0
        for digest in digests:
            # A blob gc removed meanwhile gets no stale record. Presence is read from its small
            # meta row: looking it up in `blobs` would fault its whole value into memory.
            if self._txn.get(digest, db=meta_db) is not None:
                self._txn.put(digest, stamp, db=verified_db)
                stamped += 1
        return stamped

    # --- pins and recorded folders ------------------------------------------------------------

    def pins(self) -> dict[str, Digest]:
        return {
            bytes(k).decode("utf-8", "replace"): Digest(bytes(v))
            for k, v in self._txn.cursor(db=self._dbs["pins"])
            if len(v) == 32
        }

    def pin(self, name: str, digest: Digest) -> Digest | None:
        if self._txn.get(digest, db=self._dbs["blobs"]) is None:
            raise BlobNotFound(str(digest))
        old = self._txn.get(name.encode(), db=self._dbs["pins"])
        self._txn.put(name.encode(), bytes(digest), db=self._dbs["pins"])
        return Digest(old) if old is not None and len(old) == 32 else None

    def swap_pin(self, name: str, expected: Digest | None, digest: Digest) -> bool:
        """Pin ``digest`` under ``name`` only if the pin holds ``expected`` now (None: no such
        pin); False, changing nothing, when it holds anything else."""
        if self._txn.get(digest, db=self._dbs["blobs"]) is None:
            raise BlobNotFound(str(digest))
        raw = self._txn.get(name.encode(), db=self._dbs["pins"])
        current = Digest(bytes(raw)) if raw is not None and len(raw) == 32 else None
        if current != expected:
            return False
        self._txn.put(name.encode(), bytes(digest), db=self._dbs["pins"])
        return True

    def unpin(self, name: str) -> bytes | None:
        old: bytes | None = self._txn.get(name.encode(), db=self._dbs["pins"])
        if old is not None:
            self._txn.delete(name.encode(), db=self._dbs["pins"])
        return old

    def recorded_dirs(self) -> list[str]:
        return _decode_dirs(self.info(_ROOT_DIRS))

    def edit_recorded_dirs(self, folder: str, *, add: bool) -> bool:
        """Add or remove a recorded folder; False if that changes nothing."""
        dirs = self.recorded_dirs()
        if (folder in dirs) == add:
            return False
        dirs = sorted({*dirs, folder} if add else set(dirs) - {folder}, key=os.fsencode)
        encoded = [_encode_dir(d) for d in dirs]
        self.put_info(_ROOT_DIRS, msgpack.packb(encoded, use_bin_type=True))
        return True

    # --- leases -------------------------------------------------------------------------------

    def leases(self) -> list[tuple[str, bytes]]:
        return [
            (bytes(k).decode("utf-8", "replace"), bytes(v))
            for k, v in self._txn.cursor(db=self._dbs["leases"])
        ]

    def put_lease(self, lease_id: str, record: bytes) -> bool:
        key = lease_id.encode()
        present = self._txn.get(key, db=self._dbs["leases"]) is not None
        self._txn.put(key, record, db=self._dbs["leases"])
        return present

    def delete_leases(self, lease_ids: Iterable[str]) -> int:
        db = self._dbs["leases"]
        return sum(1 for lease_id in lease_ids if self._txn.delete(lease_id.encode(), db=db))

    # --- tables of caller-chosen keys (`KV_TABLES`) -------------------------------------------

    def kv_get(self, table: str, key: bytes) -> bytes | None:
        if self._dbs[table] is None:  # an added table this read-only store does not have yet
            return None
        value: bytes | None = self._txn.get(key, db=self._dbs[table])
        return value

    def kv_get_many(self, table: str, keys: Sequence[bytes], limit: int) -> list[bytes | None]:
        """`kv_get` of each key (None for one longer than ``limit``, which no table holds)."""
        db = self._dbs[table]
        if db is None:
            return [None] * len(keys)
        get = self._txn.get  # a pack reads its 20,000 lexicons so: one bound method, no call each
        return [get(key, db=db) if len(key) <= limit else None for key in keys]

    def kv_items(self, table: str, prefix: bytes) -> list[tuple[bytes, bytes]]:
        if self._dbs[table] is None:
            return []
        cur = self._txn.cursor(db=self._dbs[table])
        out: list[tuple[bytes, bytes]] = []
        if not cur.set_range(prefix):
            return out
        read = 0
        for key, value in cur:
            if not key.startswith(prefix):
                break
            out.append((key, value))
            # A walk reads its pages in order: count what it read, page by page.
            read += len(key) + len(value) + 16
            if read >= FAULT_AROUND:
                self._residency.note(read)
                read = 0
        return out

    def kv_put(self, table: str, items: Iterable[tuple[bytes, bytes]]) -> None:
        db = self._dbs[table]
        for key, value in items:
            self._txn.put(key, value, db=db)

    def kv_delete(self, table: str, keys: Iterable[bytes]) -> int:
        db = self._dbs[table]
        return sum(1 for key in keys if self._txn.delete(key, db=db))

    def kv_update(
        self, table: str, keys: Iterable[bytes], update: Callable[[bytes | None], bytes]
    ) -> None:
        db = self._dbs[table]
        for key in keys:
            self._txn.put(key, update(self._txn.get(key, db=db)), db=db)
