"""Orphan packs: manifests in a project's ``manifests/`` that its configuration no longer makes.

A scope or target removed from ``cas.toml`` leaves its pack behind, still served, searched and
kept by gc. `cas pack` names such packs, ``cas pack --check`` fails on them and ``cas pack
--prune`` removes them (gc then frees the blobs only they held).

**Produced** means: the pack ``SCOPE.TARGET`` (``SCOPE`` for a scope without targets) of every
scope and target of the configuration (`Config.scopes`, the defaults when there is no
cas.toml), whichever scopes a run packs. What other commands write there is never an orphan:

* a load (a manifest of kind ``load``: ``load.pack``, or ``NAME.pack`` from ``cas load
  --name NAME``), told by its manifest, not its name;
* a memory pack (``mem.*``, `cas.visibility.PACK_PREFIX`, ``cas mem pack``) or a memory state.

Anything else named ``*.pack`` there is an orphan, a file that is no manifest at all included
(no configuration makes it either). A pack made from Python with a `packer.PackScope` that is
not in cas.toml is one too: name its scope in cas.toml to keep it.
"""

from __future__ import annotations

import os
from pathlib import Path

from cas import manifest as mf
from cas.errors import CasError, OutputError
from cas.locate import manifest_dir, name_of, pack_files
from cas.visibility import MEMORY_KIND, PACK_PREFIX, is_memory_pack
from packer.config import Config

__all__ = ["find_orphans", "produced", "prune"]

_LOAD_KIND = "load"


def produced(config: Config) -> set[str]:
    """The names of every pack ``config`` makes."""
    return {mf.pack_name(s.name, t.name or None) for s in config.scopes for t in s.targets}


def _made_elsewhere(path: Path) -> bool:
    """Whether the manifest file ``path`` is a load, a memory pack or a memory state."""
    if name_of(path).startswith(PACK_PREFIX):
        return True
    try:
        m = mf.decode(path.read_bytes(), str(path))
    except (OSError, CasError):
        return False
    return m.kind in (_LOAD_KIND, MEMORY_KIND) or is_memory_pack(m)


def find_orphans(root: Path, config: Config) -> list[Path]:
    """The manifest files in ``root``'s manifests folder that ``config`` does not make and no
    other command wrote, by the bytes of their names."""
    made = produced(config)
    return [
        p
        for p in pack_files(manifest_dir(root))
        if name_of(p) not in made and not _made_elsewhere(p)
    ]


def prune(paths: list[Path]) -> None:
    """Remove the orphan manifest files ``paths`` (one already gone is no error)."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OutputError(str(path), exc.strerror or str(exc)) from None
