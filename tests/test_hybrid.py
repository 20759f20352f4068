"""packer.hybrid: what words and meaning find, fused by reciprocal rank, in integers."""

from __future__ import annotations

import pytest

from cas import manifest as mf
from cas.digest import Digest
from cas.errors import UsageError
from cas.store import Store
from cas.textindex import TextIndex
from packer.hybrid import MODES, POOL, SCALE, K, check_mode, fuse, weights
from packer.search import Shown, Source, ensure_indexed, passage_hit, ranked, score
from packer.vectors import Found


def test_modes_and_the_weights_of_a_query() -> None:
    assert MODES == ("auto", "hybrid", "lexical", "semantic")
    for mode in MODES:
        assert check_mode(mode) == mode
    with pytest.raises(UsageError, match="unknown search mode 'fuzzy'"):
        check_mode("fuzzy")
    assert weights("why is the export slow") == (1, 2)  # plain words: meaning first
    assert weights("router") is None and weights("retry policy") is None  # lookups: words
    assert weights("where is parse_config defined") == (2, 1)  # a name of code: words first
    assert weights("call TextIndex.open here") == (2, 1) and weights("solve()") is None


def test_the_command_line_spells_the_same_modes() -> None:
    from casapp.cli._common import SEARCH_MODES

    assert SEARCH_MODES == MODES


def _source(store: Store, files: dict[str, str]) -> Source:
    entries = []
    for path, text in sorted(files.items()):
        d = store.put(text.encode())
        entries.append(mf.Entry(path, Digest(d), len(text), "high", 0))
    m = mf.Manifest(scope="t", target=None, tokenizer="", budget_target=0, budget_max=0,
                    entries=tuple(entries), kind="memory")  # fmt: skip
    src = Source()
    src.add("t", m)
    return src


def test_fusion_sums_reciprocal_ranks_scaled_by_the_words_held(store: Store, tmp_path) -> None:
    src = _source(store, {
        "a.md": "- export runs nightly\n",
        "b.md": "- the export is slow because of uploads\n",
        "c.md": "- uploads wait on the network\n",
    })  # fmt: skip
    with TextIndex.open(store.path) as index:
        ensure_indexed(index, store, src.paths)
        scored = score(index, src, "export uploads")
        lexical = list(ranked(scored))
        shown = Shown(store, src, scored)
        assert lexical[0][0] == "b.md"  # it holds both words
        semantic = [Found("c.md", 300_000, 1, 1), Found("b.md", 200_000, 1, 1)]
        got = fuse(
            lexical, semantic, k=10, whole=shown.whole, by_words=shown.hit,
            by_meaning=lambda f: passage_hit(store, src, f), weights=(1, 1),
        )  # fmt: skip
    by_path = {h.path: h.score for h in got}
    # b.md: first by words (all of the query) and second by meaning
    assert by_path["b.md"] == SCALE // (K + 1) + SCALE // (K + 2)
    assert got[0].path == "b.md"
    # a file that holds half the query's weight counts for about half its rank
    assert by_path["a.md"] < SCALE // (K + 2)
    assert [h.path for h in got] == sorted(by_path, key=lambda p: (-by_path[p], p))
    # a file found by meaning alone shows its passage's lines
    c = next(h for h in got if h.path == "c.md")
    assert (c.first, c.last) == (1, 1) and c.snippet == ((1, "- uploads wait on the network"),)


def test_ties_go_to_path_bytes_and_the_pool_bounds_each_list(store: Store) -> None:
    files = {f"f{i:03d}.md": f"- note {i}\n" for i in range(POOL + 10)}
    src = _source(store, files)
    semantic = [Found(p, 100_000, 1, 1) for p in sorted(files, reverse=True)]
    got = fuse(
        [], semantic, k=POOL + 10, whole=0, by_words=lambda p, s: None,
        by_meaning=lambda f: passage_hit(store, src, f),
    )  # fmt: skip
    assert len(got) == POOL  # the rest of the list is not read
    scores = [h.score for h in got]
    assert scores == sorted(scores, reverse=True)
