"""Naming a pack on the command line: a manifest file, a pack name, or a digest."""

from __future__ import annotations

from pathlib import Path

from cas import manifest as mf
from cas.digest import Digest
from cas.errors import BlobNotFound, NotFound
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
            known = sorted(p.stem for p in (root / MANIFEST_DIR).glob("*.pack"))
            hint = f"packs here: {', '.join(known)}" if known else "run 'cas pack' first"
            raise NotFound("pack", spec, hint)
    data = path.read_bytes()
    return mf.decode(data, str(path)), Digest.of(data), str(path)
