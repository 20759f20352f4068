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

import contextlib
import datetime as dt
import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import blake3
import msgpack

from cas import locate, roots
from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.errors import BudgetError, CasError, UnknownName
from cas.events import ProgressSink, emit
from cas.fsutil import atomic_write
from cas.lease import Lease
from cas.residency import trim_heap
from cas.store import Store
from cas.words import Terms
from packer import packview, replay
from packer.config import Config, Scope, Target, assign_scopes, glob_spec
from packer.explain import Explanation
from packer.fit_loop import FileRow, Rooms, Trial, manifest_of, refit
from packer.fitting import HIGH, LOW, MEDIUM, Choice, fit
from packer.history import History, read_history
from packer.ingest import RENDER_VERSION, Fact, Ingest, IngestReport
from packer.lang import language_for, named
from packer.lexicon import LEXICON_VERSION, Lexicon, cache_namespace, lex
from packer.lexicon import decode as decode_lexicon
from packer.lexicon import encode as encode_lexicon
from packer.pricing import (
    MAX_VALUE,
    NO_SYMBOLS,
    PUBLIC_BOOST,
    TIER_OF,
    Candidate,
    Pricer,
    SymbolValues,
    weighted,
)
from packer.projectfacts import FACT_SHARE, is_project_metadata
from packer.projectmap import MAP_NS, Folder, encode_map, plan_map
from packer.rating_scale import AVERAGE, RATING_VERSION
from packer.render import (
    FORMATS,
    GROUP_LINES,
    Header,
    group_depth,
    lite_layouts,
    omitted_groups,
    renderer,
)
from packer.results import PackReport, PackResult, manifest_name
from packer.rules import NOT_CONTENT
from packer.scan import ScanNote, decode_text
from packer.secrets import redact_path
from packer.summaries import SUMMARY_VERSION
from packer.tiers import TierDecision, TierRules
from packer.tokens import TokenCounter

if TYPE_CHECKING:
    from packer.rating import Ratings

MEMO_NS = "memo"
# Each path's rule, by the rules (and the day, for age rules): a pack after a change classifies
# only the paths it has not seen. Bump the version when matching or classifying changes
# (`packer.wildmatch`, `packer.tiers`).
DECISIONS_NS = "tier-decisions"
DECISIONS_VERSION = "1"
# Bump when the way a manifest is derived from its inputs changes (tiering, fitting, layout).
MEMO_VERSION = "9"  # 9: the key facts of the project's metadata file valued as its card
NOT_CONTENT_SPEC = glob_spec(NOT_CONTENT)


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
        progress: ProgressSink | None = None,
        now: dt.date | None = None,
        terms: Callable[[Digest, Terms | None], None] | None = None,
        terms_done: Callable[[], None] | None = None,
    ) -> None:
        self.root = root
        # Where the ingest sends each new body's search terms (`cas.textindex.Writer.add`), and
        # what is called once it has sent them all (the writer writes what it holds then, while
        # the tier stage's memory is not yet in use).
        self.terms = terms
        self.terms_done = terms_done
        # The day rules with an age condition count to (packer.rules); None: they match nothing.
        self.now = now
        self.store = store
        self.config = config
        self.allow_secrets = allow_secrets
        self.progress = progress
        self.counter = TokenCounter(config.tokenizer)
        self.cache = Cache(store)
        # Summary texts by their own digest, so trial renders need not store them; only the
        # summaries a final manifest references are stored.
        self._summary_texts: dict[Digest, str] = {}
        self._map_folders: list[Folder] = []  # the map of the target last fitted
        self._lease: Lease | None = None
        self._folder_ready = False
        self._work: dict[str, float] = {}
        self.pricer = Pricer(store, self.cache, self.counter, self._work)
        self._scope_cands: tuple[str, list[Candidate]] | None = None
        self._ratings: Ratings | None = None  # the last scope's
        self._history: History | None = None
        self._history_key: tuple[str, ...] | None = None
        self._explain: str | None = None
        self._explained: list[Explanation] = []
        self._last_fit: dict[str, Choice] | None = None

    # --- the whole run ----------------------------------------------------------------------

    def run(
        self,
        *,
        scopes: Sequence[str] = (),
        targets: Sequence[str] = (),
        baseline: Digest | None = None,
        check: bool = False,
        explain: str | None = None,
        walked: replay.Walked | None = None,
    ) -> PackReport:
        """Pack the scopes and targets asked for (all by default). ``check`` writes no manifest
        file and marks a committed manifest that differs as stale (one that does not differ has
        what it names stored, as a pack would); ``explain`` (a path) writes no manifest file
        either, fits every pack afresh and keeps, in `PackReport.explained`, why that path got
        what it got."""
        # What was asked for, and where it goes, is checked before any work is done.
        self._explain = explain.removeprefix("./") if explain is not None else None
        check = check or explain is not None
        wanted = self._select(scopes)
        self._check_targets(wanted, targets)
        if not check:
            self._check_folder()
        # The lease tells a concurrent gc to keep off from before the first blob is looked up
        # until the last manifest file is written: in between, only the lease says the blobs
        # this run found present (and so did not write again) are wanted.
        with Lease(self.store, "pack") as lease, _collector_paused():
            self._lease = lease
            try:
                return self._run(wanted, targets, baseline, check, walked)
            finally:
                self._lease = None

    def _run(
        self,
        wanted: list[Scope],
        targets: Sequence[str],
        baseline: Digest | None,
        check: bool,
        walked: replay.Walked | None,
    ) -> PackReport:
        report = PackReport(self.root)
        watch = _Stopwatch(report.timings)
        progress = self.progress
        if walked is None:  # walked here; else before the run, by its replay's attempt
            walked = replay.walk(self.store, self.root, progress)
        else:
            report.timings["scan"] = walked.seconds
        scanned = walked.scanned
        # What a later run with the same inputs replays (`packer.replay`): a run that writes
        # its manifests, lets no secret in by name and had nothing to note.
        recordable = not check and self._explain is None and not self.allow_secrets
        run_key = (
            walked.key(
                self.root, self.config, scopes=[s.name for s in wanted], targets=targets,
                baseline=baseline, now=self.now,
            )
            if recordable and not scanned.notes
            else None
        )  # fmt: skip
        # A note names a path the walk could not use; a secret in that path is cut out of it.
        report.notes.extend(ScanNote(redact_path(n.path), n.reason) for n in scanned.notes)
        # The pack's own configuration and ignore files steer it; they are not content.
        by_path = {f.path: f for f in scanned.files if not NOT_CONTENT_SPEC.match_file(f.path)}
        membership = assign_scopes(self.config, by_path)
        watch.lap("scan")

        todo = sorted(
            {p for s in wanted for p in membership.get(s.name, [])}, key=lambda p: p.encode()
        )
        report.files = len(todo)
        with self.store.batch() as batch:
            ingest = Ingest(
                batch,
                self.cache,
                self.counter,
                allow_secrets=self.allow_secrets,
                terms=None if check else self.terms,
            )
            read = [0]  # bytes of the files taken in so far (their sizes)

            def tick(done: int, nbytes: int) -> None:
                read[0] += nbytes
                emit(progress, "store", done, len(todo), read[0])

            ingested: IngestReport = ingest.run(
                [by_path[p] for p in todo], tick if progress else None
            )
        # The bodies are committed: commit the stat and secret-scan facts now too, and drop the
        # walk's records and the batch's index of what it wrote, rather than carry them
        # through tiering (a large tree's biggest tables).
        self.cache.flush()
        del scanned, by_path, batch, ingest
        walked.forget()
        if self.terms_done is not None and not check:
            self.terms_done()
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
                self._scope_cands = None
                rules = TierRules([*scope.rules, *self.config.rules], now=self.now)
                scope_facts = [facts[p] for p in membership.get(scope.name, []) if p in facts]
                for target in self._targets(scope, targets):
                    result = self._pack_target(scope, target, scope_facts, rules, baseline, check)
                    report.results.append(result)
                    if check and result.written and self._explain is None:
                        report.stale.append(result.name)
            report.explained = self._explained
            watch.lap("tier")
            report.work.update({f"tier: {k}": v for k, v in sorted(self._work.items())})
            if run_key is not None and not report.notes:
                references = {r.digest for r in report.results}
                for r in report.results:
                    references |= r.manifest.digests()
                replay.record(self.cache, run_key, report, references)
        finally:
            # Derived facts are worth keeping even when a budget turned out impossible.
            self.pricer.remember()
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
                given = sorted(t for t in known if t)
                hint = "" if given else "a scope without [scopes.NAME.targets] packs one pack"
                raise UnknownName("target", n, given, self._source(), hint)

    def _folder(self) -> Path:
        return locate.manifest_dir(self.root)

    def _check_folder(self) -> None:
        """Refuse early, before any work, when the manifests folder cannot be one."""
        roots.check_manifest_dir(self._folder())

    def _prepare_folder(self) -> None:
        """Create the manifests folder and make it a gc root, before the first manifest file in
        it names any blob. The lease is held: a gc waits for it, or runs after this commits and
        reads the recorded folder in its deleting transaction."""
        if self._folder_ready:
            return
        roots.prepare_manifest_dir(self.store, self._folder())
        self._folder_ready = True

    @staticmethod
    def _targets(scope: Scope, names: Sequence[str]) -> list[Target]:
        if not names:
            return list(scope.targets)
        return [t for t in scope.targets if t.name in names or (not t.name and "" in names)]

    # --- one scope: classify, rate -------------------------------------------------------------

    def _candidates(self, facts: list[Fact], rules: TierRules) -> list[Candidate]:
        """Every file of a scope, classified and rated (the ratings of the whole scope)."""
        start = time.perf_counter()
        decisions = self._decisions(rules, [f.path for f in facts])
        self._spent("rules", start)
        start = time.perf_counter()
        langs = [language_for(f.path) for f in facts]
        lexicons = self._lexicons(facts, langs)
        rows = [
            (f.path, lang, f.size, lexicon)
            for f, lang, lexicon in zip(facts, langs, lexicons, strict=True)
        ]
        self._spent("lexicon", start)
        start = time.perf_counter()
        from packer.rating import rate  # numpy loads only when a pack is made, not reused

        by_path = {f.path: f for f in facts}
        ratings = rate(
            rows,
            read=lambda path: self._top_text(by_path, path),
            history=self._history_for([f.path for f in facts]),
            priorities={p: max(d.weight, 0) for p, d in decisions.items()},
        )
        self._ratings = ratings
        shifts = {p: d.weight for p, d in decisions.items()}
        symbols = {
            path: SymbolValues(lexicon, values, best, total)
            for path, lexicon, values, best, total in ratings.shifted(
                shifts, PUBLIC_BOOST, MAX_VALUE
            )
        }
        self._spent("rate", start)
        copies = _copies(facts, langs, decisions, ratings.file)
        out: list[Candidate] = []
        for fact, lang in zip(facts, langs, strict=True):
            decision = decisions[fact.path]
            reason = fact.forced or decision.reason
            if fact.redacted and not fact.forced:
                reason = f"{reason}; secrets redacted: {fact.redacted}"
            ceiling = LOW if fact.forced or not fact.size else TIER_OF[decision.tier]
            if not fact.size and not fact.forced:
                reason = f"{reason}, empty"
            copy = copies.get(fact.path)
            if copy is not None:
                ceiling, reason = LOW, copy
                if fact.redacted:
                    reason = f"{reason}; secrets redacted: {fact.redacted}"
            floor = ceiling if decision.required and not fact.forced else LOW
            rating = ratings.file(fact.path)
            language = named(lang)
            if language is None or language.kind != "code":
                # Documents and configuration are not referenced like code: their rank in the
                # graph says little, so they rate at least as an average file would.
                rating = max(rating, AVERAGE)
            weight = decision.weight
            out.append(
                Candidate(
                    path=fact.path,
                    fact=fact,
                    ceiling=ceiling,
                    floor=floor,
                    weight=weight,
                    reason=reason,
                    rating=rating,
                    value=weighted(rating, weight),
                    symbols=symbols.get(fact.path, NO_SYMBOLS),
                )
            )
        _value_facts(out)
        return out

    def _decisions(self, rules: TierRules, paths: list[str]) -> dict[str, TierDecision]:
        """The rule each path falls under: those of the last pack under the same rules read
        back in one entry, the others classified (and the entry rewritten with this pack's
        paths only, so paths gone do not pile up)."""
        head: list[object] = [DECISIONS_VERSION, repr(rules.rules)]
        if rules.now is not None and any(r.aged for r in rules.rules):
            head.append(rules.now.isoformat())
        key = blake3.blake3(msgpack.packb(head, use_bin_type=True)).digest()
        known = _decode_decisions(self.cache.get(DECISIONS_NS, key), len(rules.rules))
        out: dict[str, TierDecision] = {}
        fresh = 0
        for path in paths:
            index = known.get(path)
            if index is None:
                out[path] = rules.classify(path)
                fresh += 1
            else:
                out[path] = rules.decision_at(index)
        if fresh or len(known) != len(paths):
            kept = {p: d.rule_index for p, d in out.items()}
            self.cache.put(DECISIONS_NS, key, msgpack.packb(kept, use_bin_type=True))
        return out

    def _lexicons(self, facts: list[Fact], langs: list[str | None]) -> list[Lexicon | None]:
        """Each file's lexicon, by content digest: those the cache holds read in one
        transaction per namespace, the others made here (when the ingest did not). ``langs``:
        each file's language (`packer.lang.language_for`)."""
        wanted: dict[str, list[int]] = {}  # namespace -> indexes of the facts
        for i, (fact, lang) in enumerate(zip(facts, langs, strict=True)):
            if fact.digest is None or not fact.text or fact.forced:
                continue
            ns = cache_namespace(fact.path, lang)  # the namespace the ingest workers fill
            if ns is not None:
                wanted.setdefault(ns, []).append(i)
        out: list[Lexicon | None] = [None] * len(facts)
        for ns, indexes in wanted.items():
            keys = [bytes(facts[i].digest or b"") for i in indexes]
            for i, raw in zip(indexes, self.cache.get_many(ns, keys), strict=True):
                found = decode_lexicon(raw) if raw is not None else None
                out[i] = found if found is not None else self._lexicon(ns, facts[i])
        return out

    def _lexicon(self, ns: str, fact: Fact) -> Lexicon | None:
        """The file's lexicon made from its body, and kept by digest."""
        assert fact.digest is not None
        made = lex(fact.path, self.store.get(fact.digest))
        if made is not None:
            self.cache.put(ns, bytes(fact.digest), encode_lexicon(made))
        return made

    def _top_text(self, facts: dict[str, Fact], path: str) -> str | None:
        """The text of a top-level metadata file or README, for the public surface."""
        fact = facts.get(path)
        if fact is None or fact.digest is None or not fact.text or fact.size > 1 << 20:
            return None
        return decode_text(self.store.get(fact.digest))

    def _history_for(self, paths: list[str]) -> History | None:
        if not self.config.history:
            return None
        key = tuple(paths)
        if self._history_key != key:
            start = time.perf_counter()
            self._history = read_history(self.root, paths, limit=self.config.history)
            self._history_key = key
            self._spent("history", start)
        return self._history

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
        self._map_folders = []  # a manifest reused whole has its map in the cache already
        history = self._history_for([f.path for f in facts])
        memo_key = self._memo_key(scope, target, facts, rules, baseline, history)
        reused = self._reuse(memo_key, facts) if self._explain is None else None
        if reused is not None:
            m, tokens, data = reused
            return self._finish(scope, target, name, m, tokens, check, memo_key, data)
        if self._scope_cands is None or self._scope_cands[0] != scope.name:
            self._scope_cands = (scope.name, self._candidates(facts, rules))
        cands = self._scope_cands[1]
        m, tokens = self._fit(scope, target, cands, baseline)
        if self._explain is not None:
            self._explain_one(name, target, rules, cands, m, tokens)
        return self._finish(scope, target, name, m, tokens, check, memo_key)

    def _explain_one(
        self,
        name: str,
        target: Target,
        rules: TierRules,
        cands: list[Candidate],
        m: mf.Manifest,
        tokens: dict[str, int],
    ) -> None:
        cand = next((c for c in cands if c.path == self._explain), None)
        if cand is None:
            return
        assert self._last_fit is not None
        choice = self._last_fit[cand.path]
        offer = self.pricer.offer(cand)
        if offer.expand is not None or (cand.fact.text and cand.ceiling > LOW):
            offer = self.pricer.expand(cand, self.pricer.listed(cand))
        symbols: list[tuple[str, int, bool]] = []
        if offer.head is not None:
            outline = self.pricer.priced(cand.fact).outline
            kept = set(outline.closure(choice.keep)) if choice.tier == MEDIUM else set()
            symbols = [
                (s.name, o.value, i in kept or choice.tier == HIGH)
                for i, (s, o) in enumerate(zip(outline.symbols, offer.symbols, strict=True))
            ]
        ratings = self._ratings
        reasons = ratings.reasons.get(cand.path, ()) if ratings is not None else ()
        decision = rules.classify(cand.path)
        self._explained.append(
            Explanation(
                pack=name,
                target=target.budget.target,
                budget_max=target.budget.max,
                rule=rules.describe(decision.rule_index),
                cand=cand,
                reasons=tuple(reasons),
                offer=offer,
                choice=choice,
                symbols=symbols,
                tokens=tokens["markdown"],
            )
        )

    def _spent(self, step: str, start: float) -> None:
        self._work[step] = self._work.get(step, 0.0) + time.perf_counter() - start

    def _fit(
        self, scope: Scope, target: Target, cands: list[Candidate], parent: Digest | None
    ) -> tuple[mf.Manifest, dict[str, int]]:
        """Fit the target: choose on value per token, render every format, count it exactly,
        and refit with more or less room until the pack is within its max and, when there is
        more to show, near its target (`packer.fit_loop`)."""
        budget = target.budget
        pricer = self.pricer
        start = time.perf_counter()
        offers = [pricer.offer(c) for c in cands]
        pricer.settle()
        self._spent("price", start)
        depth = group_depth((c.path for c in cands), _group_lines(budget.target))
        overhead = self._overhead(scope, target, cands, depth)
        rows = [
            FileRow(
                c.path,
                c.fact.kind,
                c.fact.digest,
                c.fact.size,
                c.reason,
                min(c.value, mf.MAX_RATING),
            )
            for c in cands
        ]
        # The map of a large project: its folders are chosen by the ratings alone, so its text
        # is known before the fit and priced as part of the frame.
        map_size, folders = plan_map(budget.target, rows, self._fetch)  # every trial's map
        self._map_folders = folders
        if folders:
            overhead += pricer.line(renderer("markdown").project_map(folders))
        facts = {c.path: c.fact for c in cands}
        head = mf.Manifest(
            scope=scope.name,
            target=target.name or None,
            tokenizer=self.counter.name,
            budget_target=budget.target,
            budget_max=budget.max,
            entries=(),
            parent=parent,
        )

        def summary(row: FileRow, keep: tuple[int, ...]) -> str:
            return pricer.summary_text(facts[row.path], keep)

        def trial(room: int) -> Trial[tuple[mf.Manifest, dict[str, Choice]]]:
            start = time.perf_counter()
            chosen = fit(offers, max(room, 0))
            self._spent("fit", start)
            m = manifest_of(
                rows, chosen.choices, summary, self._summary_texts, head, depth, map_size
            )
            return Trial((m, chosen.choices), self._count_formats(m, folders), chosen.cost)

        best = refit(trial, Rooms(budget, budget.target - overhead))
        if best is None:
            self._refuse(scope, target, cands)
        assert best is not None
        (m, self._last_fit), tokens = best.made, dict(best.tokens)
        m = m._replace(totals={**m.totals, "tokens": dict(tokens)})
        return m, tokens

    def _count_formats(self, m: mf.Manifest, folders: Sequence[Folder]) -> dict[str, int]:
        start = time.perf_counter()
        layouts = lite_layouts(m, self._fetch, FORMATS, folders)
        out = {fmt: self.counter.count(layout.text()) for fmt, layout in layouts.items()}
        self._spent("tokenize", start)
        return out

    def _overhead(self, scope: Scope, target: Target, cands: list[Candidate], depth: int) -> int:
        """Tokens of everything but the files' own sections and lines, at most: the header,
        the omitted list's frame and every folder line it could have, the withheld list's."""
        md = renderer("markdown")
        n = len(cands)
        counts = (n, n, n, n, n)  # the most digits any count can have
        h = Header(scope.name, target.name or None, self.counter.name, target.budget.max, counts)
        head = md.header(h, "lite")
        listed = [c for c in cands if not c.withheld]
        groups = omitted_groups(listed, depth)
        pieces = [head]
        if listed:
            pieces += [md.omitted_open(), md.omitted_close()]
            pieces += [md.omitted_group(f, count, reasons) for f, count, reasons in groups]
        if any(c.withheld for c in cands):
            pieces += [md.withheld_open(), md.withheld_group(n), md.withheld_close()]
        return self.pricer.line("".join(pieces))

    def _refuse(self, scope: Scope, target: Target, cands: list[Candidate]) -> None:
        """No fit is within the max: the required files alone cannot be (or, without any,
        the header and omitted list cannot). Names them with their token counts."""
        required = []
        for c in sorted((c for c in cands if c.floor > LOW), key=lambda c: c.path.encode()):
            offer = self.pricer.expand(c, self.pricer.listed(c))
            cost = offer.full[0] if c.floor == HIGH and offer.full else 0
            if not cost and offer.head is not None:
                cost = offer.head[0] + sum(s.cost for s in offer.symbols)
            required.append((c.path, cost))
        name = manifest_name(scope.name, target.name or None)
        raise BudgetError(
            name,
            target.budget.max,
            required or [("(the pack's header and omitted list)", target.budget.max)],
        )

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
        trim_heap()  # fitting's trial renders and counts are freed: keep the peak down
        data = data if data is not None else mf.encode(m)
        digest = Digest.of(data)
        path = locate.pack_path(self._folder(), name)
        file = path.relative_to(self.root).as_posix()
        result_target = target.name or None
        if check:
            current = path.read_bytes() if path.is_file() else None
            if current == data and self._explain is None and not self.store.has(digest):
                # The committed file is this manifest: the store gets its summaries and its own
                # copy (it has the bodies already), so a fresh checkout that is checked once
                # then verifies and renders, as CI runs `cas pack --check` then `cas verify`.
                # A store that has the copy has its summaries: they were committed together.
                self._commit_manifest(m, data)
            return PackResult.made(
                scope.name, result_target, name, path, digest, m, current != data, tokens, file
            )
        self._commit_manifest(m, data)
        self.cache.put(MEMO_NS, memo_key, bytes(digest))
        self.cache.put(mf.VALID_NS, bytes(digest), b"")
        packview.remember(self.cache, m, digest)  # what searches read instead of the manifest
        if m.totals.get("map") and self._map_folders:  # what a render reads instead of the rows
            self.cache.put(MAP_NS, bytes(digest), encode_map(self._map_folders))
        self._prepare_folder()
        if self._lease is not None:
            self._lease.check()  # a gc that found the lease stale may have pruned our blobs
        written = atomic_write(path, data)
        return PackResult.made(
            scope.name, result_target, name, path, digest, m, written, tokens, file
        )

    def _commit_manifest(self, m: mf.Manifest, data: bytes) -> None:
        """Bodies were committed with the ingest batch; the summaries this manifest references
        and the manifest itself are committed together, before its file is written, so a file
        never names anything the store lacks."""
        with self.store.batch() as batch:
            for e in m.entries:
                if e.summary is not None and e.summary in self._summary_texts:
                    batch.put(self._summary_texts[e.summary].encode("utf-8"))
                elif e.summary is not None:
                    batch.touch(e.summary)
            batch.put(data)

    # --- the memo: an unchanged input gives the manifest already made ---------------------------

    def _memo_key(
        self,
        scope: Scope,
        target: Target,
        facts: list[Fact],
        rules: TierRules,
        baseline: Digest | None,
        history: History | None,
    ) -> bytes:
        """A digest of everything a manifest is a function of: versions of the code that derives
        facts, the scope, target and rules (and the day age rules count to), the tokenizer, the
        parent, the history read, and every file's facts."""
        h = blake3.blake3()
        head = [
            MEMO_VERSION, SUMMARY_VERSION, RENDER_VERSION, LEXICON_VERSION, RATING_VERSION,
            self.counter.name, repr(scope), repr(target), repr(rules.rules),
            bytes(baseline or b""), history.digest if history is not None else b"",
        ]  # fmt: skip
        if rules.now is not None and any(r.aged for r in rules.rules):
            head.append(rules.now.isoformat())  # the day age rules counted to
        h.update(msgpack.packb(head, use_bin_type=True))
        # Every file's row packed in one call: a call per row would cost more than the hashing.
        rows = [
            [f.path, f.kind, f.size, bytes(f.digest or b""), f.forced, f.text, f.redacted]
            for f in facts
        ]
        h.update(msgpack.packb(rows, use_bin_type=True))
        return bytes(h.digest())

    def _reuse(
        self, memo_key: bytes, facts: list[Fact]
    ) -> tuple[mf.Manifest, dict[str, int], bytes] | None:
        """The manifest made before from the same input (the memo), if everything it references
        is still stored. The files' bodies are (the ingest just found or put every one of them,
        under this pack's lease): only the others, the summaries, are looked up."""
        known = self.cache.get(MEMO_NS, memo_key)
        if known is None or len(known) != 32:
            return None
        try:
            data = self.store.get(Digest(known))  # re-hashed on read
            m = mf.decode(data, trusted=True)  # our own bytes, under the digest we recorded
        except (CasError, KeyError, TypeError, ValueError):
            return None  # pruned, damaged or from another version: build it again
        bodies = {f.digest for f in facts}
        others = m.digests().difference(bodies)
        if self.store.has_many(others) != others:
            return None
        tokens = m.totals.get("tokens")
        if not isinstance(tokens, dict):
            return None
        return m, {k: int(v) for k, v in tokens.items()}, data

    # --- summaries ----------------------------------------------------------------------------

    def _fetch(self, digest: Digest) -> str:
        text = self._summary_texts.get(digest)
        return text if text is not None else self.pricer.text(digest)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector held off for a pack: the walk, the facts, the lexicons, the
    candidates and their offers are hundreds of thousands of objects, none of them garbage nor
    in a cycle worth collecting, and each full collection would walk them all (half a second of
    a pack after a small change, on 20,000 files). Reference counting frees what a pack drops
    all the same; the collector resumes as it was when the pack ends."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():  # (a process that froze objects keeps them frozen)
                # What the pack made and still holds is all in the youngest generation, and the
                # first collection would walk it: moved to the oldest one instead, unwalked.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _value_facts(cands: list[Candidate]) -> None:
    """The key facts of the project's metadata file are worth a share of what the best file
    of the project is worth (`packer.projectfacts`)."""
    metadata = [
        c
        for c in cands
        if c.ceiling > LOW and c.fact.text and is_project_metadata(c.path, c.reason)
    ]
    if metadata:
        top = max(c.value for c in cands)
        for c in metadata:
            c.facts = max(1, top * FACT_SHARE // 100)


def _decode_decisions(raw: bytes | None, rules: int) -> dict[str, int]:
    """Path -> rule index, as `Packer._decisions` kept them; empty for anything else."""
    if raw is None:
        return {}
    try:
        known = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        return {}
    if not isinstance(known, dict) or not all(
        type(i) is int and 0 <= i <= rules for i in known.values()
    ):
        return {}
    return known


# What a TypeScript module compiles to beside it: its JavaScript and its declarations, which say
# again what the module says (shown, it is the one to read).
_TS_SOURCE: Final = frozenset((".ts", ".tsx", ".mts", ".cts"))  # `.d.ts`: declarations
_JS: Final = frozenset((".js", ".jsx", ".mjs", ".cjs"))
_TS_FAMILY: Final = frozenset(("typescript", "tsx", "javascript"))


def _copies(
    facts: list[Fact],
    langs: Sequence[str | None],
    decisions: Mapping[str, TierDecision],
    rating: Callable[[str], int],
) -> dict[str, str]:
    """The files of a scope that another file stands for, each with the reason it is listed
    rather than shown: a file whose content another has too (of each group of copies, the best
    rated, then the first by path bytes, is shown), and a TypeScript module's compiled
    JavaScript and declarations beside it (`client.js`, `client.d.ts` next to `client.ts`).
    Files a rule requires, or puts low, are never copies. ``langs``: each file's language
    (`packer.lang.language_for`)."""

    def eligible(f: Fact) -> bool:
        decision = decisions[f.path]
        return (
            f.digest is not None
            and f.text
            and bool(f.size)
            and not f.forced
            and decision.tier != "low"
            and not decision.required
        )

    out: dict[str, str] = {}
    digests = [f.digest for f in facts if f.digest is not None]
    if len(set(digests)) != len(digests):  # most scopes: no two files alike
        groups: dict[Digest, list[str]] = {}
        for f in facts:
            if f.digest is not None and eligible(f):
                groups.setdefault(f.digest, []).append(f.path)
        for group in groups.values():
            if len(group) > 1:
                first, *rest = sorted(
                    group, key=lambda p: (-rating(p), p.encode("utf-8", "surrogateescape"))
                )
                out.update(dict.fromkeys(rest, f"duplicate; the same content as {first}"))
    # One pass: each file by the stem before its extension (`client` of `client.d.ts`).
    sources: dict[str, Fact] = {}
    compiled: list[tuple[str, Fact]] = []
    for f, lang in zip(facts, langs, strict=True):
        if lang not in _TS_FAMILY:
            continue
        path = f.path
        dot = path.rfind(".")
        ext = path[dot:]
        if ext in _TS_SOURCE:
            if path.endswith(".d", 0, dot):
                compiled.append((path[: dot - 2], f))  # declarations
            else:
                sources[path[:dot]] = f
        elif ext in _JS:
            compiled.append((path[:dot], f))
    for stem, f in compiled:
        source = sources.get(stem)
        if source is None or f.path in out or source.path in out:
            continue
        if eligible(source) and eligible(f):
            out[f.path] = f"generated from {source.path}"
    return out


def _group_lines(target: int) -> int:
    """How many folder lines the omitted list may take: fewer for a small budget."""
    return max(4, min(GROUP_LINES, target // 400))
