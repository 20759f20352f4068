"""Comparing two packs: what was added, removed, changed or re-tiered, with token deltas."""

from __future__ import annotations

from dataclasses import dataclass

from cas.manifest import Entry, Manifest


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    change: str  # added | removed | changed | retiered | changed+retiered
    old_tier: str | None
    new_tier: str | None
    old_tokens: int
    new_tokens: int

    @property
    def delta(self) -> int:
        return self.new_tokens - self.old_tokens


@dataclass(frozen=True, slots=True)
class PackDiff:
    changes: tuple[Change, ...]
    old_tokens: int
    new_tokens: int

    def by_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if kind in c.change.split("+")]


def _same_content(a: Entry, b: Entry) -> bool:
    if a.digest is None or b.digest is None:
        return a.digest is None and b.digest is None and a.size == b.size
    return a.digest == b.digest


def diff(old: Manifest, new: Manifest) -> PackDiff:
    before = {e.path: e for e in old.entries}
    after = {e.path: e for e in new.entries}
    changes: list[Change] = []
    for path in sorted(before.keys() | after.keys(), key=lambda p: p.encode("utf-8")):
        a, b = before.get(path), after.get(path)
        if a is None and b is not None:
            changes.append(Change(path, "added", None, b.tier, 0, b.tokens))
        elif b is None and a is not None:
            changes.append(Change(path, "removed", a.tier, None, a.tokens, 0))
        elif a is not None and b is not None:
            kinds = []
            if not _same_content(a, b):
                kinds.append("changed")
            if a.tier != b.tier:
                kinds.append("retiered")
            if kinds:
                changes.append(Change(path, "+".join(kinds), a.tier, b.tier, a.tokens, b.tokens))
    return PackDiff(tuple(changes), _total(old), _total(new))


def _total(m: Manifest) -> int:
    tokens = m.totals.get("tokens")
    if isinstance(tokens, dict) and isinstance(tokens.get("markdown"), int):
        return int(tokens["markdown"])
    return sum(e.tokens for e in m.entries)
