"""Push: upload manifests and every blob and chunk they reach that the remote lacks.

The frames the remote lacks (found through its index objects, and for remotes of the older
layout, by listing) travel bundled into pack objects (`cas.remote.objects`). Order is what keeps
a remote consistent when a push dies half-way: every pack before the index object that names
them, and the ``manifests/`` objects (the only names a reader starts from) last. A killed push
leaves packs no index names at worst; a remote gc removes them. Every frame is checked before it
leaves, so a locally damaged frame never reaches the remote, where pullers would refuse it
forever. A push holds a lock object (`cas.remote.lock`) so no remote gc runs beside it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from cas import frame
from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob, NotFound
from cas.events import ProgressSink
from cas.locate import file_name
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import MANIFESTS, LocalManifest, index_chunks
from cas.remote.lock import USE, RemoteLock
from cas.remote.objects import PackUploader, RemoteObjects, chunks_in_use_order
from cas.remote.packfile import BLOB, CHUNK
from cas.remote.report import RemoteReport
from cas.remote.s3 import session
from cas.remote.storage import ObjectStorage
from cas.remote.transfer import DEFAULT_JOBS, Meter, ordered
from cas.store import Store


@dataclass
class PushReport(RemoteReport):
    manifests: list[dict[str, str]] = field(default_factory=list)
    blobs_referenced: int = 0
    blobs_present: int = 0
    blobs_uploaded: int = 0
    chunks_uploaded: int = 0
    packs_uploaded: int = 0
    indexes_uploaded: int = 0
    bytes_uploaded: int = 0

    @property
    def uploads(self) -> int:
        """Objects uploaded: packs, the index object and manifests."""
        sent = sum(1 for m in self.manifests if m["status"] == "uploaded")
        return self.packs_uploaded + self.indexes_uploaded + sent


def push(
    store: Store,
    remote: Remote | str,
    manifests: Sequence[LocalManifest],
    *,
    jobs: int = DEFAULT_JOBS,
    progress: ProgressSink | None = None,
    storage: ObjectStorage | None = None,
) -> PushReport:
    """Upload ``manifests`` and every blob and chunk they reach that the remote lacks."""
    target = resolve_remote(store, remote)
    report = PushReport(target.name, target.url)
    with session(target, jobs, report, storage) as bucket:
        _Push(store, bucket, jobs, Meter("push", progress), report).run(manifests)
    return report


class _Push:
    def __init__(
        self, store: Store, bucket: ObjectStorage, jobs: int, meter: Meter, report: PushReport
    ) -> None:
        self.store = store
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report

    def run(self, manifests: Sequence[LocalManifest]) -> None:
        store = self.store
        content: set[Digest] = set()
        for item in manifests:
            content |= item.manifest.digests()
        lacking = content - store.has_many(content)
        if lacking:
            first = min(lacking)
            owner = next(m.name for m in manifests if first in m.manifest.digests())
            raise NotFound(
                "blob",
                str(first),
                f"pack {owner} references it ({len(lacking)} such blobs) but the local store "
                "lacks it: rebuild with 'cas pack' or pull it first",
            )
        # A manifest's own blob goes up like any other; a file from elsewhere may not be stored.
        tops = {m.digest for m in manifests}
        for item in manifests:
            if not store.has(item.digest):
                store.put(item.data)
        self.bucket.check()
        with RemoteLock(self.bucket, USE, "push"):
            self._send(content, tops)
            self._send_manifests(manifests)

    def _send(self, content: set[Digest], tops: set[Digest]) -> None:
        store = self.store
        objects = RemoteObjects(self.bucket, jobs=self.jobs).load()
        everything = content | tops
        present = objects.present(BLOB, everything)
        self.report.blobs_referenced = len(everything)
        self.report.blobs_present = len(present)
        blobs = sorted(content - present)
        top_blobs = sorted(tops - present - content)
        # Chunks of the blobs about to go up; those of blobs already there went up before them.
        chunk_owner: dict[Digest, Digest] = {}
        lists: list[list[Digest]] = []
        for digest in [*blobs, *top_blobs]:
            value = store.raw_value(digest)
            if value is None:
                raise BlobNotFound(str(digest))
            try:
                listed = index_chunks(value)
            except frame.FrameError as exc:
                raise CorruptBlob(str(digest), str(exc)) from None
            for chunk in listed or ():
                chunk_owner.setdefault(chunk, digest)
            lists.append(listed or [])
        on_remote = objects.present(CHUNK, chunk_owner)
        chunks = chunks_in_use_order(lists, chunk_owner.keys() - on_remote)
        self.meter.expect(len(chunks) + len(blobs) + len(top_blobs))

        def read_chunk(chunk: Digest) -> bytes:
            value = store.raw_chunk(chunk)
            if value is None:
                raise CorruptBlob(str(chunk_owner[chunk]), f"chunk {chunk} is missing locally")
            store.check_frame(chunk, value, chunk=True)
            return value

        def read_blob(digest: Digest) -> bytes:
            value = store.raw_value(digest)
            if value is None:
                raise BlobNotFound(str(digest))
            # Never spread a locally damaged frame: pullers would refuse it forever.
            store.check_frame(digest, value)
            return value

        uploader = PackUploader(self.bucket, jobs=self.jobs, target=self.bucket.settings.pack_size)
        try:
            # Frames go into packs in an order fixed by the frames alone (chunks, then blobs in
            # digest order), so the same frames make the same packs.
            for chunk, value in ordered(chunks, read_chunk, jobs=self.jobs):
                uploader.add(CHUNK, chunk, value)
                self.report.chunks_uploaded += 1
                self.meter.moved(len(value))
            for digest, value in ordered([*blobs, *top_blobs], read_blob, jobs=self.jobs):
                uploader.add(BLOB, digest, value)
                self.report.blobs_uploaded += 1
                self.meter.moved(len(value))
            indexes = uploader.finish()
        except BaseException:
            uploader.abandon()
            raise
        self.report.packs_uploaded = len(uploader.packs)
        self.report.indexes_uploaded = len(indexes)
        self.report.bytes_uploaded += uploader.bytes_sent

    def _send_manifests(self, manifests: Sequence[LocalManifest]) -> None:
        listed = {o.name: o for o in self.bucket.list_all(MANIFESTS)}
        for item in manifests:
            key = file_name(item.name)
            there = listed.get(key)
            # S3 gives a single-part object's MD5 as its ETag; when it matches, the remote
            # already holds these bytes. Any other ETag form just means one more upload.
            same = (
                there is not None
                and there.size == len(item.data)
                and there.etag == hashlib.md5(item.data, usedforsecurity=False).hexdigest()
            )
            if not same:
                self.bucket.put(MANIFESTS + key, item.data)
                self.report.bytes_uploaded += len(item.data)
            self.report.manifests.append(
                {
                    "name": item.name,
                    "digest": str(item.digest),
                    "status": "unchanged" if same else "uploaded",
                }
            )
