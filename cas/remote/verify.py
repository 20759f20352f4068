"""Verify a remote: every blob its manifests reference is there, and with --deep, intact.

Shallow: the manifests decode, every referenced blob (and each manifest's own blob) is listed,
and every chunk of every chunk index is listed; an object is downloaded only when its size could
be a chunk index. Deep: every referenced blob and chunk is downloaded and re-hashed, a chunked
blob's whole content included. Nothing is written anywhere.

Manifests are read one at a time and dropped once their digests (and the sizes they give) are
noted; chunk indexes are checked in batches of bounded size. A chunk index is held to the same
limits as by a pull (`cas.remote.layout`) before any of its chunks is fetched, and a deep check
fetches a chunk the index lists several times once, keeping its content (within a budget) for
the whole-blob hash.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import ClassVar, Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest, hasher
from cas.errors import CorruptBlob, ManifestError
from cas.events import ProgressSink
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import (
    chunk_sizes,
    claimed_sizes,
    fetch_manifest,
    index_problem,
    manifest_key,
    max_object,
    maybe_index,
    misnamed,
    remote_packs,
    size_problem,
)
from cas.remote.lock import USE, RemoteLock
from cas.remote.objects import (
    RANGE_MAX,
    Place,
    Range,
    RemoteObjects,
    fetch_one,
    pack_problems,
    plan_ranges,
)
from cas.remote.packfile import BLOB, CHUNK
from cas.remote.report import RemoteReport
from cas.remote.s3 import session
from cas.remote.storage import ObjectInfo, ObjectStorage
from cas.remote.transfer import DEFAULT_JOBS, Meter, ordered
from cas.store import Store

# Chunk indexes are checked in batches of at most this many bytes of index frames.
INDEX_BATCH_BYTES: Final = 32 << 20
# A deep check holds chunks in flight up to about this many bytes (at least two chunks)...
WINDOW_BYTES: Final = 128 << 20
# ...and keeps the content of chunks an index lists more than once up to this many bytes, so
# each is fetched once; beyond it, a repeated chunk is fetched (and checked) again.
REPEAT_BYTES: Final = 256 << 20


@dataclass(frozen=True, slots=True)
class RemoteProblem:
    kind: str  # "missing" | "corrupt"
    what: str  # a digest, or an object key
    detail: str


@dataclass
class RemoteVerifyReport(RemoteReport):
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("ok",)

    deep: bool
    manifests: int = 0
    blobs: int = 0
    chunks: int = 0
    bytes_downloaded: int = 0
    problems: list[RemoteProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_remote(
    store: Store,
    remote: Remote | str,
    deep: bool = False,
    *,
    jobs: int = DEFAULT_JOBS,
    progress: ProgressSink | None = None,
    storage: ObjectStorage | None = None,
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
    with session(target, jobs, report, storage) as bucket:
        _Verify(store, bucket, jobs, Meter("verify", progress), report).run()
    report.problems.sort(key=lambda p: (p.what, p.kind, p.detail))
    return report


class _Verify:
    def __init__(
        self,
        store: Store,
        bucket: ObjectStorage,
        jobs: int,
        meter: Meter,
        report: RemoteVerifyReport,
    ) -> None:
        self.store = store
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report
        self.max_object = max_object(store)
        self.max_blob = bucket.settings.max_blob
        self.objects = RemoteObjects(bucket, jobs=jobs)

    def problem(self, kind: str, what: str, detail: str) -> None:
        self.report.problems.append(RemoteProblem(kind, what, detail))

    def run(self) -> None:
        self.bucket.check()
        with RemoteLock(self.bucket, USE, "verify"):
            self._run()

    def _run(self) -> None:
        self.objects.load()
        for key, why in self.objects.problems:
            self.problem("corrupt", key, why)
        listed, bad = remote_packs(self.bucket)
        for key, why in bad:
            self.problem("corrupt", key, why)
        claims = self._manifests(list(listed))
        packed, loose = self.objects.locate(BLOB, claims)
        broken = pack_problems(self.objects, packed.values())
        sizes: dict[Digest, int] = {}
        for digest in sorted(claims):
            place = packed.get(digest)
            if place is not None and place.pack in broken:
                self.problem("missing", str(digest), broken[place.pack])
            elif place is not None:
                sizes[digest] = place.length
            elif digest in loose:
                sizes[digest] = loose[digest].size
            else:
                self.problem("missing", str(digest), "not on the remote")
        self.report.blobs = len(sizes)
        wanted = sorted(d for d, size in sizes.items() if self.report.deep or maybe_index(size))
        self._blobs(wanted, claims, (packed, loose))

    def _manifests(self, names: list[str]) -> dict[Digest, int | None]:
        """Every blob the manifests reference, with the size they give it (None: none given),
        reading one manifest at a time."""
        claims: dict[Digest, int | None] = {}
        for name in names:
            key = manifest_key(name)
            data = fetch_manifest(self.bucket, name)
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
            wrong = misnamed(manifest, name)
            if wrong is not None:
                self.problem("corrupt", key, wrong)
            self.report.manifests += 1
            sizes, conflicts = claimed_sizes(manifest)
            for digest, why in sorted(conflicts.items()):
                self.problem("corrupt", str(digest), why)
            own = Digest.of(data)
            sizes[own] = len(data)
            for digest in manifest.digests() | {own}:
                self._claim(claims, digest, sizes.get(digest))
            del data, manifest  # one manifest at a time
        return claims

    def _claim(self, claims: dict[Digest, int | None], digest: Digest, size: int | None) -> None:
        known = claims.get(digest)
        if known is None:
            claims[digest] = size
        elif size is not None and size != known:
            self.problem("corrupt", str(digest), f"manifests give it {known} and {size} bytes")

    def _blobs(
        self,
        wanted: list[Digest],
        claims: dict[Digest, int | None],
        located: tuple[dict[Digest, Place], dict[Digest, ObjectInfo]],
    ) -> None:
        """Download ``wanted`` blobs and check each; then the chunks of the chunk indexes, in
        batches of bounded size."""
        indexes: dict[Digest, bytes] = {}
        index_bytes = 0
        self.meter.expect(len(wanted))

        def check(digest: Digest, value: bytes) -> bytes | str:
            why = size_problem(value, claims.get(digest)) or index_problem(value, self.max_blob)
            if why is not None:
                return why
            try:
                self.store.check_frame(digest, value)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def got(digest: Digest, result: bytes | str, nbytes: int) -> None:
            nonlocal index_bytes
            self.meter.moved(nbytes)
            self.report.bytes_downloaded += nbytes
            if isinstance(result, str):
                kind = "missing" if "missing" in result or "vanished" in result else "corrupt"
                self.problem(kind, str(digest), result)
            elif frame.header(result).codec == frame.INDEX:
                indexes[digest] = result
                index_bytes += len(result)
                if index_bytes >= INDEX_BATCH_BYTES:
                    self._indexes(indexes)
                    indexes.clear()
                    index_bytes = 0

        chosen = set(wanted)
        self.objects.fetch(
            BLOB,
            wanted,
            max_size=self.max_object,
            check=check,
            done=got,
            located=(
                {d: p for d, p in located[0].items() if d in chosen},
                {d: o for d, o in located[1].items() if d in chosen},
            ),
        )
        if indexes:
            self._indexes(indexes)

    def _indexes(self, indexes: dict[Digest, bytes]) -> None:
        shapes: dict[Digest, tuple[list[Digest], dict[Digest, int]]] = {}
        for digest in sorted(indexes):
            shape = chunk_sizes(indexes[digest])
            if isinstance(shape, str):
                self.problem("corrupt", str(digest), shape)
            else:
                shapes[digest] = shape
        if self.report.deep:
            for digest, (chunks, needs) in shapes.items():
                self._deep_index(digest, chunks, needs)
        else:
            self._listed_chunks(shapes)

    def _listed_chunks(self, shapes: dict[Digest, tuple[list[Digest], dict[Digest, int]]]) -> None:
        every = {c for _chunks, needs in shapes.values() for c in needs}
        packed, loose = self.objects.locate(CHUNK, every)
        broken = pack_problems(self.objects, packed.values())
        self.report.chunks += len(packed) + len(loose)
        for digest, (chunks, _needs) in shapes.items():
            for chunk in chunks:
                place = packed.get(chunk)
                if place is not None and place.pack in broken:
                    self.problem("missing", str(digest), f"chunk {chunk}: {broken[place.pack]}")
                    break
                if place is None and chunk not in loose:
                    self.problem("missing", str(digest), f"chunk {chunk} is not on the remote")
                    break

    def _deep_index(self, digest: Digest, chunks: list[Digest], needs: dict[Digest, int]) -> None:
        """Fetch and check each chunk of one index, then hash the whole content in order.

        The chunks are read in their order, neighbours in one pack by one ranged GET (as a pull
        reads them), with at most about `WINDOW_BYTES` in flight. A chunk listed more than once
        is fetched once while its content fits `REPEAT_BYTES`, and again where it recurs beyond
        that."""
        repeats = Counter(chunks)
        first = list(dict.fromkeys(chunks))
        packed = self.objects.packed(CHUNK, first)  # the rest: one request each, as before
        reads: list[Range | Digest] = []  # in order of first use: a range, or one chunk alone
        run: list[tuple[Digest, Place]] = []
        for chunk in first:
            place = packed.get(chunk)
            if place is not None and place.length <= self.max_object:
                run.append((chunk, place))
                continue
            reads += plan_ranges(run)
            run = []
            reads.append(chunk)
        reads += plan_ranges(run)
        largest = max([RANGE_MAX, *(p.length for p in packed.values())])
        window = max(2, min(self.jobs * 2, WINDOW_BYTES // largest))

        def read(item: Range | Digest) -> list[tuple[Digest, bytes | str, int]]:
            if isinstance(item, Range):
                return self.objects.read_range(
                    item, lambda c, v: self._checked_chunk(c, v, needs[c])
                )
            nbytes, result = self._chunk_content(item, needs[item])
            return [(item, result, nbytes)]

        kept: dict[Digest, bytes] = {}
        budget = REPEAT_BYTES
        whole = hasher()
        why = ""
        arrived: deque[tuple[Digest, bytes | str, int]] = deque()
        stream = ordered(reads, read, jobs=self.jobs, window=window)
        self.meter.expect(len(first))
        seen: set[Digest] = set()
        try:
            for chunk in chunks:
                if chunk in seen:
                    content = kept.get(chunk)
                    if content is None:
                        nbytes, again = self._chunk_content(chunk, needs[chunk])
                        self.report.bytes_downloaded += nbytes
                        if isinstance(again, str):
                            why = f"chunk {chunk}: {again}"
                            break
                        content = again
                    whole.update(content)
                    continue
                seen.add(chunk)
                while not arrived:
                    arrived.extend(next(stream)[1])
                got, result, nbytes = arrived.popleft()
                assert got == chunk, (got, chunk)  # reads follow the order of first use
                self.report.bytes_downloaded += nbytes
                self.report.chunks += 1
                self.meter.moved(nbytes)
                if isinstance(result, str):
                    why = f"chunk {chunk}: {result}"
                    break
                if repeats[chunk] > 1 and len(result) <= budget:
                    kept[chunk] = result
                    budget -= len(result)
                whole.update(result)
        finally:
            stream.close()
        if why:
            kind = "missing" if why.endswith("not on the remote") else "corrupt"
            self.problem(kind, str(digest), why)
        elif Digest(whole.digest()) != digest:
            self.problem("corrupt", str(digest), "its chunks do not hash to its digest")

    def _chunk_content(self, chunk: Digest, need: int) -> tuple[int, bytes | str]:
        """(bytes downloaded, the chunk's checked content or what is wrong with it), by a
        request of its own."""
        value = fetch_one(self.objects, CHUNK, chunk, max_size=self.max_object)
        if isinstance(value, str):
            return 0, value
        if value is None:
            return 0, "not on the remote"
        return len(value), self._checked_chunk(chunk, value, need)

    def _checked_chunk(self, chunk: Digest, value: bytes, need: int) -> bytes | str:
        """The chunk's content, or what is wrong with it. A chunk that does not hold ``need``
        bytes, what its place in the index needs, is refused undecoded."""
        try:
            held = frame.header(value).raw_size
            if held != need:
                return f"holds {held} bytes where its place in the index needs {need}"
            self.store.check_frame(chunk, value, chunk=True)
        except (CorruptBlob, frame.FrameError) as exc:
            return getattr(exc, "problem", str(exc))
        return frame.decode(value)
