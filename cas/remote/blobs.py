"""The blobs of a remote as a blob store: the contract of `cas.blobstore` over object storage.

`RemoteBlobStore` reads and writes the remote layout push and pull use (`cas.remote.objects`,
`cas.remote.packfile`), through any `cas.remote.storage.ObjectStorage`: a real bucket or the
in-memory one.

* Reading starts from the index objects, read when the store is opened (and again by `refresh`
  and after each `flush`): a blob written by someone else afterwards is not seen until then.
  Loose ``blobs/`` and ``chunks/`` objects of older remotes are found by listing. A frame is
  fetched with one ranged GET of its pack and trusted no more than a pull trusts it: held to
  its digest and to the size limits before anything is decompressed (`cas.blobstore
  .check_frame`, and a chunk index to the remote's blob size limit), each chunk read back
  against its digest and the whole content against the blob's.
* Writing is buffered (``buffered`` is True): puts and `put_frames` are held in memory, and this
  object already answers ``has``, ``get`` and ``iterate`` with them. `flush` (or leaving a
  ``with`` block without an error) packs them into pack objects and then writes one index object
  naming them, under a lock object (`cas.remote.lock`) so no remote gc runs beside it, as a push
  does: a flush killed half-way leaves at worst packs that no index names, which a remote gc
  removes. Whether a frame is already on the remote is judged from the index objects read, with
  no request; a frame held loose by an older remote may so be packed again, which is harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import TracebackType

from cas import frame
from cas.blobstore import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_LEVEL,
    BlobStore,
    Frames,
    check_frame,
    frame_limit,
    frames_of,
)
from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob
from cas.reader import BlobReader
from cas.remote.layout import BLOBS, index_chunks, index_problem
from cas.remote.lock import USE, RemoteLock
from cas.remote.objects import (
    PackUploader,
    RemoteObjects,
    chunks_in_use_order,
    fetch_one,
    is_hex,
)
from cas.remote.packfile import BLOB, CHUNK
from cas.remote.storage import ObjectStorage

DEFAULT_JOBS = 4
# A chunk index frame: the frame header, then chunk size and count (u32 each), then digests.
_INDEX_FIXED = frame.HEADER_SIZE + 8


class RemoteBlobStore:
    """The blobs of one remote (see the module notes). Use as a context manager, or call
    `flush`; it does not own ``bucket`` (the caller closes it). One thread at a time: its own
    reads and flushes run their transfers in ``jobs`` threads."""

    def __init__(
        self,
        bucket: ObjectStorage,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        level: int = DEFAULT_LEVEL,
        jobs: int = DEFAULT_JOBS,
    ) -> None:
        if chunk_size < 1 or not 1 <= level <= 22:
            raise ValueError(f"chunk size {chunk_size} or level {level} is out of range")
        self.bucket = bucket
        self._chunk_size = chunk_size
        self.level = level
        self.jobs = jobs
        self.foreign_frame_limit = frame_limit(chunk_size)
        # The largest object a frame may be: a frame of the largest content accepted.
        self._max_object = self.foreign_frame_limit + _INDEX_FIXED
        self._blobs: dict[Digest, bytes] = {}  # frames put and not yet flushed
        self._chunks: dict[Digest, bytes] = {}
        self._objects = RemoteObjects(bucket, jobs=jobs)
        self.refresh()

    def __enter__(self) -> RemoteBlobStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Flush on a clean exit; after an error the puts not flushed are dropped."""
        if kind is None:
            self.flush()
        else:
            self._blobs.clear()
            self._chunks.clear()

    # --- capabilities ---------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        """True: what is flushed stays on the remote for every reader."""
        return True

    @property
    def buffered(self) -> bool:
        """True: puts reach the remote at `flush`."""
        return True

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    @property
    def problems(self) -> list[tuple[str, str]]:
        """Index objects that could not be used when last read: (object key, why)."""
        return list(self._objects.problems)

    # --- reading --------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the remote's index objects again (one LIST per thousand, a GET each)."""
        self._objects = RemoteObjects(self.bucket, jobs=self.jobs).load()

    def _indexed(self, kind: int, digest: Digest) -> bool:
        return (kind, digest) in self._objects.places

    def has(self, digest: Digest) -> bool:
        return digest in self.has_many([digest])

    def has_many(self, digests: Iterable[Digest]) -> set[Digest]:
        """Those held here or named by an index object, then loose ones (listed for the rest)."""
        wanted = set(digests)
        held = {d for d in wanted if d in self._blobs}
        return held | self._objects.present(BLOB, wanted - held)

    def _fetch(self, kind: int, digest: Digest) -> bytes | None:
        """A frame held here or on the remote; None if absent; `CorruptBlob` when an index
        object says where it is but it cannot be read there (over the size limit, its pack cut
        short or gone)."""
        held = (self._blobs if kind == BLOB else self._chunks).get(digest)
        if held is not None:
            return held
        found = fetch_one(self._objects, kind, digest, max_size=self._max_object)
        if isinstance(found, str):
            raise CorruptBlob(str(digest), found)
        if found is None and self._indexed(kind, digest):
            place = self._objects.places[kind, digest]
            raise CorruptBlob(str(digest), f"its pack {place.pack.hex()[:16]} is missing")
        return found

    def raw_value(self, digest: Digest) -> bytes | None:
        """The blob's frame, as the remote holds it: not checked (`get` and `put_frames` do)."""
        return self._fetch(BLOB, digest)

    def raw_chunk(self, digest: Digest) -> bytes | None:
        return self._fetch(CHUNK, digest)

    def get(self, digest: Digest) -> bytes:
        """The content, verified: the frame within the limits and hashed, or a chunk index
        within the blob size limit whose chunks are each hashed, then the whole."""
        value = self._fetch(BLOB, digest)
        if value is None:
            raise BlobNotFound(str(digest))
        why = index_problem(value, self.bucket.settings.max_blob)
        if why is not None:
            raise CorruptBlob(str(digest), why)
        _head, data = check_frame(digest, value, limit=self.foreign_frame_limit)
        if data is not None:
            return data
        with BlobReader(self, digest, value, verify=True) as reader:
            return reader.read()

    def read_chunk(self, blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        """A chunk's content for a `BlobReader` reading ``blob``: always held to its digest
        and the size limit here (it came from a remote), whatever ``verify`` says."""
        value = self._fetch(CHUNK, chunk)
        if value is None:
            raise CorruptBlob(str(blob), f"chunk {chunk} is missing from the remote")
        try:
            _head, data = check_frame(chunk, value, limit=self.foreign_frame_limit, chunk=True)
        except CorruptBlob as exc:
            raise CorruptBlob(str(blob), f"chunk {chunk}: {exc.problem}") from None
        if data is None:  # never: check_frame refuses a chunk index where a chunk belongs
            raise CorruptBlob(str(blob), f"chunk {chunk} is a chunk index")
        return data

    def iterate(self) -> Iterator[Digest]:
        """Every blob in ascending order: those the index objects name, loose ones (one LIST per
        thousand) and those held here."""
        found = {digest for kind, digest in self._objects.places if kind == BLOB}
        found.update(
            Digest(bytes.fromhex(o.name)) for o in self.bucket.list_all(BLOBS) if is_hex(o.name)
        )
        found.update(self._blobs)
        return iter(sorted(found))

    # --- writing --------------------------------------------------------------------------------

    def put(self, data: bytes) -> Digest:
        digest, value, chunks = frames_of(data, chunk_size=self._chunk_size, level=self.level)
        if digest in self._blobs or self._indexed(BLOB, digest):
            return digest
        for chunk, piece in chunks:
            if chunk not in self._chunks and not self._indexed(CHUNK, chunk):
                self._chunks[chunk] = piece
        self._blobs[digest] = value
        return digest

    def put_frames(self, blobs: Frames = (), *, chunks: Frames = ()) -> tuple[int, int]:
        """Take frames made elsewhere, checked as `cas.store.Store.put_frames` checks them
        (a chunk index read back whole through its chunks), to go up at the next `flush`.
        A frame that fails raises `CorruptBlob` and no blob of the call is taken."""
        chunk_items = sorted(dict(chunks).items())
        blob_items = sorted(dict(blobs).items())
        limit = self.foreign_frame_limit
        for digest, value in chunk_items:
            check_frame(digest, value, limit=limit, chunk=True)
        heads = {d: check_frame(d, value, limit=limit)[0] for d, value in blob_items}
        new_bytes = 0
        for digest, value in chunk_items:
            if digest not in self._chunks and not self._indexed(CHUNK, digest):
                self._chunks[digest] = value
                new_bytes += len(value)
        fresh = [
            (d, v) for d, v in blob_items if d not in self._blobs and not self._indexed(BLOB, d)
        ]
        for digest, value in fresh:
            if heads[digest].codec == frame.INDEX:
                # A verifying reader hashes each chunk, then the whole content.
                with BlobReader(self, digest, value, verify=True) as reader:
                    for _piece in reader.chunks():
                        pass
        for digest, value in fresh:
            self._blobs[digest] = value
            new_bytes += len(value)
        return len(fresh), new_bytes

    def flush(self) -> None:
        """Send what is held: pack objects first (chunks in order of first use, then blobs in
        digest order, as a push adds them, so the same frames make the same packs), then one
        index object naming them; then read
        the index objects again. On an error what is held stays held, to flush again."""
        if not self._blobs and not self._chunks:
            return
        with RemoteLock(self.bucket, USE, "put"):
            uploader = PackUploader(
                self.bucket, jobs=self.jobs, target=self.bucket.settings.pack_size
            )
            try:
                blobs = sorted(self._blobs)
                for digest in chunks_in_use_order(
                    [index_chunks(self._blobs[d]) or [] for d in blobs], self._chunks
                ):
                    uploader.add(CHUNK, digest, self._chunks[digest])
                for digest in blobs:
                    uploader.add(BLOB, digest, self._blobs[digest])
                uploader.finish()
            except BaseException:
                uploader.abandon()
                raise
        self._blobs.clear()
        self._chunks.clear()
        self.refresh()


def _keeps_the_contract(store: RemoteBlobStore) -> BlobStore:
    """mypy holds `RemoteBlobStore` to the blob-store contract here (`cas.blobstore.BlobStore`)."""
    return store
