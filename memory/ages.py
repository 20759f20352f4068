"""Age tiers and retention of daily logs: how old a log is decides how much of it a memory pack
shows, and when it is pruned.

A daily log's age is the whole days from its date (its path, ``logs/YYYY-MM-DD.md``; never a
file time) to the day asked about (``now``, given by the caller). The tiers are packer rules
(`packer.rules`, each with an age condition, classified by `packer.tiers` at ``now``), in
order, the first match deciding:

=====================================  ========  ==================================
age (days)                             tier      a memory pack shows
=====================================  ========  ==================================
0 .. ``full_days`` (7)                 high      the log in full
.. ``summary_days`` (30)               medium    its summary (`memory.packs.summarize`)
.. ``keep_days`` (90)                  low       a pointer: one line naming it
older                                  None      nothing: it is past the retention
=====================================  ========  ==================================

The numbers are the ``[memory]`` table of the project's ``cas.toml`` (`packer.config`,
`MemoryConfig`). A log dated after ``now`` is not yet written as far as ``now`` is concerned:
no age rule matches it, so it has no tier. A log no rule matches at an age of 0 or more is past
the retention (`past_retention`): `memory.pruning` removes those.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from typing import Final

from memory import entries
from memory.state import State
from packer.config import MemoryConfig, load_config
from packer.rules import Rule
from packer.tiers import TierRules

__all__ = [
    "age_days",
    "age_rules",
    "load_memory_config",
    "log_tiers",
    "past_retention",
    "prune_line",
    "tier_at",
    "tier_of",
]

TIERS: Final = ("high", "medium", "low")
# What the age rules match: the daily logs, and nothing else of a memory.
LOG_GLOBS: Final = (f"/{entries.LOGS}*.md",)


def age_rules(config: MemoryConfig) -> tuple[Rule, ...]:
    """The rules ``config`` sets, in match order: packer rules with an age condition."""
    days = (config.full_days, config.summary_days, config.keep_days)
    shows = ("in full", "summary", "pointer")
    return tuple(
        Rule(LOG_GLOBS, tier, f"at most {n} days old: {what}", False, None, i, "memory", 0, n)
        for i, (tier, n, what) in enumerate(zip(TIERS, days, shows, strict=True))
    )


def log_tiers(config: MemoryConfig, now: str) -> TierRules:
    """The classifier of daily logs at ``now`` (``YYYY-MM-DD``): one per day, as `TierRules`
    remembers its decisions for the day it was made for."""
    return TierRules(age_rules(config), now=dt.date.fromisoformat(entries.check_date(now)))


def load_memory_config(root: str | os.PathLike[str]) -> MemoryConfig:
    """The ``[memory]`` settings of the project at ``root`` (the defaults without any)."""
    return load_config(root).memory


def age_days(date: str, now: str) -> int:
    """Whole days from ``date`` to ``now`` (both ``YYYY-MM-DD``); negative for a later date."""
    then = dt.date.fromisoformat(entries.check_date(date))
    return (dt.date.fromisoformat(entries.check_date(now)) - then).days


def _tier(rules: TierRules, path: str, age: int | None) -> str | None:
    decision = rules.classify(path) if age is None else rules.classify_aged(path, age)
    return None if decision.rule_index >= len(rules.rules) else decision.tier


def tier_at(path: str, rules: TierRules) -> str | None:
    """The tier of the daily log ``path`` by ``rules`` (`log_tiers`): high, medium, low, or
    None (past the retention, dated after the day asked about, or not a daily log)."""
    return _tier(rules, path, None)


def tier_of(age: int, config: MemoryConfig) -> str | None:
    """The tier of a daily log ``age`` days old, by the same rules: high, medium, low, or None
    (past the retention, or dated after the day asked about)."""
    return _tier(_undated(config), entries.LOGS + "log.md", age)


@functools.lru_cache(maxsize=16)
def _undated(config: MemoryConfig) -> TierRules:
    return TierRules(age_rules(config))  # no now: classify_aged only, which remembers nothing


# --- retention ----------------------------------------------------------------------------------


def past_retention(state: State, now: str, config: MemoryConfig) -> list[tuple[str, int]]:
    """The daily logs of ``state`` older than ``keep_days`` at ``now``, oldest first: those
    no age rule matches although they are not dated after ``now``."""
    rules = log_tiers(config, now)
    out = []
    for path in state.files:
        date = entries.date_of(path)
        if date is not None:
            age = age_days(date, now)
            if age >= 0 and tier_at(path, rules) is None:
                out.append((path, age))
    return sorted(out, key=lambda item: (-item[1], item[0]))


def prune_line(path: str, age: int, keep_days: int) -> str:
    return f"prune {path}: {age} days old, past the {keep_days}-day retention"
