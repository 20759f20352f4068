"""`cas search`: code-aware terms, integer scores, hits with lines and snippets, the index as a
cache of the store (built by pack, rebuilt when deleted, pruned by gc)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from realcode import corpus

from cas.textindex import INDEX_DIR, TextIndex
from cas.words import key as key_of
from packer.search import code_names, idf, query_names, query_terms
from tests.conftest import cas_env, run_cas
from tests.pathoracle import path_words_by_definition

FILES = {
    "src/router.py": '''"""Routing."""


class NewRouter:
    """Routes requests."""

    def add_route(self, path, handler):
        self.routes[path] = handler


def make_router():
    return NewRouter()
''',
    "src/context.py": '''def with_context(value, ctx):
    """Run VALUE with CTX."""
    return ctx.run(value)


def unrelated():
    return 1
''',
    "src/util.py": "import os.path\n\n\ndef joined(a):\n    return os.path.join(a, 'b')\n",
    "docs/guide.md": "# Guide\n\nUse the router to add a route.\n",
}


def project(tmp_path: Path, files: dict[str, str] = FILES) -> Path:
    root = tmp_path / "proj"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    assert run_cas("pack", cwd=root).code == 0
    return root


def search(root: Path, *args: str) -> list[dict[str, object]]:
    r = run_cas("search", *args, "--json", cwd=root)
    assert r.code == 0, r.err
    hits: list[dict[str, object]] = json.loads(r.out)["hits"]
    return hits


def test_finds_identifiers_whole_and_by_words(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert search(root, "with_context")[0]["path"] == "src/context.py"
    assert search(root, "NewRouter")[0]["path"] == "src/router.py"
    assert search(root, "router")[0]["path"] == "src/router.py"  # a word of NewRouter
    assert search(root, "os.path.join")[0]["path"] == "src/util.py"
    hit = search(root, "add_route", "-k", "1")[0]
    assert hit["lines"] == [7, 7]
    assert hit["packs"] == ["repo"]
    assert hit["snippet"] == [{"line": 7, "text": "    def add_route(self, path, handler):"}]
    assert str(hit["digest"]).startswith("blake3:")


def test_a_file_shows_the_window_that_defines_the_name_asked_for(tmp_path: Path) -> None:
    """`Console.print_json`: the method's own lines, not a later window that names both words
    (an error message, a docstring); the undotted name the same."""
    body = ["class Console:", '    """A console."""', ""]
    body += ["    def print_json(self, json=None):", '        """Pretty prints JSON."""']
    body += ["        return json", ""]
    body += [f"    def helper_{i}(self):\n        return {i}\n" for i in range(60)]
    body += ["    def check(self):", '        raise TypeError("Console.print_json wants text")']
    files = {"rich/console.py": "\n".join(body) + "\n", "rich/other.py": "x = 1\n"}
    root = project(tmp_path, files)
    for query in ("Console.print_json", "print_json"):
        hit = search(root, query, "-k", "1")[0]
        assert hit["path"] == "rich/console.py"
        assert {"line": 4, "text": "    def print_json(self, json=None):"} in hit["snippet"], query


def test_a_name_asked_without_its_underscore_finds_the_private_definition(
    tmp_path: Path,
) -> None:
    """`parse_value` where only `_parse_value` is defined: the definition first, its window
    shown; where a public `parse_value` is defined as well, that one (the name asked)."""
    parser = ["class Parser:", '    """Reads values."""', ""]
    parser += [f"    def step_{i}(self):\n        return {i}\n" for i in range(40)]
    parser += ["    def _parse_value(self, text):", "        return text.strip()", ""]
    files = {
        "lib/parser.py": "\n".join(parser) + "\n",
        "tests/test_values.py": "".join(
            f"def test_parse_value_{i}():\n    # parse value {i}: parse_value\n    assert 1\n"
            for i in range(8)
        ),
        "docs/values.md": "# Values\n\nHow parse_value reads a value; parse value again.\n",
    }
    root = project(tmp_path, files)
    hit = search(root, "parse_value", "-k", "1")[0]
    assert hit["path"] == "lib/parser.py"
    assert {"line": 124, "text": "    def _parse_value(self, text):"} in hit["snippet"]
    files["lib/api.py"] = "def parse_value(text):\n    return text\n"
    root = project(tmp_path / "public", files)
    assert search(root, "parse_value", "-k", "1")[0]["path"] == "lib/api.py"


def test_filters_order_and_text_output(tmp_path: Path) -> None:
    root = project(tmp_path)
    everything = search(root, "router route", "-k", "10")
    paths = [h["path"] for h in everything]
    assert paths[0] == "src/router.py" and "docs/guide.md" in paths
    scores = [h["score"] for h in everything]
    assert scores == sorted(scores, reverse=True)
    assert [h["path"] for h in search(root, "router route", "--path", "docs/**")] == [
        "docs/guide.md"
    ]
    assert len(search(root, "router route", "-k", "1")) == 1
    text = run_cas("search", "with_context", cwd=root)
    assert text.code == 0
    assert text.out.splitlines()[0].startswith("src/context.py:1-1  [repo]  blake3:")
    none = run_cas("search", "zzzzqqq", cwd=root)
    assert none.code == 0 and none.out == "no matches\n"


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    root = project(tmp_path)
    for args, code, words in [
        (["what is the"], 2, "no word to search for"),
        (["router", "-k", "0"], 2, "-k must be at least 1"),
        (["router", "--pack", "nope"], 1, "pack"),
    ]:
        r = run_cas("search", *args, cwd=root)
        assert r.code == code, (args, r.err)
        assert words in r.err and len(r.err.strip().splitlines()) == 1
        assert "Traceback" not in r.err


# `cas` with one argument built in the process: a command line holds at most 128 KiB per
# argument (Linux), so a 1 MiB query reaches `cas` this way (an agent's tool call, a script).
_HUGE_QUERY = """
import sys
from casapp.cli import main
main([sys.argv[1], "the " * (1 << 18)])
"""


def test_a_huge_query_is_echoed_cut_with_a_count(tmp_path: Path) -> None:
    root = project(tmp_path)
    for command in ("search", "load"):
        proc = subprocess.run(
            [sys.executable, "-P", "-c", _HUGE_QUERY, command],
            cwd=root, env=cas_env(), capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2
        (line,) = proc.stderr.splitlines()
        assert "no word to" in line and "'the the the" in line
        assert "... (1,048,376 more characters)" in line and len(line) < 500
    # through the command line: as long an argument as it takes, a scope name of 10 KB, and a
    # value click itself refuses
    for args in (
        ["search", "a " * 60_000],
        ["search", "router", "--memory-scope", "u" * 10_000],
        ["search", "router", "-k", "z" * 10_000],
    ):
        r = run_cas(*args, cwd=root)
        assert r.code == 2
        (line,) = r.err.splitlines()
        assert "more characters)" in line and len(line) < 500, line


def test_words_of_any_script_find_the_files_holding_them(tmp_path: Path) -> None:
    """Before: 'stop words alone match everything' for any query without ASCII letters."""
    files = {
        **FILES,
        "docs/de.md": "# Dateien\n\nDie Größe jeder Datei wird geprüft.\n",
        "docs/ja.md": "# 検索\n\n検索エンジン の 説明\n",
        "docs/ru.md": "# Поиск\n\nПривет, мир: поиск по файлам.\n",
    }
    root = project(tmp_path, files)
    for query, path, line in [
        ("Größe", "docs/de.md", 3),
        ("größe", "docs/de.md", 3),
        ("GRÖSSE geprüft", "docs/de.md", 3),  # ß upper-cased is SS: geprüft still finds it
        ("検索エンジン", "docs/ja.md", 3),
        ("привет", "docs/ru.md", 3),
        ("ПРИВЕТ МИР", "docs/ru.md", 3),
    ]:
        hits = search(root, query)
        assert hits and hits[0]["path"] == path, (query, hits)
        assert [s["line"] for s in hits[0]["snippet"]] == [line], (query, hits[0])  # type: ignore[union-attr]
    assert search(root, "Schokolade") == []


def test_index_is_a_cache(tmp_path: Path) -> None:
    root = project(tmp_path)
    store = root / ".cas"
    first = search(root, "with_context")
    shutil.rmtree(store / INDEX_DIR)
    assert search(root, "with_context") == first  # rebuilt from the store
    with TextIndex.open(store) as index:  # type: ignore[union-attr]
        before = index.count()
    assert run_cas("pack", cwd=root).code == 0  # unchanged: nothing new to index
    with TextIndex.open(store) as index:  # type: ignore[union-attr]
        assert index.count() == before


def test_gc_drops_entries_of_pruned_bodies(tmp_path: Path) -> None:
    """Once a quarter of the index is bodies gc pruned, gc drops them from it."""
    root = project(tmp_path)
    for path in FILES:
        if path.endswith(".py"):
            (root / path).write_text((root / path).read_text() + "\n# changed\n")
    (root / "src/context.py").write_text("def other_thing():\n    return 2\n")
    assert run_cas("pack", cwd=root).code == 0
    with TextIndex.open(root / ".cas") as index:  # type: ignore[union-attr]
        assert index.windows(("with_context",))  # the old body is still indexed
    r = run_cas("gc", "--grace", "0", "--json", cwd=root)
    assert r.code == 0, r.err
    assert json.loads(r.out)["index_dropped"] >= 1
    with TextIndex.open(root / ".cas") as index:  # type: ignore[union-attr]
        assert index.windows(("with_context",)) == []
        assert index.windows(("other_thing",))
    assert search(root, "other_thing")[0]["path"] == "src/context.py"


def test_secrets_are_never_indexed(tmp_path: Path) -> None:
    files = dict(FILES)
    key = "AKIA" + "Q3EGRJ7ZL4XK2PMV"
    files["src/settings.py"] = (
        f'AWS_ACCESS_KEY_ID = "{key}"\n'
        'AWS_SECRET_ACCESS_KEY = "' + "wJalrXUtnFEMI/K7MDENG" + '/bPxRfiCYzQ3EGRJ7ZL"\n'
    )
    root = project(tmp_path, files)
    assert search(root, key.lower()) == []
    assert search(root, key) == []
    with TextIndex.open(root / ".cas") as index:  # type: ignore[union-attr]
        for term in (key, key.lower(), key[:8].lower()):
            assert index.lookup(key_of(term.encode())) == []


def test_real_project(tmp_path: Path) -> None:
    """click, as published: a question's names find the file that defines them."""
    root = tmp_path / "click"
    shutil.copytree(corpus("click"), root)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    assert run_cas("pack", cwd=root).code == 0
    assert search(root, "get_current_context")[0]["path"] == "src/click/globals.py"
    assert search(root, "ParamType convert")[0]["path"] == "src/click/types.py"
    top = search(root, "make_context", "-k", "3")
    assert top[0]["path"] == "src/click/core.py"


def test_query_terms() -> None:
    terms = {t.words: t.weight for t in query_terms("What does NewRouter return in chi.Mux?")}
    assert ("newrouter",) in terms and ("chi", "mux") in terms
    assert ("what",) not in terms and ("return",) not in terms
    assert terms[("newrouter",)] > terms.get(("new",), 0)


@given(st.integers(1, 10**9), st.integers(1, 10**9))
def test_idf_is_monotone_integer_log(files: int, holding: int) -> None:
    holding = min(holding, files)
    value = idf(files, holding)
    assert value >= 1
    if holding > 1:
        assert idf(files, holding - 1) >= value
    ratio = (files + 1) / holding
    if ratio > 2:
        import math

        assert abs(value / 64 - math.log2(ratio)) < 0.05


@pytest.mark.parametrize("query", ["", "   ", "the of and"])
def test_no_terms(query: str) -> None:
    assert query_terms(query) == []


# --- scoring: path words, and the best k scored first -----------------------------------------

_VOCAB = ["router", "route", "parse", "config", "handler", "cart", "total", "item", "x2", "ok"]


_NAME_PIECE = st.builds(
    lambda words, glue, upper: glue.join(w.capitalize() if upper else w for w in words),
    st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=3),
    st.sampled_from(["_", "", "-"]),
    st.booleans(),
)
_WORD = st.sampled_from([*_VOCAB, "py", "routerconfig", "rout"])


def _source_paths(most: int) -> st.SearchStrategy[list[str]]:
    """Up to ``most`` distinct paths of folders and a ``.py`` file named from `_VOCAB`."""
    return st.lists(
        st.lists(_NAME_PIECE, min_size=1, max_size=4).map(
            lambda parts: "/".join([*parts[:-1], parts[-1] + ".py"])
        ),
        max_size=most,
        unique=True,
    )


@given(
    _source_paths(20),
    _WORD,
)
def test_a_sources_path_hits_are_the_paths_whose_words_hold_the_word(
    paths: list[str], word: str
) -> None:
    from cas.digest import Digest
    from packer.search import Source

    expected = sorted(p for p in paths if word in path_words_by_definition(p))
    src, indexed = Source(), Source()
    for path in paths:
        src._take(path, bytes(Digest.of(path.encode())))
        indexed._take(path, bytes(Digest.of(path.encode())))
    names = src.numbered().names
    assert sorted(names[at] for at in src.path_hits(word)) == expected
    assert src.path_hits(word) is src.path_hits(word)  # kept for the next search of the source
    # a long-running process, having looked for many words, answers from every path's words
    indexed.index_paths()
    assert sorted(names[at] for at in indexed.path_hits(word)) == expected


@given(
    _source_paths(30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29), st.booleans()), max_size=4),
    st.integers(0, 3),
    _WORD,
)
def test_path_hits_from_the_indexes_of_views_paths_are_those_of_a_search_of_every_path(
    paths: list[str],
    slices: list[tuple[int, int, bool]],
    extra: int,
    word: str,
) -> None:
    """Packs whose path indexes the cache held (each stored and read back), packs without one,
    and files added from a manifest (a memory), in any order of their paths: the numbers
    `path_hits` gives name exactly the paths whose words hold the word."""
    from cas import manifest as mf
    from cas.digest import Digest
    from packer.packview import PackView
    from packer.pathwords import PathIndex
    from packer.search import Source

    head = mf.Manifest(
        scope="s", target=None, tokenizer="t", budget_target=1, budget_max=1, entries=()
    )
    src = Source()
    for n, (a, b, indexed) in enumerate(slices):
        part = paths[min(a, b) : max(a, b)][:: 1 if a <= b else -1]
        view = PackView(Digest.of(str(n).encode()), head, part, [b"%32d" % n] * len(part))
        words = PathIndex.decode(PathIndex.build(part).encode()) if indexed else None
        assert indexed is (words is not None)
        src.add_view(f"p{n}", view, words)
    rest = [p for p in paths if p not in src.digest_of][:extra]
    for path in rest:
        src._take(path, bytes(Digest.of(path.encode())))
    names = src.numbered().names
    expected = sorted(p for p in names if word in path_words_by_definition(p))
    assert sorted(names[at] for at in src.path_hits(word)) == expected
    assert list(src.path_hits(word)) == sorted(src.path_hits(word))  # ascending, each once
    assert len(set(src.path_hits(word))) == len(src.path_hits(word))


@pytest.fixture(scope="module")
def scored_corpus(tmp_path_factory: pytest.TempPathFactory) -> object:
    """300 bodies over a small vocabulary, some words far commoner than others, names defined
    at the top and nested, compounds; indexed; and the source of a manifest holding them."""
    import random

    from cas import manifest as mf
    from cas.digest import Digest
    from packer.search import Source

    rng = random.Random(22)
    bodies: dict[Digest, bytes] = {}
    entries = []
    for i in range(300):
        lines = []
        for _ in range(rng.randrange(1, 120)):
            words = rng.choices(_VOCAB, weights=[40, 20, 10, 8, 5, 3, 2, 1, 1, 1], k=4)
            shape = rng.randrange(4)
            if shape == 0:
                lines.append(f"def {words[0]}_{words[1]}():")
            elif shape == 1:
                lines.append(f"    class {words[0].capitalize()}{words[1].capitalize()}:")
            else:
                lines.append(" ".join(words))
        data = "\n".join(lines).encode()
        digest = Digest.of(data)
        bodies[digest] = data
        folder = rng.choice(_VOCAB)
        path = f"{folder}/{rng.choice(_VOCAB)}_{i}.py"
        entries.append(mf.Entry(path=path, digest=digest, size=len(data), tier="high", tokens=1))
    entries.sort(key=lambda e: e.path.encode())
    src = Source()
    src.add("repo", mf.Manifest("repo", None, "o200k_base", 1, 1, tuple(entries)))
    index = TextIndex.open(tmp_path_factory.mktemp("scored"))
    assert index is not None
    index.add(set(bodies), bodies.get)
    return index, src, bodies


def _model_scores(index: object, src: object, query: str) -> dict[str, int]:
    """What `score` must give, from its definition alone: per file, from each term's postings
    (`TextIndex.postings`) one window at a time, and each path's words one path at a time."""
    from packer.pathwords import path_words
    from packer.search import PATH_FACTOR, idf, query_terms

    terms = query_terms(query)
    found = []
    for term in terms:
        held = {d: shape for d, shape in index.postings(term.words).items() if d in src.paths}  # type: ignore[attr-defined]
        found.append((term, term.weight * idf(len(src.paths), len(held)), held))  # type: ignore[attr-defined]
    out: dict[str, int] = {}
    for path, digest in src.digest_of.items():  # type: ignore[attr-defined]
        windows: dict[int, int] = {}
        total = 0
        for _term, weight, held in found:
            if digest in held:
                mask = held[digest][0]
                total += weight * mask.bit_count()
                for bit in range(32):
                    if mask >> bit & 1:
                        windows[bit] = windows.get(bit, 0) + weight
        best = max(windows.values(), default=0)
        value = best + min(best // 2, (total - best) // 16) if windows else 0
        own = path_words(path)
        value += sum(
            weight * PATH_FACTOR
            for term, weight, _held in found
            if len(term.words) == 1 and term.words[0] in own
        )
        if value:
            out[path] = value
    return out


@given(
    st.lists(st.sampled_from([*_VOCAB, "RouteHandler", "parse_config", "cart.total"]), min_size=1,
             max_size=4).map(" ".join),
    st.booleans(),
    st.booleans(),
)  # fmt: skip
def test_every_file_scores_what_its_windows_and_path_hold(
    scored_corpus: object, query: str, native: bool, rerank: bool
) -> None:
    """`score` (the native code, or the Python where it was not built) gives each file what
    the definition gives, computed one file and one window at a time; every file it scores
    is in `best`, in rank order (also once files defining a name of the query gained, and once
    a score was changed from outside), and its spans are its windows holding a term."""
    from cas import words
    from packer.search import score

    index, src, bodies = scored_corpus  # type: ignore[misc]
    if native and words.native_module() is None:
        native = False  # the Python alone, as on a machine without a compiler
    saved = list(words._NATIVE)
    if not native:
        words._NATIVE[:] = [None]
    try:
        scored = score(index, src, query)
        reranked = score(index, src, query, lambda d: bodies[d].decode()) if rerank else None
    finally:
        words._NATIVE[:] = saved
    # `best` first, from the numbers `score` found (and what a rerank added), before `scores`
    # is made: the same as the ranking of every score
    lazy = list(scored.best())
    lazy_reranked = list(reranked.best()) if reranked is not None else []
    assert scored.scores == _model_scores(index, src, query)
    assert lazy == list(scored.best()) == scored.ranked()
    if reranked is not None:
        assert all(reranked.scores[p] >= v for p, v in scored.scores.items())
        assert lazy_reranked == list(reranked.best()) == reranked.ranked()
        for path, _value in reranked.ranked()[::7]:  # changed from outside, as a memory does
            reranked.rescore(path, 1)
        assert list(reranked.best()) == reranked.ranked()
    assert [v for _, v in scored.ranked()] == sorted(scored.scores.values(), reverse=True)
    for path in scored.scores:
        spans = scored.spans(path)
        assert all(first <= last for first, last in spans)
        assert sum(spans.values()) <= scored.scores[path] * 32


@pytest.mark.parametrize("made", [False, True])
def test_a_file_raised_from_the_bottom_is_ranked_where_its_new_score_puts_it(
    scored_corpus: object, made: bool
) -> None:
    """`Scored.add` (a file that defines a name the query asks for gains), on the scores
    `score` found (``made``: once they were made into `scores`): the file leaves the bottom
    for the top of `best`, and the ranking is still every score's."""
    from packer.search import score

    index, src, _bodies = scored_corpus  # type: ignore[misc]
    # a query whose best are a few of the files it scores: the bottom is not among them
    scored = next(
        found
        for found in (score(index, src, word) for word in _VOCAB)
        if found._first is not None and len(found._first) < len(found.scores) // 2
    )
    scored = score(index, src, " ".join(t.words[0] for t in scored.terms))
    ranked = scored.ranked()
    if made:
        assert scored.scores
    low, value = ranked[-1]
    scored.add(low, src.numbered().number[low], ranked[0][1])
    first = list(scored.best())
    assert first[0] == (low, value + ranked[0][1])
    assert first == scored.ranked() and len(first) == len(ranked)


def test_a_process_keeping_views_answers_a_search_again_and_follows_a_pack(
    tmp_path: Path,
) -> None:
    """Through kept views (the MCP server's), a search asked again is answered from the hits
    kept with its source, another k or query is searched anew, and a pack made again
    underneath gives a new source whose search finds the new content."""
    from cas.store import Store
    from packer.packview import Views
    from packer.search import search as run_search

    root = project(tmp_path)
    with Store.at(root / ".cas") as store, TextIndex.open(store.path) as index:  # type: ignore[union-attr]
        views = Views(store)
        first = run_search(store, index, root, "router", views=views)
        assert [h.path for h in first][:1] == ["src/router.py"]
        assert views.last_source is not None
        kept = views.last_source[1]
        assert run_search(store, index, root, "router", views=views) == first
        assert len(kept.results) == 1  # answered from what was kept
        assert run_search(store, index, root, "router", k=1, views=views) == first[:1]
        assert len(kept.results) == 2
        (root / "src" / "router.py").write_text("def newroutename():\n    return 1\n")
        assert run_cas("pack", cwd=root).code == 0
        index.refresh()
        again = run_search(store, index, root, "newroutename", views=views)
        assert [h.path for h in again] == ["src/router.py"]
        assert views.last_source[1] is not kept
        assert "src/router.py" not in [
            h.path for h in run_search(store, index, root, "add_route", views=views)
        ]


_PATH_CHARS = st.sampled_from(list("abcAB/._-İıẞß é\u0130x"))


@given(
    st.lists(st.text(_PATH_CHARS, min_size=1, max_size=12), max_size=30, unique=True),
    st.text(st.sampled_from(list("abi/.é\u0307ß")), max_size=3),
)
def test_the_paths_holding_a_word_are_those_a_test_per_path_finds(
    paths: list[str], word: str
) -> None:
    from packer.pathwords import LoweredPaths

    found = LoweredPaths(paths).holding(word)
    assert found == [at for at, p in enumerate(paths) if word and word in p.lower()]


def test_a_searching_process_keeps_the_large_texts_it_shows_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that searches on and on keeps the texts of large bodies it showed, the one
    shown longest ago dropped first, never more than the budget; a command keeps none."""
    import sys as system

    from cas.digest import Digest
    from cas.store import Store
    from packer import search as search_mod

    monkeypatch.setattr(search_mod, "_LARGE_TEXT", 1000)
    monkeypatch.setattr(search_mod, "_KEPT_TEXT", 5000)
    texts = [f"line {n}\n" * (150 + n) for n in range(6)]
    with Store.create(tmp_path / ".cas") as store:
        digests = [store.put(t.encode()) for t in texts]
        src = search_mod.Source()
        assert [src.text(store, d) for d in digests] == texts
        assert not src._texts  # a command keeps nothing
        src.keep_texts = True
        for d, t in zip(digests, texts, strict=True):
            assert src.text(store, d) == t
            assert sum(map(system.getsizeof, src._texts.values())) <= 5000
        assert digests[-1] in src._texts and digests[0] not in src._texts
        small = store.put(b"tiny")
        assert src.text(store, Digest(small)) == "tiny" and small not in src._texts
        kept = list(src._texts)
        assert src.text(store, kept[0]) == texts[digests.index(kept[0])]
        assert list(src._texts)[-1] == kept[0]  # shown again: the newest


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=60), st.booleans())
def test_a_source_from_one_view_numbers_its_bodies_as_one_from_a_manifest(
    picks: list[int], native: bool
) -> None:
    """The first pack's view numbers the bodies and paths in one pass (in native code where
    it was built); that gives the order, numbers and each body's paths a source made path by
    path from a manifest gives, bodies shared by several paths included."""
    from cas import manifest as mf
    from cas import words
    from cas.digest import Digest
    from packer.packview import PackView
    from packer.search import Source

    bodies = [Digest.of(b"body %d" % i) for i in range(31)]
    entries = tuple(
        mf.Entry(path=f"p{at:03d}.py", digest=bodies[i], size=1, tier="high", tokens=1)
        for at, i in enumerate(picks)
    )
    manifest = mf.Manifest("repo", None, "o200k_base", 1, 1, entries)
    saved = list(words._NATIVE)
    if not native:
        words._NATIVE[:] = [None]
    try:
        viewed = Source()
        viewed.add_view(
            "repo",
            PackView(
                Digest.of(b"view"), manifest, [e.path for e in entries],
                [bytes(e.digest) for e in entries],  # type: ignore[arg-type]
            ),
        )  # fmt: skip
        made = Source()
        made.add("repo", manifest)
        # the paths of a few bodies, from the view's numbering: what every body's paths hold
        asked = {bytes(bodies[i]) for i in picks[::2]} | {bytes(bodies[30])}
        names = viewed.numbered().names
        found = {d: [names[at] for at in places] for d, places in viewed.places_of(asked).items()}
        assert found == {d: made.paths[d] for d in asked if d in made.paths}
        assert viewed._paths is None  # not made to answer it
        for src in (viewed, made):
            src.order(), src.numbered()
        assert viewed.order().digests == made.order().digests
        assert list(viewed.numbered().body) == list(made.numbered().body)
        assert viewed.numbered().names == made.numbered().names
        assert viewed.numbered().number == made.numbered().number
        assert viewed.paths == made.paths
        assert all(viewed.order().find(d) == made.order().number.get(d) for d in bodies)
        # a path added afterwards joins its body's paths in both
        for src in (viewed, made):
            src._take("zz.py", bytes(bodies[0]))
        assert viewed.paths == made.paths
        assert viewed.order().digests == made.order().digests
    finally:
        words._NATIVE[:] = saved


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_hit_in_a_large_body_shows_what_its_whole_text_shows(tmp_path: Path, where: str) -> None:
    """A body of several chunks is read only up to the lines a hit shows (each chunk checked
    against its digest): the hit, its lines and its snippet are those the whole text gives,
    wherever the match is."""
    from cas.store import Store
    from packer.search import Source
    from packer.search import search as run_search

    # 3.4 MB: four chunks, all within the bytes a body is indexed by (`cas.words.MAX_INDEXED`)
    lines = [f"filler {'abcdefgh'[i % 8]} of plain words, nothing to find" for i in range(80_000)]
    at = {"start": 40, "middle": 40_000, "end": 79_990}[where]
    lines[at] = "def zanzibar_quokka(): return 'the one line that matches'"
    root = project(tmp_path, {"big.py": "\n".join(lines) + "\n", "small.py": "x = 1\n"})
    assert run_cas("pack", cwd=root).code == 0
    with Store.at(root / ".cas") as store, TextIndex.open(store.path) as index:  # type: ignore[union-attr]
        found = run_search(store, index, root, "zanzibar_quokka")
        assert [h.path for h in found] == ["big.py"]
        hit = found[0]
        assert hit.first <= at + 1 <= hit.last
        assert (at + 1, lines[at][:100]) in [(n, t[:100]) for n, t in hit.snippet]
        whole = Source().text(store, hit.digest)  # the whole text, as before
        assert all(whole.split("\n")[n - 1].startswith(t.rstrip(".")) for n, t in hit.snippet)
        start = Source().text(store, hit.digest, 50)  # the first chunk is enough for 50 lines
        assert whole.startswith(start) and start.count("\n") > 50 and len(start) < len(whole)
        info = store.stat(hit.digest)
    assert info.chunks > 1  # the body is chunked: the test reads a prefix of several chunks


def test_a_name_written_as_a_call_finds_its_definition_before_prose(tmp_path: Path) -> None:
    """`solve()` in a question is code: the file that defines it comes first, before the
    guide that says "solve" on every line; the plain word keeps ranking by the text."""
    files = {
        "docs/solving.md": "# Solving\n\n" + "To solve it, solve it with solve.\n" * 30,
        "src/solvers.py": "def solve(f, *symbols, **flags):\n    return f\n",
        "src/other.py": "from solvers import solve\n\nsolve(1)\n",
    }
    root = project(tmp_path, files)
    assert search(root, "What does solve() take?")[0]["path"] == "src/solvers.py"
    names = {n.text: n for n in query_names("Is solve() like render( or solve?")}
    assert names["solve"].called and names["render"].called
    assert [n.text for n in code_names("What does solve() take, and solve?")] == ["solve"]
    assert not query_names("how do I solve")[0].called


def test_a_plain_word_few_files_define_at_their_top_finds_them(tmp_path: Path) -> None:
    """`lambdify` written as a plain word: the one file that defines it at its top level
    comes before the guide that repeats it; a word many files define stays prose."""
    files = {
        "docs/guide.md": "# Guide\n\n" + "Call lambdify to convert; lambdify is fast.\n" * 30,
        "src/utilities/convert.py": "def lambdify(args, expr, modules=None):\n    return expr\n",
        "src/use.py": "from utilities.convert import lambdify\n\nlambdify(1, 2)\n",
    }
    for i in range(5):  # `render` is defined by five files: not taken for one name
        files[f"src/r{i}.py"] = "def render(page):\n" + f"    total = {i}\n" * 40
    files["docs/render.md"] = "# Render\n\n" + "How to render a page: render it.\n" * 30
    root = project(tmp_path, files)
    assert search(root, "parameters of lambdify")[0]["path"] == "src/utilities/convert.py"
    assert search(root, "how to render a page")[0]["path"] == "docs/render.md"
