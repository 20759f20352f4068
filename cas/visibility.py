"""Which manifests carry an agent's memory, and who may see them.

The memory (the ``memory`` package, above the engine) keeps each scope's memory apart in the
store. What is made from a memory carries it out: memory packs are written to the project's
manifests folder, and a load drawn on a memory records it among its sources, so every listing,
search and load of the project would find them. This module is the one place that says which
memory scopes a manifest carries, read from the manifest itself, never from a file's name:

* a memory state (kind ``memory``): the scope it is a state of;
* a memory pack (`is_memory_pack`: a scope starting with `PACK_PREFIX`, ``mem.``, which no
  ``cas.toml`` scope and no ``cas load --name`` can start with, as theirs hold no dot): the scope
  of the memory state it was made from, its parent, read from the store. Pack names map scopes
  to letters, digits and ``._-`` and two scopes may share one (``session:x@y`` and
  ``session:x_at_y``), so the name alone does not say whose it is. A memory pack whose parent
  cannot be read carries `UNKNOWN`, which nobody is granted: it is shown to no one;
* a load (kind ``load``): the memories among its sources, named `SOURCE_PREFIX` + scope
  (``memory/session:42``, the memory's pin), and `UNKNOWN` for a source that is a memory pack.

A manifest carrying no scope is the project's, visible to all. One carrying scopes is visible
only where every one of them was asked for (`visible`): by default nowhere, so a session's memory
never shows in another's listing, search or load. A pack named outright (``cas search --pack``,
an MCP tool's ``pack``) goes through `granted_pack`, the one check both surfaces make: refused
(`MemoryNotGranted`, saying which ``--memory-scope`` grants it) unless it is visible there.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Final

from cas import manifest as mf
from cas.errors import CasError, MemoryNotGranted
from cas.locate import LocatedPack, PackFiles, load_pack
from cas.store import Store

PACK_PREFIX: Final = "mem."  # the scope of every memory pack (`memory.scopes.pack_scope`)
SOURCE_PREFIX: Final = "memory/"  # a memory among a load's sources (`memory.scopes.pin_name`)
MEMORY_KIND: Final = "memory"
UNKNOWN: Final = "?"  # a memory whose scope cannot be told: granted to nobody


def is_memory_pack(m: mf.Manifest) -> bool:
    """Whether ``m`` is a memory pack (`memory.packs`), made from a memory state."""
    return m.kind != MEMORY_KIND and m.scope.startswith(PACK_PREFIX)


def source_name(scope: str) -> str:
    """The name a memory goes by among a load's sources: ``memory/<scope>``."""
    return SOURCE_PREFIX + scope


def carried(m: mf.Manifest, store: Store | None) -> frozenset[str]:
    """The memory scopes whose content ``m`` holds (none: it is the project's). ``store`` reads a
    memory pack's parent; without one, a memory pack carries `UNKNOWN`."""
    if m.kind == MEMORY_KIND:
        return frozenset({m.scope})
    if is_memory_pack(m):
        return frozenset({_parent_scope(m, store)})
    out: set[str] = set()
    for name, _digest in m.sources:
        if name.startswith(SOURCE_PREFIX):
            out.add(name[len(SOURCE_PREFIX) :])
        elif name.startswith(PACK_PREFIX):
            out.add(UNKNOWN)
    return frozenset(out)


def visible(m: mf.Manifest, store: Store | None, scopes: Collection[str]) -> bool:
    """Whether ``m`` may be shown where the memories of ``scopes`` were asked for: every scope
    it carries is one of them."""
    return carried(m, store) <= frozenset(scopes)


def granted_pack(
    spec: str,
    folder: str | os.PathLike[str],
    store: Store,
    scopes: Collection[str],
    files: PackFiles | None = None,
) -> LocatedPack:
    """The pack ``spec`` names (`cas.locate.load_pack`: a name in ``folder``, a path, a digest,
    read through ``files`` when given) when the memories of ``scopes`` let it be seen;
    `MemoryNotGranted` naming the scopes to ask for when it holds another memory."""
    found = load_pack(spec, folder, store, files)
    check_granted(found.name, found.manifest, store, scopes)
    return found


def check_granted(name: str, m: mf.Manifest, store: Store, scopes: Collection[str]) -> None:
    """`MemoryNotGranted` unless the pack ``name`` (its manifest ``m``, whose entries are not
    read) may be seen where the memories of ``scopes`` were asked for."""
    missing = carried(m, store) - frozenset(scopes)
    if missing:
        raise MemoryNotGranted(name, sorted(missing - {UNKNOWN}), UNKNOWN in missing)


def _parent_scope(m: mf.Manifest, store: Store | None) -> str:
    if store is None or m.parent is None:
        return UNKNOWN
    try:
        parent = mf.decode(store.get(m.parent), str(m.parent))
    except CasError:  # gone, damaged, or not a manifest: verify says which
        return UNKNOWN
    return parent.scope if parent.kind == MEMORY_KIND else UNKNOWN
