"""packer.vectors: passages embedded once, kept by digest, scored the same everywhere."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import cas.words
from cas.cache import Cache
from cas.store import Store
from packer import embedding, vectors
from packer.vectors import Found, decode, encode, namespace, passages_of, search

rows = st.binary(min_size=embedding.DIM, max_size=embedding.DIM)


@settings(max_examples=100, deadline=None)
@given(
    entries=st.lists(st.tuples(st.integers(1, 1 << 20), st.integers(0, 1 << 10), rows), max_size=10)
)
def test_an_entry_reads_back_and_a_damaged_one_is_a_miss(
    entries: list[tuple[int, int, bytes]],
) -> None:
    lines = [(first, first + more) for first, more, _ in entries]
    raw = encode(lines, [v for _, _, v in entries])
    back = decode(raw)
    assert back is not None and len(back) == len(entries)
    assert [(back.lines[2 * i], back.lines[2 * i + 1]) for i in range(len(back))] == lines
    assert back.matrix == b"".join(v for _, _, v in entries)
    assert decode(raw[:-1]) is None and decode(raw + b"x") is None and decode(b"") is None


def _put(store: Store, text: str) -> bytes:
    return bytes(store.put(text.encode()))


def test_a_body_is_embedded_once_and_its_entry_kept_in_the_cache(store: Store) -> None:
    a = _put(store, "# Notes\n\n- the login page test fails now and then on CI\n- lunch\n")
    b = _put(store, "def parse_config(path):\n    return toml.load(path)\n")
    files = [("notes.md", a), ("src/config.py", b)]
    found = search(store, files, "flaky sign-in spec", per_file=5)
    assert found[0] == Found("notes.md", found[0].score, 3, 3)
    model = embedding.model()
    cached = Cache(store).get(namespace(model.name, "md"), a)
    assert cached is not None and len(decode(cached) or ()) == 2
    # a damaged entry is a miss: made again, and the answer is the same
    vectors._KEPT.entries.clear()  # as a fresh process
    vectors._PREPARED.clear()
    c = Cache(store)
    c.put(namespace(model.name, "md"), a, b"damaged")
    c.flush()
    assert search(store, files, "flaky sign-in spec", per_file=5) == found
    assert decode(Cache(store).get(namespace(model.name, "md"), a) or b"") is not None


def test_found_passages_are_ordered_accepted_and_limited(store: Store) -> None:
    log = "\n".join(f"- entry {i}: the build farm runs nightly jobs" for i in range(6))
    a = _put(store, "# 2026-01-01\n\n" + log + "\n")
    b = _put(store, "- the build farm runs nightly jobs\n")
    files = [("b.md", b), ("a.md", a)]
    found = search(store, files, "nightly build jobs", per_file=3)
    assert sum(1 for f in found if f.path == "a.md") == 3
    keys = [(-f.score, f.path, f.first) for f in found]
    assert keys == sorted(keys)
    turned = search(
        store, files, "nightly build jobs", per_file=3, accept=lambda p, _first, _last: p != "a.md"
    )
    assert {f.path for f in turned} == {"b.md"}
    assert search(store, files, "   ") == [] and search(store, [], "jobs") == []


def test_a_body_without_text_has_no_passage(store: Store) -> None:
    binary = _put(store, "\0\1\2 not text")
    assert passages_of(store, [(binary, "text")]) == [vectors.NONE]
    assert search(store, [("x.bin", binary)], "anything at all") == []


def test_a_read_only_store_is_searched_and_left_unwritten(tmp_path: Path) -> None:
    with Store.create(tmp_path / ".cas") as s:
        digest = _put(s, "- the staging server runs out of disk every Friday\n")
    vectors._KEPT.entries.clear()  # as a fresh process
    vectors._PREPARED.clear()
    with Store.at(tmp_path / ".cas", readonly=True) as ro:
        found = search(ro, [("log.md", digest)], "the test environment fills its drive")
        assert [f.path for f in found] == ["log.md"]
        assert Cache(ro).get(namespace(embedding.model().name, "md"), digest) is None


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(
        st.lists(
            st.sampled_from(["cache", "evict", "login", "fails", "disk", "full", "x"]),
            min_size=1,
            max_size=40,
        ).map(" ".join),
        min_size=1,
        max_size=6,
    ),
    query=st.sampled_from(["what is thrown out when full", "sign in breaks", "disk"]),
)
def test_a_files_best_passage_is_the_same_by_either_path(texts: list[str], query: str) -> None:
    """The quick choice of each file's best passage (one a file, nothing turned down; in C or
    Python) is the general one's: the best score, then the first line."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, Store.create(Path(tmp) / ".cas") as store:
        files = [
            (f"f{i}.{'md' if i % 2 else 'txt'}", _put(store, "\n".join([t] * (i + 1) * 40)))
            for i, t in enumerate(texts)
        ]
        quick = search(store, files, query)
        general = search(store, files, query, accept=lambda _p, _f, _l: True)
        saved = list(cas.words._NATIVE)
        cas.words._NATIVE[:] = [None]
        try:  # each file's best found in Python where the C was not built
            python = search(store, files, query)
        finally:
            cas.words._NATIVE[:] = saved
    assert quick == general == python
