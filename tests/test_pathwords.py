"""The words of paths (`packer.pathwords`): an index of a list of paths, kept as bytes, finds
the paths of a word exactly as searching the paths does, and as the definition says."""

from __future__ import annotations

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from packer.pathwords import PathIndex, PathTexts, path_words, paths_key
from tests.pathoracle import path_words_by_definition

_VOCAB = ["router", "route", "parse", "config", "handler", "HTTPServer", "x2", "ok", "é"]


_PIECE = st.builds(
    lambda words, glue: glue.join(words),
    st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=3),
    st.sampled_from(["_", "", "-", "."]),
)
_PATHS = st.lists(st.lists(_PIECE, min_size=1, max_size=4).map("/".join), max_size=40, unique=True)


@given(_PATHS, st.sampled_from([*(w.lower() for w in _VOCAB), "http", "server", "py", "rout"]))
def test_an_index_of_paths_finds_what_searching_them_finds(paths: list[str], word: str) -> None:
    expected = [at for at, path in enumerate(paths) if word in path_words_by_definition(path)]
    assert all(path_words_by_definition(p) == path_words(p) for p in paths)
    index = PathIndex.build(paths)
    kept = PathIndex.decode(index.encode())
    assert kept is not None
    for found in (index, kept, PathTexts(paths)):
        assert list(found.hits(word)) == expected


def test_the_key_of_a_list_of_paths_is_its_order_and_its_names() -> None:
    assert paths_key(["a", "b"]) == paths_key(["a", "b"])
    assert paths_key(["a", "b"]) != paths_key(["b", "a"])
    assert paths_key(["a/b"]) != paths_key(["a", "b"])


def test_an_index_whose_arrays_do_not_fit_together_is_a_miss() -> None:
    paths = ["src/router.py", "src/config.py", "docs/router.md"]
    good = PathIndex.build(paths)
    assert list(good.hits("router")) == [0, 2]
    kept = PathIndex.decode(good.encode())
    assert kept is not None and list(kept.hits("router")) == [0, 2]
    good.groups.append(99)  # a group past the last
    assert PathIndex.decode(good.encode()) is None
    assert PathIndex.decode(b"not msgpack at all \xc1") is None
    assert PathIndex.decode(msgpack.packb(["a", b"", b"", b"", b"x"])) is None
