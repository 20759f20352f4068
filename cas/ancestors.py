"""The folders above a path: the one way code of this project climbs a folder chain.

A loop that goes up folder by folder (the package a Python file belongs to, a Rust crate's root,
the store or the project found above the working directory) ends only if each step leaves a
strictly shorter path and the root is left once. Computing the next folder by hand
(``path.rpartition("/")[0]`` in a ``while``) gets this wrong at the root: the parent of ``""``
is ``""`` again, and a test like ``while folder in packages`` never leaves it when the root
itself qualifies. So such loops iterate over these generators instead: each is a ``for`` over
a sequence fixed before the first step (the positions of ``/`` in the path, or
`pathlib.PurePath.parents`), every value strictly shorter than the one before, the root last and
exactly once, so a loop over them ends whatever its body tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

__all__ = ["ancestors", "at_and_above"]


def ancestors(path: str) -> Iterator[str]:
    """The folders holding ``path``, a POSIX path relative to a root (``a/b/c.py``), nearest
    first and ending with the root ``""``: ``a/b``, ``a``, ``""``. Each folder comes once, each
    shorter than the one before; the root itself (``""``) has none. Any string ends the same
    way: a leading, doubled or trailing ``/`` only yields fewer or shorter folders."""
    cuts = []  # the positions of "/" after the first character, found by `str.find`
    at = path.find("/", 1)
    while at >= 0:
        cuts.append(at)
        at = path.find("/", at + 1)
    for cut in reversed(cuts):
        yield path[:cut]
    if path:
        yield ""


def at_and_above(folder: Path) -> Iterator[Path]:
    """``folder``, then each folder above it up to the top of its path (``/`` for an absolute
    one, ``.`` for a relative one), each once."""
    yield folder
    yield from folder.parents
