"""Pull: download what the local store lacks for some manifests, trusting nothing.

Every frame is checked before it is stored (a raw or zstd frame decodes to content with its
digest; each chunk of a chunk index likewise, then the whole blob read back from the store), and
the store checks again as it commits. What fails is refused, named by digest, and never stored;
a manifest is written to the manifests folder only once every blob it references is committed.
A pull killed half-way leaves committed, checked frames only; the next one fetches the rest.

Manifests are pulled one at a time (fetched, checked, their blobs brought in, written, dropped),
so memory holds one manifest however many the remote has; chunk indexes are handled in batches
of bounded size. What one object may cost is bounded before any work on it: see
`cas.remote.layout` (sizes against the manifest, the blob size limit, chunk places).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest
from cas.errors import CorruptBlob, InputError, ManifestError, NotFound, RemoteRefused, UsageError
from cas.events import ProgressSink
from cas.fsutil import atomic_write
from cas.lease import Lease
from cas.locate import PACK_SUFFIX, check_pack_name, pack_path
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import (
    LocalManifest,
    chunk_sizes,
    claimed_sizes,
    fetch_manifest,
    index_problem,
    local_manifests,
    manifest_key,
    max_object,
    misnamed,
    remote_packs,
    size_problem,
)
from cas.remote.lock import USE, RemoteLock
from cas.remote.objects import RemoteObjects
from cas.remote.packfile import BLOB, CHUNK
from cas.remote.report import RemoteReport
from cas.remote.s3 import session
from cas.remote.storage import ObjectStorage
from cas.remote.transfer import DEFAULT_JOBS, Meter
from cas.roots import prepare_manifest_dir
from cas.store import Store

# Pulled frames are committed in batches of this many bytes or frames, whichever comes first:
# few LMDB commits, bounded memory, and little to fetch again after a pull is killed.
COMMIT_BYTES: Final = 32 << 20
COMMIT_FRAMES: Final = 512
# Chunk indexes wait for their chunks in batches of at most this many bytes of index frames.
INDEX_BATCH_BYTES: Final = 32 << 20
# Problems kept to report (the first ones); the rest are counted.
KEPT_PROBLEMS: Final = 1000


@dataclass
class PullReport(RemoteReport):
    manifests: list[dict[str, str]] = field(default_factory=list)
    blobs_referenced: int = 0
    blobs_present: int = 0
    blobs_downloaded: int = 0
    chunks_downloaded: int = 0
    bytes_downloaded: int = 0


class _Committer:
    """Commits batches of checked frames in a thread of its own while the next ones download.

    One batch commits while the next fills, never more: memory holds at most two batches. The
    store is only read in the calling thread after `drain` (no read overlaps a map resize),
    and a failed commit is raised at the next `commit` or `drain`.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cas-commit")
        self._running: Future[tuple[int, int]] | None = None

    def commit(
        self,
        blobs: Sequence[tuple[Digest, bytes]] = (),
        chunks: Sequence[tuple[Digest, bytes]] = (),
    ) -> None:
        self.drain()
        if not blobs and not chunks:
            return
        self._running = self._pool.submit(
            self.store.put_frames, list(blobs), chunks=list(chunks), checked=True
        )

    def drain(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            running.result()

    def close(self) -> None:
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True)


@dataclass(frozen=True, slots=True)
class _Target:
    item: LocalManifest
    write: bool  # from the remote: write it to the manifests folder once its blobs are in


def pull(
    store: Store,
    remote: Remote | str,
    specs: Sequence[str] = (),
    *,
    folder: str | os.PathLike[str],
    everything: bool = False,
    force: bool = False,
    jobs: int = DEFAULT_JOBS,
    progress: ProgressSink | None = None,
    storage: ObjectStorage | None = None,
) -> PullReport:
    """Download what the local store lacks for some manifests, checking every byte.

    ``specs`` name packs on the remote (``repo.claude``), manifest files on this machine (a path
    to an existing file: only its blobs are fetched) or manifest digests (fetched from blobs/).
    With no specs: the manifests in ``folder``, the manifests folder of the project pulled for
    (`cas.locate`); with ``everything``: every manifest on the remote. A pulled manifest is
    written to ``folder`` (atomically, after its blobs are committed; the folder made a gc root
    first) unless a different local file of that name exists and ``force`` is off. Objects
    that are missing or fail their checks raise `RemoteRefused` naming them, after everything
    that passed has been committed.
    """
    if everything and specs:
        raise UsageError("name MANIFESTs or pass --all, not both")
    target = resolve_remote(store, remote)
    report = PullReport(target.name, target.url)
    # Under a lease, like a pack: blobs found present are not fetched again, so a gc must keep
    # off until the manifests that reference them are written.
    with (
        session(target, jobs, report, storage) as bucket,
        Lease(store, "pull") as lease,
    ):
        _Pull(store, bucket, jobs, Meter("pull", progress), report, force, lease, Path(folder)).run(
            specs, everything
        )
    return report


class _Pull:
    def __init__(
        self,
        store: Store,
        bucket: ObjectStorage,
        jobs: int,
        meter: Meter,
        report: PullReport,
        force: bool,
        lease: Lease | None,
        folder: Path,
    ) -> None:
        self.store = store
        self.folder = folder
        self.lease = lease
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report
        self.force = force
        self.problems: dict[str, str] = {}  # the first `KEPT_PROBLEMS`, by object
        self.problem_count = 0
        self.failed: set[Digest] = set()  # refused blobs: not asked for again in this pull
        self.seen: set[Digest] = set()  # blobs of the manifests pulled so far, for the counts
        self.max_object = max_object(store)
        self.max_blob = bucket.settings.max_blob
        self.objects = RemoteObjects(bucket, jobs=jobs)
        self.committer = _Committer(store)

    def problem(self, what: Digest | str, why: str) -> None:
        if isinstance(what, Digest):
            if what in self.failed:
                return
            self.failed.add(what)
        key = str(what)
        if key in self.problems:
            return
        self.problem_count += 1
        if len(self.problems) < KEPT_PROBLEMS:
            self.problems[key] = why

    def run(self, specs: Sequence[str], everything: bool) -> None:
        self.bucket.check()
        with RemoteLock(self.bucket, USE, "pull"):
            try:
                self._run(specs, everything)
            finally:
                self.committer.close()

    def _run(self, specs: Sequence[str], everything: bool) -> None:
        self.objects.load()
        for key, why in self.objects.problems:
            self.problem(key, why)
        for load in self._sources(specs, everything):
            target = load()
            if target is not None:
                self._pull(target)
            # Dropped before the next one is read: one manifest in memory at a time.
            del target
        if self.problem_count:
            raise RemoteRefused(
                self.bucket.remote.name,
                sorted(self.problems.items()),
                self.problem_count,
            )

    # --- which manifests ----------------------------------------------------------------------

    def _sources(
        self, specs: Sequence[str], everything: bool
    ) -> list[Callable[[], _Target | None]]:
        """One loader per manifest to pull, in order. Names and digests that are not on the
        remote are refused here, before any work; manifests are read only by their loader."""
        if not specs and not everything:
            found = local_manifests(
                self.store, [], folder=self.folder, hint="name a MANIFEST, or pass --all"
            )
            return [_loaded(_Target(m, write=False)) for m in found]
        names: list[str] = []
        files: list[str] = []
        digests: list[Digest] = []
        for spec in specs:
            if spec.startswith("blake3:"):
                digests.append(Digest.parse(spec))
            elif Path(spec).is_file():
                files.append(spec)
            else:
                names.append(check_pack_name(spec.removesuffix(PACK_SUFFIX), spec))
        loaders: list[Callable[[], _Target | None]] = []
        if files:
            loaders += [
                _loaded(_Target(m, write=False))
                for m in local_manifests(self.store, files, folder=self.folder)
            ]
        if everything or names:
            listed, bad = remote_packs(self.bucket)
            for key, why in bad:
                self.problem(key, why)
            for name in names:
                if name not in listed:
                    raise NotFound("pack", name, f"not on remote {self.bucket.remote.name!r}")
            wanted = sorted(set(names), key=str.encode) if names else list(listed)
            loaders += [self._remote_loader(name) for name in wanted]
        if digests:
            absent = sorted(set(digests) - self.store.has_many(digests))
            on_remote = self.objects.present(BLOB, absent)
            for digest in absent:
                if digest not in on_remote:
                    raise NotFound("pack", str(digest), "no such blob on the remote")
            loaders += [self._digest_loader(digest) for digest in digests]
        return loaders

    def _remote_loader(self, name: str) -> Callable[[], _Target | None]:
        def load() -> _Target | None:
            key = manifest_key(name)
            self.meter.expect(1)
            data = fetch_manifest(self.bucket, name)
            self.meter.moved(len(data) if isinstance(data, bytes) else 0)
            if data is None:
                self.problem(key, "listed, then gone from the remote")
                return None
            if isinstance(data, str):
                self.problem(key, data)
                return None
            self.report.bytes_downloaded += len(data)
            try:
                manifest = mf.decode(data, key)
            except ManifestError as exc:
                self.problem(key, f"not a valid manifest: {exc.problem}")
                return None
            wrong = misnamed(manifest, name)
            if wrong is not None:
                self.problem(key, wrong)
                return None
            return _Target(LocalManifest(name, data, Digest.of(data), manifest, key), True)

        return load

    def _digest_loader(self, digest: Digest) -> Callable[[], _Target | None]:
        def load() -> _Target | None:
            # A manifest named by digest is a blob like any other: fetched and checked first.
            if not self.store.has(digest):
                self.fetch({digest})
            if digest in self.failed:
                return None
            data = self.store.get(digest)
            manifest = mf.decode(data, str(digest))
            name = check_pack_name(manifest.name, str(digest))
            return _Target(LocalManifest(name, data, digest, manifest, str(digest)), True)

        return load

    # --- one manifest -------------------------------------------------------------------------

    def _pull(self, target: _Target) -> None:
        """Bring in what one manifest references, then write it."""
        content = target.item.manifest.digests()
        claims, conflicts = claimed_sizes(target.item.manifest)
        for digest, why in sorted(conflicts.items()):
            self.problem(digest, why)
        new = content - self.seen
        self.seen |= new
        present = self.store.has_many(content)
        self.report.blobs_referenced += len(new)
        self.report.blobs_present += len(new & present)
        self.fetch(content - present - self.failed, claims)
        self._finish(target)

    # --- blobs and chunks -----------------------------------------------------------------------

    def fetch(self, wanted: set[Digest], claims: dict[Digest, int] | None = None) -> None:
        """Bring ``wanted`` blobs into the store; record a problem for each one that fails.
        ``claims`` gives the size a manifest says a blob has: a frame declaring another is
        refused unread."""
        if not wanted:
            return
        store = self.store
        sizes = claims or {}
        indexes: dict[Digest, bytes] = {}
        index_bytes = 0
        pending: list[tuple[Digest, bytes]] = []
        pending_bytes = 0
        self.meter.expect(len(wanted))

        def check_blob(digest: Digest, value: bytes) -> bytes | str:
            why = size_problem(value, sizes.get(digest)) or index_problem(value, self.max_blob)
            if why is not None:
                return why
            try:
                store.check_frame(digest, value)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def got_blob(digest: Digest, result: bytes | str, _nbytes: int) -> None:
            nonlocal pending_bytes, index_bytes
            if isinstance(result, str):
                self.problem(digest, result)
                self.meter.moved(0)
                return
            self.meter.moved(len(result))
            self.report.bytes_downloaded += len(result)
            self.report.blobs_downloaded += 1
            if frame.header(result).codec == frame.INDEX:
                indexes[digest] = result
                index_bytes += len(result)
                if index_bytes >= INDEX_BATCH_BYTES:
                    self.committer.drain()
                    self._fetch_chunked(indexes)
                    indexes.clear()
                    index_bytes = 0
                return
            pending.append((digest, result))
            pending_bytes += len(result)
            if pending_bytes >= COMMIT_BYTES or len(pending) >= COMMIT_FRAMES:
                self.committer.commit(blobs=pending)
                pending.clear()
                pending_bytes = 0

        self.objects.fetch(BLOB, wanted, max_size=self.max_object, check=check_blob, done=got_blob)
        self.committer.commit(blobs=pending)
        self.committer.drain()
        if indexes:
            self._fetch_chunked(indexes)

    def _fetch_chunked(self, indexes: dict[Digest, bytes]) -> None:
        """Fetch the chunks of ``indexes`` (checked, each within its limits) that the store
        lacks, then store each index whose chunks all hold what their places need."""
        store = self.store
        users: dict[Digest, list[Digest]] = {}
        needs: dict[Digest, dict[Digest, int]] = {}
        for digest, value in indexes.items():
            shape = chunk_sizes(value)
            if isinstance(shape, str):
                self.problem(digest, shape)
                continue
            _chunks, needs[digest] = shape
            for chunk in needs[digest]:
                users.setdefault(chunk, []).append(digest)
        wanted = sorted(set(users) - store.has_chunks(users))
        pending: list[tuple[Digest, bytes]] = []
        pending_bytes = 0
        self.meter.expect(len(wanted))

        def check_chunk(chunk: Digest, value: bytes) -> bytes | str:
            try:
                store.check_frame(chunk, value, chunk=True)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def got_chunk(chunk: Digest, result: bytes | str, _nbytes: int) -> None:
            nonlocal pending_bytes
            if isinstance(result, str):
                for owner in users[chunk]:
                    self.problem(owner, f"chunk {chunk}: {result}")
                self.meter.moved(0)
                return
            held = frame.header(result).raw_size
            for owner in users[chunk]:
                if needs[owner][chunk] != held:
                    self.problem(
                        owner,
                        f"chunk {chunk}: holds {held} bytes where its place in the index "
                        f"needs {needs[owner][chunk]}",
                    )
            self.meter.moved(len(result))
            self.report.bytes_downloaded += len(result)
            self.report.chunks_downloaded += 1
            pending.append((chunk, result))
            pending_bytes += len(result)
            if pending_bytes >= COMMIT_BYTES or len(pending) >= COMMIT_FRAMES:
                self.committer.commit(chunks=pending)
                pending.clear()
                pending_bytes = 0

        self.objects.fetch(
            CHUNK, wanted, max_size=self.max_object, check=check_chunk, done=got_chunk
        )
        self.committer.commit(chunks=pending)
        self.committer.drain()
        for digest in sorted(needs):
            if digest in self.failed:
                continue
            try:
                # Each index alone: the store reads its chunks back (each checked once, each of
                # the size its place needs) and hashes the whole content, whose size the limits
                # above bound.
                store.put_frames([(digest, indexes[digest])])
            except CorruptBlob as exc:
                self.problem(digest, exc.problem)

    # --- manifests ----------------------------------------------------------------------------

    def _finish(self, target: _Target) -> None:
        item = target.item
        needed = item.manifest.digests()
        status = "complete"
        if len(self.store.has_many(needed)) != len(needed):
            status = "incomplete"
        if status == "complete":
            self.store.put(item.data)
            if target.write:
                status = self._write(item)
        self.report.manifests.append(
            {"name": item.name, "digest": str(item.digest), "status": status}
        )

    def _write(self, item: LocalManifest) -> str:
        path = pack_path(self.folder, item.name)
        try:
            existing = path.read_bytes() if path.is_file() else None
        except OSError:
            existing = None
        if existing == item.data:
            return "unchanged"
        if existing is not None and not self.force:
            return "kept-local"
        prepare_manifest_dir(self.store, self.folder)
        if self.lease is not None:
            self.lease.check()
        try:
            atomic_write(path, item.data)
        except OSError as exc:
            raise InputError(str(path), exc.strerror or str(exc)) from None
        return "written"


def _loaded(target: _Target) -> Callable[[], _Target | None]:
    """A loader of a manifest already in hand (a local file)."""
    return lambda: target
