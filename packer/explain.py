"""`cas pack --explain PATH`: why a file got what it got in each pack.

For one file and each target it was fitted for: the rule that matched (or the content that
forced it low), its rating and what raised it, its value (the rating weighed by the rule), what
each choice would cost and be worth, and what the fit chose. Nothing here decides anything: the
builder hands over what it computed, and this module only words it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cas.display import shown
from packer.fitting import HIGH, LOW, MEDIUM, Choice, Offer, summary_points
from packer.pricing import TIER_NAMES, Candidate


@dataclass(slots=True)
class Explanation:
    """What the builder knew about one file in one pack."""

    pack: str
    target: int
    budget_max: int
    rule: str  # the matching rule, in words
    cand: Candidate
    reasons: tuple[str, ...]  # what raised its rating
    offer: Offer
    choice: Choice
    symbols: list[tuple[str, int, bool]] = field(default_factory=list)  # name, value, kept
    tokens: int = 0  # the pack's markdown tokens


def _tier(level: int) -> str:
    return {LOW: "low (a line in the omitted list at most)", MEDIUM: "medium (a summary)"}.get(
        level, "high (in full)"
    )


def _per_token(value: int, cost: int) -> str:
    return f"{value / max(cost, 1):.1f} per token"


def describe(x: Explanation) -> str:
    c = x.cand
    lines = [f"{shown(c.path)} in pack {shown(x.pack)} (target {x.target}, max {x.budget_max}):"]
    lines.append(f"  rule: {x.rule}")
    if c.fact.forced:
        lines.append(f"  content: {c.fact.forced} (shown at most as a line)")
    if c.fact.redacted:
        lines.append(f"  secrets redacted: {c.fact.redacted}")
    lines.append(f"  may be: at most {_tier(c.ceiling)}; at least {_tier(c.floor)}")
    why = "; ".join(x.reasons) if x.reasons else "nothing beyond its references"
    lines.append(f"  rating: {c.rating} ({why})")
    lines.append(f"  value: {c.value} (rating x 2^{c.weight}, the rule's weight class)")
    o = x.offer
    lines.append("  prices (tokens, value):")
    if o.listed is not None:
        cost, value = o.listed
        lines.append(f"    line in the list:   {cost:>7} {value:>12}  {_per_token(value, cost)}")
    if o.head is not None:
        points = summary_points(o)
        head, full_summary = points[0], points[-1]
        lines.append(
            f"    summary, head only: {head.cost:>7} {head.value:>12}  "
            f"{_per_token(head.value, head.cost)}"
        )
        lines.append(
            f"    summary, all {len(o.symbols)} symbols: {full_summary.cost:>7} "
            f"{full_summary.value:>12}  {_per_token(full_summary.value, full_summary.cost)}"
        )
    if o.full is not None and c.ceiling >= HIGH:
        cost, value = o.full
        lines.append(f"    in full:            {cost:>7} {value:>12}  {_per_token(value, cost)}")
    ch = x.choice
    if ch.tier == MEDIUM:
        chosen = f"a summary of {len(ch.keep)} of {len(o.symbols)} symbols"
    elif ch.tier == HIGH:
        chosen = "in full"
    elif ch.listed:
        chosen = "omitted, with a line of its own in the omitted list"
    else:
        chosen = "omitted, counted in its folder's line of the omitted list"
    lines.append(
        f"  decision: {chosen} ({TIER_NAMES[ch.tier]}; {ch.cost} tokens, value {ch.value}); "
        f"the pack holds {x.tokens} tokens"
    )
    kept = [s for s in x.symbols if s[2]]
    dropped = [s for s in x.symbols if not s[2]]
    if kept:
        lines.append("  symbols shown: " + ", ".join(f"{shown(n)} ({v})" for n, v, _ in kept[:12]))
    if dropped and ch.tier == MEDIUM:
        best = sorted(dropped, key=lambda s: -s[1])[:8]
        lines.append(
            "  best symbols left out: " + ", ".join(f"{shown(n)} ({v})" for n, v, _ in best)
        )
    return "\n".join(lines) + "\n"
