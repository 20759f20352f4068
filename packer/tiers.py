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

A rule may match on age (`packer.rules`: a date in the file name, counted to ``now``). ``now``
belongs to a `TierRules`, given when it is made and never changed, so its remembered decisions
are those of one day: another day is another `TierRules`. Without ``now``, no age rule matches.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packer.config import Config, Scope, glob_spec
from packer.rules import DEFAULT_RULES, TIERS, Rule, age_days
from packer.wildmatch import Key, folder_keys, name_keys

__all__ = [
    "DEFAULT_RULES",
    "TIER_ORDER",
    "TierDecision",
    "TierRules",
    "demote",
    "describe_age",
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
    """An ordered list of rules with each rule's globs compiled once, classifying at one day
    (``now``; None: no age rule matches)."""

    def __init__(self, rules: Sequence[Rule], *, now: dt.date | None = None) -> None:
        for rule in rules:
            if rule.tier not in TIERS:
                raise ValueError(f"rule {rule.globs!r} has unknown tier {rule.tier!r}")
        self.rules = tuple(rules)
        self.now = now
        self._aged = any(rule.aged for rule in self.rules)
        # each rule's globs: one regular expression when none is a negation (packer.wildmatch)
        self._specs = [glob_spec(rule.globs) for rule in self.rules]
        # The rules a path can match, found from its keys (`packer.wildmatch.path_keys`): each
        # rule under every key its globs require, or among those tried for every path; those
        # a folder's keys name are worked out once per folder.
        self._by_key: dict[Key, list[int]] = {}
        self._always: list[int] = []
        for index, spec in enumerate(self._specs):
            keys = spec.keys()
            if keys is None:
                self._always.append(index)
            for key in keys or ():
                self._by_key.setdefault(key, []).append(index)
        # Decisions by path. An age rule's decision depends on now as well, which is fixed for
        # the life of this object: the memo never serves one day's decision on another.
        self._memo: dict[str, TierDecision] = {}
        self._by_folder: dict[str, frozenset[int]] = {}
        self._decisions: dict[int, TierDecision] = {}  # one shared object per rule

    def classify(self, path: str) -> TierDecision:
        """The first matching rule's decision for a root-relative POSIX path.

        A path no rule matches (possible only with the built-in rules turned off, or with age
        rules only) is LOW, with `rule_index` ``len(rules)``. Decisions are remembered: a pack
        classifies each path once per target.
        """
        known = self._memo.get(path)
        if known is None:
            age = age_days(path, self.now) if self._aged else None
            known = self._memo[path] = self.classify_aged(path, age)
        return known

    def classify_aged(self, path: str, age: int | None) -> TierDecision:
        """The decision for ``path`` as if it were ``age`` days old (None: undated), whatever
        its name and ``now`` say. Not remembered. Only the rules the path's keys can match
        are tried, in their order: the first that matches decides, as if all were tried."""
        folder, _, name = path.rpartition("/")
        within = self._by_folder.get(folder)
        if within is None:
            within = self._by_folder[folder] = frozenset(
                self._named(folder_keys(folder), self._always)
            )
        found = self._named(name_keys(name, top=not folder), within)
        for index in sorted(found):
            if self.rules[index].accepts_age(age) and self._specs[index].match_file(path):
                return self.decision_at(index)
        return self.decision_at(len(self.rules))

    def _named(self, keys: set[Key], given: Iterable[int]) -> set[int]:
        """``given`` and the rules any of ``keys`` names."""
        found = set(given)
        by_key = self._by_key
        for key in keys:
            rules = by_key.get(key)
            if rules is not None:
                found.update(rules)
        return found

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
        where = {"default": "built-in rule", "config": "configured rule"}.get(
            rule.origin, f"{rule.origin} rule"
        )
        required = ", required" if rule.required else ""
        globs = ", ".join(rule.globs[:6]) + (", ..." if len(rule.globs) > 6 else "")
        return (
            f"{where} #{rule.index + 1} ({globs}{describe_age(rule)}): {rule.reason!r}, at most "
            f"{rule.tier}, weight class {d.weight}{required}"
        )

    def remember(self, path: str, index: int) -> None:
        """Record a decision known from an earlier run (same rules, same ``now``), sparing the
        match."""
        self._memo[path] = self.decision_at(index)


def describe_age(rule: Rule) -> str:
    """A rule's age condition in words (``, 8 to 30 days old``), or nothing."""
    low, high = rule.min_age_days, rule.max_age_days
    if low is None and high is None:
        return ""
    if high is None:
        return f", at least {low} days old"
    if low is None or low == 0:
        return f", at most {high} days old"
    return f", {low} to {high} days old"


def rules_for_scope(config: Config, scope: Scope, *, now: dt.date | None = None) -> TierRules:
    """The rules a scope classifies with, at ``now``: its own, then the global (and built-in)
    ones."""
    return TierRules((*scope.rules, *config.rules), now=now)


def demote(tier: str) -> str | None:
    """The next tier down: high -> medium -> low -> None."""
    if tier not in TIER_ORDER:
        raise ValueError(f"unknown tier {tier!r}")
    return {"high": "medium", "medium": "low", "low": None}[tier]
