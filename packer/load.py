"""Loading for a question: packs fitted together to one budget, what the question is about first.

`cas load QUERY` works from stored packs only (no working tree):

1. **Which packs.** The ``[load]`` table's ``core`` packs always; a domain's packs when one of its
   triggers is a word or identifier of the query (whole, ignoring case; a trigger also matches
   the words of a compound identifier: ``blob`` matches ``put_blob``). Without ``[load]``, or
   with an empty ``core``, every pack of the project (`packer.search.visible_packs`: no memory
   pack, no load). The memories asked for (`Attached`, ``--memory-scope``) always, each once,
   recorded among the sources by name and digest.
2. **What the question is about.** The query is searched (`packer.search`) over the files of
   those packs. A file's value is its rating in its pack plus a share of `QUERY_SCALE` times
   the best rating, in proportion to its search score: a file the question names outranks any
   file it does not. By meaning too (``--mode``, `packer.hybrid`; ``auto`` for a question of
   three words or more over at most 5,000 files): the files nearest the question gain up to a
   quarter of the best score by words (`_add_meaning`), so a file the question describes in
   other words than its own joins those it names.
3. **Focus.** In the best-matching files, each symbol is scored by the query's terms its name
   spells (three times) and its lines hold; a symbol that matches is offered with its whole
   source (its own lines up to its first member, or to the next symbol), not only its
   signature, and is worth a share of the query's value. The fit (`packer.fitting`) then
   chooses as for a pack: the files the question is about in full or with the matching
   symbols' bodies, their neighbours as summaries, the rest listed or counted.
4. **Gaps.** A name of the query shaped like code (``NewRouter``, ``with_context``,
   ``os.path.join``, a capitalized word) that the load does not show is searched over every
   pack of the project; the files that best match it join, valued as the query's own. If a name
   is still not shown but some pack has it, the load falls back to every pack with the fallback
   budget, and says so.

The result is a manifest of kind ``load`` (`cas.manifest`) recording the query and its source
packs, with summaries (focused ones included) as blobs: `cas render`, `cas verify`, `cas diff`
and gc treat it as any pack. Same query, same packs, same configuration: the same bytes (all
values are integers; ties break on path bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from cas import locate
from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.display import echoed
from cas.errors import LoadBudgetError, NotFound, UsageError
from cas.events import ProgressSink
from cas.store import Store
from cas.textindex import WORD, TextIndex, query_names, split_name
from packer import outline as outline_mod
from packer import vectors
from packer.config import Budget, LoadConfig
from packer.fit_loop import FileRow, Rooms, Trial, manifest_of, refit
from packer.fitting import HIGH, LOW, Offer, SymbolOffer, fit
from packer.hybrid import check_mode, resolved, weights
from packer.ingest import Fact
from packer.lang import named as language_record
from packer.pricing import Candidate, Pricer, head_share
from packer.render import (
    FORMATS,
    GIVEN,
    GROUP_LINES,
    group_depth,
    lite_layout,
    lite_layouts,
    renderer,
)
from packer.scan import decode_text
from packer.search import (
    WHOLE_CODE,
    Attached,
    Scored,
    Source,
    code_names,
    ensure_indexed,
    line_terms,
    query_terms,
    score,
    visible_packs,
    whole_of,
)
from packer.tokens import TokenCounter
from packer.vectors import Found

LOAD_SCOPE: Final = "load"
_CONSTRUCTORS: Final = frozenset({"__init__", "__new__", "constructor", "new", "initialize"})
QUERY_SCALE: Final = 16  # the best-matching file is worth this many times the best rating
FOCUS_FILES: Final = 40  # files whose symbols are scored against the query
FOCUS_LINES: Final = 120  # at most this many lines of one symbol's source are offered
GAP_FILES: Final = 3  # files a gap's name brings in
MEANING_FILES: Final = 10  # files nearest the question by meaning that gain a share ...
MEANING_SHARE: Final = 4  # ... of at most a quarter of the best score by words
# Of a pack the reader had already (a conversation's earlier turns), a file is offered when the
# question finds it with more than this share of the best file's score.
SETTLED_SHARE: Final = 8
NAME_FACTOR: Final = 3  # a term a symbol's name spells counts this many times
DEFINED_FACTOR: Final = 4  # a symbol the query names is worth this many query values more
# A member of a type the query names is worth 1/MEMBER_SHARE of what the type gains (a field or
# constant), or a quarter of that (a method).
MEMBER_SHARE: Final = 4
# A focused symbol's docstring shows at most this many lines: the signature and the code are
# what a question about it needs; a long docstring (examples, a page of prose) is cut after its
# first lines, so the focused body stays affordable within a budget.
DOC_LINES: Final = 8
# A focused body longer than this (or than its signature and docstring) is offered in two steps.
HEAD_LINES: Final = 12


@dataclass(frozen=True, slots=True)
class Trigger:
    domain: str
    words: tuple[str, ...]  # the triggers the query matched (none: triggered earlier)
    packs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Held:
    """What a reader holds already (a session's earlier turns): a file's body by digest, in
    full or as a summary. A load leaves out a file held in full unchanged, and offers one held
    as a summary in full only (its summary again would repeat what the reader has)."""

    digest: Digest
    full: bool


@dataclass(slots=True)
class LoadResult:
    manifest: mf.Manifest
    data: bytes
    digest: Digest
    tokens: dict[str, int]
    summaries: dict[Digest, str]  # the summaries the manifest references, by digest
    core: list[str]
    triggered: list[Trigger]
    packs: list[str]  # every pack drawn on, in order
    gaps: dict[str, list[str]] = field(default_factory=dict)  # name -> files it brought in
    fallback: bool = False
    unmatched: list[str] = field(default_factory=list)  # names no pack shows
    focused: dict[str, int] = field(default_factory=dict)  # path -> symbols with their source

    def fetch(self, store: Store) -> Callable[[Digest], str]:
        def read(digest: Digest) -> str:
            text = self.summaries.get(digest)
            return text if text is not None else decode_text(store.get(digest))

        return read


def query_words(query: str) -> set[str]:
    """Every word and identifier of a query, lowercased, and the words of compound ones."""
    out: set[str] = set()
    for name in query_names(query):
        out.add(".".join(name.words))
        out.update(name.words)
        out.update(name.parts)
    return out


def plan(
    config: LoadConfig, query: str, available: Sequence[str], earlier: Collection[str] = ()
) -> tuple[list[str], list[Trigger]]:
    """(core packs, triggered domains) for a query; the domains named in ``earlier`` (triggered
    earlier in a conversation) stay triggered, with no word of their own."""
    words = query_words(query)
    core = list(config.core) if config.core else list(available)
    triggered = []
    for d in config.domains:
        hit = tuple(t for t in d.triggers if _trigger_words(t) <= words)
        if hit or d.name in earlier:
            triggered.append(Trigger(d.name, hit, d.packs))
    return core, triggered


def _trigger_words(trigger: str) -> set[str]:
    names = query_names(trigger)
    return {".".join(n.words) for n in names} or {trigger.lower()}


class Loader:
    """One `cas load`: the store, its index, and the project's packs. ``mcp``: the load is
    served over MCP as the pack of that name (`packer.render.Header.mcp`): its header, which
    the fit counts, names the server's tools."""

    def __init__(
        self,
        root: Path,
        store: Store,
        index: TextIndex,
        config: LoadConfig,
        tokenizer: str,
        *,
        progress: ProgressSink | None = None,
        scopes: Collection[str] = (),
        attached: Sequence[Attached] = (),
        mode: str = "auto",
        mcp: str | None = None,
    ) -> None:
        self.mode = check_mode(mode)
        self.mcp = mcp
        self.root = root
        self.scopes = scopes  # the memories asked for: loads drawn on them are shown
        self.attached = attached  # drawn on beside the packs, always
        self.store = store
        self.index = index
        self.config = config
        self.counter = TokenCounter(tokenizer)
        self.cache = Cache(store)
        self._work: dict[str, float] = {}
        self.pricer = Pricer(store, self.cache, self.counter, self._work)
        self.progress = progress
        self._manifests: dict[str, tuple[mf.Manifest, Digest]] = {}
        self._summaries: dict[Digest, str] = {}
        self._meaning: tuple[list[Found], str] | None = None
        self._pinned: Collection[str] = ()
        self._held: Mapping[str, Held] = {}
        self._settled: Collection[str] = ()
        for a in attached:
            self._manifests[a.name] = (a.manifest, a.digest)

    def _pack(self, name: str) -> tuple[mf.Manifest, Digest]:
        known = self._manifests.get(name)
        if known is None:
            found = locate.load_pack(name, locate.manifest_dir(self.root), self.store)
            known = self._manifests[name] = (found.manifest, found.digest)
        return known

    def _source(self, names: Sequence[str]) -> Source:
        src = Source()
        for name in names:
            m = self._pack(name)[0]
            if m.kind == "load":
                continue  # a load is drawn from packs, not from other loads
            src.add(name, m)
        ensure_indexed(self.index, self.store, src.paths, self.progress)
        return src

    def load(
        self,
        query: str,
        budget: Budget | None = None,
        *,
        name: str = LOAD_SCOPE,
        pinned: Collection[str] = (),
        held: Mapping[str, Held] | None = None,
        domains: Collection[str] = (),
        settled: Collection[str] = (),
    ) -> LoadResult:
        """The packs (and memories attached) fitted to ``query`` within ``budget``. For a turn
        of a conversation: the files of ``pinned`` are shown in full whatever else fits (a
        session's recent turns, its facts), a file ``held`` in full unchanged is left out with
        the reason `GIVEN` (one held as a summary is shown in full or not at all), the
        domains of ``domains`` stay triggered, and of the packs ``settled`` (the reader had
        them already) only the files the question finds are offered: the rest stay counted."""
        self._pinned, self._held = frozenset(pinned), held or {}
        self._settled = frozenset(settled)
        if not query_terms(query) and not pinned:  # a turn's context has what is pinned
            raise UsageError(
                f"the query {echoed(query)} has no word to load for (only stop words); ask about "
                "names, files or topics of the project"
            )
        budget = budget or self.config.budget
        seen = visible_packs(self.root, self.store, self.scopes)
        for p in seen:
            self._manifests.setdefault(p.name, (p.manifest, p.digest))
        packs = [p.name for p in seen if p.manifest.kind != "load"]
        if not packs and not self.attached:
            raise NotFound("pack", "", "this project has no packs: run 'cas pack' first")
        core, triggered = plan(self.config, query, packs, domains)
        attached = [a.name for a in self.attached]
        every = [*packs, *attached]
        drawn = list(dict.fromkeys([*core, *(p for t in triggered for p in t.packs), *attached]))
        src = self._source(drawn)
        self._meaning = self._by_meaning(query, src)
        scored = score(self.index, src, query, self.pricer.text)
        extra: dict[str, int] = {}
        m, tokens, focused = self._fit(name, query, drawn, src, scored, extra, budget)
        result = self._result(m, tokens, core, triggered, drawn, focused)
        missing = self._unshown(query, result)
        if missing and set(drawn) != set(every):
            whole = self._source(every)
            gap_scored = score(self.index, whole, query, self.pricer.text)
            for qname in missing:
                found = score(self.index, whole, qname, self.pricer.text).ranked()[:GAP_FILES]
                if found:
                    result.gaps[qname] = [p for p, _ in found]
            added = {p for paths in result.gaps.values() for p in paths}
            if added:
                for path in sorted(added):
                    src.add_from(whole, path)
                top = max((s for _, s in gap_scored.ranked()[:1]), default=1)
                for path in added:
                    extra[path] = max(gap_scored.scores.get(path, 0), top)
                scored = score(self.index, src, query, self.pricer.text)
                m, tokens, focused = self._fit(name, query, drawn, src, scored, extra, budget)
                gaps = result.gaps
                result = self._result(m, tokens, core, triggered, drawn, focused)
                result.gaps = gaps
            missing = self._unshown(query, result)
            if missing:
                findable = [q for q in missing if score(self.index, whole, q).scores]
                if findable:
                    fb_max = self.config.fallback_max or budget.max * 2
                    fb_budget = Budget(target=fb_max, max=fb_max)
                    scored = score(self.index, whole, query, self.pricer.text)
                    self._meaning = self._by_meaning(query, whole)
                    m, tokens, focused = self._fit(name, query, every, whole, scored, {}, fb_budget)
                    gaps = result.gaps
                    result = self._result(m, tokens, core, triggered, every, focused)
                    result.gaps, result.fallback = gaps, True
                    missing = self._unshown(query, result)
        result.unmatched = missing
        return result

    def _by_meaning(self, query: str, src: Source) -> tuple[list[Found], str] | None:
        """The files of ``src`` found by meaning, and the mode (``hybrid`` or ``semantic``);
        None where the mode asks for words alone (a lookup, more than
        `packer.hybrid.AUTO_FILES` files under ``auto``, or ``lexical``)."""
        mode = resolved(self.mode, len(src.digest_of))
        if mode == "lexical" or (mode == "hybrid" and weights(query) is None):
            return None
        found = vectors.search(
            self.store, list(src.digest_of.items()), query, progress=self.progress
        )
        return found, mode

    # --- checking what is shown ---------------------------------------------------------------

    def _unshown(self, query: str, result: LoadResult) -> list[str]:
        """The query's code-shaped names that no shown section holds."""
        # the sections only: the header repeats the query itself
        text = "".join(lite_layout(result.manifest, result.fetch(self.store)).sections)
        have = set()
        for tok in WORD.findall(text):
            have.add(tok.lower())
        out = []
        for qname in code_names(query):
            if qname.words[-1] not in have:
                out.append(qname.text)
        return out

    def _result(
        self,
        m: mf.Manifest,
        tokens: dict[str, int],
        core: list[str],
        triggered: list[Trigger],
        drawn: list[str],
        focused: dict[str, int],
    ) -> LoadResult:
        data = mf.encode(m)
        wanted = {e.summary for e in m.entries if e.summary is not None}
        summaries = {d: t for d, t in self._summaries.items() if d in wanted}
        return LoadResult(
            m, data, Digest.of(data), tokens, summaries, core, triggered, drawn, focused=focused
        )

    # --- fitting ------------------------------------------------------------------------------

    def _fit(
        self,
        name: str,
        query: str,
        drawn: list[str],
        src: Source,
        scored: Scored,
        extra: dict[str, int],
        budget: Budget,
    ) -> tuple[mf.Manifest, dict[str, int], dict[str, int]]:
        paths = sorted(src.entries, key=str.encode)
        entries = src.entries
        top_rating = max((max(1, e.rating) for e in entries.values()), default=1)
        scores = dict(scored.scores)
        for path, s in extra.items():
            scores[path] = max(scores.get(path, 0), s)
        if self._meaning is not None:
            _add_meaning(scores, self._meaning, whole_of(scored), entries)
        best = max(scores.values(), default=0)
        query_value = top_rating * QUERY_SCALE
        values: dict[str, int] = {}
        for path in paths:
            e = entries[path]
            boost = query_value * scores.get(path, 0) // best if best else 0
            values[path] = min(max(1, e.rating) + boost, mf.MAX_RATING)
            if path in self._pinned:  # shown first: what the reader always needs
                values[path] = mf.MAX_RATING
        ranked = sorted(
            (p for p in paths if scores.get(p, 0) > 0), key=lambda p: (-scores[p], p.encode())
        )
        focus = set(ranked[:FOCUS_FILES])
        placed = _placed(scored, focus)
        offers: list[Offer] = []
        texts: dict[str, outline_mod.Outline] = {}
        focused: dict[str, int] = {}
        reasons: dict[str, str | None] = {path: entries[path].reason for path in paths}
        quiet = self._quiet(src, scores)
        for path in paths:
            e = entries[path]
            cand = self._candidate(e, values[path])
            if path in self._pinned and cand.ceiling == HIGH:
                offers.append(self.pricer.offer(replace(cand, floor=HIGH)))
                continue
            if path in quiet:
                offers.append(Offer(path, ceiling=LOW, floor=LOW))
                continue
            held = self._held.get(path)
            if held is not None and held.digest == e.digest:
                if held.full:
                    reasons[path] = GIVEN
                    offers.append(Offer(path, ceiling=LOW, floor=LOW))
                    continue
                offer = self.pricer.offer(cand)
                offer = offer.expand() if offer.expand is not None else offer
                offers.append(replace(offer, head=None, symbols=()))
                continue
            if path in focus and cand.ceiling > LOW:
                offer, o, n = self._focused(
                    cand,
                    scored,
                    query_value * scores[path] // best,
                    query_value,
                    {words for words, holders in placed.items() if path not in holders},
                )
                offers.append(offer)
                texts[path] = o
                if n:
                    focused[path] = n
            else:
                offers.append(self.pricer.offer(cand))
        depth = group_depth(paths, max(4, min(GROUP_LINES, budget.target // 400)))
        room = budget.target - self._overhead(name, query, drawn, budget, entries, depth)
        rows = [
            FileRow(path, e.kind, e.digest, e.size, reasons[path], values[path])
            for path, e in entries.items()
        ]
        head = mf.Manifest(
            scope=name,
            target=None,
            tokenizer=self.counter.name,
            budget_target=budget.target,
            budget_max=budget.max,
            entries=(),
            kind="load",
            query=query,
            sources=tuple((n, self._pack(n)[1]) for n in drawn),
        )

        def summary(row: FileRow, keep: tuple[int, ...]) -> str:
            o = texts.get(row.path)
            if o is not None:
                return outline_mod.render(o, keep)
            fact = Fact(row.path, row.kind, row.size, row.digest, text=True)
            return self.pricer.summary_text(fact, keep)

        def trial(room: int) -> Trial[mf.Manifest]:
            chosen = fit(offers, max(room, 0))
            m = manifest_of(rows, chosen.choices, summary, self._summaries, head, depth)
            return Trial(m, self._count(m), chosen.cost)

        fitted = refit(trial, Rooms(budget, room))
        if fitted is None:
            raise LoadBudgetError(name, budget.max, trial(0).worst)
        tokens = dict(fitted.tokens)
        m = fitted.made._replace(totals={**fitted.made.totals, "tokens": dict(tokens)})
        shown = {e.path for e in m.entries if e.tier == "medium"}
        return m, tokens, {p: n for p, n in focused.items() if p in shown}

    def _quiet(self, src: Source, scores: Mapping[str, int]) -> set[str]:
        """The files of the settled packs (each path its first holder's) that the question does
        not find, by words or by meaning, or finds with at most 1/`SETTLED_SHARE` of the best
        file's score (by a common word), and that are not pinned."""
        if not self._settled:
            return set()
        floor = max(scores.values(), default=0) // SETTLED_SHARE
        first: dict[str, str] = {}
        for name, held in src.holders:
            for path in held:
                first.setdefault(path, name)
        return {
            path
            for path, name in first.items()
            if name in self._settled and scores.get(path, 0) <= floor and path not in self._pinned
        }

    def _candidate(self, e: mf.Entry, value: int) -> Candidate:
        text = (
            e.digest is not None
            and e.kind == "file"
            and not (e.reason or "").startswith(("binary", "large file"))
        )
        fact = Fact(e.path, e.kind, e.size, e.digest, text=text)
        return Candidate(
            path=e.path,
            fact=fact,
            ceiling=HIGH if text else LOW,
            floor=LOW,
            weight=0,
            reason=e.reason or "",
            rating=value,
            value=value,
        )

    def _focused(
        self,
        cand: Candidate,
        scored: Scored,
        query_value: int,
        named_value: int,
        elsewhere: Collection[tuple[str, ...]] = (),
    ) -> tuple[Offer, outline_mod.Outline, int]:
        """The file's offer with each symbol that matches the query shown with its source.
        ``elsewhere``: qualified names of the query (`stack.Options`) whose top-level symbol
        is in other files (`_placed`): here they name only a member (`Options` of a class
        `stack`)."""
        fact = cand.fact
        assert fact.digest is not None
        priced = self.pricer.priced(fact)
        o = priced.outline
        lines = self.pricer.text(fact.digest).split("\n")
        spans = _spans(o, len(lines))
        weights = dict(scored.weights)
        code = [t.words for t in scored.terms if t.weight == WHOLE_CODE]
        sym_scores = []
        defines: list[bool] = []
        for i, s in enumerate(o.symbols):
            a, b = spans[i]
            have: set[str] = set()
            for line in lines[a - 1 : b - 1]:
                have |= line_terms(line)
            name_words = {s.name.lower(), *split_name(s.name)}
            named = sum(v for w, v in weights.items() if w[-1] in name_words and len(w) <= 2)
            held = sum(v for w, v in weights.items() if w[0] in have)
            sym_scores.append(NAME_FACTOR * named + held if (named or held) else 0)
            parent = o.symbols[s.parent].name if s.parent >= 0 else ""
            defines.append(_names(s.name, code, parent, elsewhere))
        named_itself = list(defines)
        # a class the question names brings its constructor: how it is made is what is asked
        for i, s in enumerate(o.symbols):
            if s.parent >= 0 and s.name in _CONSTRUCTORS and sym_scores[s.parent]:
                sym_scores[i] = max(sym_scores[i], sym_scores[s.parent])
                defines[i] = defines[i] or defines[s.parent]
        top = max(sym_scores, default=0)
        new_symbols = list(o.symbols)
        costs = list(priced.symbols)
        base = self.pricer.expand(cand, self.pricer.listed(cand))
        sym_values = [s.value for s in base.symbols]
        record = language_record(o.lang)
        comment = record.comment if record is not None and record.kind == "code" else ""
        n_focused = 0
        rests: dict[int, tuple[tuple[str, ...], int, int]] = {}  # symbol -> its body's rest
        for i, sc in enumerate(sym_scores):
            if (not defines[i] and (not top or sc * 3 < top)) or not o.symbols[i].line:
                continue
            a, b = spans[i]
            body, signature_end, doc_end = _short_docstring(list(lines[a - 1 : b - 1]))
            cut = len(body) > FOCUS_LINES
            del body[FOCUS_LINES:]
            # Its own lines end where its first member starts; that member's doc comment,
            # above it, is the member's (its summary line shows it), not this symbol's.
            member = comment and not cut and i + 1 < len(spans) and o.symbols[i + 1].parent == i
            while body and (not body[-1].strip() or (member and _comment(body[-1], comment))):
                body.pop()
            if not body:
                continue
            if cut:
                body.append(_indent(body[0]) + "...")
            gain = query_value * sc // max(top, 1)
            if defines[i]:
                gain += named_value * DEFINED_FACTOR
            # A long function is offered in two steps: its signature and docstring's first
            # lines, worth the whole gain, then the rest of its code, worth half: a budget that
            # cannot take a long function's code still shows how it is called. (A type's own
            # lines are what it is: its fields, an interface's methods; never split.)
            split = doc_end or max(signature_end, HEAD_LINES)
            if o.symbols[i].kind in _CALLABLE and len(body) - split >= HEAD_LINES // 2:
                rest = tuple(body[split:])
                rests[i] = (rest, self.pricer.line("\n".join(rest) + "\n"), gain // 2)
                del body[split:]
            new_symbols[i] = replace(o.symbols[i], lines=tuple(body))
            costs[i] = self.pricer.line("\n".join(body) + "\n")
            sym_values[i] += gain
            n_focused += 1
        # A type the question names brings its members: what it holds (fields, constants)
        # first, its methods' signatures after them; each as the summary shows it. A member
        # the question names too (`Read` of `tcpip.Endpoint`) is named twice over: it goes
        # before the namesakes of other types.
        for j, s in enumerate(o.symbols):
            if s.parent < 0 or not defines[s.parent]:
                continue
            if o.symbols[s.parent].kind not in ("class", "type"):
                continue
            if named_itself[j]:
                sym_values[j] += named_value * DEFINED_FACTOR
            elif not defines[j]:
                share = MEMBER_SHARE if s.kind in ("field", "constant") else 4 * MEMBER_SHARE
                sym_values[j] += named_value * DEFINED_FACTOR // share
        offered = [
            SymbolOffer(c, v, s.parent)
            for c, v, s in zip(costs, sym_values, new_symbols, strict=True)
        ]
        if rests:
            new_symbols, offered = _with_rests(new_symbols, offered, rests)
        focused_outline = replace(o, symbols=tuple(new_symbols))
        head_value = cand.value * head_share(cand.path) // 100
        everything = head_value + sum(sym_values)
        full = None
        if base.full is not None:
            full = (base.full[0], everything * 13 // 10 + cand.value // 10)
        offer = Offer(
            cand.path,
            ceiling=cand.ceiling,
            floor=cand.floor,
            listed=base.listed,
            full=full,
            head=base.head,
            symbols=tuple(offered),
        )
        return offer, focused_outline, n_focused

    def _overhead(
        self,
        name: str,
        query: str,
        drawn: list[str],
        budget: Budget,
        entries: dict[str, mf.Entry],
        depth: int,
    ) -> int:
        """The tokens of what every load shows whatever it fits: its header (with the question,
        as much of it as the header shows) and its omitted files' lines."""
        from packer.render import Header, omitted_groups

        md = renderer("markdown")
        n = len(entries)
        h = Header(
            name, None, self.counter.name, budget.max, (n, n, n, n, n), query, tuple(drawn),
            mcp=self.mcp,
        )  # fmt: skip
        pieces = [md.header(h, "lite"), md.omitted_open(), md.omitted_close()]
        low = [e._replace(tier="low") for e in entries.values()]
        pieces += [md.omitted_group(f, c, r) for f, c, r in omitted_groups(low, depth)]
        return self.pricer.line("".join(pieces))

    def _count(self, m: mf.Manifest) -> dict[str, int]:
        fetch = self._fetch
        layouts = lite_layouts(m, fetch, FORMATS, mcp=self.mcp)
        return {fmt: self.counter.count(layout.text()) for fmt, layout in layouts.items()}

    def _fetch(self, digest: Digest) -> str:
        text = self._summaries.get(digest)
        return text if text is not None else self.pricer.text(digest)


def _add_meaning(
    scores: dict[str, int],
    meaning: tuple[Sequence[Found], str],
    whole: int,
    entries: Collection[str],
) -> None:
    """What meaning finds, added to the scores by words: each of the `MEANING_FILES` files
    nearest the question gains a `MEANING_SHARE` of the best score by words (or of a file's
    holding every word of the query, when words find less), in proportion to its cosine over
    the best one's; in ``semantic`` mode, the scores are meaning's alone."""
    found, mode = meaning
    if mode == "semantic":
        scores.clear()
    base = max(max(scores.values(), default=0), whole, 1)
    top = max((f.score for f in found), default=0)
    if top <= 0:
        return
    seen: set[str] = set()
    for f in found:
        if f.path in seen or f.path not in entries:
            continue
        seen.add(f.path)
        share = base * f.score // top
        scores[f.path] = scores.get(f.path, 0) + (
            share if mode == "semantic" else share // MEANING_SHARE
        )
        if len(seen) >= MEANING_FILES:
            break


def _names(
    name: str,
    code: list[tuple[str, ...]],
    parent: str,
    elsewhere: Collection[tuple[str, ...]] = (),
) -> bool:
    """Whether a symbol is what a code-shaped name of the query names: ``echo`` for ``echo``
    or ``click.echo``; ``invoke`` of class ``CliRunner`` for ``CliRunner.invoke``; a class
    ``Option`` for ``Option``. A name of ``elsewhere`` names no top-level symbol here."""
    low = name.lower()
    for words in code:
        if words[-1] != low:
            continue
        if len(words) == 1 or parent.lower() == words[-2]:
            return True
        if not parent and words not in elsewhere:
            return True
    return False


def _placed(scored: Scored, focus: Collection[str]) -> dict[tuple[str, ...], set[str]]:
    """For each qualified code name of the query (`stack.Options`, `click.echo`), the focused
    files its qualifier places it in: those with a folder or a module named so
    (`pkg/tcpip/stack/stack.go`, `src/click/utils.py`). Names no focused file is placed by are
    left out (their top-level symbols anywhere still count)."""
    out: dict[tuple[str, ...], set[str]] = {}
    for term in scored.terms:
        words = term.words
        if term.weight != WHOLE_CODE or len(words) < 2:
            continue
        holders = {p for p in focus if words[-2] in _path_words(p)}
        if holders:
            out[words] = holders
    return out


def _path_words(path: str) -> set[str]:
    """The folders of a path and its file's name without extension, lowercased."""
    *folders, name = path.lower().split("/")
    return {*folders, name.split(".", 1)[0]}


def _spans(o: outline_mod.Outline, n_lines: int) -> list[tuple[int, int]]:
    """Each symbol's own lines [first, end): from its line to its first member's, or else to
    the next symbol that is not inside it (or the end of the file)."""
    out = []
    syms = o.symbols
    for i, s in enumerate(syms):
        start = s.line or 1
        end = n_lines + 1
        for j in range(i + 1, len(syms)):
            if syms[j].line and syms[j].line > start:
                end = syms[j].line
                break
        out.append((start, max(end, start + 1)))
    return out


_DOC_QUOTES: Final = ('"""', "'''", 'r"""', "r'''", 'u"""')


def _short_docstring(body: list[str]) -> tuple[list[str], int, int]:
    """``body`` (a symbol's source lines) with a docstring of more than `DOC_LINES` lines,
    right after its signature, cut to its first `DOC_LINES` and a line of "..." (its closing
    line kept); the number of lines its signature takes (`_signature_end`); and the number of
    lines up to the docstring's end (0: no docstring)."""
    start = _signature_end(body)
    for k in range(start, min(start + 2, len(body))):
        line = body[k]
        stripped = line.lstrip()
        quote = next((q for q in _DOC_QUOTES if stripped.startswith(q)), None)
        if quote is None:
            continue
        closing = quote.lstrip("ru")
        if stripped.count(closing) >= 2:
            return body, start, k + 1  # a docstring of one line
        end = next((m for m in range(k + 1, len(body)) if closing in body[m]), None)
        if end is None:
            break
        if end - k <= DOC_LINES + 1:
            return body, start, end + 1
        cut = [*body[: k + DOC_LINES], _indent(line) + "...", *body[end:]]
        return cut, start, k + DOC_LINES + 2
    return body, start, 0


_SIGNATURE_LINES: Final = 60  # a signature longer than this is cut where it is split


def _signature_end(body: list[str]) -> int:
    """How many of ``body``'s first lines its signature takes: up to the line where its
    brackets close again and that ends the header (`:`, `{`, `=>`, `=`, `;`), at least one line."""
    depth = 0
    for k, line in enumerate(body[:_SIGNATURE_LINES]):
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0 and line.rstrip().endswith((":", "{", "=>", "=", ";")):
            return k + 1
    return 1 if body and depth <= 0 else min(len(body), _SIGNATURE_LINES)


def _with_rests(
    symbols: list[outline_mod.Symbol],
    offered: list[SymbolOffer],
    rests: dict[int, tuple[tuple[str, ...], int, int]],
) -> tuple[list[outline_mod.Symbol], list[SymbolOffer]]:
    """The symbols with each split body's rest as a symbol of its own, right after the one it
    continues and enclosed by it (so it is shown only with it, and before its members)."""
    place: list[int] = []
    out_symbols: list[outline_mod.Symbol] = []
    out_offered: list[SymbolOffer] = []
    for i, (s, o) in enumerate(zip(symbols, offered, strict=True)):
        parent = place[s.parent] if s.parent >= 0 else -1
        place.append(len(out_symbols))
        out_symbols.append(replace(s, parent=parent))
        out_offered.append(o._replace(parent=parent))
        rest = rests.get(i)
        if rest is not None:
            lines, cost, value = rest
            out_symbols.append(replace(s, lines=lines, parent=place[i], line=0))
            out_offered.append(SymbolOffer(cost, value, place[i]))
    return out_symbols, out_offered


_CALLABLE: Final = frozenset(("function", "method"))


def _comment(line: str, comment: str) -> bool:
    """Whether a source line is a comment alone, in a language whose line comments start with
    ``comment`` (`packer.lang`): ``#``, or ``//`` (and ``/* */`` blocks)."""
    stripped = line.lstrip()
    if comment == "#":
        return stripped.startswith("#")
    return stripped.startswith(("//", "/*", "*"))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def store_result(store: Store, result: LoadResult) -> None:
    """Commit the load's summaries and manifest to the store (before its file is written)."""
    with store.batch() as batch:
        for e in result.manifest.entries:
            if e.summary is not None:
                text = result.summaries.get(e.summary)
                if text is not None:
                    batch.put(text.encode("utf-8"))
                else:
                    batch.touch(e.summary)
        batch.put(result.data)


__all__ = ["GIVEN", "LOAD_SCOPE", "Held", "LoadResult", "Loader", "Trigger", "plan", "store_result"]
