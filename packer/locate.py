"""Naming a pack on the command line: a manifest file, a pack name, or a digest."""

from __future__ import annotations

import os
from pathlib import Path

from cas import manifest as mf
from cas.digest import Digest
from cas.display import shown
from cas.errors import BlobNotFound, NotFound, ProblemError
from cas.store import Store

MANIFEST_DIR = "manifests"


def load_pack(spec: str, root: Path, store: Store | None) -> tuple[mf.Manifest, Digest, str]:
    """(manifest, its digest, where it came from) for a path, ``scope[.target]`` or digest."""
    if spec.startswith("blake3:"):
        digest = Digest.parse(spec)
        if store is None:
            raise NotFound("store", "", "a digest names a pack in the store: run 'cas init'")
        try:
            data = store.get(digest)
        except BlobNotFound:
            raise NotFound("pack", spec, "no blob with that digest in the store") from None
        return mf.decode(data, spec), digest, spec
    path = Path(spec)
    if not path.is_file():
        candidate = root / MANIFEST_DIR / f"{spec}.pack"
        if candidate.is_file():
            path = candidate
        else:
            raise NotFound("pack", spec, _hint(root / MANIFEST_DIR))
    data = path.read_bytes()
    return mf.decode(data, str(path)), Digest.of(data), str(path)


def _hint(folder: Path) -> str:
    if os.path.lexists(folder) and not folder.is_dir():
        kind = "a dangling symlink" if folder.is_symlink() and not folder.exists() else "a file"
        return f"{folder} is {kind}, not the folder 'cas pack' writes packs to"
    known = sorted(p.stem for p in folder.glob("*.pack")) if folder.is_dir() else []
    return f"packs here: {', '.join(known)}" if known else "run 'cas pack' first"


def pack_entry(m: mf.Manifest, source: str, path: str, *, summary: bool = False) -> Digest:
    """The digest of ``path``'s body in a pack (or of its summary): NotFound for a path the pack
    does not hold (with the nearest paths it does), an error for a withheld secret."""
    wanted = path.removeprefix("./")
    entry = m.entry(wanted)
    if entry is None:
        near = sorted(
            e.path for e in m.entries if e.path.rsplit("/", 1)[-1] == wanted.rsplit("/", 1)[-1]
        )
        hint = (
            f"did you mean {', '.join(shown(p) for p in near[:3])}?"
            if near
            else (f"'cas show {source}' lists every path")
        )
        raise NotFound("path", wanted, hint)
    if entry.digest is None:
        raise ProblemError(
            f"{shown(wanted)} was withheld as a secret ({entry.reason or 'secret'}): its body is "
            "stored nowhere; read it from the working tree if you may"
        )
    if summary:
        if entry.summary is None:
            raise NotFound("summary of", wanted, f"the pack shows it {entry.tier}, not summarized")
        return entry.summary
    return entry.digest
