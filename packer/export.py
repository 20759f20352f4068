"""The archive export: packs written out as the folders a team keeps or hands over.

`cas export [PACK...] DIR` writes, for each pack (every pack of the project by default)::

    DIR/FULL/NAME.md                   the pack in full (every file that is not a secret)
    DIR/LITE/NAME.md                   the pack as fitted to its budget (what an agent reads)
    DIR/SPLIT/NAME/INDEX.md, PART.md   the LITE pack as one document per top-level folder
    DIR/archive/NAME-DIGEST12/
        pack.zip                       meta/ (the manifest, a summary, every body's digest)
                                       and repo/ (every file the pack covers, as stored)
        NAME-FULL.txt                  the FULL document, plain text
        NAME-FULL-TREEMAP.txt          the tree of the pack's files: tokens and tier of each
        NAME-LITE-INDEX.txt            the LITE document's files: tier, tokens, path
        NAME-SPLIT-INDEX.txt           the SPLIT index, plain text

``FULL``, ``LITE`` and ``SPLIT`` hold the packs as they are now (written again on every export,
a SPLIT folder's parts of an earlier export that no longer exist removed); ``archive`` keeps
every pack ever exported, one folder per pack and digest, never deleted or written over with
other bytes: exporting the same pack again finds its folder holding the same bytes.

``pack.zip`` is the same bytes for the same pack on every machine: entries in the order of
their names' bytes, every time 1980-01-01 00:00:00, permissions 0644, no extra fields, and
stored rather than deflated (a deflate stream may differ between zlib builds; the store keeps
the compressed copy). Every body is read from the store, re-hashed as it is read: a damaged
store fails the export (nothing half-written is left under a final name: each file is written
to a temporary name and renamed).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas import manifest as mf
from cas.digest import Digest
from cas.display import shown
from cas.errors import OutputError
from cas.fsutil import atomic_write
from packer.render import render_split

ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
FILE_MODE: Final = 0o644
KINDS: Final = ("FULL", "LITE", "SPLIT", "archive")


@dataclass(frozen=True, slots=True)
class Exported:
    """One pack exported: its name, digest, and the files written (changed) and kept (already
    holding the same bytes), relative to the export folder."""

    name: str
    digest: str
    archive: str  # the pack's archive folder, relative to the export folder
    written: tuple[str, ...]
    kept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ExportReport:
    folder: str
    packs: tuple[Exported, ...] = field(default=())
    removed: tuple[str, ...] = field(default=())  # stale SPLIT parts


@dataclass(frozen=True, slots=True)
class PackTexts:
    """What a pack exports, made by the caller (the project's services render it)."""

    name: str
    digest: Digest
    data: bytes  # the manifest's bytes
    manifest: mf.Manifest
    full: str  # FULL, markdown
    full_plain: str  # FULL, plain
    lite: str  # LITE, markdown
    split: dict[str, str]  # SPLIT, markdown, by file name
    split_plain_index: str  # SPLIT's INDEX, plain


def texts(
    name: str,
    digest: Digest,
    data: bytes,
    m: mf.Manifest,
    render: Callable[[str, str], str],
    fetch: Callable[[Digest], str],
) -> PackTexts:
    """The documents of one pack; ``render(mode, fmt)`` renders it as ``cas render`` does."""
    return PackTexts(
        name=name,
        digest=digest,
        data=data,
        manifest=m,
        full=render("full", "markdown"),
        full_plain=render("full", "plain"),
        lite=render("lite", "markdown"),
        split=render_split(m, fetch, "markdown"),
        split_plain_index=render_split(m, fetch, "plain")["INDEX.txt"],
    )


def export(
    folder: Path, packs: Sequence[PackTexts], read: Callable[[Digest], bytes]
) -> ExportReport:
    """Write ``packs`` under ``folder`` (see the module's docstring); ``read`` gives a body's
    bytes, re-hashed."""
    _folder(folder)
    done = []
    removed: list[str] = []
    for p in packs:
        written: list[str] = []
        kept: list[str] = []

        def put(
            rel: str, data: bytes, written: list[str] = written, kept: list[str] = kept
        ) -> None:
            target = folder / rel
            _folder(target.parent)
            (written if atomic_write(target, data) else kept).append(rel)

        put(f"FULL/{p.name}.md", p.full.encode())
        put(f"LITE/{p.name}.md", p.lite.encode())
        split = f"SPLIT/{p.name}"
        for part, text in sorted(p.split.items()):
            put(f"{split}/{part}", text.encode())
        removed += _stale(folder / split, set(p.split), split)
        archive = f"archive/{p.name}-{p.digest.hex()[:12]}"
        put(f"{archive}/pack.zip", pack_zip(p, read))
        put(f"{archive}/{p.name}-FULL.txt", p.full_plain.encode())
        put(f"{archive}/{p.name}-FULL-TREEMAP.txt", treemap(p.manifest).encode())
        put(f"{archive}/{p.name}-LITE-INDEX.txt", lite_index(p.manifest).encode())
        put(f"{archive}/{p.name}-SPLIT-INDEX.txt", p.split_plain_index.encode())
        done.append(Exported(p.name, str(p.digest), archive, tuple(written), tuple(kept)))
    return ExportReport(str(folder), tuple(done), tuple(removed))


def _folder(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(str(path), "it is not a folder: export writes folders there") from None
    except OSError as exc:
        raise OutputError(str(path), exc.strerror or str(exc)) from None


def _stale(part_folder: Path, wanted: set[str], rel: str) -> list[str]:
    """Remove the parts of an earlier SPLIT export this one does not write (documents only)."""
    out = []
    for child in sorted(part_folder.iterdir()):
        if child.is_file() and child.name not in wanted and child.suffix in (".md", ".xml", ".txt"):
            child.unlink()
            out.append(f"{rel}/{child.name}")
    return out


# --- the archive ------------------------------------------------------------------------------


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.create_system = 3  # unix: the permissions below are read
    info.external_attr = FILE_MODE << 16
    info.compress_type = zipfile.ZIP_STORED
    return info


def pack_zip(p: PackTexts, read: Callable[[Digest], bytes]) -> bytes:
    """``pack.zip``: ``meta/`` and ``repo/`` only, the same bytes for the same pack anywhere."""
    m = p.manifest
    files = [e for e in m.entries if e.digest is not None and e.kind == "file"]
    members: list[tuple[str, bytes | Digest]] = [
        ("meta/manifest.pack", p.data),
        ("meta/pack.json", _meta(p).encode()),
        ("meta/digests.txt", _digests(m.entries).encode()),
    ]
    for e in files:
        assert e.digest is not None
        members.append((f"repo/{e.path}", e.digest))
    members.sort(key=lambda item: item[0].encode("utf-8", "surrogateescape"))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, body in members:
            z.writestr(_info(name), read(body) if isinstance(body, Digest) else body)
    return out.getvalue()


def _meta(p: PackTexts) -> str:
    m = p.manifest
    tiers = {t: sum(1 for e in m.entries if e.tier == t and e.digest is not None)
             for t in ("high", "medium", "low")}  # fmt: skip
    meta = {
        "name": p.name,
        "digest": str(p.digest),
        "kind": m.kind,
        "scope": m.scope,
        "target": m.target,
        "tokenizer": m.tokenizer,
        "budget": {"target": m.budget_target, "max": m.budget_max},
        "files": len(m.entries),
        "tiers": tiers,
        "withheld": sum(1 for e in m.entries if e.digest is None),
        "tokens": m.totals.get("tokens", {}),
    }
    return json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _digests(entries: Iterable[mf.Entry]) -> str:
    """Every file's digest and path, one a line (``withheld`` for a secret), by path."""
    return "".join(
        f"{e.digest if e.digest is not None else 'withheld'}  {shown(e.path)}\n" for e in entries
    )


# --- the plain-text indexes -------------------------------------------------------------------

_TIER: Final = {"high": "full", "medium": "summary", "low": "omitted"}


def _tier(e: mf.Entry) -> str:
    return "withheld" if e.digest is None else _TIER[e.tier]


def lite_index(m: mf.Manifest) -> str:
    """The LITE pack's files: tier, tokens it shows, path; what it shows first, then the rest."""
    shown_first = sorted(
        (e for e in m.entries if e.tier != "low" and e.digest is not None),
        key=lambda e: (-e.rating, e.path.encode()),
    )
    rest = [e for e in m.entries if e.tier == "low" or e.digest is None]
    lines = [f"{m.name}: {len(m.entries)} files, at most {m.budget_max:,} tokens", ""]
    lines += [f"{_tier(e):<8} {e.tokens:>7}  {shown(e.path)}" for e in [*shown_first, *rest]]
    return "\n".join(lines) + "\n"


def treemap(m: mf.Manifest) -> str:
    """The pack's files as a tree: each folder with its files and the tokens they show, each
    file with its tier; folders and files by name."""
    tree: dict[str, object] = {}
    for e in m.entries:
        node = tree
        *folders, leaf = e.path.split("/")
        for name in folders:
            child = node.setdefault(name + "/", {})
            assert isinstance(child, dict)
            node = child
        node[leaf] = e
    lines = [f"{m.name}/ {_tokens(tree):,} tokens shown"]
    _tree_lines(tree, "", lines)
    return "\n".join(lines) + "\n"


def _tokens(node: dict[str, object]) -> int:
    total = 0
    for value in node.values():
        if isinstance(value, dict):
            total += _tokens(value)
        else:
            assert isinstance(value, mf.Entry)
            total += value.tokens if value.tier != "low" else 0
    return total


def _tree_lines(node: dict[str, object], indent: str, lines: list[str]) -> None:
    names = sorted(node, key=str.encode)
    for i, name in enumerate(names):
        last = i == len(names) - 1
        branch, below = ("└── ", "    ") if last else ("├── ", "│   ")
        value = node[name]
        if isinstance(value, dict):
            lines.append(f"{indent}{branch}{shown(name)} ({_tokens(value):,} tokens)")
            _tree_lines(value, indent + below, lines)
        else:
            assert isinstance(value, mf.Entry)
            lines.append(f"{indent}{branch}{shown(name)} ({_tier(value)}, {value.tokens:,})")


__all__ = [
    "ExportReport",
    "Exported",
    "PackTexts",
    "export",
    "lite_index",
    "pack_zip",
    "texts",
    "treemap",
]
