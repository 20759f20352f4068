"""Where a remote keeps its frames, and moving them in bulk: pack files, their index, loose objects.

A remote holds frames in two ways (layout in `cas.remote.layout`):

* **packed** (what every push writes): frames bundled into pack objects under ``packs/``, found
  through the index objects under ``index/`` (formats in `cas.remote.packfile`);
* **loose** (remotes written before pack files): one object per blob under ``blobs/`` and per
  chunk under ``chunks/``. They are still read; ``cas gc --remote`` moves them into packs.

`RemoteObjects` loads every index object once (one LIST, then one GET each, in parallel),
answers which frames the remote holds, and fetches many at a time: the frames wanted from one
pack are read with ranged GETs, ranges closer than `MERGE_GAP` joined up to `RANGE_MAX` bytes,
so a pull into an empty store costs about one request per pack. What a range returns is cut into
frames by the index and each is handed to the caller's check, in the worker threads; nothing
the index says is trusted beyond where to look.

`PackUploader` fills pack objects of about `PACK_TARGET` bytes, uploads them in parallel while
more are filled, and writes one index object for all of them once every pack is up: a reader
starts from an index object, so a push killed before it leaves packs no index names (a remote
gc removes them after its grace period), never an index naming a missing pack.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final

from cas.digest import Digest
from cas.remote.layout import BLOBS, CHUNKS, seek_listing
from cas.remote.packfile import (
    BLOB,
    CHUNK,
    MAX_TABLE_BYTES,
    Entry,
    PackBuilder,
    Table,
    TableError,
    decode_index,
    encode_index,
)
from cas.remote.storage import ObjectInfo, ObjectStorage, ObjectTooLarge
from cas.remote.transfer import ordered, parallel

PACKS: Final = "packs/"
INDEXES: Final = "index/"
LOOSE: Final = {BLOB: BLOBS, CHUNK: CHUNKS}
# Packs are filled to about this size: few requests, and enough of them to keep the link busy.
PACK_TARGET: Final = 16 << 20
# Every this many packs a push writes an index object for those up so far: a push killed late
# leaves most of its work usable to the next one.
CHECKPOINT_PACKS: Final = 8
# A pack up to this size goes up in one PUT (a larger one is a single large frame: multipart).
SINGLE_PUT: Final = 64 << 20
# Wanted frames of one pack closer than this are read in one ranged GET, up to RANGE_MAX bytes.
MERGE_GAP: Final = 256 << 10
RANGE_MAX: Final = 4 << 20
# An index object is a frame of a table; its compressed form is never larger than this.
MAX_INDEX_OBJECT: Final = MAX_TABLE_BYTES + (MAX_TABLE_BYTES >> 7) + 64

# What a check makes of a frame: the frame to keep (bytes) or what is wrong with it (str).
Check = Callable[[Digest, bytes], "bytes | str"]
# Told of each frame fetched: (digest, what the check said, bytes downloaded for it).
Done = Callable[[Digest, "bytes | str", int], None]


@dataclass(frozen=True, slots=True)
class Place:
    """One frame in a pack object."""

    pack: Digest
    offset: int
    length: int


@dataclass(slots=True)
class Range:
    pack: Digest
    start: int
    end: int
    frames: list[tuple[Digest, int, int]] = field(default_factory=list)  # digest, offset, len


class RemoteObjects:
    """The frames of one remote: where each lies, and fetching them in bulk."""

    def __init__(self, bucket: ObjectStorage, *, jobs: int) -> None:
        self.bucket = bucket
        self.jobs = jobs
        self.places: dict[tuple[int, Digest], Place] = {}
        self.indexes: list[ObjectInfo] = []  # the index objects read, in name order
        self.tables: list[tuple[ObjectInfo, Table]] = []  # and their tables
        self.problems: list[tuple[str, str]] = []  # (object key, why) of unusable indexes
        self.index_bytes = 0

    # --- the index ------------------------------------------------------------------------------

    def load(self) -> RemoteObjects:
        """Read every index object (one LIST per thousand, one GET each). An index object whose
        bytes do not hash to its name, or that breaks the table rules, is noted in
        ``problems`` and its entries are not used."""
        listed = [o for o in self.bucket.list_all(INDEXES) if is_hex(o.name)]

        def get(info: ObjectInfo) -> bytes | str:
            try:
                data = self.bucket.get(INDEXES + info.name, max_size=MAX_INDEX_OBJECT)
            except ObjectTooLarge as exc:
                return str(exc)
            if data is None:
                return "listed, then gone from the remote"
            if Digest.of(data).hex() != info.name:
                return "its bytes do not hash to its name"
            return data

        tables: dict[str, bytes | str] = {}
        parallel(listed, get, jobs=self.jobs, on_done=lambda i, r: tables.__setitem__(i.name, r))
        for info in listed:
            data = tables[info.name]
            key = INDEXES + info.name
            if isinstance(data, str):
                self.problems.append((key, data))
                continue
            self.index_bytes += len(data)
            try:
                table = decode_index(data)
            except TableError as exc:
                self.problems.append((key, f"not a valid index object: {exc}"))
                continue
            self.indexes.append(info)
            self.tables.append((info, table))
            for e in table.entries:
                self.places.setdefault(
                    (e.kind, e.digest), Place(table.packs[e.pack], e.offset, e.length)
                )
        return self

    def packed(self, kind: int, digests: Iterable[Digest]) -> dict[Digest, Place]:
        return {d: p for d in digests if (p := self.places.get((kind, d))) is not None}

    def locate(
        self, kind: int, digests: Iterable[Digest]
    ) -> tuple[dict[Digest, Place], dict[Digest, ObjectInfo]]:
        """(the wanted frames in packs, those held loose); the rest are not on the remote.
        Loose objects are looked up (listed) only for what no index names."""
        wanted = set(digests)
        packed = self.packed(kind, wanted)
        rest = wanted - packed.keys()
        loose: dict[Digest, ObjectInfo] = {}
        if rest:
            listing = seek_listing(self.bucket, LOOSE[kind], [d.hex() for d in rest])
            loose = {d: listing[d.hex()] for d in rest if d.hex() in listing}
        return packed, loose

    def present(self, kind: int, digests: Iterable[Digest]) -> set[Digest]:
        packed, loose = self.locate(kind, digests)
        return set(packed) | set(loose)

    # --- fetching -------------------------------------------------------------------------------

    def fetch(
        self,
        kind: int,
        digests: Iterable[Digest],
        *,
        max_size: int,
        check: Check,
        done: Done,
        located: tuple[dict[Digest, Place], dict[Digest, ObjectInfo]] | None = None,
    ) -> None:
        """Fetch the frames of ``digests``, run ``check`` on each in a worker thread and call
        ``done`` with its answer in this thread. A frame that is not on the remote, larger
        than ``max_size``, or cut short gets a `str` saying so, without ``check``."""
        wanted = sorted(set(digests))
        packed, loose = located if located is not None else self.locate(kind, wanted)
        for digest in wanted:
            if digest not in packed and digest not in loose:
                done(digest, "missing on the remote", 0)
        fits: list[tuple[Digest, Place]] = []
        for digest, place in sorted(packed.items(), key=lambda kv: (kv[1].pack, kv[1].offset)):
            if place.length > max_size:
                done(digest, over_limit(place, max_size), 0)
            else:
                fits.append((digest, place))

        # In the order asked for, whatever order the transfers end in: what is built of the
        # frames (a gc's new packs) is then the same bytes, under the same names, every time.
        # At most `jobs` ranges in flight, as before: each may be `RANGE_MAX` bytes.
        for _r, results in ordered(
            plan_ranges(fits), lambda r: self.read_range(r, check), jobs=self.jobs, window=self.jobs
        ):
            for digest, result, nbytes in results:
                done(digest, result, nbytes)

        def get_loose(digest: Digest) -> tuple[bytes | str, int]:
            try:
                value = self.bucket.get(LOOSE[kind] + digest.hex(), max_size=max_size)
            except ObjectTooLarge as exc:
                return str(exc), 0
            if value is None:
                return "missing on the remote", 0
            return check(digest, value), len(value)

        for digest, (result, nbytes) in ordered(sorted(loose), get_loose, jobs=self.jobs):
            done(digest, result, nbytes)

    def read_range(self, r: Range, check: Check) -> list[tuple[Digest, bytes | str, int]]:
        """One ranged GET, cut into the frames it holds, each handed to ``check``: (digest,
        what the check said or why the frame could not be read, bytes downloaded for it)."""
        data = self.bucket.get_range(PACKS + r.pack.hex(), r.start, r.end - r.start)
        out: list[tuple[Digest, bytes | str, int]] = []
        for digest, offset, length in r.frames:
            if data is None:
                out.append((digest, f"its pack {r.pack.hex()[:16]} is missing", 0))
                continue
            at = offset - r.start
            if len(data) < at + length:
                out.append((digest, f"its pack {r.pack.hex()[:16]} is cut short", 0))
                continue
            out.append((digest, check(digest, data[at : at + length]), length))
        return out


def plan_ranges(places: Iterable[tuple[Digest, Place]]) -> list[Range]:
    """The ranged GETs that read ``places``, in their order: a frame joins the range before it
    when it lies in the same pack, starts at most `MERGE_GAP` bytes past its end (never before
    its start) and the range stays within `RANGE_MAX` bytes (a larger frame is a range alone)."""
    ranges: list[Range] = []
    for digest, place in places:
        end = place.offset + place.length
        last = ranges[-1] if ranges else None
        if (
            last is not None
            and last.pack == place.pack
            and last.start <= place.offset <= last.end + MERGE_GAP
            and max(end, last.end) - last.start <= RANGE_MAX
        ):
            last.end = max(last.end, end)
        else:
            last = Range(place.pack, place.offset, end)
            ranges.append(last)
        last.frames.append((digest, place.offset, place.length))
    return ranges


def over_limit(place: Place, max_size: int) -> str:
    return f"its frame of {place.length} bytes is over the limit of {max_size}"


def fetch_one(
    objects: RemoteObjects, kind: int, digest: Digest, *, max_size: int
) -> bytes | str | None:
    """One frame by itself (one request): its bytes, None when it is not on the remote, or why
    it was refused unread."""
    packed, loose = objects.locate(kind, [digest])
    place = packed.get(digest)
    if place is not None:
        if place.length > max_size:
            return over_limit(place, max_size)
        data = objects.bucket.get_range(PACKS + place.pack.hex(), place.offset, place.length)
        if data is None:
            return None
        if len(data) < place.length:
            return f"its pack {place.pack.hex()[:16]} is cut short"
        return data[: place.length]
    if digest not in loose:
        return None
    try:
        return objects.bucket.get(LOOSE[kind] + digest.hex(), max_size=max_size)
    except ObjectTooLarge as exc:
        return str(exc)


def pack_problems(objects: RemoteObjects, places: Iterable[Place]) -> dict[Digest, str]:
    """What is wrong with the packs ``places`` lie in, by pack: not listed, or shorter than
    an entry needs (one LIST per thousand packs; nothing is downloaded)."""
    needed: dict[Digest, int] = {}
    for place in places:
        needed[place.pack] = max(needed.get(place.pack, 0), place.offset + place.length)
    if not needed:
        return {}
    listed = {o.name: o.size for o in objects.bucket.list_all(PACKS)}
    out: dict[Digest, str] = {}
    for pack, end in needed.items():
        size = listed.get(pack.hex())
        if size is None:
            out[pack] = f"its pack {pack.hex()[:16]} is not on the remote"
        elif size < end:
            out[pack] = f"its pack {pack.hex()[:16]} is cut short ({size} of {end}+ bytes)"
    return out


def chunks_in_use_order(lists: Iterable[Iterable[Digest]], send: Iterable[Digest]) -> list[Digest]:
    """The chunks of ``send`` in the order packs take them: as the chunk ``lists`` (of the blobs
    sent, in their order) use them first, then any ``send`` no list names, in digest order. A
    blob's chunks so lie side by side in a pack, and one ranged GET reads a run of them."""
    wanted = set(send)
    order: dict[Digest, None] = {}
    for listed in lists:
        for chunk in listed:
            if chunk in wanted:
                order.setdefault(chunk, None)
    return [*order, *sorted(wanted - order.keys())]


class PackUploader:
    """Frames in, pack objects up (in parallel, while more fill), and index objects naming them
    once they are up: one every `CHECKPOINT_PACKS` packs and one at the end."""

    def __init__(
        self,
        bucket: ObjectStorage,
        *,
        jobs: int,
        target: int = PACK_TARGET,
        write_index: bool = True,
    ) -> None:
        """``write_index`` off: no index object is written; ``packs`` and ``entries`` (numbered
        by position in ``packs``) are left for the caller to name in its own."""
        self.bucket = bucket
        self.write_index = write_index
        self.target = target
        self.builder = PackBuilder()
        self.packs: list[Digest] = []
        self.entries: list[Entry] = []
        self.bytes_sent = 0
        self.indexes: list[Digest] = []
        self._indexed = 0  # packs [0, _indexed) are named by an index object already
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cas-pack")
        self._inflight: list[Future[None]] = []
        self._room = threading.BoundedSemaphore(max(2, jobs))
        self.on_sent: Callable[[int], None] | None = None

    def add(self, kind: int, digest: Digest, value: bytes) -> None:
        self.builder.add(kind, digest, value)
        if self.builder.size >= self.target:
            self._ship()

    def _ship(self) -> None:
        if not len(self.builder):
            return
        name, data, entries = self.builder.seal()
        self.builder = PackBuilder()
        number = len(self.packs)
        self.packs.append(name)
        self.entries += [Entry(e.kind, e.digest, number, e.offset, e.length) for e in entries]
        self._room.acquire()  # at most a few packs held in memory at once

        def send() -> None:
            try:
                self.bucket.put(PACKS + name.hex(), data, single_up_to=SINGLE_PUT)
            finally:
                self._room.release()
            if self.on_sent is not None:
                self.on_sent(len(data))

        self._inflight.append(self._pool.submit(send))
        self.bytes_sent += len(data)
        self._raise_failed()
        if self.write_index and len(self.packs) - self._indexed >= CHECKPOINT_PACKS:
            self._write_index()

    def _raise_failed(self) -> None:
        for fut in [f for f in self._inflight if f.done()]:
            fut.result()
            self._inflight.remove(fut)

    def _write_index(self) -> None:
        """Wait for every pack in flight, then write an index object for the packs no index
        names yet."""
        for fut in self._inflight:
            fut.result()
        self._inflight.clear()
        first = self._indexed
        if first == len(self.packs) or not self.write_index:
            return
        entries = [e for e in self.entries if e.pack >= first]
        self.entries = [e for e in self.entries if e.pack < first]
        packs = self.packs[first:]
        data = encode_index(
            packs, [Entry(e.kind, e.digest, e.pack - first, e.offset, e.length) for e in entries]
        )
        name = Digest.of(data)
        self.bucket.put(INDEXES + name.hex(), data, single_up_to=SINGLE_PUT)
        self.indexes.append(name)
        self.bytes_sent += len(data)
        self._indexed = len(self.packs)

    def finish(self) -> list[Digest]:
        """Upload what remains, wait for every pack, then write the index object naming those
        no index names yet. Returns every index object written."""
        try:
            self._ship()
            self._write_index()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        return self.indexes

    def abandon(self) -> None:
        """Stop without an index (packs already up stay unreferenced until a remote gc)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def is_hex(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)
