"""`cas pack`: scan, ingest, tier, fit each target's budget, write manifests.

Order of effects, so that a crash at any moment leaves nothing that lies:
1. every body and summary is committed to the store (batched);
2. each manifest is encoded, stored in the store, and committed;
3. only then is ``manifests/<scope>[.<target>].pack`` written, atomically. Before the first
   one, a manifests folder that is not the store's default one (a store shared through
   ``CAS_STORE``, or found above a nested repository) is recorded in the store as a gc root,
   so a gc beside the store keeps what the packs there reference (`cas.roots`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import blake3
import msgpack

from cas import manifest as mf
from cas import roots
from cas.digest import Digest
from cas.errors import BudgetError, CasError, OutputError, UnknownName
from cas.fsutil import atomic_write
from cas.lease import Lease
from cas.residency import trim_heap
from cas.store import Store
from packer.budget import Item, demote_until, price_lines, reason_at
from packer.cache import Cache
from packer.config import Config, Scope, Target, assign_scopes
from packer.ingest import RENDER_VERSION, Fact, Ingest, IngestReport
from packer.render import FORMATS, fence_language, lite_layout, low_pieces, renderer
from packer.scan import ScanNote, decode_text, scan
from packer.secrets import redact_path
from packer.summarize import SUMMARY_VERSION, summarize
from packer.tiers import TierRules
from packer.tokens import TokenCounter

MANIFEST_DIR = "manifests"
MEMO_NS = "memo"
# Per scope's rules: path -> (forced, kind, rule index, line prices), so an unchanged path is
# neither matched against the rules nor are its index and omitted lines rendered and counted.
PRICE_NS = "price"
# Bump when the way a manifest is derived from its inputs changes (tiering, budgets, layout).
MEMO_VERSION = "2"
# Levels of compaction of the omitted list, tried in order when a pack cannot fit otherwise.
LOW_LEVELS = (0, 1, 2, 3, 4)

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
    redacted: list[tuple[str, str]] = field(default_factory=list)  # stored with secrets cut out
    stale: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # Where the ingest workers and tiering spent their time (see `PackReport.work`'s keys):
    # worker seconds overlap, so these do not add up to the stages.
    work: dict[str, float] = field(default_factory=dict)
    ingest_mode: str = "threads"
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
        self._line_counts: dict[str, int] = {}
        self._lease: Lease | None = None
        self._folder_ready = False
        self._price_tables: dict[bytes, dict[str, list[object]]] = {}
        self._work: dict[str, float] = {}

    # --- the whole run ----------------------------------------------------------------------

    def run(
        self,
        *,
        scopes: Sequence[str] = (),
        targets: Sequence[str] = (),
        baseline: Digest | None = None,
        check: bool = False,
    ) -> PackReport:
        # What was asked for, and where it goes, is checked before any work is done.
        wanted = self._select(scopes)
        self._check_targets(wanted, targets)
        if not check:
            self._check_folder()
        # The lease tells a concurrent gc to keep off from before the first blob is looked up
        # until the last manifest file is written: in between, only the lease says the blobs
        # this run found present (and so did not write again) are wanted.
        with Lease(self.store, "pack") as lease:
            self._lease = lease
            try:
                return self._run(wanted, targets, baseline, check)
            finally:
                self._lease = None

    def _run(
        self,
        wanted: list[Scope],
        targets: Sequence[str],
        baseline: Digest | None,
        check: bool,
    ) -> PackReport:
        report = PackReport(self.root)
        watch = _Stopwatch(report.timings)
        store_rel = _relative_inside(self.store.path, self.root)
        excluded = [MANIFEST_DIR, *([store_rel] if store_rel else [])]
        progress = self.progress
        scanned = scan(
            self.root,
            exclude_dirs=excluded,
            progress=(lambda n: progress("scan", n, 0)) if progress else None,
        )
        # A note names a path the walk could not use; a secret in that path is cut out of it.
        report.notes.extend(ScanNote(redact_path(n.path), n.reason) for n in scanned.notes)
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
        trim_heap()  # the ingest's frames and buffers are freed: keep the peak down
        report.withheld = ingested.withheld
        report.redacted = ingested.redacted
        report.bytes_read = ingested.bytes_read
        report.work.update({f"ingest: {k}": v for k, v in ingested.work.items()})
        report.ingest_mode = ingested.mode
        report.stat_hits = ingested.stat_hits
        facts = {f.path: f for f in ingested.facts}
        watch.lap("ingest")

        try:
            for scope in wanted:
                rules = TierRules([*scope.rules, *self.config.rules])
                scope_facts = [facts[p] for p in membership.get(scope.name, []) if p in facts]
                for target in self._targets(scope, targets):
                    result = self._pack_target(scope, target, scope_facts, rules, baseline, check)
                    report.results.append(result)
                    if check and result.written:
                        report.stale.append(result.name)
            watch.lap("tier")
            report.work.update({f"tier: {k}": v for k, v in sorted(self._work.items())})
        finally:
            # Derived facts are worth keeping even when a budget turned out impossible.
            self.cache.flush()
            watch.lap("cache")
        return report

    def _source(self) -> str:
        return self.config.source or "the default configuration (no cas.toml)"

    def _select(self, names: Sequence[str]) -> list[Scope]:
        scopes = {s.name: s for s in self.config.scopes}
        for n in names:
            if n not in scopes:
                raise UnknownName("scope", n, sorted(scopes), self._source())
        return [scopes[n] for n in dict.fromkeys(names)] if names else list(self.config.scopes)

    def _check_targets(self, wanted: list[Scope], names: Sequence[str]) -> None:
        """Every target named must belong to a selected scope: a typo packs nothing silently
        otherwise. ``""`` names the unnamed target of a scope without targets."""
        known = {t.name for s in wanted for t in s.targets}
        for n in names:
            if n not in known:
                named = sorted(t for t in known if t)
                hint = "" if named else "a scope without [scopes.NAME.targets] packs one pack"
                raise UnknownName("target", n, named, self._source(), hint)

    def _folder(self) -> Path:
        return self.root / MANIFEST_DIR

    def _check_folder(self) -> None:
        """Refuse early, before any work, when the manifests folder cannot be one."""
        folder = self._folder()
        problem = roots.RootDir(folder, "project").missing_problem()
        if problem is not None:
            raise OutputError(
                str(folder), f"it {problem}; cas pack writes its packs in that folder: move it away"
            )

    def _prepare_folder(self) -> None:
        """Create the manifests folder and make it a gc root, before the first manifest file in
        it names any blob. The lease is held: a gc waits for it, or runs after this commits and
        reads the recorded folder in its deleting transaction."""
        if self._folder_ready:
            return
        self._check_folder()
        folder = self._folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(str(folder), exc.strerror or str(exc)) from None
        roots.keep_manifest_dir(self.store, folder)
        self._folder_ready = True

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
        name = manifest_name(scope.name, target.name or None)
        memo_key = self._memo_key(scope, target, facts, rules, baseline)
        reused = self._reuse(memo_key)
        if reused is not None:
            m, tokens, data = reused
            return self._finish(scope, target, name, m, tokens, check, memo_key, data)
        items, by_path = self._price(facts, rules)
        m, tokens, level = self._fit(scope, target, items, by_path, baseline)
        m = self._manifest(scope, target, items, by_path, baseline, level, tokens=tokens)
        return self._finish(scope, target, name, m, tokens, check, memo_key)

    def _price(self, facts: list[Fact], rules: TierRules) -> tuple[list[Item], dict[str, Fact]]:
        """Each file's cost at each tier, in markdown tokens. Summaries are priced lazily: most
        files of a large tree end up omitted and never need one. A path priced by an earlier
        run with the same rules, tokenizer and layout reuses that run's rule and line prices."""
        md = renderer("markdown")
        key, table = self._price_table(rules)
        fresh: dict[str, list[object]] = {}
        items: list[Item] = []
        by_path: dict[str, Fact] = {}
        for fact in facts:
            cached = _price_row(table.get(fact.path), fact)
            if cached is not None and cached[0] > len(rules.rules):
                cached = None
            if cached is not None:
                rules.remember(fact.path, cached[0])
            decision = rules.classify(fact.path)
            reason = decision.reason
            if fact.redacted:
                reason = f"{reason}; secrets redacted: {fact.redacted}"
            item = Item(
                path=fact.path,
                rule_tier="low" if fact.forced else decision.tier,
                rule_reason=fact.forced or reason,
                priority=decision.priority,
                required=decision.required and not fact.forced,
                tier="low" if fact.forced else decision.tier,
                fixed=fact.forced is not None,
                kind=fact.kind,
            )
            if cached is not None:
                high_lines, medium_lines, low_line = cached[1:]
            else:
                high_lines, medium_lines, low_line = price_lines(item, md, self._count_line)
            fresh[fact.path] = [
                _row_key(fact), fact.kind, decision.rule_index, high_lines, medium_lines, low_line
            ]  # fmt: skip
            item.size = fact.size
            item.high_lines = high_lines
            item.low_cost = low_line
            item.medium_lines = medium_lines
            items.append(item)
            by_path[fact.path] = fact
        if fresh != table:
            self._price_tables[key] = fresh
            self.cache.put(PRICE_NS, key, msgpack.packb(fresh, use_bin_type=True))
        return items, by_path

    def _price_table(self, rules: TierRules) -> tuple[bytes, dict[str, list[object]]]:
        head = [MEMO_VERSION, RENDER_VERSION, self.counter.name, repr(rules.rules)]
        key = bytes(blake3.blake3(msgpack.packb(head, use_bin_type=True)).digest())
        table = self._price_tables.get(key)
        if table is None:
            raw = self.cache.get(PRICE_NS, key)
            try:
                loaded = msgpack.unpackb(raw, raw=False) if raw is not None else {}
            except (ValueError, msgpack.ExtraData):
                loaded = {}  # a damaged cache entry is a miss
            table = loaded if isinstance(loaded, dict) else {}
            self._price_tables[key] = table
        return key, table

    def _count_line(self, text: str) -> int:
        """Index and omitted lines repeat across targets and runs: count each text once."""
        known = self._line_counts.get(text)
        if known is None:
            start = time.perf_counter()
            known = self._line_counts[text] = self.counter.count(text)
            self._spent("tokenize", start)
        return known

    def _spent(self, step: str, start: float) -> None:
        self._work[step] = self._work.get(step, 0.0) + time.perf_counter() - start

    def _resolver(self, by_path: dict[str, Fact]) -> Callable[[list[Item]], None]:
        """Make the given items' costs exact: count bodies, price summaries. A MEDIUM file whose
        summary is not smaller than its body is shown in full instead."""

        def resolve(items: list[Item]) -> None:
            for item in items:
                fact = by_path[item.path]
                if item.body is None and fact.digest is not None and fact.text:
                    item.body = self._body_tokens(fact)
                elif item.body is None:
                    item.body = 0
                if item.tier == "medium" and item.medium_cost is None:
                    item.medium_cost = max(
                        item.medium_lines + self._summary(fact)[1], item.low_cost
                    )
                    if item.medium_cost >= item.high_cost:
                        item.tier = "high"

        return resolve

    def _body_tokens(self, fact: Fact) -> int:
        """Tokens of a file's fenced body as the markdown render shows it, by content."""
        assert fact.digest is not None
        lang = fence_language(fact.path)
        ns = f"tokens:{self.counter.name}:{RENDER_VERSION}:{lang}"
        cached = self.cache.get(ns, bytes(fact.digest))
        if cached is not None:
            return int(cached)
        start = time.perf_counter()
        text = decode_text(self.store.get(fact.digest))
        count = self.counter.count(renderer("markdown").section_body(text, lang))
        self.cache.put(ns, bytes(fact.digest), str(count).encode())
        self._spent("tokenize", start)
        return count

    def _fit(
        self,
        scope: Scope,
        target: Target,
        items: list[Item],
        by_path: dict[str, Fact],
        parent: Digest | None,
    ) -> tuple[mf.Manifest, dict[str, int], int]:
        budget = target.budget
        count = self.counter.count
        resolve = self._resolver(by_path)

        def price_medium(item: Item) -> int:
            return item.medium_lines + self._summary(by_path[item.path])[1]

        def build(level: int) -> tuple[mf.Manifest, dict[str, int]]:
            resolve([i for i in items if i.tier != "low"])
            m = self._manifest(scope, target, items, by_path, parent, level)
            tokens = {
                fmt: count(lite_layout(m, self._fetch, fmt, low_level=level).text())
                for fmt in FORMATS
            }
            return m, tokens

        # A lower bound first (bodies and summaries not yet counted enter at their headings'
        # cost): a pack far over its budget is never rendered whole, nor its files counted and
        # summarized, before demotion.
        level = 0
        if sum(i.cost() for i in items) <= budget.max:
            m, tokens = build(level)
            if max(tokens.values()) <= budget.max:
                return m, tokens, level
        resolve([i for i in items if i.required and i.tier != "low"])
        overhead = self._overhead(scope, target, items, by_path, parent)
        level = self._low_level(items, budget.target - overhead)
        fixed_low = self._low_section(items, level)
        if level > 0:
            for item in items:
                item.low_cost = 0
        demote_until(items, budget.target - overhead - fixed_low, resolve, price_medium)
        m, tokens = build(level)
        # The estimate prices markdown; every format is then checked for real, and demotion
        # (then compaction of the omitted list) continues a little further each round.
        squeeze = 0
        while max(tokens.values()) > budget.max:
            squeeze += max(max(tokens.values()) - budget.target, 1)
            estimate = sum(i.cost() for i in items)
            before = [i.tier for i in items]
            demote_until(items, estimate - squeeze, resolve, price_medium)
            if [i.tier for i in items] == before:
                if level + 1 >= len(LOW_LEVELS):
                    break
                level += 1
                for item in items:
                    item.low_cost = 0
            m, tokens = build(level)
        if max(tokens.values()) > budget.max:
            required = [
                (i.path, i.cost())
                for i in sorted(items, key=lambda i: i.path.encode())
                if i.required
            ]
            name = manifest_name(scope.name, target.name or None)
            raise BudgetError(
                name, budget.max, required or [("(index of omitted files)", max(tokens.values()))]
            )
        return m, tokens, level

    def _overhead(
        self,
        scope: Scope,
        target: Target,
        items: list[Item],
        by_path: dict[str, Fact],
        parent: Digest | None,
    ) -> int:
        """Tokens of everything but the files' own lines: header, map, section frames."""
        saved = [(i.tier, i.medium_cost) for i in items]
        for i in items:
            i.tier, i.medium_cost = "low", i.medium_cost
        m = self._manifest(scope, target, items, by_path, parent, 4)
        layout = lite_layout(m, self._fetch, "markdown", low_level=4)
        for i, (tier, cost) in zip(items, saved, strict=True):
            i.tier, i.medium_cost = tier, cost
        r = renderer("markdown")
        frames = r.index_open() + r.index_close() + r.files_open() + r.files_close()
        head = "".join(layout.head) + frames + r.omitted_open() + r.omitted_close()
        return self.counter.count(head)

    def _low_section(self, items: list[Item], level: int) -> int:
        """Tokens of the omitted list at ``level`` if every file that may be demoted were
        omitted (an upper bound for the pack that results)."""
        if level == 0:
            return 0
        r = renderer("markdown")
        entries = [
            mf.Entry(path=i.path, digest=None, size=0, tier="low", tokens=0, reason=i.rule_reason)
            for i in items
            if not i.required and (i.tier == "low" or not i.fixed)
        ]
        return self.counter.count("".join(low_pieces(r, entries, level)))

    def _low_level(self, items: list[Item], room: int) -> int:
        """The least compaction of the omitted list that leaves the files that cannot be
        demoted room to fit: one line per file where that fits, coarser lists where not."""
        kept = sum(i.cost() for i in items if i.required or (i.fixed and i.tier != "low"))
        per_file = sum(i.low_cost for i in items if not i.required)
        if kept + per_file <= room:
            return 0
        for level in LOW_LEVELS[1:]:
            if kept + self._low_section(items, level) <= room:
                return level
        return LOW_LEVELS[-1]

    def _finish(
        self,
        scope: Scope,
        target: Target,
        name: str,
        m: mf.Manifest,
        tokens: dict[str, int],
        check: bool,
        memo_key: bytes,
        data: bytes | None = None,
    ) -> PackResult:
        data = data if data is not None else mf.encode(m)
        digest = Digest.of(data)
        path = self._folder() / f"{name}.pack"
        result_target = target.name or None
        if check:
            current = path.read_bytes() if path.is_file() else None
            return PackResult(
                scope.name, result_target, name, path, digest, m, current != data, tokens
            )
        # Bodies were committed with the ingest batch; the summaries this manifest references and
        # the manifest itself are committed together, before its file is written, so a file
        # never names anything the store lacks.
        with self.store.batch() as batch:
            for e in m.entries:
                if e.summary is not None and e.summary in self._summary_texts:
                    batch.put(self._summary_texts[e.summary].encode("utf-8"))
                elif e.summary is not None:
                    batch.touch(e.summary)
            batch.put(data)
        self.cache.put(MEMO_NS, memo_key, bytes(digest))
        self._prepare_folder()
        if self._lease is not None:
            self._lease.check()  # a gc that found the lease stale may have pruned our blobs
        written = atomic_write(path, data)
        return PackResult(scope.name, result_target, name, path, digest, m, written, tokens)

    # --- the memo: an unchanged input gives the manifest already made ---------------------------

    def _memo_key(
        self,
        scope: Scope,
        target: Target,
        facts: list[Fact],
        rules: TierRules,
        baseline: Digest | None,
    ) -> bytes:
        """A digest of everything a manifest is a function of: versions of the code that derives
        facts, the scope, target and rules, the tokenizer, the parent, and every file's facts."""
        h = blake3.blake3()
        head = [
            MEMO_VERSION, SUMMARY_VERSION, RENDER_VERSION, self.counter.name,
            repr(scope), repr(target), repr(rules.rules), bytes(baseline or b""),
        ]  # fmt: skip
        h.update(msgpack.packb(head, use_bin_type=True))
        for f in facts:
            row = [f.path, f.kind, f.size, bytes(f.digest or b""), f.forced, f.text, f.redacted]
            h.update(msgpack.packb(row, use_bin_type=True))
        return bytes(h.digest())

    def _reuse(self, memo_key: bytes) -> tuple[mf.Manifest, dict[str, int], bytes] | None:
        known = self.cache.get(MEMO_NS, memo_key)
        if known is None or len(known) != 32:
            return None
        try:
            data = self.store.get(Digest(known))  # re-hashed on read
            m = mf.decode(data, trusted=True)  # our own bytes, under the digest we recorded
        except (CasError, KeyError, TypeError, ValueError):
            return None  # pruned, damaged or from another version: build it again
        if self.store.has_many(m.digests()) != m.digests():
            return None
        tokens = m.totals.get("tokens")
        if not isinstance(tokens, dict):
            return None
        return m, {k: int(v) for k, v in tokens.items()}, data

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
        from packer.languages import language_for

        start = time.perf_counter()
        lang = language_for(fact.path) or "text"
        ns = f"summary:{SUMMARY_VERSION}:{lang}"
        cached = self.cache.get(ns, bytes(key))
        if cached is not None:
            text = cached.decode("utf-8")
        else:
            text = summarize(fact.path, decode_text(self.store.get(fact.digest)))
            self.cache.put(ns, bytes(key), text.encode("utf-8"))
        self._spent("summarize", start)
        start = time.perf_counter()
        tokens = self.counter.count(renderer("markdown").section_body(text, ""))
        self._spent("tokenize", start)
        self._summaries[key] = (text, tokens)
        return text, tokens

    def _summary_digest(self, fact: Fact) -> Digest:
        text, _ = self._summary(fact)
        digest = Digest.of(text.encode("utf-8"))
        self._summary_texts[digest] = text
        return digest


def _price_row(row: object, fact: Fact) -> tuple[int, int, int, int] | None:
    """(rule index, high, medium, low line prices) from a price-table row made for the same
    forced reason and kind; None for a miss or a malformed row."""
    if (
        not isinstance(row, list)
        or len(row) != 6
        or row[0] != _row_key(fact)
        or row[1] != fact.kind
    ):
        return None
    numbers = row[2:]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numbers):
        return None
    index, high, medium, low = numbers
    return index, high, medium, low


def _row_key(fact: Fact) -> str | None:
    """What of a file's content facts its priced lines depend on: the reason content forces,
    or the redaction its reason names."""
    if fact.forced is None and fact.redacted:
        return f"redacted: {fact.redacted}"
    return fact.forced


def _relative_inside(path: Path, root: Path) -> str | None:
    try:
        rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None
