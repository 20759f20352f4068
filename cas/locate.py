"""Where packs live and how one is named: the one module that knows.

A pack is a manifest file ``<project>/manifests/<name>.pack``; ``<name>`` is the manifest's
own name (`Manifest.name`: ``scope`` or ``scope.target``), usable as a file name
(`check_pack_name`).

**The anchor is the project, never the store.** ``<project>`` is the project a command runs in:
the CLI finds it from the working directory (the nearest folder at or above it holding
``cas.toml``, a ``pyproject.toml`` with ``[tool.cas]``, or ``.git``; `casapp.cli._common`) and
hands its `manifest_dir` to the library. Where the store is (``.cas`` found above, ``--store``,
``CAS_STORE``) never moves a project's packs: ``cas pack`` and ``cas load`` write there,
``show``, ``render``, ``cat``, ``diff``, ``pin`` and ``verify`` look a pack name up there, ``cas
push`` sends what is there and ``cas pull`` writes there, whichever store they use.

A store may serve many projects, so what gc keeps (`cas.roots`) is more than one folder: the
manifests folder of the project the command runs in, every folder recorded in the store (a
writer records the folder it writes packs to before its first file there, unless it is a root
already: `cas.roots.prepare_manifest_dir`), and `store_manifest_dir`, the manifests folder of
the project the store itself sits in (``<project>/.cas``), which is a root whatever project a
command runs in.

Loading a pack named on the command line (`load_pack`) takes a path to a manifest file, a pack
name looked up in a manifests folder, or a digest of a manifest blob in the store.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final, NamedTuple

from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.display import echoed, shown
from cas.errors import BlobNotFound, CasError, InputError, NotFound, ProblemError, UsageError
from cas.store import Store

MANIFEST_DIRNAME: Final = "manifests"
PACK_SUFFIX: Final = ".pack"
DIGEST_PREFIX: Final = "blake3:"
# Pins that hold loads, which name them as packs: a conversation's last context
# (``context/SCOPE/SESSION``, `memory.context`) and the loads made over MCP (``load/mcp/N``).
LOAD_PINS: Final = ("context/", "load/")
# A pack name becomes a file name: no separators, no leading dot, nothing to escape.
_PACK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


# --- names --------------------------------------------------------------------------------------


def usable_pack_name(name: str) -> bool:
    """Whether ``name`` can be a pack's file name (letters, digits and ``._-``, not starting
    with a dot nor ending with one, at most 200 characters)."""
    return bool(_PACK_NAME.fullmatch(name)) and not name.endswith(".")


def check_pack_name(name: str, source: str) -> str:
    """``name``, or a `UsageError` naming ``source`` when it cannot be a pack's file name."""
    if not usable_pack_name(name):
        raise UsageError(
            f"{source}: pack name {echoed(name)} is not usable as a file name (letters, digits and "
            "._- only, not starting with a dot)"
        )
    return name


def file_name(name: str) -> str:
    """The file name of pack ``name`` (given with or without its suffix)."""
    return name.removesuffix(PACK_SUFFIX) + PACK_SUFFIX


def name_of(path: str | os.PathLike[str]) -> str:
    """The pack name a manifest file's name gives: ``repo.claude.pack`` -> ``repo.claude``."""
    return Path(path).name.removesuffix(PACK_SUFFIX)


def is_pack_file(name: str) -> bool:
    return name.endswith(PACK_SUFFIX)


# --- folders ------------------------------------------------------------------------------------


def manifest_dir(project: str | os.PathLike[str]) -> Path:
    """The folder of a project's packs: ``<project>/manifests``."""
    return Path(project) / MANIFEST_DIRNAME


def store_manifest_dir(store_path: str | os.PathLike[str]) -> Path:
    """The manifests folder of the project a store sits in (``<project>/.cas``): a gc root
    whatever project a command runs in."""
    return manifest_dir(Path(store_path).parent)


def pack_path(folder: str | os.PathLike[str], name: str) -> Path:
    """Where pack ``name`` lives in the manifests folder ``folder``."""
    return Path(folder) / file_name(name)


def pack_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The pack files directly in ``folder``, by the bytes of their names; none when the
    folder does not exist."""
    where = Path(folder)
    if not where.is_dir():
        return []
    found = [p for p in where.iterdir() if is_pack_file(p.name) and p.is_file()]
    return sorted(found, key=lambda p: os.fsencode(p.name))


def pack_names(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the packs directly in ``folder``, in the order of `pack_files`."""
    return [name_of(p) for p in pack_files(folder)]


def find_pack_file(spec: str, folder: str | os.PathLike[str]) -> Path:
    """The manifest file ``spec`` names: an existing file, else the pack of that name (with or
    without its suffix) in ``folder``; `NotFound` with a hint when there is neither."""
    path = Path(spec)
    if path.is_file():
        return path
    candidate = pack_path(folder, spec)
    if candidate.is_file():
        return candidate
    raise NotFound("pack", spec, _hint(Path(folder)))


def _hint(folder: Path) -> str:
    if os.path.lexists(folder) and not folder.is_dir():
        kind = "a dangling symlink" if folder.is_symlink() and not folder.exists() else "a file"
        return f"{folder} is {kind}, not the folder 'cas pack' writes packs to"
    known = pack_names(folder)
    return f"packs in {folder}: {', '.join(known)}" if known else "run 'cas pack' first"


# --- loading ------------------------------------------------------------------------------------


class LocatedPack(NamedTuple):
    """A pack named on the command line: its name, bytes, digest, decoded manifest, how it was
    named (a path, or the digest as given), and its file (None for a digest)."""

    name: str
    data: bytes
    digest: Digest
    manifest: mf.Manifest
    source: str
    path: Path | None = None


def load_pack(
    spec: str,
    folder: str | os.PathLike[str],
    store: Store | None,
    files: PackFiles | None = None,
) -> LocatedPack:
    """The pack ``spec`` names: a digest (read from ``store``), a path to a manifest file, or a
    pack name in the manifests folder ``folder``. A file's pack name is its file name's. With
    ``files``, what it read and decoded before is used again (`PackFiles`)."""
    files = files if files is not None else PackFiles()
    if spec.startswith(DIGEST_PREFIX):
        digest = Digest.parse(spec)
        if store is None:
            raise NotFound("store", "", "a digest names a pack in the store: run 'cas init'")
        try:
            data = store.get(digest)
        except BlobNotFound:
            raise NotFound("pack", spec, "no blob with that digest in the store") from None
        manifest = files.manifest(data, digest, spec, store)
        return LocatedPack(manifest.name, data, digest, manifest, spec)
    try:
        path = find_pack_file(spec, folder)
    except NotFound:
        pinned = pinned_load(spec, store, files)
        if pinned is None:
            raise
        return pinned
    data, digest = files.read(path)
    manifest = files.manifest(data, digest, str(path), store)
    return LocatedPack(name_of(path), data, digest, manifest, str(path), path)


def pinned_load(spec: str, store: Store | None, files: PackFiles) -> LocatedPack | None:
    """The load a pin of `LOAD_PINS` holds, named by the pin (a conversation's last context,
    ``context/SCOPE/SESSION``; a load made over MCP, ``load/mcp/N``); None when ``spec`` is no
    such pin or it holds anything but a load."""
    if store is None or not spec.startswith(LOAD_PINS):
        return None
    digest = store.refs.pins().get(spec)
    if digest is None:
        return None
    try:
        data = store.get(digest)
    except BlobNotFound:
        return None
    manifest = files.manifest(data, digest, spec, store)
    if manifest.kind != "load":
        return None
    return LocatedPack(spec, data, digest, manifest, spec)


class PackFiles:
    """Pack files as a process reads them: a file's bytes and digest, and each manifest decoded
    once per digest. A long-running process (the MCP server) keeps one, so that a pack file is
    read and hashed again only when its device, inode, size, mtime or ctime changed (a pack is
    replaced by a rename, and any write moves the ctime), and a manifest already decoded under
    a digest is not decoded again; a one-shot command makes a new one and reads everything once.
    What a file no longer names is forgotten when it is read anew. Not thread-safe: one caller
    at a time."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, ...], bytes, Digest]] = {}
        self._manifests: dict[Digest, mf.Manifest] = {}

    def read(self, path: Path) -> tuple[bytes, Digest]:
        """The bytes of the pack file ``path`` and their digest."""
        try:
            st = os.stat(path)
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            known = self._files.get(str(path))
            if known is not None and known[0] == ident:
                return known[1], known[2]
            # Kept under the identity seen before reading: a file replaced while it was read
            # has another by the next call, and is read again then.
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(str(path), exc.strerror or str(exc)) from None
        digest = Digest.of(data)
        self._files[str(path)] = (ident, data, digest)
        if known is not None and known[2] != digest:
            self.forget(known[2])
        return data, digest

    def retain(self, folder: str | os.PathLike[str], present: list[Path]) -> None:
        """Forget the files of ``folder`` not among ``present`` (removed since they were read),
        and what was kept under their digests."""
        where = Path(folder)
        keep = {str(p) for p in present}
        for key in [k for k in self._files if Path(k).parent == where and k not in keep]:
            digest = self._files.pop(key)[2]
            self.forget(digest)

    def digests(self) -> set[Digest]:
        """The digests of the files read, as last read."""
        return {digest for _ident, _data, digest in self._files.values()}

    def forget(self, digest: Digest) -> None:
        """Drop what is kept under ``digest`` unless a file still has it."""
        if digest not in self.digests():
            self._manifests.pop(digest, None)

    def manifest(
        self, data: bytes, digest: Digest, source: str, store: Store | None
    ) -> mf.Manifest:
        """The manifest of ``data`` (whose digest is ``digest``), decoded once: without
        validating it again when this store's writer recorded it valid (`known_valid`)."""
        found = self._manifests.get(digest)
        if found is None:
            found = mf.decode(data, source, trusted=known_valid(store, digest))
            self._manifests[digest] = found
        return found


def known_valid(store: Store | None, digest: Digest) -> bool:
    """Whether these bytes were encoded by a writer of manifests of this store, which recorded
    their digest (`cas.manifest.VALID_NS`): then they need no validation again (a pack's
    loader, and gc and verify reading the roots, decode them with ``trusted=True``)."""
    if store is None:
        return False
    try:
        return Cache(store).get(mf.VALID_NS, bytes(digest)) is not None
    except CasError:
        return False


def pack_digest(spec: str, folder: str | os.PathLike[str]) -> Digest:
    """The digest ``spec`` names: itself when it is one, else that of the manifest file or
    pack in ``folder`` it names (its bytes are not decoded)."""
    if spec.startswith(DIGEST_PREFIX):
        return Digest.parse(spec)
    path = find_pack_file(spec, folder)
    try:
        return Digest.of(path.read_bytes())
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None


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
            f"{echoed(wanted, quoted=False)} was withheld as a secret "
            f"({entry.reason or 'secret'}): its body is stored nowhere; read it from the working "
            "tree if you may"
        )
    if summary:
        if entry.summary is None:
            raise NotFound("summary of", wanted, f"the pack shows it {entry.tier}, not summarized")
        return entry.summary
    return entry.digest
