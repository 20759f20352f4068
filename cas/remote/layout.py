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

A remote is never trusted, and that includes how much work it may ask for. Every object is read
with a size bound; a frame must declare the size the manifest gives its blob (`size_problem`),
checked before anything is decompressed; a chunk index must declare no more than the blob size
limit, list no more chunks than that limit allows, and place each chunk where its size fits
(`index_problem`, `chunk_sizes`), all checked before a chunk is fetched or hashed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Final

from cas import frame
from cas import manifest as mf
from cas.digest import Digest
from cas.display import echoed, human_bytes
from cas.errors import UsageError
from cas.locate import (
    MANIFEST_DIRNAME,
    LocatedPack,
    check_pack_name,
    file_name,
    is_pack_file,
    load_pack,
    name_of,
    pack_files,
    usable_pack_name,
)
from cas.remote.config import setting_hint
from cas.remote.storage import LIST_PAGE, ObjectInfo, ObjectStorage, ObjectTooLarge
from cas.store import Store

BLOBS: Final = "blobs/"
CHUNKS: Final = "chunks/"
# The remote keeps packs as a project does (`cas.locate`): manifests/<name>.pack
MANIFESTS: Final = MANIFEST_DIRNAME + "/"
# A chunk index frame: the frame header, then chunk size and count (u32 each), then digests.
_INDEX_FIXED: Final = frame.HEADER_SIZE + 8
# Reading a chunked blob costs per byte and per chunk (a lookup, a decode, a hand-off between
# threads: about what hashing 64 KiB costs). An index may list one chunk per this many bytes of
# the blob size limit, so an index of many tiny chunks is bounded like one of a few large ones.
CHUNK_COST: Final = 64 << 10


# --- manifests on this machine ------------------------------------------------------------------

# A pack to push or pull for, as `cas.locate` finds it on this machine.
LocalManifest = LocatedPack


def misnamed(manifest: mf.Manifest, name: str) -> str | None:
    """What is wrong when the manifest stored as pack ``name`` is another pack's (a remote
    that swapped two manifests); None when the names agree."""
    if manifest.name == name:
        return None
    return f"it holds the manifest of pack {manifest.name!r}"


def local_manifests(
    store: Store,
    specs: Sequence[str],
    *,
    folder: str | os.PathLike[str],
    hint: str = "run 'cas pack' or name a MANIFEST",
) -> list[LocalManifest]:
    """The manifests named by ``specs`` (a file, a pack name in the manifests folder
    ``folder``, or a digest in the store), or every pack in ``folder`` when ``specs`` is empty
    (none there is a `UsageError` ending with ``hint``). Each must carry a usable pack name,
    and a file must be named after the pack it holds."""
    if not specs:
        files = pack_files(folder)
        if not files:
            raise UsageError(f"no manifests in {folder}: {hint}")
        specs = [str(p) for p in files]
    found: dict[str, LocalManifest] = {}
    for spec in specs:
        item = load_pack(spec, folder, store)
        check_pack_name(item.name, item.source)
        wrong = misnamed(item.manifest, item.name)
        if wrong is not None:
            proper = file_name(item.manifest.name)
            raise UsageError(f"{item.source}: {wrong}; name the file {proper}")
        other = found.get(item.name)
        if other is not None and other.digest != item.digest:
            raise UsageError(f"{other.source} and {item.source} are both named {echoed(item.name)}")
        found[item.name] = item
    return [found[name] for name in sorted(found, key=str.encode)]


# --- listing ------------------------------------------------------------------------------------


def seek_listing(
    bucket: ObjectStorage, folder: str, names: Iterable[str], *, page: int = LIST_PAGE
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


def remote_packs(bucket: ObjectStorage) -> tuple[dict[str, ObjectInfo], list[tuple[str, str]]]:
    """(usable packs under ``manifests/`` by name, in name order; problems with the unusable
    ones). Only the listing: no manifest is read."""
    found: dict[str, ObjectInfo] = {}
    problems: list[tuple[str, str]] = []
    for obj in bucket.list_all(MANIFESTS):
        if not is_pack_file(obj.name):
            continue
        name = name_of(obj.name)
        if "/" in obj.name or not usable_pack_name(name):
            problems.append((MANIFESTS + obj.name, "not a usable pack name"))
            continue
        found[name] = obj
    return {name: found[name] for name in sorted(found, key=str.encode)}, problems


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


def claimed_sizes(manifest: mf.Manifest) -> tuple[dict[Digest, int], dict[Digest, str]]:
    """(the size each content blob has by the manifest's entries, problems with blobs that
    entries give different sizes). Summaries have no size in a manifest and are not listed."""
    sizes: dict[Digest, int] = {}
    problems: dict[Digest, str] = {}
    for entry in manifest.entries:
        if entry.digest is None:
            continue
        known = sizes.setdefault(entry.digest, entry.size)
        if known != entry.size:
            problems[entry.digest] = f"the manifest gives it {known} and {entry.size} bytes"
    return sizes, problems


def size_problem(value: bytes, claimed: int | None) -> str | None:
    """What is wrong when frame ``value`` does not hold the ``claimed`` size (from the header,
    before anything is decompressed or fetched); None when it does or nothing is claimed."""
    if claimed is None:
        return None
    try:
        raw_size = frame.header(value).raw_size
    except frame.FrameError:
        return None  # the frame check names what is wrong with it
    if raw_size == claimed:
        return None
    return f"its frame declares {raw_size} bytes where the manifest says {claimed}"


def index_problem(value: bytes, max_blob: int) -> str | None:
    """What is wrong when a chunk index asks for more work than one blob may (a declared size
    over ``max_blob``, or more chunks than it allows); None for other frames and for an index
    within bounds. Only the index's header is read."""
    try:
        if frame.header(value).codec != frame.INDEX:
            return None
        raw_size, _chunk_size, count = frame.index_shape(value)
    except frame.FrameError:
        return None  # the frame check names what is wrong with it
    hint = f"raise the limit with {setting_hint('max_blob')}"
    if raw_size > max_blob:
        return (
            f"its chunk index declares {human_bytes(raw_size)} ({raw_size} bytes), over the "
            f"limit of {human_bytes(max_blob)} for one blob ({hint})"
        )
    most = max(1, max_blob // CHUNK_COST)
    if count > most:
        return (
            f"its chunk index lists {count} chunks, over the limit of {most} for one blob (one "
            f"per {human_bytes(CHUNK_COST)} of the {human_bytes(max_blob)} blob limit; {hint})"
        )
    return None


def chunk_sizes(value: bytes) -> tuple[list[Digest], dict[Digest, int]] | str:
    """(the chunks a chunk index lists, the raw size each must hold at its places), or what is
    wrong when a chunk is listed at places that need different sizes."""
    raw_size, chunk_size, chunks = frame.decode_index(value)
    last = raw_size - chunk_size * (len(chunks) - 1)
    sizes: dict[Digest, int] = {}
    for i, chunk in enumerate(chunks):
        size = last if i == len(chunks) - 1 else chunk_size
        if sizes.setdefault(chunk, size) != size:
            return f"chunk {chunk} is listed where it must hold {chunk_size} and {last} bytes"
    return chunks, sizes


def manifest_key(name: str) -> str:
    """The remote key of pack ``name``: ``manifests/<name>.pack``, as in a project."""
    return MANIFESTS + file_name(name)


def fetch_manifest(bucket: ObjectStorage, name: str) -> bytes | str | None:
    """The remote's pack ``name``: its bytes, None if absent, or why it was refused unread."""
    try:
        return bucket.get(manifest_key(name), max_size=mf.MAX_BYTES)
    except ObjectTooLarge as exc:
        return str(exc)
