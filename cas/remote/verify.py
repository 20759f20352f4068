"""Verify a remote: every blob its manifests reference is there, and with --deep, intact.

Shallow: the manifests decode, every referenced blob (and each manifest's own blob) is listed,
and every chunk of every chunk index is listed; an object is downloaded only when its size could
be a chunk index. Deep: every referenced blob and chunk is downloaded and re-hashed, a chunked
blob's whole content included. Nothing is written anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cas import frame
from cas import manifest as mf
from cas.digest import Digest, hasher
from cas.errors import CorruptBlob, ManifestError
from cas.progress import Progress
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import (
    BLOBS,
    CHUNKS,
    MANIFESTS,
    PACK_SUFFIX,
    fetch_manifest,
    hexes,
    index_chunks,
    max_object,
    maybe_index,
    remote_pack_names,
    seek_listing,
)
from cas.remote.s3 import Bucket, ObjectInfo, ObjectTooLarge, session
from cas.remote.transfer import DEFAULT_JOBS, Meter, ordered, parallel
from cas.store import Store


@dataclass(frozen=True, slots=True)
class RemoteProblem:
    kind: str  # "missing" | "corrupt"
    what: str  # a digest, or an object key
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "what": self.what, "detail": self.detail}


@dataclass
class RemoteVerifyReport:
    remote: str
    url: str
    deep: bool
    manifests: int = 0
    blobs: int = 0
    chunks: int = 0
    bytes_downloaded: int = 0
    problems: list[RemoteProblem] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "deep": self.deep,
            "ok": self.ok,
            "manifests": self.manifests,
            "blobs": self.blobs,
            "chunks": self.chunks,
            "bytes_downloaded": self.bytes_downloaded,
            "problems": [p.as_json() for p in self.problems],
            "requests": self.requests,
            "request_count": sum(self.requests.values()),
            "seconds": round(self.seconds, 3),
        }


def verify_remote(
    store: Store,
    remote: Remote | str,
    deep: bool = False,
    *,
    jobs: int = DEFAULT_JOBS,
    progress: Progress | None = None,
) -> RemoteVerifyReport:
    """Check that every blob the remote's manifests reference is on the remote.

    Shallow: the manifests decode, every referenced blob (and each manifest's own blob) is
    listed, and every chunk of every chunk index is listed; an object is downloaded only when
    its size could be a chunk index. Deep: every referenced blob and chunk is downloaded and
    re-hashed, a chunked blob's whole content included. ``store`` supplies the configuration
    and the limits; nothing is written to it.
    """
    target = resolve_remote(store, remote)
    report = RemoteVerifyReport(target.name, target.url, deep)
    with session(target, jobs, report) as bucket:
        _Verify(store, bucket, jobs, Meter(progress), report).run()
    report.problems.sort(key=lambda p: (p.what, p.kind, p.detail))
    return report


class _Verify:
    def __init__(
        self, store: Store, bucket: Bucket, jobs: int, meter: Meter, report: RemoteVerifyReport
    ) -> None:
        self.store = store
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report
        self.max_object = max_object(store)

    def problem(self, kind: str, what: str, detail: str) -> None:
        self.report.problems.append(RemoteProblem(kind, what, detail))

    def run(self) -> None:
        self.bucket.check()
        names, bad = remote_pack_names(self.bucket)
        for key, why in bad:
            self.problem("corrupt", key, why)
        referenced = self._manifests(names)
        listing = seek_listing(self.bucket, BLOBS, hexes(referenced))
        present: dict[Digest, ObjectInfo] = {}
        for digest in sorted(referenced):
            info = listing.get(digest.hex())
            if info is None:
                self.problem("missing", str(digest), "not on the remote")
            else:
                present[digest] = info
        self.report.blobs = len(present)
        wanted = sorted(
            d for d, info in present.items() if self.report.deep or maybe_index(info.size)
        )
        indexes = self._blobs(wanted)
        if self.report.deep:
            self._deep_chunks(indexes)
        else:
            self._listed_chunks(indexes)

    def _manifests(self, names: list[str]) -> set[Digest]:
        referenced: set[Digest] = set()
        found: dict[str, bytes | str | None] = {}

        def get(name: str) -> bytes | str | None:
            return fetch_manifest(self.bucket, name)

        def got(name: str, data: bytes | str | None) -> None:
            found[name] = data

        parallel(names, get, jobs=self.jobs, on_done=got)
        for name in names:
            key = MANIFESTS + name + PACK_SUFFIX
            data = found.get(name)
            if data is None:
                self.problem("missing", key, "listed but gone")
                continue
            if isinstance(data, str):
                self.problem("corrupt", key, data)
                continue
            self.report.bytes_downloaded += len(data)
            try:
                manifest = mf.decode(data, key)
            except ManifestError as exc:
                self.problem("corrupt", key, f"not a valid manifest: {exc.problem}")
                continue
            self.report.manifests += 1
            referenced |= manifest.digests()
            referenced.add(Digest.of(data))
        return referenced

    def _blobs(self, wanted: list[Digest]) -> dict[Digest, list[Digest]]:
        """Download ``wanted`` blobs, check each; return the chunk lists of the indexes."""
        indexes: dict[Digest, list[Digest]] = {}
        self.meter.expect(len(wanted))

        def get(digest: Digest) -> tuple[bytes | None, str]:
            try:
                value = self.bucket.get(BLOBS + digest.hex(), max_size=self.max_object)
            except ObjectTooLarge as exc:
                return b"", str(exc)
            if value is None:
                return None, "vanished while verifying"
            try:
                self.store.check_frame(digest, value)
            except CorruptBlob as exc:
                return value, exc.problem
            return value, ""

        def got(digest: Digest, result: tuple[bytes | None, str]) -> None:
            value, why = result
            self.meter.moved(len(value or b""))
            self.report.bytes_downloaded += len(value or b"")
            if value is None:
                self.problem("missing", str(digest), why)
            elif why:
                self.problem("corrupt", str(digest), why)
            else:
                listed = index_chunks(value)
                if listed is not None:
                    indexes[digest] = listed

        parallel(wanted, get, jobs=self.jobs, on_done=got)
        return indexes

    def _listed_chunks(self, indexes: dict[Digest, list[Digest]]) -> None:
        every = {c for chunks in indexes.values() for c in chunks}
        listing = seek_listing(self.bucket, CHUNKS, hexes(every))
        self.report.chunks = len(listing)
        for digest in sorted(indexes):
            for chunk in indexes[digest]:
                if chunk.hex() not in listing:
                    self.problem("missing", str(digest), f"chunk {chunk} is not on the remote")
                    break

    def _deep_chunks(self, indexes: dict[Digest, list[Digest]]) -> None:
        for digest in sorted(indexes):
            chunks = indexes[digest]
            self.meter.expect(len(chunks))
            whole = hasher()
            why = ""
            for chunk, (nbytes, result) in ordered(chunks, self._chunk_content, self.jobs):
                self.meter.moved(nbytes)
                self.report.bytes_downloaded += nbytes
                if isinstance(result, str):
                    why = f"chunk {chunk}: {result}"
                    break
                whole.update(result)
                self.report.chunks += 1
            if why:
                kind = "missing" if why.endswith("not on the remote") else "corrupt"
                self.problem(kind, str(digest), why)
            elif Digest(whole.digest()) != digest:
                self.problem("corrupt", str(digest), "its chunks do not hash to its digest")

    def _chunk_content(self, chunk: Digest) -> tuple[int, bytes | str]:
        """(bytes downloaded, the chunk's checked content or what is wrong with it)."""
        try:
            value = self.bucket.get(CHUNKS + chunk.hex(), max_size=self.max_object)
        except ObjectTooLarge as exc:
            return 0, str(exc)
        if value is None:
            return 0, "not on the remote"
        try:
            self.store.check_frame(chunk, value, chunk=True)
        except CorruptBlob as exc:
            return len(value), exc.problem
        return len(value), frame.decode(value)
