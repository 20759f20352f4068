"""verify: the roots decode, and every blob they reach is present and re-hashes to its digest.

What is checked, per target:

* a manifest file: it reads, decodes as a manifest of a known format (canonical bytes), and its
  own copy is in the store (stored under the digest of the file's bytes, so a copy that
  re-hashes is byte-for-byte the file);
* every blob a manifest or pin references (contents and summaries), and with ``all_blobs`` every
  blob in the store: its frame decodes, each chunk of a chunked blob is present and re-hashes to
  its own digest and still holds a reference count (else gc would sweep it), the whole content
  re-hashes to the blob's digest, and its metadata record agrees on the size.

Fails closed: anything that cannot be checked is a problem or an error, never a pass. Blobs are
read in short read transactions (one per frame or chunk, so a long verify never pins an old
snapshot and the file does not grow under it; small blobs in groups), by one worker thread
while this one keeps the report: the chunks of a large blob are read ahead in threads of their
own (BLAKE3 and zstd release the GIL), and a second group worker measured slower, not faster,
on small blobs, whose checking is Python that holds the GIL. At most a few chunks are held.
The stalest go first: the store keeps the time each blob last passed (`Store.last_verified`), so
a run cut short by ``max_duration_s`` resumes where it matters most.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Final

from cas import frame, locate, textindex
from cas import roots as roots_mod
from cas.digest import Digest
from cas.errors import CasError, CorruptBlob, NotFound, StoreDamaged, UsageError
from cas.events import ProgressSink, emit
from cas.reader import BlobReader
from cas.report import json_rule
from cas.store import Store
from cas.threads import Threads

# Verified times are written every so many seconds (one commit each, with no read in flight),
# or once this many passes are held.
_RECORD_SECONDS: Final = 2.0
_RECORD_MAX: Final = 1 << 16
_GROUP_BLOBS: Final = 64
_GROUP_BYTES: Final = 4 << 20
# Content of the groups in flight at once (a group larger than this still goes, alone).
_WINDOW_BYTES: Final = 32 << 20


@dataclass(frozen=True, slots=True)
class Problem:
    # "blake3:..." or "" when there is none (an unreadable file, a missing folder): JSON null
    digest: str = field(metadata=json_rule(convert=lambda d: d or None))
    what: str
    manifests: tuple[str, ...] = ()

    def line(self) -> str:
        by = f"  (referenced by: {', '.join(self.manifests)})" if self.manifests else ""
        return f"{self.digest or '-'}  {self.what}{by}"


@dataclass(slots=True)
class VerifyReport:
    """What a verify checked and found; `cas.report.report_json` gives its JSON."""

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("ok",)
    problems: list[Problem] = field(default_factory=list)
    manifests: int = 0
    pins: int = 0
    checked: int = 0
    bytes_checked: int = 0
    not_reached: int = 0
    outside_subset: int = 0
    # Blobs only --all listed, removed by a concurrent gc before their turn: not a problem.
    vanished: int = 0
    seconds: float = 0.0
    subset: tuple[int, int] | None = field(
        default=None, metadata=json_rule(convert=lambda s: f"{s[0]}/{s[1]}" if s else None)
    )
    recorded: bool = False
    # The search index beside the store (a cache: what is wrong there is a note, never a
    # problem of the store): "sound", "absent", or what was set aside.
    search_index: str = "absent"

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(slots=True)
class _Plan:
    referrers: dict[Digest, set[str]] = field(default_factory=dict)
    own: set[Digest] = field(default_factory=set)  # manifests' own copies
    listed_only: set[Digest] = field(default_factory=set)  # reached only by --all

    def want(self, digest: Digest, label: str | None = None) -> None:
        labels = self.referrers.setdefault(digest, set())
        if label is not None:
            labels.add(label)


def in_subset(digest: Digest, subset: tuple[int, int] | None) -> bool:
    """Slice N of T (1-based): the digests whose first 8 bytes are N-1 modulo T."""
    if subset is None:
        return True
    n, t = subset
    return int.from_bytes(digest[:8], "big") % t == n - 1


def verify(
    store: Store,
    targets: Sequence[str] = (),
    *,
    all_blobs: bool = False,
    extra_dirs: Iterable[str | os.PathLike[str]] = (),
    project_dir: str | os.PathLike[str] | None = None,
    subset: tuple[int, int] | None = None,
    max_duration_s: float | None = None,
    workers: int | None = None,
    record: bool = True,
    progress: ProgressSink | None = None,
) -> VerifyReport:
    """Check ``targets`` (manifest files, pack names, digests), or with none every root; with
    ``all_blobs`` every blob in the store as well. ``project_dir`` is the manifests folder of
    the project verify runs in: its packs are roots too (a store may serve many projects), and
    a pack name is looked up there first. Never raises for what it finds in blobs and
    manifests: problems are in the report. Raises `StoreDamaged` when the data file itself is
    damaged (`Store.check_file`), and `StoreAccessError` when it cannot be read (the store
    maps what LMDB reports)."""
    if subset is not None and not 1 <= subset[0] <= subset[1]:
        raise UsageError(f"subset {subset[0]}/{subset[1]}: expected N/T with 1 <= N <= T")
    started = time.monotonic()
    # The data file's structure first: a damaged page is refused (`StoreDamaged`) before any
    # blob is read through LMDB, which would trust it.
    store.check_file()
    report = _verify(
        store,
        targets,
        all_blobs=all_blobs,
        extra_dirs=list(extra_dirs),
        project_dir=project_dir,
        subset=subset,
        deadline=None if max_duration_s is None else started + max_duration_s,
        workers=max(1, workers or os.cpu_count() or 1),
        record=record and not store.readonly,
        progress=progress,
    )
    report.search_index = _check_index(store)
    report.seconds = time.monotonic() - started
    return report


def _check_index(store: Store) -> str:
    """Re-hash the search index whole (`cas.textindex.TextIndex.verify`); a damaged segment is
    set aside for the next search to rebuild."""
    try:
        index = textindex.TextIndex.open(store.path, create=False)
    except CasError as exc:
        return str(exc)
    if index is None:
        return "absent"
    with index:
        opened = list(index.notes)  # set aside while opening it
        bad = index.verify()
    if bad:
        return (
            f"search index: set aside {len(bad)} damaged segment(s) ({bad[0]}); the next "
            "search rebuilds it"
        )
    return "; ".join(opened) if opened else "sound"


def _verify(
    store: Store,
    targets: Sequence[str],
    *,
    all_blobs: bool,
    extra_dirs: list[str | os.PathLike[str]],
    project_dir: str | os.PathLike[str] | None,
    subset: tuple[int, int] | None,
    deadline: float | None,
    workers: int,
    record: bool,
    progress: ProgressSink | None,
) -> VerifyReport:
    report = VerifyReport(subset=subset, recorded=record)
    plan = _Plan()
    if targets:
        dirs = roots_mod.manifest_dirs(store, extra_dirs, project_dir)
        manifests = [_resolve(store, spec, dirs, plan) for spec in targets]
    else:
        roots = roots_mod.load(store, extra_dirs=extra_dirs, project_dir=project_dir)
        manifests = roots.manifests
        report.problems += [Problem("", f"{what}: {why}") for what, why in roots.problems]
        report.pins = len(roots.pins)
        for name, digest in roots.pins.items():
            plan.want(digest, f"pin:{name}")
        if not manifests and not roots.pins and not all_blobs and not roots.problems:
            searched = roots_mod.manifest_dirs(store, extra_dirs, project_dir)
            raise UsageError(
                f"nothing to verify: no manifests in {', '.join(str(d.path) for d in searched)} "
                "and no pins (name a MANIFEST or DIGEST, or use --all)"
            )
    for m in manifests:
        if m.path is not None:
            report.manifests += 1
        if m.problem is not None:
            # A pinned blob that cannot be read is reported by its blob check below.
            if m.path is not None:
                report.problems.append(Problem(str(m.digest or ""), m.problem, (m.label,)))
            continue
        if m.digest is not None and m.path is not None:
            plan.want(m.digest, m.label)
            plan.own.add(m.digest)
        for digest in m.references():
            plan.want(digest, m.label)
    if all_blobs:
        for digest in store.iterate():
            if digest not in plan.referrers:
                plan.listed_only.add(digest)
                plan.want(digest)

    try:
        store.stats()
    except StoreDamaged as exc:
        report.problems.append(Problem("", exc.problem))

    wanted = [d for d in plan.referrers if in_subset(d, subset)]
    report.outside_subset = len(plan.referrers) - len(wanted)
    order = _stalest_first(store, wanted)
    _check_all(store, order, plan, report, deadline, workers, record, progress)
    report.problems.sort(key=lambda p: (p.digest, p.what, p.manifests))
    return report


def _resolve(
    store: Store, spec: str, dirs: list[roots_mod.RootDir], plan: _Plan
) -> roots_mod.RootManifest:
    """A target named on the command line: a digest, a manifest file, or a pack name."""
    if spec.startswith("blake3:"):
        digest = Digest.parse(spec)
        plan.want(digest, None)
        as_manifest = roots_mod.manifest_blob(store, digest, spec)
        # A plain blob (or a missing one) is checked as a blob; a manifest, with what it names.
        if as_manifest is None or as_manifest.problem is not None:
            return roots_mod.RootManifest(spec, None, digest, None)
        return as_manifest
    path = Path(spec)
    if path.is_file():
        return roots_mod.read_manifest(spec, path, store=store)
    # The project's own packs first: `cas verify repo` in a project means that project's pack;
    # then the other root folders (a store's own, recorded ones), as gc would find it.
    for folder in sorted(dirs, key=lambda d: d.kind != "project"):
        candidate = locate.pack_path(folder.path, spec)
        if candidate.is_file():
            label = candidate.name if folder.kind == "default" else str(candidate)
            return roots_mod.read_manifest(label, candidate, store=store)
    raise NotFound("pack", spec, "name a manifest file, a pack under manifests/, or a digest")


def _stalest_first(store: Store, digests: list[Digest]) -> list[tuple[Digest, int]]:
    """(digest, raw size) never-verified first, then by last verified time, then by digest."""
    rows = sorted((stamp, digest, size) for digest, stamp, size in store.last_verified(digests))
    return [(digest, size) for _stamp, digest, size in rows]


def _groups(order: list[tuple[Digest, int]]) -> list[tuple[list[Digest], int]]:
    """Small blobs are read and checked together (a task per tiny blob costs more than checking
    it); a group holds up to `_GROUP_BLOBS` blobs or `_GROUP_BYTES` of content. Each with the
    content it holds."""
    out: list[tuple[list[Digest], int]] = []
    group: list[Digest] = []
    size = 0
    for digest, raw_size in order:
        if group and (len(group) >= _GROUP_BLOBS or size + raw_size > _GROUP_BYTES):
            out.append((group, size))
            group, size = [], 0
        group.append(digest)
        size += raw_size
    if group:
        out.append((group, size))
    return out


@dataclass(frozen=True, slots=True)
class _Outcome:
    digest: Digest
    nbytes: int
    what: str | None
    missing: bool = False


def check_blob(store: Store, digest: Digest) -> _Outcome:
    """Read one blob through a verifying reader; name what is wrong, if anything."""
    record = store.blob_records([digest])[0]
    value = record.frame
    if value is None:
        return _Outcome(digest, 0, "missing from the store", missing=True)
    try:
        head = frame.header(value)
    except frame.FrameError as exc:
        return _Outcome(digest, 0, str(exc))
    nbytes = 0
    try:
        with BlobReader(store, digest, value, verify=True) as reader:
            for piece in reader.chunks():
                nbytes += len(piece)
    except CorruptBlob as exc:
        return _Outcome(digest, nbytes, exc.problem)
    if head.codec == frame.INDEX:
        for chunk, refs in store.chunk_refs(frame.decode_index(value)[2]):
            if isinstance(refs, CorruptBlob):
                return _Outcome(digest, nbytes, f"chunk {chunk}: {refs.problem}")
            if refs == 0:
                what = f"chunk {chunk} has no reference count (gc would sweep it)"
                return _Outcome(digest, nbytes, what)
    if record.meta_problem is not None:
        return _Outcome(digest, nbytes, record.meta_problem)
    if record.meta is None:
        return _Outcome(digest, nbytes, "its metadata record is missing")
    recorded = record.meta.raw_size
    if recorded != head.raw_size:
        return _Outcome(
            digest, nbytes, f"its metadata records {recorded} bytes, its frame {head.raw_size}"
        )
    return _Outcome(digest, nbytes, None)


@dataclass(slots=True)
class _Checked:
    """A group checked: the blobs that passed the fast path, their content, and the outcome of
    every other one (`check_blob`)."""

    passed: list[Digest]
    nbytes: int
    others: list[_Outcome]


def _check_group(store: Store, group: list[Digest]) -> _Checked:
    """Check ``group``, read in one short read transaction: the inline blobs whose frame and
    metadata agree on the size are decoded together (`cas.frame.decode_many`, one call into
    zstd) and each content re-hashed to its digest. Every other blob (a chunked one, whose
    chunks its reader reads ahead in threads of its own, and any the fast path does not pass)
    goes through `check_blob`, which names what is wrong."""
    rows = store.frames(group)
    contents = frame.decode_many([value for _, value, _ in rows], [size for _, _, size in rows])
    out = _Checked([], 0, [])
    for (digest, _value, _size), data in zip(rows, contents, strict=True):
        if data is not None and Digest.of(data) == digest:
            out.passed.append(digest)
            out.nbytes += len(data)
        else:
            out.others.append(check_blob(store, digest))
    return out


def _check_all(
    store: Store,
    order: list[tuple[Digest, int]],
    plan: _Plan,
    report: VerifyReport,
    deadline: float | None,
    workers: int,
    record: bool,
    progress: ProgressSink | None,
) -> None:
    """Check ``order`` in groups, ``workers`` groups at a time (each worker reads its group and
    decodes and hashes it: zstd and BLAKE3 release the GIL), at most `_WINDOW_BYTES` of content
    in flight; outcomes are kept in order."""
    passed: list[Digest] = []
    last_record = time.monotonic()
    todo = deque(_groups(order))
    total = len(order)
    done = 0
    with Threads(max_workers=workers, thread_name_prefix="verify") as pool:
        inflight: deque[tuple[Future[_Checked], int]] = deque()
        held = 0
        while todo or inflight:
            flush = record and (
                len(passed) >= _RECORD_MAX
                or (passed and time.monotonic() - last_record >= _RECORD_SECONDS)
            )
            out_of_time = deadline is not None and time.monotonic() >= deadline
            while (
                todo
                and not flush
                and not out_of_time
                and len(inflight) < 2 * workers
                and (not inflight or held + todo[0][1] <= _WINDOW_BYTES)
            ):
                group, nbytes = todo.popleft()
                inflight.append((pool.submit(_check_group, store, group), nbytes))
                held += nbytes
            if not inflight:
                if out_of_time:
                    break
                # Drained: no read is in flight while the verified times are written (a write
                # may grow the map, which no open read may see).
                _record(store, passed)
                passed.clear()
                last_record = time.monotonic()
                continue
            future, nbytes = inflight.popleft()
            held -= nbytes
            checked = future.result()
            report.checked += len(checked.passed)
            report.bytes_checked += checked.nbytes
            passed += checked.passed
            for outcome in checked.others:
                _tally(outcome, plan, report, passed)
            done += len(checked.passed) + len(checked.others)
            emit(progress, "verify", done, total, report.bytes_checked)
    report.not_reached = sum(len(group) for group, _ in todo)
    if record:
        _record(store, passed)


def _tally(outcome: _Outcome, plan: _Plan, report: VerifyReport, passed: list[Digest]) -> None:
    digest = outcome.digest
    if outcome.what is None:
        report.checked += 1
        report.bytes_checked += outcome.nbytes
        passed.append(digest)
        return
    if outcome.missing and digest in plan.listed_only:
        report.vanished += 1
        return
    report.checked += 1
    what = outcome.what
    if digest in plan.own:
        what += " (the manifest's own copy)"
    labels = tuple(sorted(plan.referrers.get(digest, ()), key=os.fsencode))
    report.problems.append(Problem(str(digest), what, labels))


def _record(store: Store, passed: list[Digest]) -> None:
    if passed:
        store.stamp_verified(passed, time.time_ns())
