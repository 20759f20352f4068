"""Packing a project, once, for every caller: ``cas pack``, ``python -m packer`` and Python
programs (`make_pack`) all run `pack_project`.

`pack_project` is the service: given a store and a project's configuration, it walks the tree,
replays the last run when nothing it read changed (`packer.replay`), or runs the pipeline
(`packer.build.Packer`) and feeds the store's search index on the way. It prints nothing: what
it did is in the `PackReport` it returns, its notes go to ``notes`` and its progress to
``progress``. The command line presents the report; a Python program reads it.

`make_pack`, `verify_manifest` and `PackScope` are the Python face of the same work: they find
the project and its store as the command line does, and raise the errors the command line maps
to exit codes (every one a `cas.errors.CasError`, with its fields). For example, in a project
with a Python package::

    >>> from packer import make_pack, verify_manifest, PackScope
    >>> report = make_pack(project, notes=None)
    >>> [r.path.name for r in report.results]
    ['repo.pack']
    >>> verify_manifest(report.results[0].path).ok
    True

A scope given as a `PackScope` is packed as given (with the configuration's scopes named
beside it, if any)::

    >>> api = PackScope("api", include=("src/**",), budget=(2_000, 3_000))
    >>> report = make_pack(project, [api], notes=None)
    >>> [(r.path.name, r.budget["max"]) for r in report.results]
    [('api.pack', 3000)]
    >>> report.results[0].manifest.entries[0].path
    'src/app/__init__.py'
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cas.display import one_line
from cas.errors import CasError, ConfigError, StoreNotFound
from cas.locate import load_pack, manifest_dir
from cas.store import Store

if TYPE_CHECKING:
    from datetime import date

    from cas.digest import Digest
    from cas.events import ProgressSink
    from cas.textindex import Writer
    from cas.verify import VerifyReport
    from packer.config import Config, Scope
    from packer.replay import Walked
    from packer.results import PackReport

__all__ = ["PackScope", "make_pack", "pack_project", "verify_manifest", "with_scopes"]

Notes = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class PackScope:
    """A scope to pack, given in Python rather than in cas.toml: a name (the pack is
    ``manifests/NAME.pack``, or ``NAME.TARGET.pack`` per target), the folders it covers, the
    globs it includes and excludes (git's wildmatch, relative to the project root, as in
    cas.toml), and a budget ``(target, max)`` in tokens, or several named targets. The
    project's rules apply as to any scope.

        >>> PackScope("docs", include=("docs/**", "*.md"), budget=(4_000, 5_000)).name
        'docs'
    """

    name: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    roots: tuple[str, ...] = (".",)
    budget: tuple[int, int] | None = None  # None: the configuration's [pack] budget
    targets: tuple[tuple[str, int, int], ...] = ()  # (name, target, max) each

    def scope(self, config: Config) -> Scope:
        """This scope as the configuration reader would make it from cas.toml (the same
        checks, the same errors)."""
        from packer.config import read_scope

        table: dict[str, object] = {
            "roots": list(self.roots),
            "include": list(self.include),
            "exclude": list(self.exclude),
        }
        if self.targets:
            table["targets"] = {
                name: {"target": target, "max": most} for name, target, most in self.targets
            }
        budget = None
        if self.budget is not None:
            budget = {"target": self.budget[0], "max": self.budget[1]}
        return read_scope(config, self.name, table, budget)


def pack_project(
    root: Path,
    store: Store,
    config: Config,
    *,
    scopes: Sequence[str] = (),
    targets: Sequence[str] = (),
    baseline: str | None = None,
    allow_secrets: Sequence[str] = (),
    check: bool = False,
    explain: str | None = None,
    now: date | None = None,
    progress: ProgressSink | None = None,
    notes: Notes | None = None,
    prune: bool = False,
) -> PackReport:
    """Pack ``scopes`` (names of ``config``'s scopes; none: all of them) of the project at
    ``root`` into ``store``, as ``cas pack`` does: the manifests are written under the
    project's manifests folder (with ``check`` or ``explain``, nothing is written: the report
    says which packs are stale, or why ``explain`` got its tier). ``baseline``: a pack (name,
    file or digest) recorded as the parent. A note (the search index could not be updated) goes
    to ``notes``; the pack stands without it. The report names the orphan packs (manifests
    the configuration no longer makes, `packer.orphans`); ``prune`` removes them."""
    report = _pack(
        root, store, config, scopes=scopes, targets=targets, baseline=baseline,
        allow_secrets=allow_secrets, check=check, explain=explain, now=now, progress=progress,
        notes=notes,
    )  # fmt: skip
    if explain is None:
        _orphans(root, config, report, prune=prune and not check)
    return report


def _orphans(root: Path, config: Config, report: PackReport, *, prune: bool) -> None:
    from packer.orphans import find_orphans
    from packer.orphans import prune as remove

    found = find_orphans(root, config)
    report.orphans = [p.relative_to(root).as_posix() for p in found]
    if prune and found:
        remove(found)
        report.pruned = True


def _pack(
    root: Path,
    store: Store,
    config: Config,
    *,
    scopes: Sequence[str],
    targets: Sequence[str],
    baseline: str | None,
    allow_secrets: Sequence[str],
    check: bool,
    explain: str | None,
    now: date | None,
    progress: ProgressSink | None,
    notes: Notes | None,
) -> PackReport:
    from packer.replay import replay, walk

    parent = load_pack(baseline, manifest_dir(root), store).digest if baseline else None
    walked = walk(store, root, progress)
    if explain is None and not allow_secrets:
        # Nothing a run reads changed since one that succeeded: its report, its manifest files
        # made again where they differ (the pipeline is not even imported). The bodies of its
        # packs were indexed by the run replayed; whatever the index lost since, a search
        # indexes again before it answers (`packer.search.ensure_indexed`).
        replayed = replay(
            root, store, config, walked, scopes=scopes, targets=targets, baseline=parent,
            now=now, check=check,
        )  # fmt: skip
        if replayed is not None:
            return replayed
    return _run(
        root, store, config, walked, scopes=scopes, targets=targets, parent=parent,
        allow=allow_secrets, check=check, explain=explain, now=now, progress=progress,
        notes=notes,
    )  # fmt: skip


def _run(
    root: Path,
    store: Store,
    config: Config,
    walked: Walked,
    *,
    scopes: Sequence[str],
    targets: Sequence[str],
    parent: Digest | None,
    allow: Sequence[str],
    check: bool,
    explain: str | None,
    now: date | None,
    progress: ProgressSink | None,
    notes: Notes | None,
) -> PackReport:
    """The whole pipeline after the walk: ingest, tier, fit, write; the search index fed on
    the way."""
    from packer.build import Packer

    indexing = not check and explain is None
    writer = _index_writer(store, notes) if indexing else None
    spent = [0.0]  # seconds the writer took to write what the ingest sent it

    def terms_done() -> None:
        assert writer is not None
        started = time.perf_counter()
        writer.close()
        spent[0] += time.perf_counter() - started

    packer = Packer(
        root, store, config, allow_secrets=tuple(allow), progress=progress, now=now,
        terms=writer.add if writer is not None else None,
        terms_done=terms_done if writer is not None else None,
    )  # fmt: skip
    try:
        report = packer.run(
            scopes=tuple(scopes), targets=tuple(targets), baseline=parent, check=check,
            explain=explain, walked=walked,
        )  # fmt: skip
    finally:
        if writer is not None:
            started = time.perf_counter() - spent[0]
            writer.close()
    if writer is not None:
        try:
            _index_packs(store, report, writer, progress)
        except CasError as exc:  # a cache: the pack stands without it
            writer.problem = writer.problem or str(exc)
        finally:
            writer.index.close()
        report.timings["index"] = time.perf_counter() - started
        if writer.problem is not None and notes is not None:
            notes(f"search index not updated ({one_line(writer.problem)})")
    return report


def _index_writer(store: Store, notes: Notes | None) -> Writer | None:
    """A writer of the store's search index for the pack to feed, or None (with a note) when
    the index cannot be opened: the pack stands without it."""
    from cas.textindex import TextIndex, Writer

    try:
        index = TextIndex.open(store.path, note=notes)
    except CasError as exc:
        if notes is not None:
            notes(f"search index not updated ({one_line(str(exc))})")
        return None
    assert index is not None  # open creates one
    return Writer(index)


def _index_packs(
    store: Store, report: PackReport, writer: Writer, progress: ProgressSink | None
) -> None:
    """Index the bodies of the packs just written that the ingest did not read (unchanged
    files whose bodies the index lost): an unchanged pack costs one lookup per body."""
    from packer.search import ensure_indexed

    digests = {e.digest for r in report.results for e in r.manifest.entries if e.digest}
    if not digests or writer.problem is not None:
        return
    ensure_indexed(writer.index, store, digests, progress)


# --- the Python API -------------------------------------------------------------------------


def _default_notes(text: str) -> None:
    import sys

    sys.stderr.write(f"cas: note: {one_line(text)}\n")


def _open_store(
    root: Path, store: str | os.PathLike[str] | Store | None, *, create: bool
) -> tuple[Store, bool]:
    """The store to use and whether it is ours to close: ``store`` itself, the store at that
    path, or the project's (found as the command line finds it; with ``create``, made at
    ``root/.cas`` when there is none)."""
    if isinstance(store, Store):
        return store, False
    if store is not None:
        return Store.at(Path(store).absolute()), True
    from cas.store import find_store

    try:
        return Store.at(find_store(root)), True
    except StoreNotFound:
        if not create:
            raise
    return Store.create(root / ".cas", exist_ok=True), True


def with_scopes(config: Config, scopes: Sequence[str | PackScope]) -> tuple[Config, list[str]]:
    """``config`` with the `PackScope`s of ``scopes`` in it, and the names of every scope asked
    for. With any `PackScope`, only the scopes asked for take part: the configuration's named
    ones, and these (a configured scope of the same name is replaced)."""
    given = [s for s in scopes if isinstance(s, PackScope)]
    wanted = [s.name if isinstance(s, PackScope) else s for s in scopes]
    if not given:
        return config, wanted
    names = {s.name for s in given}
    if len(names) != len(given):
        raise ConfigError("make_pack", "scopes", "two PackScopes share a name: give each its own")
    named = {s for s in scopes if isinstance(s, str)}
    kept = tuple(s for s in config.scopes if s.name in named and s.name not in names)
    extra = tuple(s.scope(config) for s in given)
    return dataclasses.replace(config, scopes=kept + extra), wanted


def make_pack(
    project: str | os.PathLike[str] = ".",
    scopes: Sequence[str | PackScope] = (),
    *,
    targets: Sequence[str] = (),
    store: str | os.PathLike[str] | Store | None = None,
    check: bool = False,
    baseline: str | None = None,
    include_secrets: Sequence[str] = (),
    now: date | None = None,
    progress: ProgressSink | None = None,
    notes: Notes | None = _default_notes,
) -> PackReport:
    """Build the context packs of the project at or above ``project``, as ``cas pack`` does,
    and return its report (`packer.results.PackReport`: a `PackResult` per pack written or
    checked, with its manifest, digest, path, totals and tokens).

    ``scopes``: names of the configuration's scopes, or `PackScope`s packed as given (none:
    every configured scope). ``targets``: only these targets. ``store``: a `cas.store.Store`,
    a store folder, or None for the project's (found as the command line finds it: the nearest
    ``.cas`` upward, or ``CAS_STORE``; made at the project's root when there is none).
    ``check``: write nothing; the report's ``stale`` names each pack whose committed manifest
    differs. ``include_secrets``: paths to pack although they look like secrets. ``notes``:
    where a note goes (stderr by default; None drops them).

    Raises the `cas.errors.CasError` the command line would report: `ConfigError` for a bad
    cas.toml or scope, `UsageError`, `StoreNotFound`, `NotFound` for an unknown scope."""
    from packer.config import load_config
    from packer.project import existing_folder, find_project_root

    root = find_project_root(existing_folder(project))
    config, wanted = with_scopes(load_config(root), scopes)
    opened, ours = _open_store(root, store, create=True)
    try:
        return pack_project(
            root, opened, config, scopes=wanted, targets=targets, baseline=baseline,
            allow_secrets=include_secrets, check=check, now=now, progress=progress, notes=notes,
        )  # fmt: skip
    finally:
        if ours:
            opened.close()


def verify_manifest(
    manifest: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | Store | None = None,
    project: str | os.PathLike[str] | None = None,
) -> VerifyReport:
    """Check one pack as ``cas verify MANIFEST`` does: its manifest decodes, its own copy is in
    the store, and every blob it references is present and re-hashes to its digest.
    ``manifest``: a manifest file, a pack name of the project, or a digest. Returns the
    `cas.verify.VerifyReport` (``ok``, ``problems``, ``checked``); raises `NotFound` for a pack
    that is not there and `StoreNotFound` without a store. Records nothing in the store.
    ``project``: where the project is (default: the manifest file's folder, or the working
    directory for a name or a digest)."""
    from cas.verify import verify
    from packer.project import existing_folder, find_project_root

    if project is None:
        given = Path(manifest)
        project = given.parent if given.is_file() else "."
    root = find_project_root(existing_folder(project))
    opened, ours = _open_store(root, store, create=False)
    try:
        return verify(opened, [os.fspath(manifest)], project_dir=manifest_dir(root), record=False)
    finally:
        if ours:
            opened.close()
