"""The search index: segments of terms by digest, merged, compacted, checked and healed."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import textindex, words
from cas.digest import Digest
from cas.errors import IndexUnavailable
from cas.textindex import (
    INDEX_DIR,
    MAX_SEGMENTS,
    BodyOrder,
    IndexDamaged,
    TextIndex,
    Writer,
    body_terms,
    build_postings,
    definition_key,
    merge_postings,
    query_names,
    split_name,
    text_of,
)

PY = b'''import os.path


def with_context(value):
    """Wrap VALUE."""
    return os.path.join(value, "x")


class HTTPServerError(Exception):
    pass
'''
GO = b"package mux\n\nfunc NewRouter() *Router { return nil }\n"


def _bodies(*texts: bytes) -> dict[Digest, bytes]:
    return {Digest.of(t): t for t in texts}


def _index(tmp_path: Path, bodies: dict[Digest, bytes]) -> TextIndex:
    index = TextIndex.open(tmp_path)
    assert index is not None
    index.add(bodies, bodies.get)
    return index


def _found(index: TextIndex, *term: str) -> set[Digest]:
    return {p.digest for p in index.term(term)}


def test_terms_find_their_bodies(tmp_path: Path) -> None:
    bodies = _bodies(PY, GO, b"\x00\x01binary")
    py, go = Digest.of(PY), Digest.of(GO)
    with _index(tmp_path, bodies) as index:
        assert _found(index, "with_context") == _found(index, "context") == {py}
        assert _found(index, "router") == _found(index, "newrouter") == {go}
        assert _found(index, "os", "path", "join") == {py}
        assert _found(index, "path", "os") == set()  # a dotted name keeps its order
        assert _found(index, "absent") == set()
        assert index.windows(("with_context",)) == [(py, 1, 10)]
        assert {p.digest for p in index.lookup(definition_key("NewRouter", top=True))} == {go}
        assert index.indexed(bodies) == set(bodies)  # the binary too: with no terms
        assert index.count() == 3
        read: list[Digest] = []
        assert index.add(bodies, lambda d: read.append(d) or bodies[d]) == 0
        assert read == []


def test_a_long_dotted_name_is_found_by_its_runs(tmp_path: Path) -> None:
    body = b"x = a.b.c.d.e.f\ny = b.c.d.e\n"
    with _index(tmp_path, _bodies(body)) as index:
        assert _found(index, "a", "b", "c", "d", "e", "f") == {Digest.of(body)}
        assert _found(index, "a", "b", "c", "d", "e", "g") == set()


def test_windows_of_a_long_body(tmp_path: Path) -> None:
    lines = [f"line_{i} word{i}" for i in range(1, 2 * words.WINDOW + 6)]
    body = ("\n".join(lines) + "\n").encode()
    d = Digest.of(body)
    with _index(tmp_path, _bodies(body)) as index:
        assert index.windows((f"line_{words.WINDOW + 1}",)) == [(d, 41, 80)]
        assert index.windows((f"line_{len(lines)}",)) == [(d, 81, len(lines))]


def test_many_segments_merge_into_fewer_with_the_same_answers(tmp_path: Path) -> None:
    texts = [b"def name_%d():\n    return shared_word\n" % i for i in range(MAX_SEGMENTS + 3)]
    index = TextIndex.open(tmp_path)
    assert index is not None
    with index:
        for text in texts:  # one segment per add
            index.add(_bodies(text), {Digest.of(text): text}.get)
        assert 1 < len(index.segments) <= MAX_SEGMENTS
        assert _found(index, "shared_word") == {Digest.of(t) for t in texts}
        assert _found(index, "name_3") == {Digest.of(texts[3])}
        index.rewrite(None)
        assert len(index.segments) == 1
        assert _found(index, "shared_word") == {Digest.of(t) for t in texts}


def test_compact_drops_bodies_gone_from_the_store(tmp_path: Path) -> None:
    texts = [b"def kept_%d(): pass\n" % i for i in range(6)] + [b"def gone(): pass\n"]
    bodies = {Digest.of(t): t for t in texts}
    with _index(tmp_path, bodies) as index:
        live = set(bodies) - {Digest.of(b"def gone(): pass\n")}
        assert index.compact(lambda ds: {d for d in ds if d in live}) == 0  # under a quarter
        assert index.count() == 7
        live = {Digest.of(t) for t in texts[:3]}
        assert index.compact(lambda ds: {d for d in ds if d in live}) == 4
        assert index.count() == 3 and _found(index, "gone") == set()
        assert _found(index, "kept_2") == {Digest.of(texts[2])}
    with TextIndex.open(tmp_path) as again:  # type: ignore[union-attr]
        assert again.count() == 3


def test_a_writer_skips_what_is_indexed_and_writes_at_close(tmp_path: Path) -> None:
    index = TextIndex.open(tmp_path)
    assert index is not None
    with index:
        index.add(_bodies(PY), {Digest.of(PY): PY}.get)
        writer = Writer(index)
        writer.add(Digest.of(PY), body_terms(PY))
        writer.add(Digest.of(GO), body_terms(GO))
        assert len(index.segments) == 1  # nothing written before close
        writer.close()
        assert writer.written == 1 and writer.problem is None
        assert index.count() == 2 and _found(index, "router") == {Digest.of(GO)}
        # The pack closes it when the ingest is done and again at the end: the second is nothing.
        segments = list(index.segments)
        writer.close()
        assert index.segments == segments and writer.written == 1
        with pytest.raises(RuntimeError):
            writer.add(Digest.of(b"late"), body_terms(b"late"))


def test_a_pack_writes_its_index_before_the_tier_stage(tmp_path: Path) -> None:
    """A pack hands the index writer every body's terms during the ingest and has it write them
    right after (its memory freed before the rating and the fit need theirs)."""
    from cas import Store
    from packer.build import Packer
    from packer.config import load_config

    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("def alpha_beta():\n    return 1\n")
    (root / "b.md").write_text("# Notes\n\nalpha_beta is the answer.\n")
    store = Store.create(root / ".cas")
    index = TextIndex.open(root / ".cas")
    assert index is not None
    with store, index:
        writer = Writer(index)
        seen: list[int] = []

        def done() -> None:
            writer.close()
            seen.append((index.count(), sorted(root.glob("manifests/*.pack"))))

        packer = Packer(root, store, load_config(root), terms=writer.add, terms_done=done)
        packer.run()
        # Both bodies written when the ingest ended, before any pack was fitted and written.
        assert seen == [(2, [])] and sorted(root.glob("manifests/*.pack"))
        assert _found(index, "alpha_beta") == {
            Digest.of((root / "a.py").read_bytes()),
            Digest.of((root / "b.md").read_bytes()),
        }


# --- damage -------------------------------------------------------------------------------


def _segment(tmp_path: Path) -> Path:
    (seg,) = (tmp_path / INDEX_DIR).glob("*.cix")
    return seg


def _damage_garbage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = os.urandom(third)
    path.write_bytes(bytes(data))


def _damage_zeros(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle - 64 : middle + 64] = bytes(128)
    path.write_bytes(bytes(data))


def _damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-5])


def _damage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[9] ^= 1  # the count of bodies
    path.write_bytes(bytes(data))


def _damage_posting(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40  # the last posting's mask: the header still reads well
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", [_damage_garbage, _damage_zeros, _damage_truncate, _damage_header, _damage_posting]
)
def test_a_damaged_segment_is_set_aside_and_never_answers(tmp_path: Path, damage: object) -> None:
    bodies = _bodies(PY, GO)
    _index(tmp_path, bodies).close()
    assert callable(damage)
    damage(_segment(tmp_path))
    index = TextIndex.open(tmp_path)
    assert index is not None
    with index:
        try:
            answer = _found(index, "router") | _found(index, "with_context")
        except IndexDamaged as exc:  # found while reading: set aside by the caller
            index.heal(exc)
            answer = set()
        assert answer in (set(), set(bodies))  # never a wrong answer
        if answer:
            return  # the damage was in bytes no lookup reads: verify finds it
        assert not index.segments
        assert any("set aside" in n for n in index.notes) or not index.notes
        assert index.add(bodies, bodies.get) == 2  # rebuilt from the store
        assert _found(index, "router") == {Digest.of(GO)}


def test_verify_rehashes_every_block(tmp_path: Path) -> None:
    _index(tmp_path, _bodies(PY, GO)).close()
    _damage_posting(_segment(tmp_path))
    with TextIndex.open(tmp_path) as index:  # type: ignore[union-attr]
        assert index.verify() and not index.segments


def test_symlinks_under_the_index_are_never_followed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _index(store, _bodies(PY)).close()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"another program's file")
    seg = _segment(store)
    seg.unlink()
    seg.symlink_to(outside)
    with TextIndex.open(store) as index:  # type: ignore[union-attr]
        assert not index.segments and index.notes
        index.add(_bodies(PY), _bodies(PY).get)
    assert outside.read_bytes() == b"another program's file"
    # the folder itself a symlink to a folder elsewhere: the link goes, the folder stays
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    for entry in (store / INDEX_DIR).iterdir():
        entry.unlink()
    (store / INDEX_DIR).rmdir()
    (store / INDEX_DIR).symlink_to(elsewhere)
    with TextIndex.open(store) as index:  # type: ignore[union-attr]
        assert index.notes and not index.segments
        index.add(_bodies(GO), _bodies(GO).get)
    assert not (store / INDEX_DIR).is_symlink() and (store / INDEX_DIR).is_dir()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]


def test_what_is_not_a_segment_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / INDEX_DIR).write_bytes(b"a file where the folder goes")
    with TextIndex.open(tmp_path) as index:  # type: ignore[union-attr]
        assert index.notes
    (tmp_path / INDEX_DIR / "x.cix").mkdir()
    (tmp_path / INDEX_DIR / "stray").write_text("?")
    with TextIndex.open(tmp_path) as index:  # type: ignore[union-attr]
        assert len(index.notes) == 2
    assert sorted(os.listdir(tmp_path / INDEX_DIR)) == []


def test_an_index_that_cannot_be_made_is_one_clear_error(tmp_path: Path) -> None:
    """A store folder that is not a folder: no rebuild can help, the error says what to do."""
    blocked = tmp_path / "store"
    blocked.write_text("not a folder")
    with pytest.raises(IndexUnavailable, match="make it writable, or delete it"):
        TextIndex.open(blocked)
    assert TextIndex.open(tmp_path / "nowhere", create=False) is None


def test_the_sqlite_index_of_older_versions_is_removed(tmp_path: Path) -> None:
    (tmp_path / textindex.OLD_INDEX_FILE).write_bytes(b"SQLite format 3\0" + bytes(100))
    (tmp_path / (textindex.OLD_INDEX_FILE + "-wal")).write_bytes(b"x")
    TextIndex.open(tmp_path).close()  # type: ignore[union-attr]
    assert sorted(os.listdir(tmp_path)) == [INDEX_DIR]


# --- the C half and the Python half build the same segments ---------------------------------


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([12, 40, 56, 64]))
def test_a_large_segment_sorts_as_python_does(seed: int, random_bits: int) -> None:
    # Past 65,536 postings the C sort splits by the key's top byte first, then sorts each part:
    # keys from a vocabulary shared by many bodies (a key's postings keep the bodies' order),
    # random in their low ``random_bits`` bits, their top bits alike (few parts hold them all)
    # or random.
    import random
    from array import array

    rng = random.Random(seed)
    low = (1 << random_bits) - 1
    high = rng.getrandbits(64) & ~low
    vocab = [high | (rng.getrandbits(64) & low) for _ in range(3000)]
    bodies = []
    for _ in range(700):
        keys = sorted(set(rng.sample(vocab, 200)), key=lambda _: rng.random())
        masks = [rng.getrandbits(32) for _ in keys]
        bodies.append(words.Terms(array("Q", keys), array("I", masks), 1, 1))
    assert sum(len(t.keys) for t in bodies) > 1 << 16
    native = build_postings(bodies)
    saved = list(words._NATIVE)
    words._NATIVE[:] = [None]
    try:
        python = build_postings(bodies)
    finally:
        words._NATIVE[:] = saved
    assert native == python


_TEXTS = st.lists(
    st.text(alphabet=st.sampled_from(list("abAB_ .:=\n()09ö")), max_size=120), max_size=12
)


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@settings(max_examples=60)
@given(_TEXTS, _TEXTS)
def test_native_and_python_segments_agree(first: list[str], second: list[str]) -> None:
    def both(fn: object, *args: object) -> tuple[object, object]:
        assert callable(fn)
        native = fn(*args)
        saved = list(words._NATIVE)
        words._NATIVE[:] = [None]
        try:
            return native, fn(*args)
        finally:
            words._NATIVE[:] = saved

    terms_a = [words.index_terms(t.encode()) for t in first]
    terms_b = [words.index_terms(t.encode()) for t in second]
    native, python = both(build_postings, terms_a)
    assert native == python
    built_b = build_postings(terms_b)
    count_a, count_b = len(terms_a), len(terms_b)
    # merge the two, the second's bodies after the first's, dropping the first body of each
    dropped = 0xFFFFFFFF
    kept_a = max(count_a - 1, 0)
    later = range(kept_a, kept_a + count_b - 1)
    maps = [
        [dropped, *range(count_a - 1)] if count_a else [],
        [dropped, *later] if count_b else [],
    ]
    parts = []
    for keep, built in zip(maps, (build_postings(terms_a), built_b), strict=True):
        raw = textindex._le32(keep)
        parts.append((raw, *(memoryview(b) for b in built)))
    native_m, python_m = both(merge_postings, parts)
    assert native_m == python_m


def test_query_names_keep_dotted_names_and_other_scripts() -> None:
    names = {n.text: n for n in query_names("How does os.path.join and Error::msg use Größe?")}
    assert names["os.path.join"].words == ("os", "path", "join")
    assert names["Error::msg"].words == ("error", "msg")
    assert names["Größe"].words == ("größe",)
    assert names["os.path.join"].compound and not names["How"].compound


def test_text_of() -> None:
    assert text_of(b"\xef\xbb\xbfhi") == "hi"
    assert text_of(b"a\0b") is None
    assert text_of(b"caf\xe9") == "caf\ufffd"


@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True))
def test_split_name_words_are_lowercase_pieces(name: str) -> None:
    words = split_name(name)
    assert all(w and w == w.lower() for w in words)
    assert "".join(words) == "".join(ch for ch in name.lower() if ch != "_")


# Letters of scripts whose every letter SQLite's unicode61 (Unicode 6.1) knows: Latin-1 and
# Latin Extended-A, Greek, Cyrillic, Hebrew, Arabic, kana and CJK ideographs.
_RANGES = [(0xC0, 0x17F), (0x391, 0x3C9), (0x410, 0x44F), (0x5D0, 0x5EA), (0x627, 0x64A),
           (0x3041, 0x30FA), (0x4E00, 0x9FA5)]  # fmt: skip
_SCRIPTS = st.one_of(
    [st.characters(categories=["Lu", "Ll", "Lo"], min_codepoint=a, max_codepoint=b)
     for a, b in _RANGES]
)  # fmt: skip


def test_query_names_of_any_script() -> None:
    """Non-ASCII letters are words of a query (before: 'stop words alone match everything')."""
    assert [n.words for n in query_names("Wie groß ist die Größe?")] == [
        ("wie",),
        ("groß",),
        ("ist",),
        ("die",),
        ("größe",),
    ]
    assert [n.text for n in query_names("検索エンジン と Привет, мир")] == [
        "検索エンジン", "と", "Привет", "мир",
    ]  # fmt: skip
    assert query_names("größeWert")[0].parts == ("größe", "wert")
    assert query_names("x_größe_wert")[0].words == ("x_größe_wert",)
    assert split_name("ÜberGröße") == ("über", "größe")
    assert query_names("e\u0301te")[0].words == ("\u00e9te",)  # composed first (NFC)


@given(st.lists(st.text(_SCRIPTS, min_size=2, max_size=12), min_size=1, max_size=8))
def test_a_word_of_any_script_the_query_keeps_is_found_where_a_body_holds_it(
    words: list[str],
) -> None:
    """The query's tokenizer agrees with the index's: each word a body holds, asked for as it is
    or in another case (one that maps back: not dotless i to I, nor ß to SS), is one name of the
    query and its term finds that body."""
    bodies = {Digest.of(w.encode()): f"before {w} after\n".encode() for w in words}
    with tempfile.TemporaryDirectory() as where:
        index = TextIndex.open(where)
        assert index is not None
        with index:
            index.add(bodies, bodies.get)
            for word in words:
                holding = {d for d, body in bodies.items() if word in body.decode().split()}
                cases = {word, word.upper(), word.lower()}
                for asked in (c for c in cases if c.lower() == word.lower()):
                    (name,) = query_names(asked)
                    found = {d for d, _, _ in index.windows(name.words)}
                    assert holding <= found, (asked, name)


def test_an_index_kept_open_sees_what_another_writes_after_a_refresh(tmp_path: Path) -> None:
    """A long-running reader (the MCP server) keeps one index open: its answers are kept while
    its segments are the same, and `refresh` loads the segments another process wrote, merged
    or set aside, and answers from them."""
    first = _bodies(PY)
    with _index(tmp_path, first) as kept:
        assert kept.refresh() is False  # nothing changed
        before = kept.postings(("router",))
        assert before == {} and kept.postings(("router",)) is before  # kept
        assert kept.missing([*first, Digest.of(GO)]) == {Digest.of(GO)}
        order = BodyOrder([Digest.of(GO), *first])  # what a search lays its terms over
        assert kept.missing_in(order) == [Digest.of(GO)]
        with TextIndex.open(tmp_path) as other:  # type: ignore[union-attr]
            other.add(_bodies(GO), _bodies(GO).get)
        generation = kept.generation
        assert kept.refresh() is True and kept.generation > generation
        assert set(kept.postings(("router",))) == {Digest.of(GO)}
        assert kept.missing([*first, Digest.of(GO)]) == set()
        assert kept.missing_in(order) == []  # the same order, read again under the new segments
        assert kept.missing_in(BodyOrder([Digest.of(b"x"), Digest.of(GO)])) == [Digest.of(b"x")]
        with TextIndex.open(tmp_path) as other:  # type: ignore[union-attr]
            other.rewrite(None)  # merged into one by another process
        assert kept.refresh() is True
        assert set(kept.postings(("with_context",))) == {Digest.of(PY)}
        assert kept.refresh() is False


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 59), min_size=1, max_size=40, unique=True),
    st.lists(st.integers(0, 79), max_size=60),
    st.integers(1, 4),
)
def test_a_search_numbers_the_segments_bodies_alike_in_native_code_and_python(
    indexed: list[int], searched: list[int], parts: int
) -> None:
    """`BodyOrder.map_of` (a merge with the bodies sorted once, in native code), `find` and
    `TextIndex.missing_in` give what the dictionary of the bodies' numbers gives, over an
    index of several segments: bodies indexed or not, searched or not, in any order."""
    texts = [f"body {i} word{i % 7}\n".encode() for i in range(80)]
    digests = [Digest.of(t) for t in texts]
    searched = list(dict.fromkeys(searched))  # a search's bodies are distinct
    with tempfile.TemporaryDirectory() as tmp:
        index = TextIndex.open(Path(tmp))
        assert index is not None
        step = -(-len(indexed) // parts)
        for start in range(0, len(indexed), step):  # one segment per part
            chunk = {digests[i]: texts[i] for i in indexed[start : start + step]}
            index.add(set(chunk), chunk.get)
        saved = list(words._NATIVE)
        results = []
        for native in (True, False):  # the native half (test_words: it is built), then Python
            words._NATIVE[:] = saved if native else [None]
            try:
                order = BodyOrder(bytes(digests[i]) for i in searched)
                maps = [list(order.map_of(index, at)) for at in range(len(index.segments))]
                missing = index.missing_in(BodyOrder(bytes(digests[i]) for i in searched))
                found = [order.find(bytes(d)) for d in digests]
            finally:
                words._NATIVE[:] = saved
            results.append((maps, missing, found))
        assert results[0] == results[1]
        maps, missing, found = results[0]
        place = {bytes(digests[i]): at for at, i in enumerate(searched)}
        for at, seg in enumerate(index.segments):
            assert maps[at] == [place.get(d, -1) for d in seg.digests()]
        assert missing == [bytes(digests[i]) for i in searched if i not in indexed]
        assert found == [place.get(bytes(d)) for d in digests]
        index.close()


@settings(max_examples=40, deadline=None)
@given(st.sets(st.integers(0, 200), max_size=40), st.lists(st.integers(0, 200), max_size=10))
def test_a_segment_numbers_a_body_by_its_place_among_its_digests(
    held: set[int], asked: list[int]
) -> None:
    """`Segment.number` halves the digests' bytes (no list made); it answers what the list
    does: a held body's place, None for one not held, before and after the list is made."""
    with tempfile.TemporaryDirectory() as tmp:
        bodies = _bodies(*(b"def f%d(): pass\n" % i for i in held))
        index = _index(Path(tmp), bodies)
        for seg in index.segments:
            probes = [Digest.of(b"def f%d(): pass\n" % i) for i in asked] + list(bodies)
            before = [seg.number(bytes(d)) for d in probes]
            assert seg._digests is None  # answered without the list
            listed = seg.digests()
            expected = [listed.index(bytes(d)) if bytes(d) in listed else None for d in probes]
            assert before == expected
            assert [seg.number(bytes(d)) for d in probes] == expected
        assert len(index.segments) == (1 if held else 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.sets(st.integers(0, 299), max_size=12))
def test_a_lookup_names_the_same_bodies_from_the_digests_bytes_or_their_list(
    count: int, rare: set[int]
) -> None:
    """A term in a few bodies is named from the segment's digest bytes, one in many from the
    list of its digests: both give every body holding it, and only those."""
    from cas.textindex import term_keys

    with tempfile.TemporaryDirectory() as tmp:
        texts = [
            b"common words here n%d%s\n" % (i, b" rareword" if i in rare else b"")
            for i in range(count)
        ]
        bodies = _bodies(*texts)
        index = _index(Path(tmp), bodies)
        holding = {Digest.of(t) for t in texts if b"rareword" in t}
        every = set(bodies)
        (rare_key,) = term_keys(("rareword",))
        assert {p.digest for p in index.lookup(rare_key)} == holding
        # no list made for a term in few of the bodies
        listed = any(seg._digests is not None for seg in index.segments)
        assert listed == (len(holding) * 64 >= count)
        (common_key,) = term_keys(("common",))
        assert {p.digest for p in index.lookup(common_key)} == every
        assert all(seg._digests is not None for seg in index.segments)  # a term in every one
        for term, expected in ((("rareword",), holding), (("common",), every)):
            (key,) = term_keys(term)  # again, from the list
            assert {p.digest for p in index.lookup(key)} == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=3 * textindex.BLOCK), max_size=6),
    st.integers(min_value=0, max_value=255),
)
def test_block_digests_of_parts_are_those_of_the_joined_body(sizes: list[int], seed: int) -> None:
    """A segment's body is hashed block by block across its parts, never joined: the table is
    the one the joined body would give, wherever the parts' edges fall (inside a block, on a
    block's edge, empty parts)."""
    import blake3

    parts = [bytes((seed + i * 7 + j) % 256 for j in range(n)) for i, n in enumerate(sizes)]
    body = b"".join(parts)
    block = textindex.BLOCK
    joined = [blake3.blake3(body[i : i + block]).digest()[:16] for i in range(0, len(body), block)]
    assert list(textindex._block_digests(parts)) == joined
