"""Remote gc: remove what no manifest on the remote references, and repack sparse packs.

``cas gc --remote NAME`` runs under a gc lock object (`cas.remote.lock`): no push, pull or
remote verify runs beside it, and two gcs never run together. It reads every manifest on the
remote (the roots: what they reference, and each manifest's own blob, is live, with the chunks
of live chunked blobs), every index object, and the listings of ``packs/`` and of the loose
folders of older remotes. Then, for each pack:

* written within the grace period: kept as it is, every entry too (nothing young is judged);
* named by no index object (a push killed before its index): deleted;
* holding no live frame: deleted;
* live bytes under `REPACK_BELOW` of its size: its live frames are copied into new packs;
* otherwise kept, its dead entries dropped from the index.

Live loose objects (older remotes) are moved into packs the same way, which is how an older
remote is migrated; dead or already-packed loose objects are deleted. Every frame copied is
fetched and checked like a pull checks it, before it goes into a new pack.

Order is what makes a gc killed at any moment safe: new packs first; then one index object
naming every live frame (kept packs and new ones); then the old index objects are deleted; then
the packs and loose objects nothing names any more. Until the new index exists the old ones
name everything as before; after, both are valid; a pack left behind is named by no index and a
later gc removes it. The gc refuses, deleting nothing, when a manifest cannot be read, an index
object is damaged, or a live frame is missing or fails its check: it never guesses what is live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest
from cas.errors import CorruptBlob, ManifestError, RemoteGcRefused
from cas.events import ProgressSink
from cas.remote.config import Remote, resolve_remote
from cas.remote.layout import (
    fetch_manifest,
    manifest_key,
    max_object,
    maybe_index,
    remote_packs,
)
from cas.remote.lock import GC, RemoteLock
from cas.remote.objects import (
    INDEXES,
    LOOSE,
    PACKS,
    PackUploader,
    Place,
    RemoteObjects,
    is_hex,
)
from cas.remote.packfile import BLOB, CHUNK, KIND_NAMES, Entry, encode_index
from cas.remote.report import RemoteReport
from cas.remote.s3 import session
from cas.remote.storage import ObjectInfo, ObjectStorage
from cas.remote.transfer import DEFAULT_JOBS, Meter
from cas.store import Store

# A pack whose live frames fill less than this share of it is rewritten.
REPACK_BELOW: Final = 0.5
DEFAULT_GRACE_S: Final = 3600.0

Key = tuple[int, Digest]


@dataclass
class RemoteGcReport(RemoteReport):
    dry_run: bool
    grace_s: float
    manifests: int = 0
    live_blobs: int = 0
    live_chunks: int = 0
    packs_before: int = 0
    packs_after: int = 0
    packs_deleted: int = 0
    packs_repacked: int = 0
    packs_written: int = 0
    frames_copied: int = 0
    loose_packed: int = 0
    loose_deleted: int = 0
    indexes_replaced: int = 0
    kept_by_grace: int = 0
    bytes_before: int = 0
    bytes_freed: int = 0
    stale_locks: int = 0


def collect_remote(
    store: Store,
    remote: Remote | str,
    *,
    grace_s: float = DEFAULT_GRACE_S,
    dry_run: bool = False,
    keep: Sequence[Digest] = (),
    jobs: int = DEFAULT_JOBS,
    progress: ProgressSink | None = None,
    storage: ObjectStorage | None = None,
) -> RemoteGcReport:
    """Remove from the remote what none of its manifests (nor ``keep``) references, once older
    than ``grace_s``; repack packs mostly dead. ``store`` supplies the remote's record and the
    frame checks; nothing is written to it."""
    target = resolve_remote(store, remote)
    report = RemoteGcReport(target.name, target.url, dry_run, grace_s)
    with session(target, jobs, report, storage) as bucket:
        bucket.check()
        with RemoteLock(bucket, GC, "gc") as lock:
            report.stale_locks = len(lock.stale)
            _Gc(store, bucket, jobs, Meter("gc", progress), report, lock.server_now).run(keep)
    return report


@dataclass(slots=True)
class _Pack:
    info: ObjectInfo | None  # None: an index names it but it is not listed
    entries: list[tuple[Key, Place]] = field(default_factory=list)


class _Gc:
    def __init__(
        self,
        store: Store,
        bucket: ObjectStorage,
        jobs: int,
        meter: Meter,
        report: RemoteGcReport,
        server_now: float,
    ) -> None:
        self.store = store
        self.bucket = bucket
        self.jobs = jobs
        self.meter = meter
        self.report = report
        self.cutoff = server_now - report.grace_s
        self.objects = RemoteObjects(bucket, jobs=jobs)
        self.max_object = max_object(store)

    def refuse(self, why: str) -> RemoteGcRefused:
        return RemoteGcRefused(self.bucket.remote.name, why)

    def young(self, info: ObjectInfo) -> bool:
        return info.modified > self.cutoff

    # --- what is live ---------------------------------------------------------------------------

    def _roots(self) -> set[Digest]:
        listed, bad = remote_packs(self.bucket)
        if bad:
            key, why = bad[0]
            raise self.refuse(f"{key}: {why} (rename or delete it)")
        live: set[Digest] = set()
        for name in listed:
            key = manifest_key(name)
            data = fetch_manifest(self.bucket, name)
            if data is None:
                raise self.refuse(f"{key} vanished while gc read it")
            if isinstance(data, str):
                raise self.refuse(f"{key}: {data}")
            try:
                manifest = mf.decode(data, key)
            except ManifestError as exc:
                raise self.refuse(f"{key} is not a valid manifest: {exc.problem}") from None
            live |= manifest.digests()
            live.add(Digest.of(data))
            self.report.manifests += 1
        return live

    def _live_chunks(self, live: set[Digest]) -> set[Digest]:
        """The chunks every live chunked blob lists (each candidate frame fetched and checked;
        one that cannot be read stops the gc)."""
        packed, loose = self.objects.locate(BLOB, live)
        missing = live - packed.keys() - loose.keys()
        if missing:
            first = min(missing)
            raise self.refuse(
                f"{len(missing)} live blobs are not on the remote ({first} first): run "
                "'cas remote verify' and push them again"
            )
        candidates = {d for d, p in packed.items() if maybe_index(p.length)}
        candidates |= {d for d, o in loose.items() if maybe_index(o.size)}
        chunks: set[Digest] = set()
        failed: list[tuple[Digest, str]] = []

        def check(digest: Digest, value: bytes) -> bytes | str:
            try:
                self.store.check_frame(digest, value)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def done(digest: Digest, result: bytes | str, _nbytes: int) -> None:
            if isinstance(result, str):
                failed.append((digest, result))
            elif frame.header(result).codec == frame.INDEX:
                chunks.update(frame.decode_index(result)[2])

        self.objects.fetch(
            BLOB,
            candidates,
            max_size=self.max_object,
            check=check,
            done=done,
            located=(
                {d: packed[d] for d in candidates if d in packed},
                {d: loose[d] for d in candidates if d in loose},
            ),
        )
        if failed:
            digest, why = min(failed)
            raise self.refuse(f"live blob {digest}: {why} (run 'cas remote verify')")
        return chunks

    # --- the plan and its execution -------------------------------------------------------------

    def run(self, keep: Sequence[Digest]) -> None:
        report = self.report
        live_blobs = self._roots() | set(keep)
        self.objects.load()
        if self.objects.problems:
            where, why = self.objects.problems[0]
            raise self.refuse(f"{where}: {why} (run 'cas remote verify')")
        live_chunks = self._live_chunks(live_blobs)
        missing_chunks = live_chunks - self.objects.present(CHUNK, live_chunks)
        if missing_chunks:
            raise self.refuse(
                f"{len(missing_chunks)} chunks of live blobs are not on the remote "
                f"({min(missing_chunks)} first): run 'cas remote verify'"
            )
        report.live_blobs = len(live_blobs)
        report.live_chunks = len(live_chunks)
        live: set[Key] = {(BLOB, d) for d in live_blobs} | {(CHUNK, d) for d in live_chunks}

        packs = self._packs()
        report.packs_before = sum(1 for p in packs.values() if p.info is not None)
        report.bytes_before = sum(p.info.size for p in packs.values() if p.info is not None)
        canonical = self.objects.places
        keep_entries: list[tuple[Key, Place]] = []
        copy: dict[Key, Place] = {}
        dead_packs: list[Digest] = []
        for name in sorted(packs):
            pack = packs[name]
            info = pack.info
            if info is None:
                # Named by an index, not on the remote: only dead entries may lie there.
                lost = [k for k, p in pack.entries if k in live and canonical.get(k) == p]
                if lost:
                    kind, digest = lost[0]
                    raise self.refuse(
                        f"{KIND_NAMES[kind]} {digest} lies in pack {name.hex()[:16]}, which "
                        "is not on the remote (run 'cas remote verify')"
                    )
                continue
            if self.young(info):
                report.kept_by_grace += 1
                keep_entries += pack.entries
                continue
            mine = [(k, p) for k, p in pack.entries if k in live and canonical.get(k) == p]
            live_bytes = sum(p.length for _k, p in mine)
            if not mine:
                dead_packs.append(name)
            elif live_bytes < REPACK_BELOW * info.size:
                dead_packs.append(name)
                report.packs_repacked += 1
                copy.update(mine)
            else:
                keep_entries += mine
        report.packs_deleted = len(dead_packs) - report.packs_repacked

        # Loose objects of older remotes: the live ones not packed move into packs.
        loose_dead: list[str] = []
        loose_copy: dict[Key, ObjectInfo] = {}
        for loose_kind, folder in sorted(LOOSE.items()):
            for obj in self.bucket.list_all(folder):
                if not is_hex(obj.name):
                    continue  # not a name cas writes: left alone
                key = (loose_kind, Digest(bytes.fromhex(obj.name)))
                if key in live and key not in canonical:
                    loose_copy[key] = obj
                elif self.young(obj):
                    report.kept_by_grace += 1
                else:
                    loose_dead.append(folder + obj.name)
                    report.bytes_freed += obj.size
        report.loose_packed = len(loose_copy)
        report.loose_deleted = len(loose_dead)
        report.bytes_freed += sum(_size(packs[n]) for n in dead_packs)
        changed = bool(dead_packs or loose_copy or loose_dead) or len(self.objects.indexes) > 1
        report.frames_copied = len(copy) + len(loose_copy)
        if report.dry_run or not changed:
            report.packs_after = report.packs_before - len(dead_packs)
            return

        uploader = PackUploader(
            self.bucket,
            jobs=self.jobs,
            target=self.bucket.settings.pack_size,
            write_index=False,
        )
        try:
            self._copy(uploader, copy, loose_copy)
            uploader.finish()
        except BaseException:
            uploader.abandon()
            raise
        report.packs_written = len(uploader.packs)
        # A pack is named by its bytes: one a killed gc uploaded (and no index named) is written
        # again, byte for byte, by the gc that finishes its work. It is live now, not dead.
        written = set(uploader.packs)
        again = [n for n in dead_packs if n in written]
        if again:
            report.packs_deleted -= sum(1 for n in again if not packs[n].entries)
            report.packs_repacked -= sum(1 for n in again if packs[n].entries)
            report.bytes_freed -= sum(_size(packs[n]) for n in again)
            dead_packs = [n for n in dead_packs if n not in written]
        report.packs_after = (
            report.packs_before
            - len(dead_packs)
            + len(written - {n for n, p in packs.items() if p.info is not None})
        )

        # One index naming every frame kept, then the old indexes go, then what nothing names.
        pack_names = sorted({p.pack for _k, p in keep_entries})
        number = {n: i for i, n in enumerate(pack_names)}
        entries = [Entry(k[0], k[1], number[p.pack], p.offset, p.length) for k, p in keep_entries]
        base = len(pack_names)
        entries += [
            Entry(e.kind, e.digest, e.pack + base, e.offset, e.length) for e in uploader.entries
        ]
        all_packs = [*pack_names, *uploader.packs]
        old = [INDEXES + info.name for info in self.objects.indexes]
        if entries:
            data = encode_index(all_packs, entries)
            fresh = INDEXES + Digest.of(data).hex()
            self.bucket.put(fresh, data)
            old = [key for key in old if key != fresh]
        self.bucket.delete(old)
        report.indexes_replaced = len(old)
        self.bucket.delete([PACKS + n.hex() for n in dead_packs] + loose_dead)
        self.bucket.delete([LOOSE[k[0]] + k[1].hex() for k in sorted(loose_copy)])

    def _packs(self) -> dict[Digest, _Pack]:
        """Every pack, listed or named by an index, with every entry any index gives it."""
        packs: dict[Digest, _Pack] = {}
        for info in self.bucket.list_all(PACKS):
            if is_hex(info.name):  # anything else is not a name cas writes: left alone
                packs[Digest(bytes.fromhex(info.name))] = _Pack(info)
        for _info, table in self.objects.tables:
            for e in table.entries:
                pack = packs.setdefault(table.packs[e.pack], _Pack(None))
                pack.entries.append(
                    ((e.kind, e.digest), Place(table.packs[e.pack], e.offset, e.length))
                )
        return packs

    def _copy(
        self,
        uploader: PackUploader,
        packed: dict[Key, Place],
        loose: dict[Key, ObjectInfo],
    ) -> None:
        """Fetch, check and add to new packs every frame to copy (chunks, then blobs)."""
        self.meter.expect(len(packed) + len(loose))
        for kind in (CHUNK, BLOB):
            self._copy_kind(
                uploader,
                kind,
                {d: p for (k, d), p in packed.items() if k == kind},
                {d: o for (k, d), o in loose.items() if k == kind},
            )

    def _copy_kind(
        self,
        uploader: PackUploader,
        kind: int,
        packed: dict[Digest, Place],
        loose: dict[Digest, ObjectInfo],
    ) -> None:
        want = sorted(packed.keys() | loose.keys())
        if not want:
            return
        failed: list[tuple[Digest, str]] = []

        def check(digest: Digest, value: bytes) -> bytes | str:
            try:
                self.store.check_frame(digest, value, chunk=kind == CHUNK)
            except CorruptBlob as exc:
                return exc.problem
            return value

        def done(digest: Digest, result: bytes | str, nbytes: int) -> None:
            self.meter.moved(nbytes)
            if isinstance(result, str):
                failed.append((digest, result))
            elif not failed:
                uploader.add(kind, digest, result)

        self.objects.fetch(
            kind, want, max_size=self.max_object, check=check, done=done, located=(packed, loose)
        )
        if failed:
            digest, why = min(failed)
            raise self.refuse(f"live {KIND_NAMES[kind]} {digest}: {why}")


def _size(pack: _Pack) -> int:
    return pack.info.size if pack.info is not None else 0
