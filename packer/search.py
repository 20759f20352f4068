"""Searching the bodies the packs hold: which files, which lines, scored with integers.

The full-text index (`cas.textindex`) says which windows of which bodies hold a term. This
module decides what a query means and how well a file answers it, over the files of the packs
searched only, so that a result depends on the query and those packs, never on what else the
store holds:

* a query's names (`cas.textindex.query_names`) each give terms: the name whole (weight
  `WHOLE_CODE` when it is shaped like code, `WHOLE_WORD` for a plain word; a dotted name is a
  phrase) and, for a compound name, its words (`PART`); English stop words give none;
* a term's weight is multiplied by its rarity among the files searched: a fixed-point log2 of
  files over files holding it (`idf`), computed with integers;
* a window scores the sum of the terms it holds; a file scores its best window, plus an eighth
  of its other windows' (capped at the best), plus the terms its path spells twice over.

Order: score descending, then path bytes. Same index contents for these packs, same query:
same hits, on every machine (DETERMINISM.md, "Search").

Which packs: those of the project a reader may see (`visible_packs`, `cas.visibility`): never a
memory pack, and a load drawn on a memory only where that memory was asked for (``scopes``). A
pack named outright is refused unless it may be seen there too (`cas.visibility.granted_pack`). A
memory asked for is searched as one more source (`Attached`, built by the surface that asked).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Final

from cas import locate
from cas import manifest as mf
from cas.digest import Digest
from cas.display import echoed
from cas.errors import BlobNotFound, CorruptBlob, NotFound, UsageError
from cas.events import ProgressSink, emit
from cas.report import json_rule, pairs
from cas.store import Store
from cas.textindex import (
    MAX_BODY,
    WORD,
    QueryName,
    TextIndex,
    definition_key,
    query_names,
    split_name,
    text_of,
)
from cas.visibility import granted_pack, is_memory_pack, visible
from packer.wildmatch import GlobList

WHOLE_CODE: Final = 6
WHOLE_WORD: Final = 2
PART: Final = 1
PATH_FACTOR: Final = 2
DEFINES: Final = 3  # a file defining a name of the query gains this many times its weight
SNIPPET_LINES: Final = 3
SNIPPET_WIDTH: Final = 200
_FRACTION: Final = 6  # fixed-point bits of `idf`

# Words that say nothing about code; a query's name made of one of them gives no term.
_STOP_TEXT: Final = """a about above after all also an and any are as at be been before being
between both but by can could did do does doing done each either else for from get gets given has
have how i if in into is it its it's just like made make makes many may me more most must my no
not of on one or other our out over own same should so some such than that the their them then
there these they this those through to too under up upon use used uses using via was we were what
when where which while who whom whose why will with within without would you your yours value
values return returns returned take takes called call calls way ways"""
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())


def idf(files: int, holding: int) -> int:
    """floor(2**6 * log2((files + 1) / holding)), at least 1: integers only."""
    num, den = files + 1, max(holding, 1)
    if num <= den:
        return 1
    whole = (num // den).bit_length() - 1
    result = whole << _FRACTION
    x = (num << 32) // (den << whole)  # in [2**32, 2**33): the mantissa
    for bit in range(_FRACTION):
        x = (x * x) >> 32
        if x >= 2 << 32:
            x >>= 1
            result |= 1 << (_FRACTION - 1 - bit)
    return max(result, 1)


@dataclass(frozen=True, slots=True)
class Term:
    words: tuple[str, ...]  # one index term, or a phrase of them (a dotted name)
    weight: int


def query_terms(query: str) -> list[Term]:
    """The terms a query searches for, each once with its highest weight, in query order."""
    weights: dict[tuple[str, ...], int] = {}

    def add(words: tuple[str, ...], weight: int) -> None:
        if words and weights.get(words, 0) < weight:
            weights[words] = weight

    for name in query_names(query):
        if name.compound:
            add(name.words, WHOLE_CODE)
            for part in name.parts:
                if part not in STOP_WORDS and len(part) > 1:
                    add((part,), PART)
        else:
            word = name.words[0]
            if word in STOP_WORDS or len(word) < 2:
                continue
            # a single word that is a name in code (Mux, NewRouter) is worth more than prose
            add(name.words, WHOLE_CODE if name.text != name.text.lower() else WHOLE_WORD)
            for stem in stems(word):
                add((stem,), PART)
    return [Term(w, n) for w, n in weights.items()]


def stems(word: str) -> list[str]:
    """Plain-word variants a question's prose needs to meet code: ``flags`` -> ``flag``,
    ``prompting`` -> ``prompt``, ``parsed`` -> ``parse``, ``parse``. No dictionary: only
    suffixes, and only stems of four letters or more."""
    out = []
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ed", ""), ("ed", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 4:
            stem = word[: len(word) - len(suffix)] + repl
            if stem != word and stem not in STOP_WORDS and stem not in out:
                out.append(stem)
    return out


def code_names(query: str) -> list[QueryName]:
    """The names of a query shaped like code, or capitalized, that are not stop words: what
    `cas load` must find shown somewhere (gap detection)."""
    out = []
    for name in query_names(query):
        if name.compound or (name.text != name.text.lower() and name.words[0] not in STOP_WORDS):
            out.append(name)
    return out


@dataclass(slots=True)
class Source:
    """The files of the packs searched: each body's paths, and which packs hold each path."""

    paths: dict[Digest, list[str]] = field(default_factory=dict)  # digest -> paths, sorted
    packs: dict[str, list[str]] = field(default_factory=dict)  # path -> pack names
    entries: dict[str, mf.Entry] = field(default_factory=dict)  # path -> entry (first pack)

    def add(self, name: str, m: mf.Manifest) -> None:
        for e in m.entries:
            if e.digest is None or e.kind != "file":
                continue
            self.packs.setdefault(e.path, []).append(name)
            if e.path in self.entries:
                continue
            self.entries[e.path] = e
            self.paths.setdefault(e.digest, []).append(e.path)

    def add_from(self, other: Source, path: str) -> None:
        """One file of another source (a gap's file), with the packs that hold it."""
        if path in self.entries:
            return
        e = other.entries[path]
        assert e.digest is not None
        self.entries[path] = e
        self.packs[path] = list(other.packs.get(path, ()))
        self.paths.setdefault(e.digest, []).append(path)


@dataclass(frozen=True, slots=True)
class Attached:
    """A manifest searched and loaded beside the packs though no pack file holds it (a memory,
    given by the surface that asked for it): its name, its entries, and the digest a load
    records it by among its sources."""

    name: str
    manifest: mf.Manifest
    digest: Digest


def visible_packs(
    root: Path, store: Store, scopes: Collection[str] = (), *, memory_packs: bool = False
) -> list[locate.LocatedPack]:
    """The project's packs, by name, that may be shown where the memories of ``scopes`` were
    asked for (`cas.visibility`): those carrying no memory, and the loads drawn on those
    memories only. Memory packs of those scopes only with ``memory_packs``: a search or a load
    draws on the memory itself (`Attached`), not on its packs, which repeat it per target."""
    folder = locate.manifest_dir(root)
    out = []
    for name in locate.pack_names(folder):
        found = locate.load_pack(name, folder, store)
        if is_memory_pack(found.manifest) and not memory_packs:
            continue
        if visible(found.manifest, store, scopes):
            out.append(found)
    return out


def source(
    root: Path,
    store: Store,
    packs: Sequence[str] | None,
    scopes: Collection[str] = (),
    attached: Sequence[Attached] = (),
) -> Source:
    """The files of ``packs`` (None: the `visible_packs` of ``scopes``; empty: none) and of
    ``attached``. A pack named that holds a memory not among ``scopes`` is refused
    (`cas.visibility.granted_pack`)."""
    folder = locate.manifest_dir(root)
    if packs is not None:
        named = [(name, granted_pack(name, folder, store, scopes).manifest) for name in packs]
    else:
        named = [(p.name, p.manifest) for p in visible_packs(root, store, scopes)]
    named += [(a.name, a.manifest) for a in attached]
    if not named:
        raise NotFound("pack", "", "this project has no packs: run 'cas pack' first")
    out = Source()
    for name, m in named:
        out.add(name, m)
    return out


def ensure_indexed(
    index: TextIndex,
    store: Store,
    digests: Iterable[Digest],
    progress: ProgressSink | None = None,
) -> int:
    """Index the bodies among ``digests`` not indexed yet; returns how many were read."""
    wanted = set(digests)
    todo = wanted - index.indexed(wanted)
    if not todo:
        return 0

    def read(digest: Digest) -> bytes | None:
        try:
            with store.open(digest) as reader:
                if reader.size > MAX_BODY:
                    return None  # not indexed: known by its size, never read (a 1 GiB log)
                return reader.read()
        except (BlobNotFound, CorruptBlob):
            return None  # verify reports it; search goes on without it

    tick = (lambda done: emit(progress, "index", done, len(todo))) if progress is not None else None
    return index.add(todo, read, tick)


@dataclass(frozen=True, slots=True)
class Hit:
    """One file found; `cas.report.report_json` gives it as `cas search --json` and the MCP
    `search` tool show it (``lines`` for ``first`` and ``last``)."""

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("lines",)

    path: str
    packs: tuple[str, ...]
    digest: Digest
    # The line range of the best matching lines.
    first: int = field(metadata=json_rule(omit=True))
    last: int = field(metadata=json_rule(omit=True))
    score: int
    # (line number, text)
    snippet: tuple[tuple[int, str], ...] = field(metadata=json_rule(convert=pairs("line", "text")))

    @property
    def lines(self) -> list[int]:
        return [self.first, self.last]


@dataclass(slots=True)
class Scored:
    """Per-file scores of a query over a source, with each file's windows that matched."""

    terms: list[Term]
    files: int
    scores: dict[str, int] = field(default_factory=dict)  # path -> score
    # Windows given outright (first line, last line) -> score; the others are made from
    # `marks` when asked for (`spans`), which only the files shown need.
    windows: dict[str, dict[tuple[int, int], int]] = field(default_factory=dict)
    weights: dict[tuple[str, ...], int] = field(default_factory=dict)  # term -> weight x idf
    # Per body: (windows mask, weight) of each term it holds, and its (lines, window size).
    marks: dict[Digest, list[tuple[int, int]]] = field(default_factory=dict)
    shapes: dict[Digest, tuple[int, int]] = field(default_factory=dict)
    digest_of: dict[str, Digest] = field(default_factory=dict)

    def ranked(self) -> list[tuple[str, int]]:
        return sorted(self.scores.items(), key=lambda kv: (-kv[1], kv[0].encode()))

    def spans(self, path: str) -> dict[tuple[int, int], int]:
        """(first line, last line) -> score of each window of ``path`` holding a term."""
        given = self.windows.get(path)
        if given is not None:
            return given
        digest = self.digest_of.get(path)
        if digest is None:
            return {}
        lines, width = self.shapes[digest]
        out: dict[tuple[int, int], int] = {}
        for mask, weight in self.marks[digest]:
            for first, last in windows_of(mask, lines, width):
                out[(first, last)] = out.get((first, last), 0) + weight
        return out


def windows_of(mask: int, lines: int, width: int) -> list[tuple[int, int]]:
    """(first line, last line) of each window in a mask, from 1."""
    out = []
    index = 0
    while mask:
        if mask & 1:
            first = index * width + 1
            out.append((first, min(first + width - 1, max(lines, first))))
        mask >>= 1
        index += 1
    return out


def _best_and_total(marks: list[tuple[int, int]]) -> tuple[int, int]:
    """The best window's score and the sum over windows, from each term's (mask, weight)."""
    total = sum(w * m.bit_count() for m, w in marks)
    if len(marks) == 1:
        return marks[0][1], total
    either = 0
    for m, _ in marks:
        either |= m
    best = 0
    bit = 0
    while either:
        if either & 1:
            here = sum(w for m, w in marks if m >> bit & 1)
            best = max(best, here)
        either >>= 1
        bit += 1
    return best, total


def score(
    index: TextIndex, src: Source, query: str, read: Callable[[Digest], str] | None = None
) -> Scored:
    """Score every file of ``src`` that holds a term of ``query``; with ``read`` given, files
    that define a name of the query (``def NAME``, ``class NAME``, ``func NAME``, ``NAME =``:
    the index's definition terms) gain `DEFINES` times its weight (the index knows where names
    are defined, so ``read`` is not called)."""
    terms = query_terms(query)
    out = Scored(terms, len(src.paths))
    wanted = src.paths
    for term in terms:
        postings = [p for p in index.term(term.words) if p.digest in wanted]
        weight = term.weight * idf(len(wanted), len(postings))
        out.weights[term.words] = weight
        for p in postings:
            marks = out.marks.get(p.digest)
            if marks is None:
                marks = out.marks[p.digest] = []
                out.shapes[p.digest] = (p.lines, p.width)
            marks.append((p.mask, weight))
    path_terms = [(t.words[0], out.weights[t.words]) for t in terms if len(t.words) == 1]
    for digest, marks in out.marks.items():
        best, total = _best_and_total(marks)
        rest = min(best // 2, (total - best) // 16)
        for path in src.paths[digest]:
            out.scores[path] = best + rest + _path_score(path, path_terms)
            out.digest_of[path] = digest
    # a file whose path alone answers (``router.go`` for "router") counts too
    if path_terms:
        for path, e in src.entries.items():
            if path not in out.scores and e.digest is not None:
                bonus = _path_score(path, path_terms)
                if bonus:
                    out.scores[path] = bonus
                    out.windows[path] = {}
    if read is not None:
        _rerank(out, index, src, terms)
    return out


def _rerank(out: Scored, index: TextIndex, src: Source, terms: list[Term]) -> None:
    """Files that define a code-shaped name of the query gain the best score so far plus
    `DEFINES` times the name's weight (split between the words of a dotted name; half for a
    definition that is indented, a method or a nested function)."""
    bonus: dict[str, int] = {}
    best = max(out.scores.values(), default=0)
    for term in terms:
        if term.weight != WHOLE_CODE:
            continue
        weight = out.weights[term.words]
        gain = (best + weight * DEFINES) // len(term.words)
        for word in term.words:
            top = {p.digest for p in index.lookup(definition_key(word, top=True))}
            nested = {p.digest for p in index.lookup(definition_key(word, top=False))}
            for digest in sorted((top | nested) & src.paths.keys()):
                for path in src.paths[digest]:
                    bonus[path] = bonus.get(path, 0) + (gain if digest in top else gain // 2)
    for path, extra in bonus.items():
        if path not in out.scores and path not in out.digest_of:
            out.windows[path] = {}
        out.scores[path] = out.scores.get(path, 0) + extra


def _path_score(path: str, terms: Sequence[tuple[str, int]]) -> int:
    """What the words of a path (its folders and name, and their compounds' words) hold of a
    query's single-word terms, twice over."""
    lowered = path.lower()
    present = [(word, w) for word, w in terms if word in lowered]
    if not present:  # a word that is no substring of the path is none of its words
        return 0
    words: set[str] = set()
    for piece in re.split(r"[/.\-]", path):
        if piece:
            words.add(piece.lower())
            words.update(split_name(piece))
    return sum(w * PATH_FACTOR for word, w in present if word in words)


def line_terms(line: str) -> set[str]:
    """The index terms of one line: its tokens, lowercased, and the words of compound ones."""
    out: set[str] = set()
    for tok in WORD.findall(line):
        out.add(tok.lower())
        out.update(split_name(tok))
    return out


def line_score(line: str, weights: dict[tuple[str, ...], int]) -> int:
    """What a line holds of the query's single terms (phrases count by their first word)."""
    have = line_terms(line)
    return sum(w for words, w in weights.items() if words[0] in have)


def hits(
    store: Store,
    src: Source,
    scored: Scored,
    *,
    k: int = 10,
    path_glob: Sequence[str] = (),
) -> list[Hit]:
    """The best ``k`` files, each with its best window narrowed to the lines that match."""
    globs = GlobList(path_glob) if path_glob else None
    out: list[Hit] = []
    for path, total in scored.ranked():
        if globs is not None and not globs.match_file(path):
            continue
        e = src.entries[path]
        assert e.digest is not None
        try:
            text = text_of(store.get(e.digest)) or ""
        except (BlobNotFound, CorruptBlob):
            continue
        lines = text.split("\n")
        spans = scored.spans(path)
        if spans:
            (first, last), _ = min(spans.items(), key=lambda kv: (-kv[1], kv[0]))
        else:
            first, last = 1, min(len(lines), SNIPPET_LINES)
        marked = [
            (n, line_score(lines[n - 1], scored.weights))
            for n in range(first, min(last, len(lines)) + 1)
        ]
        matching = [n for n, s in marked if s > 0] or [first]
        best = sorted(marked, key=lambda ns: (-ns[1], ns[0]))[:SNIPPET_LINES]
        snippet = tuple(
            (n, _clip(lines[n - 1])) for n, s in sorted(best) if s > 0 or not matching
        ) or ((first, _clip(lines[first - 1] if first <= len(lines) else "")),)
        out.append(
            Hit(
                path,
                tuple(src.packs.get(path, ())),
                e.digest,
                min(matching),
                max(matching),
                total,
                snippet,
            )
        )
        if len(out) >= k:
            break
    return out


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= SNIPPET_WIDTH else line[: SNIPPET_WIDTH - 3] + "..."


def search(
    store: Store,
    index: TextIndex,
    root: Path,
    query: str,
    *,
    packs: Sequence[str] | None = None,
    k: int = 10,
    path_glob: Sequence[str] = (),
    progress: ProgressSink | None = None,
    scopes: Collection[str] = (),
    attached: Sequence[Attached] = (),
) -> list[Hit]:
    """Search the bodies of the project's packs (or of ``packs``), and of ``attached``, for
    ``query``; ``scopes``: the memories asked for (`visible_packs`)."""
    if k < 1:
        raise UsageError(f"-k must be at least 1, not {k}")
    if not query_terms(query):
        raise UsageError(
            f"the query {echoed(query)} has no word to search for (stop words alone match "
            "everything)"
        )
    src = source(root, store, packs, scopes, attached)
    ensure_indexed(index, store, src.paths, progress)
    scored = score(index, src, query, lambda d: text_of(store.get(d)) or "")
    return hits(store, src, scored, k=k, path_glob=path_glob)
