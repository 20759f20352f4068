"""Fitting a pack to its budget: every file competes for the tokens on value per token.

Each file offers points of (cost in tokens, value):

* omitted, counted in its folder's line of the omitted index: (0, 0), where every file starts;
* listed by name in the omitted index;
* a summary showing its head and its k best-valued symbols, for every k (a symbol comes with the
  symbols that enclose it, so a method brings its class line);
* shown in full.

Points are absolute: moving a file from "listed" to a summary frees its line. The fit starts every
file at its floor (the tier a ``required`` rule gives it) and then buys, among all files, the next
step of best value per token along each file's upper hull of points, as long as it fits. A step
that does not fit is not the end: the file's hull is rebuilt from the points that still fit and
its best one is offered again, so the room left is filled with smaller steps (a summary of fewer
symbols, a listed line) until nothing fits. No step may lift a file above its ceiling (the tier
its rule or its content allows).

Everything is integers and ties break on path bytes, then on the point's cost: the same offers
give the same choice on every machine. Files not yet read (`Offer.expand`) enter with an upper
bound of their best step's value per token and are read only when that bound reaches the top:
a large tree is summarized only as far as the budget can show.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

LOW: Final = 0
MEDIUM: Final = 1
HIGH: Final = 2
TIER_NAMES: Final = ("low", "medium", "high")
# Densities are compared as integers: value per token scaled by this factor.
_SCALE: Final = 1 << 24


class SymbolOffer(NamedTuple):
    cost: int  # tokens of the symbol's own lines
    value: int
    parent: int = -1  # index of the enclosing symbol, -1 at top level


@dataclass(slots=True)
class Offer:
    """What one file can become in a pack."""

    path: str
    ceiling: int = HIGH  # the highest tier the file may get
    floor: int = LOW  # the lowest tier it may get (a required rule's tier)
    listed: tuple[int, int] | None = None  # (cost, value) of its own line in the omitted index
    full: tuple[int, int] | None = None  # (cost, value) shown in full; None: it cannot be
    head: tuple[int, int] | None = None  # (cost, value) of a summary with no symbol
    symbols: tuple[SymbolOffer, ...] = ()
    # For an offer not read yet: an upper bound of its best step's value and a lower bound of
    # that step's cost, and the function that reads it (returns the complete offer).
    bound: tuple[int, int] | None = None
    expand: Callable[[], Offer] | None = None


class Point(NamedTuple):
    cost: int
    value: int
    tier: int  # LOW (omitted: listed or not), MEDIUM (a summary), HIGH (full)
    keep: tuple[int, ...] = ()  # symbols a summary shows (their ancestors come along)
    listed: bool = False


class Choice(NamedTuple):
    tier: int
    keep: tuple[int, ...] = ()
    listed: bool = False
    cost: int = 0
    value: int = 0


OMITTED: Final = Point(0, 0, LOW)
NOT_CHOSEN: Final = Choice(LOW)  # the choice of a file left at `OMITTED`


@dataclass(slots=True)
class Fit:
    choices: dict[str, Choice] = field(default_factory=dict)
    cost: int = 0  # the estimated total of the files' points
    expanded: int = 0  # offers read on demand


def points(offer: Offer) -> list[Point]:
    """Every point an offer allows, within its ceiling (not its floor: see `start`)."""
    out = [OMITTED]
    if offer.listed is not None:
        out.append(Point(offer.listed[0], offer.listed[1], LOW, listed=True))
    if offer.ceiling >= MEDIUM and offer.head is not None:
        out.extend(summary_points(offer))
    if offer.ceiling >= HIGH and offer.full is not None:
        out.append(Point(offer.full[0], offer.full[1], HIGH))
    return out


def summary_points(offer: Offer) -> list[Point]:
    """The summaries keeping the k best-valued symbols, k = 0..n (best: value, then position)."""
    assert offer.head is not None
    cost, value = offer.head
    order = sorted(range(len(offer.symbols)), key=lambda i: (-offer.symbols[i].value, i))
    shown: set[int] = set()
    keep: list[int] = []
    out = [Point(cost, value, MEDIUM)]
    for i in order:
        if i in shown:
            keep.append(i)
            out.append(Point(cost, value, MEDIUM, tuple(sorted(keep))))
            continue
        chain = [i]
        parent = offer.symbols[i].parent
        while parent >= 0 and parent not in shown:
            chain.append(parent)
            parent = offer.symbols[parent].parent
        for j in chain:
            shown.add(j)
            cost += offer.symbols[j].cost
            value += offer.symbols[j].value
        keep.append(i)
        out.append(Point(cost, value, MEDIUM, tuple(sorted(keep))))
    return out


def start(offer: Offer, options: Sequence[Point]) -> Point:
    """The cheapest point at or above the floor (a required summary shows every symbol)."""
    if offer.floor <= LOW:
        return OMITTED
    at_floor = [p for p in options if p.tier >= offer.floor]
    if offer.floor == MEDIUM:
        summaries = [p for p in at_floor if p.tier == MEDIUM]
        if summaries:
            return max(summaries, key=lambda p: (len(p.keep), -p.cost))
    if not at_floor:
        return max(options, key=lambda p: (p.tier, p.value, -p.cost))
    return min(at_floor, key=lambda p: (p.cost, -p.value))


def hull(current: Point, options: Sequence[Point], room: int) -> list[Point]:
    """The upper concave hull of the points beyond ``current`` that fit in ``room``, in order of
    cost: each step gives the most value per token among what is left, and the value per token
    falls along it (integer cross products: exact)."""
    candidates = [
        p
        for p in options
        if p.cost > current.cost and p.value > current.value and p.cost - current.cost <= room
    ]
    if len(candidates) <= 1:
        return candidates  # one step or none (an unread file's listed line): nothing to weigh
    candidates.sort(key=lambda p: (p.cost, -p.value))
    chain = [current]
    for p in candidates:
        if p.value <= chain[-1].value:
            continue  # costs more and gives no more than a point already on the chain
        while len(chain) >= 2:
            a, b = chain[-2], chain[-1]
            # b stays only if it lies strictly above the line from a to p
            if (b.cost - a.cost) * (p.value - a.value) - (b.value - a.value) * (
                p.cost - a.cost
            ) < 0:
                break
            chain.pop()
        chain.append(p)
    return chain[1:]


def density(here: Point, step: Point) -> int:
    return (step.value - here.value) * _SCALE // max(step.cost - here.cost, 1)


# The fit reads at most one unread offer per this many tokens of room: a file shown as more than
# a line costs at least its heading, fences and a line (about this much), so a pack of N tokens
# never shows more than N / READ_COST files that were read; past that, reading more only spends
# time on files whose bound reached the top but whose real value per token did not.
READ_COST: Final = 16
# The fit clears its heap of entries that can no longer be bought once at least this many (and
# an eighth of the heap) were popped and dropped since it last did.
_PRUNE_AFTER: Final = 64


def fit(offers: Sequence[Offer], room: int) -> Fit:
    """Choose a point for every offer so that their costs fit ``room`` (floors first, even when
    they alone do not fit: the caller judges that), buying value per token greedily.

    An offer not read yet (`Offer.expand`) starts with what is known without reading it (its
    listed line) and one more heap entry at its `Offer.bound`: ``(value, cost)``, an upper bound
    of the value per token of any step to a point only reading it reveals, and a lower bound of
    such a step's cost. It is read when that entry reaches the top and its cost still fits, as
    long as fewer than ``room // READ_COST`` offers were read (so the time a fit takes is bounded
    by the budget, not the size of the tree)."""
    fitter = _Fitter(offers, room)
    fitter.buy()
    return fitter.choices(offers)


class _Fitter:
    """The state of one `fit`: per file (by its place in the order of the paths' bytes, which
    breaks ties: an int a file, a list slot a file rather than a dict entry), the offer, the
    point it is at, its options, the hull ahead of it; the heap of next steps; what is used."""

    __slots__ = (
        "current",
        "heap",
        "offer_at",
        "options",
        "pending",
        "rank",
        "readable",
        "reads",
        "result",
        "room",
        "unread",
        "used",
    )

    def __init__(self, offers: Sequence[Offer], room: int) -> None:
        self.result = Fit()
        self.room = room
        # code point order: the UTF-8 bytes' order; from a dict, in the offers' own order (mostly
        # sorted already, which the sort is quick on), not a set's hash order
        names = sorted(dict.fromkeys(o.path for o in offers))
        self.rank = {path: i for i, path in enumerate(names)}
        n = len(names)
        self.offer_at: list[Offer | None] = [None] * n
        self.current: list[Point] = [OMITTED] * n
        # None: not read yet (its listed line below)
        self.options: list[list[Point] | None] = [None] * n
        self.pending: list[list[Point] | None] = [None] * n  # the hull ahead, next first
        self.unread: list[Point | None] = [None] * n  # the listed line of an offer not read yet
        self.readable = [False] * n  # an offer not read yet whose bound is still in the heap
        self.used = 0
        self.reads = max(room // READ_COST, 1)
        # Every entry's key differs from every other's, or the two are equal tuples: the order
        # they pop in is the same however the heap was built, so the first entries are
        # heapified at once.
        self.heap: list[tuple[int, int, int]] = []
        self._start(offers)
        self._first_steps()
        heapq.heapify(self.heap)

    def _start(self, offers: Sequence[Offer]) -> None:
        """Each offer at its starting point: an unread one omitted, with its bound in the heap;
        any other read now and at its floor. (The lists are held in locals: a pack of 20,000
        files goes through here once per file.)"""
        rank, offer_at, heap, readable = self.rank, self.offer_at, self.heap, self.readable
        unread, current, options = self.unread, self.current, self.options
        used = 0
        for given in offers:
            offer = given
            place = rank[offer.path]
            offer_at[place] = offer
            if offer.expand is not None and offer.floor <= LOW and offer.bound is not None:
                value, cost = offer.bound
                heap.append((-(value * _SCALE // max(cost, 1)), place, -1))
                readable[place] = True
                listed = offer.listed  # until it is read, what it may become is its listed line
                if listed is not None:
                    unread[place] = Point(*listed, LOW, listed=True)
                current[place] = OMITTED
                continue
            if offer.expand is not None:
                offer = offer_at[place] = offer.expand()
                self.result.expanded += 1
            opts = options[place] = points(offer)
            here = current[place] = start(offer, opts)
            used += here.cost
        self.used = used

    def _first_steps(self) -> None:
        """Each file's first step into the heap: a read one's hull, an unread one's listed line
        (its hull from omitted), if it fits."""
        heap, options, current, pending, unread = (
            self.heap, self.options, self.current, self.pending, self.unread
        )  # fmt: skip
        left = self.room - self.used
        for place in range(len(current)):
            known = options[place]
            if known is not None:
                here = current[place]
                ahead = pending[place] = hull(here, known, left)
                if ahead:
                    heap.append((-density(here, ahead[0]), place, ahead[0].cost))
                continue
            listed_line = unread[place]
            if (
                listed_line is not None
                and listed_line.cost > 0
                and listed_line.value > 0
                and listed_line.cost <= left
            ):
                pending[place] = [listed_line]
                heap.append((-density(OMITTED, listed_line), place, listed_line.cost))

    def _bound_fits(self, place: int, left: int) -> bool:
        waiting = self.offer_at[place]
        assert waiting is not None and waiting.bound is not None
        # What is left beside the file only shrinks: a bound that does not fit never will.
        return self.reads > 0 and waiting.bound[1] <= left + self.current[place].cost

    def _prune(self, left: int) -> None:
        """Drop the entries that can never be bought or read: the bounds that no longer fit
        (or come when no more reading is allowed), then the listed lines of files that can no
        longer be read and that no longer fit. Each would be popped and dropped as it is; the
        rest pop in the order they would have (see `__init__`)."""
        kept = []
        for entry in self.heap:
            place, cost = entry[1], entry[2]
            if cost < 0 and not self._bound_fits(place, left):
                self.readable[place] = False
                continue
            kept.append(entry)
        options, readable, current = self.options, self.readable, self.current
        self.heap[:] = [
            entry
            for entry in kept
            if entry[2] < 0
            or options[entry[1]] is not None
            or readable[entry[1]]
            or entry[2] - current[entry[1]].cost <= left
        ]
        heapq.heapify(self.heap)

    def _read(self, place: int, left: int) -> bool:
        """An unread offer's bound reached the top: read it, if it can still fit (else its
        listed line competes as it is). Whether it was read (its next steps are the caller's)."""
        self.readable[place] = False
        if not self._bound_fits(place, left):
            return False
        waiting = self.offer_at[place]
        assert waiting is not None and waiting.expand is not None
        self.reads -= 1
        read = self.offer_at[place] = waiting.expand()
        self.result.expanded += 1
        self.options[place] = points(read)
        return True

    def buy(self) -> None:
        """Buy the densest step that fits, until none does. (What the loop touches is held in
        locals and closures: it runs once per step of 20,000 files.)"""
        heap, pending, current, room = self.heap, self.pending, self.current, self.room
        options, unread = self.options, self.unread
        used = self.used

        def offer_next(place: int) -> None:
            """The file's next steps from where it is, in the room left."""
            here = current[place]
            known = options[place]
            if known is None:  # not read yet: what it may become is its listed line
                line = unread[place]
                known = [OMITTED] if line is None else [OMITTED, line]
            steps = pending[place] = hull(here, known, room - used)
            if steps:
                heapq.heappush(heap, (-density(here, steps[0]), place, steps[0].cost))

        dead = 0  # entries popped and dropped since the last prune
        while heap:
            if used >= room:
                break  # full: every step costs a token at least, and no unread offer can fit
            if dead >= _PRUNE_AFTER and dead * 8 >= len(heap):
                self._prune(room - used)  # at most eight times the pops it saves
                dead = 0
                continue
            _key, place, cost = heapq.heappop(heap)
            if cost < 0:
                if self._read(place, room - used):
                    offer_next(place)
                else:
                    dead += 1
                continue
            steps = pending[place]
            if not steps or steps[0].cost != cost:
                dead += 1
                continue  # stale entry
            here, step = current[place], steps[0]
            if step.cost - here.cost > room - used:
                if options[place] is None:
                    # Not read: its one step is its listed line, which does not fit (`hull` of
                    # its options would be empty), and the room only shrinks.
                    pending[place] = None
                    dead += 1
                    continue
                offer_next(place)  # what still fits, from here
                continue
            used += step.cost - here.cost
            current[place] = step
            steps.pop(0)
            if steps and steps[0].cost - step.cost <= room - used:
                heapq.heappush(heap, (-density(step, steps[0]), place, steps[0].cost))
            else:
                offer_next(place)
        self.used = used

    def choices(self, offers: Sequence[Offer]) -> Fit:
        result = self.result
        choices, current, rank = result.choices, self.current, self.rank
        for given in offers:
            if given.path in choices:
                continue
            here = current[rank[given.path]]
            # Choices are frozen: every file left omitted shares one.
            choices[given.path] = (
                NOT_CHOSEN
                if here is OMITTED
                else Choice(here.tier, here.keep, here.listed, here.cost, here.value)
            )
        result.cost = self.used
        return result
