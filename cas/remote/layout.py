"""Where things live on a remote, and which manifests a push or pull is about.

Remote layout under ``s3://bucket/prefix/``::

    blobs/<hex>             a blob's frame exactly as the store keeps it (raw, zstd or chunk index)
    chunks/<hex>            a chunk's frame (raw or zstd)
    manifests/<name>.pack   a pack's manifest bytes; its blob is under blobs/ too

``<hex>`` is the 64 lowercase hex digits of the content's BLAKE3 digest. Frames travel as stored,
so transfers stay compressed. Blob and chunk objects are content-addressed and never overwritten.

Existence checks use ListObjectsV2, not a HEAD per object: `seek_listing` lists from just below
each wanted key and settles every wanted key that falls inside a returned page, so it costs
about min(wanted keys, remote keys / 1000) requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest
from cas.errors import BlobNotFound, InputError, NotFound, UsageError
from cas.remote.s3 import LIST_PAGE, Bucket, ObjectInfo, ObjectTooLarge
from cas.store import Store

BLOBS: Final = "blobs/"
CHUNKS: Final = "chunks/"
MANIFESTS: Final = "manifests/"
PACK_SUFFIX: Final = ".pack"
MANIFEST_DIRNAME: Final = "manifests"
# A pack name becomes a local file name: no separators, no leading dot, nothing to escape.
_PACK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
# A chunk index frame: the frame header, then chunk size and count (u32 each), then digests.
_INDEX_FIXED: Final = frame.HEADER_SIZE + 8


# --- manifests on this machine ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalManifest:
    """A manifest to push or pull for: its pack name, bytes, digest and where it came from."""

    name: str
    data: bytes
    digest: Digest
    manifest: mf.Manifest
    source: str


def manifests_dir(store: Store) -> Path:
    """The project's manifests folder: beside the store, as ``cas pack`` writes it."""
    return store.path.parent / MANIFEST_DIRNAME


def check_pack_name(name: str, source: str) -> str:
    if not _PACK_NAME.fullmatch(name) or name.endswith("."):
        raise UsageError(
            f"{source}: pack name {name!r} is not usable as a file name (letters, digits and "
            "._- only, not starting with a dot)"
        )
    return name


def local_manifests(
    store: Store, specs: Sequence[str], *, hint: str = "run 'cas pack' or name a MANIFEST"
) -> list[LocalManifest]:
    """The manifests named by ``specs`` (a file, a pack name under the manifests folder, or a
    digest in the store), or every ``*.pack`` in the manifests folder when ``specs`` is empty
    (none there is a `UsageError` ending with ``hint``)."""
    folder = manifests_dir(store)
    if not specs:
        files = sorted(folder.glob(f"*{PACK_SUFFIX}"), key=lambda p: p.name.encode())
        if not files:
            raise UsageError(f"no manifests in {folder}: {hint}")
        specs = [str(p) for p in files]
    found: dict[str, LocalManifest] = {}
    for spec in specs:
        item = _local_manifest(store, folder, spec)
        other = found.get(item.name)
        if other is not None and other.digest != item.digest:
            raise UsageError(f"{other.source} and {item.source} are both named {item.name!r}")
        found[item.name] = item
    return [found[name] for name in sorted(found, key=str.encode)]


def _local_manifest(store: Store, folder: Path, spec: str) -> LocalManifest:
    if spec.startswith("blake3:"):
        digest = Digest.parse(spec)
        try:
            data = store.get(digest)
        except BlobNotFound:
            raise NotFound("pack", spec, "no blob with that digest in the store") from None
        manifest = mf.decode(data, spec)
        return LocalManifest(check_pack_name(manifest.name, spec), data, digest, manifest, spec)
    path = Path(spec)
    if not path.is_file():
        candidate = folder / f"{spec.removesuffix(PACK_SUFFIX)}{PACK_SUFFIX}"
        if not candidate.is_file():
            known = sorted(p.stem for p in folder.glob(f"*{PACK_SUFFIX}"))
            hint = f"packs in {folder}: {', '.join(known)}" if known else "run 'cas pack' first"
            raise NotFound("pack", spec, hint)
        path = candidate
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    manifest = mf.decode(data, str(path))
    name = check_pack_name(path.name.removesuffix(PACK_SUFFIX), str(path))
    return LocalManifest(name, data, Digest.of(data), manifest, str(path))


# --- listing ------------------------------------------------------------------------------------


def seek_listing(
    bucket: Bucket, folder: str, names: Iterable[str], *, page: int = LIST_PAGE
) -> dict[str, ObjectInfo]:
    """Which of ``names`` (hex keys) exist under ``folder``, with their listing.

    Each ListObjectsV2 call starts just below the smallest unsettled name; every wanted name up
    to the last key of the page is settled by that page (all of them when it is the last page).
    Few wanted keys cost about one request each; many cost one pass over the folder.
    """
    wanted = sorted(set(names))
    found: dict[str, ObjectInfo] = {}
    cursor = ""
    i = 0
    while i < len(wanted):
        name = wanted[i]
        # Just below ``name``: no 64-hex key sorts between the two.
        floor = name[:-1] + chr(ord(name[-1]) - 1)
        objects, more = bucket.list_page(folder, start_after=max(floor, cursor), max_keys=page)
        listed = {o.name: o for o in objects}
        end = objects[-1].name if more else None
        if end is not None:
            cursor = end
        while i < len(wanted) and (end is None or wanted[i] <= end):
            info = listed.get(wanted[i])
            if info is not None:
                found[wanted[i]] = info
            i += 1
    return found


def remote_pack_names(bucket: Bucket) -> tuple[list[str], list[tuple[str, str]]]:
    """(usable pack names under ``manifests/``, problems with the unusable ones)."""
    names: list[str] = []
    problems: list[tuple[str, str]] = []
    for obj in bucket.list_all(MANIFESTS):
        if not obj.name.endswith(PACK_SUFFIX):
            continue
        name = obj.name.removesuffix(PACK_SUFFIX)
        if "/" in name or not _PACK_NAME.fullmatch(name) or name.endswith("."):
            problems.append((MANIFESTS + obj.name, "not a usable pack name"))
            continue
        names.append(name)
    return sorted(names, key=str.encode), problems


# --- objects --------------------------------------------------------------------------------------


def max_object(store: Store) -> int:
    """The largest object cas writes under blobs/ or chunks/: a frame of the largest content a
    store accepts from elsewhere (a chunk index of that many chunks is far smaller)."""
    return store.foreign_frame_limit + _INDEX_FIXED


def index_chunks(value: bytes) -> list[Digest] | None:
    """The chunks a frame lists when it is a chunk index; None for raw and zstd frames."""
    if frame.header(value).codec != frame.INDEX:
        return None
    return frame.decode_index(value)[2]


def hexes(digests: Iterable[Digest]) -> list[str]:
    return [d.hex() for d in digests]


def maybe_index(size: int) -> bool:
    """Whether an object of ``size`` bytes could be a chunk index (header, two u32, digests)."""
    return size >= _INDEX_FIXED + 32 and (size - _INDEX_FIXED) % 32 == 0


def fetch_manifest(bucket: Bucket, name: str) -> bytes | str | None:
    """The remote's pack ``name``: its bytes, None if absent, or why it was refused unread."""
    try:
        return bucket.get(MANIFESTS + name + PACK_SUFFIX, max_size=mf.MAX_BYTES)
    except ObjectTooLarge as exc:
        return str(exc)
