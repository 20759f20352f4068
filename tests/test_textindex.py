"""The search index: code-aware terms, one entry per body, forgetting, rebuilding."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cas.digest import Digest
from cas.textindex import (
    INDEX_FILE,
    WINDOW,
    TextIndex,
    query_names,
    split_name,
    text_of,
    window_rows,
)

PY = b'''import os.path


def with_context(value):
    """Wrap VALUE."""
    return os.path.join(value, "x")


class HTTPServerError(Exception):
    pass
'''


def _bodies(*texts: bytes) -> dict[Digest, bytes]:
    return {Digest.of(t): t for t in texts}


def _index(tmp_path: Path, bodies: dict[Digest, bytes]) -> TextIndex:
    index = TextIndex.open(tmp_path)
    assert index is not None
    index.add(bodies, bodies.get)
    return index


def test_split_name() -> None:
    assert split_name("with_context") == ("with", "context")
    assert split_name("HTTPServerError") == ("http", "server", "error")
    assert split_name("NewRouter") == ("new", "router")
    assert split_name("parse2") == ("parse", "2")
    assert split_name("__init__") == ("init",)


def test_query_names_keep_dotted_and_path_names() -> None:
    names = {
        n.text: n for n in query_names("How does os.path.join and Error::msg work? os.path.join")
    }
    assert names["os.path.join"].words == ("os", "path", "join")
    assert names["Error::msg"].words == ("error", "msg")
    assert names["os.path.join"].compound and not names["How"].compound
    assert len([n for n in query_names("a A a") if n.words == ("a",)]) == 1


def test_terms_whole_parts_and_phrases(tmp_path: Path) -> None:
    other = b"nothing to see here\n"
    bodies = _bodies(PY, other)
    with _index(tmp_path, bodies) as index:
        py = Digest.of(PY)
        for words in [("with_context",), ("context",), ("httpservererror",), ("server",),
                      ("os", "path", "join"), ("wrap",)]:  # fmt: skip
            assert {d for d, _, _ in index.windows(words)} == {py}, words
        assert index.windows(("path", "os")) == []  # a phrase keeps its order
        assert index.windows(("absent",)) == []
        hits = index.windows(("with_context",))
        assert hits == [(py, 1, len(PY.decode().splitlines()))]


def test_each_body_once_and_binary_recorded(tmp_path: Path) -> None:
    binary = b"\0\1\2 with_context"
    bodies = _bodies(PY, binary)
    with _index(tmp_path, bodies) as index:
        assert index.indexed(bodies) == set(bodies)
        reads: list[Digest] = []

        def read(d: Digest) -> bytes | None:
            reads.append(d)
            return bodies[d]

        assert index.add(bodies, read) == 0
        assert reads == []  # already indexed: not read again
        assert index.windows(("with_context",)) == [(Digest.of(PY), 1, 10)]


def test_windows_cover_every_line(tmp_path: Path) -> None:
    lines = [f"line_{i} word{i}" for i in range(1, 2 * WINDOW + 6)]
    body = ("\n".join(lines) + "\n").encode()
    with _index(tmp_path, _bodies(body)) as index:
        found = index.windows((f"line_{WINDOW + 1}",))
        assert found == [(Digest.of(body), WINDOW + 1, 2 * WINDOW)]
        last = index.windows((f"line_{len(lines)}",))
        assert last == [(Digest.of(body), 2 * WINDOW + 1, len(lines))]


def test_forget_drops_rows_and_terms(tmp_path: Path) -> None:
    other = b"def with_context(): pass\n"
    bodies = _bodies(PY, other)
    with _index(tmp_path, bodies) as index:
        assert index.forget([Digest.of(PY)], bodies.get) == 1
        assert index.indexed(bodies) == {Digest.of(other)}
        assert {d for d, _, _ in index.windows(("with_context",))} == {Digest.of(other)}
        assert index.windows(("httpservererror",)) == []
        # the FTS rows are gone too, not only unlinked: an integrity check passes
        conn = sqlite3.connect(tmp_path / INDEX_FILE)
        conn.execute("INSERT INTO fts(fts, rank) VALUES('integrity-check', 0)")
        count = conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'httpservererror'")
        assert count.fetchone()[0] == 0
        conn.close()


def test_forget_unreadable_body_unlinks(tmp_path: Path) -> None:
    bodies = _bodies(PY)
    with _index(tmp_path, bodies) as index:
        assert index.forget(bodies, lambda d: None) == 1
        assert index.windows(("with_context",)) == []
        assert index.count() == 0


def test_damaged_or_old_index_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / INDEX_FILE).write_bytes(b"not a database at all" * 100)
    with _index(tmp_path, _bodies(PY)) as index:
        assert index.count() == 1
    conn = sqlite3.connect(tmp_path / INDEX_FILE)
    conn.execute("UPDATE info SET value = '0' WHERE key = 'version'")
    conn.commit()
    conn.close()
    reopened = TextIndex.open(tmp_path)
    assert reopened is not None
    with reopened:
        assert reopened.count() == 0  # another version: emptied, to be rebuilt
    assert TextIndex.open(tmp_path / "nowhere", create=False) is None


def test_text_of() -> None:
    assert text_of(b"\xef\xbb\xbfhi") == "hi"
    assert text_of(b"a\0b") is None
    assert text_of(b"caf\xe9") == "caf\ufffd"


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=600))
def test_window_rows_partition_the_lines(text: str) -> None:
    rows = window_rows(text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert "\n".join(body for _, _, body, _ in rows) == "\n".join(lines)
    expect = 1
    for first, last, body, _ in rows:
        assert first == expect and last - first + 1 == len(body.split("\n")) <= WINDOW
        expect = last + 1


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
