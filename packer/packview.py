"""A pack as a search reads it: the head of its manifest, its files' paths and digests.

A search asks three things of a pack: whether it may be seen (the head of its manifest: kind,
scope, parent, sources; `cas.visibility`), and, for each file with a body, its path and its
body's digest. Decoding a manifest of 20,000 entries into `Entry` objects to learn that costs
more than the rest of a search; a view holds only that, as msgpack of a few objects (the paths
as one string, the digests as one list), which a fresh process decodes in a millisecond.

The pack that writes a manifest writes its view too, in the store's cache (`VIEW_NS`, keyed by
the manifest's digest: a view is a function of the manifest's bytes, so it can never be stale).
A pack whose view the cache lacks (made by an older cas, pulled from a remote, or its view
dropped, as any cached value may be) is decoded, trusted where this store's writer recorded it
valid, and its view made in memory: a search writes nothing to the store.

`Views` is what a process keeps between searches: the pack files it read (`cas.locate.PackFiles`:
read and hashed again only when a file's identity changes), their views by manifest digest, and
the last search source built from them. The MCP server keeps one for its life, so a search it
answers again reads nothing it read before; a command makes a new one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import msgpack

from cas import locate
from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.errors import CasError
from cas.store import Store
from packer import pathwords
from packer.pathwords import PathIndex

# The cache namespace of views; the number is the layout's (`encode`).
VIEW_NS: Final = "pack-view:1"
_SEPARATOR: Final = "\0"  # between paths in a view: no path holds one


class PackView:
    """A manifest's head (`mf.Manifest` without entries or totals) and, for each of its files
    with a body, by path, the path and the body's digest (raw bytes). As a collection: its
    paths (a set of them made at the first test for one)."""

    __slots__ = ("_path_set", "digest", "digests", "head", "paths")

    def __init__(
        self, digest: Digest, head: mf.Manifest, paths: list[str], digests: list[bytes]
    ) -> None:
        self.digest = digest  # the manifest's
        self.head = head
        self.paths = paths
        self.digests = digests
        self._path_set: frozenset[str] | None = None

    def path_set(self) -> frozenset[str]:
        """The paths, to test for one (made once)."""
        if self._path_set is None:
            self._path_set = frozenset(self.paths)
        return self._path_set

    def __contains__(self, path: object) -> bool:
        return path in self.path_set()

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    @property
    def name(self) -> str:
        """The pack's own name (`mf.Manifest.name`)."""
        return self.head.name


def view_of(m: mf.Manifest, digest: Digest) -> PackView:
    """The view of the manifest ``m``, whose bytes have ``digest``."""
    paths: list[str] = []
    digests: list[bytes] = []
    for e in m.entries:
        if e.digest is not None and e.kind == "file":
            paths.append(e.path)
            digests.append(bytes(e.digest))
    head = mf.Manifest(
        scope=m.scope,
        target=m.target,
        tokenizer=m.tokenizer,
        budget_target=m.budget_target,
        budget_max=m.budget_max,
        entries=(),
        parent=m.parent,
        kind=m.kind,
        format=m.format,
        query=m.query,
        sources=m.sources,
    )
    return PackView(digest, head, paths, digests)


def encode(view: PackView) -> bytes:
    """A view's bytes: msgpack of [head fields, the paths joined by NUL, the digests]."""
    h = view.head
    head = [
        h.scope,
        h.target,
        h.tokenizer,
        h.budget_target,
        h.budget_max,
        h.kind,
        h.format,
        bytes(h.parent) if h.parent is not None else None,
        h.query,
        [[name, bytes(d)] for name, d in h.sources],
    ]
    data: bytes = msgpack.packb(
        [head, _SEPARATOR.join(view.paths), view.digests], use_bin_type=True
    )
    return data


def decode(data: bytes, digest: Digest) -> PackView | None:
    """The view ``encode`` made, or None when the bytes are not one (a miss, never an error:
    the cache frames what it holds, so this is a view of another layout or a bug)."""
    try:
        head, joined, digests = msgpack.unpackb(data, raw=False)
        scope, target, tokenizer, budget_target, budget_max, kind, fmt, parent, query, sources = (
            head
        )
        paths = joined.split(_SEPARATOR) if joined else []
        if len(paths) != len(digests):
            return None
        m = mf.Manifest(
            scope=scope,
            target=target,
            tokenizer=tokenizer,
            budget_target=budget_target,
            budget_max=budget_max,
            entries=(),
            parent=Digest(parent) if parent is not None else None,
            kind=kind,
            format=fmt,
            query=query,
            sources=tuple((str(name), Digest(d)) for name, d in sources),
        )
    except (ValueError, TypeError, CasError, msgpack.ExtraData):
        return None
    return PackView(digest, m, paths, digests)


def remember(cache: Cache, m: mf.Manifest, digest: Digest) -> None:
    """Put the view of ``m`` (whose bytes have ``digest``) in ``cache``, unless it is there,
    and the index of its paths' words (`packer.pathwords`): what a writer of manifests does,
    so that searches need not decode them, nor go through every path for a word."""
    if cache.get(VIEW_NS, bytes(digest)) is None:
        view = view_of(m, digest)
        cache.put(VIEW_NS, bytes(digest), encode(view))
        paths = view.paths
    else:
        paths = [e.path for e in m.entries if e.digest is not None and e.kind == "file"]
    pathwords.remember(cache, paths)  # made once per list of paths


class Views:
    """Views of a project's packs, kept while a process lives (see the module docstring).
    Not thread-safe: one caller at a time (the MCP server runs its tools one at a time)."""

    def __init__(self, store: Store, files: locate.PackFiles | None = None) -> None:
        self.store = store
        self.files = files if files is not None else locate.PackFiles()
        self._views: dict[Digest, PackView] = {}
        # The index of each view's path words the cache held (None: it held none), by digest.
        self._path_indexes: dict[Digest, PathIndex | None] = {}
        self._cache = Cache(store)
        # The last source built (`packer.search.source`), by what it was built from.
        self.last_source: tuple[Any, Any] | None = None

    def of_file(self, path: Path) -> PackView:
        """The view of the pack file ``path``."""
        data, digest = self.files.read(path)
        return self._view(digest, lambda: self.files.manifest(data, digest, str(path), self.store))

    def named(self, spec: str, folder: str | os.PathLike[str]) -> tuple[str, PackView]:
        """The pack ``spec`` names (as `cas.locate.load_pack` reads it: a name in ``folder``,
        a path, a digest in the store), by its name, with its view."""
        if spec.startswith(locate.DIGEST_PREFIX):
            digest = Digest.parse(spec)
            found = self._views.get(digest)
            if found is None:  # read from the store: a digest no blob has is no pack
                m = locate.load_pack(spec, folder, self.store, self.files).manifest
                found = self._views[digest] = view_of(m, digest)
            return found.name, found
        path = locate.find_pack_file(spec, folder)
        return locate.name_of(path), self.of_file(path)

    def in_folder(self, folder: str | os.PathLike[str]) -> list[tuple[str, PackView]]:
        """The packs in ``folder``, by name (in `cas.locate.pack_files` order), with their
        views. Views no file holds any more are forgotten."""
        paths = locate.pack_files(folder)
        self.files.retain(folder, paths)
        out = [(locate.name_of(path), self.of_file(path)) for path in paths]
        kept = self.files.digests()
        for digest in [d for d in self._views if d not in kept]:
            del self._views[digest]
            self._path_indexes.pop(digest, None)
        return out

    def path_index(self, view: PackView) -> PathIndex | None:
        """The index of the words of ``view``'s paths, when the cache holds it."""
        if view.digest not in self._path_indexes:
            self._path_indexes[view.digest] = pathwords.cached(self._cache, view.paths)
        return self._path_indexes[view.digest]

    def _view(self, digest: Digest, manifest: Callable[[], mf.Manifest]) -> PackView:
        found = self._views.get(digest)
        if found is not None:
            return found
        cached = self._cache.get(VIEW_NS, bytes(digest))
        found = decode(cached, digest) if cached is not None else None
        if found is None:
            found = view_of(manifest(), digest)
        self._views[digest] = found
        return found
