"""Pricing: what each file of a pack can become, what each choice costs and what it is worth.

A file's *value* is its rating (`packer.rating`) times two to the power of its rule's weight
class (`packer.tiers`). A choice is worth a share of it:

* its line in the omitted index: 1/64 of the value (an agent learns the file exists);
* a summary: its head (what the file is for) 3%, plus each symbol it shows at that symbol's
  rating (names the lexicon saw: a file's symbol ratings add up to about its rating), or, for a
  symbol the rating does not know (a field, a method, a document's section), a share by its kind
  and visibility, these together at most 60% of the value;
* the whole file: everything a summary can show, times 13/10 (bodies, comments, values), plus
  a tenth of the value; the key facts of the project's metadata file (`packer.projectfacts`,
  worth a share of the best file's value) count once, as their lines are all they show.

Costs are tokens of the markdown render, counted with the real tokenizer: a section's heading
and fences, the body, each summary line; estimates for summaries (a summary is one fenced piece,
whose token count is not quite the sum of its lines'), exact for everything else. The builder
counts the final render of every format and corrects the fit if the estimate was off.

Outlines and their line costs are read only when the fit asks (`Offer.expand`), and cached by
content digest, so a large tree is parsed only as far as the budget can show.
"""

from __future__ import annotations

import functools
import re
import sys
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import isqrt
from typing import Final

import msgpack

from cas.cache import Cache
from cas.digest import Digest
from cas.store import Store
from cas.words import key as words_key
from cas.words import native_module
from packer import outline as outline_mod
from packer.fitting import HIGH, LOW, MEDIUM, Offer, SymbolOffer
from packer.ingest import RENDER_VERSION, Fact
from packer.lang import language_for
from packer.lexicon import Defined
from packer.projectfacts import key_facts
from packer.render import fence_language, renderer
from packer.scan import decode_text
from packer.summaries import SUMMARY_VERSION
from packer.summaries import outline as make_outline
from packer.surface import is_index
from packer.tokens import TokenCounter

TIER_OF = {"low": LOW, "medium": MEDIUM, "high": HIGH}
TIER_NAMES = {LOW: "low", MEDIUM: "medium", HIGH: "high"}
# Shares of a file's value, in percent (see the module docstring).
HEAD_SHARE = 3
INDEX_HEAD_SHARE = 15
FALLBACK_CAP = 60
LISTED_SHARE = 64  # a listed line is worth value // LISTED_SHARE
# A symbol the public surface holds (a package re-exports it, the README names it) is worth this
# many times its rating: it is what an agent calls.
PUBLIC_BOOST = 4
# A symbol the rating does not know, by kind: percent of the file's value when exported, and a
# quarter of that when not.
_FALLBACK = {
    "class": 4,
    "type": 3,
    "function": 3,
    "method": 2,
    "field": 1,
    "constant": 2,
    "variable": 1,
    "export": 2,
    "section": 3,
    "key": 1,
    "import": 0,
    "text": 1,
}
# In a configuration file the keys are what it says; a table's header alone says little.
_CONFIG_FALLBACK = {**_FALLBACK, "section": 1, "key": 2}
_CONFIG_LANGS: Final = frozenset({"toml", "json", "yaml"})
_MOST_FALLBACK: Final = max(_FALLBACK.values())
# How many key facts of a metadata file an unread file's bound counts (`Pricer._bound`).
_FACTS_BOUND: Final = 12
# The least a symbol's lines cost (a bound for unread files).
_MIN_SYMBOL_COST = 5
# What a member (a method, a field) inherits from the symbol that encloses it, in percent of
# that symbol's value: a constructor, any other public member (divided by the square root of
# how many public members share it), a private member.
_INHERIT_CONSTRUCTOR = 50
_INHERIT_PUBLIC = 40
_INHERIT_PRIVATE = 4
_CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor", "new", "initialize"})
# Summary pieces beyond the symbols' own lines: the fences and the "N more symbols" line.
_MORE_LINE = "... (999 more symbols not shown)"
MAX_VALUE = (1 << 62) - 1
_NAME = re.compile(r"[A-Za-z_$][\w$]*")


class SymbolValues:
    """A file's rated symbols as pricing weighs them: each name's rating times two to the
    power of the file's weight class (`weighted`), `PUBLIC_BOOST` times that for a name the
    project's public surface holds. ``best``: the same values, best first; ``total``: their
    sum. The mapping by name is made only when asked (a file the fit reads): ``names`` are the
    names in the order of ``values``, or what the rating kept of them (`Defined`), split only
    then."""

    __slots__ = ("_by_name", "_names", "_values", "best", "total")

    def __init__(
        self,
        names: Sequence[str] | Defined,
        values: Sequence[int],
        best: Sequence[int],
        total: int,
    ) -> None:
        self._names = names
        self._values = values
        self._by_name: dict[str, int] | None = None
        self.best = best
        self.total = total

    @classmethod
    def of(cls, by_name: dict[str, int]) -> SymbolValues:
        values = list(by_name.values())
        return cls(list(by_name), values, sorted(values, reverse=True), sum(values))

    def by_name(self) -> dict[str, int]:
        if self._by_name is None:
            names = self._names
            if isinstance(names, Defined):
                names = names.defines
            self._by_name = dict(zip(names, self._values, strict=True))
        return self._by_name


NO_SYMBOLS: Final = SymbolValues((), (), (), 0)


@dataclass(slots=True)
class Candidate:
    """One file of a scope, classified and rated: the input of one offer per target."""

    path: str
    fact: Fact
    ceiling: int  # LOW, MEDIUM or HIGH: the most a pack may show
    floor: int  # a required rule's tier, else LOW
    weight: int
    reason: str
    rating: int  # the file's rating (packer.rating)
    value: int  # rating x 2**weight, at least 1
    symbols: SymbolValues = NO_SYMBOLS  # rated symbols, x 2**weight, public ones boosted
    facts: int = 0  # what each key fact of the project's metadata file is worth (projectfacts)

    @property
    def withheld(self) -> bool:
        return self.fact.digest is None


def head_share(path: str) -> int:
    """Percent of a file's value its summary's head is worth: a package index's head lists
    what the package exports, anyone else's says what the file is for."""
    return INDEX_HEAD_SHARE if is_index(path) else HEAD_SHARE


def weighted(rating: int, weight: int) -> int:
    value = rating << weight if weight >= 0 else rating >> -weight
    return max(1, min(value, MAX_VALUE))


@dataclass(frozen=True, slots=True)
class Priced:
    """What a file's outline costs, cached by content: the head's tokens (header and head lines)
    and each symbol's."""

    outline: outline_mod.Outline
    head: int
    symbols: tuple[int, ...]


class Pricer:
    """Token costs and outlines, cached in the store by content digest."""

    def __init__(
        self, store: Store, cache: Cache, counter: TokenCounter, work: dict[str, float]
    ) -> None:
        self.store = store
        self.cache = cache
        self.counter = counter
        self.work = work
        self.md = renderer("markdown")
        # Lines by `line_key`: those counted or looked up in this run, and those of runs before
        # (`remember`) not looked up yet (each line is held once). Keys, not the texts: a tree
        # of 100,000 files has three lines a file.
        self._lines: dict[int, int] = {}
        self._remembered: dict[int, int] | None = None
        self._remembered_held = 0  # how many lines the runs before left
        self.lines_counted = 0  # lines counted with the tokenizer: no run before knew them
        self._lines_kept = 0  # `lines_counted` when `remember` last kept the lines
        self._priced: dict[tuple[Digest, str], Priced] = {}
        self._texts: dict[Digest, str] = {}

    # --- counting -----------------------------------------------------------------------------

    @functools.cached_property
    def _fence(self) -> int:
        """Tokens a code fence adds around a body (counted when first asked: a pack reused
        whole loads no tokenizer)."""
        return self._count(self.md.section_body("x\n", "")) - self._count("x\n")

    @functools.cached_property
    def _more(self) -> int:
        return self._count(_MORE_LINE + "\n")

    def _spent(self, step: str, start: float) -> None:
        self.work[step] = self.work.get(step, 0.0) + time.perf_counter() - start

    def _count(self, text: str) -> int:
        start = time.perf_counter()
        n = self.counter.count(text)
        self._spent("tokenize", start)
        return n

    def line(self, text: str) -> int:
        """Tokens of a line that repeats across targets and runs (a file's listed line, a
        section's heading): counted once, then known from the runs before (`remember`)."""
        key = line_key(text)
        known = self._lines.get(key)
        if known is None:
            if self._remembered is None:
                self._remembered = _decode_lines(self.cache.get(self.lines_namespace, LINES_KEY))
                self._remembered_held = len(self._remembered)
            known = self._remembered.pop(key, None)
            if known is None:
                known = self._count(text)
                self.lines_counted += 1
            self._lines[key] = known
        return known

    def settle(self) -> None:
        """After a pass that looked up most lines: the lines of the runs before that are left
        held in a table of their own size (a dict keeps its size as entries leave it, and on a
        tree of 100,000 files the emptied table was 10 MiB held through the fit)."""
        left = self._remembered
        if left is not None and 2 * len(left) < self._remembered_held:
            self._remembered = dict(left)

    @property
    def lines_namespace(self) -> str:
        return f"line-tokens:{LINES_VERSION}:{self.counter.name}"

    def remember(self) -> None:
        """Keep the lines this run counted for the next run (in the cache, one entry): the
        lines this run used, and those of runs before as long as they are not most of it (a
        scope not packed this time keeps its lines; renamed files do not pile up)."""
        if self.lines_counted == self._lines_kept:
            return
        kept = self._lines
        if self._remembered and self._remembered_held <= 2 * len(kept) + _LINES_SLACK:
            kept = {**self._remembered, **kept}
        self.cache.put(self.lines_namespace, LINES_KEY, _encode_lines(kept))
        self._lines_kept = self.lines_counted

    def text(self, digest: Digest) -> str:
        known = self._texts.get(digest)
        if known is None:
            known = decode_text(self.store.get(digest))
        return known

    def body_tokens(self, fact: Fact) -> int:
        """Tokens of a file's fenced body as the markdown render shows it, by content."""
        assert fact.digest is not None
        lang = fence_language(fact.path)
        ns = f"tokens:{self.counter.name}:{RENDER_VERSION}:{lang}"
        cached = self.cache.get(ns, bytes(fact.digest))
        if cached is not None:
            return int(cached)
        count = self._count(self.md.section_body(self.text(fact.digest), lang))
        self.cache.put(ns, bytes(fact.digest), str(count).encode())
        return count

    # --- outlines -----------------------------------------------------------------------------

    def priced(self, fact: Fact) -> Priced:
        """The file's outline and its costs (cached by content digest and language)."""
        assert fact.digest is not None
        lang = language_for(fact.path) or "text"
        key = (fact.digest, lang)
        known = self._priced.get(key)
        if known is not None:
            return known
        ns = f"priced:{SUMMARY_VERSION}:{self.counter.name}:{lang}"
        raw = self.cache.get(ns, bytes(fact.digest))
        found = _decode_priced(raw) if raw is not None else None
        if found is None:
            start = time.perf_counter()
            o = make_outline(fact.path, self.text(fact.digest))
            self._spent("summarize", start)
            head = self._count("\n".join([o.header(), *o.head]) + "\n")
            costs = tuple(
                self._count("\n".join(s.lines) + "\n") if s.lines else 0 for s in o.symbols
            )
            found = Priced(o, head, costs)
            self.cache.put(ns, bytes(fact.digest), _encode_priced(found))
        self._priced[key] = found
        return found

    def summary_text(self, fact: Fact, keep: tuple[int, ...]) -> str:
        return outline_mod.render(self.priced(fact).outline, keep)

    # --- offers -------------------------------------------------------------------------------

    def listed(self, cand: Candidate) -> tuple[int, int]:
        line = self.md.withheld_line if cand.withheld else self.md.omitted_line
        return self.line(line(cand)), max(1, cand.value // LISTED_SHARE)

    def frame(self, cand: Candidate, summary: bool) -> int:
        """Tokens of a section's heading (and closing) around its body."""
        head = self.md.section_head(cand.path, "medium" if summary else "high", summary)
        return self.line(head) + self._close

    @functools.cached_property
    def _close(self) -> int:
        """Tokens of a section's closing (the same for every file)."""
        return self.line(self.md.section_close())

    def offer(self, cand: Candidate) -> Offer:
        """The offer, to be read when the fit asks: until then, its listed line and a bound."""
        listed = self.listed(cand)
        if cand.ceiling == LOW or cand.withheld or not cand.fact.text:
            return Offer(cand.path, ceiling=LOW, floor=LOW, listed=listed)
        if cand.floor > LOW:
            return self.expand(cand, listed)
        return Offer(
            cand.path,
            ceiling=cand.ceiling,
            listed=listed,
            bound=self._bound(cand, listed),
            expand=_Unread(self, cand, listed),
        )

    def _bound(self, cand: Candidate, listed: tuple[int, int]) -> tuple[int, int]:
        """(value, cost): an estimate from above of the value per token of any step from
        omitted to a summary or to the whole file (value/cost), and the least such a step costs
        (cost). A step from the listed line may be denser; the fit then reads the file late.

        A summary pays its head (frame, header) and then at least `_MIN_SYMBOL_COST` per
        symbol; its symbols are worth at most what the rating gives the names the file
        defines, what members inherit from the best of those, and the fallback shares: the best
        k of these, for every k, bound the summary of k symbols. The whole file costs at least
        its frame and a token per 24 bytes. (Members of a large class inherit less each than
        this counts, so the estimate holds in practice, not in every case; an estimate too low
        only makes the fit read a file later than it would otherwise.)"""
        value, size = cand.value, cand.fact.size
        head_value = value * head_share(cand.path) // 100
        head_cost = max(self.frame(cand, True) + self._fence + 4, 1)
        fallbacks = min(FALLBACK_CAP // 4, size // 20 + 1)
        rated = cand.symbols.best[:32]
        if cand.facts:
            rated = [*[cand.facts] * _FACTS_BOUND, *rated]
        best_value, best_cost = densest_summary(
            head_value, head_cost, rated, value * _MOST_FALLBACK // 100, fallbacks
        )
        # a symbol takes some 20 bytes of source at least: few fit in a small file
        fallbacks = min(FALLBACK_CAP, _MOST_FALLBACK * (size // 20 + 1))
        full_value = (head_value + cand.symbols.total + cand.facts * _FACTS_BOUND) * 13 // 10
        full_value += value * (fallbacks * 13 // 10 + 10) // 100
        full_cost = max(self.frame(cand, False) + size // 24, 1)
        if full_value * best_cost > best_value * full_cost:
            best_value, best_cost = full_value, full_cost
        least = min(head_cost, full_cost)
        return -(-best_value * least // best_cost), least

    def expand(self, cand: Candidate, listed: tuple[int, int]) -> Offer:
        """Every point the file allows, priced."""
        fact = cand.fact
        head_value = cand.value * head_share(cand.path) // 100
        priced = self.priced(fact)
        symbols = _symbol_values(cand, priced.outline)
        offers = tuple(
            SymbolOffer(cost, value, s.parent)
            for s, cost, value in zip(priced.outline.symbols, priced.symbols, symbols, strict=True)
        )
        head_cost = self.frame(cand, True) + self._fence + priced.head + self._more
        # A key fact's line is all there is to it: the whole file shows it no better.
        facts = sum(symbols[i] for i in key_facts(priced.outline)) if cand.facts else 0
        everything = head_value + sum(symbols) - facts
        full = None
        if cand.ceiling >= HIGH:
            full_cost = self.frame(cand, False) + self.body_tokens(fact)
            full = (full_cost, everything * 13 // 10 + facts + cand.value // 10)
        return Offer(
            cand.path,
            ceiling=cand.ceiling,
            floor=cand.floor,
            listed=listed,
            full=full,
            head=(head_cost, head_value),
            symbols=offers,
        )


class _Unread:
    """An offer's reading, for the fit to call when it asks (`Offer.expand`): one small object
    a file rather than a closure and its cells (a tree of 100,000 files has as many)."""

    __slots__ = ("cand", "listed", "pricer")

    def __init__(self, pricer: Pricer, cand: Candidate, listed: tuple[int, int]) -> None:
        self.pricer, self.cand, self.listed = pricer, cand, listed

    def __call__(self) -> Offer:
        return self.pricer.expand(self.cand, self.listed)


def densest_summary(
    head_value: int, head_cost: int, rated: Sequence[int], fallback: int, copies: int
) -> tuple[int, int]:
    """(value, cost) of the densest summary a bound allows: the head, then symbols best first
    at `_MIN_SYMBOL_COST` each, worth ``rated`` (best first), what members inherit from the
    best four of those, and ``copies`` of ``fallback``. A value raises the density while
    value * cost > total value * its cost; once one does not, none after it does (they come
    best first, and each is at most the density the one before left), and copies of one value
    stand or fall together (the test is the same after each), so they are weighed at once
    rather than sorted in one by one. Most files stop at the first value or two."""
    values = [*rated, *[v * share // 100 for v in rated[:4] for share in (50, 40)]]
    values.sort(reverse=True)
    total_value, total_cost = head_value, head_cost
    for v in values:
        if copies and fallback >= v:
            if fallback * total_cost <= total_value * _MIN_SYMBOL_COST:
                return total_value, total_cost
            total_value += fallback * copies
            total_cost += _MIN_SYMBOL_COST * copies
            copies = 0
        if v * total_cost <= total_value * _MIN_SYMBOL_COST:
            return total_value, total_cost
        total_value += v
        total_cost += _MIN_SYMBOL_COST
    if copies and fallback * total_cost > total_value * _MIN_SYMBOL_COST:
        total_value += fallback * copies
        total_cost += _MIN_SYMBOL_COST * copies
    return total_value, total_cost


def _symbol_values(cand: Candidate, o: outline_mod.Outline) -> list[int]:
    """Each outline symbol's value: its rating when the rating knows its name (one symbol of
    that name takes it: `_rated_symbols`; a quarter of it for a member the outline knows is not
    public), else a share of the file's value by kind (these capped in total);
    and a member is worth at least its share of what encloses it, so the methods of a class
    that matters are worth showing even when the rating does not know them by name."""
    own: list[int] = []
    fallback: list[int] = []
    kinds = _CONFIG_FALLBACK if o.lang in _CONFIG_LANGS else _FALLBACK
    boosted = cand.symbols.by_name()
    taker = _rated_symbols(o, boosted)
    facts = key_facts(o) if cand.facts else {}
    for i, s in enumerate(o.symbols):
        share = facts.get(i)
        if share is not None:
            own.append(max(1, cand.facts // share))
            continue
        rated = boosted.get(s.name) if taker.get(s.name) == i else None
        if rated is not None:
            # A member whose name reads as public but that the outline knows is not (a Go
            # method of an unexported type, a trait implementation's items): the name's rating
            # is mostly that of its public namesakes elsewhere.
            hidden = s.parent >= 0 and not s.exported and not s.name.startswith("_")
            own.append(rated // 4 if hidden else rated)
            continue
        value = cand.value * kinds.get(s.kind, 1) // 100
        own.append(value if s.exported else value // 4)
        fallback.append(i)
    total = sum(own[i] for i in fallback)
    cap = cand.value * FALLBACK_CAP // 100
    if total > cap:
        for i in fallback:
            own[i] = own[i] * cap // total
    public: dict[int, int] = {}
    for s in o.symbols:
        if s.parent >= 0 and s.exported:
            public[s.parent] = public.get(s.parent, 0) + 1
    out = list(own)
    for i, s in enumerate(o.symbols):  # parents come before their members
        if s.parent < 0:
            continue
        parent = out[s.parent]
        if s.name in _CONSTRUCTORS or (o.lang == "go" and s.kind == "function"):
            inherited = parent * _INHERIT_CONSTRUCTOR // 100
        elif s.exported and not s.name.startswith("_"):
            inherited = parent * _INHERIT_PUBLIC // 100 // max(1, isqrt(public.get(s.parent, 1)))
        else:
            inherited = parent * _INHERIT_PRIVATE // 100 // max(1, isqrt(public.get(s.parent, 1)))
        out[i] = max(out[i], inherited)
        if o.lang == "go" and s.kind != "function":
            # A Go member is linked by its bare name (`x.Flags()`), with no receiver to tell
            # whose: it is worth no more than the type it belongs to.
            out[i] = min(out[i], parent)
    # A public name made of a private function or class of the file (`path = partial(_path,
    # Pattern=RoutePattern)`, `run = _run`): that one's signature is the public name's, so it
    # is worth as much.
    private = {
        s.name: i
        for i, s in enumerate(o.symbols)
        if s.parent < 0 and not s.exported and s.kind in ("function", "class")
    }
    if private:
        for i, s in enumerate(o.symbols):
            if s.parent >= 0 or not s.exported or s.kind not in ("variable", "constant"):
                continue
            _, eq, made_of = s.lines[0].partition("=")
            words: list[str] = _NAME.findall(made_of) if eq else []
            for word in words:
                j = private.get(word)
                if j is not None:
                    out[j] = max(out[j], out[i])
    return out


def _rated_symbols(o: outline_mod.Outline, rated: Mapping[str, int]) -> dict[str, int]:
    """Which symbol takes each rated name's value when several share it: the exported one at
    the top of the file first (the free function `from_str` over the constructor of the same
    name in an `impl`), then an exported member, then the first."""
    best: dict[str, tuple[int, int]] = {}
    for i, s in enumerate(o.symbols):
        if s.name not in rated:
            continue
        rank = (0 if s.parent < 0 else 1) if s.exported else 2
        if s.name not in best or rank < best[s.name][0]:
            best[s.name] = (rank, i)
    return {name: i for name, (_, i) in best.items()}


def _encode_priced(p: Priced) -> bytes:
    data: bytes = msgpack.packb(
        [outline_mod.encode(p.outline), p.head, list(p.symbols)], use_bin_type=True
    )
    return data


# The cache entry of `Pricer.remember`, its layout's version, and how many lines beyond twice a
# run's it may keep.
LINES_KEY: Final = b"lines"
LINES_VERSION: Final = 3
_LINES_SLACK: Final = 4096


def line_key(text: str) -> int:
    """A line's key among the counted lines: 64-bit FNV-1a of its UTF-8 bytes (`cas.words.key`;
    native where built). Two of the 300,000 lines of a tree of 100,000 files share a key about
    once in 400 million runs; one would then be priced as the other, which only moves a choice
    (a pack's render is counted exactly, whatever the estimates)."""
    native = native_module()
    if native is not None:
        try:
            key: int = native.text_key(text)
            return key
        except UnicodeEncodeError:
            pass  # a path that was not UTF-8 on disk: its surrogates as UTF-8 bytes would be
    return words_key(text.encode("utf-8", "surrogatepass"))


def _encode_lines(lines: dict[int, int]) -> bytes:
    keys, counts = array("Q", lines), array("I", lines.values())
    if sys.byteorder == "big":
        keys.byteswap()
        counts.byteswap()
    data: bytes = msgpack.packb([keys.tobytes(), counts.tobytes()], use_bin_type=True)
    return data


def _decode_lines(raw: bytes | None) -> dict[int, int]:
    """The remembered line counts; an entry that does not decode is none (counted again)."""
    if raw is None:
        return {}
    try:
        packed_keys, packed_counts = msgpack.unpackb(raw, raw=False)
        if not (type(packed_keys) is type(packed_counts) is bytes):
            return {}
        if len(packed_keys) != 2 * len(packed_counts) or len(packed_counts) % 4:
            return {}
    except (ValueError, TypeError, msgpack.ExtraData):
        return {}
    keys, counts = array("Q", packed_keys), array("I", packed_counts)
    if sys.byteorder == "big":
        keys.byteswap()
        counts.byteswap()
    return dict(zip(keys, counts, strict=True))


def _decode_priced(raw: bytes) -> Priced | None:
    try:
        encoded, head, symbols = msgpack.unpackb(raw, raw=False)
        o = outline_mod.decode(encoded)
        if o is None or len(symbols) != len(o.symbols):
            return None
        return Priced(o, int(head), tuple(int(c) for c in symbols))
    except (ValueError, TypeError, msgpack.ExtraData):
        return None


Values = Callable[[str], dict[str, int]]
