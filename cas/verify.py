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
read in short read transactions (one per group of small blobs, or per frame or chunk of a large
one, so a long verify never pins an old snapshot and the file does not grow under it), as views
into the map, not copies, decoded and re-hashed by worker threads (zstd and BLAKE3 release the
GIL) while this one keeps the report; the chunks of a large blob are read ahead in threads of
their own. At most a few chunks are held. With ``all_blobs`` the checking of every blob the store
lists starts before the roots are read (their manifests only name the problems found, and add
what the store does not list). The stalest go first when a run may be cut short
(``max_duration_s``): the store keeps the time each blob last passed (`Store.last_verified`), so
the next run resumes where it matters most.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
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
from cas.store import FrameView, Store
from cas.threads import Threads

# Verified times are written every so many seconds (one commit each, with no read in flight),
# or once this many passes are held.
_RECORD_SECONDS: Final = 2.0
_RECORD_MAX: Final = 1 << 16
_GROUP_BLOBS: Final = 64
_SIZES_PAGE: Final = 2048  # digests whose sizes are looked up at once, in key order
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
    listed: list[Digest] = []
    early: _Early | None = None
    if all_blobs:
        # Every blob of the store is checked whatever the roots say: the checking starts now,
        # in threads, while this one reads the roots (whose manifests only name the problems
        # and add what the store lacks); zstd and BLAKE3 run without the GIL the plan needs.
        listed = list(store.iterate())
        early = _Early(
            store, [d for d in listed if in_subset(d, subset)], deadline, workers, record, progress
        )
    try:
        _plan(store, targets, all_blobs, listed, extra_dirs, project_dir, plan, report)
        if early is not None:
            report.search_index = _check_index(store)  # while the blobs are checked
    except BaseException:
        if early is not None:
            early.cancel()
        raise

    wanted = [d for d in plan.referrers if in_subset(d, subset)]
    report.outside_subset = len(plan.referrers) - len(wanted)
    if early is None:
        order = _stalest_first(store, wanted)
        run = _check_all(store, order, len(order), deadline, workers, record, progress)
        report.search_index = _check_index(store)
    else:
        run = early.join()
        held = set(listed)
        rest = [d for d in wanted if d not in held]  # referenced, not in the store's listing
        if rest:
            order = _stalest_first(store, rest)
            more = _check_all(store, order, len(order), deadline, workers, record, None)
            run.add(more)
    report.checked += run.checked
    report.bytes_checked += run.nbytes
    report.not_reached = run.not_reached
    for outcome in run.failed:
        _tally(outcome, plan, report)
    if record:
        _record(store, run.passed)
    report.problems.sort(key=lambda p: (p.digest, p.what, p.manifests))
    return report


def _plan(
    store: Store,
    targets: Sequence[str],
    all_blobs: bool,
    listed: list[Digest],
    extra_dirs: list[str | os.PathLike[str]],
    project_dir: str | os.PathLike[str] | None,
    plan: _Plan,
    report: VerifyReport,
) -> None:
    """What to check and who references it: the targets named, or every root; with
    ``all_blobs``, ``listed`` (every blob of the store) as well."""
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
    for digest in listed:
        if digest not in plan.referrers:
            plan.listed_only.add(digest)
            plan.want(digest)
    try:
        store.stats()
    except StoreDamaged as exc:
        report.problems.append(Problem("", exc.problem))


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


def _in_key_order(store: Store, digests: list[Digest]) -> Iterator[tuple[Digest, int]]:
    """(digest, raw size) of ``digests`` in key order, looked up a page at a time as the
    checking takes them (no wait for all of them: what a run that cannot be cut short needs)."""
    ordered = sorted(digests)
    for start in range(0, len(ordered), _SIZES_PAGE):
        rows = store.last_verified(ordered[start : start + _SIZES_PAGE])
        yield from ((digest, size) for digest, _stamp, size in rows)


def _groups(order: Iterable[tuple[Digest, int]]) -> Iterator[tuple[list[Digest], int]]:
    """Small blobs are read and checked together (a task per tiny blob costs more than checking
    it); a group holds up to `_GROUP_BLOBS` blobs or `_GROUP_BYTES` of content. Each with the
    content it holds."""
    group: list[Digest] = []
    size = 0
    for digest, raw_size in order:
        if group and (len(group) >= _GROUP_BLOBS or size + raw_size > _GROUP_BYTES):
            yield group, size
            group, size = [], 0
        group.append(digest)
        size += raw_size
    if group:
        yield group, size


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
    zstd) and each content re-hashed to its digest, all from views into the map while the
    transaction holds them (`Store.frame_views`: no copy). Every other blob (a chunked one,
    whose chunks its reader reads ahead in threads of its own, and any the fast path does not
    pass) goes through `check_blob` after it, which names what is wrong."""
    out = _Checked([], 0, [])
    again: list[Digest] = []
    with store.frame_views(group) as rows:
        _fast_path(rows, out, again)  # its views end with its call, inside the transaction
    out.others = [check_blob(store, digest) for digest in again]
    return out


def _fast_path(rows: list[FrameView], out: _Checked, again: list[Digest]) -> None:
    contents = frame.decode_many([v for _, v, _ in rows], [size for _, _, size in rows])
    for (digest, _value, _size), data in zip(rows, contents, strict=True):
        if data is not None and Digest.of(data) == digest:
            out.passed.append(digest)
            out.nbytes += len(data)
        else:
            again.append(digest)


@dataclass(slots=True)
class _Run:
    """What checking found, before the plan names its problems: the blobs that passed (not yet
    recorded), the outcomes of those that did not, and how many were never reached."""

    checked: int = 0
    nbytes: int = 0
    passed: list[Digest] = field(default_factory=list)
    failed: list[_Outcome] = field(default_factory=list)
    not_reached: int = 0

    def add(self, other: _Run) -> None:
        self.checked += other.checked
        self.nbytes += other.nbytes
        self.passed += other.passed
        self.failed += other.failed
        self.not_reached += other.not_reached


def _check_all(
    store: Store,
    order: Iterable[tuple[Digest, int]],
    total: int,
    deadline: float | None,
    workers: int,
    record: bool,
    progress: ProgressSink | None,
    *,
    may_record: threading.Event | None = None,
    stop: threading.Event | None = None,
) -> _Run:
    """Check ``order`` in groups, ``workers`` groups at a time (each worker reads its group and
    decodes and hashes it: zstd and BLAKE3 release the GIL), at most `_WINDOW_BYTES` of content
    in flight; outcomes are kept in order. The times of passes are written as it goes (only
    once ``may_record`` is set, when given: no other read of this process is open then); those
    not yet written are left in the run's ``passed``. ``stop`` ends it early."""
    run = _Run()
    last_record = time.monotonic()
    groups = _groups(order)
    upcoming = next(groups, None)
    done = 0
    with Threads(max_workers=workers, thread_name_prefix="verify") as pool:
        inflight: deque[tuple[Future[_Checked], int]] = deque()
        held = 0
        while upcoming is not None or inflight:
            flush = (
                record
                and (may_record is None or may_record.is_set())
                and (
                    len(run.passed) >= _RECORD_MAX
                    or (run.passed and time.monotonic() - last_record >= _RECORD_SECONDS)
                )
            )
            out_of_time = (deadline is not None and time.monotonic() >= deadline) or (
                stop is not None and stop.is_set()
            )
            while (
                upcoming is not None
                and not flush
                and not out_of_time
                and len(inflight) < 2 * workers
                and (not inflight or held + upcoming[1] <= _WINDOW_BYTES)
            ):
                group, nbytes = upcoming
                inflight.append((pool.submit(_check_group, store, group), nbytes))
                held += nbytes
                upcoming = next(groups, None)
            if not inflight:
                if out_of_time:
                    break
                # Drained: no read is in flight while the verified times are written (a write
                # may grow the map, which no open read may see).
                _record(store, run.passed)
                run.passed.clear()
                last_record = time.monotonic()
                continue
            future, nbytes = inflight.popleft()
            held -= nbytes
            checked = future.result()
            run.checked += len(checked.passed)
            run.nbytes += checked.nbytes
            run.passed += checked.passed
            for outcome in checked.others:
                if outcome.what is None:
                    run.checked += 1
                    run.nbytes += outcome.nbytes
                    run.passed.append(outcome.digest)
                else:
                    run.failed.append(outcome)
            done += len(checked.passed) + len(checked.others)
            emit(progress, "verify", done, total, run.nbytes)
    run.not_reached = total - done
    return run


class _Early:
    """`_check_all` over every blob of the store, in a thread of its own, started before the
    plan is made: the verified times it may write wait for `join` (a write may grow the map,
    which no read open in this process, such as the plan's, may see)."""

    def __init__(
        self,
        store: Store,
        digests: list[Digest],
        deadline: float | None,
        workers: int,
        record: bool,
        progress: ProgressSink | None,
    ) -> None:
        self._may_record = threading.Event()
        self._stop = threading.Event()
        self._run: _Run | None = None
        self._error: BaseException | None = None

        def work() -> None:
            try:
                # The stalest first when the run may be cut short; else as the keys come, so
                # that the checking starts at once.
                order: Iterable[tuple[Digest, int]] = (
                    _in_key_order(store, digests)
                    if deadline is None
                    else _stalest_first(store, digests)
                )
                self._run = _check_all(
                    store,
                    order,
                    len(digests),
                    deadline,
                    workers,
                    record,
                    progress,
                    may_record=self._may_record,
                    stop=self._stop,
                )
            except BaseException as exc:  # raised again by join, in the caller's thread
                self._error = exc

        self._thread = threading.Thread(target=work, name="verify-all", daemon=True)
        self._thread.start()

    def join(self) -> _Run:
        """The run, once the plan is made (raises what the run raised)."""
        self._may_record.set()
        try:
            self._thread.join()
        except BaseException:
            self.cancel()
            raise
        if self._error is not None:
            raise self._error
        assert self._run is not None
        return self._run

    def cancel(self) -> None:
        """Stop taking groups and wait for those in flight (the plan failed)."""
        self._stop.set()
        self._thread.join()


def _tally(outcome: _Outcome, plan: _Plan, report: VerifyReport) -> None:
    """A blob that did not pass: a problem, named with what references it (or a blob only the
    listing named that a concurrent gc removed: not a problem)."""
    digest = outcome.digest
    if outcome.missing and digest in plan.listed_only:
        report.vanished += 1
        return
    report.checked += 1
    what = outcome.what or "failed"
    if digest in plan.own:
        what += " (the manifest's own copy)"
    labels = tuple(sorted(plan.referrers.get(digest, ()), key=os.fsencode))
    report.problems.append(Problem(str(digest), what, labels))


def _record(store: Store, passed: list[Digest]) -> None:
    if passed:
        store.stamp_verified(passed, time.time_ns())
