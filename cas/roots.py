"""The roots gc keeps and verify checks: manifest files, pins, and digests named for one run.

* every ``*.pack`` below the default manifests folder, recursively: that of the project the
  store sits in (`cas.locate.store_manifest_dir`: ``manifests/`` beside the store directory);
* every ``*.pack`` below the folders recorded in the store (`Store.recorded_dirs`): a writer of
  packs (``cas pack``, ``cas load``, ``cas pull``) records the folder it writes to when that is
  not a root already (`prepare_manifest_dir`: a store shared through ``CAS_STORE`` or
  ``--store``, or found above a nested repository), and ``cas pin --dir DIR`` records any
  folder;
* every ``*.pack`` below the folders given for one run: ``--roots DIR``, and the manifests folder
  of the project the command runs in (the CLI finds it; a store may serve many projects);
* every pin (`Store.pins`: name -> digest). A pinned blob that is a manifest keeps what it
  references too, so ``cas pin release-1 <manifest digest>`` keeps a whole pack;
* ``--keep`` digests.

A pack's ``parent`` (its baseline) is not a reference: pin or ``--keep`` a baseline to keep it.
A memory state's is: a pinned memory keeps its whole history (`pinned`).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas import manifest as mf
from cas.digest import Digest
from cas.display import echoed
from cas.errors import (
    BlobNotFound,
    CorruptBlob,
    ManifestError,
    NotFound,
    OutputError,
    UsageError,
)
from cas.locate import is_pack_file, known_valid, store_manifest_dir
from cas.store import Store, Update
from cas.store_refs import References

# Every canonical manifest starts with a msgpack map of its nine keys.
_MANIFEST_FIRST_BYTE: Final = 0x89
_MAX_PIN_NAME: Final = 200


@dataclass(frozen=True, slots=True)
class RootManifest:
    """A manifest root: where it came from and what it decoded to (or why it did not)."""

    label: str  # how reports name it: "a.pack" in the default folder, else a path or "pin:NAME"
    path: Path | None  # None for a pinned or named manifest blob
    digest: Digest | None  # of its bytes; None when the file could not be read
    manifest: mf.Manifest | None
    problem: str | None = None

    def references(self) -> set[Digest]:
        return self.manifest.references() if self.manifest is not None else set()


@dataclass(frozen=True, slots=True)
class RootDir:
    """A folder whose ``*.pack`` files are roots, and why it is one."""

    path: Path
    # "default": beside the store; "project": the project a command runs in; both may be absent.
    # "recorded": kept in the store; "extra": --roots for one run; both must exist.
    kind: str
    # Whether the store records it, under this kind or another that names the same folder: a
    # recorded folder must exist whatever else it is.
    recorded: bool = False

    def missing_problem(self) -> str | None:
        """What is wrong with the folder as it is on disk now, or None."""
        if self.path.is_dir():
            return None
        if os.path.islink(self.path):
            points = os.readlink(self.path)
            if not self.path.exists():
                return f"is a symlink to {points}, which does not exist"
            return f"is a symlink to {points}, which is not a directory"
        if os.path.lexists(self.path):
            return "is not a directory"
        if self.recorded:
            return (
                "recorded root folder is missing (if its project is gone for good, forget it "
                f"with 'cas unpin --dir {self.path}'; if it is on a disk not mounted now, mount it)"
            )
        if self.kind == "extra":
            return "root folder is missing"
        return None


@dataclass(slots=True)
class Roots:
    manifests: list[RootManifest] = field(default_factory=list)
    pins: dict[str, Digest] = field(default_factory=dict)
    keep: set[Digest] = field(default_factory=set)
    # (what, why) for roots that could not be read: missing folders, unreadable files
    problems: list[tuple[str, str]] = field(default_factory=list)

    def referenced(self) -> set[Digest]:
        """What manifests and pins name: all of it must be in the store."""
        out = set(self.pins.values())
        for m in self.manifests:
            if m.digest is not None and m.path is not None:
                out.add(m.digest)
            out |= m.references()
        return out

    def reachable(self) -> set[Digest]:
        return self.referenced() | self.keep

    def referrers(self) -> dict[Digest, list[str]]:
        """digest -> labels of the roots that reference it (a manifest file names its own copy)."""
        out: dict[Digest, set[str]] = {}
        for name, digest in self.pins.items():
            out.setdefault(digest, set()).add(f"pin:{name}")
        for d in self.keep:
            out.setdefault(d, set()).add("--keep")
        for m in self.manifests:
            if m.digest is not None and m.path is not None:
                out.setdefault(m.digest, set()).add(m.label)
            for d in m.references():
                out.setdefault(d, set()).add(m.label)
        # os.fsencode: a label holds a folder's path, which need not be UTF-8
        return {d: sorted(labels, key=os.fsencode) for d, labels in out.items()}


# --- folders ------------------------------------------------------------------------------------


def default_dir(store: Store) -> Path:
    """The manifests folder of the project the store sits in: always a root."""
    return store_manifest_dir(store.path)


def recorded_dirs(source: Store | Update) -> list[Path]:
    """The recorded folders, as the store or one of its transactions (gc's deleting one)
    sees them."""
    return [Path(p) for p in _refs(source).recorded_dirs()]


def add_root_dir(store: Store, folder: str | os.PathLike[str]) -> Path:
    """Record a folder whose ``*.pack`` files are roots from now on (it must exist)."""
    where = Path(folder).resolve()
    if not where.is_dir():
        raise UsageError(f"{folder}: not a directory")
    store.refs.record_dir(str(where))
    return where


def keep_manifest_dir(store: Store, folder: str | os.PathLike[str]) -> Path | None:
    """Make an existing folder a writer is about to put manifests in a root, unless it is one
    already (the default folder, or recorded). Returns the folder if it was newly recorded.

    A writer calls this before the first manifest file it writes there, while it holds its
    lease: a gc then either waits for the lease or, once it is released, finds the folder
    recorded in the transaction that deletes. Without it a pack written into another project's
    folder names blobs that a gc beside the store cannot see, and prunes."""
    where = Path(folder).resolve()
    if os.path.realpath(default_dir(store)) == str(where) or where in recorded_dirs(store):
        return None
    add_root_dir(store, where)
    return where


def check_manifest_dir(folder: str | os.PathLike[str]) -> None:
    """Refuse a manifests folder that cannot be one (a file, a dangling symlink) before any
    work is done for it."""
    problem = RootDir(Path(folder), "project").missing_problem()
    if problem is not None:
        raise OutputError(
            str(folder), f"it {problem}; cas writes its packs in that folder: move it away"
        )


def prepare_manifest_dir(store: Store, folder: str | os.PathLike[str]) -> Path:
    """Create the manifests folder a writer is about to put a pack in, and make it a gc root
    (`keep_manifest_dir`). The writer calls it while it holds its lease, before its first
    manifest file there names any blob."""
    check_manifest_dir(folder)
    where = Path(folder)
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(str(where), exc.strerror or str(exc)) from None
    keep_manifest_dir(store, where)
    return where


def remove_root_dir(store: Store, folder: str | os.PathLike[str]) -> Path:
    """Forget a recorded folder, named as recorded (resolved) or as given (absolute): a folder
    that no longer exists may not resolve to what was recorded."""
    for where in (Path(folder).resolve(), Path(os.path.abspath(folder))):
        if store.refs.forget_dir(str(where)):
            return where
    raise NotFound("root folder", str(folder), "'cas pins' lists the recorded folders")


def manifest_dirs(
    store: Store,
    extra: Iterable[str | os.PathLike[str]] = (),
    project: str | os.PathLike[str] | None = None,
    *,
    recorded: list[Path] | None = None,
) -> list[RootDir]:
    """The default folder, the project's, then the recorded and extra ones: each folder once
    (by its real path), under the first kind that names it, and marked recorded if the store
    records it. ``recorded`` replaces the store's list (gc passes the one its deleting
    transaction reads)."""
    candidates = [RootDir(default_dir(store), "default")]
    if project is not None:
        candidates.append(RootDir(Path(project).absolute(), "project"))
    for folder in recorded_dirs(store) if recorded is None else recorded:
        candidates.append(RootDir(folder, "recorded", recorded=True))
    candidates += [RootDir(Path(e).absolute(), "extra") for e in extra]
    out: dict[str, RootDir] = {}
    for candidate in candidates:
        real = os.path.realpath(candidate.path)
        first = out.get(real)
        if first is None:
            out[real] = candidate
        elif candidate.recorded and not first.recorded:
            out[real] = RootDir(first.path, first.kind, recorded=True)
    return list(out.values())


def manifest_files(
    store: Store, dirs: list[RootDir]
) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    """(label, path) of every ``*.pack`` below ``dirs``, and (folder, problem) for what could
    not be listed: a recorded or extra folder that is missing, any that is not a directory (a
    file, a dangling symlink), an unreadable subfolder. Each is a problem, never a silence: the
    packs there would make their blobs look unreferenced. A file reached through two folders
    (one inside the other) is listed once."""
    files: list[tuple[str, Path]] = []
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()

    def unreadable(exc: OSError) -> None:
        problems.append((str(exc.filename), f"cannot list: {exc.strerror or exc}"))

    for folder in dirs:
        problem = folder.missing_problem()
        if problem is not None:
            problems.append((str(folder.path), problem))
        if not folder.path.is_dir():
            continue
        found: list[Path] = []
        for here, _subdirs, names in os.walk(folder.path, onerror=unreadable):
            found += [Path(here, n) for n in names if is_pack_file(n)]
        for path in sorted((p for p in found if p.is_file()), key=os.fsencode):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            rel = path.relative_to(folder.path).as_posix()
            files.append((rel if folder.kind == "default" else str(path), path))
    return files, problems


def read_manifest(
    label: str,
    path: Path,
    known: dict[Digest, mf.Manifest] | None = None,
    *,
    store: Store | None = None,
) -> RootManifest:
    """Read and decode one manifest file; ``known`` skips decoding bytes already decoded, and
    bytes ``store`` records as written by its own packs (`cas.locate.known_valid`) are decoded
    without validating them again.

    A file removed since it was listed is no longer a root: it comes back with no digest and
    no problem, and references nothing."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return RootManifest(label, path, None, None)
    except OSError as exc:
        return RootManifest(label, path, None, None, f"cannot read: {exc.strerror or exc}")
    digest = Digest.of(data)
    if known is not None and digest in known:
        return RootManifest(label, path, digest, known[digest])
    try:
        manifest = mf.decode(data, label, trusted=known_valid(store, digest))
    except ManifestError as exc:
        return RootManifest(label, path, digest, None, f"not a valid manifest: {exc.problem}")
    if known is not None:
        known[digest] = manifest
    return RootManifest(label, path, digest, manifest)


def manifest_blob(
    store: Store, digest: Digest, label: str, known: dict[Digest, mf.Manifest] | None = None
) -> RootManifest | None:
    """The blob as a manifest root if it is one; None if it is another kind of blob."""
    if known is not None and digest in known:
        return RootManifest(label, None, digest, known[digest])
    try:
        with store.open(digest) as reader:
            if reader.size > mf.MAX_BYTES:
                return None
            head = reader.read(1)
            if head != bytes([_MANIFEST_FIRST_BYTE]):
                return None
            data = head + reader.read()
    except BlobNotFound:
        return RootManifest(label, None, digest, None, "not in the store")
    except CorruptBlob as exc:
        return RootManifest(label, None, digest, None, f"corrupt in the store: {exc.problem}")
    try:
        manifest = mf.decode(data, label, trusted=known_valid(store, digest))
    except ManifestError:
        return None
    if known is not None:
        known[digest] = manifest
    return RootManifest(label, None, digest, manifest)


# --- pins ---------------------------------------------------------------------------------------


def pinned(
    store: Store, name: str, digest: Digest, known: dict[Digest, mf.Manifest] | None = None
) -> list[RootManifest]:
    """The manifests pin ``name`` keeps: the pinned blob when it is a manifest and, when that is
    a memory state, every state before it (``pin:NAME~1`` its parent, ``~2`` the one before,
    ...), down to the first or to one that cannot be read (reported as the root's problem)."""
    out: list[RootManifest] = []
    label = f"pin:{name}"
    seen: set[Digest] = set()
    current: Digest | None = digest
    while current is not None and current not in seen:
        seen.add(current)
        root = manifest_blob(store, current, label, known)
        if root is None:
            break
        out.append(root)
        m = root.manifest
        if m is None or m.kind != "memory":
            break
        current = m.parent
        label = f"pin:{name}~{len(out)}"
    return out


def _refs(source: Store | Update) -> References | Update:
    """The references as the store (each call its own transaction) or one of its
    transactions sees them."""
    return source.refs if isinstance(source, Store) else source


def pins(source: Store | Update) -> dict[str, Digest]:
    """Every pin, as the store or one of its transactions (gc's deleting one) sees them."""
    return _refs(source).pins()


def _check_pin_name(name: str) -> str:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"pin name {echoed(name)} is not valid UTF-8") from None
    name = unicodedata.normalize("NFC", name)
    if not name.strip() or len(name.encode()) > _MAX_PIN_NAME:
        raise UsageError(f"pin name {echoed(name)} must be 1 to {_MAX_PIN_NAME} bytes, not blank")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise UsageError(f"pin name {echoed(name)} holds a control character")
    return name


def pin(store: Store, name: str, digest: Digest) -> Digest | None:
    """Pin ``digest`` under ``name``; returns the digest it replaced. The blob must be present:
    checked in the transaction that pins, so a gc deleting it cannot slip in between."""
    return store.refs.pin(_check_pin_name(name), digest)


def unpin(store: Store, name: str) -> Digest:
    name = _check_pin_name(name)
    old = store.refs.unpin(name)
    if old is None:
        raise NotFound("pin", name, "'cas pins' lists them")
    return old


# --- all of it ----------------------------------------------------------------------------------


def load(
    store: Store,
    *,
    extra_dirs: Iterable[str | os.PathLike[str]] = (),
    project_dir: str | os.PathLike[str] | None = None,
    keep: Iterable[Digest] = (),
    known: dict[Digest, mf.Manifest] | None = None,
) -> Roots:
    """Every root: manifest files, pins (pinned manifests decoded), and ``keep``."""
    roots = Roots(keep=set(keep))
    dirs = manifest_dirs(store, extra_dirs, project_dir)
    files, roots.problems = manifest_files(store, dirs)
    roots.manifests = [read_manifest(label, path, known, store=store) for label, path in files]
    roots.pins = pins(store)
    for name in sorted(roots.pins, key=str.encode):
        roots.manifests += pinned(store, name, roots.pins[name], known)
    return roots
