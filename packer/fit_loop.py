"""The fit loop: choose what to show for a knob, render it, count it exactly, choose again.

Whatever cas fits to a token budget goes through `refit`: a pack (`packer.build`), a load
(`packer.load`), a recent-changes document (`packer.distill`, and its section in a memory
pack, `memory.recent`) and a memory pack (`memory.packs`). The caller gives a *trial*: for a
knob, what it would show, chosen by its own rules and rendered, with its exact token counts
(`Trial`); None when there is nothing to try for that knob. A *plan* says which knob comes next
from what the counts were, and which trials are within the budget:

* `Rooms` (packs, loads, the recent changes of a memory pack): the knob is the room the
  chooser may fill, in its estimated tokens. An estimate is not a count (a summary's tokens are
  not quite the sum of its lines'; the xml and plain renders cost more than markdown), so the
  room is narrowed between one that fit within the max and one that did not, and, when the
  trial fit but fell short of the target while the chooser filled the room, grown by what is
  left; at most `ROUNDS` trials. When none fit, the room 0 (the floors alone) is tried last.
* `Steps` (distilled documents, memory packs): the knob is how many steps of detail were
  dropped, in the caller's fixed order; the first trial within its limit is the result.

`refit` returns the trial that showed the most tokens (its markdown render) within the
budget, or None.

`manifest_of` is the one builder of a pack's manifest from the fit's choices, for packs and
loads alike; `Pieces` counts a render as the sum of its pieces' counts, each counted once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, NamedTuple, Protocol, TypeVar

from cas import manifest as mf
from cas.digest import Digest
from packer.config import Budget
from packer.fitting import TIER_NAMES, Choice
from packer.tokens import TokenCounter

__all__ = [
    "PRIMARY",
    "ROUNDS",
    "FileRow",
    "Pieces",
    "Plan",
    "Rooms",
    "Steps",
    "Trial",
    "manifest_of",
    "refit",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
# The format a budget's target is measured in: the trial that shows most of it is the best.
PRIMARY: Final = "markdown"
# The most trials a `Rooms` plan makes before the floors-only one.
ROUNDS: Final = 8


@dataclass(frozen=True, slots=True)
class Trial(Generic[T_co]):
    """What one knob gave: the thing made (a manifest, a document), its exact token count in
    every format it is rendered in, and what the chooser estimated it at."""

    made: T_co
    tokens: Mapping[str, int]
    cost: int

    @property
    def shown(self) -> int:
        return self.tokens[PRIMARY]

    @property
    def worst(self) -> int:
        return max(self.tokens.values())


class Plan(Protocol):
    """Where the loop starts, whether a trial is within the budget, what to try next."""

    def start(self) -> int: ...

    def within(self, knob: int, trial: Trial[object]) -> bool: ...

    def after(self, knob: int, trial: Trial[object], within: bool) -> int | None: ...


def refit(trial: Callable[[int], Trial[T] | None], plan: Plan) -> Trial[T] | None:
    """Trials, as the plan leads, until it stops or a knob has nothing to try: the one within
    the budget that shows the most (the first of equals), or None when none is."""
    best: Trial[T] | None = None
    knob: int | None = plan.start()
    while knob is not None:
        tried = trial(knob)
        if tried is None:
            break
        ok = plan.within(knob, tried)
        if ok and (best is None or tried.shown > best.shown):
            best = tried
        knob = plan.after(knob, tried, ok)
    return best


class Rooms:
    """The room search of a budget's target and max (see the module doc). ``grow``: a trial
    within the max that falls short of the target leads to a larger room (else it is the
    result); ``margin``: tokens taken off beyond the overflow when the room shrinks; ``floors``:
    when no trial fit, try the room 0 last."""

    def __init__(
        self,
        budget: Budget,
        room: int,
        *,
        grow: bool = True,
        margin: int = 2,
        floors: bool = True,
        rounds: int = ROUNDS,
    ) -> None:
        self.budget = budget
        self.room = room
        self.grow = grow
        self.margin = margin
        self.floors = floors
        self.rounds = rounds
        self.tried = 0
        self.fits = 0  # the largest room that fit
        self.too_big: int | None = None  # the smallest room that did not
        self.fitted = False
        self.last = room  # the last room tried (its value, not clamped to 0)

    def start(self) -> int:
        return self.room

    def within(self, knob: int, trial: Trial[object]) -> bool:
        return trial.worst <= self.budget.max

    def after(self, knob: int, trial: Trial[object], within: bool) -> int | None:
        if self.tried >= self.rounds:  # the floors' trial, after the rounds: the end
            return None
        self.tried += 1
        self.last = knob
        nxt = self._next(knob, trial, within)
        if nxt is None or self.tried >= self.rounds:
            return self._last_resort()
        return nxt

    def _next(self, room: int, trial: Trial[object], within: bool) -> int | None:
        budget = self.budget
        if within:
            self.fitted = True
            self.fits = max(self.fits, room)
            short = min(budget.target - trial.shown, budget.max - trial.worst)
            if not self.grow or trial.shown >= budget.target * 98 // 100 or short <= 0:
                return None
            if trial.cost < room - short:
                return None  # nothing more to show: the room was not filled
            nxt = room + short
        else:
            self.too_big = room if self.too_big is None else min(self.too_big, room)
            # Shrink from what was chosen, not from the room: the choice may have left some of
            # the room unused, and shrinking the room by less changes nothing.
            nxt = min(room, trial.cost) - (trial.worst - budget.max) - self.margin
        if self.too_big is not None and nxt >= self.too_big:
            nxt = (self.fits + self.too_big) // 2
        if (nxt <= self.fits and self.fitted) or nxt == room:
            return None
        return nxt

    def _last_resort(self) -> int | None:
        """The floors alone (room 0), when nothing fit and the last trial was not already
        that; otherwise the end."""
        if self.fitted or not self.floors or max(self.last, 0) == 0:
            return None
        self.tried = self.rounds
        return 0


class Steps:
    """Detail dropped step by step: knob k is the document after k steps; the first trial
    within ``limit(k)`` (asked after that trial was made) ends the loop."""

    def __init__(self, limit: Callable[[int], int]) -> None:
        self.limit = limit

    def start(self) -> int:
        return 0

    def within(self, knob: int, trial: Trial[object]) -> bool:
        return trial.worst <= self.limit(knob)

    def after(self, knob: int, trial: Trial[object], within: bool) -> int | None:
        return None if within else knob + 1


class Pieces:
    """Token counts of renders made of pieces, each piece counted once (`packer.render`: a
    piece starts with a character that is not whitespace and ends with a newline, where the
    tokenizers' pre-tokenization always splits, so a render's count is the sum of its pieces').
    A piece that does not start that way (a plain-text body beginning with a space or a
    ``/``) is counted together with the piece before it, so the sum stays exact."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = self.counter.count(text)
        return known

    def total(self, pieces: Iterable[str]) -> int:
        """The tokens of ``"".join(pieces)``, exactly."""
        total = 0
        run: list[str] = []
        for piece in pieces:
            if not piece:
                continue
            if run and not _splits_before(run[-1], piece):
                run.append(piece)
                continue
            if run:
                total += self(run[0] if len(run) == 1 else "".join(run))
            run = [piece]
        if run:
            total += self(run[0] if len(run) == 1 else "".join(run))
        return total


def _splits_before(before: str, piece: str) -> bool:
    """Whether the count of ``before + piece`` is the sum of their counts: ``before`` ends with
    a newline and ``piece`` starts with neither whitespace nor ``/`` (`packer.tokens`, cut 1)."""
    return before.endswith("\n") and not piece[0].isspace() and piece[0] != "/"


class FileRow(NamedTuple):
    """One file as a manifest lists it, whatever tier the fit gives it (a tuple: a pack makes
    one per file of its scope)."""

    path: str
    kind: str
    digest: Digest | None
    size: int
    reason: str | None
    rating: int


def manifest_of(
    files: Sequence[FileRow],
    choices: Mapping[str, Choice],
    summary: Callable[[FileRow, tuple[int, ...]], str],
    texts: dict[Digest, str],
    head: mf.Manifest,
    depth: int,
    map_size: int = 0,
) -> mf.Manifest:
    """The manifest of ``head`` (everything but its entries and totals) holding ``files`` as
    ``choices`` chose them: a summary's text (``summary``, for the symbols kept) goes into
    ``texts`` under its digest, the entry names it. Entries in the order of their paths'
    bytes; totals per tier, the withheld count, the omitted list's folder ``depth`` and, when
    the render opens with a map of the project, how many folders it holds (`packer.projectmap`;
    no ``map`` in the totals: none)."""
    entries = []
    for row in files:
        choice = choices[row.path]
        tier = TIER_NAMES[choice.tier]
        digest = None
        if tier == "medium":
            text = summary(row, choice.keep)
            digest = Digest.of(text.encode("utf-8"))
            texts[digest] = text
        entries.append(
            mf.Entry(
                path=row.path,
                kind=row.kind,
                digest=row.digest,
                size=row.size,
                tier=tier,
                tokens=choice.cost,
                summary=digest,
                reason=row.reason,
                rating=row.rating,
                listed=choice.listed,
            )
        )
    entries.sort(key=lambda e: e.path.encode())
    totals: dict[str, object] = {"files": len(entries), "bytes": sum(e.size for e in entries)}
    for tier in ("high", "medium", "low"):
        sel = [e for e in entries if e.tier == tier and e.digest is not None]
        totals[tier] = {
            "files": len(sel),
            "bytes": sum(e.size for e in sel),
            "tokens": sum(e.tokens for e in sel),
        }
    totals["withheld"] = sum(1 for e in entries if e.digest is None)
    totals["group_depth"] = depth
    if map_size:
        totals["map"] = map_size
    return head._replace(entries=tuple(entries), totals=totals)
