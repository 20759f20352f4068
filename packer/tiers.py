"""What a path is to a pack: ordered rules, the first match decides.

A rule gives the paths it matches a *tier* (the most a pack may show of them: ``high`` in full,
``medium`` a summary, ``low`` only a line in the omitted index), a *reason* (what the file is, as
a render says it), a *weight* class and whether the file is *required*. Fitting
(`packer.fitting`) weighs every file by its rating (`packer.rating`) times two to the power of
its weight, then chooses on value per token; a required file gets at least its tier.

A scope classifies with its own rules, then the configured global ones, then `DEFAULT_RULES`
(`packer.rules`; unless ``default_rules = false``, `packer.config` appends them to
`Config.rules`).

A user rule without an explicit ``priority`` weighs by its tier: ``high`` 2, ``medium`` 0,
``low`` -2; an explicit priority is the weight class itself (-4 to 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packer.config import Config, Scope, glob_spec
from packer.rules import DEFAULT_RULES, TIERS, Rule

__all__ = [
    "DEFAULT_RULES",
    "TIER_ORDER",
    "TierDecision",
    "TierRules",
    "demote",
    "rules_for_scope",
]

TIER_ORDER = {"high": 2, "medium": 1, "low": 0}
NO_MATCH_REASON = "no rule matched"


# A user rule's weight class by its tier, when it gives no priority.
TIER_WEIGHTS = {"high": 2, "medium": 0, "low": -2}
MIN_WEIGHT, MAX_WEIGHT = -4, 4


@dataclass(frozen=True)
class TierDecision:
    tier: str  # the most a pack may show: high (in full), medium (a summary), low (a line)
    reason: str
    required: bool
    weight: int  # the weight class, MIN_WEIGHT..MAX_WEIGHT
    rule_index: int  # position in the combined list; len(list) when no rule matched


class TierRules:
    """An ordered list of rules with each rule's globs compiled once."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        for rule in rules:
            if rule.tier not in TIERS:
                raise ValueError(f"rule {rule.globs!r} has unknown tier {rule.tier!r}")
        self.rules = tuple(rules)
        # each rule's globs: one regular expression when none is a negation (packer.wildmatch)
        self._specs = [glob_spec(rule.globs) for rule in self.rules]
        self._memo: dict[str, TierDecision] = {}
        self._decisions: dict[int, TierDecision] = {}  # one shared object per rule

    def classify(self, path: str) -> TierDecision:
        """The first matching rule's decision for a root-relative POSIX path.

        A path no rule matches (possible only with the built-in rules turned off) is LOW.
        Decisions are remembered: a pack classifies each path once per target.
        """
        known = self._memo.get(path)
        if known is None:
            known = self._memo[path] = self._classify(path)
        return known

    def _classify(self, path: str) -> TierDecision:
        for index, spec in enumerate(self._specs):
            if spec.match_file(path):
                return self.decision_at(index)
        return self.decision_at(len(self.rules))

    def decision_at(self, index: int) -> TierDecision:
        """The decision of the rule at ``index`` (``len(rules)``: no rule matched). Decisions
        are immutable, so every path a rule decides shares one object."""
        index = min(index, len(self.rules))
        known = self._decisions.get(index)
        if known is None:
            known = self._decisions[index] = self._decision(index)
        return known

    def _decision(self, index: int) -> TierDecision:
        if index >= len(self.rules):
            return TierDecision("low", NO_MATCH_REASON, False, MIN_WEIGHT, len(self.rules))
        rule = self.rules[index]
        weight = TIER_WEIGHTS[rule.tier] if rule.priority is None else rule.priority
        weight = max(MIN_WEIGHT, min(MAX_WEIGHT, weight))
        return TierDecision(rule.tier, rule.reason, rule.required, weight, index)

    def describe(self, index: int) -> str:
        """The rule at ``index`` in words: where it comes from, its globs, tier and weight."""
        if index >= len(self.rules):
            return NO_MATCH_REASON
        rule = self.rules[index]
        d = self.decision_at(index)
        where = "built-in rule" if rule.origin == "default" else "configured rule"
        required = ", required" if rule.required else ""
        globs = ", ".join(rule.globs[:6]) + (", ..." if len(rule.globs) > 6 else "")
        return (
            f"{where} #{rule.index + 1} ({globs}): {rule.reason!r}, at most {rule.tier}, "
            f"weight class {d.weight}{required}"
        )

    def remember(self, path: str, index: int) -> None:
        """Record a decision known from an earlier run (same rules), sparing the match."""
        self._memo[path] = self.decision_at(index)


def rules_for_scope(config: Config, scope: Scope) -> TierRules:
    """The rules a scope classifies with: its own, then the global (and built-in) ones."""
    return TierRules((*scope.rules, *config.rules))


def demote(tier: str) -> str | None:
    """The next tier down: high -> medium -> low -> None."""
    if tier not in TIER_ORDER:
        raise ValueError(f"unknown tier {tier!r}")
    return {"high": "medium", "medium": "low", "low": None}[tier]
