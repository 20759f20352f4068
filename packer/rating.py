"""A rating for every file and every symbol: how much an agent needs to see it.

The files of a project form a graph: an edge goes from each file that uses a name to the files
that define it, and from each file to the files its imports resolve to (`packer.surface`). Edge
weights follow the evidence that a use really means that definition:

* a name's specificity: a long snake_case or CamelCase name (``get_current_context``) is one
  thing, a short word (``run``) may be anything: x10 / x3 / x1;
* the definition's visibility: exported by its language's rules x10, not exported x3, a leading
  underscore x1 (a name exported from a private module, ``_compat.py``, counts as not exported
  unless a package index re-exports it);
* how often the file uses it: x sqrt(count);
* how many files define it: the weight is split between them, and a name defined in more than
  `MAX_DEFINERS` files is dropped (``get``, ``Meta``, ``__init__``: no signal, a dense graph);
* a file that defines the name itself is taken to mean its own definition: no edge.

PageRank over that graph, teleporting by a personalization vector, gives each file its share
of attention. The personalization is what a reader of the project meets first: entry points
declared by its metadata, package indexes and what they re-export, the paths and names the
top-level README mentions, files changed recently and often (`packer.history`), all scaled by
the weight class of the rule that matched the file (``priorities``).

A file's rating is its PageRank share, scaled so that a file with the average share rates
`AVERAGE`. A symbol's rating is the part of its file's share that arrives through edges naming
it (aider's "ranked definitions"), plus a part of what the file gets otherwise (teleport and
imports), split among its symbols by their visibility: 1 for private, 4 for exported, 16 for
names re-exported by a package index, listed in ``__all__``, named by the README or an entry
point. The symbols of a file sum to about the file's rating.

Determinism: everything is integer arithmetic (numpy int64 with every bound checked below, and
Python integers), over files ordered by the bytes of their paths, with a fixed number of
iterations; integer sums are exact whatever order a machine adds them in, so the same inputs
give the same integers on every machine. DETERMINISM.md says more.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from packer.history import History
from packer.lexicon import Lexicon, fingerprint, lex
from packer.surface import README_NAMES, README_PATH, REEXPORTED, Layout, is_index, public_surface

RATING_VERSION: Final = "1"
AVERAGE: Final = 10_000  # the rating of a file with an average share of attention
MAX_DEFINERS: Final = 32
DAMPING: Final = (85, 100)
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
_SPECIFIC, _STRUCTURED, _PLAIN = 10, 3, 1
_EXPORTED, _HIDDEN, _UNDERSCORE = 10, 3, 1
_COUNT_CAP = 1024
_SQRT16: Final = np.array([math.isqrt(c * 256) for c in range(_COUNT_CAP + 1)], dtype=np.int64)
_UNIT = 64
IMPORT_WEIGHT: Final = _SPECIFIC * _EXPORTED * 16 * _UNIT
# Personalization points: every file has BASE; the public surface adds (packer.surface);
# history adds up to 128 for how often and 64 for how recently.
BASE: Final = 16
PRIORITY_RANGE: Final = 4  # weight classes -4..4; each step doubles or halves the points
# Symbol shares of the rest of a file's rating (see the module docstring).
_SHARE_PRIVATE, _SHARE_EXPORTED, _SHARE_PUBLIC = 1, 4, 16

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Ratings:
    """Integer ratings per file and per symbol, with the reasons a file rates as it does."""

    files: dict[str, int]
    symbols: dict[str, dict[str, int]]  # path -> name -> rating
    reasons: dict[str, tuple[str, ...]]
    iterations: int = 0

    def file(self, path: str) -> int:
        return self.files.get(path, 0)

    def symbol(self, path: str, name: str) -> int:
        return self.symbols.get(path, {}).get(name, 0)

    def ranked(self) -> list[str]:
        """Every path, best rated first; ties break on the path's bytes."""
        return sorted(self.files, key=lambda p: (-self.files[p], p.encode()))

    def ranked_symbols(self) -> list[tuple[str, str, int]]:
        """Every (path, name, rating), best first; ties on the path's bytes, then the name's."""
        out = [(p, n, r) for p, names in self.symbols.items() for n, r in names.items()]
        out.sort(key=lambda t: (-t[2], t[0].encode(), t[1].encode()))
        return out


def specificity(name: str) -> int:
    """How surely a use of ``name`` means one definition: long structured names are specific,
    short plain words are not."""
    structured = "_" in name.strip("_") or not name.islower() or any(c.isdigit() for c in name)
    if structured and len(name) >= 8:
        return _SPECIFIC
    if structured or len(name) >= 8:
        return _STRUCTURED
    return _PLAIN


def _private_module(path: str) -> bool:
    """A Python module or package whose name starts with an underscore (``_compat.py``,
    ``_internal/x.py``): its names are internal unless a package index re-exports them."""
    for part in path.split("/"):
        if part.startswith("_") and not (
            part.startswith("__") and part.split(".")[0].endswith("__")
        ):
            return True
    return False


@dataclass(slots=True)
class _Definitions:
    """Every (file, name) a lexicon defines, in file order then name order."""

    file: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    fp: list[int] = field(default_factory=list)
    exported: list[bool] = field(default_factory=list)
    minor: list[bool] = field(default_factory=list)
    span: list[tuple[int, int]] = field(default_factory=list)  # file -> range of its rows
    by_name: dict[str, list[int]] = field(default_factory=dict)


def _definitions(lexicons: Sequence[Lexicon | None]) -> _Definitions:
    d = _Definitions()
    fps: dict[str, int] = {}
    for i, lexicon in enumerate(lexicons):
        start = len(d.file)
        if lexicon is not None and lexicon.defines:
            exported = set(lexicon.exported)
            minor = set(lexicon.minor)
            for name in lexicon.defines:
                row = len(d.file)
                d.file.append(i)
                d.name.append(name)
                fp = fps.get(name)
                if fp is None:
                    fp = fps[name] = fingerprint(name)
                d.fp.append(fp)
                d.exported.append(name in exported)
                d.minor.append(name in minor)
                d.by_name.setdefault(name, []).append(row)
        d.span.append((start, len(d.file)))
    return d


def _reexports(
    layout: Layout, defs: _Definitions, imports: Sequence[list[int]]
) -> tuple[dict[int, list[int]], set[int]]:
    """(index file -> definition rows it re-exports, every re-exported row). A package index
    re-exports the names it exports without defining them (``from .core import Command``,
    ``pub use``, ``export { x } from``) and everything of what it star-imports."""
    by_index: dict[int, list[int]] = {}
    every: set[int] = set()
    for i, lexicon in enumerate(layout.lexicons):
        if lexicon is None or not (is_index(layout.paths[i]) or lexicon.star):
            continue
        targets = set(imports[i])
        folder = posixpath.dirname(layout.paths[i])
        rows: list[int] = []
        own = set(lexicon.defines)
        for name in lexicon.exported:
            if name in own:
                continue
            candidates = defs.by_name.get(name, [])
            chosen = [r for r in candidates if defs.file[r] in targets]
            if not chosen:
                chosen = [
                    r
                    for r in candidates
                    if layout.paths[defs.file[r]].startswith(folder + "/" if folder else "")
                ]
            if len(chosen) <= 3:
                rows += chosen
        for spec in lexicon.star:
            for f in layout.resolve(i, spec, lexicon.lang):
                start, end = defs.span[f]
                rows += [r for r in range(start, end) if defs.exported[r]]
        if rows:
            by_index[i] = sorted(set(rows))
            every.update(rows)
    return by_index, every


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


def _segment_sums(keys: Int64Array, values: Int64Array) -> tuple[Int64Array, Int64Array]:
    """Distinct ``keys`` (sorted) and the exact integer sum of ``values`` per key."""
    if not len(keys):
        return keys, values
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[starts], np.add.reduceat(values, starts)


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
    (clamped; absent is 0): each step doubles (or halves) the file's personalization."""
    rows = sorted(files, key=lambda f: f[0].encode("utf-8", "surrogateescape"))
    paths = [r[0] for r in rows]
    langs = [r[1] for r in rows]
    lexicons = [r[3] for r in rows]
    n = len(paths)
    if n == 0:
        return Ratings({}, {}, {})
    priorities = priorities or {}
    layout = Layout(paths, lexicons)
    surface = public_surface(layout, langs, read)

    # Imports, resolved (after the surface: it reads go.mod and package.json for names).
    imports: list[list[int]] = [[] for _ in range(n)]
    for i, lexicon in enumerate(lexicons):
        if lexicon is not None and lexicon.imports:
            found: set[int] = set()
            for spec in lexicon.imports:
                found.update(layout.resolve(i, spec, lexicon.lang))
            imports[i] = sorted(found)

    defs = _definitions(lexicons)
    reexported_by, reexported = _reexports(layout, defs, imports)
    reexported_from: dict[int, int] = {}  # file -> how many of its names an index re-exports
    for r in reexported:
        reexported_from[defs.file[r]] = reexported_from.get(defs.file[r], 0) + 1
    for index, rows_ in sorted(reexported_by.items()):
        per_file: dict[int, int] = {}
        for r in rows_:
            per_file[defs.file[r]] = per_file.get(defs.file[r], 0) + 1
        surface.add(
            index,
            min(REEXPORTED, 4 * len(rows_)),
            f"re-exports {len(rows_)} name{'' if len(rows_) == 1 else 's'}",
        )
        for f, count in sorted(per_file.items()):
            if f != index:
                surface.add(
                    f,
                    min(REEXPORTED, 16 * count),
                    f"{count} name{'' if count == 1 else 's'} re-exported by {paths[index]}",
                )

    # A package index stands for the names it re-exports: users reach them through it
    # (`click.Command`), so it is one more definer of each, and it hands what it gets on to the
    # real definer (edges below). These rows take part in the graph only: symbols are the rows
    # before `real`.
    real = len(defs.file)
    hops: list[tuple[int, int]] = []  # (index row, the real definition row)
    for index, rows_ in sorted(reexported_by.items()):
        for r in rows_:
            if defs.file[r] != index:
                hops.append((len(defs.file), r))
                defs.file.append(index)
                defs.name.append(defs.name[r])
                defs.fp.append(defs.fp[r])
                defs.exported.append(True)
                defs.minor.append(False)
                defs.by_name[defs.name[r]].append(hops[-1][0])

    # Visibility and specificity of each definition.
    nd = len(defs.file)
    private_module = [langs[i] == "python" and _private_module(p) for i, p in enumerate(paths)]
    visibility = np.array(
        [
            _UNDERSCORE
            if name.startswith("_")
            else _EXPORTED
            if exported and (not private_module[f] or r in reexported or r >= real)
            else _HIDDEN
            for r, (f, name, exported) in enumerate(
                zip(defs.file, defs.name, defs.exported, strict=True)
            )
        ],
        dtype=np.int64,
    )
    spec_of: dict[str, int] = {}
    specific = np.array(
        [
            # A member or variable named by a plain word (`name`, `write`, `method`) is more
            # often any object's attribute or a local variable than this one: no edge.
            0
            if minor and spec_of.setdefault(name, specificity(name)) == _PLAIN
            else spec_of.get(name) or spec_of.setdefault(name, specificity(name))
            for name, minor in zip(defs.name, defs.minor, strict=True)
        ],
        dtype=np.int64,
    )

    # Definitions sorted by fingerprint: each distinct fingerprint is a group of definers.
    d_fp = np.array(defs.fp, dtype=np.uint64)
    d_file = np.array(defs.file, dtype=np.int64)
    d_order = np.lexsort((d_file, d_fp)) if nd else np.zeros(0, dtype=np.int64)
    d_fp_sorted = d_fp[d_order]
    if nd:
        group_start = np.flatnonzero(
            np.concatenate(([True], d_fp_sorted[1:] != d_fp_sorted[:-1]))
        ).astype(np.int64)
    else:
        group_start = np.zeros(0, dtype=np.int64)
    group_fp = d_fp_sorted[group_start]
    group_size = np.diff(np.append(group_start, nd)).astype(np.int64)

    # References: every (file, fingerprint, count), joined to the definers of the fingerprint.
    r_fp_parts: list[npt.NDArray[np.uint64]] = []
    r_count_parts: list[npt.NDArray[np.uint16]] = []
    r_file_parts: list[Int64Array] = []
    for i, lexicon in enumerate(lexicons):
        if lexicon is not None and lexicon.refs:
            fps = np.frombuffer(lexicon.refs, dtype="<u8")
            r_fp_parts.append(fps)
            r_count_parts.append(np.frombuffer(lexicon.counts, dtype="<u2"))
            r_file_parts.append(np.full(len(fps), i, dtype=np.int64))
    if r_fp_parts and len(group_fp):
        r_fp = np.concatenate(r_fp_parts).astype(np.uint64)
        r_count = np.minimum(np.concatenate(r_count_parts).astype(np.int64), _COUNT_CAP)
        r_file = np.concatenate(r_file_parts)
        g = np.searchsorted(group_fp, r_fp)
        g_clipped = np.minimum(g, len(group_fp) - 1)
        hit = (group_fp[g_clipped] == r_fp) & (group_size[g_clipped] <= MAX_DEFINERS)
        ref_idx = np.flatnonzero(hit).astype(np.int64)
        ref_group = g_clipped[ref_idx]
        item_ref, item_pos = _expand(group_start[ref_group], group_size[ref_group])
        t_ref = ref_idx[item_ref]  # the reference of each (reference, definer) pair
        t_def = d_order[item_pos]  # the definition row
        t_src = r_file[t_ref]
        t_dst = d_file[t_def]
        # A file that defines the name means its own definition: drop the whole reference.
        own = np.zeros(len(r_fp), dtype=np.bool_)
        own[t_ref[t_src == t_dst]] = True
        keep = ~own[t_ref] & (specific[t_def] > 0)
        t_ref, t_def, t_src, t_dst = t_ref[keep], t_def[keep], t_src[keep], t_dst[keep]
        t_sqrt = _SQRT16[r_count[t_ref]]
        t_weight = (specific[t_def] * visibility[t_def] * t_sqrt * _UNIT) // group_size[
            g_clipped[t_ref]
        ]
    else:
        t_def = t_src = t_dst = t_weight = t_sqrt = np.zeros(0, dtype=np.int64)

    # File edges: reference pairs and imports, summed per (source, target).
    # An import of a private module nothing re-exports from (`_compat`) is plumbing: it
    # counts like a use of a name that is not exported.
    plumbing = [private_module[i] and i not in reexported_from for i in range(n)]
    i_src = np.array([i for i in range(n) for _ in imports[i]], dtype=np.int64)
    i_dst = np.array([j for i in range(n) for j in imports[i]], dtype=np.int64)
    i_weight = np.array(
        [
            IMPORT_WEIGHT * _HIDDEN // _EXPORTED if plumbing[j] else IMPORT_WEIGHT
            for j in i_dst.tolist()
        ],
        dtype=np.int64,
    )
    h_src = np.array([defs.file[h] for h, _ in hops], dtype=np.int64)
    h_dst = np.array([defs.file[r] for _, r in hops], dtype=np.int64)
    # An index hands on what it gets in proportion to how much each name is used through it
    # (plus a floor, so an unused re-export still leads somewhere).
    via = np.zeros(nd, dtype=np.int64)
    if len(t_def):
        np.add.at(via, t_def, t_weight)
    h_weight = np.array(
        [int(via[h]) + int(specific[r]) * _EXPORTED * 4 * _UNIT for h, r in hops],
        dtype=np.int64,
    )
    e_key, e_weight = _segment_sums(
        np.concatenate((t_src * n + t_dst, i_src * n + i_dst, h_src * n + h_dst)),
        np.concatenate((t_weight, i_weight, h_weight)),
    )
    e_src, e_dst = e_key // n, e_key % n
    out_weight = np.zeros(n, dtype=np.int64)
    np.add.at(out_weight, e_src, e_weight)
    e_share = (e_weight << SHARE_BITS) // np.maximum(out_weight[e_src], 1)
    by_dst = np.argsort(e_dst, kind="stable")
    e_src, e_dst, e_share = e_src[by_dst], e_dst[by_dst], e_share[by_dst]
    dst_starts = (
        np.flatnonzero(np.concatenate(([True], e_dst[1:] != e_dst[:-1])))
        if len(e_dst)
        else np.zeros(0, dtype=np.int64)
    )
    dst_nodes = e_dst[dst_starts]

    # Personalization: base, public surface, history, README names; then the weight class.
    readme_rows = np.zeros(nd, dtype=np.bool_)
    readme_lex = _readme_lexicon(surface.readme, paths, lexicons, read)
    if surface.readme is not None and readme_lex is not None:
        for spec in readme_lex.imports:
            for f in layout.resolve(surface.readme, spec, readme_lex.lang):
                surface.add(f, README_PATH, "named in README")
        named = np.frombuffer(readme_lex.refs, dtype="<u8").astype(np.uint64)
        # Only names that can mean one thing: exported, specific enough, defined in few files.
        group_of = np.zeros(nd, dtype=np.int64)
        if nd:
            group_of[d_order] = np.repeat(group_size, group_size)
        readme_rows = (
            np.isin(d_fp, named)
            & (d_file != surface.readme)
            & (specific > 0)
            & (visibility == _EXPORTED)
            & (group_of <= 3)
            & (np.arange(nd) < real)
        )
        counts: dict[int, int] = {}
        readme_points: dict[int, int] = {}
        for r in np.flatnonzero(readme_rows).tolist():
            f = defs.file[r]
            counts[f] = counts.get(f, 0) + 1
            share = 64 // len(defs.by_name[defs.name[r]])
            readme_points[f] = readme_points.get(f, 0) + share
        for f, count in sorted(counts.items()):
            surface.add(
                f,
                min(README_NAMES, readme_points[f]),
                f"defines {count} name{'' if count == 1 else 's'} the README mentions",
            )
    points = np.empty(n, dtype=np.int64)
    for i, path in enumerate(paths):
        raw = BASE + surface.points.get(i, 0) + _history_points(history, path)
        weight = max(-PRIORITY_RANGE, min(PRIORITY_RANGE, int(priorities.get(path, 0))))
        points[i] = raw << (weight + PRIORITY_RANGE)
    teleport = (points << TELEPORT_BITS) // int(points.sum())

    # PageRank in fixed point.
    rank = np.full(n, TOTAL // n, dtype=np.int64)
    iterations = 0
    for iterations in range(1, ITERATIONS + 1):  # noqa: B007 - the count is reported
        inflow = np.zeros(n, dtype=np.int64)
        if len(e_src):
            moved = (rank[e_src] * e_share) >> SHARE_BITS
            inflow[dst_nodes] = np.add.reduceat(moved, dst_starts)
        kept = (inflow * DAMPING[0]) // DAMPING[1]
        leftover = TOTAL - int(kept.sum())
        new = kept + ((leftover * teleport) >> TELEPORT_BITS)
        change = int(np.abs(new - rank).max())
        rank = new
        if change <= TOTAL >> CONVERGED_BITS:
            break

    # Symbols: the flow through the references that name them, plus a share of the rest.
    # Symbols. What an index hands on for a name it re-exports is that name's too.
    f_src = np.concatenate((t_src, h_src))
    f_def = np.concatenate((t_def, np.array([r for _, r in hops], dtype=np.int64)))
    f_weight = np.concatenate((t_weight, h_weight))
    flow = np.zeros(nd, dtype=np.int64)
    if len(f_def):
        f_share = (f_weight << SHARE_BITS) // np.maximum(out_weight[f_src], 1)
        moved = (((rank[f_src] * f_share) >> SHARE_BITS) * DAMPING[0]) // DAMPING[1]
        np.add.at(flow, f_def, moved)
    public = readme_rows.copy()
    if reexported:
        public[sorted(reexported)] = True
    for f, names in surface.entry_symbols.items():
        start, end = defs.span[f]
        for r in range(start, end):
            if defs.name[r] in names:
                public[r] = True
    # How much each symbol is used: over the files that use it, sqrt(uses in the file), summed.
    # What clients call often and widely (`AddCommand`, in every example) is what a reader of
    # the file needs first, even when those clients themselves rate low.
    uses = np.zeros(nd, dtype=np.int64)
    if len(t_def):
        np.add.at(uses, t_def, t_sqrt)
    for h, r in hops:  # uses through an index are uses of the name it stands for
        uses[r] += uses[h]
    breadth = 1 + uses // 16
    symbol_share = breadth * np.where(
        public, _SHARE_PUBLIC, np.where(visibility == _EXPORTED, _SHARE_EXPORTED, _SHARE_PRIVATE)
    ).astype(np.int64)
    # An index's stand-in rows are not its symbols: what reaches an index through them is the
    # index's own (its list of re-exports), not its symbols'.
    symbol_share[real:] = 0
    relayed = np.zeros(n, dtype=np.int64)
    np.add.at(relayed, d_file[real:], flow[real:])
    flow[real:] = 0
    # The rest of a file's mass is split among its symbols: half by the flow reaching each, half
    # by the shares (all by shares when no reference names any). Fractions are taken in units
    # of 2**-SHARE_BITS first, so that no product passes 2**63.
    held = np.maximum(rank - relayed, 0)
    file_flow = np.zeros(n, dtype=np.int64)
    np.add.at(file_flow, d_file, flow)
    file_share = np.zeros(n, dtype=np.int64)
    np.add.at(file_share, d_file, symbol_share)
    by_flow = (flow << SHARE_BITS) // np.maximum(file_flow[d_file], 1)
    by_share = (symbol_share << SHARE_BITS) // np.maximum(file_share[d_file], 1)
    fraction = np.where(file_flow[d_file] > 0, (by_flow + by_share) >> 1, by_share)
    symbol_mass = (held[d_file] * fraction) >> SHARE_BITS

    # Ratings: the mass in units where the average file has AVERAGE (Python integers: the
    # product can pass 2**63).
    scale = n * AVERAGE
    file_values = [v * scale >> TOTAL_BITS for v in rank.tolist()]
    symbol_values = [v * scale >> TOTAL_BITS for v in symbol_mass.tolist()]
    file_ratings = dict(zip(paths, file_values, strict=True))
    symbol_ratings: dict[str, dict[str, int]] = {}
    for i, path in enumerate(paths):
        start, end = defs.span[i]
        if start < end:
            symbol_ratings[path] = dict(
                zip(defs.name[start:end], symbol_values[start:end], strict=True)
            )

    # Reasons.
    pairs = np.unique(t_src * n + t_dst) if len(t_src) else np.zeros(0, dtype=np.int64)
    referrers = np.bincount(pairs % n, minlength=n).tolist() if len(pairs) else [0] * n
    importers = np.bincount(i_dst, minlength=n).tolist() if len(i_dst) else [0] * n
    reasons: dict[str, tuple[str, ...]] = {}
    for i, path in enumerate(paths):
        why: list[str] = []
        if k := referrers[i]:
            why.append(f"referenced by {k} file{'' if k == 1 else 's'}")
        if k := importers[i]:
            why.append(f"imported by {k} file{'' if k == 1 else 's'}")
        why += surface.reasons.get(i, [])
        if history is not None and (said := history.reason(path)):
            why.append(said)
        weight = max(-PRIORITY_RANGE, min(PRIORITY_RANGE, int(priorities.get(path, 0))))
        if weight:
            why.append(f"rule weight {weight:+d}")
        reasons[path] = tuple(why)
    return Ratings(file_ratings, symbol_ratings, reasons, iterations)


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
