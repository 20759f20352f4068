"""A rating for every file and every symbol: how much an agent needs to see it.

The files of a project form a graph. An edge goes from each file that uses a name to the files
that define it (`packer.lexicon` reads both), from each file to the files its imports resolve to
(`packer.surface`), and from a package index to the files whose names it re-exports. A use
weighs what the evidence says it means:

* the name's shape: a long structured name (``get_current_context``, ``AddCommand``) is one
  thing, a lowercase word (``run``, ``filename``) may be anything: x10, x3 (``Command``), x1;
  a member or a variable named by a plain word (``name``, ``write``) links nothing, and an
  instance attribute (``self.prog_name``) only by a specific name, x3;
* the definition's visibility: exported by its language's rules x10, not exported x3, a leading
  underscore x1 (a name from a private Python module such as ``_compat.py`` counts as not
  exported unless a package index re-exports it);
* how often the file uses it: x sqrt(count); words of comments and docstrings count only when
  shaped like names;
* who else defines it: the weight is split between the definers, and a name defined in more
  than `MAX_DEFINERS` files links nothing (``get``, ``Meta``: no signal, a dense graph); a file
  that defines the name itself means its own definition; names link within one family of
  languages (a Python ``TypeError`` is not a JavaScript one), documents to every family;
* a name bound by an import that says where it comes from (``from .core import Command``, Go's
  ``stack.New`` through the import named ``stack``) links to that module's definition only, and
  to nothing when the module is not the project's (``from typing import Set``,
  ``unsafe.Pointer``);
* a package index (``__init__.py``, ``index.ts``, ``lib.rs``) stands in for the names it
  re-exports, as one more definer, and hands what it gets on to their files in proportion.

PageRank over that graph, teleporting by a personalization vector, gives each file its share of
attention. The personalization is what a reader meets first: entry points the metadata declares,
package indexes and what they re-export, the README and the paths and names it mentions, files
changed recently and often (`packer.history`), each scaled by the weight class of the rule that
matched the file (``priorities``).

A file's rating is its share, scaled so that a file with the average share rates `AVERAGE`.
A file's symbols split its rating (less what an index relays for names it does not define):
half in proportion to the flow arriving through the references that name each symbol (aider's
"ranked definitions"), half in proportion to its visibility (1 private, 4 exported, 16 when a
package index re-exports it, the README names it or an entry point is it) times one plus its
use (sqrt of the uses in each file that uses it, summed, over 16): what clients call often and
widely comes first even when the clients themselves rate low.

Determinism: integer arithmetic only (numpy int64 within the bounds stated beside each
constant, and Python integers), files ordered by the bytes of their paths, ties broken the
same way, and a convergence test on integers; integer sums are exact in any order, so the
same inputs give the same integers on every machine (DETERMINISM.md, "Ratings").
"""

from __future__ import annotations

import bisect
import math
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

# numpy's BLAS starts a thread per core when it loads: the rating uses integer arithmetic only,
# no BLAS, and a process limit that leaves no room for those threads must not fail a pack.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

from cas.words import native_module
from packer.history import History
from packer.lang import LANGUAGES
from packer.lexicon import (
    ATTRIBUTE,
    EXPORTED,
    MINOR,
    SHAPE_SHIFT,
    UNDERSCORE,
    Defined,
    Lexicon,
    fingerprint,
    lex,
)
from packer.rating_scale import AVERAGE
from packer.surface import (
    README_NAMES,
    README_PATH,
    REEXPORTED,
    Layout,
    Surface,
    is_index,
    module_system,
    public_surface,
)

MAX_DEFINERS: Final = 32
DAMPING: Final = (85, 100)
# A file's mass: this much of the PageRank toward what is used, to this much of the one toward
# what uses (see `rate`).
AUTHORITY: Final = 2
HUB: Final = 1
ITERATIONS: Final = 60
# Iterations stop once no file's mass moves by more than TOTAL >> CONVERGED_BITS (an integer
# test: where it stops is the same on every machine).
CONVERGED_BITS: Final = 32
# Fixed-point scales. Rank mass totals 2**38; an edge's share of its source's out-weight is in
# units of 2**-22; the personalization sums to at most 2**22. Products stay below 2**60.
TOTAL_BITS: Final = 38
SHARE_BITS: Final = 22
TELEPORT_BITS: Final = 22
TOTAL: Final = 1 << TOTAL_BITS
# Edge weights: specificity x visibility x 16*sqrt(count) x 64, split between definers; an
# import counts like one use of a specific exported name.
_SPECIFICITY = np.array([1, 3, 10, 10], dtype=np.int64)  # by `packer.lexicon.shape`
_MINOR_SPECIFICITY = np.array([0, 3, 10, 10], dtype=np.int64)
_ATTRIBUTE_SPECIFICITY = np.array([0, 0, 3, 3], dtype=np.int64)
_EXPORTED, _HIDDEN, _UNDERSCORE = 10, 3, 1
_COUNT_CAP = 1024
_SQRT16: Final = np.array([math.isqrt(c * 256) for c in range(_COUNT_CAP + 1)], dtype=np.int64)
_UNIT = 64
# No edge weighs more than this, so that a weight shifted by SHARE_BITS stays below 2**63 (a
# reference weighs at most 10 x 10 x 512 x 64 < 2**22; sums over names and re-exports are cut).
_MAX_WEIGHT = 1 << 36
IMPORT_WEIGHT: Final = 10 * _EXPORTED * 16 * _UNIT
# Personalization points: every file has BASE; the public surface adds (packer.surface);
# history adds up to 128 for how often and 64 for how recently.
BASE: Final = 16
PRIORITY_RANGE: Final = 4  # weight classes -4..4; each step doubles or halves the points
# Symbol shares (see the module docstring).
_SHARE_PRIVATE, _SHARE_EXPORTED, _SHARE_PUBLIC = 1, 4, 16
# Names link files of one family of languages only (`packer.lang.Language.family`): a Python
# file's `TypeError` is not a JavaScript file's. Families are numbered from 1 in the order the
# table of languages first names them; documents (family 0) refer to every family.
_FAMILY_NUMBERS: Final = {
    family: k + 1
    for k, family in enumerate(dict.fromkeys(lang.family for lang in LANGUAGES if lang.family))
}
_FAMILIES: Final = {lang.name: _FAMILY_NUMBERS[lang.family] for lang in LANGUAGES if lang.family}
_FAMILY_SALT = np.uint64(0x9E3779B97F4A7C15)  # keyed fingerprint: fp XOR family * salt
_BITMAP_BITS = 26
_BUCKET_BITS = 20
_SLOT_FACTOR = np.uint64(0xD6E8FEB86659FD93)  # odd: a bijection of 64-bit keys (`_slot`)

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


class Reasons(Mapping[str, tuple[str, ...]]):
    """Why each file rates as it does, in words, made when a file's are asked for (`cas pack
    --explain` asks for one; a pack of 20,000 files need not write 20,000 of them)."""

    def __init__(
        self,
        paths: Sequence[str],
        referrers: Int64Array,
        importers: Int64Array,
        found: Mapping[int, list[str]],
        history: History | None,
        weights: Int64Array,
    ) -> None:
        self._paths = paths
        self._index: dict[str, int] | None = None
        self._referrers, self._importers = referrers, importers
        self._found, self._history, self._weights = found, history, weights

    def __getitem__(self, path: str) -> tuple[str, ...]:
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self._paths)}
        i = self._index[path]
        why: list[str] = []
        if k_ref := int(self._referrers[i]):
            why.append(f"referenced by {k_ref} file{'' if k_ref == 1 else 's'}")
        if k_imp := int(self._importers[i]):
            why.append(f"imported by {k_imp} file{'' if k_imp == 1 else 's'}")
        why += self._found.get(i, [])
        if self._history is not None and (said := self._history.reason(path)):
            why.append(said)
        if weight := int(self._weights[i]):
            why.append(f"rule weight {weight:+d}")
        return tuple(why)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


class Ratings:
    """Integer ratings per file and per symbol, with the reasons a file rates as it does.
    Symbol ratings are kept as one array and turned into names per file when asked."""

    def __init__(
        self,
        files: dict[str, int],
        reasons: Mapping[str, tuple[str, ...]],
        iterations: int,
        symbol_values: Int64Array,
        spans: dict[str, tuple[Defined, int]],
        stats: dict[str, int] | None = None,
        public: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        self.files = files
        self._public = public if public is not None else np.zeros(len(symbol_values), np.bool_)
        self.stats = stats or {}  # sizes of the graph: definitions, references, pairs, edges
        self.reasons = reasons
        self.iterations = iterations
        self._values = symbol_values
        self._spans = spans  # path -> (the names it defines, the index of its first symbol)

    def file(self, path: str) -> int:
        return self.files.get(path, 0)

    def symbols_of(self, path: str) -> dict[str, int]:
        """The rating of every name ``path`` defines (empty when it defines none)."""
        found = self._spans.get(path)
        if found is None:
            return {}
        defined, start = found
        names = defined.defines
        return dict(zip(names, self._values[start : start + len(names)].tolist(), strict=True))

    def public_of(self, path: str) -> frozenset[str]:
        """The names ``path`` defines that are its project's public surface: re-exported by a
        package index, named in the README, or declared as an entry point."""
        found = self._spans.get(path)
        if found is None:
            return frozenset()
        defined, start = found
        names = defined.defines
        flags = self._public[start : start + len(names)].tolist()
        return frozenset(n for n, f in zip(names, flags, strict=True) if f)

    def shifted(
        self, shifts: Mapping[str, int], boost: int, cap: int
    ) -> Iterator[tuple[str, Defined, list[int], list[int], int]]:
        """For every file that defines names, in one pass over the arrays: (path, the names it
        defines (`Defined`: split only by whoever needs them), each name's
        rating shifted left by the file's ``shifts`` (right when negative, none when absent)
        and kept within [1, ``cap``], times ``boost`` when the public surface holds the name;
        the same values, largest first; their sum). Ratings stay below 2**45 (a file's is at
        most the file count times `AVERAGE`), so no product passes 2**63."""
        paths = list(self._spans)  # in the order of their rows, which follow one another
        if not paths:
            return
        sizes = np.array([self._spans[p][0].size for p in paths], dtype=np.int64)
        shift = np.repeat(np.array([shifts.get(p, 0) for p in paths], dtype=np.int64), sizes)
        ratings = self._values
        up = ratings << np.maximum(shift, 0)
        down = ratings >> np.maximum(-shift, 0)
        values = np.clip(np.where(shift >= 0, up, down), 1, cap)
        values = np.where(self._public, values * boost, values)
        bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
        totals = np.add.reduceat(values, bounds[:-1]).tolist()
        listed = values.tolist()
        for k, path in enumerate(paths):
            own = listed[bounds[k] : bounds[k + 1]]
            # a file's few dozen values sorted as a list: quicker than one sort of them all
            yield path, self._spans[path][0], own, sorted(own, reverse=True), totals[k]

    def symbol(self, path: str, name: str) -> int:
        return self.symbols_of(path).get(name, 0)

    @property
    def symbols(self) -> dict[str, dict[str, int]]:
        """Every file's symbol ratings (all of them at once: prefer `symbols_of`)."""
        return {path: self.symbols_of(path) for path in self._spans}

    def ranked(self) -> list[str]:
        """Every path, best rated first; ties break on the path's bytes."""
        return sorted(self.files, key=lambda p: (-self.files[p], p.encode()))

    def ranked_symbols(self) -> list[tuple[str, str, int]]:
        """Every (path, name, rating), best first; ties on the path's bytes, then the name's."""
        out = [(p, n, r) for p in self._spans for n, r in self.symbols_of(p).items()]
        out.sort(key=lambda t: (-t[2], t[0].encode(), t[1].encode()))
        return out


def _private_module(path: str) -> bool:
    """A Python module or package whose name starts with an underscore (``_compat.py``,
    ``_internal/x.py``): its names are internal unless a package index re-exports them."""
    for part in path.split("/"):
        stem = part.split(".")[0]
        if part.startswith("_") and not (stem.startswith("__") and stem.endswith("__")):
            return True
    return False


def _history_points(history: History | None, path: str) -> int:
    if history is None or not history.window:
        return 0
    changes = history.changes.get(path, 0)
    if not changes:
        return 0
    newest = history.newest.get(path, history.window)
    return min(changes, 16) * 8 + 64 * (history.window - newest) // history.window


def _expand(starts: Int64Array, counts: Int64Array) -> tuple[Int64Array, Int64Array]:
    """For groups given by (start, count): (group of each item, start + offset of each item)."""
    total = int(counts.sum())
    group = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts  # index of each group's first item
    offset = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
    return group, np.repeat(starts, counts) + offset


def _segment_sums(
    keys: Int64Array, *columns: Int64Array
) -> tuple[Int64Array, tuple[Int64Array, ...]]:
    """Distinct ``keys`` (sorted) and the exact integer sum of each of ``columns`` per key."""
    if not len(keys):
        return keys, columns
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[starts], tuple(np.add.reduceat(c[order], starts) for c in columns)


def _pagerank(
    src: Int64Array, dst: Int64Array, weight: Int64Array, teleport: Int64Array, n: int
) -> tuple[Int64Array, int]:
    """Fixed-point PageRank over the edges ``src -> dst`` (each source's weight split in
    proportion), with ``teleport`` summing to at most 2**TELEPORT_BITS: the mass of each node,
    totalling TOTAL, and the iterations it took."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, src, weight)
    share = (weight << SHARE_BITS) // np.maximum(out[src], 1)
    by_dst = np.argsort(dst, kind="stable")
    src, dst, share = src[by_dst], dst[by_dst], share[by_dst]
    starts = np.flatnonzero(
        np.concatenate(([True], dst[1:] != dst[:-1])) if len(dst) else np.zeros(0, bool)
    )
    nodes = dst[starts]
    rank = np.full(n, TOTAL // n, dtype=np.int64)
    iterations = 0
    for iterations in range(1, ITERATIONS + 1):  # noqa: B007 - the count is reported
        inflow = np.zeros(n, dtype=np.int64)
        if len(src):
            moved = (rank[src] * share) >> SHARE_BITS
            inflow[nodes] = np.add.reduceat(moved, starts)
        kept = (inflow * DAMPING[0]) // DAMPING[1]
        leftover = TOTAL - int(kept.sum())
        new = kept + ((leftover * teleport) >> TELEPORT_BITS)
        change = int(np.abs(new - rank).max())
        rank = new
        if change <= TOTAL >> CONVERGED_BITS:
            break
    return rank, iterations


def _to_rating(mass: Int64Array, scale: int) -> Int64Array:
    """``mass * scale >> TOTAL_BITS`` exactly, for mass < 2**38 and scale < 2**40, in int64:
    the product is taken in two halves of 19 bits so that none passes 2**63."""
    high, low = mass >> 19, mass & ((1 << 19) - 1)
    return (high * scale + ((low * scale) >> 19)) >> (TOTAL_BITS - 19)


def _keyed(fps: UInt64Array, families: Int64Array) -> UInt64Array:
    """Fingerprints keyed by language family (a bijection per family)."""
    return fps ^ (families.astype(np.uint64) * _FAMILY_SALT)


def _read_u64(data: bytes) -> UInt64Array:
    """Little-endian uint64s as native ones (no copy where the machine is little-endian)."""
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)


def rate(
    files: Iterable[tuple[str, str | None, int, Lexicon | None]],
    *,
    read: Callable[[str], str | None],
    history: History | None = None,
    priorities: Mapping[str, int] | None = None,
) -> Ratings:
    """Rate every file and every symbol a lexicon defines.

    ``files``: (path, language, size, lexicon or None) for every file of the project, paths
    POSIX and relative to its root. ``read(path)``: the text of a top-level metadata file or
    README, or None. ``history``: recent changes, when the project is a git repository.
    ``priorities``: per path, the weight class of the rule that matched it, -4 (lowest) to 4
    (clamped; absent is 0): each step doubles (or halves) the file's personalization.

    In four steps: the graph (`_graph`: definitions, what links to them, the edges between
    files), the personalization (`_teleport`), PageRank both ways (`_pagerank`), and the split
    of each file's mass among its symbols (`_symbol_mass`)."""
    rows = sorted(files, key=lambda f: f[0].encode("utf-8", "surrogateescape"))
    paths = [r[0] for r in rows]
    langs = [r[1] for r in rows]
    lexicons = [r[3] for r in rows]
    n = len(paths)
    if n == 0:
        return Ratings({}, {}, 0, np.zeros(0, dtype=np.int64), {})
    layout = Layout(paths, lexicons)
    surface = public_surface(layout, langs, read)
    g = _graph(layout, langs, lexicons, surface)
    weights, teleport, readme_rows = _teleport(
        g, layout, lexicons, surface, read, history, priorities or {}
    )

    # PageRank in fixed point, both ways: mass flows to what is used (the files a project depends
    # on) and, apart, to what uses (the files that put it together: a command, a builder, the
    # module that wires the others). A file's mass is a blend of the two, so a project's core
    # rates high whether it is depended on or does the depending.
    rank, iterations = _pagerank(g.e_src, g.e_dst, g.e_weight, teleport, n)
    hubs, _ = _pagerank(g.e_dst, g.e_src, g.e_weight, teleport, n)
    mass = (rank * AUTHORITY + hubs * HUB) // (AUTHORITY + HUB)
    symbol_mass, public = _symbol_mass(g, lexicons, surface, rank, mass, readme_rows)

    # Ratings: the mass in units where a file with the average share has AVERAGE.
    d = g.defs
    scale = n * AVERAGE
    file_ratings = dict(zip(paths, _to_rating(mass, scale).tolist(), strict=True))
    symbol_values = _to_rating(symbol_mass[: d.real], scale)
    spans = {
        paths[i]: (lexicon.defined, int(d.starts[i]))
        for i, lexicon in enumerate(lexicons)
        if lexicon is not None and d.sizes[i]
    }

    # Reasons: the files that reference each (an edge with a reference among its parts), and
    # that import it; put in words only when asked.
    e_dst = g.e_dst
    referrers = (
        np.bincount(e_dst[g.e_refs > 0], minlength=n) if len(e_dst) else np.zeros(n, np.int64)
    )
    importers = np.bincount(g.i_dst, minlength=n) if len(g.i_dst) else np.zeros(n, dtype=np.int64)
    reasons = Reasons(paths, referrers, importers, surface.reasons, history, weights)
    stats = {
        "files": n,
        "definitions": d.real,
        "references": g.references,
        "pairs": len(g.t_def),
        "edges": len(g.e_src),
        "iterations": iterations,
    }
    return Ratings(file_ratings, reasons, iterations, symbol_values, spans, stats, public[: d.real])


@dataclass(frozen=True)
class _Defs:
    """One row per (file, name) a lexicon defines, in file order then name order; rows from
    ``real`` on are a package index's stand-ins for the names it re-exports (`_graph`)."""

    sizes: Int64Array  # definitions per file
    starts: Int64Array  # each file's first row
    real: int  # rows of real definitions
    d_file: Int64Array
    d_fp: UInt64Array
    d_info: Int64Array


def _definitions(lexicons: Sequence[Lexicon | None]) -> _Defs:
    sizes = np.array([len(lx.info) if lx is not None else 0 for lx in lexicons], dtype=np.int64)
    d_info = np.frombuffer(b"".join(lx.info for lx in lexicons if lx), dtype=np.uint8).astype(
        np.int64
    )
    return _Defs(
        sizes=sizes,
        starts=np.cumsum(sizes) - sizes,
        real=int(sizes.sum()),
        d_file=np.repeat(np.arange(len(lexicons), dtype=np.int64), sizes),
        d_fp=_read_u64(b"".join(lx.fps for lx in lexicons if lx)),
        d_info=d_info,
    )


def _resolved_imports(layout: Layout, lexicons: Sequence[Lexicon | None]) -> list[list[int]]:
    """Each file's imports, resolved to the files of the project they name (after the surface:
    it reads go.mod and package.json for names)."""
    imports: list[list[int]] = [[] for _ in lexicons]
    for i, lexicon in enumerate(lexicons):
        if lexicon is not None and lexicon.imports:
            found: set[int] = set()
            for spec in lexicon.imports:
                found.update(layout.resolve(i, spec, lexicon.lang))
            imports[i] = sorted(found)
    return imports


def _reexports(
    layout: Layout,
    lexicons: Sequence[Lexicon | None],
    imports: list[list[int]],
    d: _Defs,
    family: Int64Array,
) -> dict[int, list[int]]:
    """Re-exports: a package index exports names it does not define (`from .core import
    Command`, `pub use`, `export { x } from`) and everything of what it star-imports. Per
    index, the definition rows it stands for."""
    paths = layout.paths
    sorted_fps: list[tuple[Int64Array, UInt64Array]] = []  # sorted when first asked

    def rows_named(name: str) -> list[int]:
        if not sorted_fps:
            order = np.argsort(d.d_fp, kind="stable")
            sorted_fps.append((order, d.d_fp[order]))
        by_fp, fp_sorted = sorted_fps[0]
        fp = np.uint64(fingerprint(name))
        lo = int(np.searchsorted(fp_sorted, fp, side="left"))
        hi = int(np.searchsorted(fp_sorted, fp, side="right"))
        return sorted(by_fp[lo:hi].tolist())

    reexported_by: dict[int, list[int]] = {}
    for i, lexicon in enumerate(lexicons):
        if lexicon is None or not (is_index(paths[i]) or lexicon.star):
            continue
        targets = set(imports[i])
        folder = posixpath.dirname(paths[i])
        prefix = folder + "/" if folder else ""
        chosen_rows: list[int] = []
        for name in lexicon.reexports:
            candidates = [r for r in rows_named(name) if family[d.d_file[r]] == family[i]]
            chosen = [r for r in candidates if int(d.d_file[r]) in targets]
            if not chosen:
                chosen = [r for r in candidates if paths[int(d.d_file[r])].startswith(prefix)]
            if len(chosen) <= 3:
                chosen_rows += chosen
        for spec in lexicon.star:
            for f in layout.resolve(i, spec, lexicon.lang):
                start = int(d.starts[f])
                chosen_rows += [
                    r for r in range(start, start + int(d.sizes[f])) if d.d_info[r] & EXPORTED
                ]
        chosen_rows = sorted({r for r in chosen_rows if d.d_file[r] != i})
        if chosen_rows:
            reexported_by[i] = chosen_rows
    return reexported_by


@dataclass(frozen=True)
class _Graph:
    """What `rate` links: the definitions and how each links, the (reference, definer) pairs,
    and the edges between files with their weights."""

    defs: _Defs
    family: Int64Array
    private_module: npt.NDArray[np.bool_]
    reexported: npt.NDArray[np.bool_]  # per real row: an index re-exports it
    visibility: Int64Array  # per row, stand-ins included
    specific: Int64Array
    group_of: Int64Array  # the size of each row's group of definers (1 when unlinkable)
    hop_index: Int64Array  # per stand-in row: its index ...
    hop_row: Int64Array  # ... and the real row it stands for
    h_weight: Int64Array  # what each stand-in hands on
    t_src: Int64Array  # (reference, definer) pairs: source file, definition row, ...
    t_def: Int64Array
    t_sqrt: Int64Array  # sqrt(uses) ...
    t_weight: Int64Array  # ... and weight
    i_dst: Int64Array  # an import's target, per import
    e_src: Int64Array  # file edges: source, target, weight, and how many parts are references
    e_dst: Int64Array
    e_weight: Int64Array
    e_refs: Int64Array
    out_weight: Int64Array  # each file's weight out
    references: int  # how many references the lexicons hold


def _graph(
    layout: Layout,
    langs: Sequence[str | None],
    lexicons: Sequence[Lexicon | None],
    surface: Surface,
) -> _Graph:
    paths = layout.paths
    n = len(paths)
    family = np.array(
        [_FAMILIES.get(lx.lang, 0) if lx is not None else 0 for lx in lexicons], dtype=np.int64
    )
    imports = _resolved_imports(layout, lexicons)
    d = _definitions(lexicons)
    real = d.real
    reexported_by = _reexports(layout, lexicons, imports, d, family)
    reexported = np.zeros(real, dtype=np.bool_)
    for chosen_rows in reexported_by.values():
        reexported[chosen_rows] = True
    reexported_from = np.bincount(d.d_file[reexported], minlength=n)
    for index, chosen_rows in sorted(reexported_by.items()):
        k = len(chosen_rows)
        surface.add(index, min(REEXPORTED, 4 * k), f"re-exports {k} name{'' if k == 1 else 's'}")
        for f, count in enumerate(np.bincount(d.d_file[chosen_rows], minlength=n).tolist()):
            if count:
                surface.add(
                    f,
                    min(REEXPORTED, 16 * count),
                    f"{count} name{'' if count == 1 else 's'} re-exported by {paths[index]}",
                )

    # Visibility and specificity of each definition.
    python = {lang for lang in set(langs) if module_system(lang) == "python"}
    private_module = np.array(
        [langs[i] in python and _private_module(p) for i, p in enumerate(paths)], dtype=np.bool_
    )
    d_info, d_file = d.d_info, d.d_file
    exported = (d_info & EXPORTED) != 0
    visibility = np.where(
        (d_info & UNDERSCORE) != 0,
        _UNDERSCORE,
        np.where(exported & (~private_module[d_file] | reexported), _EXPORTED, _HIDDEN),
    ).astype(np.int64)
    shapes = (d_info >> SHAPE_SHIFT) & 3
    # A member or variable named by a plain word (`name`, `write`, `method`) is more often any
    # object's attribute or a local variable than this one: it links nothing. An instance
    # attribute (`self.prog_name = ...`) links only by a specific name, and weakly: its name is
    # as often a variable or a keyword argument elsewhere.
    specific = np.where(
        (d_info & ATTRIBUTE) != 0,
        _ATTRIBUTE_SPECIFICITY[shapes],
        np.where((d_info & MINOR) != 0, _MINOR_SPECIFICITY[shapes], _SPECIFICITY[shapes]),
    )

    # A package index stands for the names it re-exports: users reach them through it
    # (`click.Command`), so it is one more definer of each, and it hands what it gets on to the
    # real definer (edges below). These rows (from `real` on) take part in the graph only.
    hop_index = np.array([i for i, rs in sorted(reexported_by.items()) for _ in rs], dtype=np.int64)
    hop_row = np.array([r for _, rs in sorted(reexported_by.items()) for r in rs], dtype=np.int64)
    d_file = np.concatenate((d_file, hop_index))
    d_fp = np.concatenate((d.d_fp, d.d_fp[hop_row]))
    visibility = np.concatenate((visibility, np.full(len(hop_row), _EXPORTED, dtype=np.int64)))
    specific = np.concatenate((specific, specific[hop_row]))
    d = _Defs(d.sizes, d.starts, real, d_file, d_fp, d.d_info)
    nd = len(d_file)

    # Definitions that can be linked to, grouped by keyed fingerprint: each group is the
    # definers of one name.
    linkable = np.flatnonzero(specific > 0)
    d_key = _keyed(d_fp, family[d_file])
    d_order = linkable[_by_key_then_file(d_key[linkable], d_file[linkable])]
    key_sorted = d_key[d_order]
    group_start = np.flatnonzero(
        np.concatenate(([True], key_sorted[1:] != key_sorted[:-1]))
        if len(key_sorted)
        else np.zeros(0, dtype=np.bool_)
    )
    group_start = group_start.astype(np.int64)
    group_key = key_sorted[group_start]
    group_size = np.diff(np.append(group_start, len(key_sorted))).astype(np.int64)
    group_of = np.zeros(nd, dtype=np.int64)
    group_of[d_order] = np.repeat(group_size, group_size)

    # References: every (file, fingerprint, count), joined to the definers of the name.
    ref_sizes = np.array(
        [len(lx.counts) // 2 if lx is not None else 0 for lx in lexicons], dtype=np.int64
    )
    bound_pairs, loose = _bound_names(layout, lexicons, d.starts, hop_index, hop_row, real)
    groups = _Groups(
        group_key, group_size, group_start, d_order, d_file, specific, visibility, group_of
    )
    t_src, t_def, t_dst, t_sqrt, t_weight = _reference_pairs(
        lexicons, ref_sizes, family, loose, groups
    )
    if bound_pairs:
        t_src, t_def, t_dst, t_sqrt, t_weight = (
            np.concatenate(pair)
            for pair in zip(
                (t_src, t_def, t_dst, t_sqrt, t_weight),
                _bound_pairs(bound_pairs, specific, visibility, d_file),
                strict=True,
            )
        )

    i_dst, h_weight, e_src, e_dst, e_weight, e_refs = _file_edges(
        imports, private_module & (reexported_from == 0), t_src, t_def, t_dst, t_weight,
        hop_index, d_file[hop_row], specific[hop_row], nd, real,
    )  # fmt: skip
    out_weight = np.zeros(n, dtype=np.int64)
    np.add.at(out_weight, e_src, e_weight)
    return _Graph(
        defs=d,
        family=family,
        private_module=private_module,
        reexported=reexported,
        visibility=visibility,
        specific=specific,
        group_of=group_of,
        hop_index=hop_index,
        hop_row=hop_row,
        h_weight=h_weight,
        t_src=t_src,
        t_def=t_def,
        t_sqrt=t_sqrt,
        t_weight=t_weight,
        i_dst=i_dst,
        e_src=e_src,
        e_dst=e_dst,
        e_weight=e_weight,
        e_refs=e_refs,
        out_weight=out_weight,
        references=int(ref_sizes.sum()),
    )


def _bound_pairs(
    bound_pairs: list[tuple[int, int, int, int]],
    specific: Int64Array,
    visibility: Int64Array,
    d_file: Int64Array,
) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]:
    """The (reference, definer) pairs of names bound by an import (`_bound_names`), as
    `_reference_pairs` gives the others: an imported name links to the definition in the
    module it comes from, whatever its shape (the import says which it is), split if that
    module has several."""
    b_src = np.array([f for f, _, _, _ in bound_pairs], dtype=np.int64)
    b_def = np.array([r for _, r, _, _ in bound_pairs], dtype=np.int64)
    b_sqrt = _SQRT16[np.minimum(np.array([c for *_, c, _ in bound_pairs], np.int64), _COUNT_CAP)]
    b_split = np.array([k for *_, k in bound_pairs], dtype=np.int64)
    b_weight = (np.maximum(specific[b_def], 1) * visibility[b_def] * b_sqrt * _UNIT) // b_split
    return b_src, b_def, d_file[b_def], b_sqrt, b_weight


def _file_edges(
    imports: list[list[int]],
    plumbing: npt.NDArray[np.bool_],
    t_src: Int64Array,
    t_def: Int64Array,
    t_dst: Int64Array,
    t_weight: Int64Array,
    h_src: Int64Array,
    h_dst: Int64Array,
    h_specific: Int64Array,
    nd: int,
    real: int,
) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]:
    """File edges: references, imports, and an index's hand-on, summed per (source, target).
    An import of a private module nothing re-exports from (`_compat`: ``plumbing``) counts like
    a use of a name that is not exported. Returns each import's target, what each stand-in
    row hands on, and the edges: source, target, weight, and how many of its parts are
    references (for the reasons)."""
    n = len(imports)
    i_src = np.array([i for i in range(n) for _ in imports[i]], dtype=np.int64)
    i_dst = np.array([j for i in range(n) for j in imports[i]], dtype=np.int64)
    i_weight = np.where(
        plumbing[i_dst], IMPORT_WEIGHT * _HIDDEN // _EXPORTED, IMPORT_WEIGHT
    ).astype(np.int64)
    # An index hands on what it gets in proportion to how much each name is used through it
    # (plus a floor, so an unused re-export still leads somewhere).
    via = np.zeros(nd, dtype=np.int64)
    np.add.at(via, t_def, t_weight)
    h_weight = np.minimum(via[real:] + h_specific * _EXPORTED * 4 * _UNIT, _MAX_WEIGHT)
    e_key, (e_weight, e_refs) = _segment_sums(
        np.concatenate((t_src * n + t_dst, i_src * n + i_dst, h_src * n + h_dst)),
        np.concatenate((t_weight, i_weight, h_weight)),
        np.concatenate(
            (np.ones(len(t_src), np.int64), np.zeros(len(i_src) + len(h_src), np.int64))
        ),
    )
    e_weight = np.minimum(e_weight, _MAX_WEIGHT)
    return i_dst, h_weight, e_key // n, e_key % n, e_weight, e_refs


def _teleport(
    g: _Graph,
    layout: Layout,
    lexicons: Sequence[Lexicon | None],
    surface: Surface,
    read: Callable[[str], str | None],
    history: History | None,
    priorities: Mapping[str, int],
) -> tuple[Int64Array, Int64Array, npt.NDArray[np.bool_]]:
    """Personalization: base, public surface, history, README names; then the weight class.
    Returns the weight classes, the teleport of each file (summing to at most
    2**TELEPORT_BITS), and the definition rows the README names."""
    paths = layout.paths
    n = len(paths)
    d = g.defs
    nd = len(d.d_file)
    readme_rows = np.zeros(nd, dtype=np.bool_)
    readme_lex = _readme_lexicon(surface.readme, paths, lexicons, read)
    if surface.readme is not None and readme_lex is not None:
        for spec in readme_lex.imports:
            for f in layout.resolve(surface.readme, spec, readme_lex.lang):
                surface.add(f, README_PATH, "named in README")
        named = _read_u64(readme_lex.refs)
        # Only names that can mean one thing: exported, specific enough, defined in few files.
        readme_rows = (
            np.isin(d.d_fp, named)
            & (d.d_file != surface.readme)
            & (g.specific > 0)
            & (g.visibility == _EXPORTED)
            & (g.group_of <= 3)
            & (np.arange(nd) < d.real)
        )
        named_rows = np.flatnonzero(readme_rows)
        per_file = np.bincount(d.d_file[named_rows], minlength=n).tolist()
        share_points = np.zeros(n, dtype=np.int64)
        np.add.at(share_points, d.d_file[named_rows], 64 // g.group_of[named_rows])
        for f, count in enumerate(per_file):
            if count:
                surface.add(
                    f,
                    min(README_NAMES, int(share_points[f])),
                    f"defines {count} name{'' if count == 1 else 's'} the README mentions",
                )
    weights = np.array(
        [max(-PRIORITY_RANGE, min(PRIORITY_RANGE, int(priorities.get(p, 0)))) for p in paths],
        dtype=np.int64,
    )
    raw = np.array(
        [
            BASE + surface.points.get(i, 0) + _history_points(history, path)
            for i, path in enumerate(paths)
        ],
        dtype=np.int64,
    )
    points = raw << (weights + PRIORITY_RANGE)
    teleport = (points << TELEPORT_BITS) // int(points.sum())
    return weights, teleport, readme_rows


def _symbol_mass(
    g: _Graph,
    lexicons: Sequence[Lexicon | None],
    surface: Surface,
    rank: Int64Array,
    mass: Int64Array,
    readme_rows: npt.NDArray[np.bool_],
) -> tuple[Int64Array, npt.NDArray[np.bool_]]:
    """Each definition's share of its file's mass, and which are public. The flow reaching each
    (in the PageRank toward what is used) through the references that name it (what an index
    hands on for a name it re-exports is that name's too)."""
    d = g.defs
    real, n, nd = d.real, len(mass), len(d.d_file)
    f_src = np.concatenate((g.t_src, g.hop_index))
    f_def = np.concatenate((g.t_def, g.hop_row))
    f_weight = np.concatenate((g.t_weight, g.h_weight))
    flow = np.zeros(nd, dtype=np.int64)
    if len(f_def):
        f_share = (f_weight << SHARE_BITS) // np.maximum(g.out_weight[f_src], 1)
        moved = (((rank[f_src] * f_share) >> SHARE_BITS) * DAMPING[0]) // DAMPING[1]
        np.add.at(flow, f_def, moved)
    # How much each is used: over the files that use it, sqrt(uses in the file), summed (uses
    # through an index count for the name it stands for). What clients call often and widely
    # (`AddCommand`, in every example) is what a reader of the file needs first, even when
    # those clients themselves rate low.
    uses = np.zeros(nd, dtype=np.int64)
    np.add.at(uses, g.t_def, g.t_sqrt)
    np.add.at(uses, g.hop_row, uses[real:])
    public = readme_rows.copy()
    public[:real] |= g.reexported
    for f, names in surface.entry_symbols.items():
        lexicon = lexicons[f]
        if lexicon is not None:
            for k, name in enumerate(lexicon.defines):
                if name in names:
                    public[int(d.starts[f]) + k] = True
    symbol_share = (1 + uses // 16) * np.where(
        public,
        _SHARE_PUBLIC,
        np.where(g.visibility == _EXPORTED, _SHARE_EXPORTED, _SHARE_PRIVATE),
    ).astype(np.int64)
    # An index's stand-in rows are not its symbols: what reaches an index through them is the
    # index's own (its list of re-exports).
    symbol_share[real:] = 0
    relayed = np.zeros(n, dtype=np.int64)
    np.add.at(relayed, d.d_file[real:], flow[real:])
    flow[real:] = 0
    # The rest of a file's mass is split among its symbols: half by the flow reaching each, half
    # by the shares (all by shares when no reference names any). Fractions are taken in units
    # of 2**-SHARE_BITS first, so that no product passes 2**63.
    held = np.maximum(mass - relayed, 0)
    file_flow = np.zeros(n, dtype=np.int64)
    np.add.at(file_flow, d.d_file, flow)
    file_share = np.zeros(n, dtype=np.int64)
    np.add.at(file_share, d.d_file, symbol_share)
    by_flow = (flow << SHARE_BITS) // np.maximum(file_flow[d.d_file], 1)
    by_share = (symbol_share << SHARE_BITS) // np.maximum(file_share[d.d_file], 1)
    fraction = np.where(file_flow[d.d_file] > 0, (by_flow + by_share) >> 1, by_share)
    return (held[d.d_file] * fraction) >> SHARE_BITS, public


@dataclass(frozen=True)
class _Groups:
    """The definitions that can be linked to, grouped by keyed fingerprint (`rate`)."""

    key: UInt64Array  # each group's keyed fingerprint, ascending
    size: Int64Array
    start: Int64Array  # where each group's rows start in ``order``
    order: Int64Array  # definition rows by (key, file)
    d_file: Int64Array
    specific: Int64Array
    visibility: Int64Array
    group_of: Int64Array  # each definition's group size


# References joined per slice of this many: the join's temporaries stay a few tens of MiB on
# a tree of millions of references (the pairs it yields are the same, in the same order).
_JOIN_SLICE: Final = 1 << 17


def _reference_pairs(
    lexicons: Sequence[Lexicon | None],
    ref_sizes: Int64Array,
    family: Int64Array,
    loose: list[tuple[int, int, int]],
    groups: _Groups,
) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]:
    """Every (reference, definer) pair worth an edge: its source file, definition row, target
    file, sqrt(uses) and weight, in the order of the references (the lexicons' own, then the
    ``loose`` names, then a document's references once more for each family of code: a
    document's references are keyed as family 0, which no definition has, and are tried
    against every family of code)."""
    empty = np.zeros(0, dtype=np.int64)
    n = len(lexicons)
    # Held narrow (file numbers in 32 bits, capped counts in 16) and widened a slice at a time.
    r_file = np.repeat(np.arange(n, dtype=np.int32), ref_sizes)
    r_fp = _read_u64(b"".join(lx.refs for lx in lexicons if lx))
    r_count = np.minimum(
        np.frombuffer(b"".join(lx.counts for lx in lexicons if lx), dtype="<u2"), _COUNT_CAP
    ).astype(np.uint16)
    if loose:
        r_file = np.concatenate((r_file, np.array([f for f, _, _ in loose], dtype=np.int32)))
        r_fp = np.concatenate((r_fp, np.array([fp for _, fp, _ in loose], dtype=np.uint64)))
        r_count = np.concatenate(
            (r_count, np.minimum(np.array([c for _, _, c in loose], np.int64), _COUNT_CAP))
        ).astype(np.uint16)
    if not len(r_fp) or not len(groups.key):
        return empty, empty, empty, empty, empty
    filter_ = _Filter.of(groups)

    def join(
        src: npt.NDArray[np.int32],
        fps: UInt64Array,
        counts: npt.NDArray[np.uint16],
        families: Int64Array,
    ) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]:
        sources: Int64Array = src.astype(np.int64)
        hit, ref_group = _hits(fps, families, filter_, groups)
        item_ref, item_pos = _expand(groups.start[ref_group], groups.size[ref_group])
        t_ref = hit[item_ref]  # the reference of each (reference, definer) pair
        t_def = groups.order[item_pos]
        t_src = sources[t_ref]
        t_dst = groups.d_file[t_def]
        # A file that defines the name means its own definition: drop the whole reference.
        own = np.zeros(len(fps), dtype=np.bool_)
        own[t_ref[t_src == t_dst]] = True
        keep = ~own[t_ref] & (groups.specific[t_def] > 0)
        t_ref, t_def, t_src, t_dst = t_ref[keep], t_def[keep], t_src[keep], t_dst[keep]
        t_sqrt = _SQRT16[counts[t_ref]]
        t_weight = (
            groups.specific[t_def] * groups.visibility[t_def] * t_sqrt * _UNIT
        ) // groups.group_of[t_def]
        return t_src, t_def, t_dst, t_sqrt, t_weight

    parts = [
        join(
            r_file[i : i + _JOIN_SLICE],
            r_fp[i : i + _JOIN_SLICE],
            r_count[i : i + _JOIN_SLICE],
            family[r_file[i : i + _JOIN_SLICE]],
        )
        for i in range(0, len(r_fp), _JOIN_SLICE)
    ]
    documents = np.flatnonzero(family[r_file] == 0)
    if len(documents):
        for copy in sorted(set(family.tolist()) - {0}):
            for i in range(0, len(documents), _JOIN_SLICE):
                rows = documents[i : i + _JOIN_SLICE]
                parts.append(
                    join(
                        r_file[rows], r_fp[rows], r_count[rows], np.full(len(rows), copy, np.int64)
                    )
                )
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))  # type: ignore[return-value]


def _by_key_then_file(keys: UInt64Array, files: Int64Array) -> Int64Array:
    """``np.lexsort((files, keys))``: the order by key, then file, then position, made faster:
    an unstable sort by key alone (several times quicker than a stable one), then only the runs
    of equal keys (a name several files define) put in order by file and position."""
    order = np.argsort(keys)
    ranked = keys[order]
    tied = np.flatnonzero(ranked[1:] == ranked[:-1])
    if len(tied):
        in_run = np.zeros(len(order), dtype=np.bool_)
        in_run[tied] = True
        in_run[tied + 1] = True
        at = np.flatnonzero(in_run)  # ascending: the runs in key order, each whole
        rows = order[at]
        order[at] = rows[np.lexsort((rows, files[rows], keys[rows]))]
    return order


@dataclass(frozen=True)
class _Filter:
    """What sends a reference to the search among the groups' keys: a bitmap of the names worth
    joining (few enough definers), which drops most references with one look each, and the
    keys' buckets by their top bits, which leave a short search for those it lets through."""

    bitmap: npt.NDArray[np.bool_]  # a slot each
    shift: np.uint64  # a key's slot: `_slot`
    packed: npt.NDArray[np.uint8]  # the bitmap, a bit a slot (little-endian bit order)
    starts: npt.NDArray[np.uint32]  # where each bucket's keys start, and the end
    bucket_shift: int  # a key's bucket: key >> bucket_shift

    @classmethod
    def of(cls, groups: _Groups) -> _Filter:
        eligible = groups.key[groups.size <= MAX_DEFINERS]
        return cls.over(
            groups.key, eligible, min(_BITMAP_BITS, max(10, len(eligible).bit_length() + 4))
        )

    @classmethod
    def over(cls, keys: UInt64Array, eligible: UInt64Array, bits: int) -> _Filter:
        """The filter of ``eligible`` keys, ``bits`` bits of slot, over ``keys`` (sorted)."""
        shift = np.uint64(64 - bits)
        bitmap = np.zeros(1 << bits, dtype=np.bool_)
        bitmap[_slot(eligible, shift)] = True
        # About two keys a bucket, and never more than a million buckets.
        bucket_bits = min(_BUCKET_BITS, max(1, len(keys).bit_length() - 1))
        bucket_shift = 64 - bucket_bits
        tops = keys >> np.uint64(bucket_shift)
        edges = np.arange((1 << bucket_bits) + 1, dtype=np.uint64)
        starts = np.searchsorted(tops, edges, side="left").astype(np.uint32)
        packed = np.packbits(bitmap, bitorder="little")
        return cls(bitmap, shift, packed, starts, bucket_shift)


def _hits(
    fps: UInt64Array, families: Int64Array, filter_: _Filter, groups: _Groups
) -> tuple[Int64Array, Int64Array]:
    """The references (by position) whose name, keyed by their family, is a group's of at most
    `MAX_DEFINERS` definers, and that group's place, in the order of the references: those the
    filter lets through, searched among the groups' keys. One pass in C where ``cas._words``
    was built (`keyed_hits`); else the same in numpy, a step over every reference at a time."""
    native = native_module()
    if native is not None:
        refs, places = native.keyed_hits(
            np.ascontiguousarray(fps, dtype=np.uint64),
            np.ascontiguousarray(families, dtype=np.int64),
            int(_FAMILY_SALT),
            int(_SLOT_FACTOR),
            filter_.packed,
            int(filter_.shift),
            np.ascontiguousarray(groups.key, dtype=np.uint64),
            np.ascontiguousarray(groups.size, dtype=np.int64),
            MAX_DEFINERS,
            filter_.starts,
            filter_.bucket_shift,
        )
        return np.frombuffer(refs, dtype=np.int64), np.frombuffer(places, dtype=np.int64)
    return _numpy_hits(fps, families, filter_, groups)


def _numpy_hits(
    fps: UInt64Array, families: Int64Array, filter_: _Filter, groups: _Groups
) -> tuple[Int64Array, Int64Array]:
    """`_hits` in numpy alone: what the tests hold the C pass to."""
    r_key = _keyed(fps, families)
    maybe = np.flatnonzero(filter_.bitmap[_slot(r_key, filter_.shift)])
    g = _search_sorted(groups.key, r_key[maybe])
    found = (groups.key[g] == r_key[maybe]) & (groups.size[g] <= MAX_DEFINERS)
    return maybe[found], g[found]


def _slot(keys: UInt64Array, shift: np.uint64) -> Int64Array:
    """The bitmap slot of each key: the top bits of the key times an odd constant (wrapping). A
    fingerprint's low bits are Adler-32's sum of bytes, which names of one length share by the
    thousand: they would fill few slots and let most references through."""
    return ((keys * _SLOT_FACTOR) >> shift).astype(np.int64)


def _search_sorted(keys: UInt64Array, wanted: UInt64Array) -> Int64Array:
    """For each of ``wanted``, the index in ``keys`` (ascending, not empty) where it is or would
    go, at most the last: the same as a search of each in turn, several times faster, since the
    search is made in ascending order (each search starts where the one before ended)."""
    order = np.argsort(wanted)  # any order of equal keys: each finds the same index
    found = np.empty(len(wanted), dtype=np.int64)
    found[order] = np.searchsorted(keys, wanted[order])
    return np.minimum(found, len(keys) - 1)


def _bound_names(
    layout: Layout,
    lexicons: Sequence[Lexicon | None],
    starts: Int64Array,
    hop_index: Int64Array,
    hop_row: Int64Array,
    real: int,
) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int]]]:
    """Where each name bound by an import (`Lexicon.bound`) leads: (file, definition row,
    uses, how many rows share it) for those found in the module they come from (or in the
    index standing for them), and (file, fingerprint, uses) for those to be linked by name like
    any reference: from a module of the project that was not resolved, or a name not found
    there. Names from modules outside the project link to nothing."""
    defines: dict[int, tuple[str, ...]] = {}

    def names_of(f: int) -> tuple[str, ...]:
        found = defines.get(f)
        if found is None:
            lexicon = lexicons[f]
            found = defines[f] = lexicon.defines if lexicon is not None else ()
        return found

    stand_ins: dict[int, dict[str, list[int]]] = {}
    for k, (index, row) in enumerate(zip(hop_index.tolist(), hop_row.tolist(), strict=True)):
        owner = int(np.searchsorted(starts, row, side="right")) - 1
        name = names_of(owner)[row - int(starts[owner])]
        stand_ins.setdefault(index, {}).setdefault(name, []).append(real + k)

    def rows_for(f: int, name: str) -> list[int]:
        names = names_of(f)
        lo = bisect.bisect_left(names, name)
        rows = [int(starts[f]) + lo] if lo < len(names) and names[lo] == name else []
        return rows + stand_ins.get(f, {}).get(name, [])

    top_modules = {m.split(".")[0] for m in layout.modules}
    resolved: dict[tuple[str, str, str], list[int]] = {}
    pairs: list[tuple[int, int, int, int]] = []
    loose: list[tuple[int, int, int]] = []
    for i, lexicon in enumerate(lexicons):
        if lexicon is None or not lexicon.bound:
            continue
        lang = lexicon.lang
        system = module_system(lang)
        folder = layout.paths[i].rpartition("/")[0]
        for spec, name, uses in lexicon.bound:
            key = (folder if spec.startswith(".") else "", spec, lang)
            targets = resolved.get(key)
            if targets is None:
                targets = resolved[key] = layout.resolve(i, spec, lang)
            rows = [r for t in targets if t != i for r in rows_for(t, name)]
            if rows:
                pairs += [(i, r, uses, len(rows)) for r in rows]
                continue
            if system == "python":
                if layout.resolve(i, spec + name if spec.endswith(".") else f"{spec}.{name}", lang):
                    continue  # a module, linked by the import itself
                ours = spec.startswith(".") or spec.split(".")[0] in top_modules
            elif system == "rust":
                head = spec.split("::")[0]
                ours = head in ("crate", "self", "super") or head == layout.crate_name
            elif layout.js_name and (
                spec == layout.js_name or spec.startswith(layout.js_name + "/")
            ):
                ours = True
            else:
                ours = spec.startswith(".")
            if ours:
                loose.append((i, fingerprint(name), uses))
    return pairs, loose


def _readme_lexicon(
    readme: int | None,
    paths: Sequence[str],
    lexicons: Sequence[Lexicon | None],
    read: Callable[[str], str | None],
) -> Lexicon | None:
    if readme is None:
        return None
    if lexicons[readme] is not None:
        return lexicons[readme]
    text = read(paths[readme])
    if text is None:
        return None
    return lex(paths[readme], text.encode("utf-8"))
