"""Fitting a pack to its token budget: price each file at each tier, demote until it fits.

Order of demotion (least important first; one tier at a time, HIGH to MEDIUM to LOW):

1. the tier its rule gives (a file a MEDIUM rule placed goes before any a HIGH rule placed),
2. the rule's priority (explicit ``priority``, else its position: earlier rules rank higher),
3. the rank: deeper paths first, then larger files first (they free the most),
4. the path, by its UTF-8 bytes.

The least important file is demoted until it is LOW or the pack fits; then the next one. Files a
rule marks ``required`` are never demoted. A pack over its max is demoted until it is at or below
its target; one already under its max is left alone.

A MEDIUM file whose summary would cost at least as much as its whole body is shown in full
instead, and is demoted straight from HIGH to LOW.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from cas.manifest import Entry
from packer.render import Renderer

TIER_RANK = {"high": 2, "medium": 1, "low": 0}


@dataclass(slots=True)
class Item:
    """One file being priced for one target."""

    path: str
    rule_tier: str
    rule_reason: str
    priority: int
    required: bool
    tier: str
    fixed: bool  # pinned LOW by content (secret, binary, symlink, large)
    size: int = 0
    high_lines: int = 0  # the index line and heading, without the body
    body: int | None = None  # tokens of the fenced body; None until counted
    medium_lines: int = 0  # the index line and heading of the summary, without the summary
    medium_cost: int | None = None  # None until the summary has been priced
    low_cost: int = 0
    kind: str = "file"

    @property
    def high_cost(self) -> int:
        """Exact once ``body`` is counted; a lower bound before."""
        return self.high_lines + (self.body or 0)

    def cost(self) -> int:
        """The cost at the current tier: exact when priced, otherwise a lower bound."""
        if self.tier == "high":
            return self.high_cost
        if self.tier == "medium":
            return self.medium_cost if self.medium_cost is not None else self.medium_lines
        return self.low_cost

    def exact(self) -> bool:
        if self.tier == "high":
            return self.body is not None
        if self.tier == "medium":
            return self.medium_cost is not None and self.body is not None
        return True

    def order_key(self) -> tuple[int, int, int, int, bytes]:
        depth = self.path.count("/")
        return (TIER_RANK[self.rule_tier], self.priority, -depth, -self.size, self.path.encode())


def reason_at(item: Item) -> str:
    if TIER_RANK[item.tier] < TIER_RANK[item.rule_tier] and not item.fixed:
        return _demoted(item.rule_reason)
    return item.rule_reason


@functools.lru_cache(maxsize=1024)
def _demoted(reason: str) -> str:
    # Shared by every entry with the same reason: a huge tree demotes most of its files.
    return f"{reason}, demoted to fit the budget"


def line_entry(item: Item) -> Entry:
    """A stand-in entry for pricing an index or omitted line (digest is irrelevant there)."""
    return Entry(
        path=item.path, digest=None, size=0, tier=item.tier, tokens=0, reason=reason_at(item)
    )


def price_lines(item: Item, r: Renderer, count: Callable[[str], int]) -> tuple[int, int, int]:
    """(index+head tokens at high, at medium, omitted line tokens at low). A file that starts
    LOW is never shown (tiers only go down, and only MEDIUM goes up to HIGH): its high and
    medium prices are 0, not counted."""
    saved = item.tier
    try:
        if item.tier == "low":
            return 0, 0, count(r.omitted_line(line_entry(item)))
        item.tier = "high"
        high = count(r.index_line(line_entry(item)) + r.section_head(line_entry(item), False))
        item.tier = "medium"
        medium = count(r.index_line(line_entry(item)) + r.section_head(line_entry(item), True))
        item.tier = "low"
        low = count(r.omitted_line(line_entry(item)))
    finally:
        item.tier = saved
    return high, medium, low


def demote_once(item: Item, price_medium: Callable[[Item], int]) -> int:
    """Demote ``item`` one step; returns the change in tokens (negative saves)."""
    before = item.cost()
    if item.tier == "high":
        if item.medium_cost is None:
            item.medium_cost = max(price_medium(item), item.low_cost)
        item.tier = "medium" if item.medium_cost < item.high_cost else "low"
    elif item.tier == "medium":
        item.tier = "low"
    return item.cost() - before


def demote_until(
    items: list[Item],
    goal: int,
    resolve: Callable[[list[Item]], None],
    price_medium: Callable[[Item], int],
) -> int:
    """Demote in order until the total is at or below ``goal`` or nothing demotable is left;
    returns the total (exact).

    Costs not yet counted enter as lower bounds. While even the bound says that an item left at
    LOW would not bring the pack to its goal, the item goes to LOW in one step: the step-by-step
    walk would end there too (a MEDIUM rendering never costs less than the omitted line), and
    nothing about it needs counting or summarizing. Once the bound cannot decide, every item
    still shown is priced exactly (``resolve``) and the walk goes on step by step.
    """
    order = sorted((i for i in items if not i.required and not i.fixed), key=Item.order_key)
    bound = sum(i.cost() for i in items)
    start = len(order)
    for index, item in enumerate(order):
        if item.tier == "low":
            continue
        if bound - item.cost() + item.low_cost > goal:
            bound += item.low_cost - item.cost()
            item.tier = "low"
            continue
        start = index
        break
    resolve([i for i in items if i.tier != "low"])
    total = sum(i.cost() for i in items)
    for item in order[start:]:
        if total <= goal:
            break
        while item.tier != "low" and total > goal:
            total += demote_once(item, price_medium)
    return total
