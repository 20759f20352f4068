"""Pull: download what the local store lacks for some manifests, trusting nothing.

Every frame is checked before it is stored (a raw or zstd frame decodes to content with its
digest; each chunk of a chunk index likewise, then the whole blob read back from the store), and
the store checks again as it commits. What fails is refused, named by digest, and never stored;
a manifest is written to the manifests folder only once every blob it references is committed.
A pull killed half-way leaves committed, checked frames only; the next one fetches the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest
from cas.errors import CorruptBlob, InputError, ManifestError, NotFound, RemoteRefused, UsageError
from cas.fsutil import atomic_write
from cas.lease import Lease
from cas.progress import Progress
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import (
    BLOBS,
    CHUNKS,
    MANIFESTS,
    PACK_SUFFIX,
    LocalManifest,
    check_pack_name,
    fetch_manifest,
    local_manifests,
    manifests_dir,
    max_object,
    remote_pack_names,
)
from cas.remote.s3 import Bucket, ObjectTooLarge, session
from cas.remote.transfer import DEFAULT_JOBS, Meter, parallel
from cas.store import Store

# Pulled frames are committed in batches of this many bytes or frames, whichever comes first:
# few LMDB commits, bounded memory, and little to fetch again after a pull is killed.
COMMIT_BYTES: Final = 32 << 20
COMMIT_FRAMES: Final = 512


@dataclass
class PullReport:
    remote: str
    url: str
    manifests: list[dict[str, str]] = field(default_factory=list)
    blobs_referenced: int = 0
    blobs_present: int = 0
    blobs_downloaded: int = 0
    chunks_downloaded: int = 0
    bytes_downloaded: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "manifests": self.manifests,
            "blobs_referenced": self.blobs_referenced,
            "blobs_present": self.blobs_present,
            "blobs_downloaded": self.blobs_downloaded,
            "chunks_downloaded": self.chunks_downloaded,
            "bytes_downloaded": self.bytes_downloaded,
            "requests": self.requests,
            "request_count": sum(self.requests.values()),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class _Target:
    item: LocalManifest
    write: bool  # from the remote: write it to the manifests folder once its blobs are in


def pull(
    store: Store,
    remote: Remote | str,
    specs: Sequence[str] = (),
    *,
    everything: bool = False,
    force: bool = False,
    jobs: int = DEFAULT_JOBS,
    progress: Progress | None = None,
) -> PullReport:
    """Download what the local store lacks for some manifests, checking every byte.

    ``specs`` name packs on the remote (``repo.claude``), manifest files on this machine (a path
    to an existing file: only its blobs are fetched) or manifest digests (fetched from blobs/).
    With no specs: the manifests in the local manifests folder; with ``everything``: every
    manifest on the remote. A pulled manifest is written to the manifests folder (atomically,
    after its blobs are committed) unless a different local file of that name exists and
    ``force`` is off. Objects that are missing or fail their checks raise `RemoteRefused`
    naming them, after everything that passed has been committed.
    """
    if everything and specs:
        raise UsageError("name MANIFESTs or pass --all, not both")
    target = resolve_remote(store, remote)
    report = PullReport(target.name, target.url)
    # Under a lease, like a pack: blobs found present are not fetched again, so a gc must keep
    # off until the manifests that reference them are written.
    with session(target, jobs, report) as bucket, Lease(store, "pull") as lease:
        _Pull(store, bucket, jobs, Meter(progress), report, force, lease).run(specs, everything)
    return report


class _Pull:
    def __init__(
        self,
        store: Store,
        bucket: Bucket,
        jobs: int,
        meter: Meter,
        report: PullReport,
        force: bool,
        lease: Lease | None = None,
    ) -> None:
        self.store = store
        self.lease = lease
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report
        self.force = force
        self.problems: dict[Digest | str, str] = {}
        self.max_object = max_object(store)

    def run(self, specs: Sequence[str], everything: bool) -> None:
        targets = self._targets(specs, everything)
        content: set[Digest] = set()
        for t in targets:
            content |= t.item.manifest.digests()
        local = self.store.has_many(content)
        self.report.blobs_referenced = len(content)
        self.report.blobs_present = len(local)
        self.fetch(content - local)
        for t in targets:
            self._finish(t)
        if self.problems:
            raise RemoteRefused(
                self.bucket.remote.name,
                [(str(k), v) for k, v in sorted(self.problems.items(), key=lambda kv: str(kv[0]))],
            )

    # --- which manifests ----------------------------------------------------------------------

    def _targets(self, specs: Sequence[str], everything: bool) -> list[_Target]:
        self.bucket.check()
        if not specs and not everything:
            found = local_manifests(self.store, [], hint="name a MANIFEST, or pass --all")
            return [_Target(m, write=False) for m in found]
        names: list[str] = []
        locals_: list[str] = []
        digests: list[Digest] = []
        if everything:
            names, bad = remote_pack_names(self.bucket)
            self.problems.update(dict(bad))
        for spec in specs:
            if spec.startswith("blake3:"):
                digests.append(Digest.parse(spec))
            elif Path(spec).is_file():
                locals_.append(spec)
            else:
                names.append(check_pack_name(spec.removesuffix(PACK_SUFFIX), spec))
        targets = (
            [_Target(m, write=False) for m in local_manifests(self.store, locals_)]
            if locals_
            else []
        )
        fetched: dict[str, bytes | str | None] = {}
        self.meter.expect(len(names))

        def get(name: str) -> bytes | str | None:
            return fetch_manifest(self.bucket, name)

        def got(name: str, data: bytes | str | None) -> None:
            fetched[name] = data
            self.meter.moved(len(data) if isinstance(data, bytes) else 0)

        parallel(sorted(set(names)), get, jobs=self.jobs, on_done=got)
        for name in sorted(fetched, key=str.encode):
            data = fetched[name]
            key = MANIFESTS + name + PACK_SUFFIX
            if data is None:
                raise NotFound("pack", name, f"not on remote {self.bucket.remote.name!r}")
            if isinstance(data, str):
                self.problems[key] = data
                continue
            self.report.bytes_downloaded += len(data)
            try:
                manifest = mf.decode(data, key)
            except ManifestError as exc:
                self.problems[key] = f"not a valid manifest: {exc.problem}"
                continue
            targets.append(_Target(LocalManifest(name, data, Digest.of(data), manifest, key), True))
        if digests:
            # A manifest named by digest is a blob like any other: fetch and check it first.
            self.fetch(set(digests) - self.store.has_many(digests))
            for digest in digests:
                if digest in self.problems:
                    continue
                if not self.store.has(digest):
                    raise NotFound("pack", str(digest), "no such blob on the remote")
                data = self.store.get(digest)
                manifest = mf.decode(data, str(digest))
                name = check_pack_name(manifest.name, str(digest))
                targets.append(
                    _Target(LocalManifest(name, data, digest, manifest, str(digest)), True)
                )
        return targets

    # --- blobs and chunks -----------------------------------------------------------------------

    def fetch(self, wanted: set[Digest]) -> None:
        """Bring ``wanted`` blobs into the store; record a problem for each one that fails."""
        if not wanted:
            return
        store = self.store
        indexes: dict[Digest, bytes] = {}
        pending: list[tuple[Digest, bytes]] = []
        pending_bytes = 0
        self.meter.expect(len(wanted))

        def get_blob(digest: Digest) -> bytes | str:
            try:
                value = self.bucket.get(BLOBS + digest.hex(), max_size=self.max_object)
            except ObjectTooLarge as exc:
                return str(exc)
            if value is None:
                return "missing on the remote"
            try:
                store.check_frame(digest, value)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def got_blob(digest: Digest, result: bytes | str) -> None:
            nonlocal pending_bytes
            if isinstance(result, str):
                self.problems[digest] = result
                self.meter.moved(0)
                return
            self.meter.moved(len(result))
            self.report.bytes_downloaded += len(result)
            self.report.blobs_downloaded += 1
            if frame.header(result).codec == frame.INDEX:
                indexes[digest] = result
                return
            pending.append((digest, result))
            pending_bytes += len(result)
            if pending_bytes >= COMMIT_BYTES or len(pending) >= COMMIT_FRAMES:
                store.put_frames(pending)
                pending.clear()
                pending_bytes = 0

        parallel(sorted(wanted), get_blob, jobs=self.jobs, on_done=got_blob)
        if pending:
            store.put_frames(pending)
        if indexes:
            self._fetch_chunked(indexes)

    def _fetch_chunked(self, indexes: dict[Digest, bytes]) -> None:
        store = self.store
        users: dict[Digest, list[Digest]] = {}
        for digest, value in indexes.items():
            for chunk in frame.decode_index(value)[2]:
                owners = users.setdefault(chunk, [])
                if not owners or owners[-1] != digest:
                    owners.append(digest)
        wanted = sorted(set(users) - store.has_chunks(users))
        pending: list[tuple[Digest, bytes]] = []
        pending_bytes = 0
        failed: set[Digest] = set()
        self.meter.expect(len(wanted))

        def get_chunk(chunk: Digest) -> bytes | str:
            try:
                value = self.bucket.get(CHUNKS + chunk.hex(), max_size=self.max_object)
            except ObjectTooLarge as exc:
                return str(exc)
            if value is None:
                return "missing on the remote"
            try:
                store.check_frame(chunk, value, chunk=True)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def got_chunk(chunk: Digest, result: bytes | str) -> None:
            nonlocal pending_bytes
            if isinstance(result, str):
                for owner in users[chunk]:
                    failed.add(owner)
                    self.problems.setdefault(owner, f"chunk {chunk}: {result}")
                self.meter.moved(0)
                return
            self.meter.moved(len(result))
            self.report.bytes_downloaded += len(result)
            self.report.chunks_downloaded += 1
            pending.append((chunk, result))
            pending_bytes += len(result)
            if pending_bytes >= COMMIT_BYTES or len(pending) >= COMMIT_FRAMES:
                store.put_frames(chunks=pending)
                pending.clear()
                pending_bytes = 0

        parallel(wanted, get_chunk, jobs=self.jobs, on_done=got_chunk)
        if pending:
            store.put_frames(chunks=pending)
        for digest in sorted(indexes):
            if digest in failed:
                continue
            try:
                # Each index alone: the store re-reads its chunks and hashes the whole content.
                store.put_frames([(digest, indexes[digest])])
            except CorruptBlob as exc:
                self.problems[digest] = exc.problem

    # --- manifests ----------------------------------------------------------------------------

    def _finish(self, target: _Target) -> None:
        item = target.item
        needed = item.manifest.digests()
        bad = sorted(d for d in needed if d in self.problems)
        status = "complete"
        if bad or len(self.store.has_many(needed)) != len(needed):
            status = "incomplete"
        if status == "complete":
            self.store.put(item.data)
            if target.write:
                status = self._write(item)
        self.report.manifests.append(
            {"name": item.name, "digest": str(item.digest), "status": status}
        )

    def _write(self, item: LocalManifest) -> str:
        path = manifests_dir(self.store) / f"{item.name}{PACK_SUFFIX}"
        try:
            existing = path.read_bytes() if path.is_file() else None
        except OSError:
            existing = None
        if existing == item.data:
            return "unchanged"
        if existing is not None and not self.force:
            return "kept-local"
        if self.lease is not None:
            self.lease.check()
        try:
            atomic_write(path, item.data)
        except OSError as exc:
            raise InputError(str(path), exc.strerror or str(exc)) from None
        return "written"
