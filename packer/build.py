"""`cas pack`: scan, ingest, tier, fit each target's budget, write manifests.

Order of effects, so that a crash at any moment leaves nothing that lies:
1. every body and summary is committed to the store (batched);
2. each manifest is encoded, stored in the store, and committed;
3. only then is ``manifests/<scope>[.<target>].pack`` written, atomically.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cas import manifest as mf
from cas.digest import Digest
from cas.errors import BudgetError, NotFound
from cas.fsutil import atomic_write
from cas.store import Store
from packer.budget import Item, demote_until, price_lines, reason_at
from packer.cache import Cache
from packer.config import Config, Scope, Target, assign_scopes
from packer.ingest import Fact, Ingest, IngestReport
from packer.render import FORMATS, lite_layout, renderer
from packer.scan import ScanNote, decode_text, scan
from packer.summarize import SUMMARY_VERSION, summarize
from packer.tiers import TierRules
from packer.tokens import TokenCounter

MANIFEST_DIR = "manifests"
# Levels of compaction of the omitted list, tried in order when a pack cannot fit otherwise.
LOW_LEVELS = (0, 1, 2)

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class PackResult:
    scope: str
    target: str | None
    name: str
    path: Path
    digest: Digest
    manifest: mf.Manifest
    written: bool
    tokens: dict[str, int]


@dataclass(slots=True)
class PackReport:
    root: Path
    results: list[PackResult] = field(default_factory=list)
    notes: list[ScanNote] = field(default_factory=list)
    withheld: list[tuple[str, str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    files: int = 0
    bytes_read: int = 0
    stat_hits: int = 0


def manifest_name(scope: str, target: str | None) -> str:
    return f"{scope}.{target}" if target else scope


class _Stopwatch:
    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self.t)
        self.t = now


class Packer:
    def __init__(
        self,
        root: Path,
        store: Store,
        config: Config,
        *,
        allow_secrets: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> None:
        self.root = root
        self.store = store
        self.config = config
        self.allow_secrets = allow_secrets
        self.progress = progress
        self.counter = TokenCounter(config.tokenizer)
        self.cache = Cache(store)
        self._summaries: dict[Digest, tuple[str, int]] = {}
        # Summary texts by their own digest, so trial renders need not store them; only the
        # summaries a final manifest references are stored.
        self._summary_texts: dict[Digest, str] = {}

    # --- the whole run ----------------------------------------------------------------------

    def run(
        self,
        *,
        scopes: Sequence[str] = (),
        targets: Sequence[str] = (),
        baseline: Digest | None = None,
        check: bool = False,
    ) -> PackReport:
        report = PackReport(self.root)
        watch = _Stopwatch(report.timings)
        wanted = self._select(scopes)
        store_rel = _relative_inside(self.store.path, self.root)
        excluded = [MANIFEST_DIR, *([store_rel] if store_rel else [])]
        progress = self.progress
        scanned = scan(
            self.root,
            exclude_dirs=excluded,
            progress=(lambda n: progress("scan", n, 0)) if progress else None,
        )
        report.notes.extend(scanned.notes)
        by_path = {f.path: f for f in scanned.files}
        membership = assign_scopes(self.config, by_path)
        watch.lap("scan")

        todo = sorted(
            {p for s in wanted for p in membership.get(s.name, [])}, key=lambda p: p.encode()
        )
        report.files = len(todo)
        with self.store.batch() as batch:
            ingest = Ingest(batch, self.cache, self.counter, allow_secrets=self.allow_secrets)
            tick = (lambda i, _n: progress("store", i, len(todo))) if progress else None
            ingested: IngestReport = ingest.run([by_path[p] for p in todo], tick)
        report.notes.extend(ingested.notes)
        report.withheld = ingested.withheld
        report.bytes_read = ingested.bytes_read
        report.stat_hits = ingested.stat_hits
        facts = {f.path: f for f in ingested.facts}
        watch.lap("ingest")

        for scope in wanted:
            rules = TierRules([*scope.rules, *self.config.rules])
            scope_facts = [facts[p] for p in membership.get(scope.name, []) if p in facts]
            for target in self._targets(scope, targets):
                result = self._pack_target(scope, target, scope_facts, rules, baseline, check)
                report.results.append(result)
                if check and result.written:
                    report.stale.append(result.name)
        watch.lap("tier")
        self.cache.flush()
        watch.lap("cache")
        return report

    def _select(self, names: Sequence[str]) -> list[Scope]:
        scopes = {s.name: s for s in self.config.scopes}
        for n in names:
            if n not in scopes:
                raise NotFound("scope", n, f"configured scopes: {', '.join(sorted(scopes))}")
        return [scopes[n] for n in names] if names else list(self.config.scopes)

    @staticmethod
    def _targets(scope: Scope, names: Sequence[str]) -> list[Target]:
        if not names:
            return list(scope.targets)
        return [t for t in scope.targets if t.name in names or (not t.name and "" in names)]

    # --- one target ---------------------------------------------------------------------------

    def _pack_target(
        self,
        scope: Scope,
        target: Target,
        facts: list[Fact],
        rules: TierRules,
        baseline: Digest | None,
        check: bool,
    ) -> PackResult:
        md = renderer("markdown")
        count = self.counter.count
        items: list[Item] = []
        by_path: dict[str, Fact] = {}
        for fact in facts:
            decision = rules.classify(fact.path)
            tier = "low" if fact.forced else decision.tier
            reason = fact.forced or decision.reason
            item = Item(
                path=fact.path,
                rule_tier="low" if fact.forced else decision.tier,
                rule_reason=reason,
                priority=decision.priority,
                required=decision.required and not fact.forced,
                tier=tier,
                fixed=fact.forced is not None,
                kind=fact.kind,
            )
            high_lines, medium_lines, low_line = price_lines(item, md, count)
            item.high_cost = high_lines + fact.body_tokens
            item.low_cost = low_line
            if item.tier == "medium":
                item.medium_cost = medium_lines + self._summary(fact)[1]
                if item.medium_cost >= item.high_cost:
                    item.tier = "high"
            item.medium_lines = medium_lines
            items.append(item)
            by_path[fact.path] = fact

        def price_medium(item: Item) -> int:
            return item.medium_lines + self._summary(by_path[item.path])[1]

        budget = target.budget
        parent = baseline
        name = manifest_name(scope.name, target.name or None)

        def build(level: int) -> tuple[mf.Manifest, dict[str, int]]:
            m = self._manifest(scope, target, items, by_path, parent, level)
            tokens = {
                fmt: count(lite_layout(m, self._fetch, fmt, low_level=level).text())
                for fmt in FORMATS
            }
            return m, tokens

        m, tokens = build(0)
        total = tokens["markdown"]
        level = 0
        if max(tokens.values()) > budget.max:
            estimate = sum(i.cost() for i in items)
            overhead = total - estimate
            goal = budget.target - overhead
            demote_until(items, estimate, goal, price_medium)
            m, tokens = build(level)
            # The estimate prices markdown exactly; the other formats are checked for real and
            # demotion continues, a little further each round, until every format fits.
            squeeze = 0
            while max(tokens.values()) > budget.max:
                over = max(tokens.values()) - budget.target
                squeeze += max(over, 1)
                estimate = sum(i.cost() for i in items)
                before = [i.tier for i in items]
                demote_until(items, estimate, estimate - squeeze, price_medium)
                if [i.tier for i in items] == before:
                    if level + 1 < len(LOW_LEVELS):
                        level += 1
                    else:
                        break
                m, tokens = build(level)
        if max(tokens.values()) > budget.max:
            required = [
                (i.path, i.cost())
                for i in sorted(items, key=lambda i: i.path.encode())
                if i.required
            ]
            raise BudgetError(
                name, budget.max, required or [("(index of omitted files)", max(tokens.values()))]
            )
        m = self._manifest(scope, target, items, by_path, parent, level, tokens=tokens)
        data = mf.encode(m)
        digest = Digest.of(data)
        path = self.root / MANIFEST_DIR / f"{name}.pack"
        if check:
            current = path.read_bytes() if path.is_file() else None
            return PackResult(
                scope.name, target.name or None, name, path, digest, m, current != data, tokens
            )
        # Bodies were committed with the ingest batch; the summaries this manifest references and
        # the manifest itself are committed together, before its file is written, so a file
        # never names anything the store lacks.
        with self.store.batch() as batch:
            for e in m.entries:
                if e.summary is not None:
                    batch.put(self._summary_texts[e.summary].encode("utf-8"))
            batch.put(data)
        written = atomic_write(path, data)
        return PackResult(scope.name, target.name or None, name, path, digest, m, written, tokens)

    def _manifest(
        self,
        scope: Scope,
        target: Target,
        items: list[Item],
        facts: dict[str, Fact],
        parent: Digest | None,
        level: int,
        *,
        tokens: dict[str, int] | None = None,
    ) -> mf.Manifest:
        entries = []
        for item in items:
            fact = facts[item.path]
            summary = self._summary_digest(fact) if item.tier == "medium" else None
            entries.append(
                mf.Entry(
                    path=item.path,
                    kind=fact.kind,
                    digest=fact.digest,
                    size=fact.size,
                    tier=item.tier,
                    tokens=item.cost(),
                    summary=summary,
                    reason=reason_at(item),
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
        totals["low_level"] = level
        if tokens is not None:
            totals["tokens"] = dict(tokens)
        return mf.Manifest(
            scope=scope.name,
            target=target.name or None,
            tokenizer=self.counter.name,
            budget_target=target.budget.target,
            budget_max=target.budget.max,
            entries=tuple(entries),
            totals=totals,
            parent=parent,
        )

    # --- summaries ----------------------------------------------------------------------------

    def _fetch(self, digest: Digest) -> str:
        text = self._summary_texts.get(digest)
        return text if text is not None else decode_text(self.store.get(digest))

    def _summary(self, fact: Fact) -> tuple[str, int]:
        """(summary text, tokens of its fenced body), cached by content digest."""
        assert fact.digest is not None
        key = fact.digest
        if key in self._summaries:
            return self._summaries[key]
        from packer.summarize import language_for

        lang = language_for(fact.path) or "text"
        ns = f"summary:{SUMMARY_VERSION}:{lang}"
        cached = self.cache.get(ns, bytes(key))
        if cached is not None:
            text = cached.decode("utf-8")
        else:
            text = summarize(fact.path, decode_text(self.store.get(fact.digest)))
            self.cache.put(ns, bytes(key), text.encode("utf-8"))
        tokens = self.counter.count(renderer("markdown").section_body(text, ""))
        self._summaries[key] = (text, tokens)
        return text, tokens

    def _summary_digest(self, fact: Fact) -> Digest:
        text, _ = self._summary(fact)
        digest = Digest.of(text.encode("utf-8"))
        self._summary_texts[digest] = text
        return digest


def _relative_inside(path: Path, root: Path) -> str | None:
    try:
        rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None
