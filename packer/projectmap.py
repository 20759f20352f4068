"""The map a LITE pack of a large project opens with: where things are.

A pack of a project far larger than its budget shows a few files and counts the rest in its
omitted list; an agent then knows what it was shown but not where to look for anything else.
The map names the project's busiest folders of code (by the rating of the files directly in
them: the reference graph's mass, so a package its code leans on ranks high however small) with
what each is for (the first sentence of the folder's own documentation: a package docstring, a
Go package comment, a crate's `//!` lines, a README) and its best-rated files. "Where is the
network stack" is answerable from it even when none of that package's files is shown.

Everything here is a function of a manifest's entries and the bodies they name, so the map
renders the same on any machine that has the store. The fit decides how many folders a pack's
map holds (`map_size`, from its budget, recorded in the manifest's totals as ``map``), prices
the map like any other part of the render and leaves that much less room for files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Protocol

import msgpack

from cas.cache import Cache
from cas.digest import Digest
from cas.manifest import Manifest
from cas.store import Store
from packer.lang import kind_for, record_for
from packer.rules import DEFAULT_RULES

# The cache's entry of a manifest's map, by the manifest's digest (the map is a function of the
# manifest and the bodies it names: only this code's version can change it; a change here
# changes renders, so `packer.build.MEMO_VERSION` moves with it).
MAP_VERSION: Final = "4"
MAP_NS: Final = f"projectmap:{MAP_VERSION}"

# One folder a this many tokens of the budget's target, within these bounds; no map at all for
# a project whose content is within this many times the target (most of it is shown anyway).
TOKENS_PER_FOLDER: Final = 500
LEAST_FOLDERS: Final = 6
MOST_FOLDERS: Final = 32
LARGE_AFTER: Final = 4
LARGE_FILES: Final = 200  # files of code, at least: a smaller project's omitted list says enough
BYTES_PER_TOKEN: Final = 4
# What a folder's line shows: its best-rated files, and this many characters of its purpose.
NAMED_FILES: Final = 3
ABOUT_CHARS: Final = 160
# Where a folder's purpose is looked for: these files first, then its best-rated code files.
DOC_FILES: Final[tuple[str, ...]] = (
    "__init__.py",
    "doc.go",
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "lib.rs",
    "mod.rs",
    "index.ts",
    "index.js",
    "index.mjs",
)
_DOC_NAMES: Final = frozenset(DOC_FILES)
# When no documentation file gives a purpose, the folder's best-rated code file not read yet may:
# only that one (a lesser file's docstring speaks of the file, not of its folder).
_TRIED: Final = 1
# Files a built-in rule keeps out of every pack (generated, vendored, lock files, binaries,
# data, fixtures, licenses...) and copies of files shown elsewhere: they place no folder on a
# map (a `dist/` of compiled bundles outnumbers the sources it was built from).
_NOT_MAPPED: Final = frozenset(r.reason for r in DEFAULT_RULES if r.tier == "low") | {"duplicate"}
_HEAD: Final = 16384  # characters of a file looked at for its purpose
# A file read for a purpose is at most this large (its body is read whole: a map reads a few
# dozen files, and a generated bundle of megabytes says nothing of its folder), and not binary.
_READ_MOST: Final = 1 << 20


class MapRow(Protocol):
    """What the map reads of a file: a manifest `Entry`, or the fit's row for one."""

    @property
    def path(self) -> str: ...
    @property
    def digest(self) -> Digest | None: ...
    @property
    def size(self) -> int: ...
    @property
    def rating(self) -> int: ...
    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Folder:
    """One line of the map."""

    path: str  # ending in "/"
    files: int  # files directly in it
    about: str  # the first sentence of its documentation, or ""
    first: tuple[str, ...]  # its best-rated code files' names, best first


def map_size(target: int, rows: Iterable[MapRow]) -> int:
    """How many folders the map of a pack with this budget target holds: none for a project
    that is not large (fewer than `LARGE_FILES` files of code, or content within `LARGE_AFTER`
    times the target) or has fewer than `LEAST_FOLDERS` folders of code."""
    return _Survey(rows).size(target)


def project_map(rows: Iterable[MapRow], size: int, fetch: Callable[[Digest], str]) -> list[Folder]:
    """The ``size`` folders of code whose own files rate highest (ties by path bytes), in path
    order, each with its purpose and best files."""
    return _Survey(rows).folders(size, fetch) if size > 0 else []


def plan_map(
    target: int, rows: Iterable[MapRow], fetch: Callable[[Digest], str]
) -> tuple[int, list[Folder]]:
    """`map_size` and `project_map` of the same rows, read once (what a fit asks)."""
    survey = _Survey(rows)
    size = survey.size(target)
    return size, survey.folders(size, fetch) if size > 0 else []


def encode_map(folders: Iterable[Folder]) -> bytes:
    """The cache's value for a manifest's map (`MAP_NS`)."""
    data: bytes = msgpack.packb(
        [[f.path, f.files, f.about, list(f.first)] for f in folders], use_bin_type=True
    )
    return data


def decode_map(raw: bytes | None) -> list[Folder] | None:
    """The folders `encode_map` wrote, or None for a missing or damaged value."""
    if raw is None:
        return None
    try:
        rows = msgpack.unpackb(raw, raw=False)
        out = [
            Folder(str(path), int(files), str(about), tuple(str(n) for n in first))
            for path, files, about, first in rows
        ]
    except (ValueError, TypeError, msgpack.ExtraData):
        return None
    return out


def _unmapped(reason: str | None) -> bool:
    if not reason:
        return False
    base = reason.split(";")[0].split(",")[0]
    return base in _NOT_MAPPED or base.startswith("generated from ")


def known_map(store: Store, m: Manifest, digest: Digest) -> list[Folder] | None:
    """The map of ``m`` (whose bytes have ``digest``) as the pack that wrote it kept it in the
    store's cache, or None (the render then works it out: the same folders)."""
    if not m.totals.get("map"):
        return None
    return decode_map(Cache(store).get(MAP_NS, bytes(digest)))


class _Survey:
    """What the map needs of every file, gathered in one pass over the rows."""

    def __init__(self, rows: Iterable[MapRow]) -> None:
        self.total = 0  # bytes of every file with a body
        self.code_files = 0  # files of code with a body, the top level's too
        self.files: dict[str, int] = {}  # folder -> files directly in it
        self.value: dict[str, int] = {}  # folder -> its code files' ratings, summed
        self.code: dict[str, list[tuple[int, str, Digest]]] = {}  # (rating, name, digest)
        self.docs: dict[str, dict[str, Digest]] = {}
        self.unread: set[Digest] = set()  # bodies no purpose is read from (`_READ_MOST`)
        files, value, code = self.files, self.value, self.code
        for row in rows:
            folder, _, name = row.path.rpartition("/")
            if folder:
                files[folder] = files.get(folder, 0) + 1
            digest = row.digest
            if digest is None:
                continue
            self.total += row.size
            if kind_for(name) == "code" and not _unmapped(row.reason):
                self.code_files += 1
                if folder:
                    value[folder] = value.get(folder, 0) + row.rating
                    known = code.get(folder)
                    if known is None:
                        code[folder] = [(row.rating, name, digest)]
                    else:
                        known.append((row.rating, name, digest))
            if row.size > _READ_MOST or (row.reason or "").startswith("binary"):
                self.unread.add(digest)
            if folder and name in _DOC_NAMES:
                self.docs.setdefault(folder, {})[name] = digest

    def size(self, target: int) -> int:
        if (
            self.code_files < LARGE_FILES
            or self.total // BYTES_PER_TOKEN <= LARGE_AFTER * target
            or len(self.value) < LEAST_FOLDERS
        ):
            return 0
        return min(max(target // TOKENS_PER_FOLDER, LEAST_FOLDERS), MOST_FOLDERS, len(self.value))

    def folders(self, size: int, fetch: Callable[[Digest], str]) -> list[Folder]:
        value = self.value
        best = sorted(value, key=lambda f: (-value[f], f.encode("utf-8")))[:size]
        out = []
        for folder in sorted(best, key=lambda f: f.encode("utf-8")):
            ranked = sorted(self.code[folder], key=lambda c: (-c[0], c[1].encode("utf-8")))
            # Its documentation files, then a code file named as the folder is
            # (`linux/linux.go`, `sync/sync.go`: where a package's comment most often is),
            # then its best-rated ones.
            held = self.docs.get(folder, {})
            sources: list[tuple[str, Digest]] = [(n, held[n]) for n in DOC_FILES if n in held]
            stem = folder.rpartition("/")[2]
            sources += [(n, d) for _, n, d in ranked if n.rpartition(".")[0] == stem][:1]
            sources += [(n, d) for _, n, d in ranked if (n, d) not in sources][:_TRIED]
            about = ""
            for name, digest in sources:
                if digest not in self.unread:
                    about = purpose(name, fetch(digest))
                    if about:
                        break
            first = tuple(name for _, name, _ in ranked[:NAMED_FILES])
            out.append(Folder(folder + "/", self.files[folder], about, first))
        return out


# --- a file's purpose ---------------------------------------------------------------------------

_PY_DOCSTRING: Final = re.compile(r'[rRuU]?("""|\'\'\'|"|\')(.*?)\1', re.DOTALL)
_LICENSE: Final = re.compile(r"copyright|licen[cs]e|spdx-|all rights reserved", re.IGNORECASE)
_SENTENCE_END: Final = re.compile(r"[.!?](?=\s|$)")
_MARKUP_LINE: Final = re.compile(r"^\s*(#|=|-{3}|\*{3}|_{3}|<|!\[|\[!|```|~~~|\.\. |:|\|)")
_DIRECTIVE: Final = re.compile(
    r"(go:|\+build|-\*-|eslint|prettier|jshint|@ts-|nolint|pylint|type:|<reference|"
    r"frozen_string_literal|encoding[:=]|coding[:=]|vim?:|#region|region\b)"
)
_FILE_TAGS: Final = ("@module", "@file", "@fileoverview", "@packageDocumentation", "@overview")
# A purpose is prose: it starts with a word (not a URL, a path or code) and has a few of them.
_PROSE: Final = re.compile(r"[A-Za-z][\w'-]*,?\s+[\w`'(-]+[\w`'(),.-]*\s+\S")


def purpose(name: str, text: str) -> str:
    """The first sentence of what ``text`` (the file ``name``) says it is for, on one line, at
    most `ABOUT_CHARS` characters, or "" when it says nothing: a Python module's docstring, a
    document's first paragraph, or the first comment before any code that is not a license."""
    head = text[:_HEAD]
    language = record_for(name)
    if language is None or language.kind in ("document", "text"):
        return _sentence(_first_paragraph(head))
    if language.name == "python":
        return _sentence(_python_docstring(head))
    if language.kind != "code":
        return ""
    for block, doc in _leading_comments(head, language.comment):
        # Where a language documents a file, that comment; else a `#` language's first one.
        wanted = doc or (language.comment == "#" and language.name != "go")
        if wanted and not _LICENSE.search(block) and _PROSE.match(block):
            return _sentence(block)
    return ""


def _python_docstring(head: str) -> str:
    body = "\n".join(
        line for line in head.splitlines() if not line.lstrip().startswith("#")
    ).lstrip()
    if body.startswith("from __future__"):
        return ""
    m = _PY_DOCSTRING.match(body)
    return m.group(2).strip().split("\n\n")[0] if m else ""  # its first paragraph


def _first_paragraph(head: str) -> str:
    lines: list[str] = []
    fenced = False
    for line in head.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        if not line.strip():
            if lines:
                break
            continue
        if _MARKUP_LINE.match(line):
            if lines:
                break
            continue
        lines.append(line.strip())
    return " ".join(lines)


def _leading_comments(head: str, marker: str) -> list[tuple[str, bool]]:
    """The comment blocks before a file's first line of code, each as its text and whether it
    is where the language documents a file: a ``/** */`` block or ``//!`` lines (a crate's or
    module's docs), or the block right above a Go ``package`` clause. Line comments
    (``marker``: ``#``, or ``//``) run until a blank line; where the marker is ``//``, a
    ``/* */`` block is one block, its leading stars and JSDoc tags left out. A compiler's or
    linter's directive (``//go:build``, ``/// <reference``, ``# frozen_string_literal``) is no
    block."""
    blocks: list[tuple[str, bool]] = []
    current: list[str] = []
    inner = False  # the current line block is `//!` lines
    after_block = False  # the line before was a block comment's end
    whole_file = False  # a block said it documents the file (`@module`, `@fileoverview`)

    def close(doc: bool = False) -> None:
        if current:
            text = " ".join(current).strip()
            if text and not _DIRECTIVE.match(text):
                blocks.append((text, doc or inner))
            current.clear()

    lines = iter(head.splitlines())
    for line in lines:
        stripped = line.strip()
        if not stripped:
            close()
            after_block = False
            continue
        if marker == "//" and stripped.startswith("/*"):
            close()
            doc = stripped.startswith(("/**", "/*!"))
            text: str | None = stripped[2:].lstrip("*!")
            prose: list[str] = []
            tagged = False  # a JSDoc tag seen: the prose has ended
            while text is not None:
                end = text.find("*/")
                piece = (text if end < 0 else text[:end]).strip().lstrip("*").strip()
                if piece.startswith("@"):
                    tagged = True
                    whole_file = whole_file or piece.startswith(_FILE_TAGS)
                elif piece and not tagged:
                    prose.append(piece)
                if end >= 0:
                    break
                text = next(lines, None)
            current.extend(prose)
            close(doc)
            after_block = True
            continue
        if stripped.startswith("#!") and marker == "#" and not blocks and not current:
            continue  # a shebang line
        if not stripped.startswith(marker):
            if stripped.startswith("package ") and current:
                close(True)  # Go: the comment right above the package clause
            elif after_block and blocks and not whole_file:
                # a doc block right above the first declaration documents that declaration
                blocks[-1] = (blocks[-1][0], False)
            break  # code
        after_block = False
        body = stripped[len(marker) :]
        if not current:
            inner = body.startswith("!")
        text = body.lstrip("/!").strip()
        if not text.startswith("# "):  # a heading of a doc comment (`//! # Serde JSON`)
            current.append(text)
    close()
    return blocks


def _sentence(text: str) -> str:
    """The first sentence of ``text``, whitespace collapsed, cut at a word to `ABOUT_CHARS`."""
    flat = " ".join(text.split())
    if sum(ch.isalpha() for ch in flat) < 8:
        return ""
    m = _SENTENCE_END.search(flat, 12)
    if m is not None:
        flat = flat[: m.end()]
    if len(flat) > ABOUT_CHARS:
        cut = flat.rfind(" ", 0, ABOUT_CHARS - 3)
        flat = flat[: cut if cut > 0 else ABOUT_CHARS - 3].rstrip(",;:") + "..."
    return flat
