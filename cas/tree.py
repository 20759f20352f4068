"""The regular files below a directory, for ``cas put -r``: sorted, never following symlinks."""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


def regular_files(
    top: str | os.PathLike[str], *, skip: Path | None = None
) -> Iterator[str | Skipped]:
    """Paths of regular files below ``top`` (as ``top/rel``), in sorted order; anything else
    (FIFOs, sockets, devices, symlinks, unreadable folders) comes back as `Skipped`. ``skip`` is
    a directory never entered (the store itself)."""
    root = os.fspath(top)
    skip_real = os.path.realpath(skip) if skip is not None else None
    stack = [root]
    while stack:
        folder = stack.pop()
        if skip_real is not None and os.path.realpath(folder) == skip_real:
            continue
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: os.fsencode(e.name))
        except OSError as exc:
            yield Skipped(folder, f"cannot list directory: {exc.strerror or exc}")
            continue
        subdirs: list[str] = []
        for entry in entries:
            path = os.path.join(folder, entry.name)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:
                yield Skipped(path, exc.strerror or str(exc))
                continue
            if stat_mod.S_ISDIR(mode):
                subdirs.append(path)
            elif stat_mod.S_ISREG(mode):
                yield path
            elif stat_mod.S_ISLNK(mode):
                yield Skipped(path, "symlink not followed")
            elif stat_mod.S_ISFIFO(mode):
                yield Skipped(path, "FIFO skipped")
            else:
                yield Skipped(path, "not a regular file")
        # Depth-first in sorted order: push in reverse so the smallest name is visited first.
        stack.extend(reversed(subdirs))
