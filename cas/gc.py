"""gc: prune blobs no root references, without ever racing a pack (protocol: DETERMINISM.md).

1. Roots are read (`cas.roots`) and checked: every root manifest decodes and every blob a root
   names is present; otherwise `StoreInconsistent` and nothing is deleted.
2. Mark: the reachable set is the roots' digests; nothing is read from blobs but manifests.
3. Candidates: blobs not reachable whose last-referenced time is older than ``cutoff = start -
   grace``, found in one walk of the metadata table in key order (`Store.unreferenced`), in
   pages of short read transactions.
4. One write transaction (`Store.update`) deletes: it refuses while a lease is live (waiting outside
   the transaction, up to ``lease_wait_s``), re-reads the recorded folders, the manifests in every
   folder and the pins for roots that appeared since the snapshot (a pack into a folder that is not
   the default one records that folder before writing there, under its lease), and re-reads each
   candidate's last-referenced time: a put that deduplicated onto a candidate after gc started
   refreshed it in its own transaction, so it is now newer than the cutoff. Judging and deleting
   are one pass of cursors over the candidates in key order (`Update.prune`), and chunks no
   blob references any more (older than the grace period) are swept in the same transaction.

After step 4, the search index (`cas.textindex`, a cache beside the store) is compacted once a
quarter of the bodies it holds are gone from the store, and the freed pages' disk blocks are
given back (`Store.give_back_space`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from cas import lease as leases
from cas import manifest as mf
from cas import roots as roots_mod
from cas import textindex
from cas.digest import Digest
from cas.errors import CasError, LeaseHeld, StoreInconsistent, UsageError
from cas.events import ProgressSink, emit
from cas.report import json_rule
from cas.store import Store, Update

DEFAULT_GRACE_NS: Final = 3600 * 10**9
DEFAULT_LEASE_WAIT_S: Final = 60.0


@dataclass(slots=True)
class GcReport:
    """What a gc kept and pruned; `cas.report.report_json` gives its JSON."""

    dry_run: bool
    grace_ns: int = field(metadata=json_rule(key="grace_s", convert=lambda ns: ns / 1e9))
    manifests: int = 0
    pins: int = 0
    reachable: int = 0
    pruned: int = 0
    bytes_freed: int = 0
    chunks_pruned: int = 0
    chunk_bytes_freed: int = 0
    kept_by_grace: int = 0
    # Candidates spared by the re-check: referenced or put again after the snapshot.
    spared_late: int = 0
    stale_leases: int = field(default=0, metadata=json_rule(key="stale_leases_cleared"))
    live_leases: int = 0
    # Disk blocks of free pages given back to the file system in place (see cas/space.py).
    bytes_given_back: int = 0
    index_dropped: int = 0  # bodies dropped from the search index
    waited_s: float = 0.0
    digests: list[Digest] = field(default_factory=list)  # pruned, or would be in a dry run


class _Busy:
    def __init__(self, live: list[leases.LeaseRecord]) -> None:
        self.live = live


class _DryRun(Exception):
    """Raised inside the delete transaction of a dry run, so it rolls back."""

    def __init__(self, report: GcReport) -> None:
        super().__init__("dry run")
        self.report = report


def collect(
    store: Store,
    *,
    extra_dirs: Iterable[str | os.PathLike[str]] = (),
    project_dir: str | os.PathLike[str] | None = None,
    grace_ns: int = DEFAULT_GRACE_NS,
    dry_run: bool = False,
    keep: Iterable[Digest] = (),
    lease_wait_s: float = DEFAULT_LEASE_WAIT_S,
    lease_ttl_ns: int = leases.LEASE_TTL_NS,
    require_roots: bool = True,
    progress: ProgressSink | None = None,
) -> GcReport:
    """Mark from the roots, then sweep unreachable blobs older than the grace period.

    A dry run does every step, deletion included, in a transaction it then rolls back: the
    report is exact, nothing changes, and live leases are counted rather than waited for.
    ``require_roots`` refuses to run when there is no manifest folder and no pin at all (a gc
    started from the wrong place would otherwise empty the store). ``project_dir`` is the
    manifests folder of the project gc runs in: a root too, and not a problem when absent.
    """
    if grace_ns < 0:
        raise UsageError("the grace period cannot be negative")
    cutoff = time.time_ns() - grace_ns
    project = None if project_dir is None else os.fspath(project_dir)
    extra = [os.fspath(e) for e in extra_dirs]
    sweep = _Sweep(store, extra, project, grace_ns, cutoff, dry_run)

    emit(progress, "roots", 0)
    roots = roots_mod.load(
        store, extra_dirs=extra, project_dir=project, keep=keep, known=sweep.known
    )
    _check(store, roots)
    if require_roots and not (roots.manifests or roots.pins or roots.keep):
        folder = roots_mod.default_dir(store)
        if not folder.is_dir():
            raise UsageError(
                f"no roots: {folder} does not exist and nothing is pinned, so gc would delete "
                "every blob; create that folder (or pin, or --keep) first"
            )
    sweep.reachable = roots.reachable()
    kept_by_grace = sweep.find_candidates(progress)

    emit(progress, "sweep", 0, len(sweep.candidates))
    report = sweep.run(lease_wait_s, lease_ttl_ns)
    report.manifests = sum(1 for m in roots.manifests if m.path is not None)
    report.pins = len(roots.pins)
    report.reachable = len(sweep.reachable)
    report.kept_by_grace = kept_by_grace
    if not dry_run and report.pruned:
        emit(progress, "index", 0)
        report.index_dropped = _compact_index(store)
    if not dry_run:
        # What was deleted is free inside the data file; give its disk blocks back now, so a
        # full disk gets room without the copy that compaction needs.
        report.bytes_given_back = store.give_back_space()
    return report


class _Sweep:
    """The candidates of one gc, and the transaction that deletes them."""

    def __init__(
        self,
        store: Store,
        extra: list[str],
        project: str | None,
        grace_ns: int,
        cutoff: int,
        dry_run: bool,
    ) -> None:
        self.store = store
        self.extra = extra
        self.project = project
        self.grace_ns = grace_ns
        self.cutoff = cutoff
        self.dry_run = dry_run
        self.known: dict[Digest, mf.Manifest] = {}
        self.reachable: set[Digest] = set()
        self.candidates: list[Digest] = []

    def find_candidates(self, progress: ProgressSink | None) -> int:
        """Collect unreachable blobs last referenced before the cutoff; returns how many
        unreachable ones the grace period keeps (a blob whose metadata row is damaged has no
        last-referenced time to judge: it is kept, and 'cas verify' reports it)."""
        kept = seen = 0
        for found, rows, kept_here in self.store.unreferenced(self.reachable, self.cutoff):
            self.candidates += found
            kept += kept_here
            seen += rows
            emit(progress, "mark", seen)
        return kept

    def run(self, lease_wait_s: float, lease_ttl_ns: int) -> GcReport:
        started = time.monotonic()
        deadline = started + lease_wait_s
        cleared = 0
        while True:
            if not self.dry_run:
                remaining = max(deadline - time.monotonic(), 0.0)
                cleared += leases.wait_until_free(
                    self.store, wait_s=remaining, ttl_ns=lease_ttl_ns
                )[0]
            outcome: GcReport | _Busy
            try:
                # A cleanup: on a full disk it may use the store's reserve (cas/space.py).
                outcome = self.store.update(
                    lambda update: self._delete(update, lease_ttl_ns), cleanup=True
                )
            except _DryRun as done:
                outcome = done.report
            if not isinstance(outcome, _Busy):
                break
            # A lease was taken between the wait and the transaction: wait again.
            if time.monotonic() >= deadline:
                now = time.time_ns()
                waited = time.monotonic() - started
                raise LeaseHeld([r.describe(now) for r in outcome.live], waited)
        outcome.stale_leases += cleared
        outcome.waited_s = time.monotonic() - started
        outcome.digests.sort()
        return outcome

    def _delete(self, update: Update, lease_ttl_ns: int) -> GcReport | _Busy:
        out = GcReport(dry_run=self.dry_run, grace_ns=self.grace_ns)
        live, stale = leases.split_in(update, time.time_ns(), lease_ttl_ns, clear=not self.dry_run)
        if live and not self.dry_run:
            return _Busy(live)
        out.live_leases = len(live)
        out.stale_leases = 0 if self.dry_run else len(stale)
        late = _late_roots(update, self.store, self.extra, self.project, self.known)
        late -= self.reachable
        out.digests, out.spared_late, out.pruned, out.bytes_freed = update.prune(
            self.candidates, self.cutoff, late
        )
        # In the same transaction, under the same lease check: a pack that starts later finds
        # a chunk either gone or kept, never one that vanishes between its check and commit.
        out.chunks_pruned, out.chunk_bytes_freed = update.sweep_chunks(
            time.time_ns() - self.grace_ns, dry_run=self.dry_run
        )
        if self.dry_run:
            raise _DryRun(out)
        return out


def _compact_index(store: Store) -> int:
    """Drop the bodies the store no longer holds from the search index, once they are a
    quarter of it (`cas.textindex.TextIndex.compact`): until then they only take room, since a
    search scores only the bodies of the packs it searches. A cache: a problem with it is no
    problem of gc's."""
    try:
        index = textindex.TextIndex.open(store.path, create=False)
    except CasError:
        return 0
    if index is None:
        return 0
    with index:
        try:
            return index.compact(store.has_many)
        except CasError:
            return 0


def _check(store: Store, roots: roots_mod.Roots) -> None:
    """Refuse a store whose roots do not hold together (`StoreInconsistent`)."""
    problems = list(roots.problems)
    problems += [(m.label, m.problem) for m in roots.manifests if m.problem is not None]
    named = roots.referenced()
    missing = named - store.has_many(named)
    referrers = roots.referrers() if missing else {}
    for digest in sorted(missing):
        by = ", ".join(referrers.get(digest, []))
        problems.append((str(digest), f"missing from the store (referenced by: {by})"))
    if problems:
        raise StoreInconsistent(problems)


def _late_roots(
    update: Update,
    store: Store,
    extra: list[str],
    project: str | None,
    known: dict[Digest, mf.Manifest],
) -> set[Digest]:
    """Roots as they are now, inside the deleting transaction: folders recorded and manifest
    files written since the snapshot (bytes already decoded are not decoded again) and pins
    made since."""
    recorded = roots_mod.recorded_dirs(update)
    dirs = roots_mod.manifest_dirs(store, extra, project, recorded=recorded)
    files, problems = roots_mod.manifest_files(store, dirs)
    out: set[Digest] = set()
    decoded_before = set(known)
    fresh: list[roots_mod.RootManifest] = []
    for label, path in files:
        root = roots_mod.read_manifest(label, path, known, store=store)
        if root.problem is not None:
            problems.append((label, root.problem))
            continue
        if root.digest is not None:
            out.add(root.digest)
        if root.digest not in decoded_before:
            fresh.append(root)
        out |= root.references()
    for name, digest in roots_mod.pins(update).items():
        out.add(digest)
        for kept in roots_mod.pinned(store, name, digest, known):
            out |= kept.references()
    for root in fresh:
        for digest in sorted(root.references() | {d for d in [root.digest] if d is not None}):
            if not update.has(digest):
                problems.append(
                    (str(digest), f"missing from the store (referenced by: {root.label})")
                )
    if problems:
        raise StoreInconsistent(problems)
    return out
